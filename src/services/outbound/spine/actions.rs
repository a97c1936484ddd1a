//! What happens to a corrective action: its history rows, its owner's emails, its ticket's
//! jobs, the search index and a new version of its COE in review.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde_json::{json, Value};

use super::Event;
use crate::config::TrackerSettings;
use crate::db::models::{ActionRow, CoeRow};
use crate::db::schema::{coes, corrective_actions};
use crate::db::{self, DbConnection};
use crate::domain::action::{ActionState, Transition};
use crate::services::audit::{self, Change, Subject};
use crate::services::outbound::approval;
use crate::services::outbound::notify::{self, ActionFacts};
use crate::services::outbound::outbox::{self, NewEmail};
use crate::services::outbound::tickets::{self, Push};
use crate::services::{search_index, Env};

/// What a change of an action's fields changed.
pub struct ActionChange<'a> {
    /// The action as it is now.
    pub action: &'a ActionRow,
    /// Its fields before and after, as its history shows them.
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// Its words changed (title, description, success criteria): the search reads
    /// them again.
    pub words: bool,
    /// Its due date moved: from, to, why.
    pub due: Option<(NaiveDate, NaiveDate, &'a str)>,
    /// It changed hands: from whom, and why.
    pub handed_from: Option<(&'a str, Option<&'a str>)>,
    /// It was verified, and what changed asks for a verification again.
    pub unverified: bool,
}

/// What happens to a corrective action.
pub enum ActionEvent<'a> {
    /// A corrective action was added; its owner's email was composed before the
    /// write (`None` when they added it themselves).
    Created {
        action: &'a ActionRow,
        email: Option<&'a NewEmail>,
        /// Its COE is in review: adding is a new version of what the reviewers read.
        coe_in_review: bool,
    },
    /// An action's fields were changed.
    Changed(ActionChange<'a>),
    /// An action moved through its life cycle (started, done, won't do, reopened).
    Stepped {
        action: &'a ActionRow,
        verb: Transition,
        from: ActionState,
        note: Option<&'a str>,
    },
    /// The COE's reviewer verified a done action, or sent it back (`reason`).
    Verified {
        action: &'a ActionRow,
        coe_title: &'a str,
        from: ActionState,
        reason: Option<&'a str>,
    },
    /// An action added by mistake was deleted (its COE a draft).
    Deleted { action: &'a ActionRow },
    /// An action changed hands because its owner left.
    HandedOver {
        action_id: &'a str,
        coe_id: &'a str,
        from: &'a str,
        to: &'a str,
    },
    /// A tracker's ticket of an action was closed there: coe asks the owner for the
    /// evidence (done) or the reason (`wont_do`), once.
    TicketClosed {
        action_id: &'a str,
        tracker: &'a TrackerSettings,
        key: &'a str,
        status: &'a str,
        wont_do: bool,
    },
    /// Someone asked to accept an action's risk until a day (`acceptance.state` is
    /// `asked`), or it was decided (`accepted`, `refused`): the history says so, and
    /// `tell` (those who decide, or the owner) are emailed.
    Risk {
        action: &'a ActionRow,
        acceptance: &'a crate::db::models::RiskAcceptanceRow,
        tell: &'a [String],
    },
    /// The alert that proves an action in a drill was named (`labels`), or forgotten.
    DrillAlarm {
        action: &'a ActionRow,
        labels: Option<&'a std::collections::BTreeMap<String, String>>,
    },
    /// A re-check of an action's fix opened (`recheck.state` is `waiting`), was proven
    /// by its alarm, missed, or decided by the reviewer: the history says so, and `tell`
    /// (the owner; the reviewer when missed) are emailed.
    Drill {
        action: &'a ActionRow,
        recheck: &'a crate::db::models::DrillRecheckRow,
        tell: &'a [String],
    },
    /// An outage came back (incident `incident_id`, started at `started`, in COE
    /// `recurrence`: id, title) after the actions of COE `earlier` were done.
    Recurred {
        earlier: &'a CoeRow,
        recurrence: (&'a str, &'a str),
        incident_id: &'a str,
        started: NaiveDateTime,
        done: &'a [notify::DoneAction<'a>],
    },
}

