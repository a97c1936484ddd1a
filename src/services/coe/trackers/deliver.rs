//! Telling the trackers: the jobs `services::outbound::tickets` queued, claimed one at a time
//! under a lease (two replicas never send one job), sent with no transaction open
//! and no pooled connection held, and their outcome recorded: retried with back-off (after the tracker's
//! `Retry-After` when it gives one), held while the ticket is still being made,
//! failed for good when the tracker refuses it.

use std::sync::atomic::AtomicBool;

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde_json::Value;

use super::save_remote;
use super::state as tracker_state;
use crate::db::schema::{tickets, tracker_jobs};
use crate::db::{self, DbConnection, DbPool};
use crate::services::outbound::queue::{
    self, due, Claim, DeliveryError, Flow, Pooled, Queue, Report, Settled,
};
use crate::services::outbound::tickets::{FAILED, PENDING, SENDING};
use crate::services::Env;
use crate::trackers::{Client, Failure, Remote};

mod ask;
mod plan;

use ask::send;
use plan::{plan, Plan};

/// After this many attempts a job is failed (at the back-off's cap, about a day).
const MAX_ATTEMPTS: i32 = 12;

/// What one delivery pass did (`queue::Report`).
pub type TrackerReport = Report;

/// A job that may be claimed, with its place in its action's order: id, tracker,
/// action, what, detail, attempts, created.
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

/// A claimed job and what sending it needs.
struct Job {
    claim: Claim,
    tracker: String,
    action_id: String,
    what: String,
    detail: Value,
    /// Read at the claim; taken by the send. None when the tracker is no longer in
    /// the settings.
    plan: Option<Plan>,
}

/// Claims the next due job (`queue::due!`) of a tracker not in `skipped`, and only
/// when no older job of its action is still to send: an action's changes reach the
/// tracker in the order they were made. The claim counts as an attempt.
fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    until: NaiveDateTime,
    claimant: &str,
    skipped: &[String],
) -> QueryResult<Option<(Claim, Candidate)>> {
    db::write_transaction(conn, |conn| {
        let rows: Vec<Candidate> = due!(
            conn,
            tracker_jobs,
            now,
            LOOK_AT,
            CANDIDATE,
            tracker_jobs::tracker.ne_all(skipped)
        )?;
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
        Queue::Tracker.take(conn, &[&row.0], now, until, claimant)?;
        let claim = Claim {
            id: row.0.clone(),
            until,
            attempts: row.5 + 1,
        };
        Ok(Some((claim, row)))
    })
}

/// What came of one job.
enum Outcome {
    Done,
    /// The ticket is still being made: tried again soon, not counted.
    Hold,
    Failed(Failure),
}

/// What the tracker's answers leave to write.
struct Sent {
    outcome: Outcome,
    /// The ticket as the tracker last answered for it, and, when it was just made,
    /// the note on whom it is assigned to.
    remote: Option<(Remote, Option<Option<String>>)>,
    /// A new note on whom the ticket is assigned to.
    note: Option<Option<String>>,
}

impl Sent {
    fn only(outcome: Outcome) -> Sent {
        Sent {
            outcome,
            remote: None,
            note: None,
        }
    }
}

/// One delivery pass over the jobs due (`queue::pass`): each job is claimed with
/// what it needs read, sent and recorded in steps, a pooled connection taken for each
/// step and let go before the tracker is asked (the claim's lease covers the time
/// between).
pub fn deliver(
    pool: &DbPool,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<TrackerReport, DeliveryError> {
    queue::pass(
        Pooled(pool),
        &mut Trackers {
            env,
            skipped: Vec::new(),
        },
        env,
        claimant,
        stop,
    )
}

/// Gives back the jobs `claimant`'s earlier process was sending when it stopped
/// (`Queue::reclaim`).
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    Queue::Tracker.reclaim(conn, claimant, now)
}

/// Trackers as a channel of the queue. A tracker that is down or refuses coe's
/// credentials is left for the rest of the pass: its other jobs would only wait for
/// the same timeout.
struct Trackers<'a> {
    env: Env<'a>,
    skipped: Vec<String>,
}

