//! Corrective actions: created on a COE, moved through their life cycle, listed with
//! the one definition of overdue. Closing the last action of an approved COE closes
//! the COE; reopening one brings it back to approved.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::db::models::{ActionRow, DueDateChangeRow};
use crate::db::schema::{coes, corrective_actions, due_date_changes, people};
use crate::db::types::{self, word};
use crate::db::{self, locks, DbConnection};
use crate::domain::action::{
    self, check_new_due_date, days_overdue, is_overdue, ActionKind, ActionState, InvalidTransition,
    Priority, Transition,
};
use crate::domain::coe::CoeState;
use crate::domain::{Clock, EmailAddress, Severity};
use crate::services::access::{self, AccessError, Editor};
use crate::services::audit::{self, Change, Subject};
use crate::services::{lifecycle, people as directory};

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no action with id `{0}`")]
    NotFound(String),
    #[error("no COE with id `{0}`")]
    CoeNotFound(String),
    #[error("the COE is {0}: it takes no new corrective actions")]
    CoeClosed(CoeState),
    #[error("invalid input")]
    Invalid(Vec<(String, String)>),
    #[error(transparent)]
    Transition(#[from] InvalidTransition),
    #[error("{0}")]
    Forbidden(String),
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
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub closed_at: Option<NaiveDateTime>,
}

/// A moved due date.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DueDateChange {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub reason: String,
    pub by: String,
    pub at: NaiveDateTime,
}

/// One action with the history of its due date.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActionDetail {
    #[serde(flatten)]
    pub action: ActionView,
    pub due_date_history: Vec<DueDateChange>,
}

/// Input of `POST /api/v1/coes/{id}/actions`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAction {
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
    /// One owner, an email address.
    #[schema(value_type = String, example = "alice@example.com")]
    pub owner: EmailAddress,
    /// `YYYY-MM-DD`, after today in the organisation's time zone.
    pub due_date: NaiveDate,
    pub priority: Priority,
    pub kind: ActionKind,
    #[serde(default)]
    pub success_criteria: Option<String>,
    /// A ticket, as an http(s) URL.
    #[serde(default)]
    pub external_url: Option<String>,
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
        created_at: row.created_at,
        updated_at: row.updated_at,
        closed_at: row.closed_at,
    })
}

fn audit(
    conn: &mut DbConnection,
    action: &ActionRow,
    actor: &str,
    what: &str,
    before: Option<serde_json::Value>,
    after: Option<serde_json::Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    audit::record(
        conn,
        Change {
            subject: Subject::Action {
                id: &action.id,
                coe_id: &action.coe_id,
            },
            actor,
            action: what,
            before,
            after,
        },
        now,
    )
}

fn clean_text(field: &str, text: Option<&str>, max: usize) -> Result<Option<String>, ActionError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if t.len() > max => Err(invalid(field, format!("must be at most {max} bytes"))),
        Some(t) => Ok(Some(t.to_owned())),
    }
}

fn web_url(field: &str, url: Option<&str>) -> Result<Option<String>, ActionError> {
    match url.map(str::trim).filter(|u| !u.is_empty()) {
        None => Ok(None),
        Some(u) => crate::domain::event::web_links([u.to_owned()])
            .into_iter()
            .next()
            .map(Some)
            .ok_or_else(|| invalid(field, format!("must be an http or https URL (got {u:?})"))),
    }
}

/// Locks the action's COE, then loads the action as it now is.
fn load_locked(conn: &mut DbConnection, id: &str) -> Result<ActionRow, ActionError> {
    let coe_id: String = corrective_actions::table
        .find(id)
        .select(corrective_actions::coe_id)
        .first(conn)
        .optional()?
        .ok_or_else(|| ActionError::NotFound(id.to_owned()))?;
    locks::lock_coe(conn, &coe_id)?;
    load(conn, id)
}

fn load(conn: &mut DbConnection, id: &str) -> Result<ActionRow, ActionError> {
    corrective_actions::table
        .find(id)
        .select(ActionRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| ActionError::NotFound(id.to_owned()))
}

