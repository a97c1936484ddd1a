//! Telling the trackers: the jobs `services::tickets` queued, claimed one at a time
//! under a lease (two replicas never send one job), sent with no transaction open
//! and no pooled connection held, and their outcome recorded: retried with back-off (after the tracker's
//! `Retry-After` when it gives one), held while the ticket is still being made,
//! failed for good when the tracker refuses it.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::state as tracker_state;
use super::{load_remote, save_remote, PassError};
use crate::config::{Meaning, Settings, TrackerSettings};
use crate::db::schema::{coes, corrective_actions, tickets, tracker_jobs};
use crate::db::{self, DbConnection, DbPool};
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

/// One delivery pass over the jobs due. Each job is claimed, read, sent and recorded
/// in steps: a pooled connection is taken for each step that reads or writes and let
/// go before the tracker is asked (the claim's lease covers the time between).
pub fn deliver(
    pool: &DbPool,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<TrackerReport, PassError> {
    let mut report = TrackerReport::default();
    if settings.trackers.is_empty() {
        return Ok(report);
    }
    let lease = Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600));
    // A tracker that is down or refuses coe's credentials is left for this pass: its
    // other jobs would only wait for the same timeout.
    let mut skipped: Vec<String> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let claimed = claim(
            &mut *db::checkout(pool)?,
            db::now(),
            lease,
            claimant,
            &skipped,
        )?;
        let Some((id, name, action_id, what, detail, attempts)) = claimed else {
            break;
        };
        let tracker = settings.trackers.iter().find(|t| t.name == name);
        let sent = match tracker {
            Some(tracker) => {
                let detail: Value = serde_json::from_str(&detail).unwrap_or_default();
                let plan = plan(
                    &mut *db::checkout(pool)?,
                    settings,
                    &action_id,
                    &what,
                    &detail,
                )?;
                send(&Client::new(tracker), &what, &detail, plan)
            }
            None => Sent::only(Outcome::Failed(Failure::Refused(format!(
                "no tracker is named {name} in the settings any more"
            )))),
        };
        if matches!(
            sent.outcome,
            Outcome::Failed(Failure::Retry { .. } | Failure::Broken(_))
        ) {
            skipped.push(name.clone());
        }
        let job = Job {
            id: &id,
            tracker: &name,
            settings: tracker,
            action_id: &action_id,
            attempts,
        };
        record(&mut *db::checkout(pool)?, settings, &job, sent, &mut report)?;
    }
    Ok(report)
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

/// A claimed job, as `record` needs it.
struct Job<'a> {
    id: &'a str,
    tracker: &'a str,
    /// The tracker's settings, when it is still in them.
    settings: Option<&'a TrackerSettings>,
    action_id: &'a str,
    /// With this one.
    attempts: i32,
}

/// Records what came of `job` in one transaction: the ticket as the tracker answered
/// for it, the job's state (what failed, in coe's words: the action's page shows it
/// to members) and the tracker's health (the tracker's own answer, for the admin's
/// Trackers page and the log).
fn record(
    conn: &mut DbConnection,
    settings: &Settings,
    job: &Job<'_>,
    sent: Sent,
    report: &mut TrackerReport,
) -> QueryResult<()> {
    let now = db::now();
    let Sent {
        outcome,
        remote,
        note,
    } = sent;
    let (state, next, counted) = match &outcome {
        Outcome::Done => (SENT, now, true),
        Outcome::Hold => (PENDING, now + Duration::seconds(5), false),
        Outcome::Failed(Failure::Retry { after_secs, .. }) if job.attempts < MAX_ATTEMPTS => {
            // The tracker's `Retry-After`, but never sooner than the back-off: a
            // short one repeated does not spend every attempt in minutes.
            let backoff = crate::services::outbox::backoff(settings, job.attempts);
            let asked = after_secs
                .map(|s| Duration::seconds(i64::try_from(s.min(86_400)).unwrap_or(60)))
                .unwrap_or(backoff);
            (PENDING, now + asked.max(backoff), true)
        }
        // Wrong credentials or a project gone: kept, and tried again on the
        // back-off (its cap, once there) until an admin mends the tracker (the admin
        // page says so); never failed for it.
        Outcome::Failed(Failure::Broken(_)) => (
            PENDING,
            now + crate::services::outbox::backoff(settings, job.attempts),
            true,
        ),
        Outcome::Failed(_) => (FAILED, now, true),
    };
    let failure = match &outcome {
        Outcome::Failed(f) => Some(f),
        _ => None,
    };
    db::write_transaction(conn, |conn| {
        if let (Some((remote, assignee_note)), Some(tracker)) = (&remote, job.settings) {
            save_remote(conn, tracker, job.action_id, remote, assignee_note.clone())?;
        }
        if let Some(note) = &note {
            diesel::update(tickets::table.find(job.action_id))
                .set(tickets::assignee_note.eq(note))
                .execute(conn)?;
        }
        let mine = tracker_jobs::table
            .find(job.id)
            .filter(tracker_jobs::state.eq(SENDING));
        diesel::update(mine)
            .set((
                tracker_jobs::state.eq(state),
                tracker_jobs::next_attempt_at.eq(next),
                tracker_jobs::lease_until.eq(None::<NaiveDateTime>),
                tracker_jobs::last_error.eq(failure.map(Failure::words)),
                tracker_jobs::updated_at.eq(now),
                tracker_jobs::sent_at.eq((state == SENT).then_some(now)),
            ))
            .execute(conn)?;
        if !counted {
            diesel::update(tracker_jobs::table.find(job.id))
                .set(tracker_jobs::attempts.eq(tracker_jobs::attempts - 1))
                .execute(conn)?;
        }
        match failure {
            None if matches!(outcome, Outcome::Done) => {
                tracker_state::delivered_out(conn, job.tracker, now)
            }
            None => Ok(()),
            Some(f) => tracker_state::failed(conn, job.tracker, f.text(), now),
        }
    })?;
    let tracker = job.tracker;
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
