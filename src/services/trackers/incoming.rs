//! What the trackers tell coe: a webhook delivery (taken once by its delivery id) or
//! a status read back by the reconcile. Only completion and progress come in: the
//! tracker's "in progress" starts the action; its "done" or "won't do" asks the owner
//! for the evidence or the reason (coe's rules still close the action); leaving done
//! reopens. coe's own changes coming back (`tickets.pushed`), and anything said
//! while coe still has a change to send, change nothing.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use super::{save_status, state};
use crate::config::{Meaning, TrackerSettings};
use crate::db::schema::{corrective_actions, tickets, tracker_deliveries, tracker_jobs};
use crate::db::types;
use crate::db::{self, DbConnection};
use crate::domain::action::{ActionState, Transition};
use crate::email::content::{ActionLine, Kind, Links, TicketClosed};
use crate::services::access::Acting;
use crate::services::actions::{self, ActionError, TransitionInput};
use crate::services::audit::{self, Change, Subject};
use crate::services::outbox;
use crate::services::tickets::{actor_of, PENDING, SENDING};
use crate::services::Env;
use crate::trackers::webhook::{Delivery, Told};
use crate::trackers::{self as api, Client, Status};

/// What came of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// Its delivery id was taken before: nothing done.
    Duplicate,
    /// Not about a ticket coe knows, or nothing to change.
    Nothing,
    /// What it changed, in words.
    Changed(String),
}

/// Takes one webhook delivery of `tracker`, once.
pub fn receive(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    delivery: &Delivery,
) -> Result<Received, ActionError> {
    let now = db::now();
    let first = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(tracker_deliveries::table).values((
            tracker_deliveries::tracker.eq(&tracker.name),
            tracker_deliveries::delivery_id.eq(&delivery.id),
            tracker_deliveries::received_at.eq(now),
        )),
        (tracker_deliveries::tracker, tracker_deliveries::delivery_id)
    )?;
    state::delivered_in(conn, &tracker.name, now)?;
    if first == 0 {
        return Ok(Received::Duplicate);
    }
    match &delivery.ticket {
        Some(told) => apply(conn, env, tracker, told),
        None => Ok(Received::Nothing),
    }
}

/// The action whose ticket `told` names, if coe knows it.
fn action_of(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    told: &Told,
) -> QueryResult<Option<String>> {
    let mut q = tickets::table
        .filter(tickets::tracker.eq(&tracker.name))
        .into_boxed();
    q = if told.key.is_empty() {
        q.filter(tickets::remote_id.eq(&told.id))
    } else {
        q.filter(
            tickets::ticket_key
                .eq(&told.key)
                .or(tickets::remote_id.eq(&told.id)),
        )
    };
    q.select(tickets::action_id).first(conn).optional()
}

/// What coe does when the tracker says ticket `told` has its status.
fn apply(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    told: &Told,
) -> Result<Received, ActionError> {
    let Some(action_id) = action_of(conn, tracker, told)? else {
        return Ok(Received::Nothing);
    };
    apply_status(conn, env, tracker, &action_id, &told.status)
}

/// What coe does when the tracker says action `action_id`'s ticket has `status`.
fn apply_status(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    action_id: &str,
    status: &Status,
) -> Result<Received, ActionError> {
    let now = db::now();
    let decided = db::write_transaction(conn, |conn| {
        let Some(meaning) = save_status(conn, tracker, action_id, status, now)? else {
            return Ok(None);
        };
        // A change of coe's not yet told wins: the tracker hears it next.
        let telling: i64 = tracker_jobs::table
            .filter(tracker_jobs::action_id.eq(action_id))
            .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
            .count()
            .get_result(conn)?;
        if telling > 0 {
            return Ok(None);
        }
        let (pushed, asks): (Option<String>, Option<String>) = tickets::table
            .find(action_id)
            .select((tickets::pushed, tickets::asks))
            .first(conn)?;
        diesel::update(tickets::table.find(action_id))
            .set(tickets::pushed.eq(None::<String>))
            .execute(conn)?;
        if pushed.as_deref() == Some(meaning.as_str()) {
            // coe's own change coming back.
            return Ok(None);
        }
        let state: String = corrective_actions::table
            .find(action_id)
            .select(corrective_actions::state)
            .first(conn)?;
        let state: ActionState = types::read("corrective_actions.state", &state)?;
        Ok::<_, diesel::result::Error>(Some((meaning, state, asks)))
    })?;
    let Some((meaning, state, asks)) = decided else {
        return Ok(Received::Nothing);
    };
    let closed = matches!(state, ActionState::Done | ActionState::WontDo);
    let label = tracker.kind.label();
    let acting = Acting::tracker(&actor_of(&tracker.name));
    let move_on = |conn: &mut DbConnection, verb: Transition, note: String| {
        let input = TransitionInput {
            note: Some(note),
            evidence_url: None,
        };
        actions::transition(conn, action_id, verb, &input, &acting.editor(), env)
    };
    let key = super::load_remote(conn, action_id)?
        .map(|r| r.key)
        .unwrap_or_default();
    match meaning {
        Meaning::Open | Meaning::InProgress => {
            if asks.is_some() {
                clear_asks(conn, action_id, now)?;
            }
            let mut said = Vec::new();
            if closed {
                move_on(
                    conn,
                    Transition::Reopen,
                    format!("{key} is \"{}\" again in {label}", status.name),
                )?;
                said.push("reopened");
            }
            if meaning == Meaning::InProgress && (closed || state == ActionState::Open) {
                move_on(
                    conn,
                    Transition::Start,
                    format!("{key} is \"{}\" in {label}", status.name),
                )?;
                said.push("started");
            }
            Ok(if said.is_empty() {
                Received::Nothing
            } else {
                Received::Changed(said.join(" and "))
            })
        }
        Meaning::Done | Meaning::WontDo if !closed => {
            let wants = if meaning == Meaning::Done {
                "evidence"
            } else {
                "reason"
            };
            if asks.as_deref() == Some(wants) {
                return Ok(Received::Nothing);
            }
            ask_owner(conn, env, tracker, action_id, &key, status, meaning, now)?;
            Ok(Received::Changed(format!(
                "the owner is asked for the {wants}"
            )))
        }
        Meaning::Done | Meaning::WontDo | Meaning::Ignore => Ok(Received::Nothing),
    }
}

