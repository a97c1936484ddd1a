//! The ticket of a corrective action in an issue tracker (`[[trackers]]`), and what
//! the tracker is to be told: a leaf every writer of actions may use. In the
//! transaction of a change, `created` and `changed` queue a job in `tracker_jobs`
//! (once per `dedup_key`); the trackers' service delivers the jobs and takes what the
//! trackers send back. Changes a tracker made (its actor is `tracker:NAME`) are not
//! sent back to it.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::config::{self, Meaning};
use crate::db::schema::{coes, corrective_actions, people, tickets, tracker_jobs};
use crate::db::{self, DbConnection};
pub use crate::services::outbound::queue::{FAILED, PENDING, SENDING, SENT};
use crate::services::Env;

/// What `tickets.meaning` holds for a status coe cannot map.
pub const UNMAPPED: &str = "unmapped";

/// The actor of a change a tracker made.
pub fn actor_of(tracker: &str) -> String {
    format!("tracker:{tracker}")
}

/// Kept in the ticket, so that a retry finds what an earlier attempt made.
pub fn marker(action_id: &str) -> String {
    format!("coe-action-{action_id}")
}

/// An action's ticket as the API and the pages show it.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct TicketView {
    /// The tracker's name in the settings.
    pub tracker: String,
    /// Jira, Linear or GitHub.
    pub tracker_kind: String,
    /// `OPS-12`, `ENG-12`, `acme/api#12`; none while it is being made.
    pub key: Option<String>,
    pub url: Option<String>,
    /// Its status in the tracker, by name.
    pub status: Option<String>,
    /// What coe reads it as: open, in_progress, done, wont_do, ignore, or unmapped
    /// (a status coe cannot map: shown, never dropped).
    pub meaning: Option<String>,
    /// When coe last read or heard its status.
    #[serde(serialize_with = "crate::json::utc_option")]
    pub synced_at: Option<NaiveDateTime>,
    /// Closed in the tracker, coe awaits the owner's `evidence` (done) or `reason`
    /// (won't do).
    pub awaiting: Option<String>,
    /// Why nobody is assigned there, when coe could not find the owner.
    pub assignee_note: Option<String>,
    /// What coe has still to tell the tracker.
    pub waiting: i64,
    /// The last error the tracker answered, while something waits or failed.
    pub last_error: Option<String>,
    /// It could not be made (the tracker refused it): asking again tries again.
    pub stuck: bool,
}

/// The ticket of action `action_id`, if it has one.
pub fn of(
    conn: &mut DbConnection,
    trackers: &[config::TrackerSettings],
    action_id: &str,
) -> QueryResult<Option<TicketView>> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<NaiveDateTime>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = tickets::table
        .find(action_id)
        .select((
            tickets::tracker,
            tickets::ticket_key,
            tickets::url,
            tickets::status,
            tickets::meaning,
            tickets::synced_at,
            tickets::asks,
            tickets::assignee_note,
        ))
        .first(conn)
        .optional()?;
    let Some((tracker, key, url, status, meaning, synced_at, asks, assignee_note)) = row else {
        return Ok(None);
    };
    let waiting: i64 = tracker_jobs::table
        .filter(tracker_jobs::action_id.eq(action_id))
        .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
        .count()
        .get_result(conn)?;
    let last_error: Option<String> = tracker_jobs::table
        .filter(tracker_jobs::action_id.eq(action_id))
        .filter(tracker_jobs::state.eq_any([PENDING, SENDING, FAILED]))
        .filter(tracker_jobs::last_error.is_not_null())
        .order(tracker_jobs::updated_at.desc())
        .select(tracker_jobs::last_error)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    let kind = trackers
        .iter()
        .find(|t| t.name == tracker)
        .map_or("a tracker", |t| t.kind.label());
    let stuck = key.is_none() && waiting == 0;
    Ok(Some(TicketView {
        tracker_kind: kind.to_owned(),
        tracker,
        key,
        url,
        status,
        meaning,
        synced_at,
        awaiting: asks,
        assignee_note,
        stuck,
        waiting,
        last_error,
    }))
}

