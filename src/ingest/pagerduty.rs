//! PagerDuty Webhooks V3. Incident events become failure events; other event
//! types are acknowledged and ignored (PagerDuty disables subscriptions that fail).

use serde::Deserialize;
use serde_json::Value;

use super::common::{id_string, required_time};
use super::Parsed;
use crate::domain::event::web_links;
use crate::domain::{EventKind, EventStatus, FailureEvent, SeverityMap};
use crate::json::{self, JsonError};

#[derive(Debug, Deserialize)]
struct Envelope {
    event: Event,
}

#[derive(Debug, Deserialize)]
struct Event {
    id: String,
    event_type: String,
    occurred_at: String,
    #[serde(default)]
    agent: Value,
    #[serde(default)]
    data: Value,
}

pub fn parse(body: &[u8], severities: &SeverityMap) -> Result<Parsed, JsonError> {
    let envelope: Envelope = json::parse(body)?;
    let event = envelope.event;
    let (kind, status) = match event.event_type.as_str() {
        "incident.triggered" | "incident.reopened" => (EventKind::Fired, EventStatus::Firing),
        "incident.acknowledged" => (EventKind::Acknowledged, EventStatus::Firing),
        "incident.priority_updated" => (EventKind::Updated, EventStatus::Firing),
        "incident.resolved" => (EventKind::Resolved, EventStatus::Resolved),
        other => {
            return Ok(Parsed::ignored(format!(
                "PagerDuty event type {other} is not about failures"
            )))
        }
    };
    let occurred_at = required_time(&event.occurred_at, "event.occurred_at")?;
    let data = &event.data;
    let incident_id = id_string(&data["id"])
        .ok_or_else(|| JsonError::field("event.data.id", "is required for incident events"))?;
    let text = |v: &Value| {
        v.as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let priority = text(&data["priority"]["summary"]);
    let urgency = text(&data["urgency"]);
    let severity = priority
        .as_deref()
        .and_then(|p| SeverityMap::lookup(&severities.pagerduty_priority, p))
        .or_else(|| {
            urgency
                .as_deref()
                .and_then(|u| SeverityMap::lookup(&severities.pagerduty_urgency, u))
        })
        .unwrap_or(severities.default);
    let started_at = match text(&data["created_at"]) {
        Some(raw) => required_time(&raw, "event.data.created_at")?,
        None => occurred_at,
    };
    let mut labels = std::collections::BTreeMap::new();
    labels.insert("event_type".to_owned(), event.event_type.clone());
    if let Some(n) = id_string(&data["number"]) {
        labels.insert("incident_number".to_owned(), n);
    }
    if let Some(p) = &priority {
        labels.insert("priority".to_owned(), p.clone());
    }
    if let Some(u) = &urgency {
        labels.insert("urgency".to_owned(), u.clone());
    }
    if let Some(agent) = text(&event.agent["summary"]) {
        labels.insert("agent".to_owned(), agent);
    }
    Ok(Parsed {
        events: vec![FailureEvent {
            source: "pagerduty".into(),
            dedup_key: incident_id.clone(),
            group_key: format!("pagerduty:{incident_id}"),
            // Each webhook event has its own id: the occurrence.
            occurrence_key: event.id,
            kind,
            status,
            title: text(&data["title"]).unwrap_or_default(),
            service: text(&data["service"]["summary"]),
            severity,
            started_at,
            ended_at: (status == EventStatus::Resolved).then_some(occurred_at),
            description: text(&data["description"]),
            labels,
            annotations: Default::default(),
            links: web_links(text(&data["html_url"])),
        }],
        ..Parsed::default()
    })
}
