//! Prometheus Alertmanager webhook, version 4: several alerts per delivery.
//! Grafana's unified alerting sends the same shape with a few extra fields.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::common::{
    first_of, hash_labels, meaningful, null_as_default, optional_time, required_time,
};
use super::Parsed;
use crate::domain::event::web_links;
use crate::domain::{EventKind, EventStatus, FailureEvent, Severity, SeverityMap};
use crate::json::{self, JsonError};

/// The delivery. Unknown fields are ignored: senders add fields in new versions.
#[derive(Debug, Deserialize)]
pub(crate) struct Payload {
    #[serde(rename = "groupKey", default)]
    pub group_key: Option<String>,
    /// The group's status; older senders give no status per alert.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub receiver: Option<String>,
    #[serde(rename = "groupLabels", default, deserialize_with = "null_as_default")]
    pub group_labels: BTreeMap<String, String>,
    pub alerts: Vec<Alert>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Alert {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
    #[serde(rename = "startsAt")]
    pub starts_at: String,
    #[serde(rename = "endsAt", default)]
    pub ends_at: Option<String>,
    #[serde(rename = "generatorURL", default)]
    pub generator_url: Option<String>,
    #[serde(default)]
    pub fingerprint: Option<String>,
    #[serde(rename = "dashboardURL", default)]
    pub dashboard_url: Option<String>,
    #[serde(rename = "panelURL", default)]
    pub panel_url: Option<String>,
}

pub fn parse(body: &[u8], severities: &SeverityMap) -> Result<Parsed, JsonError> {
    let payload: Payload = json::parse(body)?;
    Ok(Parsed {
        events: events(
            payload,
            "alertmanager",
            &severities.alertmanager,
            severities.default,
        )?,
        ..Parsed::default()
    })
}

/// Normalizes each alert of an Alertmanager-shaped payload.
pub(crate) fn events(
    payload: Payload,
    source: &str,
    severity_table: &BTreeMap<String, Severity>,
    default_severity: Severity,
) -> Result<Vec<FailureEvent>, JsonError> {
    let group_key = meaningful(payload.group_key.as_ref()).unwrap_or_else(|| {
        format!(
            "{}:{}",
            payload.receiver.as_deref().unwrap_or(""),
            hash_labels(&payload.group_labels)
        )
    });
    let group_status = payload.status.clone();
    payload
        .alerts
        .into_iter()
        .enumerate()
        .map(|(i, alert)| {
            let at = |f: &str| format!("alerts[{i}].{f}");
            let status = match alert.status.as_ref().or(group_status.as_ref()) {
                Some(s) => EventStatus::parse(s).map_err(|p| JsonError::field(at("status"), p))?,
                None => return Err(JsonError::field(at("status"), "is required")),
            };
            let started_at = required_time(&alert.starts_at, &at("startsAt"))?;
            // A firing alert's endsAt is a guess by the sender (or the zero time).
            let ended_at = match status {
                EventStatus::Firing => None,
                EventStatus::Resolved => optional_time(alert.ends_at.as_deref(), &at("endsAt"))?,
            };
            let severity = alert
                .labels
                .get("severity")
                .and_then(|s| SeverityMap::lookup(severity_table, s))
                .unwrap_or(default_severity);
            let dedup_key = meaningful(alert.fingerprint.as_ref())
                .unwrap_or_else(|| hash_labels(&alert.labels));
            let title = first_of(&alert.annotations, &["summary", "title"])
                .or_else(|| first_of(&alert.labels, &["alertname"]))
                .unwrap_or_default();
            let mut links = vec![];
            links.extend(alert.generator_url.clone());
            links.extend(alert.dashboard_url.clone());
            links.extend(alert.panel_url.clone());
            links.extend(
                alert
                    .annotations
                    .iter()
                    .filter(|(k, _)| k.to_ascii_lowercase().ends_with("url"))
                    .map(|(_, v)| v.clone()),
            );
            Ok(FailureEvent {
                source: source.to_owned(),
                occurrence_key: FailureEvent::default_occurrence_key(
                    status,
                    alert.starts_at.trim(),
                ),
                dedup_key,
                group_key: group_key.clone(),
                kind: match status {
                    EventStatus::Firing => EventKind::Fired,
                    EventStatus::Resolved => EventKind::Resolved,
                },
                status,
                title,
                service: first_of(&alert.labels, &["service", "job", "app"]),
                severity,
                started_at,
                ended_at,
                description: first_of(&alert.annotations, &["description", "message"]),
                links: web_links(links),
                labels: alert.labels,
                annotations: alert.annotations,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/webhooks/alertmanager/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn the_kube_prometheus_capture_normalizes() {
        let parsed = parse(
            &fixture("kube-prometheus-etcd-firing.json"),
            &SeverityMap::default(),
        )
        .expect("parses");
        let [event] = parsed.events.as_slice() else {
            panic!("one event expected")
        };
        assert_eq!(event.dedup_key, "bc6e3ddcbe61b398");
        assert_eq!(event.group_key, "{}:{namespace=\"kube-system\"}");
        assert_eq!(event.status, EventStatus::Firing);
        assert_eq!(event.severity, Severity::Sev3);
        assert_eq!(
            event.service.as_deref(),
            Some("kube-prometheus-stack-kube-etcd")
        );
        assert_eq!(event.started_at.to_string(), "2022-12-14 01:32:49.278");
        assert_eq!(event.ended_at, None);
        assert!(event.title.starts_with("etcd database size in use"));
        assert!(event.links.contains(
            &"https://etcd.io/docs/v3.5/op-guide/maintenance/#defragmentation".to_owned()
        ));
    }

    #[test]
    fn a_missing_start_is_named() {
        let body = br#"{"alerts":[{"status":"firing","labels":{}}]}"#;
        let err = parse(body, &SeverityMap::default()).unwrap_err();
        assert_eq!(err, JsonError::field("alerts[0].startsAt", "is required"));
    }
}
