//! What the trackers tell coe: a webhook delivery (taken once by its delivery id) or
//! a status read back by the reconcile. Only completion and progress come in: the
//! tracker's "in progress" starts the action; its "done" or "won't do" asks the owner
//! for the evidence or the reason (coe's rules still close the action); leaving done
//! reopens. coe's own changes coming back (`tickets.pushed`), and anything said
//! while coe still has a change to send, change nothing.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{save_status, state, PassError};
use crate::config::{Meaning, TrackerSettings};
use crate::db::schema::{corrective_actions, tickets, tracker_deliveries, tracker_jobs};
use crate::db::types;
use crate::db::{self, DbConnection, DbPool};
use crate::domain::action::{ActionState, Transition};
use crate::services::access::Acting;
use crate::services::coe::actions::{self, ActionError, TransitionInput};
use crate::services::outbound::tickets::{actor_of, PENDING, SENDING};
use crate::services::outbound::{self, ActionEvent};
use crate::services::Env;
use crate::trackers::webhook::{Delivery, Told};
use crate::trackers::{self as api, Answer, Client, Remote, Status, TicketKey};

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

/// What a delivery taken comes to before the tracker is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Answered without asking the tracker.
    Answered(Received),
    /// Action `action_id`'s ticket `key` is to be read from the tracker (with no
    /// database connection held: `super::read`), then `settle`d.
    Read { action_id: String, key: TicketKey },
}

/// Takes one webhook delivery of `tracker`, once: by its delivery id, and by its
/// body (a signed body replayed under a new delivery id is a duplicate), for as long
/// as delivery ids are kept.
pub fn take(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    delivery: &Delivery,
) -> Result<Taken, ActionError> {
    let now = db::now();
    let first = db::write_transaction(conn, |conn| {
        let mut first = true;
        for id in [&delivery.id, &delivery.body] {
            let taken = crate::insert_or_ignore!(
                conn,
                diesel::insert_into(tracker_deliveries::table).values((
                    tracker_deliveries::tracker.eq(&tracker.name),
                    tracker_deliveries::delivery_id.eq(id),
                    tracker_deliveries::received_at.eq(now),
                )),
                (tracker_deliveries::tracker, tracker_deliveries::delivery_id)
            )?;
            first &= taken == 1;
        }
        state::delivered_in(conn, &tracker.name, now)?;
        Ok::<_, diesel::result::Error>(first)
    })?;
    if !first {
        return Ok(Taken::Answered(Received::Duplicate));
    }
    let Some(told) = &delivery.ticket else {
        return Ok(Taken::Answered(Received::Nothing));
    };
    let Some(action_id) = action_of(conn, tracker, told)? else {
        return Ok(Taken::Answered(Received::Nothing));
    };
    // A delivery is a prompt, not the truth: the ticket is read from the tracker
    // now, so that a delivery late, replayed or out of order moves nothing.
    let Some(remote) = super::load_remote(conn, &action_id)? else {
        return Ok(Taken::Answered(Received::Nothing));
    };
    match TicketKey::parse(tracker.kind, &remote.key) {
        Some(key) => Ok(Taken::Read { action_id, key }),
        None => {
            state::failed(
                conn,
                &tracker.name,
                &format!("{:?} is not a key coe can read: not asked", remote.key),
                now,
            )?;
            Ok(Taken::Answered(Received::Nothing))
        }
    }
}