/// Adds a corrective action to a COE; returns its id.
pub fn create(
    conn: &mut DbConnection,
    coe_id: &str,
    input: &NewAction,
    actor: &str,
    clock: Clock,
) -> Result<String, ActionError> {
    db::write_transaction(conn, |conn| {
        if locks::lock_coe(conn, coe_id)? == 0 {
            return Err(ActionError::CoeNotFound(coe_id.to_owned()));
        }
        let state: String = coes::table
            .find(coe_id)
            .select(coes::state)
            .first(conn)
            .optional()?
            .ok_or_else(|| ActionError::CoeNotFound(coe_id.to_owned()))?;
        let coe_state: CoeState = types::read("coes.state", &state)?;
        if coe_state == CoeState::Closed {
            return Err(ActionError::CoeClosed(coe_state));
        }
        let mut problems = Vec::new();
        let title = input.title.trim();
        if title.is_empty() {
            problems.push(("title".to_owned(), "must not be empty".to_owned()));
        } else if title.len() > 500 {
            problems.push(("title".to_owned(), "must be at most 500 bytes".to_owned()));
        }
        if let Err(p) = check_new_due_date(input.due_date, clock.now, clock.tz) {
            problems.push(("due_date".to_owned(), p));
        }
        if !problems.is_empty() {
            return Err(ActionError::Invalid(problems));
        }
        let now = db::now();
        let row = ActionRow {
            id: db::new_id(),
            coe_id: coe_id.to_owned(),
            title: title.to_owned(),
            description: clean_text("description", input.description.as_deref(), 20_000)?,
            owner_email: input.owner.as_str().to_owned(),
            due_date: input.due_date,
            priority: word(input.priority),
            kind: word(input.kind),
            success_criteria: clean_text(
                "success_criteria",
                input.success_criteria.as_deref(),
                20_000,
            )?,
            external_url: web_url("external_url", input.external_url.as_deref())?,
            state: ActionState::Open.as_str().to_owned(),
            resolution_note: None,
            evidence_url: None,
            wont_do_reason: None,
            due_date_change_count: 0,
            created_by: actor.to_owned(),
            created_at: now,
            updated_at: now,
            closed_at: None,
        };
        directory::ensure(conn, &row.owner_email, now)?;
        diesel::insert_into(corrective_actions::table)
            .values(&row)
            .execute(conn)?;
        audit(
            conn,
            &row,
            actor,
            "action:create",
            None,
            Some(json!({
                "title": row.title, "owner": row.owner_email, "due_date": row.due_date,
                "priority": row.priority, "kind": row.kind,
            })),
            now,
        )?;
        // A new open action on a closed-by-itself COE is not possible (refused above);
        // on an approved COE it keeps the COE approved until it closes.
        Ok(row.id)
    })
}

fn coe_title_and_severity(
    conn: &mut DbConnection,
    coe_id: &str,
) -> QueryResult<(String, Severity)> {
    let (title, rank): (String, i32) = coes::table
        .find(coe_id)
        .select((coes::title, coes::severity))
        .first(conn)?;
    Ok((title, types::severity("coes.severity", rank)?))
}

/// Who may change an action: see `services::access::action`.
pub fn may_change(
    conn: &mut DbConnection,
    id: &str,
    email: Option<&str>,
    is_admin: bool,
) -> Result<(), ActionError> {
    let who = Editor {
        actor: email.unwrap_or_default(),
        email,
        is_admin,
    };
    Ok(access::action(conn, id, &who)?)
}

