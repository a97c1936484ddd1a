//! Writing corrective actions: create, change fields (a moved due date needs a reason
//! and is recorded), and move through the life cycle (its verification is `verify`). Each write locks the action's
//! COE first and is audited.

use diesel::prelude::*;

use super::{
    invalid, load, view, ActionDetail, ActionError, ActionPatch, ActionStep, NewAction,
    TransitionInput,
};
use crate::db::models::{ActionRow, DueDateChangeRow};
use crate::db::schema::{coes, corrective_actions, due_date_changes};
use crate::db::types::{self, word};
use crate::db::{self, locks, DbConnection};
use crate::domain::action::{self, check_new_due_date, ActionKind, ActionState, Transition};
use crate::domain::coe::CoeState;
use crate::domain::{Clock, Severity};
use crate::services::access::{self, AccessError, Acting, Editor};
use crate::services::outbound::outbox::NewEmail;
use crate::services::outbound::spine::ActionChange;
use crate::services::outbound::{self, ActionEvent};
use crate::services::Env;
use crate::services::{coe::lifecycle, directory::people as directory};

/// The field problems of an `Invalid` error (none for other errors).
fn invalid_fields(e: ActionError) -> Vec<(String, String)> {
    match e {
        ActionError::Invalid(problems) => problems,
        _ => Vec::new(),
    }
}

/// Longest note on a transition or reason for a due-date move, in bytes.
pub const MAX_NOTE_BYTES: usize = 10_000;

pub(super) fn clean_text(
    field: &str,
    text: Option<&str>,
    max: usize,
) -> Result<Option<String>, ActionError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if t.len() > max => Err(invalid(field, format!("must be at most {max} bytes"))),
        Some(t) => Ok(Some(t.to_owned())),
    }
}

fn web_url(field: &str, url: Option<&str>) -> Result<Option<String>, ActionError> {
    match url.map(str::trim).filter(|u| !u.is_empty()) {
        None => Ok(None),
        Some(u) => crate::domain::event::web_link(u).map(Some).ok_or_else(|| {
            let shown: String = u.chars().take(100).collect();
            invalid(
                field,
                format!(
                    "must be an http or https URL of at most {} bytes (got {shown:?})",
                    crate::domain::event::MAX_LINK_BYTES
                ),
            )
        }),
    }
}

/// Locks the action's COE, then loads the action as it now is.
pub(super) fn load_locked(conn: &mut DbConnection, id: &str) -> Result<ActionRow, ActionError> {
    let coe_id: String = corrective_actions::table
        .find(id)
        .select(corrective_actions::coe_id)
        .first(conn)
        .optional()?
        .ok_or_else(|| ActionError::NotFound(id.to_owned()))?;
    locks::lock_coe(conn, &coe_id)?;
    load(conn, id)
}

