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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn received() -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_800_000_000, 0)
            .map(|t| t.naive_utc())
            .unwrap_or_default()
    }

    /// Arbitrary JSON, biased towards the keys the parsers look for, so that the
    /// generated documents get past the first checks and into the interesting code.
    fn json_value() -> impl Strategy<Value = Value> {
        let keys = prop::sample::select(vec![
            "alerts",
            "status",
            "labels",
            "annotations",
            "startsAt",
            "endsAt",
            "fingerprint",
            "groupKey",
            "event",
            "id",
            "event_type",
            "occurred_at",
            "data",
            "priority",
            "urgency",
            "action",
            "alert",
            "alertId",
            "createdAt",
            "updatedAt",
            "Type",
            "MessageId",
            "Message",
            "NewStateValue",
            "StateChangeTime",
            "AlarmName",
            "issue",
            "level",
            "firstSeen",
            "dedup_key",
            "severity",
            "started_at",
            "title",
            "x",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop::sample::select(vec![
                "firing",
                "resolved",
                "incident.triggered",
                "incident.resolved",
                "Create",
                "Close",
                "Notification",
                "ALARM",
                "OK",
                "2026-11-29T10:00:00Z",
                "0001-01-01T00:00:00Z",
                "9999-12-31T23:59:59.999999999+14:00",
                "critical",
                "P1",
                "",
                "\u{0}",
            ])
            .prop_map(Value::from),
            ".{0,20}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(keys.clone().prop_map(str::to_owned), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let map = SeverityMap::default();
            for source in Source::ALL {
                let _ = parse(source, &bytes, &map, received());
            }
            let _ = generic::parse(&bytes, &map, received());
        }

        #[test]
        fn arbitrary_json_never_panics_and_events_are_clean(value in json_value()) {
            let map = SeverityMap::default();
            let bytes = serde_json::to_vec(&value).unwrap_or_default();
            for source in Source::ALL {
                if let Ok(parsed) = parse(source, &bytes, &map, received()) {
                    for event in parsed.events {
                        prop_assert!(!event.title.is_empty());
                        prop_assert!(!event.title.contains('\0'));
                        prop_assert!(event.links.iter().all(|l| l.starts_with("http")));
                        prop_assert!(event.dedup_key.len() <= 512);
                    }
                }
            }
            if let Ok(events) = generic::parse(&bytes, &map, received()) {
                for event in events {
                    prop_assert!(!event.title.contains('\0') && !event.dedup_key.contains('\0'));
                    prop_assert!(event.labels.iter().all(|(k, v)| !k.contains('\0') && !v.contains('\0')));
                }
            }
        }
    }
}
