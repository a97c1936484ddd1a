//! Sentry: issue alert webhooks (`data.event`) and issue webhooks (`data.issue`:
//! created, resolved, unresolved). Other resources are acknowledged and ignored.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::Value;

use super::common::{id_string, optional_time};
use super::Parsed;
use crate::domain::event::web_links;
use crate::domain::{EventKind, EventStatus, FailureEvent, SeverityMap};
use crate::json::{self, JsonError};

#[derive(Debug, Deserialize)]
struct Payload {
    action: String,
    data: Value,
}

pub fn parse(
    body: &[u8],
    severities: &SeverityMap,
    received_at: NaiveDateTime,
) -> Result<Parsed, JsonError> {
    let payload: Payload = json::parse(body)?;
    let text = |v: &Value| {
        v.as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (node, path, kind, status) = if payload.data["issue"].is_object() {
        let (kind, status) = match payload.action.as_str() {
            "created" | "unresolved" => (EventKind::Fired, EventStatus::Firing),
            "resolved" => (EventKind::Resolved, EventStatus::Resolved),
            other => {
                return Ok(Parsed::ignored(format!(
                    "Sentry issue action {other} is not a failure or its end"
                )))
            }
        };
        (&payload.data["issue"], "data.issue", kind, status)
    } else if payload.data["event"].is_object() {
        (
            &payload.data["event"],
            "data.event",
            EventKind::Fired,
            EventStatus::Firing,
        )
    } else {
        return Ok(Parsed::ignored(
            "Sentry webhook without an issue or an event",
        ));
    };
    let is_event = path == "data.event";
    let issue_id = if is_event {
        id_string(&node["issue_id"]).or_else(|| id_string(&node["issue"]["id"]))
    } else {
        id_string(&node["id"])
    }
    .ok_or_else(|| {
        JsonError::field(
            format!("{path}.{}", if is_event { "issue_id" } else { "id" }),
            "is required",
        )
    })?;
    let first_seen = optional_time(
        text(&node["firstSeen"])
            .or_else(|| text(&node["datetime"]))
            .as_deref(),
        &format!("{path}.firstSeen"),
    )?;
    let last_seen = text(&node["lastSeen"]);
    let level = text(&node["level"]);
    let severity = level
        .as_deref()
        .and_then(|l| SeverityMap::lookup(&severities.sentry, l))
        .unwrap_or(severities.default);
    let project = text(&node["project"]["slug"])
        .or_else(|| text(&node["project"]))
        .or_else(|| id_string(&node["project"]));
    let occurrence = if is_event {
        format!(
            "triggered@{}",
            text(&node["event_id"]).unwrap_or_else(|| issue_id.clone())
        )
    } else {
        format!(
            "{}@{}",
            payload.action,
            last_seen.clone().unwrap_or_else(|| received_at.to_string())
        )
    };
    let mut labels = BTreeMap::new();
    for (name, value) in [
        ("level", level.clone()),
        ("project", project.clone()),
        ("short_id", text(&node["shortId"])),
        ("culprit", text(&node["culprit"])),
        ("platform", text(&node["platform"])),
        ("rule", text(&payload.data["triggered_rule"])),
        ("action", Some(payload.action.clone())),
    ] {
        if let Some(v) = value {
            labels.insert(name.to_owned(), v);
        }
    }
    let links = [
        text(&node["permalink"]),
        text(&node["web_url"]),
        text(&node["url"]),
    ];
    Ok(Parsed {
        events: vec![FailureEvent {
            source: "sentry".into(),
            group_key: format!("sentry:{issue_id}"),
            dedup_key: issue_id,
            occurrence_key: occurrence,
            kind,
            status,
            title: text(&node["title"]).unwrap_or_default(),
            service: project,
            severity,
            started_at: first_seen.unwrap_or(received_at),
            ended_at: (status == EventStatus::Resolved).then_some(received_at),
            description: text(&node["culprit"]),
            labels,
            annotations: BTreeMap::new(),
            links: web_links(links.into_iter().flatten()),
        }],
        ..Parsed::default()
    })
}
