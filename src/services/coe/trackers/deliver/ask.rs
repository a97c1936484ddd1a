//! Asking the tracker: make the ticket (assigned to the action's owner when the
//! tracker knows them), or move it and say what changed; no database here.

use serde_json::Value;

use super::{Outcome, Plan, Sent};
use crate::config::Meaning;
use crate::trackers::{self, Client, Failure, NewTicket, Remote};

/// Asks the tracker what `plan` needs: makes the ticket, or tells it of a change.
/// No database connection is held here.
pub(super) fn send(client: &Client<'_>, what: &str, detail: &Value, plan: Plan) -> Sent {
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
