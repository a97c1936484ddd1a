//! The review meeting of one COE in review: its owner (or reviewer, or an admin)
//! picks a time, or the organisation's weekly slot (`coe.review_slot`), and coe sends
//! an iCalendar invitation (`email::invitation`) to the owner, the reviewer, the bar
//! raiser and the action owners, linking the reading view. Moving it sends the update
//! (the same UID, the next SEQUENCE); cancelling it, the cancellation. Nothing is sent
//! until someone chooses.

use chrono::{NaiveDateTime, TimeZone};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::models::CoeRow;
use crate::db::schema::{corrective_actions, review_meetings};
use crate::db::{self, locks, DbConnection};
use crate::domain::coe::CoeState;
use crate::services::access::{self, Editor};
use crate::services::coe::coes::{self as coe_service, CoeError};
use crate::services::outbound::{self, ReviewEvent};
use crate::services::Env;

/// Input of `PUT /api/v1/coes/{id}/review-meeting`: a time, or the weekly slot.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MeetingInput {
    /// RFC 3339 (`2026-12-10T15:00:00+01:00`), or a local time of the organisation
    /// (`2026-12-10T15:00`); in the future.
    pub starts_at: Option<String>,
    /// `true`: the organisation's weekly review slot (`coe.review_slot`), its next time.
    #[serde(default)]
    pub weekly_slot: bool,
    /// How long, in minutes (15 to 480); `coe.review_minutes` when none.
    pub minutes: Option<u32>,
}

/// A COE's review meeting.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MeetingView {
    #[serde(serialize_with = "crate::json::utc")]
    #[schema(value_type = String, format = DateTime)]
    pub starts_at: NaiveDateTime,
    pub minutes: i32,
    /// 0 for the first invitation, one more at each move or cancellation.
    pub sequence: i32,
    /// `scheduled` or `cancelled`.
    pub state: String,
    /// Who set it last.
    pub set_by: String,
    /// Who was invited.
    pub attendees: Vec<String>,
}

type MeetingRow = (
    String,
    String,
    NaiveDateTime,
    i32,
    i32,
    String,
    String,
    NaiveDateTime,
);

