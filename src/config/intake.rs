//! What comes in: the COE policy, how events group into incidents, the webhooks'
//! limits and secrets, and how long single events are kept.

use serde::{Deserialize, Serialize};

use super::secret::Secret;
use crate::domain::Severity;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PolicySettings {
    /// Incidents at or above this severity need a COE.
    pub coe_at_or_above: Severity,
    /// An incident whose events say it burned more than this share of an SLO's error
    /// budget (`error_budget_burned`) needs a COE whatever its severity, and that COE
    /// a high-priority action to prevent before it is submitted. Above 0, at most 1.
    pub error_budget_share: f64,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            coe_at_or_above: Severity::Sev2,
            error_budget_share: 0.2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IncidentSettings {
    /// The same alert firing again within this many seconds of its incident resolving
    /// reopens the incident; later, it opens a new one. At most 30 days.
    pub reopen_window_secs: u64,
    /// Incidents of open COEs starting within this many seconds of each other, on a
    /// service, a dependency or a label value they share, are shown as probably the
    /// same outage. At most a day.
    pub same_outage_window_secs: u64,
    /// The labels whose shared value says two incidents are probably one outage.
    pub same_outage_labels: Vec<String>,
}

impl Default for IncidentSettings {
    fn default() -> Self {
        IncidentSettings {
            reopen_window_secs: 3600,
            same_outage_window_secs: 900,
            same_outage_labels: ["cluster", "region", "datacenter"]
                .map(String::from)
                .to_vec(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Largest accepted webhook or event-API body, in bytes. Generous on purpose: a 413
    /// makes Alertmanager retry the same group forever.
    pub max_body_bytes: usize,
    /// PagerDuty signing secret; when set, `X-PagerDuty-Signature` is required and checked.
    pub pagerduty_secret: Option<Secret>,
    /// Grafana HMAC secret; when set, `X-Grafana-Alerting-Signature` is required and checked.
    pub grafana_secret: Option<Secret>,
    /// The header Grafana is configured to put its signature timestamp in.
    pub grafana_timestamp_header: String,
    /// Sentry client secret; when set, `Sentry-Hook-Signature` is required and checked.
    pub sentry_secret: Option<Secret>,
    /// Days a delivery's raw body (up to `max_body_bytes`) is kept; the sweep empties
    /// older ones. The events parsed from it are kept.
    pub keep_raw_days: i64,
}

/// How long single failure events are kept.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EventSettings {
    /// Days after an incident's last event before its single events are dropped
    /// (`services::incidents::retention`): the incident, its counts, times, alerts and its page
    /// stay; an incident with a COE keeps every event. 0: kept for ever.
    pub keep_days: i64,
}

impl Default for EventSettings {
    fn default() -> Self {
        EventSettings { keep_days: 400 }
    }
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            max_body_bytes: 10 * 1024 * 1024,
            pagerduty_secret: None,
            grafana_secret: None,
            grafana_timestamp_header: "X-Grafana-Alerting-Signature-Timestamp".into(),
            keep_raw_days: 30,
            sentry_secret: None,
        }
    }
}
