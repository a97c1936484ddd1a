//! The figures about the past: actions closed in the last 30 and 90 days, the median
//! days to close, the weeks. Counted by the figures job for everyone (`snapshot`),
//! and on request for a team or a number of weeks it does not count.

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};

use super::{first_day, local_midnight, OnTimeAndLate, Scope, Week};
use crate::db::schema::corrective_actions;
use crate::db::types;
use crate::db::DbConnection;
use crate::domain::action::{self, closed_on_time, ActionState};
use crate::domain::Clock;

/// The figures about actions closed and the weeks: the costly part of the inspection
/// (it reads every action closed in the last 90 days), which the figures job counts
/// ahead of the views.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub closed_last_30_days: OnTimeAndLate,
    pub closed_last_90_days: OnTimeAndLate,
    pub median_days_to_close: Option<f64>,
    pub weeks: Vec<Week>,
}

/// What the figures about the past read of an action besides its state.
#[derive(Debug, Clone, Copy)]
struct Dates {
    due_date: NaiveDate,
    created_at: NaiveDateTime,
    closed_at: Option<NaiveDateTime>,
}

/// The periods the figures count, as of the count.
struct Window {
    since_90: NaiveDateTime,
    since_30: NaiveDateTime,
    /// The first week's Monday, and its local midnight.
    first: NaiveDate,
    from: NaiveDateTime,
    /// Each week's end and the local date then. The last week ends now: its time is
    /// the latest there is.
    ends: Vec<(NaiveDateTime, NaiveDate)>,
}

/// What an action closed counts for.
struct Closed {
    /// Closed in the last 90 days, and in the last 30.
    in_90: bool,
    in_30: bool,
    /// On time (`Some(true)`), late, or won't do (`None`).
    on_time: Option<bool>,
    /// Days from creation to closing.
    days: f64,
    /// The week it was done in, when one of the weeks counted.
    week: Option<usize>,
}

impl Window {
    fn new(clock: Clock, weeks: usize) -> Window {
        let now = clock.now.naive_utc();
        let first = first_day(clock, weeks);
        let ends = (0..weeks as i64)
            .map(|i| {
                if i + 1 == weeks as i64 {
                    return (NaiveDateTime::MAX, clock.local_date(now));
                }
                let end = local_midnight(clock, first + Duration::weeks(i + 1)).min(now);
                (end, clock.local_date(end))
            })
            .collect();
        Window {
            since_90: now - Duration::days(90),
            since_30: now - Duration::days(30),
            first,
            from: local_midnight(clock, first),
            ends,
        }
    }

    /// What an action in `state` with `dates` counts for as closed, if it is.
    fn closing(&self, clock: Clock, state: &str, dates: Dates) -> QueryResult<Option<Closed>> {
        let Some(closed_at) = dates.closed_at else {
            return Ok(None);
        };
        let state: ActionState = types::read("corrective_actions.state", state)?;
        let day = clock.local_date(closed_at);
        let on_time = closed_on_time(state, dates.due_date, day);
        let week = if state == ActionState::Done && closed_at >= self.from && on_time.is_some() {
            usize::try_from((day - self.first).num_days().div_euclid(7))
                .ok()
                .filter(|w| *w < self.ends.len())
        } else {
            None
        };
        Ok(Some(Closed {
            in_90: closed_at >= self.since_90,
            in_30: closed_at >= self.since_30,
            on_time,
            days: days_between(dates.created_at, closed_at),
            week,
        }))
    }

    /// The weeks at whose end an action with `dates` existed, was past its due date
    /// and was not yet closed.
    fn overdue_weeks(&self, dates: Dates) -> impl Iterator<Item = usize> + '_ {
        self.ends
            .iter()
            .enumerate()
            .filter(move |(_, (end, end_date))| {
                dates.created_at <= *end
                    && action::past_due(dates.due_date, *end_date)
                    && dates.closed_at.is_none_or(|c| c > *end)
            })
            .map(|(week, _)| week)
    }
}

/// Counts one action closed into the figures, its days to close into `days` (the
/// median's) and `week_days` (each week's).
struct Tally {
    out: History,
    days: Vec<f64>,
    week_days: Vec<Vec<f64>>,
}

