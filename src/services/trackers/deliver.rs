//! Telling the trackers: the jobs `services::tickets` queued, claimed one at a time
//! under a lease (two replicas never send one job), sent with no transaction open,
//! and their outcome recorded: retried with back-off (after the tracker's
//! `Retry-After` when it gives one), held while the ticket is still being made,
//! failed for good when the tracker refuses it.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::state as tracker_state;
use super::{load_remote, save_remote};
use crate::config::{Meaning, Settings, TrackerSettings};
use crate::db::schema::{coes, corrective_actions, tickets, tracker_jobs};
use crate::db::{self, DbConnection};
use crate::services::tickets::{marker, FAILED, PENDING, SENDING, SENT};
use crate::trackers::{self, Client, Failure, NewTicket, Remote};

/// After this many attempts a job is failed (at the back-off's cap, about a day).
const MAX_ATTEMPTS: i32 = 12;

/// What one delivery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrackerReport {
    pub sent: usize,
    pub deferred: usize,
    pub failed: usize,
}

/// A claimed job: id, tracker, action, what, detail, attempts (this one counted).
type Claimed = (String, String, String, String, String, i32);

/// A job that may be claimed, with its place in its action's order.
type Candidate = (String, String, String, String, String, i32, NaiveDateTime);

const CANDIDATE: (
    tracker_jobs::id,
    tracker_jobs::tracker,
    tracker_jobs::action_id,
    tracker_jobs::what,
    tracker_jobs::detail,
    tracker_jobs::attempts,
    tracker_jobs::created_at,
) = (
    tracker_jobs::id,
    tracker_jobs::tracker,
    tracker_jobs::action_id,
    tracker_jobs::what,
    tracker_jobs::detail,
    tracker_jobs::attempts,
    tracker_jobs::created_at,
);

/// How many due jobs a claim looks at to find one whose action has no older job
/// still to send.
const LOOK_AT: i64 = 50;

/// Claims the next due job (one whose claim ran out first, then the oldest pending
/// one due) of a tracker not in `skipped`, and only when no older job of its action
/// is still to send: an action's changes reach the tracker in the order they were
/// made. The claim counts as an attempt.
fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    lease: Duration,
    claimant: &str,
    skipped: &[String],
) -> QueryResult<Option<Claimed>> {
    db::write_transaction(conn, |conn| {
        let mut rows: Vec<Candidate> = crate::load_skip_locked!(
            conn,
            tracker_jobs::table
                .filter(tracker_jobs::state.eq(SENDING))
                .filter(tracker_jobs::lease_until.lt(now))
                .filter(tracker_jobs::tracker.ne_all(skipped))
                .order((tracker_jobs::next_attempt_at.asc(), tracker_jobs::id.asc()))
                .limit(LOOK_AT)
                .select(CANDIDATE)
        )?;
        let due: Vec<Candidate> = crate::load_skip_locked!(
            conn,
            tracker_jobs::table
                .filter(tracker_jobs::state.eq(PENDING))
                .filter(tracker_jobs::next_attempt_at.le(now))
                .filter(tracker_jobs::tracker.ne_all(skipped))
                .order((tracker_jobs::next_attempt_at.asc(), tracker_jobs::id.asc()))
                .limit(LOOK_AT)
                .select(CANDIDATE)
        )?;
        rows.extend(due);
        let mut chosen = None;
        for row in rows {
            let (id, created) = (&row.0, row.6);
            let older: i64 = tracker_jobs::table
                .filter(tracker_jobs::action_id.eq(&row.2))
                .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
                .filter(tracker_jobs::id.ne(id))
                .filter(
                    tracker_jobs::created_at
                        .lt(created)
                        .or(tracker_jobs::created_at
                            .eq(created)
                            .and(tracker_jobs::id.lt(id))),
                )
                .count()
                .get_result(conn)?;
            if older == 0 {
                chosen = Some(row);
                break;
            }
        }
        let Some(row) = chosen else {
            return Ok(None);
        };
        diesel::update(tracker_jobs::table.find(&row.0))
            .set((
                tracker_jobs::state.eq(SENDING),
                tracker_jobs::lease_until.eq(now + lease),
                tracker_jobs::claimed_by.eq(claimant),
                tracker_jobs::attempts.eq(tracker_jobs::attempts + 1),
                tracker_jobs::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(Some((row.0, row.1, row.2, row.3, row.4, row.5 + 1)))
    })
}

/// What came of one job.
enum Outcome {
    Done,
    /// The ticket is still being made: tried again soon, not counted.
    Hold,
    Failed(Failure),
}

/// One delivery pass over the jobs due.
pub fn deliver(
    conn: &mut DbConnection,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> QueryResult<TrackerReport> {
    let mut report = TrackerReport::default();
    if settings.trackers.is_empty() {
        return Ok(report);
    }
    let lease = Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600));
    // A tracker that is down or refuses coe's credentials is left for this pass: its
    // other jobs would only wait for the same timeout.
    let mut skipped: Vec<String> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let Some((id, name, action_id, what, detail, attempts)) =
            claim(conn, db::now(), lease, claimant, &skipped)?
        else {
            break;
        };
        let outcome = match settings.trackers.iter().find(|t| t.name == name) {
            Some(tracker) => {
                let detail: Value = serde_json::from_str(&detail).unwrap_or_default();
                perform(conn, settings, tracker, &action_id, &what, &detail)?
            }
            None => Outcome::Failed(Failure::Refused(format!(
                "no tracker is named {name} in the settings any more"
            ))),
        };
        if matches!(
            outcome,
            Outcome::Failed(Failure::Retry { .. } | Failure::Broken(_))
        ) {
            skipped.push(name.clone());
        }
        record(conn, settings, &id, &name, attempts, outcome, &mut report)?;
    }
    Ok(report)
}