fn load(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Option<MeetingRow>> {
    review_meetings::table
        .find(coe_id)
        .select((
            review_meetings::coe_id,
            review_meetings::uid,
            review_meetings::starts_at,
            review_meetings::minutes,
            review_meetings::sequence,
            review_meetings::state,
            review_meetings::set_by,
            review_meetings::updated_at,
        ))
        .first(conn)
        .optional()
}

/// Who is invited: the COE's owner, reviewer and bar raiser, and its actions' owners,
/// each once.
fn attendees(conn: &mut DbConnection, coe: &CoeRow) -> QueryResult<Vec<String>> {
    let bar_raiser: Option<String> = crate::db::schema::coes::table
        .find(&coe.id)
        .select(crate::db::schema::coes::bar_raiser_email)
        .first(conn)?;
    let mut people: Vec<String> = [
        coe.owner_email.clone(),
        coe.reviewer_email.clone(),
        bar_raiser,
    ]
    .into_iter()
    .flatten()
    .collect();
    people.extend(
        corrective_actions::table
            .filter(corrective_actions::coe_id.eq(&coe.id))
            .filter(corrective_actions::state.ne("wont_do"))
            .select(corrective_actions::owner_email)
            .distinct()
            .load::<String>(conn)?,
    );
    let mut seen = std::collections::BTreeSet::new();
    people.retain(|p| seen.insert(p.to_lowercase()));
    Ok(people)
}

/// The meeting of COE `coe_id`, if one was ever set.
pub fn get(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Option<MeetingView>> {
    let Some((_, _, starts_at, minutes, sequence, state, set_by, _)) = load(conn, coe_id)? else {
        return Ok(None);
    };
    let coe = coe_service::load_row(conn, coe_id).map_err(|e| match e {
        CoeError::Database(d) => d,
        _ => diesel::result::Error::NotFound,
    })?;
    Ok(Some(MeetingView {
        starts_at,
        minutes,
        sequence,
        state,
        set_by,
        attendees: attendees(conn, &coe)?,
    }))
}

/// When `input` says, as UTC: a time given (RFC 3339, or local to the organisation),
/// or the weekly slot's next time.
fn when(input: &MeetingInput, env: Env<'_>) -> Result<NaiveDateTime, CoeError> {
    let clock = env.settings.clock();
    if input.weekly_slot {
        let Some(slot) = env.settings.coe.review_slot.as_deref() else {
            return Err(CoeError::invalid(
                "weekly_slot",
                "the organisation has no weekly review slot (coe.review_slot): give a time",
            ));
        };
        let slot = crate::domain::meeting::parse_slot(slot)
            .map_err(|p| CoeError::invalid("weekly_slot", p))?;
        return Ok(crate::domain::meeting::next_slot(slot, clock.now, clock.tz));
    }
    let Some(text) = input
        .starts_at
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return Err(CoeError::invalid(
            "starts_at",
            "is required: when the meeting starts (or weekly_slot: true)",
        ));
    };
    let at = match chrono::DateTime::parse_from_rfc3339(text) {
        Ok(t) => t.naive_utc(),
        Err(_) => {
            let local =
                chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").map_err(|_| {
                    CoeError::invalid(
                        "starts_at",
                        format!("must be a time such as 2026-12-10T15:00 (got {text:?})"),
                    )
                })?;
            clock
                .tz
                .from_local_datetime(&local)
                .earliest()
                .ok_or_else(|| {
                    CoeError::invalid("starts_at", "is not a time in the organisation's zone")
                })?
                .naive_utc()
        }
    };
    crate::domain::action::check_date(at.date()).map_err(|p| CoeError::invalid("starts_at", p))?;
    if at <= clock.now.naive_utc() {
        return Err(CoeError::invalid("starts_at", "must be in the future"));
    }
    Ok(at)
}

/// The meeting's time in words, in the organisation's zone.
fn in_words(at: NaiveDateTime, env: Env<'_>) -> String {
    let tz = env.settings.clock().tz;
    let local = tz.from_utc_datetime(&at);
    format!("{} ({tz})", local.format("%A %-d %B %Y, %H:%M"))
}