/// Where action `action_id`'s ticket would go: the owner's team, the COE's service.
pub fn destination<'s>(
    conn: &mut DbConnection,
    env: Env<'s>,
    action_id: &str,
) -> QueryResult<Option<config::Destination<'s>>> {
    if env.connections.trackers.is_empty() {
        return Ok(None);
    }
    let (team, service) = team_and_service(conn, action_id)?;
    Ok(config::destination(
        &env.connections.trackers,
        team.as_deref(),
        service.as_deref(),
    ))
}

/// What routes action `action_id` to a tracker: its owner's team and its COE's
/// service.
pub fn team_and_service(
    conn: &mut DbConnection,
    action_id: &str,
) -> QueryResult<(Option<String>, Option<String>)> {
    let (owner, service): (String, Option<String>) = corrective_actions::table
        .inner_join(coes::table)
        .filter(corrective_actions::id.eq(action_id))
        .select((corrective_actions::owner_email, coes::service))
        .first(conn)?;
    let team: Option<String> = people::table
        .find(&owner)
        .select(people::team)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    Ok((team, service))
}

/// Queues the making of action `action_id`'s ticket at `destination` (once: a second
/// call, from another replica or a second click, does nothing). Returns whether
/// it was queued now.
pub fn start(
    conn: &mut DbConnection,
    destination: &config::Destination<'_>,
    action_id: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let made = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(tickets::table).values((
            tickets::action_id.eq(action_id),
            tickets::tracker.eq(&destination.tracker.name),
            tickets::place.eq(&destination.place),
            tickets::created_at.eq(now),
            tickets::updated_at.eq(now),
        )),
        tickets::action_id
    )?;
    if made == 0 {
        return Ok(false);
    }
    queue(
        conn,
        &destination.tracker.name,
        action_id,
        "create",
        json!({"issue_type": destination.issue_type}),
        format!("{action_id}:create"),
        now,
    )?;
    Ok(true)
}

/// A new action: its ticket is made when a tracker takes it automatically.
pub fn created(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match destination(conn, env, action_id)? {
        Some(d) if d.tracker.create == config::CreateWhen::Automatic => {
            start(conn, &d, action_id, now).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// A change made in coe that the tracker should know.
#[derive(Debug, Clone)]
pub enum Push<'a> {
    Due {
        from: NaiveDate,
        to: NaiveDate,
        reason: &'a str,
    },
    Owner {
        from: &'a str,
        to: &'a str,
    },
    Start,
    Done {
        note: Option<&'a str>,
        evidence: Option<&'a str>,
    },
    WontDo {
        reason: Option<&'a str>,
    },
    Reopen {
        note: Option<&'a str>,
    },
    /// The COE's reviewer sent a done action back: not done yet.
    SentBack {
        reason: Option<&'a str>,
    },
}

impl Push<'_> {
    fn what(&self) -> &'static str {
        match self {
            Push::Due { .. } => "due",
            Push::Owner { .. } => "owner",
            Push::Start => "start",
            Push::Done { .. } => "done",
            Push::WontDo { .. } => "wont_do",
            Push::Reopen { .. } => "reopen",
            Push::SentBack { .. } => "sent_back",
        }
    }

    /// The status it moves the ticket to, if any.
    fn moves_to(&self) -> Option<Meaning> {
        match self {
            Push::Start => Some(Meaning::InProgress),
            Push::Done { .. } => Some(Meaning::Done),
            Push::WontDo { .. } => Some(Meaning::WontDo),
            Push::Reopen { .. } => Some(Meaning::Open),
            Push::SentBack { .. } => Some(Meaning::InProgress),
            Push::Due { .. } | Push::Owner { .. } => None,
        }
    }
}