/// One action with the history of its due date.
pub fn get(conn: &mut DbConnection, id: &str, clock: Clock) -> Result<ActionDetail, ActionError> {
    let row = load(conn, id)?;
    let (title, severity) = coe_title_and_severity(conn, &row.coe_id)?;
    let changes: Vec<DueDateChangeRow> = due_date_changes::table
        .filter(due_date_changes::action_id.eq(id))
        .order(due_date_changes::changed_at.asc())
        .select(DueDateChangeRow::as_select())
        .load(conn)?;
    Ok(ActionDetail {
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

/// Changes an action's fields; a new due date needs a reason and is recorded.
pub fn patch(
    conn: &mut DbConnection,
    id: &str,
    patch: &ActionPatch,
    actor: &str,
    clock: Clock,
) -> Result<(), ActionError> {
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let before =
            serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
        let now = db::now();
        let mut changed = false;
        if let Some(title) = &patch.title {
            let title = title.trim();
            if title.is_empty() {
                return Err(invalid("title", "must not be empty"));
            }
            row.title = title.to_owned();
            changed = true;
        }
        if patch.description.is_some() {
            row.description = clean_text("description", patch.description.as_deref(), 20_000)?;
            changed = true;
        }
        if let Some(owner) = &patch.owner {
            row.owner_email = owner.as_str().to_owned();
            directory::ensure(conn, &row.owner_email, now)?;
            changed = true;
        }
        if let Some(priority) = patch.priority {
            row.priority = word(priority);
            changed = true;
        }
        if let Some(kind) = patch.kind {
            row.kind = word(kind);
            changed = true;
        }
        if patch.success_criteria.is_some() {
            row.success_criteria = clean_text(
                "success_criteria",
                patch.success_criteria.as_deref(),
                20_000,
            )?;
            changed = true;
        }
        if patch.external_url.is_some() {
            row.external_url = web_url("external_url", patch.external_url.as_deref())?;
            changed = true;
        }
        if let Some(due) = patch.due_date {
            if due != row.due_date {
                let reason = patch
                    .reason
                    .as_deref()
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| invalid("reason", "is required to move the due date"))?;
                check_new_due_date(due, clock.now, clock.tz).map_err(|p| invalid("due_date", p))?;
                diesel::insert_into(due_date_changes::table)
                    .values(DueDateChangeRow {
                        id: db::new_id(),
                        action_id: id.to_owned(),
                        from_date: row.due_date,
                        to_date: due,
                        reason: reason.to_owned(),
                        changed_by: actor.to_owned(),
                        changed_at: now,
                    })
                    .execute(conn)?;
                row.due_date = due;
                row.due_date_change_count += 1;
                changed = true;
            }
        } else if patch.reason.is_some() {
            return Err(invalid("reason", "goes with a new due_date"));
        }
        if !changed {
            return Err(invalid(
                "body",
                "names nothing to change (title, description, owner, due_date with reason, priority, kind, success_criteria, external_url)",
            ));
        }
        row.updated_at = now;
        diesel::update(corrective_actions::table.find(id))
            .set(&row)
            .execute(conn)?;
        let after =
            serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
        audit(conn, &row, actor, "action:update", before, after, now)?;
        Ok(())
    })
}

/// Moves an action through its life cycle. Closing the last active action of an
/// approved COE closes the COE; reopening one of a closed COE brings it back to approved.
pub fn transition(
    conn: &mut DbConnection,
    id: &str,
    verb: Transition,
    input: &TransitionInput,
    actor: &str,
) -> Result<(), ActionError> {
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let from: ActionState = types::read("corrective_actions.state", &row.state)?;
        let to = action::transition(from, verb)?;
        let note = input
            .note
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty());
        if verb.needs_note() && note.is_none() {
            let what = match verb {
                Transition::Complete => "a resolution note is required to complete an action",
                Transition::WontDo => "a reason is required to decide not to do an action",
                _ => "a note is required to reopen an action",
            };
            return Err(invalid("note", what));
        }
        let now = db::now();
        match verb {
            Transition::Complete => {
                row.resolution_note = note.map(str::to_owned);
                row.evidence_url = web_url("evidence_url", input.evidence_url.as_deref())?;
                row.closed_at = Some(now);
            }
            Transition::WontDo => {
                row.wont_do_reason = note.map(str::to_owned);
                row.closed_at = Some(now);
            }
            Transition::Reopen => {
                row.closed_at = None;
            }
            Transition::Start => {}
        }
        row.state = to.as_str().to_owned();
        row.updated_at = now;
        diesel::update(corrective_actions::table.find(id))
            .set(&row)
            .execute(conn)?;
        audit(
            conn,
            &row,
            actor,
            &format!("action:{}", verb.name()),
            Some(json!({"state": from.as_str()})),
            Some(json!({"state": to.as_str(), "note": note})),
            now,
        )?;
        lifecycle::settle(conn, &row.coe_id, actor, now)?;
        Ok(())
    })
}

