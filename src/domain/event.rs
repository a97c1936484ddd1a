//! A failure event, normalized: whatever the source, it ends up in this shape.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Datelike, NaiveDateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};

use super::Severity;

/// Whether the alert is firing or has resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventStatus {
    Firing,
    Resolved,
}

impl EventStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::Firing => "firing",
            EventStatus::Resolved => "resolved",
        }
    }

    pub fn parse(s: &str) -> Result<EventStatus, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "firing" => Ok(EventStatus::Firing),
            "resolved" => Ok(EventStatus::Resolved),
            _ => Err(format!("must be firing or resolved (got {s:?})")),
        }
    }
}

impl fmt::Display for EventStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened, for the timeline: more detail than `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Fired,
    Acknowledged,
    Updated,
    Resolved,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Fired => "fired",
            EventKind::Acknowledged => "acknowledged",
            EventKind::Updated => "updated",
            EventKind::Resolved => "resolved",
        }
    }

    pub fn parse(s: &str) -> Option<EventKind> {
        [
            EventKind::Fired,
            EventKind::Acknowledged,
            EventKind::Updated,
            EventKind::Resolved,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One failure event from any source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureEvent {
    /// `alertmanager`, `grafana`, `pagerduty`, `opsgenie`, `cloudwatch`, `sentry`, or a
    /// free name given to the generic API.
    pub source: String,
    /// Identifies the alert across its life (fired … resolved): e.g. Alertmanager's fingerprint.
    pub dedup_key: String,
    /// Alerts with the same group key form one incident.
    pub group_key: String,
    /// Identifies this occurrence of the alert; together with source and dedup key it
    /// makes a re-delivery recognisable. By default `status@started_at`.
    pub occurrence_key: String,
    pub kind: EventKind,
    pub status: EventStatus,
    pub title: String,
    pub service: Option<String>,
    pub severity: Severity,
    pub started_at: NaiveDateTime,
    pub ended_at: Option<NaiveDateTime>,
    pub description: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Only http and https links are kept.
    pub links: Vec<String>,
}

impl FailureEvent {
    /// The default occurrence key: status and start time as the sender wrote it
    /// (full precision: the stored time is cut to microseconds, the key is not).
    pub fn default_occurrence_key(status: EventStatus, started_at_as_sent: &str) -> String {
        format!("{}@{}", status.as_str(), started_at_as_sent)
    }
}

/// The label or annotation an event carries the share of an SLO's error budget it
/// burned in: `0.25` or `25%` (a quarter).
pub const BUDGET_BURNED: &str = "error_budget_burned";

/// The labels naming an event's SLO: `slo` (Pyrra, and the generic API's `slo`),
/// `sloth_slo` (Sloth), `slo_name`.
pub const SLO_LABELS: [&str; 3] = ["slo", "sloth_slo", "slo_name"];

/// The share of an SLO's error budget `event` says it burned (`error_budget_burned`, a
/// label or an annotation: `0.25` or `25%`), when it says one that makes sense (0 to
/// 100 budgets).
pub fn budget_burned(event: &FailureEvent) -> Option<f64> {
    let text = event
        .labels
        .get(BUDGET_BURNED)
        .or_else(|| event.annotations.get(BUDGET_BURNED))?
        .trim();
    let share = match text.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().ok()? / 100.0,
        None => text.parse::<f64>().ok()?,
    };
    (share.is_finite() && (0.0..=100.0).contains(&share)).then_some(share)
}

/// The SLO `event` names (`SLO_LABELS`, the first found).
pub fn slo_of(event: &FailureEvent) -> Option<String> {
    SLO_LABELS
        .iter()
        .find_map(|l| event.labels.get(*l))
        .map(|s| s.chars().take(200).collect())
}

/// Keeps only `http`/`https` links, without duplicates, in order.
pub fn web_links<I: IntoIterator<Item = String>>(links: I) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for link in links {
        if let Some(link) = web_link(&link) {
            if !kept.contains(&link) {
                kept.push(link);
            }
        }
    }
    kept
}

/// The longest link kept (browsers and proxies cut longer ones anyway).
pub const MAX_LINK_BYTES: usize = 2048;

/// `raw` as a web link, if it is one: an absolute http(s) URL with a host, no
/// whitespace or control characters, at most `MAX_LINK_BYTES`; written as the URL
/// parser writes it when it holds a character a URL may not (quotes and angle brackets
/// come out percent-encoded), so the link cannot break out of the Markdown or HTML it
/// is written into; as written otherwise.
pub fn web_link(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.len() > MAX_LINK_BYTES || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    let web =
        matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty());
    // RFC 3986's characters: unreserved, reserved and the percent sign.
    let plain = raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b));
    let link = if plain { raw } else { url.as_str() };
    (web && link.len() <= MAX_LINK_BYTES).then(|| link.to_owned())
}

/// Parses an RFC 3339 time into naive UTC at microsecond precision (what both
/// databases store). `None` for Alertmanager's "not ended" `0001-01-01T00:00:00Z`
/// and for any time before 1970.
pub fn parse_time(raw: &str) -> Result<Option<NaiveDateTime>, String> {
    let parsed = DateTime::parse_from_rfc3339(raw.trim())
        .or_else(|_| DateTime::parse_from_str(raw.trim(), "%Y-%m-%dT%H:%M:%S%.f%z"))
        .map_err(|_| {
            format!("must be an RFC 3339 time such as 2026-01-31T12:00:00Z (got {raw:?})")
        })?;
    let utc = parsed.with_timezone(&Utc).naive_utc();
    if utc.and_utc().timestamp() < 0 {
        return Ok(None);
    }
    if utc.year() > 9999 {
        return Err(format!(
            "must be a time before the year 10000 (got {raw:?})"
        ));
    }
    Ok(Some(utc.trunc_subsecs(6)))
}

/// Milliseconds since the epoch to naive UTC.
pub fn from_millis(ms: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_millis(ms).map(|t| t.naive_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_links_are_kept() {
        let links = web_links(vec![
            "https://runbooks.example.com/etcd".into(),
            "javascript:alert(1)".into(),
            "ftp://x".into(),
            "http://grafana/d/1".into(),
            "https://runbooks.example.com/etcd".into(),
            "https://".into(),
            "".into(),
        ]);
        assert_eq!(
            links,
            vec!["https://runbooks.example.com/etcd", "http://grafana/d/1"]
        );
    }

    #[test]
    fn times_parse_to_microseconds_and_zero_means_not_ended() {
        let t = parse_time("2022-06-17T01:04:00.782137894Z")
            .unwrap()
            .unwrap();
        assert_eq!(t.to_string(), "2022-06-17 01:04:00.782137");
        assert_eq!(parse_time("0001-01-01T00:00:00Z"), Ok(None));
        let t = parse_time("2015-06-03T17:43:27.123+0000").unwrap().unwrap();
        assert_eq!(t.to_string(), "2015-06-03 17:43:27.123");
        assert!(parse_time("yesterday").is_err());
    }
}
