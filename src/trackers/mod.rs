//! Issue trackers (`[[trackers]]`): the requests that make and move a corrective
//! action's ticket in Jira Cloud (`jira`), Linear (`linear`) and GitHub Issues
//! (`github`), what their statuses mean to an action (`meaning`), and the webhooks
//! they send back (`webhook`). Storage-free: which action has which ticket, the
//! outbox of requests and what comes in are `services::coe::trackers`.

mod github;
mod jira;
mod linear;
pub mod webhook;

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;

use crate::config::{Meaning, TrackerKind, TrackerSettings};

/// What a path segment (a key, a login, a place) has encoded: everything but the
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`), so that nothing in it ends the
/// segment, starts a query or, as `\` does for the url crate, turns into a `/`.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `s` as one path segment; an empty one, `.` or `..` (which a URL resolves, encoded
/// or not) is refused.
fn segment(s: &str) -> Answer<String> {
    if s.is_empty() || s == "." || s == ".." {
        return Err(Failure::Refused(format!(
            "{s:?} cannot be a part of a URL's path"
        )));
    }
    Ok(percent_encoding::utf8_percent_encode(s, SEGMENT).to_string())
}

/// `s` as a query parameter's value.
fn query_value(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A ticket's key as its tracker writes it, read by that tracker's grammar before it
/// comes near a URL: Jira's `OPS-12`, Linear's `ENG-12` (or the issue's UUID),
/// GitHub's `owner/repo#12`. Letters are put in the case the tracker writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketKey(String);

