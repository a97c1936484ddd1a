//! Issue trackers (`[[trackers]]`): the requests that make and move a corrective
//! action's ticket in Jira Cloud (`jira`), Linear (`linear`) and GitHub Issues
//! (`github`), what their statuses mean to an action (`meaning`), and the webhooks
//! they send back (`webhook`). Storage-free: which action has which ticket, the
//! outbox of requests and what comes in are `services::trackers`.

mod github;
mod jira;
mod linear;
pub mod webhook;

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;

use crate::config::{Meaning, TrackerKind, TrackerSettings};

/// What a path segment (a key, a login) has encoded: what would end or escape it.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'?')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// `s` as one path segment.
fn segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
}

/// `s` as a query parameter's value.
fn query_value(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A ticket as the tracker knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// What people call it: `OPS-12`, `ENG-12`, `acme/api#12`.
    pub key: String,
    /// What the API calls it: Jira's id, Linear's UUID, GitHub's number.
    pub id: String,
    pub url: String,
    pub status: Status,
}

/// A ticket's status: its name, its category (Jira's status category key, Linear's
/// state type, GitHub's `open`/`closed`) and a reason (Jira's resolution, GitHub's
/// `state_reason`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    pub name: String,
    pub category: String,
    pub reason: Option<String>,
}

/// What a ticket for an action is made of.
#[derive(Debug, Clone)]
pub struct NewTicket {
    pub place: String,
    pub issue_type: String,
    pub title: String,
    /// Paragraphs of plain text.
    pub paragraphs: Vec<String>,
    /// Links, each a label and a URL (the action's and the COE's pages).
    pub links: Vec<(String, String)>,
    pub due: NaiveDate,
    /// coe's `high`, `medium` or `low`.
    pub priority: String,
    /// Kept in the ticket (a Jira label, a line of the description) so that a retry
    /// finds the ticket an earlier attempt made: `coe-action-<id>`.
    pub marker: String,
}

/// Why a request did not do what it was for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Try again later: after the tracker's `Retry-After` when it gave one.
    Retry {
        after_secs: Option<u64>,
        error: String,
    },
    /// The credentials, project or repository are wrong or gone (401, 403, 404,
    /// 410): nothing more goes until an admin mends the tracker.
    Broken(String),
    /// The tracker refused this request for good (a transition not allowed, a field
    /// it does not take).
    Refused(String),
}

impl Failure {
    pub fn text(&self) -> &str {
        match self {
            Failure::Retry { error, .. } | Failure::Broken(error) | Failure::Refused(error) => {
                error
            }
        }
    }
}

pub type Answer<T> = Result<T, Failure>;

/// What a tracker's status means to an action: the admin's `statuses` first (by
/// name, in any case), then the category. `None`: coe cannot map it (shown, not
/// dropped).
pub fn meaning(tracker: &TrackerSettings, status: &Status) -> Option<Meaning> {
    if let Some((_, m)) = tracker
        .statuses
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(&status.name))
    {
        return Some(*m);
    }
    let reason = status.reason.as_deref().unwrap_or("").to_ascii_lowercase();
    let declined = |s: &str| {
        [
            "won't do",
            "won't fix",
            "declined",
            "duplicate",
            "cannot reproduce",
        ]
        .contains(&s)
    };
    match (tracker.kind, status.category.as_str()) {
        (TrackerKind::Jira, "new") => Some(Meaning::Open),
        (TrackerKind::Jira, "indeterminate") => Some(Meaning::InProgress),
        // A done status whose resolution (or whose own name) says it was declined.
        (TrackerKind::Jira, "done") => Some(
            if declined(&reason) || declined(&status.name.to_ascii_lowercase()) {
                Meaning::WontDo
            } else {
                Meaning::Done
            },
        ),
        (TrackerKind::Linear, "triage" | "backlog" | "unstarted") => Some(Meaning::Open),
        (TrackerKind::Linear, "started") => Some(Meaning::InProgress),
        (TrackerKind::Linear, "completed") => Some(Meaning::Done),
        (TrackerKind::Linear, "canceled" | "duplicate") => Some(Meaning::WontDo),
        (TrackerKind::Github, "open") => Some(Meaning::Open),
        (TrackerKind::Github, "closed") => Some(match reason.as_str() {
            "not_planned" | "duplicate" => Meaning::WontDo,
            _ => Meaning::Done,
        }),
        _ => None,
    }
}

