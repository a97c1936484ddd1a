//! Corrective actions: created on a COE, moved through their life cycle, listed with
//! the one definition of overdue. Closing the last action of an approved COE closes
//! the COE; reopening one brings it back to approved (`services::coe::lifecycle`).
//!
//! `change` holds the writes (create, patch, transition), `list` the queries over
//! many actions; this module the types and the reads of one.

mod change;
pub mod drill;
mod list;
pub mod risk;
pub mod tally;
pub mod totals_cache;
mod verify;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::models::{ActionRow, DueDateChangeRow};
use crate::db::schema::{audit_log, coes, corrective_actions, due_date_changes};
use crate::db::{types, DbConnection};
use crate::domain::action::{
    self, days_overdue, is_overdue, ActionKind, ActionState, InvalidTransition, Priority,
};
use crate::domain::coe::CoeState;
use crate::domain::{Clock, EmailAddress, Severity};
use crate::services::access::AccessError;

pub use change::{add, create, delete, may_delete, patch, prepare, transition, Prepared};
pub use list::{count, for_coe, list, page, ActionFilter, ActionSort};
pub(crate) use list::{filtered, look_up};
pub use verify::{verify, VerifyInput};

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no action with id `{0}`")]
    NotFound(String),
    #[error("no COE with id `{0}`")]
    CoeNotFound(String),
    #[error("the COE is {0}: it takes no new corrective actions")]
    CoeClosed(CoeState),
    #[error(
        "the COE is {0}: its actions are kept (only a draft's may be deleted; mark it won't do)"
    )]
    NotDeletable(CoeState),
    #[error("invalid input")]
    Invalid(Vec<(String, String)>),
    #[error(transparent)]
    Transition(#[from] InvalidTransition),
    #[error("{0}")]
    Forbidden(String),
    /// Not allowed in the state it is in (the message says why).
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl From<AccessError> for ActionError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::NotFound(id) => ActionError::NotFound(id),
            AccessError::Forbidden(m) => ActionError::Forbidden(m),
            AccessError::Database(d) => ActionError::Database(d),
        }
    }
}

fn invalid(field: &str, problem: impl Into<String>) -> ActionError {
    ActionError::Invalid(vec![(field.to_owned(), problem.into())])
}

/// An action as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionView {
    pub id: String,
    pub coe_id: String,
    pub coe_title: String,
    #[schema(value_type = String, example = "sev2")]
    pub coe_severity: Severity,
    pub title: String,
    pub description: Option<String>,
    pub owner: String,
    pub due_date: NaiveDate,
    pub priority: Priority,
    pub kind: ActionKind,
    pub success_criteria: Option<String>,
    pub external_url: Option<String>,
    pub state: ActionState,
    pub resolution_note: Option<String>,
    pub evidence_url: Option<String>,
    pub wont_do_reason: Option<String>,
    /// Open or in progress, and the due date has ended in the organisation's time zone.
    pub overdue: bool,
    pub days_overdue: i64,
    /// How many times the due date was moved.
    pub due_date_changes: i32,
    /// The day it is to close by, from its priority's target (`[[actions.targets]]`)
    /// counted from the day it was added; none when no target applies.
    #[schema(value_type = Option<String>, format = Date)]
    pub target_date: Option<NaiveDate>,
    /// Its due date lies past that day.
    pub past_target: bool,
    /// Why its due date was chosen past the target.
    pub past_target_reason: Option<String>,
    /// The day its risk was accepted until (its due date since), when it was.
    #[schema(value_type = Option<String>, format = Date)]
    pub risk_accepted_until: Option<NaiveDate>,
    /// Still to be done, and its risk is accepted until today or later: shown apart
    /// on the board (not overdue until that day ends).
    pub risk_accepted: bool,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub closed_at: Option<NaiveDateTime>,
    /// When the COE's reviewer verified it done, and who (COEs at or above
    /// `coe.verify_actions_from` close only when every action is verified or won't do).
    #[serde(serialize_with = "crate::json::utc_option")]
    pub verified_at: Option<NaiveDateTime>,
    pub verified_by: Option<String>,
    /// Whose it was before its owner left and it passed to `owner`, and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handed_over_from: Option<String>,
    #[serde(
        serialize_with = "crate::json::utc_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub handed_over_at: Option<NaiveDateTime>,
}

