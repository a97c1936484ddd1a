//! Time figures that do not lie: a distribution (how many, the median, the 90th
//! percentile), never a mean, with the outages whose times are missing counted
//! beside it rather than dropped.

use serde::{Deserialize, Serialize};

/// How long something took over a set of outages, in minutes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Distribution {
    /// Outages with both times known.
    pub count: usize,
    /// Outages counted whose times are missing (not in the figures, never dropped).
    pub missing: usize,
    /// The middle value (the mean of the two middle ones for an even count), minutes.
    pub median: Option<f64>,
    /// The 90th percentile by the nearest-rank method: the smallest value with at
    /// least 90% of the values at or below it, minutes.
    pub p90: Option<f64>,
}

impl Distribution {
    /// The distribution of `values` (minutes; `None` for an outage whose times are
    /// missing, and negative spans, which are mistakes, counted as missing too).
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Distribution {
        let mut known = Vec::new();
        let mut missing = 0;
        for v in values {
            match v {
                Some(v) if v.is_finite() && v >= 0.0 => known.push(v),
                _ => missing += 1,
            }
        }
        known.sort_by(f64::total_cmp);
        let n = known.len();
        let median = match n {
            0 => None,
            n if n % 2 == 1 => Some(known[n / 2]),
            n => Some((known[n / 2 - 1] + known[n / 2]) / 2.0),
        };
        // Nearest rank: the ceil(0.9 n)-th value, counting from 1.
        let p90 = (n > 0).then(|| known[(n * 9).div_ceil(10) - 1]);
        Distribution {
            count: n,
            missing,
            median: median.map(round1),
            p90: p90.map(round1),
        }
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A share as a percentage people read: 0.35 → "35", 0.125 → "12.5".
pub fn percent(share: f64) -> String {
    let p = (share * 1000.0).round() / 10.0;
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// Minutes as people read them: "45 min", "3 h 20 min", "2.5 days".
pub fn minutes_in_words(minutes: f64) -> String {
    if minutes < 60.0 {
        format!("{} min", minutes.round())
    } else if minutes < 48.0 * 60.0 {
        let total = minutes.round() as i64;
        match total % 60 {
            0 => format!("{} h", total / 60),
            m => format!("{} h {m} min", total / 60),
        }
    } else {
        format!("{:.1} days", minutes / 1440.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_90th_percentile_of_a_hand_computed_set() {
        // 1..=10 and two outages without their times.
        let mut values: Vec<Option<f64>> = (1..=10).map(|v| Some(f64::from(v))).collect();
        values.extend([None, None]);
        let d = Distribution::of(values);
        assert_eq!(d.count, 10);
        assert_eq!(d.missing, 2);
        assert_eq!(d.median, Some(5.5));
        assert_eq!(d.p90, Some(9.0), "ceil(0.9 × 10) = the 9th value");
        // An odd count, out of order, with one outlier: the mean (24.4) would lie.
        let d = Distribution::of([3.0, 100.0, 5.0, 4.0, 10.0].map(Some));
        assert_eq!((d.median, d.p90), (Some(5.0), Some(100.0)));
        // One value; none; a negative span is a mistake, counted missing.
        assert_eq!(Distribution::of([Some(7.0)]).p90, Some(7.0));
        let none = Distribution::of([None, Some(-5.0)]);
        assert_eq!((none.count, none.missing, none.median), (0, 2, None));
        // 20 values: the 18th is the 90th percentile.
        let d = Distribution::of((1..=20).map(|v| Some(f64::from(v))));
        assert_eq!(d.p90, Some(18.0));
    }

    #[test]
    fn shares_read_as_percentages() {
        assert_eq!(percent(0.35), "35");
        assert_eq!(percent(0.35 + 0.3), "65");
        assert_eq!(percent(0.125), "12.5");
    }

    #[test]
    fn minutes_read_as_people_say_them() {
        assert_eq!(minutes_in_words(12.4), "12 min");
        assert_eq!(minutes_in_words(200.0), "3 h 20 min");
        assert_eq!(minutes_in_words(120.0), "2 h");
        assert_eq!(minutes_in_words(3600.0), "2.5 days");
    }
}