/// One tracker's API, as the settings describe it.
pub struct Client<'a> {
    pub tracker: &'a TrackerSettings,
    agent: ureq::Agent,
}

impl<'a> Client<'a> {
    pub fn new(tracker: &'a TrackerSettings) -> Client<'a> {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(tracker.timeout_secs))
            .redirects(0)
            .user_agent("coe (corrective actions)")
            .build();
        Client { tracker, agent }
    }

    /// The ticket an earlier attempt made for `marker` in `place`, if any.
    pub fn find(&self, place: &str, marker: &str) -> Answer<Option<Remote>> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::find(self, place, marker),
            TrackerKind::Linear => linear::find(self, place, marker),
            TrackerKind::Github => github::find(self, place, marker),
        }
    }

    /// The tracker's user with `email` (Jira's account id, Linear's user id, GitHub's
    /// login), when it can be found.
    pub fn user(&self, email: &str) -> Answer<Option<String>> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::user(self, email),
            TrackerKind::Linear => linear::user(self, email),
            TrackerKind::Github => github::user(self, email),
        }
    }

    pub fn create(&self, new: &NewTicket, assignee: Option<&str>) -> Answer<Remote> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::create(self, new, assignee),
            TrackerKind::Linear => linear::create(self, new, assignee),
            TrackerKind::Github => github::create(self, new, assignee),
        }
    }

    /// The ticket `key` as it is now.
    pub fn get(&self, key: &str) -> Answer<Remote> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::get(self, key),
            TrackerKind::Linear => linear::get(self, key),
            TrackerKind::Github => github::get(self, key),
        }
    }

    pub fn comment(&self, remote: &Remote, text: &str) -> Answer<()> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::comment(self, remote, text),
            TrackerKind::Linear => linear::comment(self, remote, text),
            TrackerKind::Github => github::comment(self, remote, text),
        }
    }

    /// Sets the due date (GitHub has none: nothing is done there).
    pub fn set_due(&self, remote: &Remote, due: NaiveDate) -> Answer<()> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::set_due(self, remote, due),
            TrackerKind::Linear => linear::set_due(self, remote, due),
            TrackerKind::Github => Ok(()),
        }
    }

    /// Assigns the ticket to `assignee` (a user from `user`), or to nobody.
    pub fn assign(&self, remote: &Remote, assignee: Option<&str>) -> Answer<()> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::assign(self, remote, assignee),
            TrackerKind::Linear => linear::assign(self, remote, assignee),
            TrackerKind::Github => github::assign(self, remote, assignee),
        }
    }

    /// Moves the ticket to a status that means `to` (Jira: an available transition
    /// to one; Linear: a state of its team; GitHub: open or closed with its reason).
    pub fn move_to(&self, remote: &Remote, to: Meaning) -> Answer<()> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::move_to(self, remote, to),
            TrackerKind::Linear => linear::move_to(self, remote, to),
            TrackerKind::Github => github::move_to(self, remote, to),
        }
    }

    /// Reads `place` (a project, team or repository) and the statuses it has: the
    /// admin's check of the connection.
    pub fn check(&self, place: &str) -> Answer<Vec<Status>> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::check(self, place),
            TrackerKind::Linear => linear::check(self, place),
            TrackerKind::Github => github::check(self, place),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.tracker.base_url())
    }

    /// Sends a request and reads its JSON answer (`Null` for an empty one).
    fn call(&self, request: ureq::Request, body: Option<&Value>) -> Answer<Value> {
        let request = if request.header("Accept").is_some() {
            request
        } else {
            request.set("Accept", "application/json")
        };
        let answer = match body {
            Some(b) => request
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => request.call(),
        };
        let sent = match answer {
            Ok(response) if (300..400).contains(&response.status()) => {
                Err(Failure::Broken(format!(
                    "HTTP {}: the tracker answered with a redirect, which is not followed",
                    response.status()
                )))
            }
            Ok(response) => {
                let text = response.into_string().unwrap_or_default();
                if text.trim().is_empty() {
                    Ok(Value::Null)
                } else {
                    serde_json::from_str(&text).map_err(|e| Failure::Retry {
                        after_secs: None,
                        error: format!("the tracker's answer is not JSON: {e}"),
                    })
                }
            }
            Err(ureq::Error::Status(status, response)) => {
                let retry_after = response
                    .header("retry-after")
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let said = response.into_string().unwrap_or_default();
                Err(judge(status, retry_after, &said))
            }
            Err(ureq::Error::Transport(t)) => Err(Failure::Retry {
                after_secs: None,
                error: format!("no answer: {}", crate::chat::send::transport_text(&t)),
            }),
        };
        sent.map_err(|f| self.scrub(f))
    }

    /// `failure` without the tracker's secrets, should it repeat them.
    fn scrub(&self, failure: Failure) -> Failure {
        let token = self.tracker.token.expose();
        let clean = |e: String| {
            if token.len() >= 8 {
                e.replace(token, "***")
            } else {
                e
            }
        };
        match failure {
            Failure::Retry { after_secs, error } => Failure::Retry {
                after_secs,
                error: clean(error),
            },
            Failure::Broken(e) => Failure::Broken(clean(e)),
            Failure::Refused(e) => Failure::Refused(clean(e)),
        }
    }
}

