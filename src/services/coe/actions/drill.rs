//! A drill that proves the fix. An action to detect or to mitigate names the alert that
//! proves it (its labels: `coe_action=<id>`, or an alert's name and service). Some
//! days after it is verified (`actions.drill_after_days`), or when someone asks, coe
//! opens a re-check and asks the owner to run a drill: a drill's event carrying those
//! labels proves it by itself (`prove`, from the ingest path: "the alarm fired in the
//! drill, detected in 3 min"); with none by its day (`actions.drill_window_days`) it
//! is missed and the COE's reviewer (else an admin) is asked to confirm the fix stands
//! or to reopen the action (`decide`). An action that is no longer a done fix to
//! detect or mitigate has its open re-check withdrawn (the spine, on a reopening or a
//! verification withdrawn; the sweep, for anything else). The rules are
//! `domain::drill`'s.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::change::{clean_text, load_locked, MAX_NOTE_BYTES};
use super::{invalid, load, ActionError};
use crate::db::models::{ActionRow, DrillAlarmRow, DrillRecheckRow};
use crate::db::schema::{coes, corrective_actions, drill_alarms, drill_rechecks, people};
use crate::db::{self, locks, types, DbConnection};
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
    /// `waiting`, `proven`, `missed` (who decides is asked), `confirmed`, `reopened`, or
    /// `withdrawn` (the action changed first).
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
/// change the action, of an action to detect or mitigate. A re-check open takes the
/// new labels; forgotten, it is withdrawn.
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
    let setter = who.principal;
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
        let open = drill_rechecks::table
            .filter(drill_rechecks::action_id.eq(id))
            .filter(drill_rechecks::state.eq_any(RecheckState::OPEN));
        match &labels {
            Some(labels) => {
                let text = serde_json::to_string(labels).unwrap_or_else(|_| "{}".into());
                diesel::insert_into(drill_alarms::table)
                    .values(DrillAlarmRow {
                        action_id: id.to_owned(),
                        labels: text.clone(),
                        set_by: setter.to_owned(),
                        set_at: now,
                    })
                    .execute(conn)?;
                diesel::update(open)
                    .set(drill_rechecks::labels.eq(&text))
                    .execute(conn)?;
            }
            None => {
                diesel::update(open)
                    .set((
                        drill_rechecks::state.eq(RecheckState::Withdrawn.as_str()),
                        drill_rechecks::decided_at.eq(Some(now)),
                    ))
                    .execute(conn)?;
            }
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
/// it): its owner is asked to run the drill within `actions.drill_window_days`.
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
        let kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
        if !drill::proven_by_alarm(kind) {
            return Err(ActionError::Conflict(format!(
                "an action to {} is not proven by an alarm: only one to detect or to mitigate",
                kind.as_str()
            )));
        }
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
            clock.today(),
        )?;
        Ok(RecheckView::from(opened))
    })
}

fn open_recheck(conn: &mut DbConnection, id: &str) -> QueryResult<Option<DrillRecheckRow>> {
    drill_rechecks::table
        .filter(drill_rechecks::action_id.eq(id))
        .filter(drill_rechecks::state.eq_any(RecheckState::OPEN))
        .select(DrillRecheckRow::as_select())
        .first(conn)
        .optional()
}

/// Writes a waiting re-check of `action`, open from now until `today` and
/// `actions.drill_window_days`, and tells its owner. The caller holds the COE's lock.
fn open(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionRow,
    labels: &BTreeMap<String, String>,
    (opened_by, actor): (Option<&str>, &str),
    today: NaiveDate,
) -> QueryResult<DrillRecheckRow> {
    let window = u64::from(env.settings.actions.drill_window_days);
    // Opened now, whatever time a sweep takes (`coe sweep --at`): a drill's alert is
    // one that started after this.
    let now = db::now();
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
    outbound::happened(conn, env, actor, event, now)?;
    Ok(recheck)
}

/// What a sweep did to the re-checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub opened: usize,
    pub missed: usize,
    pub withdrawn: usize,
}

