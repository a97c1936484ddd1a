//! Alert sources: each module turns one sender's payload, exactly as it sends it, into
//! normalized `FailureEvent`s. Pure functions of the bytes (plus the severity map and
//! the time received): no I/O, no database, so they can be fuzzed.

pub mod alertmanager;
pub mod cloudwatch;
mod common;
pub mod generic;
pub mod grafana;
pub mod opsgenie;
pub mod pagerduty;
pub mod sentry;
pub mod signature;

use std::fmt;

use chrono::NaiveDateTime;

use crate::domain::{FailureEvent, SeverityMap};
use crate::json::JsonError;

/// A sender whose own webhook format `coe` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Alertmanager,
    Grafana,
    Pagerduty,
    Opsgenie,
    Cloudwatch,
    Sentry,
}

impl Source {
    pub const ALL: [Source; 6] = [
        Source::Alertmanager,
        Source::Grafana,
        Source::Pagerduty,
        Source::Opsgenie,
        Source::Cloudwatch,
        Source::Sentry,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Alertmanager => "alertmanager",
            Source::Grafana => "grafana",
            Source::Pagerduty => "pagerduty",
            Source::Opsgenie => "opsgenie",
            Source::Cloudwatch => "cloudwatch",
            Source::Sentry => "sentry",
        }
    }

    pub fn parse(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// "alertmanager, grafana, …" for error messages.
    pub fn names() -> String {
        Source::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a delivery carried.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub events: Vec<FailureEvent>,
    /// The sender's id for this delivery when the payload carries one (SNS `MessageId`).
    pub delivery_id: Option<String>,
    /// Why the delivery was deliberately not turned into events (an event type that
    /// is not about failures); answered 2xx so that the sender does not retry.
    pub ignored: Option<String>,
    /// An SNS subscription handshake: the URL to visit to confirm it.
    pub confirm_subscription: Option<String>,
}

impl Parsed {
    fn ignored(reason: impl Into<String>) -> Parsed {
        Parsed {
            ignored: Some(reason.into()),
            ..Parsed::default()
        }
    }
}

/// Parses one delivery from `source`.
pub fn parse(
    source: Source,
    body: &[u8],
    severities: &SeverityMap,
    received_at: NaiveDateTime,
) -> Result<Parsed, JsonError> {
    let parsed = match source {
        Source::Alertmanager => alertmanager::parse(body, severities),
        Source::Grafana => grafana::parse(body, severities),
        Source::Pagerduty => pagerduty::parse(body, severities),
        Source::Opsgenie => opsgenie::parse(body, severities, received_at),
        Source::Cloudwatch => cloudwatch::parse(body, severities),
        Source::Sentry => sentry::parse(body, severities, received_at),
    }?;
    Ok(Parsed {
        events: parsed.events.into_iter().map(common::sanitize).collect(),
        ..parsed
    })
}