impl<'a> From<ActionEvent<'a>> for Event<'a> {
    fn from(event: ActionEvent<'a>) -> Event<'a> {
        Event::Action(event)
    }
}

/// Every consequence of `event`, in the caller's transaction.
pub(super) fn happened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    event: ActionEvent<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match event {
        ActionEvent::Created {
            action,
            email,
            coe_in_review,
        } => created(conn, env, actor, (action, email, coe_in_review), now),
        ActionEvent::Changed(change) => action_changed(conn, env, actor, change, now),
        ActionEvent::Stepped {
            action,
            verb,
            from,
            note,
        } => stepped(conn, env, actor, (action, verb, from, note), now),
        ActionEvent::Verified {
            action,
            coe_title,
            from,
            reason,
        } => verified(conn, env, actor, (action, coe_title, from, reason), now),
        ActionEvent::Risk {
            action,
            acceptance,
            tell,
        } => {
            let after = json!({
                "until": acceptance.until_date,
                "interim_control": acceptance.interim_control,
                "remaining_risk": acceptance.remaining_risk,
                "note": acceptance.decision_note,
            });
            let what = format!("action:risk_{}", acceptance.state);
            action_history(conn, action, actor, &what, None, Some(after), now)?;
            let coe_title: String = coes::table
                .find(&action.coe_id)
                .select(coes::title)
                .first(conn)?;
            let facts = facts(action, &coe_title);
            for to in tell {
                notify::risk_acceptance(conn, env, &facts, acceptance, to, now)?;
            }
            Ok(())
        }
        ActionEvent::DrillAlarm { action, labels } => {
            let after = json!({ "labels": labels });
            action_history(
                conn,
                action,
                actor,
                "action:drill_alarm",
                None,
                Some(after),
                now,
            )
        }
        ActionEvent::Drill {
            action,
            recheck,
            tell,
        } => {
            let after = json!({
                "labels": serde_json::from_str::<Value>(&recheck.labels).unwrap_or(Value::Null),
                "last_day": (recheck.state == "waiting").then_some(recheck.last_day),
                "event_id": recheck.event_id,
                "fired_at": recheck.fired_at,
                "detected_seconds": recheck.detected_seconds,
                "note": recheck.note,
            });
            let what = format!("action:drill_{}", recheck.state);
            action_history(conn, action, actor, &what, None, Some(after), now)?;
            let coe_title: String = coes::table
                .find(&action.coe_id)
                .select(coes::title)
                .first(conn)?;
            let facts = facts(action, &coe_title);
            for to in tell {
                notify::drill_recheck(conn, env, &facts, recheck, to, now)?;
            }
            Ok(())
        }
        ActionEvent::Deleted { action } => {
            // Its ticket (a tracker's issue stays there) and what was still to be told.
            tickets::forget(conn, &action.id)?;
            search_index::reindex(conn, &action.coe_id)?;
            let was = json!({"title": action.title, "owner": action.owner_email,
                             "due_date": action.due_date, "state": action.state});
            action_history(conn, action, actor, "action:delete", Some(was), None, now)
        }
        ActionEvent::HandedOver {
            action_id,
            coe_id,
            from,
            to,
        } => {
            tickets::changed(conn, action_id, Push::Owner { from, to }, actor, now)?;
            let before = json!({ "owner": from });
            let after = json!({ "owner": to, "why": format!("{from} left") });
            let ids = (action_id, coe_id);
            history_of(
                conn,
                ids,
                actor,
                "owner:left",
                Some(before),
                Some(after),
                now,
            )
        }
        ActionEvent::TicketClosed {
            action_id,
            tracker,
            key,
            status,
            wont_do,
        } => {
            let wants = if wont_do { "reason" } else { "evidence" };
            let coe_id: String = corrective_actions::table
                .find(action_id)
                .select(corrective_actions::coe_id)
                .first(conn)?;
            let after = json!({"ticket": key, "status": status, "awaiting": wants});
            let ids = (action_id, coe_id.as_str());
            history_of(
                conn,
                ids,
                actor,
                "action:ticket_closed",
                None,
                Some(after),
                now,
            )?;
            let label = tracker.kind.label();
            notify::ticket_closed(conn, env, action_id, (label, key, status), wont_do, now)
        }
        ActionEvent::Recurred {
            earlier,
            recurrence,
            incident_id,
            started,
            done,
        } => {
            // The earlier COE's owner and reviewer, once each.
            let recipients: std::collections::BTreeSet<&str> = [
                earlier.owner_email.as_deref(),
                earlier.reviewer_email.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect();
            for recipient in recipients {
                let (at, r) = ((incident_id, started), recipient);
                notify::action_recurred(conn, env, earlier, recurrence, at, done, r, now)?;
            }
            Ok(())
        }
    }
}

