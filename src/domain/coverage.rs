//! The coverage audit's rules: where each incident that met the COE policy stands,
//! how long approval took, and which approved COEs a leader should look at again.

use chrono::NaiveDateTime;
use serde::Serialize;

use crate::domain::action::ActionKind;
use crate::domain::coe::CoeState;
use crate::domain::reminder::writeup_deadline;

/// Where an incident that needs a COE stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Covered {
    /// No COE covers it.
    None,
    /// Its COE is a draft, within the writeup deadline.
    Draft,
    /// Its COE is a draft past the writeup deadline.
    DraftPastDeadline,
    InReview,
    /// Approved or closed.
    Approved,
}

impl Covered {
    pub const ALL: [Covered; 5] = [
        Covered::None,
        Covered::Draft,
        Covered::DraftPastDeadline,
        Covered::InReview,
        Covered::Approved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Covered::None => "none",
            Covered::Draft => "draft",
            Covered::DraftPastDeadline => "draft_past_deadline",
            Covered::InReview => "in_review",
            Covered::Approved => "approved",
        }
    }

    /// An incident whose COE is `state` (none when no COE covers it), resolved at
    /// `resolved_at`, judged at `now`.
    pub fn of(
        state: Option<CoeState>,
        resolved_at: Option<NaiveDateTime>,
        now: NaiveDateTime,
        writeup_days: i64,
    ) -> Covered {
        match state {
            None => Covered::None,
            Some(CoeState::Draft) => match resolved_at {
                Some(r) if writeup_deadline(r, writeup_days) < now => Covered::DraftPastDeadline,
                _ => Covered::Draft,
            },
            Some(CoeState::InReview) => Covered::InReview,
            Some(CoeState::Approved | CoeState::Closed) => Covered::Approved,
            // A merged draft's incidents are covered by the COE it went into; on its
            // own it counts as a draft.
            Some(CoeState::Merged) => Covered::Draft,
        }
    }
}

/// Days from an outage's resolution to its COE's approval, to one decimal (never
/// below zero: a COE approved before its incident resolved took no time).
pub fn days_to_approval(resolved_at: NaiveDateTime, approved_at: NaiveDateTime) -> f64 {
    let secs = (approved_at - resolved_at).num_seconds().max(0) as f64;
    (secs / 86_400.0 * 10.0).round() / 10.0
}

/// The median and the worst of `days` (to one decimal), none when empty.
pub fn median_and_worst(mut days: Vec<f64>) -> (Option<f64>, Option<f64>) {
    days.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = days.len();
    let median = match n {
        0 => None,
        n if n % 2 == 1 => Some(days[n / 2]),
        n => Some(((days[n / 2 - 1] + days[n / 2]) / 2.0 * 10.0).round() / 10.0),
    };
    (median, days.last().copied())
}

/// Whether an approved COE's actions leave the outage free to happen again unseen:
/// none of them prevents it or detects it.
pub fn lacks_prevention(kinds: &[ActionKind]) -> bool {
    !kinds
        .iter()
        .any(|k| matches!(k, ActionKind::Prevent | ActionKind::Detect))
}

/// The quarter a day falls in, as people name it: `2026-Q4`.
pub fn quarter_of(day: chrono::NaiveDate) -> String {
    use chrono::Datelike;
    format!("{}-Q{}", day.year(), day.month0() / 3 + 1)
}

/// The first day of the quarter `back` quarters before the one `day` falls in.
pub fn quarter_start(day: chrono::NaiveDate, back: u32) -> chrono::NaiveDate {
    use chrono::Datelike;
    let index = day.year() * 4 + (day.month0() / 3) as i32 - back as i32;
    let (year, quarter) = (index.div_euclid(4), index.rem_euclid(4) as u32);
    chrono::NaiveDate::from_ymd_opt(year, quarter * 3 + 1, 1).unwrap_or(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarters_are_named_and_counted_back_across_years() {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 2).expect("a day");
        assert_eq!(quarter_of(day), "2026-Q4");
        assert_eq!(quarter_start(day, 0).to_string(), "2026-10-01");
        assert_eq!(quarter_start(day, 3).to_string(), "2026-01-01");
        assert_eq!(quarter_start(day, 4).to_string(), "2025-10-01");
        assert_eq!(
            quarter_of(chrono::NaiveDate::from_ymd_opt(2026, 3, 31).expect("a day")),
            "2026-Q1"
        );
    }

    fn at(day: u32, hour: u32) -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 11, day)
            .and_then(|d| d.and_hms_opt(hour, 0, 0))
            .expect("a time")
    }

    #[test]
    fn an_incident_is_covered_by_where_its_coe_stands() {
        let now = at(20, 12);
        assert_eq!(Covered::of(None, Some(at(1, 0)), now, 7), Covered::None);
        assert_eq!(
            Covered::of(Some(CoeState::Draft), Some(at(15, 12)), now, 7),
            Covered::Draft,
            "five days after: within the deadline"
        );
        assert_eq!(
            Covered::of(Some(CoeState::Draft), Some(at(12, 12)), now, 7),
            Covered::DraftPastDeadline
        );
        assert_eq!(
            Covered::of(Some(CoeState::Draft), None, now, 7),
            Covered::Draft,
            "still going: no deadline yet"
        );
        assert_eq!(
            Covered::of(Some(CoeState::InReview), Some(at(1, 0)), now, 7),
            Covered::InReview
        );
        for state in [CoeState::Approved, CoeState::Closed] {
            assert_eq!(
                Covered::of(Some(state), Some(at(1, 0)), now, 7),
                Covered::Approved
            );
        }
    }

    #[test]
    fn days_to_approval_have_a_median_and_a_worst() {
        assert_eq!(days_to_approval(at(1, 0), at(4, 12)), 3.5);
        assert_eq!(days_to_approval(at(4, 0), at(1, 0)), 0.0);
        assert_eq!(median_and_worst(vec![]), (None, None));
        assert_eq!(
            median_and_worst(vec![9.0, 1.0, 3.5]),
            (Some(3.5), Some(9.0))
        );
        assert_eq!(
            median_and_worst(vec![2.0, 1.0, 4.0, 3.0]),
            (Some(2.5), Some(4.0))
        );
    }

    #[test]
    fn only_actions_that_prevent_or_detect_count_as_prevention() {
        assert!(lacks_prevention(&[]));
        assert!(lacks_prevention(&[
            ActionKind::Process,
            ActionKind::Mitigate
        ]));
        assert!(!lacks_prevention(&[
            ActionKind::Process,
            ActionKind::Detect
        ]));
        assert!(!lacks_prevention(&[ActionKind::Prevent]));
    }
}