/// A moved due date.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DueDateChange {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub reason: String,
    pub by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

/// Who last marked action `id` done (its audit's last `action:complete`): what
/// separation of duties asks of a verification.
pub fn completed_by(conn: &mut DbConnection, id: &str) -> QueryResult<Option<String>> {
    audit_log::table
        .filter(audit_log::entity.eq("action"))
        .filter(audit_log::entity_id.eq(id))
        .filter(audit_log::action.eq("action:complete"))
        .order((audit_log::at.desc(), audit_log::id.desc()))
        .select(audit_log::actor)
        .first(conn)
        .optional()
}

/// One action with the history of its due date.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionDetail {
    #[serde(flatten)]
    pub action: ActionView,
    pub due_date_history: Vec<DueDateChange>,
    /// Who moved it on and when: created, started, completed, won't do, reopened;
    /// oldest first.
    pub steps: Vec<ActionStep>,
    /// The outage came back after it was done (kinds prevent, detect, mitigate):
    /// each time, oldest first.
    pub recurrences: Vec<ActionRecurrence>,
    /// The COE's reviewer: who verifies it once done.
    pub coe_reviewer: Option<String>,
    /// Its ticket in an issue tracker (`[[trackers]]`), if it has one.
    pub ticket: Option<crate::services::outbound::tickets::TicketView>,
    /// Each request to accept its risk until a day, and its decision; oldest first.
    pub risk_acceptances: Vec<risk::RiskView>,
    /// Who decides on accepting its risk: its owner's manager and its COE's bar
    /// raiser (an admin when there is neither).
    pub risk_deciders: Vec<String>,
    /// The alert that proves it in a drill, and its re-checks.
    pub drill: drill::DrillView,
}

/// One recurrence of an action's outage after it was done (recorded as the
/// recurrence's draft opens).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionRecurrence {
    pub incident_id: String,
    /// The COE of the recurrence.
    pub coe_id: String,
    /// When the outage started again.
    #[serde(serialize_with = "crate::json::utc")]
    #[schema(value_type = String, format = DateTime)]
    pub at: NaiveDateTime,
}

/// The recurrences of action `id`, oldest first.
pub fn recurrences(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<ActionRecurrence>> {
    use crate::db::schema::action_recurrences;
    action_recurrences::table
        .filter(action_recurrences::action_id.eq(id))
        .order(action_recurrences::at.asc())
        .select((
            action_recurrences::incident_id,
            action_recurrences::coe_id,
            action_recurrences::at,
        ))
        .load::<(String, String, NaiveDateTime)>(conn)
        .map(|rows| {
            rows.into_iter()
                .map(|(incident_id, coe_id, at)| ActionRecurrence {
                    incident_id,
                    coe_id,
                    at,
                })
                .collect()
        })
}

/// A step of an action's life, as its history records it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionStep {
    /// `create`, `start`, `complete`, `wont_do`, `reopen`, `verify` (the COE's reviewer
    /// verified it done), `refuse` (sent it back to in progress), `reassign` (given to
    /// another owner; the note is the reason) or `update` (the note says what changed).
    pub step: String,
    pub by: String,
    #[serde(serialize_with = "crate::json::utc")]
    #[schema(value_type = String, format = DateTime)]
    pub at: NaiveDateTime,
    /// What the step said: the resolution note, the reason for won't do, for
    /// reopening or for sending it back at verification.
    pub note: Option<String>,
    /// The chat it was made from (`slack`); none from coe's pages or API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Input of `POST /api/v1/coes/{id}/actions`. The required fields are read as text
/// and checked together, so one answer names every missing or invalid field.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAction {
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// One owner, an email address.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "alice@example.com")]
    pub owner: Option<String>,
    /// `YYYY-MM-DD`, after today in the organisation's time zone. Optional where a
    /// target applies to the priority (`[[actions.targets]]`): the target's day.
    #[serde(default)]
    #[schema(value_type = String, format = Date)]
    pub due_date: Option<String>,
    #[serde(default)]
    #[schema(value_type = Priority, required = true)]
    pub priority: Option<String>,
    #[serde(default)]
    #[schema(value_type = ActionKind, required = true)]
    pub kind: Option<String>,
    #[serde(default)]
    pub success_criteria: Option<String>,
    /// A ticket, as an http(s) URL.
    #[serde(default)]
    pub external_url: Option<String>,
    /// Why the due date lies past the priority's target: required then.
    #[serde(default)]
    pub past_target_reason: Option<String>,
}

