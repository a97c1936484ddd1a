//! The settings of the issue trackers corrective actions are kept in step with:
//! `[[trackers]]` (Jira Cloud, Linear, GitHub Issues), where each team's or service's
//! actions go, and how the tracker's statuses read in coe.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::secret::Secret;
use super::ConfigError;

/// An issue tracker.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum TrackerKind {
    /// Jira Cloud's REST API v3 (an account's email and API token).
    Jira,
    /// Linear's GraphQL API (an API key).
    Linear,
    /// GitHub's REST API (a token), or GitHub Enterprise Server's.
    Github,
}

impl TrackerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TrackerKind::Jira => "jira",
            TrackerKind::Linear => "linear",
            TrackerKind::Github => "github",
        }
    }

    /// How people call it.
    pub fn label(self) -> &'static str {
        match self {
            TrackerKind::Jira => "Jira",
            TrackerKind::Linear => "Linear",
            TrackerKind::Github => "GitHub",
        }
    }

    fn default_base_url(self) -> Option<&'static str> {
        match self {
            TrackerKind::Jira => None,
            TrackerKind::Linear => Some("https://api.linear.app"),
            TrackerKind::Github => Some("https://api.github.com"),
        }
    }
}

/// What a tracker's status means to an action.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Meaning {
    Open,
    InProgress,
    Done,
    WontDo,
    /// A status coe leaves alone (a review column, say).
    Ignore,
}

impl Meaning {
    pub fn as_str(self) -> &'static str {
        match self {
            Meaning::Open => "open",
            Meaning::InProgress => "in_progress",
            Meaning::Done => "done",
            Meaning::WontDo => "wont_do",
            Meaning::Ignore => "ignore",
        }
    }

    pub fn parse(s: &str) -> Option<Meaning> {
        [
            Meaning::Open,
            Meaning::InProgress,
            Meaning::Done,
            Meaning::WontDo,
            Meaning::Ignore,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// When an action gets a ticket.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CreateWhen {
    /// Every action routed to the tracker, when it is created.
    #[default]
    Automatic,
    /// Only when someone asks ("Create the ticket", the API).
    OnRequest,
}

/// Where the actions of some teams or services go.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrackerRoute {
    /// coe teams (the owner's).
    #[serde(default)]
    pub teams: Vec<String>,
    /// Services (the COE's).
    #[serde(default)]
    pub services: Vec<String>,
    /// A Jira project key, a Linear team key, a GitHub `owner/repo`.
    pub place: String,
    /// Jira: the issue type there (else the tracker's).
    #[serde(default)]
    pub issue_type: Option<String>,
}

/// One tracker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrackerSettings {
    /// A name of its own: shown to people, in the webhook's URL.
    pub name: String,
    pub kind: TrackerKind,
    /// The Jira Cloud site; Linear's API; GitHub's API (or a GitHub Enterprise
    /// Server's `https://HOST/api/v3`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Jira: the account whose API token `token` is.
    #[serde(default)]
    pub user: Option<String>,
    /// The Jira API token, Linear API key or GitHub token.
    pub token: Secret,
    /// The secret webhook deliveries are signed with (Linear and GitHub: required).
    #[serde(default)]
    pub webhook_secret: Option<Secret>,
    /// Where actions no route takes go; none: only routed ones.
    #[serde(default)]
    pub place: Option<String>,
    /// Jira: the issue type of new tickets.
    #[serde(default = "default_issue_type")]
    pub issue_type: String,
    #[serde(default)]
    pub create: CreateWhen,
    /// How often the linked tickets' statuses are read back.
    #[serde(default = "default_reconcile_secs")]
    pub reconcile_secs: u64,
    /// How long the tracker may take to answer one request.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub routes: Vec<TrackerRoute>,
    /// Status names read otherwise than by their category.
    #[serde(default)]
    pub statuses: BTreeMap<String, Meaning>,
}

fn default_issue_type() -> String {
    "Task".into()
}

