//! Corrective actions: the targets each priority is to close within.

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::domain::action::{Target, MAX_TARGET_DAYS};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ActionSettings {
    /// `[[actions.targets]]`: how many days an action of a priority (on a COE at or
    /// above a severity, when one is named) has to close. The tightest that applies
    /// proposes a new action's due date; a date past it needs a reason. None: no
    /// target, dates are the owner's alone.
    pub targets: Vec<Target>,
    /// The furthest a risk may be accepted (`POST /api/v1/actions/{id}/risk`), in
    /// days from the day it is asked.
    pub risk_max_days: u32,
    /// Days after an action with an alarm (`PUT /api/v1/actions/{id}/drill`) is
    /// verified until coe opens a re-check and asks for a drill; 0: only on request.
    pub drill_after_days: u32,
    /// Days a re-check waits for the drill's alarm before its reviewer is asked.
    pub drill_window_days: u32,
}

impl Default for ActionSettings {
    fn default() -> Self {
        ActionSettings {
            targets: Vec::new(),
            risk_max_days: 180,
            drill_after_days: 90,
            drill_window_days: 14,
        }
    }
}

impl ActionSettings {
    /// Each target's days in range, and no two for the same priority and severity.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_TARGET_DAYS).contains(&self.risk_max_days) {
            return Err(ConfigError::Invalid {
                key: "actions.risk_max_days",
                origin: String::new(),
                value: self.risk_max_days.to_string(),
                expected: format!("1 to {MAX_TARGET_DAYS} days"),
            });
        }
        if self.drill_after_days > MAX_TARGET_DAYS {
            return Err(ConfigError::Invalid {
                key: "actions.drill_after_days",
                origin: String::new(),
                value: self.drill_after_days.to_string(),
                expected: format!("0 (only on request) to {MAX_TARGET_DAYS} days"),
            });
        }
        if !(1..=365).contains(&self.drill_window_days) {
            return Err(ConfigError::Invalid {
                key: "actions.drill_window_days",
                origin: String::new(),
                value: self.drill_window_days.to_string(),
                expected: "1 to 365 days".into(),
            });
        }
        for (i, t) in self.targets.iter().enumerate() {
            if !(1..=MAX_TARGET_DAYS).contains(&t.days) {
                return Err(ConfigError::Invalid {
                    key: "actions.targets",
                    origin: String::new(),
                    value: format!("days = {} (target {})", t.days, i + 1),
                    expected: format!("1 to {MAX_TARGET_DAYS} days"),
                });
            }
            if self.targets[..i]
                .iter()
                .any(|o| o.priority == t.priority && o.severity == t.severity)
            {
                return Err(ConfigError::Invalid {
                    key: "actions.targets",
                    origin: String::new(),
                    value: format!(
                        "priority = {:?}{} (target {})",
                        t.priority.as_str(),
                        t.severity
                            .map(|s| format!(", severity = {:?}", s.as_str()))
                            .unwrap_or_default(),
                        i + 1
                    ),
                    expected: "one target per priority and severity".into(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::Priority;
    use crate::domain::Severity;

    #[test]
    fn targets_need_days_in_range_and_one_per_priority_and_severity() {
        let t = |priority, severity, days| Target {
            priority,
            severity,
            days,
        };
        let ok = ActionSettings {
            targets: vec![
                t(Priority::High, None, 28),
                t(Priority::High, Some(Severity::Sev1), 14),
            ],
            ..ActionSettings::default()
        };
        assert!(ok.validate().is_ok());
        let zero = ActionSettings {
            targets: vec![t(Priority::Low, None, 0)],
            ..ActionSettings::default()
        };
        assert!(zero
            .validate()
            .is_err_and(|e| e.to_string().contains("1 to 3650")));
        let twice = ActionSettings {
            targets: vec![
                t(Priority::High, Some(Severity::Sev1), 14),
                t(Priority::High, Some(Severity::Sev1), 7),
            ],
            ..ActionSettings::default()
        };
        assert!(twice
            .validate()
            .is_err_and(|e| e.to_string().contains("one target per priority")));
        // As the file writes them.
        let read: ActionSettings = toml::from_str(
            "[[targets]]\npriority = \"high\"\ndays = 28\n[[targets]]\npriority = \"high\"\nseverity = \"sev1\"\ndays = 14\n",
        )
        .expect("read");
        assert_eq!(read, ok);
    }
}