impl queue::Channel for Trackers<'_> {
    type Job = Job;
    type Sent = Sent;

    fn begin(&mut self, _conn: &mut DbConnection) -> QueryResult<bool> {
        // A tracker restored without its secrets waits for them, and its jobs with it
        // (not failed as a tracker that is gone).
        let waiting = self.env.connections.waiting.iter();
        for w in waiting.filter(|w| w.kept.kind == crate::services::connections::Kind::Tracker) {
            if !self.skipped.contains(&w.kept.name) {
                self.skipped.push(w.kept.name.clone());
            }
        }
        Ok(!self.env.connections.trackers.is_empty())
    }

    fn claim(
        &mut self,
        conn: &mut DbConnection,
        now: NaiveDateTime,
        until: NaiveDateTime,
        claimant: &str,
    ) -> QueryResult<Option<Job>> {
        let Some((claim, (_, tracker, action_id, what, detail, _, _))) =
            claim(conn, now, until, claimant, &self.skipped)?
        else {
            return Ok(None);
        };
        let detail: Value = serde_json::from_str(&detail).unwrap_or_default();
        let plan = match self
            .env
            .connections
            .trackers
            .iter()
            .any(|t| t.name == tracker)
        {
            true => Some(plan(conn, self.env, &action_id, &what, &detail)?),
            false => None,
        };
        Ok(Some(Job {
            claim,
            tracker,
            action_id,
            what,
            detail,
            plan,
        }))
    }

    fn send(&mut self, job: &mut Job) -> Sent {
        let tracker = self
            .env
            .connections
            .trackers
            .iter()
            .find(|t| t.name == job.tracker);
        let sent = match (tracker, job.plan.take()) {
            (Some(tracker), Some(plan)) => {
                send(&Client::new(tracker), &job.what, &job.detail, plan)
            }
            _ => Sent::only(Outcome::Failed(Failure::Refused(format!(
                "no tracker is named {} any more (removed from the settings file or Admin → Trackers)",
                job.tracker
            )))),
        };
        if matches!(
            sent.outcome,
            Outcome::Failed(Failure::Retry { .. } | Failure::Broken(_))
        ) {
            self.skipped.push(job.tracker.clone());
        }
        sent
    }

    fn record(
        &mut self,
        conn: &mut DbConnection,
        job: &Job,
        sent: Sent,
        report: &mut Report,
    ) -> QueryResult<Flow> {
        record(conn, self.env, job, sent, report)?;
        Ok(Flow::Next)
    }
}

/// Records what came of `job` in one transaction: the ticket as the tracker answered
/// for it, the job's state (what failed, in coe's words: the action's page shows it
/// to members) and the tracker's health (the tracker's own answer, for the admin's
/// Trackers page and the log).
fn record(
    conn: &mut DbConnection,
    env: Env<'_>,
    job: &Job,
    sent: Sent,
    report: &mut Report,
) -> QueryResult<()> {
    let now = db::now();
    let Sent {
        outcome,
        remote,
        note,
    } = sent;
    let failure = match &outcome {
        Outcome::Failed(f) => Some(f),
        _ => None,
    };
    let error = failure.map(Failure::words);
    let settled = match &outcome {
        Outcome::Done => Settled::sent(now),
        Outcome::Hold => Settled::again(now + Duration::seconds(5), None).uncounted(),
        Outcome::Failed(Failure::Retry { after_secs, .. }) if job.claim.attempts < MAX_ATTEMPTS => {
            // The tracker's `Retry-After`, but never sooner than the back-off: a
            // short one repeated does not spend every attempt in minutes.
            let backoff = queue::backoff(env, job.claim.attempts);
            let asked = after_secs.map(queue::asked_wait).unwrap_or(backoff);
            Settled::again(now + asked.max(backoff), error.as_deref())
        }
        // Wrong credentials or a project gone: kept, and tried again on the
        // back-off (its cap, once there) until an admin mends the tracker (the admin
        // page says so); never failed for it.
        Outcome::Failed(Failure::Broken(_)) => Settled::again(
            now + queue::backoff(env, job.claim.attempts),
            error.as_deref(),
        ),
        Outcome::Failed(_) => Settled::failed(error.as_deref().unwrap_or_default(), now),
    };
    let state = settled.state;
    let tracker_settings = env
        .connections
        .trackers
        .iter()
        .find(|t| t.name == job.tracker);
    db::write_transaction(conn, |conn| {
        if let (Some((remote, assignee_note)), Some(tracker)) = (&remote, tracker_settings) {
            save_remote(conn, tracker, &job.action_id, remote, assignee_note.clone())?;
        }
        if let Some(note) = &note {
            diesel::update(tickets::table.find(&job.action_id))
                .set(tickets::assignee_note.eq(note))
                .execute(conn)?;
        }
        Queue::Tracker.settle(conn, &job.claim, &settled, now)?;
        match failure {
            None if matches!(outcome, Outcome::Done) => {
                tracker_state::delivered_out(conn, &job.tracker, now)
            }
            None => Ok(()),
            Some(f) => tracker_state::failed(conn, &job.tracker, f.text(), now),
        }
    })?;
    let tracker = job.tracker.as_str();
    match (&outcome, failure) {
        (Outcome::Done, _) => report.sent += 1,
        (Outcome::Hold, _) => report.deferred += 1,
        (_, Some(f)) if state == FAILED => {
            tracing::error!(tracker, error = f.text(), "a tracker job failed for good");
            report.failed += 1;
        }
        (_, Some(f)) => {
            tracing::warn!(
                tracker,
                error = f.text(),
                "a tracker job will be sent again"
            );
            report.deferred += 1;
        }
        _ => {}
    }
    Ok(())
}