/// An action added: the search finds its words, its history starts, its owner is
/// told (the email composed before the write), its ticket is made when a tracker
/// takes it automatically, and a COE in review takes a new version.
fn created(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    (action, email, coe_in_review): (&ActionRow, Option<&NewEmail>, bool),
    now: NaiveDateTime,
) -> QueryResult<()> {
    search_index::reindex(conn, &action.coe_id)?;
    let created = json!({
        "title": action.title, "owner": action.owner_email, "due_date": action.due_date,
        "priority": action.priority, "kind": action.kind,
    });
    action_history(
        conn,
        action,
        actor,
        "action:create",
        None,
        Some(created),
        now,
    )?;
    if let Some(email) = email {
        outbox::enqueue(conn, email, now)?;
    }
    tickets::created(conn, env, &action.id, now)?;
    if coe_in_review {
        approval::touch_in_review(conn, &action.coe_id, actor, env, now)?;
    }
    Ok(())
}

/// An action moved through its life cycle: its ticket is told, a closing note is
/// found by the search, its history has the step, its COE in review a new version.
fn stepped(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    (action, verb, from, note): (&ActionRow, Transition, ActionState, Option<&str>),
    now: NaiveDateTime,
) -> QueryResult<()> {
    if verb == Transition::Reopen {
        withdraw_drills(conn, &action.id, now)?;
    }
    let push = match verb {
        Transition::Start => Push::Start,
        Transition::Complete => Push::Done {
            note,
            evidence: action.evidence_url.as_deref(),
        },
        Transition::WontDo => Push::WontDo { reason: note },
        Transition::Reopen => Push::Reopen { note },
    };
    tickets::changed(conn, &action.id, push, actor, now)?;
    if note.is_some() {
        search_index::reindex(conn, &action.coe_id)?;
    }
    let (before, after) = (
        json!({"state": from.as_str()}),
        json!({"state": action.state, "note": note}),
    );
    let what = format!("action:{}", verb.name());
    action_history(conn, action, actor, &what, Some(before), Some(after), now)?;
    approval::touch_in_review(conn, &action.coe_id, actor, env, now)
}

/// The reviewer's verdict on a done action: sent back, its ticket is told; its
/// history has the verdict; its owner is emailed either way.
fn verified(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    (action, coe_title, from, reason): (&ActionRow, &str, ActionState, Option<&str>),
    now: NaiveDateTime,
) -> QueryResult<()> {
    let verified = action.verified_at.is_some();
    if !verified {
        withdraw_drills(conn, &action.id, now)?;
        let push = Push::SentBack { reason };
        tickets::changed(conn, &action.id, push, actor, now)?;
    }
    let step = if verified { "verify" } else { "refuse" };
    let (before, after) = (
        json!({"state": from.as_str()}),
        json!({"state": action.state, "verified": verified, "reason": reason}),
    );
    let what = format!("action:{step}");
    action_history(conn, action, actor, &what, Some(before), Some(after), now)?;
    let facts = facts(action, coe_title);
    notify::action_verification(conn, env, &facts, actor, reason, &db::new_id(), now)
}