fn clear_asks(conn: &mut DbConnection, action_id: &str, now: NaiveDateTime) -> QueryResult<()> {
    diesel::update(tickets::table.find(action_id))
        .set((
            tickets::asks.eq(None::<String>),
            tickets::asks_since.eq(None::<NaiveDateTime>),
            tickets::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// The ticket was closed in the tracker: coe asks the owner for the evidence (done)
/// or the reason (won't do), once, with an email and a mark on the action.
#[allow(clippy::too_many_arguments)]
fn ask_owner(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    action_id: &str,
    key: &str,
    status: &Status,
    meaning: Meaning,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let wont_do = meaning == Meaning::WontDo;
    let wants = if wont_do { "reason" } else { "evidence" };
    db::write_transaction(conn, |conn| {
        diesel::update(tickets::table.find(action_id))
            .set((
                tickets::asks.eq(wants),
                tickets::asks_since.eq(now),
                tickets::updated_at.eq(now),
            ))
            .execute(conn)?;
        let (title, owner, due, coe_id, coe_title, url): (
            String,
            String,
            chrono::NaiveDate,
            String,
            String,
            Option<String>,
        ) = corrective_actions::table
            .inner_join(crate::db::schema::coes::table)
            .inner_join(tickets::table)
            .filter(corrective_actions::id.eq(action_id))
            .select((
                corrective_actions::title,
                corrective_actions::owner_email,
                corrective_actions::due_date,
                crate::db::schema::coes::id,
                crate::db::schema::coes::title,
                tickets::url,
            ))
            .first(conn)?;
        audit::record(
            conn,
            Change {
                subject: Subject::Action {
                    id: action_id,
                    coe_id: &coe_id,
                },
                actor: &actor_of(&tracker.name),
                action: "action:ticket_closed",
                before: None,
                after: Some(json!({"ticket": key, "status": status.name, "awaiting": wants})),
            },
            now,
        )?;
        let links = Links::new(&env.settings.public_url);
        let data = json!(TicketClosed {
            recipient_name: String::new(),
            action: ActionLine {
                action_id: action_id.to_owned(),
                title,
                coe_id,
                coe_title,
                owner: owner.clone(),
                owner_name: String::new(),
                due_date: due.to_string(),
                days_overdue: 0,
                days_until_due: 0,
                link: links.action(action_id),
                newly_escalated: false,
            },
            tracker: tracker.kind.label().to_owned(),
            ticket: key.to_owned(),
            ticket_url: url.unwrap_or_default(),
            status: status.name.clone(),
            wont_do,
        });
        let dedup = format!("{}:{action_id}:{wants}:{now}", Kind::TicketClosed.name());
        if let Some(email) =
            outbox::composed(conn, env.emails, Kind::TicketClosed, dedup, &owner, data)?
        {
            outbox::enqueue(conn, &email, now)?;
        }
        Ok(())
    })
}

/// Reads back the linked tickets of each tracker whose round is due (one replica
/// takes each round): the open actions' and those closed in the last 30 days. A
/// webhook missed (GitHub never sends one again) or a tracker down when it changed
/// is caught here. Returns how many tickets changed something.
pub fn reconcile(
    conn: &mut DbConnection,
    env: Env<'_>,
    stop: &AtomicBool,
) -> Result<usize, ActionError> {
    let now = db::now();
    let mut changed = 0;
    for tracker in &env.settings.trackers {
        if !state::take_round(conn, &tracker.name, tracker.reconcile_secs, now)? {
            continue;
        }
        changed += reconcile_tracker(conn, env, tracker, stop)?;
    }
    // Delivery ids are kept a week: trackers redeliver within days.
    diesel::delete(
        tracker_deliveries::table
            .filter(tracker_deliveries::received_at.lt(now - chrono::Duration::days(7))),
    )
    .execute(conn)?;
    Ok(changed)
}

/// Reads back every linked ticket of `tracker` now.
pub fn reconcile_tracker(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    stop: &AtomicBool,
) -> Result<usize, ActionError> {
    let since = db::now() - chrono::Duration::days(30);
    let linked: Vec<(String, String)> = tickets::table
        .inner_join(corrective_actions::table)
        .filter(tickets::tracker.eq(&tracker.name))
        .filter(tickets::ticket_key.is_not_null())
        .filter(
            corrective_actions::state
                .eq_any([ActionState::Open.as_str(), ActionState::InProgress.as_str()])
                .or(corrective_actions::closed_at.ge(since)),
        )
        .select((tickets::action_id, tickets::ticket_key.assume_not_null()))
        .load(conn)?;
    let client = Client::new(tracker);
    let mut changed = 0;
    for (action_id, key) in linked {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match client.get(&key) {
            Ok(remote) => {
                if let Received::Changed(_) =
                    apply_status(conn, env, tracker, &action_id, &remote.status)?
                {
                    changed += 1;
                }
            }
            Err(f) => {
                state::failed(conn, &tracker.name, f.text(), db::now())?;
                if !matches!(f, api::Failure::Refused(_)) {
                    // The tracker is down or the credentials are wrong: the next
                    // round tries again.
                    break;
                }
            }
        }
    }
    Ok(changed)
}