/// A new action's required fields, checked.
#[derive(Debug, Clone)]
pub(crate) struct CheckedAction {
    pub title: String,
    pub owner: EmailAddress,
    pub due_date: NaiveDate,
    pub priority: Priority,
    pub kind: ActionKind,
}

/// A word of a fixed set (`priority`, `kind`), or the problem naming the set.
fn one_of<T: for<'de> Deserialize<'de> + Serialize + Copy>(
    text: &str,
    all: &[T],
) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::from(text.trim())).map_err(|_| {
        let words: Vec<String> = all.iter().map(|v| types::word(*v)).collect();
        format!("must be one of {} (got {text:?})", words.join(", "))
    })
}

impl NewAction {
    /// Checks every required field at once: all problems, or the checked values.
    /// `target` gives the day of the priority's target, when one applies: the due
    /// date when none is given.
    pub(crate) fn check(
        &self,
        clock: Clock,
        target: impl Fn(Priority) -> Option<NaiveDate>,
    ) -> Result<CheckedAction, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let mut problem = |field: &str, p: String| problems.push((field.to_owned(), p));
        let required = "is required";
        let title = match self.title.as_deref().map(str::trim) {
            None => {
                problem("title", required.into());
                None
            }
            Some("") => {
                problem("title", "must not be empty".into());
                None
            }
            Some(t) if t.len() > 500 => {
                problem("title", "must be at most 500 bytes".into());
                None
            }
            Some(t) => match crate::domain::coe::check_one_line(t) {
                Ok(()) => Some(t.to_owned()),
                Err(p) => {
                    problem("title", p);
                    None
                }
            },
        };
        let owner = match self.owner.as_deref() {
            None => {
                problem("owner", required.into());
                None
            }
            Some(o) => EmailAddress::parse(o).map_err(|p| problem("owner", p)).ok(),
        };
        // Read before the due date, which may come from its target; its problem is
        // named after the due date's, in the form's order.
        let priority_read: Result<Priority, String> = match self.priority.as_deref() {
            None => Err(required.into()),
            Some(p) => one_of(p, &[Priority::High, Priority::Medium, Priority::Low]),
        };
        let priority = priority_read.as_ref().ok().copied();
        let due_date = match self.due_date.as_deref().filter(|d| !d.trim().is_empty()) {
            None => match priority.and_then(&target) {
                Some(day) => Some(day),
                None => {
                    problem("due_date", required.into());
                    None
                }
            },
            Some(d) => match d.trim().parse::<NaiveDate>() {
                Err(_) => {
                    problem(
                        "due_date",
                        format!("must be a date as YYYY-MM-DD (got {d:?})"),
                    );
                    None
                }
                Ok(due) => action::check_new_due_date(due, clock.now, clock.tz)
                    .map(|()| due)
                    .map_err(|p| problem("due_date", p))
                    .ok(),
            },
        };
        if let Err(p) = priority_read {
            problem("priority", p);
        }
        let kind = match self.kind.as_deref() {
            None => {
                problem("kind", required.into());
                None
            }
            Some(k) => one_of(
                k,
                &[
                    ActionKind::Detect,
                    ActionKind::Diagnose,
                    ActionKind::Mitigate,
                    ActionKind::Prevent,
                    ActionKind::Process,
                ],
            )
            .map_err(|e| problem("kind", e))
            .ok(),
        };
        match (title, owner, due_date, priority, kind) {
            (Some(title), Some(owner), Some(due_date), Some(priority), Some(kind))
                if problems.is_empty() =>
            {
                Ok(CheckedAction {
                    title,
                    owner,
                    due_date,
                    priority,
                    kind,
                })
            }
            _ => Err(problems),
        }
    }
}