/// The sweep at `now` (`today` in the organisation's time zone), in one transaction;
/// run twice, it does nothing twice:
/// - withdraws the open re-checks of actions no longer done or no longer to detect or
///   mitigate;
/// - opens a re-check of each done action to detect or mitigate, with an alarm,
///   verified `actions.drill_after_days` ago or more and not re-checked since (none
///   when the setting is 0): one query finds them;
/// - marks missed each waiting re-check whose last day passed, asking who decides
///   (`services::access::drill_deciders`).
pub fn sweep(
    conn: &mut DbConnection,
    env: Env<'_>,
    now: NaiveDateTime,
    today: NaiveDate,
) -> QueryResult<Swept> {
    // Most organisations name few alarms: with none named and no re-check open there is
    // nothing to do, asked in two index reads rather than over every action.
    let alarms = diesel::select(diesel::dsl::exists(
        drill_alarms::table.select(drill_alarms::action_id),
    ))
    .get_result::<bool>(conn)?;
    let any_open = diesel::select(diesel::dsl::exists(
        drill_rechecks::table
            .filter(drill_rechecks::state.eq_any(RecheckState::OPEN))
            .select(drill_rechecks::id),
    ))
    .get_result::<bool>(conn)?;
    if !alarms && !any_open {
        return Ok(Swept::default());
    }
    db::write_transaction(conn, |conn| {
        let mut swept = Swept::default();
        // Asked from the few open re-checks, each of its action (an `IN` over the
        // actions would read every one of them).
        let stale = corrective_actions::table
            .filter(corrective_actions::id.eq(drill_rechecks::action_id))
            .filter(
                corrective_actions::state
                    .ne(ActionState::Done.as_str())
                    .or(corrective_actions::kind.ne_all(drill::PROVEN_BY_ALARM)),
            );
        swept.withdrawn = diesel::update(
            drill_rechecks::table
                .filter(drill_rechecks::state.eq_any(RecheckState::OPEN))
                .filter(diesel::dsl::exists(stale)),
        )
        .set((
            drill_rechecks::state.eq(RecheckState::Withdrawn.as_str()),
            drill_rechecks::decided_at.eq(Some(db::now())),
        ))
        .execute(conn)?;
        let after = env.settings.actions.drill_after_days;
        if after > 0 {
            let verified_by = now - chrono::Duration::days(i64::from(after));
            let rechecked = drill_rechecks::table
                .filter(drill_rechecks::action_id.eq(corrective_actions::id))
                .filter(
                    drill_rechecks::opened_at
                        .ge(corrective_actions::verified_at.assume_not_null())
                        .or(drill_rechecks::state.eq_any(RecheckState::OPEN)),
                );
            // In the order of their COEs, whose locks are taken in that order (two
            // replicas' sweeps wait for each other, never each for the other).
            let due: Vec<(String, String)> = corrective_actions::table
                .inner_join(drill_alarms::table)
                .filter(corrective_actions::state.eq(ActionState::Done.as_str()))
                .filter(corrective_actions::kind.eq_any(drill::PROVEN_BY_ALARM))
                .filter(corrective_actions::verified_at.le(verified_by))
                .filter(diesel::dsl::not(diesel::dsl::exists(rechecked)))
                .order((
                    corrective_actions::coe_id.asc(),
                    corrective_actions::id.asc(),
                ))
                .select((corrective_actions::coe_id, corrective_actions::id))
                .load(conn)?;
            for (coe_id, id) in due {
                // Under the COE's lock, as a request takes it: one opens, the other
                // sees it open (another replica's sweep, someone asking).
                locks::lock_coe(conn, &coe_id)?;
                let action: ActionRow = corrective_actions::table
                    .find(&id)
                    .select(ActionRow::as_select())
                    .first(conn)?;
                let Some(labels) = alarm_of(conn, &id)? else {
                    continue;
                };
                let since = action.verified_at.unwrap_or(now);
                let rechecked_since: i64 = drill_rechecks::table
                    .filter(drill_rechecks::action_id.eq(&id))
                    .filter(
                        drill_rechecks::opened_at
                            .ge(since)
                            .or(drill_rechecks::state.eq_any(RecheckState::OPEN)),
                    )
                    .count()
                    .get_result(conn)?;
                if action.state != ActionState::Done.as_str()
                    || action.verified_at.is_none()
                    || rechecked_since > 0
                {
                    continue;
                }
                open(conn, env, &action, &labels, (None, SYSTEM_ACTOR), today)?;
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
            let tell = deciders(conn, &action, env)?;
            if tell.is_empty() {
                tracing::warn!(
                    action = %action.id,
                    "a missed drill re-check has nobody to decide on it: the COE has no reviewer who \
                     neither owns nor completed the action, and no admin who did neither"
                );
            }
            let event = ActionEvent::Drill {
                action: &action,
                recheck: &recheck,
                tell: &tell,
            };
            // Told now, whatever time the sweep takes.
            outbound::happened(conn, env, SYSTEM_ACTOR, event, db::now())?;
            swept.missed += 1;
        }
        Ok(swept)
    })
}

/// Who decides on a missed re-check of `action`: its COE's reviewer, else the admins
/// (`services::access::drill_deciders`).
fn deciders(conn: &mut DbConnection, action: &ActionRow, env: Env<'_>) -> QueryResult<Vec<String>> {
    let reviewer: Option<String> = coes::table
        .find(&action.coe_id)
        .select(coes::reviewer_email)
        .first(conn)?;
    let admins: Vec<String> = people::table
        .filter(people::is_admin.eq(true))
        .filter(people::active.eq(true))
        .order(people::email.asc())
        .select(people::email)
        .load(conn)?;
    let completed_by = super::completed_by(conn, &action.id)?;
    Ok(access::drill_deciders(
        reviewer.as_deref(),
        &admins,
        &action.owner_email,
        completed_by.as_deref(),
        &env.settings.auth.dotless_domains,
    ))
}

/// A re-check an event of a delivery proves: the re-check, and where the event is
/// (the delivery's and the event's place in the batch).
pub struct Proving {
    pub recheck: DrillRecheckRow,
    pub at: (usize, usize),
}

/// The open re-checks the events of a batch prove (`domain::drill::proves`), each
/// by its first event; `batch` holds the events to be stored, each with its delivery's
/// and its own place. No query unless a drill's event is among them: ordinary alerts
/// cost nothing.
pub fn proven_by(
    conn: &mut DbConnection,
    batch: &[(usize, usize, &FailureEvent)],
) -> QueryResult<Vec<Proving>> {
    if !batch.iter().any(|(_, _, e)| drill::is_drill(e)) {
        return Ok(Vec::new());
    }
    let open: Vec<DrillRecheckRow> = drill_rechecks::table
        .filter(drill_rechecks::state.eq_any(RecheckState::OPEN))
        .select(DrillRecheckRow::as_select())
        .load(conn)?;
    let mut proving = Vec::new();
    for recheck in open {
        let labels: BTreeMap<String, String> =
            serde_json::from_str(&recheck.labels).unwrap_or_default();
        let found = batch
            .iter()
            .find(|(_, _, e)| drill::proves(&labels, recheck.opened_at, e))
            .map(|(d, e, _)| (*d, *e));
        if let Some(at) = found {
            proving.push(Proving { recheck, at });
        }
    }
    Ok(proving)
}

/// Marks proven each re-check of `proving` by its event (`id`, event), in the
/// ingest's transaction: when the alarm fired and, when the drill said when it
/// started, how long it took. The owner is told (and whoever was asked to decide on
/// it, when it had been missed).
pub fn prove(
    conn: &mut DbConnection,
    env: Env<'_>,
    proving: Vec<(DrillRecheckRow, &str, &FailureEvent)>,
) -> QueryResult<usize> {
    let mut proven = 0;
    for (mut recheck, event_id, event) in proving {
        let now = db::now();
        let was_missed = recheck.state == RecheckState::Missed.as_str();
        recheck.state = RecheckState::Proven.as_str().to_owned();
        recheck.event_id = Some(event_id.to_owned());
        recheck.fired_at = Some(event.started_at);
        recheck.detected_seconds = drill::detected_seconds(event);
        recheck.decided_at = Some(now);
        let marked = diesel::update(
            drill_rechecks::table
                .find(&recheck.id)
                .filter(drill_rechecks::state.eq_any(RecheckState::OPEN)),
        )
        .set((
            drill_rechecks::state.eq(&recheck.state),
            drill_rechecks::event_id.eq(&recheck.event_id),
            drill_rechecks::fired_at.eq(recheck.fired_at),
            drill_rechecks::detected_seconds.eq(recheck.detected_seconds),
            drill_rechecks::decided_at.eq(recheck.decided_at),
        ))
        .execute(conn)?;
        if marked == 0 {
            continue;
        }
        let action: ActionRow = corrective_actions::table
            .find(&recheck.action_id)
            .select(ActionRow::as_select())
            .first(conn)?;
        let mut tell = vec![action.owner_email.clone()];
        if was_missed {
            tell.extend(deciders(conn, &action, env)?);
        }
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

/// Who decides on the missed re-check of action `id` confirms the fix stands
/// (`confirm`, with why) or reopens the action (with why: its owner is told): the
/// COE's reviewer, else an admin; never its owner or whoever completed it
/// (`services::access::decide_drill`).
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
                    "no missed re-check of this action waits for a decision".into(),
                )
            })?;
        let reviewer: Option<String> = coes::table
            .find(&row.coe_id)
            .select(coes::reviewer_email)
            .first(conn)?;
        let completed_by = super::completed_by(conn, id)?;
        let by = access::decide_drill(
            who,
            reviewer.as_deref(),
            &row.owner_email,
            completed_by.as_deref(),
            &env.settings.auth.dotless_domains,
        )?;
        let from: ActionState = types::read("corrective_actions.state", &row.state)?;
        let kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
        if from != ActionState::Done || !drill::proven_by_alarm(kind) {
            return Err(ActionError::Conflict(format!(
                "the action is {} and to {}: its drill has nothing left to prove",
                from.as_str().replace('_', " "),
                kind.as_str()
            )));
        }
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
        // Still missed: a drill's alert may have proven it since it was read.
        let marked = diesel::update(
            drill_rechecks::table
                .find(&recheck.id)
                .filter(drill_rechecks::state.eq(RecheckState::Missed.as_str())),
        )
        .set((
            drill_rechecks::state.eq(&recheck.state),
            drill_rechecks::decided_by.eq(&recheck.decided_by),
            drill_rechecks::decided_at.eq(recheck.decided_at),
            drill_rechecks::note.eq(&recheck.note),
        ))
        .execute(conn)?;
        if marked == 0 {
            return Err(ActionError::Conflict(
                "the re-check was settled meanwhile (a drill's alert proved it)".into(),
            ));
        }
        let actor = who.actor;
        if !confirm {
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