fn action_changed(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    change: ActionChange<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let row = change.action;
    // No longer a verified fix, or no longer one to detect or mitigate: its drill has
    // nothing left to prove.
    let kind_now = change.after.as_ref().and_then(|a| a["kind"].as_str());
    if change.unverified
        || kind_now.is_some_and(|k| !crate::domain::drill::PROVEN_BY_ALARM.contains(&k))
    {
        withdraw_drills(conn, &row.id, now)?;
    }
    if let Some((from, to, reason)) = change.due {
        tickets::changed(conn, &row.id, Push::Due { from, to, reason }, actor, now)?;
    }
    if change.words {
        search_index::reindex(conn, &row.coe_id)?;
    }
    action_history(
        conn,
        row,
        actor,
        "action:update",
        change.before,
        change.after,
        now,
    )?;
    if let Some((from, reason)) = change.handed_from {
        // Reassigned: a step of its own in the action's history, with the reason.
        action_history(
            conn,
            row,
            actor,
            "action:reassign",
            Some(json!({"owner": from})),
            Some(json!({"owner": row.owner_email, "reason": reason})),
            now,
        )?;
        let coe_title: String = coes::table
            .find(&row.coe_id)
            .select(coes::title)
            .first(conn)?;
        notify::action_assigned(conn, env, &facts(row, &coe_title), actor, now)?;
        let push = Push::Owner {
            from,
            to: &row.owner_email,
        };
        tickets::changed(conn, &row.id, push, actor, now)?;
    }
    if change.unverified {
        action_history(
            conn,
            row,
            actor,
            "action:unverified",
            Some(json!({"verified": true})),
            Some(json!({"verified": false,
                        "reason": "changed after it was verified: verify it again"})),
            now,
        )?;
    }
    approval::touch_in_review(conn, &row.coe_id, actor, env, now)
}

/// The email telling a new action's owner it is theirs (`None` when they added it
/// themselves), composed before the write (it only reads), to go with
/// `Event::ActionCreated`: a writer that takes many writes in turn then only writes.
pub fn new_owner_email(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionRow,
    coe_title: &str,
    actor: &str,
) -> QueryResult<Option<NewEmail>> {
    notify::action_assigned_email(conn, env, &facts(action, coe_title), actor)
}

/// A row of action `action`'s history (and its COE's).
/// An action that is no longer a done, verified fix has nothing for a drill to prove:
/// its open re-check (`drill_rechecks`) is withdrawn, and a new verification opens a
/// new one.
fn withdraw_drills(
    conn: &mut DbConnection,
    action_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    use crate::db::schema::drill_rechecks;
    use crate::domain::drill::RecheckState;
    diesel::update(
        drill_rechecks::table
            .filter(drill_rechecks::action_id.eq(action_id))
            .filter(drill_rechecks::state.eq_any(RecheckState::OPEN)),
    )
    .set((
        drill_rechecks::state.eq(RecheckState::Withdrawn.as_str()),
        drill_rechecks::decided_at.eq(Some(now)),
    ))
    .execute(conn)?;
    Ok(())
}

fn action_history(
    conn: &mut DbConnection,
    action: &ActionRow,
    actor: &str,
    what: &str,
    before: Option<Value>,
    after: Option<Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let ids = (action.id.as_str(), action.coe_id.as_str());
    history_of(conn, ids, actor, what, before, after, now)
}

/// A row of the history of the action with `ids` (its id, its COE's).
fn history_of(
    conn: &mut DbConnection,
    (id, coe_id): (&str, &str),
    actor: &str,
    what: &str,
    before: Option<Value>,
    after: Option<Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let change = Change {
        subject: Subject::Action { id, coe_id },
        actor,
        action: what,
        before,
        after,
    };
    audit::record(conn, change, now)
}

/// What the emails tell of action `row` of the COE titled `coe_title`.
fn facts<'a>(row: &'a ActionRow, coe_title: &'a str) -> ActionFacts<'a> {
    ActionFacts {
        id: &row.id,
        title: &row.title,
        owner: &row.owner_email,
        due_date: row.due_date,
        coe_id: &row.coe_id,
        coe_title,
        success_criteria: row.success_criteria.as_deref(),
    }
}