/// Adds an action to COE `coe_id`, and queues the owner's email, in one transaction
/// (`prepare`, then `add`).
pub fn create(
    conn: &mut DbConnection,
    coe_id: &str,
    input: &NewAction,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<String, ActionError> {
    db::write_transaction(conn, |conn| {
        let prepared = prepare(conn, coe_id, input, who, clock, env)?;
        Ok(add(conn, prepared, env)?.action.id)
    })
}

/// A new action checked, with its owner's email composed: what `add` writes.
pub struct Prepared {
    row: ActionRow,
    /// Who adds it: asked again, in the write's transaction, whether they may.
    by: Acting,
    email: Option<NewEmail>,
    /// Its COE as the action's answer shows it: title, severity, reviewer.
    coe_title: String,
    coe_severity: Severity,
    coe_reviewer: Option<String>,
    clock: Clock,
    /// Its COE was in review when checked: adding changes what its reviewers read.
    in_review: bool,
}

/// Checks a new action of COE `coe_id` (the caller may add actions to it; it is open;
/// every field) and composes its owner's email: reads only, so that a writer that
/// takes many writes in turn (`http::state::with_write`) only writes (`add`).
pub fn prepare(
    conn: &mut DbConnection,
    coe_id: &str,
    input: &NewAction,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<Prepared, ActionError> {
    access::coe(conn, coe_id, who).map_err(|e| match e {
        AccessError::NotFound(id) => ActionError::CoeNotFound(id),
        other => other.into(),
    })?;
    let (state, coe_title, coe_severity, coe_reviewer): (String, String, i32, Option<String>) =
        coes::table
            .find(coe_id)
            .select((
                coes::state,
                coes::title,
                coes::severity,
                coes::reviewer_email,
            ))
            .first(conn)
            .optional()?
            .ok_or_else(|| ActionError::CoeNotFound(coe_id.to_owned()))?;
    refuse_closed(&state)?;
    let severity = types::severity("coes.severity", coe_severity)?;
    let targets = &env.settings.actions.targets;
    let today = clock.today();
    let target_of = |priority| action::target_date(targets, priority, severity, today);
    let checked = input.check(clock, target_of);
    let mut problems = checked.as_ref().err().cloned().unwrap_or_default();
    let past_target_reason = clean_text(
        "past_target_reason",
        input.past_target_reason.as_deref(),
        MAX_NOTE_BYTES,
    )
    .map_err(|e| problems.extend(invalid_fields(e)))
    .ok()
    .flatten();
    let target_date = checked.as_ref().ok().and_then(|c| target_of(c.priority));
    let past_target_reason = match &checked {
        Ok(c) if action::past_target(c.due_date, target_date) => {
            if past_target_reason.is_none() {
                problems.push((
                    "past_target_reason".to_owned(),
                    past_target_problem(c.due_date, target_date, c.priority, severity, targets),
                ));
            }
            past_target_reason
        }
        // A reason for nothing is not kept.
        _ => None,
    };
    let description = clean_text("description", input.description.as_deref(), 20_000)
        .map_err(|e| problems.extend(invalid_fields(e)))
        .ok()
        .flatten();
    let success_criteria = clean_text(
        "success_criteria",
        input.success_criteria.as_deref(),
        20_000,
    )
    .map_err(|e| problems.extend(invalid_fields(e)))
    .ok()
    .flatten();
    let external_url = web_url("external_url", input.external_url.as_deref())
        .map_err(|e| problems.extend(invalid_fields(e)))
        .ok()
        .flatten();
    if let Ok(checked) = &checked {
        if let Some(problem) = directory::check_action_owner(conn, env, checked.owner.as_str())? {
            problems.push(("owner".to_owned(), problem));
        }
    }
    let checked = match checked {
        Ok(checked) if problems.is_empty() => checked,
        _ => return Err(ActionError::Invalid(problems)),
    };
    // Its times are set when it is written (`add`).
    let now = db::now();
    let row = ActionRow {
        id: db::new_id(),
        coe_id: coe_id.to_owned(),
        title: checked.title,
        description,
        owner_email: checked.owner.as_str().to_owned(),
        due_date: checked.due_date,
        priority: word(checked.priority),
        kind: word(checked.kind),
        success_criteria,
        external_url,
        state: ActionState::Open.as_str().to_owned(),
        resolution_note: None,
        evidence_url: None,
        wont_do_reason: None,
        due_date_change_count: 0,
        created_by: who.actor.to_owned(),
        created_at: now,
        updated_at: now,
        closed_at: None,
        verified_at: None,
        verified_by: None,
        handed_over_from: None,
        handed_over_at: None,
        target_date,
        past_target_reason,
        risk_accepted_until: None,
    };
    let email = outbound::spine::new_owner_email(conn, env, &row, &coe_title, who.actor)?;
    Ok(Prepared {
        row,
        by: who.to_acting(),
        email,
        coe_title,
        coe_severity: severity,
        coe_reviewer,
        clock,
        in_review: state == CoeState::InReview.as_str(),
    })
}

/// Writes a prepared action (`prepare`), its audit row and its owner's email, in the
/// caller's transaction: the COE asked again whether it is open (it may have closed
/// since), under a share lock (`locks::coe_state_shared`). Gives the new action as `get` would read it after the commit.
pub fn add(
    conn: &mut DbConnection,
    prepared: Prepared,
    env: Env<'_>,
) -> Result<ActionDetail, ActionError> {
    let Prepared {
        mut row,
        by,
        email,
        coe_title,
        coe_severity,
        coe_reviewer,
        clock,
        in_review,
    } = prepared;
    // Held against a transition (which takes `lock_coe`) until the commit, but not
    // against another action added: a COE may be closed only with every action
    // closed, and an action is added only to a COE not closed. A COE in review
    // takes a new version (`review::touch_in_review`): its row is locked for that
    // from the start, as a shared lock taken first would deadlock with another's.
    let state = if in_review {
        locks::lock_coe(conn, &row.coe_id)?;
        coes::table
            .find(&row.coe_id)
            .select(coes::state)
            .first::<String>(conn)
            .optional()?
    } else {
        locks::coe_state_shared(conn, &row.coe_id)?
    };
    let Some(state) = state else {
        return Err(ActionError::CoeNotFound(row.coe_id));
    };
    // Checked in `prepare` too, outside this transaction: the owner or reviewer may
    // have changed since, and the answer must hold for the write itself.
    access::coe(conn, &row.coe_id, &by.editor()).map_err(|e| match e {
        AccessError::NotFound(id) => ActionError::CoeNotFound(id),
        other => other.into(),
    })?;
    refuse_closed(&state)?;
    if !in_review && state == CoeState::InReview.as_str() {
        return Err(ActionError::Conflict(
            "the COE was submitted for review meanwhile: add the action again".into(),
        ));
    }
    let now = db::now();
    (row.created_at, row.updated_at) = (now, now);
    directory::ensure(conn, &row.owner_email, now)?;
    diesel::insert_into(corrective_actions::table)
        .values(&row)
        .execute(conn)?;
    let created = ActionEvent::Created {
        action: &row,
        email: email.as_ref(),
        coe_in_review: in_review,
    };
    outbound::happened(conn, env, &row.created_by, created, now)?;
    // A new open action on a closed COE is refused (above); on an approved COE it
    // keeps the COE approved until it closes. New, it has no history but its creation.
    let ticket = outbound::ticket_of(conn, &env.connections.trackers, &row.id)?;
    let input_kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
    let step = ActionStep {
        step: "create".to_owned(),
        by: row.created_by.clone(),
        at: now,
        note: None,
        via: None,
    };
    Ok(ActionDetail {
        action: view(row, coe_title, coe_severity, clock)?,
        due_date_history: Vec::new(),
        steps: vec![step],
        recurrences: Vec::new(),
        risk_acceptances: Vec::new(),
        risk_deciders: Vec::new(),
        drill: super::drill::DrillView {
            applies: crate::domain::drill::proven_by_alarm(input_kind),
            ..Default::default()
        },
        coe_reviewer,
        ticket,
    })
}

/// What a due date past its target lacks, in words: the target and a reason.
fn past_target_problem(
    due: chrono::NaiveDate,
    target: Option<chrono::NaiveDate>,
    priority: crate::domain::action::Priority,
    severity: Severity,
    targets: &[action::Target],
) -> String {
    let days = action::target_days(targets, priority, severity).unwrap_or_default();
    let target = target.map(|t| t.to_string()).unwrap_or_default();
    format!(
        "is required: the due date {due} is past the target for a {} priority action on a \
         {severity} COE ({days} days: {target}); give the reason, or choose a date on or before {target}",
        priority.as_str()
    )
}

/// Refuses a COE in state `state` when it is closed or merged: it takes no new action.
fn refuse_closed(state: &str) -> Result<(), ActionError> {
    let coe_state: CoeState = types::read("coes.state", state)?;
    if matches!(coe_state, CoeState::Closed | CoeState::Merged) {
        return Err(ActionError::CoeClosed(coe_state));
    }
    Ok(())
}

/// Changes an action's fields; a new due date needs a reason and is recorded.
pub fn patch(
    conn: &mut DbConnection,
    id: &str,
    patch: &ActionPatch,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<(), ActionError> {
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let owner_before = row.owner_email.clone();
        access::action(conn, id, who)?;
        let actor = who.actor;
        let before =
            serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
        let now = db::now();
        let fields_changed = change_fields(conn, &mut row, patch, env, now)?;
        let due_moved = move_due_date(conn, &mut row, patch, actor, clock, now)?;
        let changed = fields_changed || due_moved.is_some();
        if changed {
            keep_target(conn, &mut row, patch, due_moved.as_ref(), clock, env)?;
        }
        if !changed {
            return Err(invalid(
                "body",
                "names nothing to change (title, description, owner, due_date with reason, priority, kind, success_criteria, external_url)",
            ));
        }
        // A verification holds for the action as it was checked, done by whom it
        // was: another owner, or another title, description, kind or success
        // criteria, and it is to be verified again (a closed COE waits again).
        let unverified = row.verified_at.is_some()
            && (row.owner_email != owner_before
                || patch.title.is_some()
                || patch.description.is_some()
                || patch.kind.is_some()
                || patch.success_criteria.is_some());
        if unverified {
            (row.verified_at, row.verified_by) = (None, None);
        }
        row.updated_at = now;
        diesel::update(corrective_actions::table.find(id))
            .set(&row)
            .execute(conn)?;
        let after =
            serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
        // The reason a reassignment gives (checked only when the owner changed).
        let handed_over = row.owner_email != owner_before;
        let reason = match handed_over {
            true => clean_text("reason", patch.reason.as_deref(), MAX_NOTE_BYTES)?,
            false => None,
        };
        let change = ActionChange {
            action: &row,
            before,
            after,
            words: patch.title.is_some()
                || patch.description.is_some()
                || patch.success_criteria.is_some(),
            due: due_moved
                .as_ref()
                .map(|(from, to, why)| (*from, *to, why.as_str())),
            handed_from: handed_over.then_some((owner_before.as_str(), reason.as_deref())),
            unverified,
        };
        outbound::happened(conn, env, actor, ActionEvent::Changed(change), now)?;
        // After the spine (which takes a new version of a COE in review): settling moves
        // only an approved or closed COE, so the two never act on one COE.
        if unverified {
            lifecycle::settle(
                conn,
                &row.coe_id,
                env.settings.coe.verify_actions_from,
                actor,
                now,
            )?;
        }
        Ok(())
    })
}

/// The target follows the priority (from the day the action was added: a new
/// priority, a new target); a due date moved past it keeps the move's reason as why.
fn keep_target(
    conn: &mut DbConnection,
    row: &mut ActionRow,
    patch: &ActionPatch,
    due_moved: Option<&(chrono::NaiveDate, chrono::NaiveDate, String)>,
    clock: Clock,
    env: Env<'_>,
) -> Result<(), ActionError> {
    if patch.priority.is_some() {
        let (_, severity) = super::coe_title_and_severity(conn, &row.coe_id)?;
        let priority = types::read("corrective_actions.priority", &row.priority)?;
        let added = clock.local_date(row.created_at);
        row.target_date =
            action::target_date(&env.settings.actions.targets, priority, severity, added);
        if !action::past_target(row.due_date, row.target_date) {
            row.past_target_reason = None;
        }
    }
    if let Some((_, to, why)) = due_moved {
        row.past_target_reason = action::past_target(*to, row.target_date).then(|| why.clone());
    }
    Ok(())
}

/// Changes the fields of `row` that the patch names, but its due date, each
/// checked (a new owner is added to the directory); says whether it named any.
fn change_fields(
    conn: &mut DbConnection,
    row: &mut ActionRow,
    patch: &ActionPatch,
    env: Env<'_>,
    now: chrono::NaiveDateTime,
) -> Result<bool, ActionError> {
    let mut changed = false;
    if let Some(title) = &patch.title {
        let title = title.trim();
        if title.is_empty() {
            return Err(invalid("title", "must not be empty"));
        }
        if title.len() > 500 {
            return Err(invalid("title", "must be at most 500 bytes"));
        }
        crate::domain::coe::check_one_line(title).map_err(|p| invalid("title", p))?;
        row.title = title.to_owned();
        changed = true;
    }
    if patch.description.is_some() {
        row.description = clean_text("description", patch.description.as_deref(), 20_000)?;
        changed = true;
    }
    if let Some(owner) = &patch.owner {
        if let Some(problem) = directory::check_action_owner(conn, env, owner.as_str())? {
            return Err(invalid("owner", problem));
        }
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
    Ok(changed)
}

/// Moves `row`'s due date when the patch names another, with the reason it gives
/// (required), and records the move; says from when to when, and why. A reason
/// alone goes with a new owner.
fn move_due_date(
    conn: &mut DbConnection,
    row: &mut ActionRow,
    patch: &ActionPatch,
    actor: &str,
    clock: Clock,
    now: chrono::NaiveDateTime,
) -> Result<Option<(chrono::NaiveDate, chrono::NaiveDate, String)>, ActionError> {
    if let Some(due) = patch.due_date {
        if due != row.due_date {
            let reason = clean_text("reason", patch.reason.as_deref(), MAX_NOTE_BYTES)?
                .ok_or_else(|| invalid("reason", "is required to move the due date"))?;
            check_new_due_date(due, clock.now, clock.tz).map_err(|p| invalid("due_date", p))?;
            let moved = (row.due_date, due, reason.clone());
            record_due_move(conn, row, due, reason, actor, now)?;
            // Moved by hand: no longer the day a risk was accepted until.
            row.risk_accepted_until = None;
            return Ok(Some(moved));
        }
    } else if patch.reason.is_some() && patch.owner.is_none() {
        return Err(invalid("reason", "goes with a new due_date or a new owner"));
    }
    Ok(None)
}

/// Moves `row`'s due date to `to` for `reason`, and records the move: the one writer
/// of `due_date_changes` (a move by hand, a risk accepted until a day).
pub(super) fn record_due_move(
    conn: &mut DbConnection,
    row: &mut ActionRow,
    to: chrono::NaiveDate,
    reason: String,
    actor: &str,
    now: chrono::NaiveDateTime,
) -> QueryResult<()> {
    diesel::insert_into(due_date_changes::table)
        .values(DueDateChangeRow {
            id: db::new_id(),
            action_id: row.id.clone(),
            from_date: row.due_date,
            to_date: to,
            reason,
            changed_by: actor.to_owned(),
            changed_at: now,
        })
        .execute(conn)?;
    row.due_date = to;
    row.due_date_change_count += 1;
    Ok(())
}

/// Moves an action through its life cycle. Closing the last active action of an
/// approved COE closes the COE; reopening one of a closed COE brings it back to approved.
pub fn transition(
    conn: &mut DbConnection,
    id: &str,
    verb: Transition,
    input: &TransitionInput,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), ActionError> {
    let verify_from = env.settings.coe.verify_actions_from;
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        access::action(conn, id, who)?;
        let actor = who.actor;
        let from: ActionState = types::read("corrective_actions.state", &row.state)?;
        let to = action::transition(from, verb)?;
        let note = clean_text("note", input.note.as_deref(), MAX_NOTE_BYTES)?;
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
                let evidence = web_url("evidence_url", input.evidence_url.as_deref())?;
                let kind: ActionKind = types::read("corrective_actions.kind", &row.kind)?;
                if let Some(problem) =
                    action::missing_evidence(kind, note.as_deref(), evidence.as_deref())
                {
                    return Err(invalid("evidence_url", problem));
                }
                row.resolution_note = note.clone();
                row.evidence_url = evidence;
                row.closed_at = Some(now);
                (row.verified_at, row.verified_by) = (None, None);
            }
            Transition::WontDo => {
                row.wont_do_reason = note.clone();
                row.closed_at = Some(now);
            }
            Transition::Reopen => {
                row.closed_at = None;
                (row.verified_at, row.verified_by) = (None, None);
            }
            Transition::Start => {}
        }
        row.state = to.as_str().to_owned();
        row.updated_at = now;
        diesel::update(corrective_actions::table.find(id))
            .set(&row)
            .execute(conn)?;
        let stepped = ActionEvent::Stepped {
            action: &row,
            verb,
            from,
            note: note.as_deref(),
        };
        outbound::happened(conn, env, actor, stepped, now)?;
        lifecycle::settle(conn, &row.coe_id, verify_from, actor, now)?;
        Ok(())
    })
}

