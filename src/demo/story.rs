//! The made-up organisation the demo fills an empty database with: its people, the
//! month of incidents (where each came from, how far its COE got), the writeups, the
//! 5 whys and the corrective actions. Plain data and the events it turns into; the
//! seeding through the services is `demo::Seeder`.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDateTime};

use super::DOMAIN;
use crate::domain::event::{EventKind, EventStatus, FailureEvent};
use crate::domain::Severity;
use crate::services::coe::coes::{self as coe_service, WhyChainInput};

/// The organisation: (login, name, team, manager).
pub(super) const PEOPLE: [(&str, &str, &str, Option<&str>); 12] = [
    ("dana", "Dana Okafor", "engineering", None),
    ("maria", "Maria Lopez", "payments", Some("dana")),
    ("sam", "Sam Whitfield", "search", Some("dana")),
    ("lee", "Lee Park", "platform", Some("dana")),
    ("alice", "Alice Moreau", "payments", Some("maria")),
    ("bob", "Bob Lindqvist", "payments", Some("maria")),
    ("chen", "Chen Wei", "payments", Some("maria")),
    ("priya", "Priya Raman", "search", Some("sam")),
    ("omar", "Omar Haddad", "search", Some("sam")),
    ("jo", "Jo Brennan", "platform", Some("lee")),
    ("kim", "Kim Tanaka", "platform", Some("lee")),
    ("ravi", "Ravi Shah", "platform", Some("lee")),
];

/// The service map an admin kept (Admin → Ownership): service, owner, team, default
/// reviewer, what it depends on. `reporting` is left out: the page offers to give it
/// an owner.
pub(super) const SERVICE_MAP: [(&str, &str, &str, &str, &str); 6] = [
    ("checkout", "alice", "payments", "maria", "payments-api"),
    ("payments-api", "chen", "payments", "maria", "orders-db"),
    ("orders-db", "jo", "platform", "lee", ""),
    ("search", "priya", "search", "sam", ""),
    ("platform", "kim", "platform", "lee", ""),
    ("cdn", "ravi", "platform", "lee", ""),
];

/// One incident of the month: where it came from, what it was, and how far its COE got.
pub(super) struct Scenario {
    pub(super) source: &'static str,
    pub(super) group: &'static str,
    pub(super) service: &'static str,
    pub(super) title: &'static str,
    pub(super) alert: &'static str,
    pub(super) severity: Severity,
    /// When it started, in days before now.
    pub(super) days_ago: i64,
    /// How long it lasted; `None` while it still fires.
    pub(super) minutes: Option<i64>,
    /// How many alert events, on how many hosts.
    pub(super) events: usize,
    pub(super) hosts: usize,
    pub(super) coe: Option<Writeup>,
}

