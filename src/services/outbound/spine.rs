//! The outbound spine: a use case says once what happened (an `Event`), in the
//! transaction that made it happen, and `happened` turns it into every consequence
//! there: its rows in the history (audit), the emails (each person's own), the
//! tracker jobs, the search index, and a new version of a COE in review (its stale
//! approval withdrawn). A new channel (a chat message, another tracker) is a line
//! here, not an edit in every use case.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::config::ChatEvent;
use crate::db::models::{ActionRow, CoeRow};
use crate::db::schema::{coes, people};
use crate::db::{self, types, DbConnection};
use crate::domain::action::{ActionState, Transition};
use crate::services::audit::{self, Change, Subject};
use crate::services::outbound::notify::{self, ActionFacts};
use crate::services::outbound::outbox::{self, NewEmail};
use crate::services::outbound::tickets::{self, Push};
use crate::services::outbound::{approval, chat};
use crate::services::{search_index, Env};

/// What happened, with what its consequences need.
pub enum Event<'a> {
    /// A corrective action was added; its owner's email was composed before the
    /// write (`None` when they added it themselves).
    ActionCreated {
        action: &'a ActionRow,
        email: Option<&'a NewEmail>,
        /// Its COE is in review: adding is a new version of what the reviewers read.
        coe_in_review: bool,
    },
    /// An action's fields were changed.
    ActionChanged(ActionChange<'a>),
    /// An action moved through its life cycle (started, done, won't do, reopened).
    ActionStepped {
        action: &'a ActionRow,
        verb: Transition,
        from: ActionState,
        note: Option<&'a str>,
    },
    /// The COE's reviewer verified a done action, or sent it back (`reason`).
    ActionVerified {
        action: &'a ActionRow,
        coe_title: &'a str,
        from: ActionState,
        reason: Option<&'a str>,
    },
    /// An action added by mistake was deleted (its COE a draft).
    ActionDeleted { action: &'a ActionRow },
    /// A COE opened (`coe` as stored): its owner is told (the admins, when it opened
    /// unowned, so that someone takes it), its reviewer that they review it, and the
    /// chat channels that hear of new COEs.
    CoeOpened { coe: &'a CoeRow },
    /// A COE's writeup changed (its version was claimed by the change): the search
    /// reads it again, and an approval given to the version before is withdrawn.
    CoeChanged { id: &'a str },
    /// A COE's owner or reviewer changed (`before`, `after` as stored); `replaced` is
    /// the reviewer who was reviewing it and no longer does.
    CoeAssigned {
        before: &'a CoeRow,
        after: &'a CoeRow,
        replaced: Option<&'a str>,
    },
}

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

/// Every consequence of `event`, made by `actor` at `now`, in the caller's
/// transaction.
pub fn happened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    event: Event<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match event {
        Event::ActionCreated {
            action,
            email,
            coe_in_review,
        } => {
            // Its words are found by the search, its COE shown.
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
            tickets::created(conn, env.settings, &action.id, now)?;
            if coe_in_review {
                approval::touch_in_review(conn, &action.coe_id, actor, env, now)?;
            }
            Ok(())
        }
        Event::ActionChanged(change) => action_changed(conn, env, actor, change, now),
        Event::ActionStepped {
            action,
            verb,
            from,
            note,
        } => {
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
                // Its closing note is found by the search.
                search_index::reindex(conn, &action.coe_id)?;
            }
            action_history(
                conn,
                action,
                actor,
                &format!("action:{}", verb.name()),
                Some(json!({"state": from.as_str()})),
                Some(json!({"state": action.state, "note": note})),
                now,
            )?;
            approval::touch_in_review(conn, &action.coe_id, actor, env, now)
        }
        Event::ActionVerified {
            action,
            coe_title,
            from,
            reason,
        } => {
            let verified = action.verified_at.is_some();
            if !verified {
                let push = Push::SentBack { reason };
                tickets::changed(conn, &action.id, push, actor, now)?;
            }
            let step = if verified { "verify" } else { "refuse" };
            action_history(
                conn,
                action,
                actor,
                &format!("action:{step}"),
                Some(json!({"state": from.as_str()})),
                Some(json!({"state": action.state, "verified": verified, "reason": reason})),
                now,
            )?;
            notify::action_verification(
                conn,
                env,
                &facts(action, coe_title),
                actor,
                reason,
                &db::new_id(),
                now,
            )
        }
        Event::CoeOpened { coe } => coe_opened(conn, env, actor, coe, now),
        Event::CoeChanged { id } => {
            search_index::reindex(conn, id)?;
            approval::withdraw_stale_approval(conn, id, actor, env, now)
        }
        Event::CoeAssigned {
            before,
            after,
            replaced,
        } => {
            // Whoever becomes the owner or the reviewer now is told so.
            if let Some(former) = replaced {
                notify::reviewer_replaced(conn, env, after, former, actor, now)?;
            }
            for (was, is, as_reviewer) in [
                (&before.owner_email, &after.owner_email, false),
                (&before.reviewer_email, &after.reviewer_email, true),
            ] {
                if let Some(person) = is.as_deref().filter(|p| Some(*p) != was.as_deref()) {
                    notify::coe_assigned(conn, env, after, person, as_reviewer, actor, now)?;
                }
            }
            Ok(())
        }
        Event::ActionDeleted { action } => {
            // Its ticket (a tracker's issue stays there) and what was still to be told.
            tickets::forget(conn, &action.id)?;
            search_index::reindex(conn, &action.coe_id)?;
            action_history(
                conn,
                action,
                actor,
                "action:delete",
                Some(json!({"title": action.title, "owner": action.owner_email,
                            "due_date": action.due_date, "state": action.state})),
                None,
                now,
            )
        }
    }
}

fn coe_opened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    row: &CoeRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if row.owner_email.is_some() {
        notify::coe_opened_row(conn, env.settings, env.emails, row, now)?;
    } else {
        let admins: Vec<String> = people::table
            .filter(people::is_admin.eq(true))
            .select(people::email)
            .load(conn)?;
        if admins.is_empty() {
            tracing::warn!(coe = %row.id, "a COE opened with no owner and there is no admin in the directory to tell");
        }
        for admin in &admins {
            notify::coe_unowned(conn, env.settings, env.emails, row, admin, now)?;
        }
    }
    if let Some(reviewer) = row.reviewer_email.as_deref() {
        notify::coe_assigned(conn, env, row, reviewer, true, actor, now)?;
    }
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    chat::coe_notice(
        conn,
        env.settings,
        ChatEvent::CoeOpened,
        &notify::CoeFacts::of(row, &severity),
        "COE opened",
        None,
        &format!("coe_opened:{}", row.id),
        now,
    )?;
    Ok(())
}

fn action_changed(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    change: ActionChange<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let row = change.action;
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
fn action_history(
    conn: &mut DbConnection,
    action: &ActionRow,
    actor: &str,
    what: &str,
    before: Option<Value>,
    after: Option<Value>,
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
