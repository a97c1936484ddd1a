//! The generic event API: one event, or an array of up to 1,000, in `coe`'s own shape.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::Value;

use super::common::{null_as_default, optional_time};
use crate::domain::event::web_links;
use crate::domain::{EventKind, EventStatus, FailureEvent, Severity, SeverityMap};
use crate::json::{self, JsonError};

/// Most events one request may carry.
pub const MAX_EVENTS: usize = 1_000;

/// Longest `dedup_key` and `group_key`, in bytes.
pub const MAX_KEY_BYTES: usize = 512;

/// Longest `description`, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 65_536;

/// One event as posted to `POST /api/v1/events`. Unknown fields are ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct EventInput {
    /// Where the event came from (`[a-z0-9_.-]`, at most 64 characters); default `api`.
    #[serde(default)]
    pub source: Option<String>,
    /// Identifies the alert across its life: the same key for its firing and its resolution.
    pub dedup_key: String,
    /// Events with the same group key form one incident; defaults to `dedup_key`.
    #[serde(default)]
    pub group_key: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    /// `sev1`…`sev5`, or `critical`, `high`, `medium`, `low`, `info`.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "sev2")]
    pub severity: Option<Severity>,
    /// `firing` (default) or `resolved`.
    #[serde(default)]
    pub status: Option<EventStatus>,
    /// RFC 3339; defaults to when the event was received.
    #[serde(default)]
    pub started_at: Option<String>,
    /// RFC 3339; for resolved events.
    #[serde(default)]
    pub ended_at: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Null is taken as none.
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub labels: BTreeMap<String, String>,
    /// Only http and https links are kept; null is taken as none.
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(value_type = Option<Vec<String>>)]
    pub links: Vec<String>,
    /// The share of an SLO's error budget this outage burned (0.25: a quarter; 0 to
    /// 100). More than `policy.error_budget_share` and its incident needs a COE.
    #[serde(default)]
    pub error_budget_burned: Option<f64>,
    /// The SLO whose budget it burned.
    #[serde(default)]
    pub slo: Option<String>,
}

/// Parses a body holding one event object or an array of them.
pub fn parse(
    body: &[u8],
    severities: &SeverityMap,
    received_at: NaiveDateTime,
) -> Result<Vec<FailureEvent>, JsonError> {
    let value: Value = json::parse(body)?;
    let events = match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(JsonError::field("body", "must hold at least one event"));
            }
            if items.len() > MAX_EVENTS {
                return Err(JsonError::field(
                    "body",
                    format!(
                        "must hold at most {MAX_EVENTS} events (got {})",
                        items.len()
                    ),
                ));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    normalize(item, severities, received_at)
                        .map_err(|e| e.within(&format!("[{i}]")))
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        Value::Object(_) => vec![normalize(value, severities, received_at)?],
        _ => {
            return Err(JsonError::field(
                "body",
                "must be an event object or an array of events",
            ))
        }
    };
    Ok(events.into_iter().map(super::common::sanitize).collect())
}

fn normalize(
    value: Value,
    severities: &SeverityMap,
    received_at: NaiveDateTime,
) -> Result<FailureEvent, JsonError> {
    let input: EventInput = json::from_value(value)?;
    let source = match input.source.as_deref().map(str::trim) {
        None | Some("") => "api".to_owned(),
        Some(s) => {
            let ok = s.len() <= 64
                && s.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.')
                });
            if !ok {
                return Err(JsonError::field(
                    "source",
                    format!("must be at most 64 of a-z, 0-9, '_', '-', '.' (got {s:?})"),
                ));
            }
            s.to_owned()
        }
    };
    let dedup_key = input.dedup_key.trim().to_owned();
    if dedup_key.is_empty() {
        return Err(JsonError::field("dedup_key", "must not be empty"));
    }
    // Our own API says its limits; senders' webhooks are cut or hashed instead
    // (`common::sanitize`), since a sender cannot be asked to change.
    for (field, value, max) in [
        ("dedup_key", Some(&input.dedup_key), MAX_KEY_BYTES),
        ("group_key", input.group_key.as_ref(), MAX_KEY_BYTES),
        (
            "title",
            input.title.as_ref(),
            crate::domain::coe::MAX_TITLE_BYTES,
        ),
        (
            "service",
            input.service.as_ref(),
            crate::domain::coe::MAX_SERVICE_BYTES,
        ),
        (
            "description",
            input.description.as_ref(),
            MAX_DESCRIPTION_BYTES,
        ),
    ] {
        if let Some(len) = value.map(|v| v.trim().len()).filter(|len| *len > max) {
            return Err(JsonError::field(
                field,
                format!("must be at most {max} bytes (got {len})"),
            ));
        }
    }
    if let Some(burned) = input.error_budget_burned {
        if !(burned.is_finite() && (0.0..=100.0).contains(&burned)) {
            return Err(JsonError::field(
                "error_budget_burned",
                format!(
                    "must be a share of the budget from 0 to 100 (0.25: a quarter; got {burned})"
                ),
            ));
        }
    }
    let mut labels = input.labels;
    let mut annotations = BTreeMap::new();
    if let Some(burned) = input.error_budget_burned {
        annotations.insert(
            crate::domain::event::BUDGET_BURNED.to_owned(),
            burned.to_string(),
        );
    }
    if let Some(slo) = input
        .slo
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
    {
        labels.insert("slo".to_owned(), slo);
    }
    let status = input.status.unwrap_or(EventStatus::Firing);
    let started_raw = input.started_at.clone();
    let started_at = optional_time(started_raw.as_deref(), "started_at")?.unwrap_or(received_at);
    let ended_at = optional_time(input.ended_at.as_deref(), "ended_at")?;
    let group_key = input
        .group_key
        .map(|g| g.trim().to_owned())
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| dedup_key.clone());
    let occurrence_key = FailureEvent::default_occurrence_key(
        status,
        &started_raw.unwrap_or_else(|| started_at.to_string()),
    );
    Ok(FailureEvent {
        source,
        dedup_key,
        group_key,
        occurrence_key,
        kind: match status {
            EventStatus::Firing => EventKind::Fired,
            EventStatus::Resolved => EventKind::Resolved,
        },
        status,
        title: input.title.unwrap_or_default(),
        service: input.service.filter(|s| !s.trim().is_empty()),
        severity: input.severity.unwrap_or(severities.default),
        started_at,
        ended_at: match status {
            EventStatus::Resolved => ended_at.or(Some(received_at)),
            EventStatus::Firing => ended_at,
        },
        description: input.description,
        labels,
        annotations,
        links: web_links(input.links),
    })
}
