//! The figures about the past: actions closed in the last 30 and 90 days, the median
//! days to close, the weeks — counted (`history`), and kept with the changes since
//! applied (`History::apply`, for `Past`). Both go through one reading of what an
//! action counts for (`Window::closing`, `Window::overdue_weeks`), so a change applied
//! takes away exactly what the action as it was had counted.

use std::sync::Arc;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use super::{first_day, local_midnight, OnTimeAndLate, Scope, Week};
use crate::db::schema::corrective_actions;
use crate::db::types;
use crate::db::DbConnection;
use crate::domain::action::{closed_on_time, ActionState};
use crate::domain::Clock;
use crate::services::actions::tally::{Image, PastChange};

/// The figures about actions closed and the weeks: the costly part of the inspection
/// (it reads every action closed in the last 90 days), kept apart so a caller can
/// reuse it while applying the changes made since (`Past`, `History::apply`).
#[derive(Debug, Clone)]
pub struct History {
    pub closed_last_30_days: OnTimeAndLate,
    pub closed_last_90_days: OnTimeAndLate,
    pub median_days_to_close: Option<f64>,
    pub weeks: Vec<Week>,
    /// The days to close behind `median_days_to_close`, in order (shared by the
    /// clones a view makes; copied when a change applies).
    days_to_close: Arc<Vec<f64>>,
    /// Each week's days to close, in order.
    week_days: Arc<Vec<Vec<f64>>>,
    /// The periods counted, as of the count.
    window: Arc<Window>,
}

/// What the figures about the past read of an action besides its state.
#[derive(Debug, Clone, Copy)]
struct Dates {
    due_date: NaiveDate,
    created_at: NaiveDateTime,
    closed_at: Option<NaiveDateTime>,
}

impl Dates {
    fn of(action: &Image) -> Dates {
        Dates {
            due_date: action.due_date,
            created_at: action.created_at,
            closed_at: action.closed_at,
        }
    }
}

/// The periods the figures count, fixed when they are counted: a kept value's
/// sliding windows stay where they were until it is counted again (ten minutes at
/// most, or the next day).
#[derive(Debug)]
struct Window {
    since_90: NaiveDateTime,
    since_30: NaiveDateTime,
    /// The first week's Monday, and its local midnight.
    first: NaiveDate,
    from: NaiveDateTime,
    /// Each week's end and the local date then. The last week ends now, whenever
    /// that is: its time is the latest there is, so that an action closed after the
    /// count is no longer overdue at its end.
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
                    && dates.due_date < *end_date
                    && dates.closed_at.is_none_or(|c| c > *end)
            })
            .map(|(week, _)| week)
    }
}

impl History {
    fn empty(clock: Clock, weeks: usize) -> History {
        let window = Window::new(clock, weeks);
        History {
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
            days_to_close: Arc::new(Vec::new()),
            week_days: Arc::new(vec![Vec::new(); weeks]),
            window: Arc::new(window),
        }
    }

    /// The figures with one change applied: what the action counted for as it was
    /// taken away, what it counts for as it is added (everyone's figures: a scope's
    /// are not kept).
    pub fn apply(&mut self, clock: Clock, change: &PastChange) -> QueryResult<()> {
        for (action, n) in [(&change.old, -1), (&change.new, 1)] {
            let Some(action) = action else {
                continue;
            };
            let window = self.window.clone();
            let dates = Dates::of(action);
            if let Some(closed) = window.closing(clock, &action.state, dates)? {
                self.count_closed(&closed, n, |days, value| {
                    if n > 0 {
                        insert_sorted(days, value)
                    } else {
                        remove_sorted(days, value)
                    }
                });
            }
            for week in window.overdue_weeks(dates) {
                self.weeks[week].overdue_at_end += n;
            }
        }
        self.median_days_to_close = median_of_sorted(&self.days_to_close);
        for (week, days) in self.weeks.iter_mut().zip(self.week_days.iter()) {
            week.median_days_to_close = median_of_sorted(days);
        }
        Ok(())
    }

    /// Counts `n` of an action closed (`n` negative: takes it away), putting its days
    /// to close among the others with `put`.
    fn count_closed(&mut self, closed: &Closed, n: i64, put: impl Fn(&mut Vec<f64>, f64)) {
        if closed.in_90 {
            self.closed_last_90_days.add(closed.on_time, n);
            if closed.in_30 {
                self.closed_last_30_days.add(closed.on_time, n);
            }
            if closed.on_time.is_some() {
                put(Arc::make_mut(&mut self.days_to_close), closed.days);
            }
        }
        if let (Some(week), Some(on_time)) = (closed.week, closed.on_time) {
            if on_time {
                self.weeks[week].closed_on_time += n;
            } else {
                self.weeks[week].closed_late += n;
            }
            put(&mut Arc::make_mut(&mut self.week_days)[week], closed.days);
        }
    }
}

/// The figures about the past at `clock`: actions closed in the last 30 and 90 days,
/// the median days to close, the weeks. Two reads: the actions closed since the
/// earlier of the 90 days' and the weeks' first day, and the actions that were
/// overdue at some week's end.
pub fn history(conn: &mut DbConnection, clock: Clock, scope: &Scope) -> QueryResult<History> {
    let mut out = History::empty(clock, scope.weeks);
    let window = out.window.clone();
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
            out.count_closed(&closed, 1, |days, value| days.push(value));
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
            .filter(corrective_actions::due_date.lt(last_date))
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
            out.weeks[week].overdue_at_end += 1;
        }
    }
    Arc::make_mut(&mut out.days_to_close).sort_by(f64::total_cmp);
    out.median_days_to_close = median_of_sorted(&out.days_to_close);
    for (week, days) in out
        .weeks
        .iter_mut()
        .zip(Arc::make_mut(&mut out.week_days).iter_mut())
    {
        days.sort_by(f64::total_cmp);
        week.median_days_to_close = median_of_sorted(days);
    }
    Ok(out)
}

/// The median of `values`, in order, to one decimal.
fn median_of_sorted(values: &[f64]) -> Option<f64> {
    let n = values.len();
    let m = match n {
        0 => return None,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    Some((m * 10.0).round() / 10.0)
}

/// `value` put in its place among `values` (in order).
fn insert_sorted(values: &mut Vec<f64>, value: f64) {
    let at = values.partition_point(|v| v.total_cmp(&value).is_lt());
    values.insert(at, value);
}

/// One `value` taken from `values` (in order), if it is there.
fn remove_sorted(values: &mut Vec<f64>, value: f64) {
    let at = values.partition_point(|v| v.total_cmp(&value).is_lt());
    if values.get(at).is_some_and(|v| v.total_cmp(&value).is_eq()) {
        values.remove(at);
    }
}

/// Days from `created` to `closed_at`, as the medians count them.
fn days_between(created: NaiveDateTime, closed_at: NaiveDateTime) -> f64 {
    (closed_at - created).num_seconds() as f64 / 86_400.0
}