/// Sets (or moves) the review meeting of COE `coe_id`, in review, and invites its
/// readers.
pub fn set(
    conn: &mut DbConnection,
    coe_id: &str,
    input: &MeetingInput,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<MeetingView, CoeError> {
    let starts_at = when(input, env)?;
    if let Some(minutes) = input.minutes.filter(|m| !(15..=480).contains(m)) {
        return Err(CoeError::invalid(
            "minutes",
            format!("must be 15 to 480 (got {minutes})"),
        ));
    }
    db::write_transaction(conn, |conn| {
        locks::lock_coe(conn, coe_id)?;
        access::coe(conn, coe_id, who)?;
        // None given: the meeting's own length when it moves, else the setting's.
        let minutes = match (input.minutes, load(conn, coe_id)?) {
            (Some(m), _) => m,
            (None, Some(found)) => {
                u32::try_from(found.3).unwrap_or(env.settings.coe.review_minutes)
            }
            (None, None) => env.settings.coe.review_minutes,
        };
        let coe = coe_service::load_row(conn, coe_id)?;
        if coe.state != CoeState::InReview.as_str() {
            return Err(CoeError::Conflict(
                "the review meeting is set once the COE is submitted for review".into(),
            ));
        }
        let now = db::now();
        let sequence = match load(conn, coe_id)? {
            Some(found) => {
                let sequence = found.4 + 1;
                diesel::update(review_meetings::table.find(coe_id))
                    .set((
                        review_meetings::starts_at.eq(starts_at),
                        review_meetings::minutes.eq(minutes as i32),
                        review_meetings::sequence.eq(sequence),
                        review_meetings::state.eq("scheduled"),
                        review_meetings::set_by.eq(who.principal),
                        review_meetings::updated_at.eq(now),
                    ))
                    .execute(conn)?;
                sequence
            }
            None => {
                diesel::insert_into(review_meetings::table)
                    .values((
                        review_meetings::coe_id.eq(coe_id),
                        review_meetings::uid.eq(uid(coe_id, env)),
                        review_meetings::starts_at.eq(starts_at),
                        review_meetings::minutes.eq(minutes as i32),
                        review_meetings::sequence.eq(0),
                        review_meetings::state.eq("scheduled"),
                        review_meetings::set_by.eq(who.principal),
                        review_meetings::updated_at.eq(now),
                    ))
                    .execute(conn)?;
                0
            }
        };
        invite(conn, &coe, who, env, now, false)?;
        tracing::debug!(coe = coe_id, sequence, "review meeting set");
        get(conn, coe_id)?.ok_or_else(|| CoeError::NotFound(coe_id.to_owned()))
    })
}

/// Cancels the review meeting of COE `coe_id`: its attendees' calendars take it off.
pub fn cancel(
    conn: &mut DbConnection,
    coe_id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<MeetingView, CoeError> {
    db::write_transaction(conn, |conn| {
        locks::lock_coe(conn, coe_id)?;
        access::coe(conn, coe_id, who)?;
        let coe = coe_service::load_row(conn, coe_id)?;
        let Some(found) = load(conn, coe_id)?.filter(|m| m.5 == "scheduled") else {
            return Err(CoeError::Conflict(
                "no review meeting is set for this COE".into(),
            ));
        };
        let now = db::now();
        diesel::update(review_meetings::table.find(coe_id))
            .set((
                review_meetings::sequence.eq(found.4 + 1),
                review_meetings::state.eq("cancelled"),
                review_meetings::set_by.eq(who.principal),
                review_meetings::updated_at.eq(now),
            ))
            .execute(conn)?;
        invite(conn, &coe, who, env, now, true)?;
        get(conn, coe_id)?.ok_or_else(|| CoeError::NotFound(coe_id.to_owned()))
    })
}

/// The meeting's UID: one per COE, across its moves.
fn uid(coe_id: &str, env: Env<'_>) -> String {
    let domain = env
        .settings
        .email
        .from
        .rsplit_once('@')
        .map_or("coe.invalid", |(_, d)| d.trim_end_matches('>'));
    format!("coe-review-{coe_id}@{domain}")
}

/// Sends the meeting as it now stands to its attendees.
fn invite(
    conn: &mut DbConnection,
    coe: &CoeRow,
    who: &Editor<'_>,
    env: Env<'_>,
    now: NaiveDateTime,
    cancelled: bool,
) -> Result<(), CoeError> {
    let (_, uid, starts_at, minutes, sequence, _, _, _) =
        load(conn, &coe.id)?.ok_or_else(|| CoeError::NotFound(coe.id.clone()))?;
    let attendees = attendees(conn, coe)?;
    let from: lettre::message::Mailbox = env
        .settings
        .email
        .from
        .parse()
        .map_err(|_| CoeError::Conflict("email.from is not an address".into()))?;
    let link = format!(
        "{}/coes/{}/print",
        env.settings.public_url.trim_end_matches('/'),
        coe.id
    );
    let minutes = u32::try_from(minutes).unwrap_or(60);
    let sequence = u32::try_from(sequence).unwrap_or(0);
    let address = from.email.to_string();
    let ics = crate::email::invitation::ics(&crate::email::invitation::Invitation {
        uid: &uid,
        sequence,
        cancelled,
        starts_at,
        minutes,
        title: &coe.title,
        link: &link,
        organizer: (&address, from.name.as_deref()),
        attendees: &attendees,
        stamp: now.and_utc(),
    });
    let when = in_words(starts_at, env);
    let event = ReviewEvent::Meeting {
        coe,
        attendees: &attendees,
        when: &when,
        minutes,
        sequence,
        cancelled,
        by: who.principal,
        ics: &ics,
    };
    outbound::happened(conn, env, who.actor, event, now)?;
    Ok(())
}