/// Queues `push` for action `action_id`'s ticket, when it has one and the change
/// was not the tracker's own (`actor`). A change that closes or reopens the action
/// in coe answers what the tracker awaited of the owner.
pub fn changed(
    conn: &mut DbConnection,
    action_id: &str,
    push: Push<'_>,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let tracker: Option<String> = tickets::table
        .find(action_id)
        .select(tickets::tracker)
        .first(conn)
        .optional()?;
    let Some(tracker) = tracker else {
        return Ok(());
    };
    let from_tracker = actor == actor_of(&tracker);
    if let Some(to) = push.moves_to() {
        diesel::update(tickets::table.find(action_id))
            .set((
                tickets::asks.eq(None::<String>),
                tickets::asks_since.eq(None::<NaiveDateTime>),
                tickets::updated_at.eq(now),
            ))
            .execute(conn)?;
        if !from_tracker {
            diesel::update(tickets::table.find(action_id))
                .set((tickets::pushed.eq(to.as_str()), tickets::pushed_at.eq(now)))
                .execute(conn)?;
        }
    }
    if from_tracker {
        return Ok(());
    }
    let detail = match push {
        Push::Due { from, to, reason } => json!({"from": from, "to": to, "reason": reason}),
        Push::Owner { from, to } => json!({"from": from, "to": to}),
        Push::Start => json!({}),
        Push::Done { note, evidence } => json!({"note": note, "evidence": evidence}),
        Push::WontDo { reason } => json!({"reason": reason}),
        Push::Reopen { note } => json!({"note": note}),
        Push::SentBack { reason } => json!({"reason": reason}),
    };
    let what = push.what();
    let actor_detail = json!({"by": actor, "detail": detail});
    queue(
        conn,
        &tracker,
        action_id,
        what,
        actor_detail,
        format!("{action_id}:{what}:{}", db::new_id()),
        now,
    )
}

fn queue(
    conn: &mut DbConnection,
    tracker: &str,
    action_id: &str,
    what: &str,
    detail: serde_json::Value,
    dedup_key: String,
    now: NaiveDateTime,
) -> QueryResult<()> {
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(tracker_jobs::table).values((
            tracker_jobs::id.eq(db::new_id()),
            tracker_jobs::tracker.eq(tracker),
            tracker_jobs::action_id.eq(action_id),
            tracker_jobs::what.eq(what),
            tracker_jobs::detail.eq(detail.to_string()),
            tracker_jobs::dedup_key.eq(dedup_key),
            tracker_jobs::state.eq(PENDING),
            tracker_jobs::attempts.eq(0),
            tracker_jobs::next_attempt_at.eq(now),
            tracker_jobs::created_at.eq(now),
            tracker_jobs::updated_at.eq(now),
        )),
        tracker_jobs::dedup_key
    )?;
    Ok(())
}

/// Forgets action `action_id`'s ticket and what the tracker was still to be told
/// (the action is deleted: it was added by mistake).
pub fn forget(conn: &mut DbConnection, action_id: &str) -> QueryResult<()> {
    diesel::delete(tracker_jobs::table.filter(tracker_jobs::action_id.eq(action_id)))
        .execute(conn)?;
    diesel::delete(tickets::table.find(action_id)).execute(conn)?;
    Ok(())
}

/// Queues the making of a ticket that could not be made (the tracker refused it)
/// again, with a fresh count of attempts. Returns whether there was one.
pub fn retry_making(
    conn: &mut DbConnection,
    action_id: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let again = diesel::update(
        tracker_jobs::table
            .filter(tracker_jobs::action_id.eq(action_id))
            .filter(tracker_jobs::what.eq("create"))
            .filter(tracker_jobs::state.eq(FAILED)),
    )
    .set((
        tracker_jobs::state.eq(PENDING),
        tracker_jobs::attempts.eq(0),
        tracker_jobs::next_attempt_at.eq(now),
        tracker_jobs::last_error.eq(None::<String>),
        tracker_jobs::updated_at.eq(now),
    ))
    .execute(conn)?;
    Ok(again > 0)
}
