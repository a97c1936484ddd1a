//! Opsgenie webhook: `Create` fires, `Close` resolves, every other action is ignored.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, SubsecRound};
use serde::Deserialize;
use serde_json::Value;

use super::common::{id_string, meaningful};
use super::Parsed;
use crate::domain::event::{from_millis, web_links};
use crate::domain::{EventKind, EventStatus, FailureEvent, SeverityMap};
use crate::json::{self, JsonError};

#[derive(Debug, Deserialize)]
struct Payload {
    action: String,
    #[serde(default)]
    alert: Option<Alert>,
}

#[derive(Debug, Deserialize)]
struct Alert {
    #[serde(rename = "alertId")]
    alert_id: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    alias: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    entity: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(rename = "tinyId", default)]
    tiny_id: Value,
    /// Milliseconds since the epoch.
    #[serde(rename = "createdAt", default)]
    created_at: Option<i64>,
    /// Nanoseconds since the epoch: above 2^53, so read as an integer, never a float.
    #[serde(rename = "updatedAt", default)]
    updated_at: Option<i64>,
    #[serde(default)]
    priority: Value,
    #[serde(default)]
    details: Option<BTreeMap<String, Value>>,
}

pub fn parse(
    body: &[u8],
    severities: &SeverityMap,
    received_at: NaiveDateTime,
) -> Result<Parsed, JsonError> {
    let payload: Payload = json::parse(body)?;
    let (kind, status) = match payload.action.as_str() {
        "Create" => (EventKind::Fired, EventStatus::Firing),
        "Close" => (EventKind::Resolved, EventStatus::Resolved),
        other => {
            return Ok(Parsed::ignored(format!(
                "Opsgenie action {other} is not a failure or its end"
            )))
        }
    };
    let alert = payload
        .alert
        .ok_or_else(|| JsonError::field("alert", "is required for Create and Close"))?;
    let priority = match &alert.priority {
        Value::Number(n) => Some(format!("P{n}")),
        Value::String(s) => Some(s.trim().to_owned()),
        _ => None,
    };
    let severity = priority
        .as_deref()
        .and_then(|p| SeverityMap::lookup(&severities.opsgenie, p))
        .unwrap_or(severities.default);
    let created = alert.created_at.and_then(from_millis);
    let updated = alert.updated_at.map(|ns| {
        DateTime::from_timestamp_nanos(ns)
            .naive_utc()
            .trunc_subsecs(6)
    });
    let started_at = created.unwrap_or(received_at);
    let key = meaningful(alert.alias.as_ref()).unwrap_or_else(|| alert.alert_id.clone());
    let mut labels = BTreeMap::new();
    for (name, value) in [
        ("entity", alert.entity.clone()),
        ("source", alert.source.clone()),
        ("priority", priority.clone()),
        ("tiny_id", id_string(&alert.tiny_id)),
        ("alert_id", Some(alert.alert_id.clone())),
    ] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            labels.insert(name.to_owned(), v);
        }
    }
    if let Some(tags) = alert.tags.as_ref().filter(|t| !t.is_empty()) {
        labels.insert("tags".to_owned(), tags.join(","));
    }
    let annotations: BTreeMap<String, String> = alert
        .details
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect();
    let links = annotations.values().cloned().collect::<Vec<_>>();
    Ok(Parsed {
        events: vec![FailureEvent {
            source: "opsgenie".into(),
            group_key: format!("opsgenie:{key}"),
            dedup_key: key,
            occurrence_key: format!("{}@{}", status.as_str(), alert.alert_id),
            kind,
            status,
            title: alert.message.unwrap_or_default(),
            service: meaningful(alert.entity.as_ref()),
            severity,
            started_at,
            ended_at: (status == EventStatus::Resolved).then(|| updated.unwrap_or(received_at)),
            description: meaningful(alert.description.as_ref()),
            labels,
            links: web_links(links),
            annotations,
        }],
        ..Parsed::default()
    })
}