fn default_reconcile_secs() -> u64 {
    900
}

fn default_timeout_secs() -> u64 {
    10
}

/// Where an action goes: a tracker and a place in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination<'a> {
    pub tracker: &'a TrackerSettings,
    pub place: String,
    pub issue_type: String,
}

impl TrackerSettings {
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .or(self.kind.default_base_url())
            .unwrap_or_default()
            .trim_end_matches('/')
    }

    /// Where this tracker takes an action of `team` and `service`: its first route
    /// that names either, else its `place`.
    pub fn destination(
        &self,
        team: Option<&str>,
        service: Option<&str>,
    ) -> Option<Destination<'_>> {
        let of = |list: &[String], value: Option<&str>| {
            value.is_some_and(|v| list.iter().any(|x| x.eq_ignore_ascii_case(v)))
        };
        let (place, issue_type) = match self
            .routes
            .iter()
            .find(|r| of(&r.teams, team) || of(&r.services, service))
        {
            Some(route) => (route.place.clone(), route.issue_type.clone()),
            None => (self.place.clone()?, None),
        };
        Some(Destination {
            tracker: self,
            place,
            issue_type: issue_type.unwrap_or_else(|| self.issue_type.clone()),
        })
    }
}

impl TrackerSettings {
    /// Every place it sends actions to: its `place` and its routes'.
    pub fn places(&self) -> Vec<&str> {
        let mut places: Vec<&str> = self.place.iter().map(String::as_str).collect();
        for r in &self.routes {
            if !places.iter().any(|p| p.eq_ignore_ascii_case(&r.place)) {
                places.push(&r.place);
            }
        }
        places
    }
}

/// Where an action of `team` and `service` goes: the first tracker that takes it.
pub fn destination<'a>(
    trackers: &'a [TrackerSettings],
    team: Option<&str>,
    service: Option<&str>,
) -> Option<Destination<'a>> {
    trackers.iter().find_map(|t| t.destination(team, service))
}

