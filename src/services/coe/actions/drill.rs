//! A drill that proves the fix. An action to detect or to mitigate names the alert that
//! proves it (its labels: `coe_action=<id>`, or an alert's name and service). Some
//! days after it is verified (`actions.drill_after_days`), or when someone asks, coe
//! opens a re-check and asks the owner to run a drill: an event carrying those labels
//! proves it by itself (`prove`, from the ingest path: "the alarm fired in the drill,
//! detected in 3 min"); with none by its day (`actions.drill_window_days`) it is
//! missed and the COE's reviewer is asked to confirm the fix stands or to reopen the
//! action (`decide`). The rules are `domain::drill`'s.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::change::{clean_text, load_locked, MAX_NOTE_BYTES};
use super::{invalid, load, ActionError};
use crate::db::models::{ActionRow, DrillAlarmRow, DrillRecheckRow};
use crate::db::schema::{coes, corrective_actions, drill_alarms, drill_rechecks, people};
use crate::db::{self, types, DbConnection};
use crate::domain::action::{ActionKind, ActionState, Transition};
use crate::domain::drill::{self, RecheckState};
use crate::domain::{Clock, FailureEvent};
use crate::services::access::{self, Editor};
use crate::services::audit::SYSTEM_ACTOR;
use crate::services::coe::lifecycle;
use crate::services::outbound::{self, ActionEvent};
use crate::services::Env;

/// Input of `PUT /api/v1/actions/{id}/drill`: the alert that proves the action.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlarmInput {
    /// The labels the alert carries, every one of which an event must carry (as a
    /// label or an annotation): e.g. `{"coe_action": "<the action's id>"}`, or
    /// `{"alertname": "QueueBacklog", "service": "checkout"}`. Empty or null: none.
    pub labels: Option<BTreeMap<String, String>>,
}

/// Input of `POST /api/v1/actions/{id}/drill/confirm` and `…/drill/reopen`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecheckDecision {
    /// Why the fix stands without the alarm, or why the action is reopened: required.
    pub note: Option<String>,
}

/// One re-check of an action's fix.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecheckView {
    pub id: String,
    /// The labels it waited for.
    pub labels: BTreeMap<String, String>,
    /// Who asked for it; null: coe, some days after the action was verified.
    pub opened_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc")]
    #[schema(value_type = String, format = DateTime)]
    pub opened_at: NaiveDateTime,
    /// The last day for the drill.
    #[schema(value_type = String, format = Date)]
    pub last_day: NaiveDate,
    /// `waiting`, `proven`, `missed` (the reviewer is asked), `confirmed` or `reopened`.
    pub state: String,
    /// The event that proved it.
    pub event_id: Option<String>,
    /// When the alarm fired (the event's own start).
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub fired_at: Option<NaiveDateTime>,
    /// From the drill's start (its `coe_drill` time) to the alarm, when the drill said.
    pub detected_seconds: Option<i64>,
    pub decided_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub decided_at: Option<NaiveDateTime>,
    pub note: Option<String>,
}

impl From<DrillRecheckRow> for RecheckView {
    fn from(r: DrillRecheckRow) -> Self {
        RecheckView {
            id: r.id,
            labels: serde_json::from_str(&r.labels).unwrap_or_default(),
            opened_by: r.opened_by,
            opened_at: r.opened_at,
            last_day: r.last_day,
            state: r.state,
            event_id: r.event_id,
            fired_at: r.fired_at,
            detected_seconds: r.detected_seconds,
            decided_by: r.decided_by,
            decided_at: r.decided_at,
            note: r.note,
        }
    }
}

/// An action's alarm and its re-checks.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct DrillView {
    /// The labels of the alert that proves it, when named.
    pub labels: Option<BTreeMap<String, String>>,
    /// Whether its kind is proven by an alarm (detect, mitigate).
    pub applies: bool,
    /// Its re-checks, oldest first.
    pub rechecks: Vec<RecheckView>,
}

/// The alarm and re-checks of action `id`.
pub fn of_action(conn: &mut DbConnection, id: &str) -> Result<DrillView, ActionError> {
    let row = load(conn, id)?;
    let kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
    Ok(DrillView {
        labels: alarm_of(conn, id)?,
        applies: drill::proven_by_alarm(kind),
        rechecks: drill_rechecks::table
            .filter(drill_rechecks::action_id.eq(id))
            .order((drill_rechecks::opened_at.asc(), drill_rechecks::id.asc()))
            .select(DrillRecheckRow::as_select())
            .load(conn)?
            .into_iter()
            .map(RecheckView::from)
            .collect(),
    })
}