/// Sends one job: makes the ticket, or tells it of a change.
fn perform(
    conn: &mut DbConnection,
    settings: &Settings,
    tracker: &TrackerSettings,
    action_id: &str,
    what: &str,
    detail: &Value,
) -> QueryResult<Outcome> {
    let client = Client::new(tracker);
    if what == "create" {
        return create(conn, settings, &client, action_id, detail);
    }
    let Some(remote) = load_remote(conn, action_id)? else {
        let making: i64 = tracker_jobs::table
            .filter(tracker_jobs::action_id.eq(action_id))
            .filter(tracker_jobs::what.eq("create"))
            .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
            .count()
            .get_result(conn)?;
        return Ok(if making > 0 {
            Outcome::Hold
        } else {
            Outcome::Failed(Failure::Refused(
                "the action has no ticket: it was never made".into(),
            ))
        });
    };
    let by = detail["by"].as_str().unwrap_or("someone");
    let d = &detail["detail"];
    let text = |k: &str| {
        d[k].as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let said = match what {
        "due" => client
            .set_due(
                &remote,
                d["to"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_default(),
            )
            .and_then(|()| {
                client.comment(
                    &remote,
                    &format!(
                        "coe: {by} moved the due date from {} to {}. Reason: {}",
                        d["from"].as_str().unwrap_or("?"),
                        d["to"].as_str().unwrap_or("?"),
                        text("reason").as_deref().unwrap_or("none given")
                    ),
                )
            }),
        "owner" => {
            let to = d["to"].as_str().unwrap_or_default();
            let (assignee, note) = match assignee(&client, to) {
                Ok(found) => found,
                Err(f) => return Ok(Outcome::Failed(f)),
            };
            let mut comment = format!("coe: {by} made {to} the owner of this action.");
            if let Some(note) = &note {
                comment.push(' ');
                comment.push_str(note);
            }
            diesel::update(tickets::table.find(action_id))
                .set(tickets::assignee_note.eq(&note))
                .execute(conn)?;
            // The comment says who owns it even when the tracker refuses the
            // assignment (a person it may not assign in that project).
            match client.assign(&remote, assignee.as_deref()) {
                Err(Failure::Refused(e)) => {
                    comment.push_str(&format!(
                        " {} refused the assignment: {e}",
                        client.tracker.kind.label()
                    ));
                    client.comment(&remote, &comment)
                }
                other => other.and_then(|()| client.comment(&remote, &comment)),
            }
        }
        moving => match moves(moving, by, &text) {
            Some((to, comment)) => {
                move_to(conn, &client, action_id, &remote, to, comment.as_deref())
            }
            None => Err(Failure::Refused(format!(
                "coe does not know the job {moving}"
            ))),
        },
    };
    Ok(match said {
        Ok(()) => Outcome::Done,
        Err(f) => Outcome::Failed(f),
    })
}

/// Where a job that moves the ticket takes it, and what it says there (`by`: who in
/// coe; `text`: the job's note, reason or evidence); `None` for a job that moves
/// nothing.
fn moves(
    what: &str,
    by: &str,
    text: &dyn Fn(&str) -> Option<String>,
) -> Option<(Meaning, Option<String>)> {
    Some(match what {
        "start" => (Meaning::InProgress, None),
        "done" => {
            let mut comment = format!("coe: {by} completed the corrective action.");
            if let Some(note) = text("note") {
                comment.push_str(&format!(" Note: {note}"));
            }
            if let Some(evidence) = text("evidence") {
                comment.push_str(&format!(" Evidence: {evidence}"));
            }
            (Meaning::Done, Some(comment))
        }
        "wont_do" => (
            Meaning::WontDo,
            Some(format!(
                "coe: {by} decided not to do this corrective action. Reason: {}",
                text("reason").as_deref().unwrap_or("none given")
            )),
        ),
        "sent_back" => (
            Meaning::InProgress,
            Some(format!(
                "coe: the COE's reviewer, {by}, sent the action back: it is not done yet. {}",
                text("reason").unwrap_or_default()
            )),
        ),
        "reopen" => (
            Meaning::Open,
            Some(format!(
                "coe: {by} reopened the corrective action. Note: {}",
                text("note").as_deref().unwrap_or("none given")
            )),
        ),
        _ => return None,
    })
}

/// Moves the ticket to a status meaning `to` unless it has one already (a retry
/// after a lost answer moves nothing twice), then comments. A move the workflow
/// refuses is still said in the comment, and the refusal kept.
fn move_to(
    conn: &mut DbConnection,
    client: &Client<'_>,
    action_id: &str,
    remote: &Remote,
    to: Meaning,
    comment: Option<&str>,
) -> Result<(), Failure> {
    let now = client.get(&remote.key)?;
    let moved = if trackers::meaning(client.tracker, &now.status) == Some(to) {
        Ok(())
    } else {
        client.move_to(&now, to)
    };
    if matches!(moved, Err(Failure::Retry { .. } | Failure::Broken(_))) {
        return moved;
    }
    if let Some(comment) = comment {
        client.comment(&now, comment)?;
    }
    // What it reads as now, whatever the webhook says later.
    if let Ok(after) = client.get(&remote.key) {
        let _ = save_remote(conn, client.tracker, action_id, &after, None);
    }
    moved
}

/// The tracker's user for the owner `email`, or why there is none. A tracker that
/// is down or rate limited is waited for (the ticket is not made unassigned for it).
fn assignee(client: &Client<'_>, email: &str) -> Result<(Option<String>, Option<String>), Failure> {
    let label = client.tracker.kind.label();
    Ok(match client.user(email) {
        Ok(Some(id)) => (Some(id), None),
        Ok(None) => (
            None,
            Some(format!(
                "{label} has nobody with the address {email}: the ticket is unassigned."
            )),
        ),
        Err(f @ Failure::Retry { .. }) => return Err(f),
        Err(f) => (
            None,
            Some(format!(
                "{label} could not be asked who {email} is ({}): the ticket is unassigned.",
                f.text()
            )),
        ),
    })
}

/// Makes action `action_id`'s ticket, unless an earlier attempt did (found by its
/// marker on a retry).
fn create(
    conn: &mut DbConnection,
    settings: &Settings,
    client: &Client<'_>,
    action_id: &str,
    detail: &Value,
) -> QueryResult<Outcome> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        String,
        chrono::NaiveDate,
        String,
        String,
        String,
        Option<String>,
    );
    let found: Option<Row> = corrective_actions::table
        .inner_join(coes::table)
        .inner_join(tickets::table)
        .filter(corrective_actions::id.eq(action_id))
        .select((
            corrective_actions::title,
            corrective_actions::description,
            corrective_actions::success_criteria,
            corrective_actions::owner_email,
            corrective_actions::due_date,
            corrective_actions::priority,
            coes::id,
            tickets::place,
            tickets::ticket_key,
        ))
        .first(conn)
        .optional()?;
    let Some((title, description, criteria, owner, due, priority, coe_id, place, key)) = found
    else {
        return Ok(Outcome::Failed(Failure::Refused(
            "the action or its ticket is gone".into(),
        )));
    };
    if key.is_some() {
        return Ok(Outcome::Done);
    }
    // An earlier attempt may have made it and lost the answer (or its replica
    // stopped before it could record it): looked for first, every time.
    let mark = marker(action_id);
    match client.find(&place, &mark) {
        Ok(Some(remote)) => {
            save_remote(conn, client.tracker, action_id, &remote, None)?;
            return Ok(Outcome::Done);
        }
        Ok(None) => {}
        Err(f) => return Ok(Outcome::Failed(f)),
    }
    let (assignee, note) = match assignee(client, &owner) {
        Ok(found) => found,
        Err(f) => return Ok(Outcome::Failed(f)),
    };
    let public = settings.public_url.trim_end_matches('/');
    let mut paragraphs = vec![format!(
        "A corrective action from a COE, owned by {owner} and due {due}. coe keeps it in step \
         with this ticket: moving it to done here asks the owner for the evidence in coe."
    )];
    paragraphs.extend(description);
    if let Some(criteria) = criteria {
        paragraphs.push(format!("Done when: {criteria}"));
    }
    let new = NewTicket {
        place,
        issue_type: detail["issue_type"].as_str().unwrap_or("Task").to_owned(),
        title,
        paragraphs,
        links: vec![
            (
                "The action in coe".into(),
                format!("{public}/actions/{action_id}"),
            ),
            ("The COE".into(), format!("{public}/coes/{coe_id}")),
        ],
        due,
        priority,
        marker: mark,
    };
    Ok(match client.create(&new, assignee.as_deref()) {
        Ok(remote) => {
            save_remote(conn, client.tracker, action_id, &remote, Some(note))?;
            Outcome::Done
        }
        Err(f) => Outcome::Failed(f),
    })
}