/// `[[trackers]]`: unique names, what each kind needs, places in their kind's form.
pub fn validate(trackers: &[TrackerSettings]) -> Result<(), ConfigError> {
    let mut names = std::collections::HashSet::new();
    for (i, t) in trackers.iter().enumerate() {
        let invalid = |field: &str, value: &str, expected: &str| ConfigError::Entry {
            key: "trackers",
            index: i,
            name: t.name.clone(),
            field: field.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let name_ok = !t.name.is_empty()
            && t.name.len() <= 64
            && t.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
        if !name_ok {
            return Err(invalid(
                "name",
                &t.name,
                "a name of letters, digits, - _ . (1 to 64)",
            ));
        }
        if !names.insert(t.name.to_ascii_lowercase()) {
            return Err(invalid("name", &t.name, "a name no other tracker has"));
        }
        let base = t.base_url();
        if !url::Url::parse(base).is_ok_and(|u| super::https_or_loopback(&u)) {
            return Err(invalid(
                "base_url",
                base,
                "the tracker's https URL (plain http only on loopback); Jira needs its site, such as https://acme.atlassian.net",
            ));
        }
        if t.token.expose().trim().is_empty() {
            return Err(invalid("token", "", "the tracker's API token or key"));
        }
        if t.kind == TrackerKind::Jira && t.user.as_deref().is_none_or(|u| !u.contains('@')) {
            return Err(invalid(
                "user",
                t.user.as_deref().unwrap_or(""),
                "the email of the Jira account whose API token this is",
            ));
        }
        if t.webhook_secret
            .as_ref()
            .is_none_or(|s| s.expose().trim().len() < 16)
        {
            return Err(invalid(
                "webhook_secret",
                "",
                "the secret its webhook deliveries are signed with, 16 characters or more \
                 (Jira: the secret of an admin webhook; Linear and GitHub: the webhook's secret)",
            ));
        }
        let places = t.place.iter().map(|p| ("place".to_owned(), p)).chain(
            t.routes
                .iter()
                .enumerate()
                .map(|(r, route)| (format!("routes[{r}].place"), &route.place)),
        );
        for (field, place) in places {
            if let Some(expected) = bad_place(t.kind, place) {
                return Err(invalid(&field, place, expected));
            }
        }
        if !(60..=86_400).contains(&t.reconcile_secs) {
            return Err(invalid(
                "reconcile_secs",
                &t.reconcile_secs.to_string(),
                "60 to 86400 seconds",
            ));
        }
        if !(1..=120).contains(&t.timeout_secs) {
            return Err(invalid(
                "timeout_secs",
                &t.timeout_secs.to_string(),
                "1 to 120 seconds",
            ));
        }
    }
    Ok(())
}

/// What is wrong with `place` for a tracker of `kind`, if anything.
fn bad_place(kind: TrackerKind, place: &str) -> Option<&'static str> {
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match kind {
        TrackerKind::Jira | TrackerKind::Linear if !word(place) => {
            Some("a project or team key, such as OPS")
        }
        TrackerKind::Github => match place.split_once('/') {
            Some((owner, repo)) if word(owner) && word(repo) => None,
            _ => Some("a repository as owner/repo"),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(kind: TrackerKind) -> TrackerSettings {
        TrackerSettings {
            name: "t".into(),
            kind,
            base_url: Some("https://acme.atlassian.net".into()),
            user: Some("bot@acme.test".into()),
            token: Secret::from("token"),
            webhook_secret: Some(Secret::from("a-secret-of-16-chars")),
            place: Some("OPS".into()),
            issue_type: "Task".into(),
            create: CreateWhen::Automatic,
            reconcile_secs: 900,
            timeout_secs: 10,
            routes: vec![TrackerRoute {
                teams: vec!["payments".into()],
                services: vec!["checkout".into()],
                place: "PAY".into(),
                issue_type: Some("Bug".into()),
            }],
            statuses: BTreeMap::new(),
        }
    }

    #[test]
    fn a_route_takes_its_teams_and_services_and_the_place_the_rest() {
        let t = tracker(TrackerKind::Jira);
        let d = t.destination(Some("Payments"), None).expect("routed");
        assert_eq!((d.place.as_str(), d.issue_type.as_str()), ("PAY", "Bug"));
        let d = t
            .destination(Some("search"), Some("checkout"))
            .expect("routed");
        assert_eq!(d.place, "PAY");
        let d = t.destination(Some("search"), None).expect("default");
        assert_eq!((d.place.as_str(), d.issue_type.as_str()), ("OPS", "Task"));
        let mut only_routed = t.clone();
        only_routed.place = None;
        assert!(only_routed.destination(Some("search"), None).is_none());
    }

    #[test]
    fn each_kind_is_checked_for_what_it_needs() {
        assert!(validate(&[tracker(TrackerKind::Jira)]).is_ok());
        let mut github = tracker(TrackerKind::Github);
        github.base_url = None;
        assert!(validate(&[github.clone()]).is_err(), "OPS is no repository");
        github.place = Some("acme/api".into());
        github.routes[0].place = "acme/pay".into();
        assert!(validate(&[github.clone()]).is_ok());
        github.webhook_secret = None;
        assert!(validate(&[github]).is_err());
        let mut jira = tracker(TrackerKind::Jira);
        jira.user = None;
        assert!(validate(&[jira]).is_err());
        let mut jira = tracker(TrackerKind::Jira);
        jira.webhook_secret = None;
        assert!(
            validate(&[jira]).is_err(),
            "unsigned deliveries would move actions"
        );
        let mut jira = tracker(TrackerKind::Jira);
        jira.base_url = Some("http://jira.example.com".into());
        assert!(validate(&[jira]).is_err());
        assert!(validate(&[tracker(TrackerKind::Jira), tracker(TrackerKind::Jira)]).is_err());
    }
}