/// How far a scenario's COE gets, and who writes it.
pub(super) struct Writeup {
    pub(super) owner: &'static str,
    pub(super) reviewer: &'static str,
    pub(super) stage: Stage,
    pub(super) actions: &'static [DemoAction],
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stage {
    /// Opened by the alert and left as it is.
    Untouched,
    /// Partly written.
    Started,
    InReview,
    Approved,
    Closed,
}

/// A corrective action, its due date relative to today and where it stands.
pub(super) struct DemoAction {
    pub(super) title: &'static str,
    pub(super) owner: &'static str,
    pub(super) kind: &'static str,
    pub(super) priority: &'static str,
    pub(super) due_in_days: i64,
    pub(super) outcome: Outcome,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Open,
    InProgress,
    /// Done this many days after its due date (negative: before).
    DoneLate(i64),
    WontDo,
    /// Its due date moved once, with a reason.
    Moved,
}

pub(super) const CHECKOUT_ACTIONS: &[DemoAction] = &[
    DemoAction {
        title: "Alert on checkout error rate per payment provider",
        owner: "alice",
        kind: "detect",
        priority: "high",
        due_in_days: -20,
        outcome: Outcome::DoneLate(-2),
    },
    DemoAction {
        title: "Retry provider timeouts with jittered backoff",
        owner: "bob",
        kind: "prevent",
        priority: "high",
        due_in_days: -12,
        outcome: Outcome::DoneLate(3),
    },
];

pub(super) const PAYMENTS_ACTIONS: &[DemoAction] = &[
    DemoAction {
        title: "Cap the payments API connection pool per pod",
        owner: "chen",
        kind: "prevent",
        priority: "high",
        due_in_days: -18,
        outcome: Outcome::Open,
    },
    DemoAction {
        title: "Dashboard of p99 latency by dependency",
        owner: "alice",
        kind: "diagnose",
        priority: "medium",
        due_in_days: 3,
        outcome: Outcome::InProgress,
    },
    DemoAction {
        title: "Runbook: shedding load from the payments API",
        owner: "bob",
        kind: "mitigate",
        priority: "medium",
        due_in_days: -9,
        outcome: Outcome::DoneLate(4),
    },
];

pub(super) const SEARCH_ACTIONS: &[DemoAction] = &[
    DemoAction {
        title: "Page on index lag above 5 minutes, not 10",
        owner: "priya",
        kind: "detect",
        priority: "high",
        due_in_days: -3,
        outcome: Outcome::InProgress,
    },
    DemoAction {
        title: "Split the indexer queue by tenant",
        owner: "omar",
        kind: "prevent",
        priority: "medium",
        due_in_days: 16,
        outcome: Outcome::Moved,
    },
    DemoAction {
        title: "Rewrite the indexer in another language",
        owner: "omar",
        kind: "prevent",
        priority: "low",
        due_in_days: 30,
        outcome: Outcome::WontDo,
    },
];

pub(super) const DATABASE_ACTIONS: &[DemoAction] = &[
    DemoAction {
        title: "Move the nightly report query to the read replica",
        owner: "jo",
        kind: "prevent",
        priority: "high",
        due_in_days: 10,
        outcome: Outcome::Open,
    },
    DemoAction {
        title: "Alarm on orders-db CPU credit balance",
        owner: "kim",
        kind: "detect",
        priority: "medium",
        due_in_days: 5,
        outcome: Outcome::Open,
    },
];

pub(super) const NO_ACTIONS: &[DemoAction] = &[];

pub(super) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            source: "alertmanager",
            group: "checkout-errors",
            service: "checkout",
            title: "Checkout error rate above 5%",
            alert: "CheckoutErrorRate",
            severity: Severity::Sev2,
            days_ago: 29,
            minutes: Some(48),
            events: 6,
            hosts: 3,
            coe: Some(Writeup {
                owner: "alice",
                reviewer: "maria",
                stage: Stage::Closed,
                actions: CHECKOUT_ACTIONS,
            }),
        },
        Scenario {
            source: "pagerduty",
            group: "payments-latency",
            service: "payments-api",
            title: "Payments API p99 latency above 2 s",
            alert: "PaymentsLatency",
            severity: Severity::Sev1,
            days_ago: 24,
            minutes: Some(95),
            events: 12,
            hosts: 6,
            coe: Some(Writeup {
                owner: "chen",
                reviewer: "maria",
                stage: Stage::Approved,
                actions: PAYMENTS_ACTIONS,
            }),
        },
        Scenario {
            source: "grafana",
            group: "search-index-lag",
            service: "search",
            title: "Search index lag above 10 minutes",
            alert: "IndexLag",
            severity: Severity::Sev2,
            days_ago: 17,
            minutes: Some(130),
            events: 8,
            hosts: 4,
            coe: Some(Writeup {
                owner: "priya",
                reviewer: "sam",
                stage: Stage::Approved,
                actions: SEARCH_ACTIONS,
            }),
        },
        Scenario {
            source: "cloudwatch",
            group: "orders-db-cpu",
            service: "orders-db",
            title: "orders-db CPU above 90%",
            alert: "OrdersDbCpu",
            severity: Severity::Sev2,
            days_ago: 11,
            minutes: Some(70),
            events: 4,
            hosts: 1,
            coe: Some(Writeup {
                owner: "jo",
                reviewer: "lee",
                stage: Stage::InReview,
                actions: DATABASE_ACTIONS,
            }),
        },
        Scenario {
            source: "sentry",
            group: "cart-typeerror",
            service: "checkout",
            title: "TypeError: cart.total is undefined",
            alert: "CartTypeError",
            severity: Severity::Sev3,
            days_ago: 8,
            minutes: Some(20),
            events: 3,
            hosts: 3,
            coe: None,
        },
        Scenario {
            source: "opsgenie",
            group: "search-cluster-red",
            service: "search",
            title: "Search cluster health red",
            alert: "ClusterRed",
            severity: Severity::Sev1,
            days_ago: 9,
            minutes: Some(40),
            events: 5,
            hosts: 5,
            coe: Some(Writeup {
                owner: "omar",
                reviewer: "sam",
                stage: Stage::Started,
                actions: NO_ACTIONS,
            }),
        },
        Scenario {
            source: "alertmanager",
            group: "checkout-errors",
            service: "checkout",
            title: "Checkout error rate above 5%",
            alert: "CheckoutErrorRate",
            severity: Severity::Sev2,
            days_ago: 3,
            minutes: Some(25),
            events: 4,
            hosts: 2,
            coe: Some(Writeup {
                owner: "bob",
                reviewer: "maria",
                stage: Stage::Untouched,
                actions: NO_ACTIONS,
            }),
        },
        Scenario {
            source: "alertmanager",
            group: "kube-node-memory",
            service: "platform",
            title: "Kubernetes nodes out of memory",
            alert: "NodeMemoryPressure",
            severity: Severity::Sev2,
            days_ago: 1,
            minutes: None,
            events: 400,
            hosts: 40,
            coe: Some(Writeup {
                owner: "ravi",
                reviewer: "lee",
                stage: Stage::Untouched,
                actions: NO_ACTIONS,
            }),
        },
        Scenario {
            source: "grafana",
            group: "cdn-hit-ratio",
            service: "cdn",
            title: "CDN cache hit ratio below 80%",
            alert: "CdnHitRatio",
            severity: Severity::Sev4,
            days_ago: 14,
            minutes: Some(15),
            events: 2,
            hosts: 1,
            coe: None,
        },
        Scenario {
            source: "pagerduty",
            group: "batch-late",
            service: "reporting",
            title: "Nightly batch finished late",
            alert: "BatchLate",
            severity: Severity::Sev3,
            days_ago: 5,
            minutes: Some(60),
            events: 1,
            hosts: 1,
            coe: None,
        },
    ]
}