impl TicketKey {
    /// `key` read as a key of a `kind` tracker; `None` when it is not one.
    pub fn parse(kind: TrackerKind, key: &str) -> Option<TicketKey> {
        let key = key.trim();
        if key.is_empty() || key.len() > 200 {
            return None;
        }
        let numbered = |key: &str, project: &dyn Fn(&str) -> bool| {
            key.rsplit_once('-').is_some_and(|(p, n)| {
                project(p)
                    && !n.is_empty()
                    && n.len() <= 18
                    && n.bytes().all(|b| b.is_ascii_digit())
            })
        };
        let parsed = match kind {
            // [A-Z][A-Z0-9_]+-\d+
            TrackerKind::Jira => {
                let key = key.to_ascii_uppercase();
                let project = |p: &str| {
                    p.len() >= 2
                        && p.starts_with(|c: char| c.is_ascii_uppercase())
                        && p.bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                };
                numbered(&key, &project).then_some(key)?
            }
            // [A-Z0-9]+-\d+, or the issue's UUID.
            TrackerKind::Linear => {
                if key.len() == 36 {
                    if let Ok(id) = uuid::Uuid::try_parse(key) {
                        return Some(TicketKey(id.hyphenated().to_string()));
                    }
                }
                let key = key.to_ascii_uppercase();
                let team = |p: &str| {
                    !p.is_empty()
                        && p.bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                };
                numbered(&key, &team).then_some(key)?
            }
            // owner/repo#12; GitHub's names are not case-sensitive, kept in lower case.
            TrackerKind::Github => {
                let (repo, n) = key.rsplit_once('#')?;
                let number =
                    !n.is_empty() && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit());
                (github::is_repo(repo) && number)
                    .then(|| format!("{}#{n}", repo.to_ascii_lowercase()))?
            }
        };
        Some(TicketKey(parsed))
    }

    /// What a key of a `kind` tracker looks like, for the error that refuses one.
    pub fn shape(kind: TrackerKind) -> &'static str {
        match kind {
            TrackerKind::Jira => "a Jira key such as OPS-12",
            TrackerKind::Linear => "a Linear key such as ENG-12 (or the issue's UUID)",
            TrackerKind::Github => "a GitHub issue such as acme/api#12",
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TicketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
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
    /// The whole story, the tracker's own answer included: for the log and the admin's
    /// Trackers page, never for a member.
    pub fn text(&self) -> &str {
        match self {
            Failure::Retry { error, .. } | Failure::Broken(error) | Failure::Refused(error) => {
                error
            }
        }
    }

    /// The HTTP status the tracker answered with, when it answered with an error
    /// (`judge` writes it first: `HTTP 404: …`).
    pub fn status(&self) -> Option<u16> {
        self.text()
            .strip_prefix("HTTP ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
    }

    /// What a member is told, in coe's words: what kind of failure, never what the
    /// tracker said (that is in the log and on the admin's Trackers page). It reads
    /// after "Jira refused the last change: ".
    pub fn words(&self) -> String {
        let said = match (self, self.status()) {
            (Failure::Retry { .. }, Some(429 | 403)) => {
                "the tracker asked coe to wait; coe tries again"
            }
            (Failure::Retry { .. }, _) => "no answer yet; coe tries again",
            (_, Some(401 | 403)) => "the tracker refused coe's credentials",
            (_, Some(404 | 410)) => "the tracker did not find the ticket, project or repository",
            (Failure::Broken(_), _) => "the tracker's settings need an admin's look",
            (Failure::Refused(_), _) => "the tracker refused the request",
        };
        format!("{said} (an admin sees its answer under Admin → Trackers)")
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
    pub fn get(&self, key: &TicketKey) -> Answer<Remote> {
        match self.tracker.kind {
            TrackerKind::Jira => jira::get(self, key.as_str()),
            TrackerKind::Linear => linear::get(self, key.as_str()),
            TrackerKind::Github => github::get(self, key.as_str()),
        }
    }

    /// `key` (one coe stored from the tracker's answers) read by the tracker's
    /// grammar: a key that is not one goes into no URL.
    pub fn key(&self, key: &str) -> Answer<TicketKey> {
        TicketKey::parse(self.tracker.kind, key).ok_or_else(|| {
            Failure::Refused(format!(
                "{key:?} is not {}: coe sends nothing about it",
                TicketKey::shape(self.tracker.kind)
            ))
        })
    }

    pub fn comment(&self, remote: &Remote, text: &str) -> Answer<()> {
        self.key(&remote.key)?;
        match self.tracker.kind {
            TrackerKind::Jira => jira::comment(self, remote, text),
            TrackerKind::Linear => linear::comment(self, remote, text),
            TrackerKind::Github => github::comment(self, remote, text),
        }
    }

    /// Sets the due date (GitHub has none: nothing is done there).
    pub fn set_due(&self, remote: &Remote, due: NaiveDate) -> Answer<()> {
        self.key(&remote.key)?;
        match self.tracker.kind {
            TrackerKind::Jira => jira::set_due(self, remote, due),
            TrackerKind::Linear => linear::set_due(self, remote, due),
            TrackerKind::Github => Ok(()),
        }
    }

    /// Assigns the ticket to `assignee` (a user from `user`), or to nobody.
    pub fn assign(&self, remote: &Remote, assignee: Option<&str>) -> Answer<()> {
        self.key(&remote.key)?;
        match self.tracker.kind {
            TrackerKind::Jira => jira::assign(self, remote, assignee),
            TrackerKind::Linear => linear::assign(self, remote, assignee),
            TrackerKind::Github => github::assign(self, remote, assignee),
        }
    }

    /// Moves the ticket to a status that means `to` (Jira: an available transition
    /// to one; Linear: a state of its team; GitHub: open or closed with its reason).
    pub fn move_to(&self, remote: &Remote, to: Meaning) -> Answer<()> {
        self.key(&remote.key)?;
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
    fn keys_are_read_by_each_tracker_s_grammar() {
        let key = |kind, k: &str| TicketKey::parse(kind, k).map(|k| k.to_string());
        assert_eq!(
            key(TrackerKind::Jira, " ops-12 ").as_deref(),
            Some("OPS-12")
        );
        assert_eq!(key(TrackerKind::Jira, "A_1-7").as_deref(), Some("A_1-7"));
        for bad in [
            r"..\..\..\..\rest\api\3\myself",
            r"\\evil.test\x",
            "../../rest/api/3/myself",
            "OPS-1/../x",
            "OPS-1?x",
            "OPS-1#x",
            "O-1",
            "1OPS-1",
            "OPS-",
            "OPS-1x",
            "%2e%2e",
            "",
        ] {
            assert_eq!(key(TrackerKind::Jira, bad), None, "{bad}");
        }
        assert_eq!(
            key(TrackerKind::Linear, "eng-12").as_deref(),
            Some("ENG-12")
        );
        assert_eq!(key(TrackerKind::Linear, "E2-1").as_deref(), Some("E2-1"));
        assert_eq!(
            key(TrackerKind::Linear, "0B0A0C0D-1234-4abc-8def-0123456789AB").as_deref(),
            Some("0b0a0c0d-1234-4abc-8def-0123456789ab")
        );
        for bad in [
            r"..\graphql",
            "ENG_1-2",
            "ENG-1 2",
            "ENG-1\n2",
            "{0b0a0c0d-1234-4abc-8def-0123456789ab}",
        ] {
            assert_eq!(key(TrackerKind::Linear, bad), None, "{bad}");
        }
        assert_eq!(
            key(TrackerKind::Github, "Acme/API#12").as_deref(),
            Some("acme/api#12")
        );
        for bad in [
            "../..#1",
            "acme/api/../x#1",
            r"acme\api#1",
            "acme/api#1/x",
            "acme/api",
            "acme#1",
        ] {
            assert_eq!(key(TrackerKind::Github, bad), None, "{bad}");
        }
    }

    #[test]
    fn a_path_segment_is_encoded_whole_and_never_a_dot_segment() {
        assert_eq!(segment("OPS-12").as_deref(), Ok("OPS-12"));
        assert_eq!(
            segment(r"a\b/c?d#e%f g").as_deref(),
            Ok("a%5Cb%2Fc%3Fd%23e%25f%20g")
        );
        assert_eq!(segment("a.b_c~d").as_deref(), Ok("a.b_c~d"));
        for bad in ["", ".", ".."] {
            assert!(segment(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_member_is_told_what_failed_in_words_never_the_tracker_s() {
        let said = "{\"secret\": \"AKIA0123456789\"}";
        for (status, words) in [
            (404, "did not find"),
            (401, "refused coe's credentials"),
            (403, "refused coe's credentials"),
            (400, "refused the request"),
            (503, "coe tries again"),
        ] {
            let failure = judge(status, None, said);
            assert_eq!(failure.status(), Some(status));
            assert!(failure.text().contains("AKIA"));
            let told = failure.words();
            assert!(
                told.contains(words) && !told.contains("AKIA"),
                "{status}: {told}"
            );
        }
        let own = Failure::Refused("the workflow offers OPS-1 no transition".into());
        assert_eq!(own.status(), None);
        assert!(own.words().contains("refused the request"));
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
