//! How failure events become incidents: the rules, without the storage.

use std::fmt;

use chrono::{Duration, NaiveDateTime};
use serde::{Deserialize, Serialize};

use super::{EventStatus, Severity};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IncidentState {
    Open,
    Resolved,
}

impl IncidentState {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Open => "open",
            IncidentState::Resolved => "resolved",
        }
    }

    pub fn parse(s: &str) -> Option<IncidentState> {
        match s {
            "open" => Some(IncidentState::Open),
            "resolved" => Some(IncidentState::Resolved),
            _ => None,
        }
    }
}

impl fmt::Display for IncidentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The incident policy, from settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IncidentPolicy {
    /// The same alert firing again within this long after its incident resolved
    /// reopens that incident; later, it opens a new one.
    pub reopen_window: Duration,
    /// Incidents at or above this severity need a COE.
    pub coe_at_or_above: Severity,
    /// Incidents that burned more than this share of an SLO's error budget need a
    /// COE whatever their severity (0.2: a fifth).
    pub budget_share: f64,
}

impl Default for IncidentPolicy {
    fn default() -> Self {
        IncidentPolicy {
            reopen_window: Duration::hours(1),
            coe_at_or_above: Severity::Sev2,
            budget_share: 0.2,
        }
    }
}

impl IncidentPolicy {
    /// Whether an incident of this severity needs a COE. The one place this is decided.
    pub fn needs_coe(&self, severity: Severity) -> bool {
        severity.at_or_above(self.coe_at_or_above)
    }

    /// Whether an incident that burned `burned` of an SLO's error budget needs a COE
    /// (and its COE a high-priority action to prevent) whatever its severity.
    pub fn burned_too_much(&self, burned: Option<f64>) -> bool {
        burned.is_some_and(|b| b > self.budget_share)
    }
}

/// What is known about a group's incidents when an event for it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupState<'a> {
    /// The group's open incident, if any.
    pub open: Option<&'a str>,
    /// The group's most recently resolved incident that contains this same alert,
    /// with the time it resolved.
    pub last_resolved_with_alert: Option<(&'a str, NaiveDateTime)>,
    /// The group's most recent incident of any state.
    pub latest: Option<&'a str>,
}

/// Where an event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Attach to this existing incident.
    Attach(String),
    /// Reopen this resolved incident and attach.
    Reopen(String),
    /// Open a new incident (resolved at once when the event is a resolution).
    New,
}

/// Decides where an event goes. A firing alert joins its group's open incident;
/// failing that, it reopens the incident it resolved from if that was within the
/// reopen window (measured to when it fired again), else it opens a new incident.
/// A resolution joins the open incident, else the latest one, else records a new,
/// already resolved, incident (so that no event is without one).
pub fn place(
    status: EventStatus,
    fired_at: NaiveDateTime,
    group: GroupState<'_>,
    policy: &IncidentPolicy,
) -> Placement {
    if let Some(open) = group.open {
        return Placement::Attach(open.to_owned());
    }
    match status {
        EventStatus::Firing => match group.last_resolved_with_alert {
            Some((id, resolved_at)) if fired_at - resolved_at <= policy.reopen_window => {
                Placement::Reopen(id.to_owned())
            }
            _ => Placement::New,
        },
        EventStatus::Resolved => match group.latest {
            Some(id) => Placement::Attach(id.to_owned()),
            None => Placement::New,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn at(h: u32, m: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 11, 29)
            .and_then(|d| d.and_hms_opt(h, m, 0))
            .expect("valid time")
    }

    const NONE: GroupState<'static> = GroupState {
        open: None,
        last_resolved_with_alert: None,
        latest: None,
    };

    #[test]
    fn a_firing_alert_joins_the_open_incident() {
        let g = GroupState {
            open: Some("i1"),
            ..NONE
        };
        let p = place(
            EventStatus::Firing,
            at(10, 0),
            g,
            &IncidentPolicy::default(),
        );
        assert_eq!(p, Placement::Attach("i1".into()));
    }

    #[test]
    fn the_same_alert_within_the_window_reopens_later_opens_new() {
        let policy = IncidentPolicy::default();
        let g = GroupState {
            last_resolved_with_alert: Some(("i1", at(10, 0))),
            latest: Some("i1"),
            ..NONE
        };
        assert_eq!(
            place(EventStatus::Firing, at(10, 59), g, &policy),
            Placement::Reopen("i1".into())
        );
        assert_eq!(
            place(EventStatus::Firing, at(11, 0), g, &policy),
            Placement::Reopen("i1".into())
        );
        assert_eq!(
            place(EventStatus::Firing, at(11, 1), g, &policy),
            Placement::New
        );
    }

    #[test]
    fn a_different_alert_after_resolution_opens_new() {
        let g = GroupState {
            latest: Some("i1"),
            ..NONE
        };
        assert_eq!(
            place(
                EventStatus::Firing,
                at(10, 5),
                g,
                &IncidentPolicy::default()
            ),
            Placement::New
        );
    }

    #[test]
    fn a_resolution_without_an_open_incident_goes_to_the_latest_or_a_new_one() {
        let policy = IncidentPolicy::default();
        let g = GroupState {
            latest: Some("i1"),
            ..NONE
        };
        assert_eq!(
            place(EventStatus::Resolved, at(9, 0), g, &policy),
            Placement::Attach("i1".into())
        );
        assert_eq!(
            place(EventStatus::Resolved, at(9, 0), NONE, &policy),
            Placement::New
        );
    }

    #[test]
    fn the_coe_policy_is_at_or_above() {
        let policy = IncidentPolicy::default();
        assert!(policy.needs_coe(Severity::Sev1));
        assert!(policy.needs_coe(Severity::Sev2));
        assert!(!policy.needs_coe(Severity::Sev3));
    }
}
