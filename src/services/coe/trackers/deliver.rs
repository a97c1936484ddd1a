//! Telling the trackers: the jobs `services::outbound::tickets` queued, claimed one at a time
//! under a lease (two replicas never send one job), sent with no transaction open
//! and no pooled connection held, and their outcome recorded: retried with back-off (after the tracker's
//! `Retry-After` when it gives one), held while the ticket is still being made,
//! failed for good when the tracker refuses it.

use std::sync::atomic::AtomicBool;

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde_json::Value;

use super::state as tracker_state;
use super::{load_remote, save_remote};
use crate::config::{Meaning, Settings};
use crate::db::schema::{coes, corrective_actions, tickets, tracker_jobs};
use crate::db::{self, DbConnection, DbPool};
use crate::services::outbound::queue::{
    self, due, Claim, DeliveryError, Flow, Pooled, Queue, Report, Settled,
};
use crate::services::outbound::tickets::{marker, FAILED, PENDING, SENDING};
use crate::trackers::{self, Client, Failure, NewTicket, Remote};

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

/// What a job needs from the database, read before the tracker is asked.
enum Plan {
    /// Make the ticket for `owner`, unless an earlier attempt did.
    Create { new: Box<NewTicket>, owner: String },
    /// Tell the ticket `remote` of a change.
    Change(Remote),
    /// Nothing to ask the tracker: what came of it is known.
    Known(Outcome),
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
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<TrackerReport, DeliveryError> {
    queue::pass(
        Pooled(pool),
        &mut Trackers {
            settings,
            skipped: Vec::new(),
        },
        settings,
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
    settings: &'a Settings,
    skipped: Vec<String>,
}

impl queue::Channel for Trackers<'_> {
    type Job = Job;
    type Sent = Sent;

    fn begin(&mut self, _conn: &mut DbConnection) -> QueryResult<bool> {
        Ok(!self.settings.trackers.is_empty())
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
        let plan = match self.settings.trackers.iter().any(|t| t.name == tracker) {
            true => Some(plan(conn, self.settings, &action_id, &what, &detail)?),
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
            .settings
            .trackers
            .iter()
            .find(|t| t.name == job.tracker);
        let sent = match (tracker, job.plan.take()) {
            (Some(tracker), Some(plan)) => {
                send(&Client::new(tracker), &job.what, &job.detail, plan)
            }
            _ => Sent::only(Outcome::Failed(Failure::Refused(format!(
                "no tracker is named {} in the settings any more",
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
        record(conn, self.settings, job, sent, report)?;
        Ok(Flow::Next)
    }
}

/// Reads what job `what` of action `action_id` needs.
fn plan(
    conn: &mut DbConnection,
    settings: &Settings,
    action_id: &str,
    what: &str,
    detail: &Value,
) -> QueryResult<Plan> {
    if what == "create" {
        return create_plan(conn, settings, action_id, detail);
    }
    if let Some(remote) = load_remote(conn, action_id)? {
        return Ok(Plan::Change(remote));
    }
    let making: i64 = tracker_jobs::table
        .filter(tracker_jobs::action_id.eq(action_id))
        .filter(tracker_jobs::what.eq("create"))
        .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
        .count()
        .get_result(conn)?;
    Ok(Plan::Known(if making > 0 {
        Outcome::Hold
    } else {
        Outcome::Failed(Failure::Refused(
            "the action has no ticket: it was never made".into(),
        ))
    }))
}

/// Asks the tracker what `plan` needs: makes the ticket, or tells it of a change.
/// No database connection is held here.
fn send(client: &Client<'_>, what: &str, detail: &Value, plan: Plan) -> Sent {
    let remote = match plan {
        Plan::Known(outcome) => return Sent::only(outcome),
        Plan::Create { new, owner } => return create(client, &new, &owner),
        Plan::Change(remote) => remote,
    };
    let by = detail["by"].as_str().unwrap_or("someone");
    let d = &detail["detail"];
    let text = |k: &str| {
        d[k].as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let mut sent = Sent::only(Outcome::Done);
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
            let (assignee, note) = match assignee(client, to) {
                Ok(found) => found,
                Err(f) => return Sent::only(Outcome::Failed(f)),
            };
            let mut comment = format!("coe: {by} made {to} the owner of this action.");
            if let Some(note) = &note {
                comment.push(' ');
                comment.push_str(note);
            }
            sent.note = Some(note);
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
                let (moved, after) = move_to(client, &remote, to, comment.as_deref());
                sent.remote = after.map(|after| (after, None));
                moved
            }
            None => Err(Failure::Refused(format!(
                "coe does not know the job {moving}"
            ))),
        },
    };
    if let Err(f) = said {
        sent.outcome = Outcome::Failed(f);
    }
    sent
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
/// refuses is still said in the comment, and the refusal kept. Also gives the ticket
/// as it reads after, whatever the webhook says later.
fn move_to(
    client: &Client<'_>,
    remote: &Remote,
    to: Meaning,
    comment: Option<&str>,
) -> (Result<(), Failure>, Option<Remote>) {
    let key = match client.key(&remote.key) {
        Ok(key) => key,
        Err(f) => return (Err(f), None),
    };
    let now = match client.get(&key) {
        Ok(now) => now,
        Err(f) => return (Err(f), None),
    };
    let moved = if trackers::meaning(client.tracker, &now.status) == Some(to) {
        Ok(())
    } else {
        client.move_to(&now, to)
    };
    if matches!(moved, Err(Failure::Retry { .. } | Failure::Broken(_))) {
        return (moved, None);
    }
    if let Some(comment) = comment {
        if let Err(f) = client.comment(&now, comment) {
            return (Err(f), None);
        }
    }
    (moved, client.get(&key).ok())
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
        Err(f) => {
            tracing::warn!(tracker = %client.tracker.name, error = f.text(), "a tracker could not be asked who an owner is");
            (
                None,
                Some(format!(
                    "{label} could not be asked who {email} is: the ticket is unassigned."
                )),
            )
        }
    })
}

/// Reads what making action `action_id`'s ticket needs; nothing to ask when an
/// earlier attempt made it and recorded it.
fn create_plan(
    conn: &mut DbConnection,
    settings: &Settings,
    action_id: &str,
    detail: &Value,
) -> QueryResult<Plan> {
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
        return Ok(Plan::Known(Outcome::Failed(Failure::Refused(
            "the action or its ticket is gone".into(),
        ))));
    };
    if key.is_some() {
        return Ok(Plan::Known(Outcome::Done));
    }
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
        marker: marker(action_id),
    };
    Ok(Plan::Create {
        new: Box::new(new),
        owner,
    })
}

/// Makes the ticket `new`, unless an earlier attempt did (found by its marker: it
/// may have made it and lost the answer, or its replica stopped before it could
/// record it; looked for first, every time).
fn create(client: &Client<'_>, new: &NewTicket, owner: &str) -> Sent {
    match client.find(&new.place, &new.marker) {
        Ok(Some(remote)) => {
            return Sent {
                outcome: Outcome::Done,
                remote: Some((remote, None)),
                note: None,
            }
        }
        Ok(None) => {}
        Err(f) => return Sent::only(Outcome::Failed(f)),
    }
    let (assignee, note) = match assignee(client, owner) {
        Ok(found) => found,
        Err(f) => return Sent::only(Outcome::Failed(f)),
    };
    match client.create(new, assignee.as_deref()) {
        Ok(remote) => Sent {
            outcome: Outcome::Done,
            remote: Some((remote, Some(note))),
            note: None,
        },
        Err(f) => Sent::only(Outcome::Failed(f)),
    }
}

/// Records what came of `job` in one transaction: the ticket as the tracker answered
/// for it, the job's state (what failed, in coe's words: the action's page shows it
/// to members) and the tracker's health (the tracker's own answer, for the admin's
/// Trackers page and the log).
fn record(
    conn: &mut DbConnection,
    settings: &Settings,
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
            let backoff = queue::backoff(settings, job.claim.attempts);
            let asked = after_secs.map(queue::asked_wait).unwrap_or(backoff);
            Settled::again(now + asked.max(backoff), error.as_deref())
        }
        // Wrong credentials or a project gone: kept, and tried again on the
        // back-off (its cap, once there) until an admin mends the tracker (the admin
        // page says so); never failed for it.
        Outcome::Failed(Failure::Broken(_)) => Settled::again(
            now + queue::backoff(settings, job.claim.attempts),
            error.as_deref(),
        ),
        Outcome::Failed(_) => Settled::failed(error.as_deref().unwrap_or_default(), now),
    };
    let state = settled.state;
    let tracker_settings = settings.trackers.iter().find(|t| t.name == job.tracker);
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
