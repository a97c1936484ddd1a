//! A drill that proves the fix: an action to detect or mitigate names the alert that
//! proves it (the labels an event must carry); some days after it is verified, a
//! re-check waits for that alert, fired in a drill. Here: the labels' rules, what an
//! event matches, what a drill says about itself, and the re-check's states.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime};

use super::action::ActionKind;
use super::event::FailureEvent;

/// The label or annotation that marks an event as a drill's. Its value is when the
/// drill started (RFC 3339: the alarm's delay is measured from it), or any other word
/// (`true`): a drill whose start is not said. A drill's incident never needs a COE.
pub const MARK: &str = "coe_drill";

/// The most labels an alarm names.
pub const MAX_LABELS: usize = 10;
const MAX_NAME_BYTES: usize = 100;
const MAX_VALUE_BYTES: usize = 200;

/// Where a re-check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecheckState {
    /// Opened: waits for the alarm until its day.
    Waiting,
    /// The alarm fired: the fix is proven.
    Proven,
    /// Its day passed with no alarm: the COE's reviewer is asked.
    Missed,
    /// Missed, and the reviewer confirmed the fix stands (with why).
    Confirmed,
    /// Missed, and the reviewer reopened the action.
    Reopened,
    /// Closed unproven because the action changed meanwhile (reopened, sent back at
    /// verification, its verification withdrawn, its kind or alert changed): a new
    /// verification opens a new one.
    Withdrawn,
}

impl RecheckState {
    pub const ALL: [RecheckState; 6] = [
        RecheckState::Waiting,
        RecheckState::Proven,
        RecheckState::Missed,
        RecheckState::Confirmed,
        RecheckState::Reopened,
        RecheckState::Withdrawn,
    ];

    /// The states an alarm still proves, as stored.
    pub const OPEN: [&'static str; 2] = [
        RecheckState::Waiting.as_str(),
        RecheckState::Missed.as_str(),
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            RecheckState::Waiting => "waiting",
            RecheckState::Proven => "proven",
            RecheckState::Missed => "missed",
            RecheckState::Confirmed => "confirmed",
            RecheckState::Reopened => "reopened",
            RecheckState::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<RecheckState> {
        RecheckState::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// An alarm still proves it: it waits, or it was missed and waits for its reviewer
    /// (a late drill still counts).
    pub fn is_open(self) -> bool {
        matches!(self, RecheckState::Waiting | RecheckState::Missed)
    }
}

/// The kinds an alarm proves, as stored.
pub const PROVEN_BY_ALARM: [&str; 2] = [ActionKind::Detect.as_str(), ActionKind::Mitigate.as_str()];

/// How long before a re-check opened a drill's alert may have started and still prove
/// it: the alerting system's clock and coe's may differ a little.
pub const CLOCK_GRACE_MINUTES: i64 = 15;

/// Whether `event` proves a re-check waiting for `labels` since `opened_at`: a firing
/// drill's event (`MARK`) carrying every label, started after the re-check opened (less
/// `CLOCK_GRACE_MINUTES`). A real outage's alert is not a drill, and an event from
/// before the re-check is not its drill.
pub fn proves(
    labels: &BTreeMap<String, String>,
    opened_at: NaiveDateTime,
    event: &FailureEvent,
) -> bool {
    event.status == super::EventStatus::Firing
        && is_drill(event)
        && matches(labels, event)
        && event.started_at >= opened_at - chrono::Duration::minutes(CLOCK_GRACE_MINUTES)
}

/// Whether an action of `kind` is proven by an alarm: one to detect or to mitigate.
pub fn proven_by_alarm(kind: ActionKind) -> bool {
    matches!(kind, ActionKind::Detect | ActionKind::Mitigate)
}

/// The labels of an alarm, checked: 1 to `MAX_LABELS`, each name as Prometheus writes
/// one (a letter or `_`, then letters, digits and `_`), each value not empty.
pub fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), String> {
    if labels.is_empty() {
        return Err("name at least one label the alert carries, e.g. coe_action=<the action's id> or alertname and service".into());
    }
    if labels.len() > MAX_LABELS {
        return Err(format!(
            "at most {MAX_LABELS} labels (got {})",
            labels.len()
        ));
    }
    for (name, value) in labels {
        let mut chars = name.chars();
        let good_name = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= MAX_NAME_BYTES;
        if !good_name {
            return Err(format!(
                "{name:?} is not a label name: a letter or _, then letters, digits or _ (at most {MAX_NAME_BYTES})"
            ));
        }
        if name == MARK {
            return Err(format!(
                "{MARK} marks a drill's event, not the alert: name the alert's own labels"
            ));
        }
        if value.trim().is_empty() || value.len() > MAX_VALUE_BYTES {
            return Err(format!(
                "the value of {name} must be 1 to {MAX_VALUE_BYTES} characters"
            ));
        }
    }
    Ok(())
}

/// Labels written as a person types them in a form: `name=value`, one per line or
/// separated by commas, a value optionally in double quotes.
pub fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    for part in text
        .split(['\n', ','])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let Some((name, value)) = part.split_once('=') else {
            return Err(format!("{part:?} is not name=value"));
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        let name = name.trim().to_owned();
        if labels.insert(name.clone(), value.to_owned()).is_some() {
            return Err(format!("{name} is named twice"));
        }
    }
    check_labels(&labels)?;
    Ok(labels)
}