/// Whether `who` may delete action `row`: the COE's owner (or an admin), while the
/// COE is a draft.
fn deletable(
    conn: &mut DbConnection,
    row: &ActionRow,
    who: &Editor<'_>,
) -> Result<(), ActionError> {
    let (state, owner): (String, Option<String>) = coes::table
        .find(&row.coe_id)
        .select((coes::state, coes::owner_email))
        .first(conn)?;
    let state: CoeState = types::read("coes.state", &state)?;
    access::delete_actions(who, owner.as_deref())?;
    if state != CoeState::Draft {
        return Err(ActionError::NotDeletable(state));
    }
    Ok(())
}

/// Whether `who` may delete action `id` now (the page offers the button then).
pub fn may_delete(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
) -> Result<bool, ActionError> {
    let row = load(conn, id)?;
    match deletable(conn, &row, who) {
        Ok(()) => Ok(true),
        Err(ActionError::Forbidden(_) | ActionError::NotDeletable(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Deletes an action added by mistake: only while its COE is a draft, and only by
/// the COE's owner (or an admin); its due-date moves go with it, and the COE's
/// history keeps what it was.
pub fn delete(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<String, ActionError> {
    db::write_transaction(conn, |conn| {
        let row = load_locked(conn, id)?;
        deletable(conn, &row, who)?;
        let now = db::now();
        diesel::delete(due_date_changes::table.filter(due_date_changes::action_id.eq(id)))
            .execute(conn)?;
        diesel::delete(corrective_actions::table.find(id)).execute(conn)?;
        outbound::happened(
            conn,
            env,
            who.actor,
            ActionEvent::Deleted { action: &row },
            now,
        )?;
        Ok(row.coe_id)
    })
}

#[cfg(test)]
mod tests;