/// Fields `PATCH /api/v1/actions/{id}` may change. Moving `due_date` needs a `reason`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionPatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub owner: Option<EmailAddress>,
    #[serde(default)]
    pub due_date: Option<NaiveDate>,
    /// Why the due date moves; required with `due_date`.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub priority: Option<Priority>,
    #[serde(default)]
    pub kind: Option<ActionKind>,
    #[serde(default)]
    pub success_criteria: Option<String>,
    #[serde(default)]
    pub external_url: Option<String>,
}

/// The note a transition carries: resolution (done), reason (won't do), why (reopen).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionInput {
    #[serde(default)]
    pub note: Option<String>,
    /// For `complete`: a link to the evidence that it works.
    #[serde(default)]
    pub evidence_url: Option<String>,
}

fn view(
    row: ActionRow,
    coe_title: String,
    coe_severity: Severity,
    clock: Clock,
) -> QueryResult<ActionView> {
    let state: ActionState = types::read("corrective_actions.state", &row.state)?;
    Ok(ActionView {
        overdue: is_overdue(state, row.due_date, clock.now, clock.tz),
        days_overdue: days_overdue(state, row.due_date, clock.now, clock.tz),
        coe_title,
        coe_severity,
        priority: types::read("corrective_actions.priority", &row.priority)?,
        kind: types::read("corrective_actions.kind", &row.kind)?,
        state,
        id: row.id,
        coe_id: row.coe_id,
        title: row.title,
        description: row.description,
        owner: row.owner_email,
        due_date: row.due_date,
        success_criteria: row.success_criteria,
        external_url: row.external_url,
        resolution_note: row.resolution_note,
        evidence_url: row.evidence_url,
        wont_do_reason: row.wont_do_reason,
        due_date_changes: row.due_date_change_count,
        past_target: action::past_target(row.due_date, row.target_date),
        target_date: row.target_date,
        past_target_reason: row.past_target_reason,
        risk_accepted: state.is_active()
            && row
                .risk_accepted_until
                .is_some_and(|until| until >= clock.today()),
        risk_accepted_until: row.risk_accepted_until,
        created_at: row.created_at,
        updated_at: row.updated_at,
        closed_at: row.closed_at,
        verified_at: row.verified_at,
        verified_by: row.verified_by,
        handed_over_from: row.handed_over_from,
        handed_over_at: row.handed_over_at,
    })
}

fn load(conn: &mut DbConnection, id: &str) -> Result<ActionRow, ActionError> {
    corrective_actions::table
        .find(id)
        .select(ActionRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| ActionError::NotFound(id.to_owned()))
}

/// What an update changed, in words ("the title, what done means"), from the action
/// as it was and as it became; the owner and the due date have steps of their own.
fn changed_parts(
    before: Option<&serde_json::Value>,
    after: Option<&serde_json::Value>,
) -> Option<String> {
    let (before, after) = (before?, after?);
    let parts: Vec<&str> = [
        ("title", "the title"),
        ("description", "the description"),
        ("success_criteria", "what done means"),
        ("priority", "the priority"),
        ("kind", "the kind"),
        ("external_url", "the ticket's link"),
    ]
    .into_iter()
    .filter(|(field, _)| before.get(field) != after.get(field))
    .map(|(_, words)| words)
    .collect();
    (!parts.is_empty()).then(|| format!("changed {}", parts.join(", ")))
}

pub(super) fn coe_title_and_severity(
    conn: &mut DbConnection,
    coe_id: &str,
) -> QueryResult<(String, Severity)> {
    let (title, rank): (String, i32) = coes::table
        .find(coe_id)
        .select((coes::title, coes::severity))
        .first(conn)?;
    Ok((title, types::severity("coes.severity", rank)?))
}