/// The labels as a person reads and types them: `name=value, name=value`.
pub fn labels_words(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an event says of a label: its label, else its annotation.
fn said<'e>(event: &'e FailureEvent, name: &str) -> Option<&'e str> {
    event
        .labels
        .get(name)
        .or_else(|| event.annotations.get(name))
        .map(|v| v.trim())
}

/// Whether `event` is the alarm: it carries every one of `labels` (as a label or an
/// annotation) with the same value.
pub fn matches(labels: &BTreeMap<String, String>, event: &FailureEvent) -> bool {
    !labels.is_empty()
        && labels
            .iter()
            .all(|(name, value)| said(event, name) == Some(value.trim()))
}

/// Whether `event` is a drill's (it carries `MARK`, not `false`).
pub fn is_drill(event: &FailureEvent) -> bool {
    said(event, MARK).is_some_and(|v| !v.is_empty() && !v.eq_ignore_ascii_case("false"))
}

/// When the drill of `event` started, when it says (`MARK` as an RFC 3339 time).
pub fn started(event: &FailureEvent) -> Option<NaiveDateTime> {
    let text = said(event, MARK)?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.naive_utc())
}

/// How long the alarm took, in seconds: from the drill's start to the event's own
/// start (Alertmanager's `startsAt`: when the rule fired). None when the drill did
/// not say when it started, or says it started after the alarm.
pub fn detected_seconds(event: &FailureEvent) -> Option<i64> {
    let from = started(event)?;
    // To the nearest second: the event's time is kept to the microsecond, the
    // drill's start as it was written.
    let millis = (event.started_at - from).num_milliseconds();
    (millis >= 0).then_some((millis + 500) / 1000)
}

