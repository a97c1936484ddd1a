//! The review meeting of one COE: the organisation's weekly slot ("thursday 15:00"
//! in its time zone), and when the next one is.

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, NaiveTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;

/// A weekly slot: a day of the week and a time of day, in the organisation's zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub weekday: Weekday,
    pub time: NaiveTime,
}

/// Reads `thursday 15:00` (any case; `thu 15:00` too).
pub fn parse_slot(text: &str) -> Result<Slot, String> {
    let problem = || format!("must be a day and a time, such as \"thursday 15:00\" (got {text:?})");
    let mut words = text.split_whitespace();
    let (Some(day), Some(time), None) = (words.next(), words.next(), words.next()) else {
        return Err(problem());
    };
    let weekday = day.parse::<Weekday>().map_err(|_| problem())?;
    let time = NaiveTime::parse_from_str(time, "%H:%M").map_err(|_| problem())?;
    Ok(Slot { weekday, time })
}

/// The next time of `slot` after `now` (at least an hour ahead, so that an
/// invitation is never for a meeting already begun), as UTC.
pub fn next_slot(slot: Slot, now: DateTime<Utc>, tz: Tz) -> NaiveDateTime {
    let earliest = now + Duration::hours(1);
    let local = earliest.with_timezone(&tz).date_naive();
    (0..=7)
        .map(|d| local + Duration::days(d))
        .filter(|day| day.weekday() == slot.weekday)
        .filter_map(|day| tz.from_local_datetime(&day.and_time(slot.time)).earliest())
        .map(|t| t.with_timezone(&Utc))
        .find(|t| *t >= earliest)
        .unwrap_or(earliest + Duration::weeks(1))
        .naive_utc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weekly_slot_is_read_and_its_next_time_found_in_the_organisations_zone() {
        let slot = parse_slot("Thursday 15:00").expect("a slot");
        assert_eq!(slot.weekday, Weekday::Thu);
        assert!(parse_slot("someday 15:00").is_err());
        assert!(parse_slot("thursday").is_err());
        assert!(parse_slot("thu 25:00").is_err());
        let tz: Tz = "Europe/Berlin".parse().expect("zone");
        // Monday 7 December 2026, 10:00 UTC: Thursday 10 December 15:00 in Berlin is 14:00 UTC.
        let now: DateTime<Utc> = "2026-12-07T10:00:00Z".parse().expect("time");
        assert_eq!(next_slot(slot, now, tz).to_string(), "2026-12-10 14:00:00");
        // On the Thursday, past the hour: the next week's.
        let now: DateTime<Utc> = "2026-12-10T13:30:00Z".parse().expect("time");
        assert_eq!(next_slot(slot, now, tz).to_string(), "2026-12-17 14:00:00");
    }
}