impl Tally {
    fn new(window: &Window) -> Tally {
        let weeks = window.ends.len();
        Tally {
            out: History {
                closed_last_30_days: OnTimeAndLate::default(),
                closed_last_90_days: OnTimeAndLate::default(),
                median_days_to_close: None,
                weeks: (0..weeks as i64)
                    .map(|i| Week {
                        starts: window.first + Duration::weeks(i),
                        overdue_at_end: 0,
                        closed_on_time: 0,
                        closed_late: 0,
                        median_days_to_close: None,
                    })
                    .collect(),
            },
            days: Vec::new(),
            week_days: vec![Vec::new(); weeks],
        }
    }

    fn closed(&mut self, closed: &Closed) {
        if closed.in_90 {
            self.out.closed_last_90_days.add(closed.on_time, 1);
            if closed.in_30 {
                self.out.closed_last_30_days.add(closed.on_time, 1);
            }
            if closed.on_time.is_some() {
                self.days.push(closed.days);
            }
        }
        if let (Some(week), Some(on_time)) = (closed.week, closed.on_time) {
            if on_time {
                self.out.weeks[week].closed_on_time += 1;
            } else {
                self.out.weeks[week].closed_late += 1;
            }
            self.week_days[week].push(closed.days);
        }
    }

    fn done(mut self) -> History {
        self.out.median_days_to_close = median(&mut self.days);
        for (week, days) in self.out.weeks.iter_mut().zip(&mut self.week_days) {
            week.median_days_to_close = median(days);
        }
        self.out
    }
}

/// The figures about the past at `clock`: actions closed in the last 30 and 90 days,
/// the median days to close, the weeks. Two reads: the actions closed since the
/// earlier of the 90 days' and the weeks' first day, and the actions that were
/// overdue at some week's end.
pub fn history(conn: &mut DbConnection, clock: Clock, scope: &Scope) -> QueryResult<History> {
    let window = Window::new(clock, scope.weeks);
    let mut tally = Tally::new(&window);
    let closed: Vec<(String, NaiveDate, NaiveDateTime, Option<NaiveDateTime>)> =
        corrective_actions::table
            .filter(scope.actions())
            .filter(corrective_actions::closed_at.ge(window.since_90.min(window.from)))
            .select((
                corrective_actions::state,
                corrective_actions::due_date,
                corrective_actions::created_at,
                corrective_actions::closed_at,
            ))
            .load(conn)?;
    for (state, due_date, created_at, closed_at) in closed {
        let dates = Dates {
            due_date,
            created_at,
            closed_at,
        };
        if let Some(closed) = window.closing(clock, &state, dates)? {
            tally.closed(&closed);
        }
    }
    // One read of the actions that were overdue at some week's end: due before the
    // last end's date and not closed before the first end.
    let first_end =
        local_midnight(clock, window.first + Duration::weeks(1)).min(clock.now.naive_utc());
    let last_date = window.ends.last().map_or(window.first, |(_, date)| *date);
    let candidates: Vec<(NaiveDateTime, NaiveDate, Option<NaiveDateTime>)> =
        corrective_actions::table
            .filter(scope.actions())
            .filter(crate::db::rules::past_due(last_date))
            .filter(
                corrective_actions::closed_at
                    .is_null()
                    .or(corrective_actions::closed_at.gt(first_end)),
            )
            .select((
                corrective_actions::created_at,
                corrective_actions::due_date,
                corrective_actions::closed_at,
            ))
            .load(conn)?;
    for (created_at, due_date, closed_at) in candidates {
        let dates = Dates {
            due_date,
            created_at,
            closed_at,
        };
        for week in window.overdue_weeks(dates) {
            tally.out.weeks[week].overdue_at_end += 1;
        }
    }
    Ok(tally.done())
}

/// The median of `values` (put in order here), to one decimal.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let m = match n {
        0 => return None,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    Some((m * 10.0).round() / 10.0)
}

/// Days from `created` to `closed_at`, as the medians count them.
fn days_between(created: NaiveDateTime, closed_at: NaiveDateTime) -> f64 {
    (closed_at - created).num_seconds() as f64 / 86_400.0
}