pub(super) fn events_of(s: &Scenario, now: NaiveDateTime) -> Vec<FailureEvent> {
    let start = now - Duration::days(s.days_ago) - Duration::hours(3);
    let mut out = Vec::new();
    for n in 0..s.events {
        let host = format!("{}-{}", s.service, n % s.hosts.max(1) + 1);
        // Spread over the first part of the incident, a minute or so apart.
        let at =
            start + Duration::seconds((n as i64 * 37) % (s.minutes.unwrap_or(90) * 60 / 2 + 1));
        let labels = BTreeMap::from([
            ("alertname".to_owned(), s.alert.to_owned()),
            ("instance".to_owned(), host.clone()),
            ("service".to_owned(), s.service.to_owned()),
        ]);
        let firing = FailureEvent {
            source: s.source.to_owned(),
            dedup_key: format!("{}-{host}-{}", s.alert, n / s.hosts.max(1)),
            group_key: s.group.to_owned(),
            occurrence_key: FailureEvent::default_occurrence_key(
                EventStatus::Firing,
                &at.to_string(),
            ),
            kind: EventKind::Fired,
            status: EventStatus::Firing,
            title: s.title.to_owned(),
            service: Some(s.service.to_owned()),
            severity: s.severity,
            started_at: at,
            ended_at: None,
            description: Some(format!("{} ({} on {host})", s.title, s.alert)),
            labels,
            annotations: BTreeMap::new(),
            links: vec![format!("https://grafana.{DOMAIN}/d/{}", s.group)],
        };
        out.push(firing.clone());
        if let Some(minutes) = s.minutes {
            let end = start + Duration::minutes(minutes);
            out.push(FailureEvent {
                occurrence_key: FailureEvent::default_occurrence_key(
                    EventStatus::Resolved,
                    &at.to_string(),
                ),
                kind: EventKind::Resolved,
                status: EventStatus::Resolved,
                ended_at: Some(end),
                ..firing
            });
        }
    }
    out
}

/// The words of a written COE, from its scenario.
pub(super) fn sections(s: &Scenario) -> Vec<(&'static str, String)> {
    let minutes = s.minutes.unwrap_or(60);
    vec![
        (
            "summary",
            format!(
                "{} for {minutes} minutes. {} alerts fired on {} hosts of {}; the on-call engineer \
                 mitigated by rolling back the change that preceded it.",
                s.title, s.events, s.hosts, s.service
            ),
        ),
        (
            "impact",
            format!(
                "About {} customers saw errors or slow pages for {minutes} minutes; 3 support \
                 tickets; no data was lost.",
                120 * s.events
            ),
        ),
        (
            "detection",
            format!(
                "The {} alert fired 4 minutes after the first errors and paged the on-call engineer.",
                s.alert
            ),
        ),
        (
            "diagnosis",
            format!(
                "The dashboards of {} showed the change rolled out at the start; its diff held a \
                 configuration that halved a connection limit.",
                s.service
            ),
        ),
        (
            "mitigation",
            "Rolled the change back; errors fell to normal within 6 minutes of the rollback.".into(),
        ),
        (
            "prevention",
            "Configuration changes get the same canary stage as code, and the limit is checked \
             at deploy time."
                .into(),
        ),
        (
            "lessons",
            "Configuration is code: it needs the same review, canary and alarms.".into(),
        ),
    ]
}

pub(super) fn whys(s: &Scenario) -> WhyChainInput {
    let why = |why: String, because: &str| coe_service::Why {
        why,
        because: because.to_owned(),
    };
    WhyChainInput {
        steps: vec![
            why(
                format!("Why did {} fail?", s.service),
                "Requests queued behind a connection pool that was too small.",
            ),
            why(
                "Why was the pool too small?".into(),
                "A configuration change halved it, and it shipped to every host at once.",
            ),
            why(
                "Why did it ship to every host at once?".into(),
                "Configuration changes skip the canary stage that code changes go through.",
            ),
        ],
        // The stories differ in what contributed most, so the dashboard has a spread.
        factor: Some(
            ["configuration", "change", "deployment", "capacity"][s.service.len() % 4].to_owned(),
        ),
    }
}