/// One action with the history of its due date.
pub fn get(
    conn: &mut DbConnection,
    id: &str,
    clock: Clock,
    trackers: &[crate::config::TrackerSettings],
) -> Result<ActionDetail, ActionError> {
    let row = load(conn, id)?;
    let (title, severity) = coe_title_and_severity(conn, &row.coe_id)?;
    let changes: Vec<DueDateChangeRow> = due_date_changes::table
        .filter(due_date_changes::action_id.eq(id))
        .order(due_date_changes::changed_at.asc())
        .select(DueDateChangeRow::as_select())
        .load(conn)?;
    let steps = audit_log::table
        .filter(audit_log::entity.eq("action"))
        .filter(audit_log::entity_id.eq(id))
        .filter(audit_log::action.eq_any([
            "action:create",
            "action:start",
            "action:complete",
            "action:wont_do",
            "action:reopen",
            "action:verify",
            "action:refuse",
            "action:reassign",
            "action:update",
            "action:risk_asked",
            "action:risk_accepted",
            "action:risk_refused",
            "action:drill_alarm",
            "action:drill_waiting",
            "action:drill_proven",
            "action:drill_missed",
            "action:drill_confirmed",
            "action:drill_reopened",
        ]))
        .order((audit_log::at.asc(), audit_log::id.asc()))
        .select((
            audit_log::action,
            audit_log::actor,
            audit_log::at,
            audit_log::before,
            audit_log::after,
            audit_log::via,
        ))
        .load::<(
            String,
            String,
            NaiveDateTime,
            Option<String>,
            Option<String>,
            Option<String>,
        )>(conn)?;
    let coe_reviewer: Option<String> = coes::table
        .find(&row.coe_id)
        .select(coes::reviewer_email)
        .first(conn)?;
    Ok(ActionDetail {
        coe_reviewer,
        ticket: crate::services::outbound::ticket_of(conn, trackers, id)?,
        recurrences: recurrences(conn, id)?,
        risk_acceptances: risk::of_action(conn, id)?,
        risk_deciders: risk::deciders(conn, &row.owner_email, &row.coe_id)?,
        drill: drill::of_action(conn, id)?,
        steps: steps
            .into_iter()
            .map(|(step, by, at, before, after, via)| {
                let read = |j: Option<String>| {
                    j.and_then(|a| serde_json::from_str::<serde_json::Value>(&a).ok())
                };
                let (before, after) = (read(before), read(after));
                let note = if step == "action:update" {
                    changed_parts(before.as_ref(), after.as_ref())
                } else if step.starts_with("action:drill_") {
                    after.as_ref().and_then(drill_step_note)
                } else if step.starts_with("action:risk_") {
                    // "until 2027-01-15", and what the decider said.
                    after.as_ref().map(|a| {
                        let until = a["until"].as_str().unwrap_or_default();
                        match a["note"].as_str().filter(|n| !n.trim().is_empty()) {
                            Some(note) => format!("until {until}: {note}"),
                            None => format!("until {until}"),
                        }
                    })
                } else {
                    after
                        .as_ref()
                        .and_then(|a| {
                            a.get("reason")
                                .or_else(|| a.get("note"))
                                .and_then(|n| n.as_str().map(str::to_owned))
                        })
                        .filter(|n| !n.trim().is_empty())
                };
                ActionStep {
                    step: step.trim_start_matches("action:").to_owned(),
                    by,
                    at,
                    note,
                    via,
                }
            })
            // A change of owner is its own step (`reassign`); an update that changed
            // nothing else says nothing.
            .filter(|s| s.step != "update" || s.note.is_some())
            .collect(),
        action: view(row, title, severity, clock)?,
        due_date_history: changes
            .into_iter()
            .map(|c| DueDateChange {
                from: c.from_date,
                to: c.to_date,
                reason: c.reason,
                by: c.changed_by,
                at: c.changed_at,
            })
            .collect(),
    })
}

/// What a drill step of an action's history adds: the labels named, the alarm's delay,
/// or what the reviewer said.
fn drill_step_note(after: &serde_json::Value) -> Option<String> {
    if let Some(note) = after["note"].as_str().filter(|n| !n.trim().is_empty()) {
        return Some(note.to_owned());
    }
    if let Some(seconds) = after["detected_seconds"].as_i64() {
        return Some(format!(
            "detected in {}",
            crate::domain::drill::span_words(seconds)
        ));
    }
    if let Some(due) = after["last_day"].as_str() {
        return Some(format!("the drill by {due}"));
    }
    let labels: std::collections::BTreeMap<String, String> =
        serde_json::from_value(after["labels"].clone()).ok()?;
    Some(crate::domain::drill::labels_words(&labels))
}