/// A span in words: "45 s", "3 min", "1 h 5 min".
pub fn span_words(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventKind, EventStatus, Severity};
    use chrono::NaiveDate;

    fn event(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> FailureEvent {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        FailureEvent {
            source: "alertmanager".into(),
            dedup_key: "k".into(),
            group_key: "g".into(),
            occurrence_key: "o".into(),
            kind: EventKind::Fired,
            status: EventStatus::Firing,
            title: "t".into(),
            service: None,
            severity: Severity::Sev2,
            started_at: NaiveDate::from_ymd_opt(2027, 1, 14)
                .and_then(|d| d.and_hms_opt(10, 3, 0))
                .expect("a time"),
            ended_at: None,
            description: None,
            labels: map(labels),
            annotations: map(annotations),
            links: vec![],
        }
    }

    #[test]
    fn an_alarm_matches_every_label_as_a_label_or_an_annotation() {
        let alarm = parse_labels("alertname=QueueBacklog, service=\"checkout\"").expect("labels");
        assert!(matches(
            &alarm,
            &event(
                &[
                    ("alertname", "QueueBacklog"),
                    ("service", "checkout"),
                    ("x", "y")
                ],
                &[]
            )
        ));
        assert!(matches(
            &alarm,
            &event(&[("alertname", "QueueBacklog")], &[("service", "checkout")])
        ));
        assert!(!matches(
            &alarm,
            &event(&[("alertname", "QueueBacklog")], &[])
        ));
        assert!(!matches(
            &alarm,
            &event(&[("alertname", "QueueBacklog"), ("service", "search")], &[])
        ));
        assert!(!matches(&BTreeMap::new(), &event(&[], &[])));
    }

    #[test]
    fn labels_are_checked_as_prometheus_names_them() {
        assert!(parse_labels("").is_err());
        assert!(parse_labels("alertname").is_err());
        assert!(parse_labels("1st=x").is_err());
        assert!(parse_labels("a-b=x").is_err());
        assert!(parse_labels("a=").is_err());
        assert!(parse_labels("a=1\na=2").is_err());
        assert!(parse_labels("coe_drill=true").is_err());
        let many = (0..11)
            .map(|i| format!("l{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(parse_labels(&many).is_err());
        let ok = parse_labels("coe_action=0190\n_x = y ").expect("labels");
        assert_eq!(labels_words(&ok), "_x=y, coe_action=0190");
    }

    #[test]
    fn a_drill_says_when_it_started_and_the_alarm_took_the_difference() {
        let e = event(&[], &[(MARK, "2027-01-14T10:00:00Z")]);
        assert!(is_drill(&e));
        assert_eq!(detected_seconds(&e), Some(180));
        let e = event(&[(MARK, "2027-01-14T12:00:00+02:00")], &[]);
        assert_eq!(detected_seconds(&e), Some(180));
        let e = event(&[(MARK, "true")], &[]);
        assert!(is_drill(&e));
        assert_eq!(detected_seconds(&e), None);
        assert!(!is_drill(&event(&[(MARK, "false")], &[])));
        assert!(!is_drill(&event(&[], &[])));
        // A start after the alarm is no measure.
        assert_eq!(
            detected_seconds(&event(&[(MARK, "2027-01-14T10:05:00Z")], &[])),
            None
        );
    }

    #[test]
    fn only_a_drills_firing_alert_since_the_recheck_proves_it() {
        let labels = parse_labels("coe_action=a1").expect("labels");
        let drill = event(&[("coe_action", "a1"), (MARK, "true")], &[]);
        let opened = drill.started_at - chrono::Duration::hours(1);
        assert!(proves(&labels, opened, &drill));
        // A real outage's alert is not a drill.
        let real = event(&[("coe_action", "a1")], &[]);
        assert!(!proves(&labels, opened, &real));
        // Started well before the re-check opened: not its drill; just before, within
        // the clocks' grace, it is.
        assert!(!proves(
            &labels,
            drill.started_at + chrono::Duration::minutes(16),
            &drill
        ));
        assert!(proves(
            &labels,
            drill.started_at + chrono::Duration::minutes(14),
            &drill
        ));
        let mut resolved = drill.clone();
        resolved.status = EventStatus::Resolved;
        assert!(!proves(&labels, opened, &resolved));
    }

    #[test]
    fn spans_read_as_words() {
        assert_eq!(span_words(45), "45 s");
        assert_eq!(span_words(180), "3 min");
        assert_eq!(span_words(3600), "1 h");
        assert_eq!(span_words(3900), "1 h 5 min");
    }

    #[test]
    fn only_detect_and_mitigate_actions_are_proven_by_an_alarm() {
        assert!(proven_by_alarm(ActionKind::Detect));
        assert!(proven_by_alarm(ActionKind::Mitigate));
        assert!(!proven_by_alarm(ActionKind::Prevent));
        assert!(!proven_by_alarm(ActionKind::Process));
    }
}