/// What the tracker answered (`read`) for action `action_id`'s ticket, applied.
pub fn settle(
    conn: &mut DbConnection,
    env: Env<'_>,
    tracker: &TrackerSettings,
    action_id: &str,
    read: Answer<Remote>,
) -> Result<Received, ActionError> {
    match read {
        Ok(now) => apply_status(conn, env, tracker, action_id, &now.status),
        Err(f) => {
            // The reconcile reads it later.
            tracing::warn!(tracker = %tracker.name, error = f.text(), "a ticket a webhook told of could not be read");
            state::failed(conn, &tracker.name, f.text(), db::now())?;
            Ok(Received::Nothing)
        }
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
    q = if tracker.kind == crate::config::TrackerKind::Github {
        // An issue's number is only unique in its repository.
        q.filter(tickets::ticket_key.eq(&told.key))
    } else if told.key.is_empty() {
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
        let before: Option<String> = tickets::table
            .find(action_id)
            .select(tickets::meaning)
            .first::<Option<String>>(conn)
            .optional()?
            .flatten();
        let Some(meaning) = save_status(conn, tracker, action_id, status, now)? else {
            return Ok(None);
        };
        // Only a move in the tracker moves the action: a status it had already
        // (coe's own change come back, a comment, a read after a move coe could
        // not make) changes nothing.
        if before.as_deref() == Some(meaning.as_str()) {
            return Ok(None);
        }
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
        Ok::<_, diesel::result::Error>(Some((meaning, before, state, asks)))
    })?;
    let Some((meaning, before, state, asks)) = decided else {
        return Ok(Received::Nothing);
    };
    // Leaving done (or won't do) in the tracker reopens; a ticket that never was
    // (coe's own move refused, say) reopens nothing.
    let was_closed = matches!(before.as_deref(), Some("done" | "wont_do"));
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
            let reopen = closed && was_closed;
            if reopen {
                move_on(
                    conn,
                    Transition::Reopen,
                    format!("{key} is \"{}\" again in {label}", status.name),
                )?;
                said.push("reopened");
            }
            if meaning == Meaning::InProgress && (reopen || state == ActionState::Open) {
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
            if asks.as_deref() == Some(wants)
                || !ask_owner(conn, env, tracker, action_id, &key, status, meaning, now)?
            {
                return Ok(Received::Nothing);
            }
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
) -> QueryResult<bool> {
    let wont_do = meaning == Meaning::WontDo;
    let wants = if wont_do { "reason" } else { "evidence" };
    db::write_transaction(conn, |conn| {
        // Once: a webhook and the reconcile at one moment ask one of them.
        let asked = diesel::update(
            tickets::table
                .find(action_id)
                .filter(tickets::asks.is_null().or(tickets::asks.ne(wants))),
        )
        .set((
            tickets::asks.eq(wants),
            tickets::asks_since.eq(now),
            tickets::updated_at.eq(now),
        ))
        .execute(conn)?;
        if asked == 0 {
            return Ok(false);
        }
        let closed = ActionEvent::TicketClosed {
            action_id,
            tracker,
            key,
            status: &status.name,
            wont_do,
        };
        outbound::happened(conn, env, &actor_of(&tracker.name), closed, now)?;
        Ok(true)
    })
}

/// Reads back the linked tickets of each tracker whose round is due (one replica
/// takes each round): the open actions' and those closed in the last 30 days. A
/// webhook missed (GitHub never sends one again) or a tracker down when it changed
/// is caught here. A connection is taken for each step and let go before the tracker
/// is asked. Returns how many tickets changed something.
pub fn reconcile(pool: &DbPool, env: Env<'_>, stop: &AtomicBool) -> Result<usize, PassError> {
    let now = db::now();
    let mut changed = 0;
    let mut rounds = 0;
    for tracker in &env.connections.trackers {
        let taken = state::take_round(
            &mut *db::checkout(pool)?,
            &tracker.name,
            tracker.reconcile_secs,
            now,
        )?;
        if !taken {
            continue;
        }
        rounds += 1;
        changed += reconcile_tracker(pool, env, tracker, stop)?;
    }
    if rounds > 0 {
        // Delivery ids and bodies are kept a week: trackers redeliver within days.
        diesel::delete(
            tracker_deliveries::table
                .filter(tracker_deliveries::received_at.lt(now - chrono::Duration::days(7))),
        )
        .execute(&mut *db::checkout(pool)?)?;
    }
    Ok(changed)
}

/// Reads back every linked ticket of `tracker` now.
pub fn reconcile_tracker(
    pool: &DbPool,
    env: Env<'_>,
    tracker: &TrackerSettings,
    stop: &AtomicBool,
) -> Result<usize, PassError> {
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
        .order((tickets::synced_at.asc(), tickets::action_id.asc()))
        .select((tickets::action_id, tickets::ticket_key.assume_not_null()))
        .load(&mut *db::checkout(pool)?)?;
    let client = Client::new(tracker);
    let mut changed = 0;
    for (action_id, key) in linked {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Asked with no connection held; a key that is not one goes into no URL.
        let read = client.key(&key).and_then(|k| client.get(&k));
        let mut conn = db::checkout(pool)?;
        match read {
            Ok(remote) => match apply_status(&mut conn, env, tracker, &action_id, &remote.status) {
                Ok(Received::Changed(_)) => changed += 1,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(tracker = %tracker.name, ticket = %key, error = %e, "a ticket read back could not be applied");
                }
            },
            Err(f) => {
                tracing::warn!(tracker = %tracker.name, ticket = %key, error = f.text(), "a ticket could not be read back");
                state::failed(
                    &mut conn,
                    &tracker.name,
                    &format!("{key}: {}", f.text()),
                    db::now(),
                )?;
                let whole_tracker = match &f {
                    api::Failure::Retry { .. } => true,
                    api::Failure::Broken(_) => matches!(f.status(), Some(401 | 403)),
                    api::Failure::Refused(_) => false,
                };
                if whole_tracker {
                    // Down, or the credentials are wrong: the next round tries again.
                    break;
                }
                // This ticket alone (deleted, moved): the others are read.
            }
        }
    }
    Ok(changed)
}