/// Filters of the action list.
#[derive(Debug, Clone, Default)]
pub struct ActionFilter {
    pub owner: Option<String>,
    pub team: Option<String>,
    pub coe: Option<String>,
    pub state: Option<ActionState>,
    pub overdue: Option<bool>,
    pub due_before: Option<NaiveDate>,
    pub priority: Option<Priority>,
    pub kind: Option<ActionKind>,
}

/// How the list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ActionSort {
    /// Soonest due first.
    #[default]
    DueDate,
    /// Most days overdue first (the same order, for overdue actions, as the oldest due date).
    DaysOverdue,
}

/// A page of actions and how many match in all.
pub fn list(
    conn: &mut DbConnection,
    filter: &ActionFilter,
    sort: ActionSort,
    limit: i64,
    offset: i64,
    clock: Clock,
) -> QueryResult<(Vec<ActionView>, i64)> {
    // "Overdue" in SQL is the domain's definition: active, and the due date is before
    // today in the organisation's time zone.
    let today = clock.today();
    let active = [ActionState::Open.as_str(), ActionState::InProgress.as_str()];
    let team_members: Option<Vec<String>> = match &filter.team {
        Some(team) => Some(
            people::table
                .filter(people::team.eq(team))
                .select(people::email)
                .load(conn)?,
        ),
        None => None,
    };
    let filtered = || {
        let mut q = corrective_actions::table.into_boxed();
        if let Some(owner) = &filter.owner {
            q = q.filter(corrective_actions::owner_email.eq(owner.clone()));
        }
        if let Some(members) = &team_members {
            q = q.filter(corrective_actions::owner_email.eq_any(members.clone()));
        }
        if let Some(coe) = &filter.coe {
            q = q.filter(corrective_actions::coe_id.eq(coe.clone()));
        }
        if let Some(state) = filter.state {
            q = q.filter(corrective_actions::state.eq(state.as_str()));
        }
        match filter.overdue {
            Some(true) => {
                q = q
                    .filter(corrective_actions::state.eq_any(active))
                    .filter(corrective_actions::due_date.lt(today));
            }
            Some(false) => {
                q = q.filter(
                    corrective_actions::state
                        .ne_all(active)
                        .or(corrective_actions::due_date.ge(today)),
                );
            }
            None => {}
        }
        if let Some(before) = filter.due_before {
            q = q.filter(corrective_actions::due_date.lt(before));
        }
        if let Some(priority) = filter.priority {
            q = q.filter(corrective_actions::priority.eq(word(priority)));
        }
        if let Some(kind) = filter.kind {
            q = q.filter(corrective_actions::kind.eq(word(kind)));
        }
        q
    };
    let total: i64 = filtered().count().get_result(conn)?;
    let ordered = match sort {
        ActionSort::DueDate => filtered().order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        )),
        // The longest overdue is the oldest due date.
        ActionSort::DaysOverdue => filtered().order((
            corrective_actions::due_date.asc(),
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        )),
    };
    let rows: Vec<ActionRow> = ordered
        .limit(limit)
        .offset(offset)
        .select(ActionRow::as_select())
        .load(conn)?;
    let coe_ids: Vec<String> = rows.iter().map(|r| r.coe_id.clone()).collect();
    let coe_info: std::collections::HashMap<String, (String, i32)> = coes::table
        .filter(coes::id.eq_any(coe_ids))
        .select((coes::id, coes::title, coes::severity))
        .load::<(String, String, i32)>(conn)?
        .into_iter()
        .map(|(id, t, s)| (id, (t, s)))
        .collect();
    let views = rows
        .into_iter()
        .map(|r| {
            let (title, rank) = coe_info.get(&r.coe_id).cloned().unwrap_or_default();
            view(r, title, types::severity("coes.severity", rank)?, clock)
        })
        .collect::<QueryResult<_>>()?;
    Ok((views, total))
}

/// The actions of one COE, oldest first.
pub fn for_coe(
    conn: &mut DbConnection,
    coe_id: &str,
    clock: Clock,
) -> QueryResult<Vec<ActionView>> {
    let (title, severity) = coe_title_and_severity(conn, coe_id)?;
    let rows: Vec<ActionRow> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(coe_id))
        .order((
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        ))
        .select(ActionRow::as_select())
        .load(conn)?;
    rows.into_iter()
        .map(|r| view(r, title.clone(), severity, clock))
        .collect()
}