fn record(
    conn: &mut DbConnection,
    settings: &Settings,
    id: &str,
    tracker: &str,
    attempts: i32,
    outcome: Outcome,
    report: &mut TrackerReport,
) -> QueryResult<()> {
    let now = db::now();
    let mine = tracker_jobs::table
        .find(id)
        .filter(tracker_jobs::state.eq(SENDING));
    let (state, next, error, counted) = match &outcome {
        Outcome::Done => (SENT, now, None, true),
        Outcome::Hold => (PENDING, now + Duration::seconds(5), None, false),
        Outcome::Failed(Failure::Retry { after_secs, error }) if attempts < MAX_ATTEMPTS => {
            // The tracker's `Retry-After`, but never sooner than the back-off: a
            // short one repeated does not spend every attempt in minutes.
            let backoff = crate::services::outbox::backoff(settings, attempts);
            let asked = after_secs
                .map(|s| Duration::seconds(i64::try_from(s.min(86_400)).unwrap_or(60)))
                .unwrap_or(backoff);
            (
                PENDING,
                now + asked.max(backoff),
                Some(error.as_str()),
                true,
            )
        }
        // Wrong credentials or a project gone: kept, and tried again on the
        // back-off (its cap, once there) until an admin mends the tracker (the admin
        // page says so); never failed for it.
        Outcome::Failed(Failure::Broken(error)) => (
            PENDING,
            now + crate::services::outbox::backoff(settings, attempts),
            Some(error.as_str()),
            true,
        ),
        Outcome::Failed(f) => (FAILED, now, Some(f.text()), true),
    };
    diesel::update(mine)
        .set((
            tracker_jobs::state.eq(state),
            tracker_jobs::next_attempt_at.eq(next),
            tracker_jobs::lease_until.eq(None::<NaiveDateTime>),
            tracker_jobs::last_error.eq(error),
            tracker_jobs::updated_at.eq(now),
            tracker_jobs::sent_at.eq((state == SENT).then_some(now)),
        ))
        .execute(conn)?;
    if !counted {
        diesel::update(tracker_jobs::table.find(id))
            .set(tracker_jobs::attempts.eq(tracker_jobs::attempts - 1))
            .execute(conn)?;
    }
    match (&outcome, error) {
        (Outcome::Done, _) => {
            tracker_state::delivered_out(conn, tracker, now)?;
            report.sent += 1;
        }
        (Outcome::Hold, _) => report.deferred += 1,
        (_, Some(error)) => {
            tracker_state::failed(conn, tracker, error, now)?;
            if state == FAILED {
                tracing::error!(tracker, error, "a tracker job failed for good");
                report.failed += 1;
            } else {
                tracing::warn!(tracker, error, "a tracker job will be sent again");
                report.deferred += 1;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Gives back the jobs `claimant`'s earlier process was sending when it stopped.
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::update(
            tracker_jobs::table
                .filter(tracker_jobs::state.eq(SENDING))
                .filter(tracker_jobs::claimed_by.eq(claimant)),
        )
        .set((
            tracker_jobs::state.eq(PENDING),
            tracker_jobs::lease_until.eq(None::<NaiveDateTime>),
            tracker_jobs::claimed_by.eq(None::<String>),
            tracker_jobs::next_attempt_at.eq(now),
            tracker_jobs::attempts.eq(tracker_jobs::attempts - 1),
            tracker_jobs::updated_at.eq(now),
        ))
        .execute(conn)
    })
}