fn alarm_of(conn: &mut DbConnection, id: &str) -> QueryResult<Option<BTreeMap<String, String>>> {
    Ok(drill_alarms::table
        .find(id)
        .select(drill_alarms::labels)
        .first::<String>(conn)
        .optional()?
        .and_then(|l| serde_json::from_str(&l).ok()))
}

/// Names (or, with no labels, forgets) the alert that proves action `id`: whoever may
/// change the action, of an action to detect or mitigate. A re-check already open keeps
/// the labels it opened with.
pub fn set_alarm(
    conn: &mut DbConnection,
    id: &str,
    input: &AlarmInput,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<DrillView, ActionError> {
    let labels = input.labels.clone().filter(|l| !l.is_empty());
    if let Some(labels) = &labels {
        drill::check_labels(labels).map_err(|p| invalid("labels", p))?;
    }
    db::write_transaction(conn, |conn| {
        let row = load_locked(conn, id)?;
        access::action(conn, id, who)?;
        let kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
        if labels.is_some() && !drill::proven_by_alarm(kind) {
            return Err(invalid(
                "labels",
                format!(
                    "an action to {} is not proven by an alarm: only one to detect or to mitigate",
                    kind.as_str()
                ),
            ));
        }
        let now = db::now();
        diesel::delete(drill_alarms::table.find(id)).execute(conn)?;
        let text = labels
            .as_ref()
            .map(|l| serde_json::to_string(l).unwrap_or_else(|_| "{}".into()));
        if let Some(text) = &text {
            diesel::insert_into(drill_alarms::table)
                .values(DrillAlarmRow {
                    action_id: id.to_owned(),
                    labels: text.clone(),
                    set_by: who.principal.to_owned(),
                    set_at: now,
                })
                .execute(conn)?;
        }
        let event = ActionEvent::DrillAlarm {
            action: &row,
            labels: labels.as_ref(),
        };
        outbound::happened(conn, env, who.actor, event, now)?;
        of_action(conn, id)
    })
}

/// Opens a re-check of done action `id` now, at someone's request (whoever may change
/// it): its owner is asked to run the drill by `actions.drill_window_days`.
pub fn request(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<RecheckView, ActionError> {
    // Who answers for the request (a token made for someone asks as its maker).
    let asker = who.principal;
    db::write_transaction(conn, |conn| {
        let row = load_locked(conn, id)?;
        access::action(conn, id, who)?;
        let Some(labels) = alarm_of(conn, id)? else {
            return Err(ActionError::Conflict(
                "name the alert that proves it first: a drill is known by its labels".into(),
            ));
        };
        let state: ActionState = types::read("corrective_actions.state", &row.state)?;
        if state != ActionState::Done {
            return Err(ActionError::Conflict(format!(
                "the action is {}: only a done fix is proven in a drill",
                state.as_str().replace('_', " ")
            )));
        }
        if open_recheck(conn, id)?.is_some() {
            return Err(ActionError::Conflict(
                "a re-check of this action is open already".into(),
            ));
        }
        let opened = open(
            conn,
            env,
            &row,
            &labels,
            (Some(asker), who.actor),
            (db::now(), clock.today()),
        )?;
        Ok(RecheckView::from(opened))
    })
}

fn open_recheck(conn: &mut DbConnection, id: &str) -> QueryResult<Option<DrillRecheckRow>> {
    drill_rechecks::table
        .filter(drill_rechecks::action_id.eq(id))
        .filter(drill_rechecks::state.eq_any(OPEN))
        .select(DrillRecheckRow::as_select())
        .first(conn)
        .optional()
}

/// The states an alarm still proves, as stored.
const OPEN: [&str; 2] = [
    RecheckState::Waiting.as_str(),
    RecheckState::Missed.as_str(),
];

/// Writes a waiting re-check of `action` and tells its owner.
fn open(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionRow,
    labels: &BTreeMap<String, String>,
    (opened_by, actor): (Option<&str>, &str),
    (now, today): (NaiveDateTime, NaiveDate),
) -> QueryResult<DrillRecheckRow> {
    let window = u64::from(env.settings.actions.drill_window_days);
    let recheck = DrillRecheckRow {
        id: db::new_id(),
        action_id: action.id.clone(),
        labels: serde_json::to_string(labels).unwrap_or_else(|_| "{}".into()),
        opened_by: opened_by.map(str::to_owned),
        opened_at: now,
        last_day: today + chrono::Days::new(window),
        state: RecheckState::Waiting.as_str().to_owned(),
        event_id: None,
        fired_at: None,
        detected_seconds: None,
        decided_by: None,
        decided_at: None,
        note: None,
    };
    diesel::insert_into(drill_rechecks::table)
        .values(&recheck)
        .execute(conn)?;
    let tell = [action.owner_email.clone()];
    let event = ActionEvent::Drill {
        action,
        recheck: &recheck,
        tell: &tell,
    };
    // Told now, whatever time the sweep takes (`coe sweep --at`).
    outbound::happened(conn, env, actor, event, db::now())?;
    Ok(recheck)
}

/// What a sweep did to the re-checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub opened: usize,
    pub missed: usize,
}

/// The sweep at `now` (`today` in the organisation's time zone): opens a re-check of
/// each done action with an alarm verified `actions.drill_after_days` ago or more and
/// not re-checked since (none when the setting is 0), and marks missed each waiting
/// re-check whose day passed, asking the COE's reviewer (its owner, else the admins,
/// when it has none) to confirm or reopen. In one transaction; run twice, it does
/// nothing twice.
pub fn sweep(
    conn: &mut DbConnection,
    env: Env<'_>,
    now: NaiveDateTime,
    today: NaiveDate,
) -> QueryResult<Swept> {
    db::write_transaction(conn, |conn| {
        let mut swept = Swept::default();
        let after = env.settings.actions.drill_after_days;
        if after > 0 {
            let verified_by = now - chrono::Duration::days(i64::from(after));
            let candidates: Vec<(ActionRow, String)> = corrective_actions::table
                .inner_join(drill_alarms::table)
                .filter(corrective_actions::state.eq(ActionState::Done.as_str()))
                .filter(corrective_actions::verified_at.le(verified_by))
                .select((ActionRow::as_select(), drill_alarms::labels))
                .load(conn)?;
            for (action, labels) in candidates {
                let Some(verified_at) = action.verified_at else {
                    continue;
                };
                let since: i64 = drill_rechecks::table
                    .filter(drill_rechecks::action_id.eq(&action.id))
                    .filter(
                        drill_rechecks::opened_at
                            .ge(verified_at)
                            .or(drill_rechecks::state.eq_any(OPEN)),
                    )
                    .count()
                    .get_result(conn)?;
                let labels: BTreeMap<String, String> =
                    serde_json::from_str(&labels).unwrap_or_default();
                if since > 0 || labels.is_empty() {
                    continue;
                }
                open(
                    conn,
                    env,
                    &action,
                    &labels,
                    (None, SYSTEM_ACTOR),
                    (now, today),
                )?;
                swept.opened += 1;
            }
        }
        let late: Vec<DrillRecheckRow> = drill_rechecks::table
            .filter(drill_rechecks::state.eq(RecheckState::Waiting.as_str()))
            .filter(drill_rechecks::last_day.lt(today))
            .select(DrillRecheckRow::as_select())
            .load(conn)?;
        for mut recheck in late {
            let marked = diesel::update(
                drill_rechecks::table
                    .find(&recheck.id)
                    .filter(drill_rechecks::state.eq(RecheckState::Waiting.as_str())),
            )
            .set(drill_rechecks::state.eq(RecheckState::Missed.as_str()))
            .execute(conn)?;
            if marked == 0 {
                continue;
            }
            recheck.state = RecheckState::Missed.as_str().to_owned();
            let action: ActionRow = corrective_actions::table
                .find(&recheck.action_id)
                .select(ActionRow::as_select())
                .first(conn)?;
            let tell = who_decides(conn, &action.coe_id)?;
            let event = ActionEvent::Drill {
                action: &action,
                recheck: &recheck,
                tell: &tell,
            };
            outbound::happened(conn, env, SYSTEM_ACTOR, event, db::now())?;
            swept.missed += 1;
        }
        Ok(swept)
    })
}

/// Who is asked about a missed re-check on COE `coe_id`: its reviewer, else its owner,
/// else the admins.
fn who_decides(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Vec<String>> {
    let (reviewer, owner): (Option<String>, Option<String>) = coes::table
        .find(coe_id)
        .select((coes::reviewer_email, coes::owner_email))
        .first(conn)?;
    if let Some(one) = reviewer.or(owner) {
        return Ok(vec![one]);
    }
    people::table
        .filter(people::is_admin.eq(true))
        .order(people::email.asc())
        .select(people::email)
        .load(conn)
}

/// The events of a delivery just stored (`id`, event), asked whether one is the alarm
/// an open re-check waits for: the first firing one that carries its labels proves
/// it, in the ingest's transaction. One query when nothing waits.
pub fn prove(
    conn: &mut DbConnection,
    env: Env<'_>,
    events: &[(&str, &FailureEvent)],
) -> QueryResult<usize> {
    if events.is_empty() {
        return Ok(0);
    }
    let open: Vec<DrillRecheckRow> = drill_rechecks::table
        .filter(drill_rechecks::state.eq_any(OPEN))
        .select(DrillRecheckRow::as_select())
        .load(conn)?;
    let mut proven = 0;
    for mut recheck in open {
        let labels: BTreeMap<String, String> =
            serde_json::from_str(&recheck.labels).unwrap_or_default();
        let Some((event_id, event)) = events.iter().find(|(_, e)| {
            e.status == crate::domain::EventStatus::Firing && drill::matches(&labels, e)
        }) else {
            continue;
        };
        let now = db::now();
        recheck.state = RecheckState::Proven.as_str().to_owned();
        recheck.event_id = Some((*event_id).to_owned());
        recheck.fired_at = Some(event.started_at);
        recheck.detected_seconds = drill::detected_seconds(event);
        let marked = diesel::update(
            drill_rechecks::table
                .find(&recheck.id)
                .filter(drill_rechecks::state.eq_any(OPEN)),
        )
        .set((
            drill_rechecks::state.eq(&recheck.state),
            drill_rechecks::event_id.eq(&recheck.event_id),
            drill_rechecks::fired_at.eq(recheck.fired_at),
            drill_rechecks::detected_seconds.eq(recheck.detected_seconds),
        ))
        .execute(conn)?;
        if marked == 0 {
            continue;
        }
        let action: ActionRow = corrective_actions::table
            .find(&recheck.action_id)
            .select(ActionRow::as_select())
            .first(conn)?;
        let tell = [action.owner_email.clone()];
        let event = ActionEvent::Drill {
            action: &action,
            recheck: &recheck,
            tell: &tell,
        };
        outbound::happened(conn, env, SYSTEM_ACTOR, event, now)?;
        proven += 1;
    }
    Ok(proven)
}

/// The COE's reviewer decides on the missed re-check of action `id`: the fix stands
/// (`confirm`, with why) or the action is reopened (with why: its owner is told, as
/// for any reopening). Never its owner or whoever completed it
/// (`services::access::verify_action`).
pub fn decide(
    conn: &mut DbConnection,
    id: &str,
    confirm: bool,
    input: &RecheckDecision,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<RecheckView, ActionError> {
    let Some(note) = clean_text("note", input.note.as_deref(), MAX_NOTE_BYTES)? else {
        return Err(invalid(
            "note",
            if confirm {
                "is required: say why the fix stands without the alarm"
            } else {
                "is required: say why the action is reopened, its owner reads it"
            },
        ));
    };
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let mut recheck = open_recheck(conn, id)?
            .filter(|r| r.state == RecheckState::Missed.as_str())
            .ok_or_else(|| {
                ActionError::Conflict(
                    "no missed re-check of this action waits for its reviewer".into(),
                )
            })?;
        let reviewer: Option<String> = coes::table
            .find(&row.coe_id)
            .select(coes::reviewer_email)
            .first(conn)?;
        let completed_by = super::completed_by(conn, id)?;
        let by = access::verify_action(
            who,
            reviewer.as_deref(),
            &row.owner_email,
            completed_by.as_deref(),
            &env.settings.auth.dotless_domains,
        )?;
        let now = db::now();
        let state = if confirm {
            RecheckState::Confirmed
        } else {
            RecheckState::Reopened
        };
        recheck.state = state.as_str().to_owned();
        recheck.decided_by = Some(by.to_owned());
        recheck.decided_at = Some(now);
        recheck.note = Some(note.clone());
        diesel::update(drill_rechecks::table.find(&recheck.id))
            .set((
                drill_rechecks::state.eq(&recheck.state),
                drill_rechecks::decided_by.eq(&recheck.decided_by),
                drill_rechecks::decided_at.eq(recheck.decided_at),
                drill_rechecks::note.eq(&recheck.note),
            ))
            .execute(conn)?;
        let actor = who.actor;
        let from: ActionState = types::read("corrective_actions.state", &row.state)?;
        if !confirm && from == ActionState::Done {
            row.state = ActionState::Open.as_str().to_owned();
            row.closed_at = None;
            (row.verified_at, row.verified_by) = (None, None);
            row.updated_at = now;
            diesel::update(corrective_actions::table.find(id))
                .set(&row)
                .execute(conn)?;
            let why = format!("The drill's alarm did not fire: {note}");
            let stepped = ActionEvent::Stepped {
                action: &row,
                verb: Transition::Reopen,
                from,
                note: Some(&why),
            };
            outbound::happened(conn, env, actor, stepped, now)?;
            lifecycle::settle(
                conn,
                &row.coe_id,
                env.settings.coe.verify_actions_from,
                actor,
                now,
            )?;
        }
        let tell: Vec<String> = if confirm {
            Vec::new()
        } else {
            vec![row.owner_email.clone()]
        };
        let event = ActionEvent::Drill {
            action: &row,
            recheck: &recheck,
            tell: &tell,
        };
        outbound::happened(conn, env, actor, event, now)?;
        Ok(RecheckView::from(recheck))
    })
}
