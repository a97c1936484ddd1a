//! Severity: `sev1` (worst) to `sev5`, and how each alert source's own words map to it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How bad a failure is. `Sev1` is the worst; ordering follows badness (`Sev1 < Sev2`
/// compares as "worse than").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Severity {
    Sev1,
    Sev2,
    Sev3,
    Sev4,
    Sev5,
}

impl Severity {
    pub const ALL: [Severity; 5] = [
        Severity::Sev1,
        Severity::Sev2,
        Severity::Sev3,
        Severity::Sev4,
        Severity::Sev5,
    ];

    /// 1 for `sev1` … 5 for `sev5`; what the database stores.
    pub fn rank(self) -> i32 {
        self as i32 + 1
    }

    pub fn from_rank(rank: i32) -> Option<Severity> {
        Severity::ALL.get(usize::try_from(rank - 1).ok()?).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Sev1 => "sev1",
            Severity::Sev2 => "sev2",
            Severity::Sev3 => "sev3",
            Severity::Sev4 => "sev4",
            Severity::Sev5 => "sev5",
        }
    }

    /// What the severity means, in a line a person reporting under pressure reads.
    pub fn meaning(self) -> &'static str {
        match self {
            Severity::Sev1 => "customers cannot use a core service, or data is lost or exposed",
            Severity::Sev2 => "a core service is degraded or down for many customers",
            Severity::Sev3 => "part of a service fails for some customers; a workaround exists",
            Severity::Sev4 => "little customer impact: an internal tool, a slow page",
            Severity::Sev5 => "no customer impact: a near miss worth learning from",
        }
    }

    /// The worse of two severities.
    pub fn worst(self, other: Severity) -> Severity {
        self.min(other)
    }

    /// Whether this severity is at least as bad as `threshold`.
    pub fn at_or_above(self, threshold: Severity) -> bool {
        self <= threshold
    }
}

impl FromStr for Severity {
    type Err = String;

    /// `sev1`…`sev5` (any case), or `critical`, `high`, `medium`, `low`, `info`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let found = match lower.as_str() {
            "sev1" | "critical" => Severity::Sev1,
            "sev2" | "high" => Severity::Sev2,
            "sev3" | "medium" => Severity::Sev3,
            "sev4" | "low" => Severity::Sev4,
            "sev5" | "info" => Severity::Sev5,
            _ => {
                return Err(format!(
                    "must be sev1…sev5 or critical, high, medium, low, info (got {s:?})"
                ))
            }
        };
        Ok(found)
    }
}

impl TryFrom<String> for Severity {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Severity> for String {
    fn from(value: Severity) -> Self {
        value.as_str().to_owned()
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How each source's own severity words map to ours. Lives in one place; the
/// defaults are below, and settings may replace any table (`[severity.alertmanager]`).
/// Keys are compared lower-cased.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SeverityMap {
    /// When a source says nothing usable about severity.
    pub default: Severity,
    /// Alertmanager label `severity`.
    pub alertmanager: BTreeMap<String, Severity>,
    /// Grafana label `severity`.
    pub grafana: BTreeMap<String, Severity>,
    /// PagerDuty incident priority (`P1`…`P5`), used when set.
    pub pagerduty_priority: BTreeMap<String, Severity>,
    /// PagerDuty urgency (`high`, `low`), used when the incident has no priority.
    pub pagerduty_urgency: BTreeMap<String, Severity>,
    /// Opsgenie priority (`P1`…`P5`).
    pub opsgenie: BTreeMap<String, Severity>,
    /// CloudWatch alarm state (`ALARM`).
    pub cloudwatch: BTreeMap<String, Severity>,
    /// Sentry level (`fatal`, `error`, `warning`, …).
    pub sentry: BTreeMap<String, Severity>,
}

fn table(pairs: &[(&str, Severity)]) -> BTreeMap<String, Severity> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

impl Default for SeverityMap {
    fn default() -> Self {
        use Severity::*;
        let labels = table(&[
            ("critical", Sev1),
            ("error", Sev2),
            ("high", Sev2),
            ("warning", Sev3),
            ("info", Sev4),
        ]);
        let priorities = table(&[
            ("p1", Sev1),
            ("p2", Sev2),
            ("p3", Sev3),
            ("p4", Sev4),
            ("p5", Sev5),
        ]);
        SeverityMap {
            default: Sev3,
            alertmanager: labels.clone(),
            grafana: labels,
            pagerduty_priority: priorities.clone(),
            pagerduty_urgency: table(&[("high", Sev2), ("low", Sev4)]),
            opsgenie: priorities,
            cloudwatch: table(&[("alarm", Sev2)]),
            sentry: table(&[
                ("fatal", Sev1),
                ("error", Sev2),
                ("warning", Sev3),
                ("info", Sev4),
                ("debug", Sev5),
            ]),
        }
    }
}

impl SeverityMap {
    /// Looks `word` up in `table`, case-insensitively.
    pub fn lookup(table: &BTreeMap<String, Severity>, word: &str) -> Option<Severity> {
        let lower = word.trim().to_ascii_lowercase();
        table
            .get(&lower)
            .or_else(|| {
                table
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(&lower))
                    .map(|(_, v)| v)
            })
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sev1_is_the_worst() {
        assert!(Severity::Sev1 < Severity::Sev2);
        assert_eq!(Severity::Sev3.worst(Severity::Sev1), Severity::Sev1);
        assert!(Severity::Sev1.at_or_above(Severity::Sev2));
        assert!(Severity::Sev2.at_or_above(Severity::Sev2));
        assert!(!Severity::Sev3.at_or_above(Severity::Sev2));
    }

    #[test]
    fn words_and_ranks_round_trip() {
        for s in Severity::ALL {
            assert_eq!(Severity::from_rank(s.rank()), Some(s));
            assert_eq!(s.as_str().parse::<Severity>(), Ok(s));
        }
        assert_eq!("CRITICAL".parse::<Severity>(), Ok(Severity::Sev1));
        assert_eq!("info".parse::<Severity>(), Ok(Severity::Sev5));
        assert!("sev9".parse::<Severity>().unwrap_err().contains("sev9"));
        assert_eq!(Severity::from_rank(0), None);
        assert_eq!(Severity::from_rank(6), None);
    }

    #[test]
    fn default_maps_follow_the_product_brief() {
        let m = SeverityMap::default();
        assert_eq!(
            SeverityMap::lookup(&m.alertmanager, "critical"),
            Some(Severity::Sev1)
        );
        assert_eq!(
            SeverityMap::lookup(&m.alertmanager, "Warning"),
            Some(Severity::Sev3)
        );
        assert_eq!(
            SeverityMap::lookup(&m.pagerduty_priority, "P1"),
            Some(Severity::Sev1)
        );
        assert_eq!(SeverityMap::lookup(&m.opsgenie, "P3"), Some(Severity::Sev3));
        assert_eq!(
            SeverityMap::lookup(&m.cloudwatch, "ALARM"),
            Some(Severity::Sev2)
        );
        assert_eq!(
            SeverityMap::lookup(&m.sentry, "fatal"),
            Some(Severity::Sev1)
        );
        assert_eq!(SeverityMap::lookup(&m.sentry, "unknown"), None);
    }
}
