//! The organisation's clock: one moment and the time zone that turns it into dates.
//! Every rule about "today" (overdue, due soon, writeup deadlines, reminder periods)
//! takes a `Clock`, so tests and `coe sweep --at` can set the moment.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use chrono_tz::Tz;

/// The moment now: the one place coe reads the system's clock (`db::now` and
/// `Clock::now_in` read it here).
pub fn now() -> DateTime<Utc> {
    Utc::now()
}

/// A moment and the organisation's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub now: DateTime<Utc>,
    pub tz: Tz,
}

impl Clock {
    /// The real now, in the organisation's time zone `tz`.
    pub fn now_in(tz: Tz) -> Clock {
        Clock { now: now(), tz }
    }

    /// The organisation's date at this moment.
    pub fn today(&self) -> NaiveDate {
        super::action::today(self.now, self.tz)
    }

    /// The organisation's date at the UTC time `t`.
    pub fn local_date(&self, t: NaiveDateTime) -> NaiveDate {
        local_date(t, self.tz)
    }

    /// The UTC time of the organisation's midnight starting `day` (the earliest,
    /// across a clock change).
    pub fn midnight(&self, day: NaiveDate) -> NaiveDateTime {
        use chrono::{NaiveTime, TimeZone};
        self.tz
            .from_local_datetime(&day.and_time(NaiveTime::MIN))
            .earliest()
            .map_or_else(|| day.and_time(NaiveTime::MIN), |t| t.naive_utc())
    }
}

/// The date in `tz` at the UTC time `t`.
pub fn local_date(t: NaiveDateTime, tz: Tz) -> NaiveDate {
    t.and_utc().with_timezone(&tz).date_naive()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_the_date_in_the_organisation_time_zone() {
        let now: DateTime<Utc> = "2026-11-29T23:30:00Z".parse().unwrap();
        let utc = Clock { now, tz: Tz::UTC };
        let berlin = Clock {
            now,
            tz: chrono_tz::Europe::Berlin,
        };
        assert_eq!(utc.today().to_string(), "2026-11-29");
        assert_eq!(berlin.today().to_string(), "2026-11-30");
        assert_eq!(berlin.local_date(now.naive_utc()).to_string(), "2026-11-30");
    }
}