/// What an error answer means (the same for the three trackers; Linear's errors in
/// a 200 are read by `linear`).
pub fn judge(status: u16, retry_after: Option<u64>, said: &str) -> Failure {
    let error = format!(
        "HTTP {status}: {}",
        crate::chat::format::cut(said.trim(), 300)
    );
    match status {
        429 => Failure::Retry {
            after_secs: retry_after,
            error,
        },
        // GitHub's secondary rate limit is a 403 with `Retry-After`.
        403 if retry_after.is_some() => Failure::Retry {
            after_secs: retry_after,
            error,
        },
        401 | 403 | 404 | 410 => Failure::Broken(error),
        408 | 500..=599 => Failure::Retry {
            after_secs: retry_after,
            error,
        },
        _ => Failure::Refused(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CreateWhen, TrackerKind};

    fn tracker(kind: TrackerKind) -> TrackerSettings {
        TrackerSettings {
            name: "t".into(),
            kind,
            base_url: None,
            user: None,
            token: "token".into(),
            webhook_secret: None,
            place: None,
            issue_type: "Task".into(),
            create: CreateWhen::Automatic,
            reconcile_secs: 900,
            timeout_secs: 10,
            routes: Vec::new(),
            statuses: [("Blocked".to_owned(), Meaning::InProgress)].into(),
        }
    }

    fn status(name: &str, category: &str, reason: Option<&str>) -> Status {
        Status {
            name: name.into(),
            category: category.into(),
            reason: reason.map(Into::into),
        }
    }

    #[test]
    fn statuses_read_by_category_unless_the_admin_says_otherwise() {
        let jira = tracker(TrackerKind::Jira);
        assert_eq!(
            meaning(&jira, &status("To Do", "new", None)),
            Some(Meaning::Open)
        );
        assert_eq!(
            meaning(&jira, &status("Done", "done", Some("Done"))),
            Some(Meaning::Done)
        );
        assert_eq!(
            meaning(&jira, &status("Closed", "done", Some("Won't Do"))),
            Some(Meaning::WontDo)
        );
        assert_eq!(
            meaning(&jira, &status("blocked", "new", None)),
            Some(Meaning::InProgress)
        );
        assert_eq!(
            meaning(&jira, &status("Won't Do", "done", None)),
            Some(Meaning::WontDo)
        );
        assert_eq!(meaning(&jira, &status("Limbo", "undefined", None)), None);
        let linear = tracker(TrackerKind::Linear);
        assert_eq!(
            meaning(&linear, &status("Canceled", "canceled", None)),
            Some(Meaning::WontDo)
        );
        assert_eq!(
            meaning(&linear, &status("In Review", "started", None)),
            Some(Meaning::InProgress)
        );
        let github = tracker(TrackerKind::Github);
        assert_eq!(
            meaning(&github, &status("closed", "closed", Some("not_planned"))),
            Some(Meaning::WontDo)
        );
        assert_eq!(
            meaning(&github, &status("closed", "closed", None)),
            Some(Meaning::Done)
        );
    }

    #[test]
    fn answers_are_judged() {
        assert_eq!(
            judge(429, Some(30), "slow down"),
            Failure::Retry {
                after_secs: Some(30),
                error: "HTTP 429: slow down".into()
            }
        );
        assert!(matches!(judge(404, None, ""), Failure::Broken(_)));
        assert!(matches!(judge(401, None, ""), Failure::Broken(_)));
        assert!(matches!(judge(403, Some(60), ""), Failure::Retry { .. }));
        assert!(matches!(judge(400, None, ""), Failure::Refused(_)));
        assert!(matches!(judge(502, None, ""), Failure::Retry { .. }));
    }
}
