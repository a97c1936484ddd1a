//! The figures about the past: actions closed in the last 30 and 90 days, the median
//! days to close, the weeks — counted (`history`), and kept with the actions closed
//! since added (`History::absorb`, for `Past`).

use std::sync::Arc;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use super::{first_day, local_midnight, OnTimeAndLate, Scope, Week};
use crate::db::schema::corrective_actions;
use crate::db::types;
use crate::db::DbConnection;
use crate::domain::action::{closed_on_time, ActionState};
use crate::domain::Clock;
use crate::services::actions::tally::Closing;

/// The figures about actions closed and the weeks: the costly part of the inspection
/// (it reads every action closed in the last 90 days), kept apart so a caller can
/// reuse it while nothing it counts changes, adding the actions closed since
/// (`Past`, `History::absorb`).
#[derive(Debug, Clone, Default)]
pub struct History {
    pub closed_last_30_days: OnTimeAndLate,
    pub closed_last_90_days: OnTimeAndLate,
    pub median_days_to_close: Option<f64>,
    pub weeks: Vec<Week>,
    /// The days to close behind `median_days_to_close`, in order (shared by the
    /// clones a view makes; copied when an action closes).
    days_to_close: Arc<Vec<f64>>,
    /// Each week's days to close, in order.
    week_days: Arc<Vec<Vec<f64>>>,
}

impl History {
    /// The figures counted at `counted_at` with one action closed since added, as a
    /// count at `counted_at` would have them had it been closed then (everyone's
    /// figures: a scope's are not kept).
    pub fn absorb(
        &mut self,
        clock: Clock,
        closing: &Closing,
        counted_at: NaiveDateTime,
    ) -> QueryResult<()> {
        let state: ActionState = types::read("corrective_actions.state", &closing.state)?;
        let closed_at = closing.closed_at;
        let day = clock.local_date(closed_at);
        let on_time = closed_on_time(state, closing.due_date, day);
        if closed_at >= counted_at - Duration::days(90) {
            self.closed_last_90_days.count(on_time);
            if on_time.is_some() {
                let days = Arc::make_mut(&mut self.days_to_close);
                insert_sorted(days, days_between(closing.created_at, closed_at));
                self.median_days_to_close = median_of_sorted(days);
            }
        }
        if closed_at >= counted_at - Duration::days(30) {
            self.closed_last_30_days.count(on_time);
        }
        let Some(first) = self.weeks.first().map(|w| w.starts) else {
            return Ok(());
        };
        // Counted open at the last week's end (the counting): overdue then, if it was.
        let last = self.weeks.len() - 1;
        if closing.created_at <= counted_at && closing.due_date < clock.local_date(counted_at) {
            self.weeks[last].overdue_at_end -= 1;
        }
        let index = usize::try_from((day - first).num_days().div_euclid(7)).ok();
        if let (Some(week), Some(on_time)) = (index.filter(|i| *i <= last), on_time) {
            if on_time {
                self.weeks[week].closed_on_time += 1;
            } else {
                self.weeks[week].closed_late += 1;
            }
            let days = &mut Arc::make_mut(&mut self.week_days)[week];
            insert_sorted(days, days_between(closing.created_at, closed_at));
            self.weeks[week].median_days_to_close = median_of_sorted(days);
        }
        Ok(())
    }
}

/// An action closed: its state, due date, creation and closing.
type Closed = (String, NaiveDate, NaiveDateTime, Option<NaiveDateTime>);

/// The figures about the past at `clock`: actions closed in the last 30 and 90 days,
/// the median days to close, the weeks. The actions closed are read once, from the
/// earlier of the 90 days' and the weeks' first day, for both.
pub fn history(conn: &mut DbConnection, clock: Clock, scope: &Scope) -> QueryResult<History> {
    let now = clock.now.naive_utc();
    let since_90 = now - Duration::days(90);
    let since_30 = now - Duration::days(30);
    let weeks_from = local_midnight(clock, first_day(clock, scope.weeks));
    let closed: Vec<Closed> = corrective_actions::table
        .filter(scope.actions())
        .filter(corrective_actions::closed_at.ge(since_90.min(weeks_from)))
        .select((
            corrective_actions::state,
            corrective_actions::due_date,
            corrective_actions::created_at,
            corrective_actions::closed_at,
        ))
        .load(conn)?;
    let mut last_30 = OnTimeAndLate::default();
    let mut last_90 = OnTimeAndLate::default();
    let mut days_to_close: Vec<f64> = Vec::new();
    for (state, due, created, closed_at) in &closed {
        let Some(closed_at) = *closed_at else {
            continue;
        };
        if closed_at < since_90 {
            continue;
        }
        let state: ActionState = types::read("corrective_actions.state", state)?;
        let on_time = closed_on_time(state, *due, clock.local_date(closed_at));
        last_90.count(on_time);
        if closed_at >= since_30 {
            last_30.count(on_time);
        }
        if on_time.is_some() {
            days_to_close.push(days_between(*created, closed_at));
        }
    }
    days_to_close.sort_by(f64::total_cmp);
    let (weeks, week_days) = weeks(conn, clock, scope, &closed)?;
    Ok(History {
        closed_last_30_days: last_30,
        closed_last_90_days: last_90,
        median_days_to_close: median_of_sorted(&days_to_close),
        weeks,
        days_to_close: Arc::new(days_to_close),
        week_days: Arc::new(week_days),
    })
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

/// Days from `created` to `closed_at`, as the medians count them.
fn days_between(created: NaiveDateTime, closed_at: NaiveDateTime) -> f64 {
    (closed_at - created).num_seconds() as f64 / 86_400.0
}

/// The weekly figures of the last `scope.weeks` weeks, and each week's days to close
/// (in order, for its median); `closed`: the scope's actions closed since the first
/// week began, at least.
fn weeks(
    conn: &mut DbConnection,
    clock: Clock,
    scope: &Scope,
    closed: &[Closed],
) -> QueryResult<(Vec<Week>, Vec<Vec<f64>>)> {
    let weeks = scope.weeks;
    let first = first_day(clock, weeks);
    let midnight = |day: NaiveDate| local_midnight(clock, day);
    let now = clock.now.naive_utc();
    // Each week's end: its last moment (now, for this week) and the local date then.
    let ends: Vec<(NaiveDateTime, NaiveDate)> = (0..weeks as i64)
        .map(|i| {
            let end = midnight(first + Duration::weeks(i + 1)).min(now);
            (end, clock.local_date(end))
        })
        .collect();
    let mut out: Vec<Week> = (0..weeks as i64)
        .map(|i| Week {
            starts: first + Duration::weeks(i),
            overdue_at_end: 0,
            closed_on_time: 0,
            closed_late: 0,
            median_days_to_close: None,
        })
        .collect();
    // One read of the actions that were overdue at some week's end: due before the
    // last end's date and not closed before the first end. Each is counted in every
    // week at whose end it existed, was past its due date and was not yet closed.
    let (first_end, _) = ends[0];
    let (_, last_date) = ends[weeks - 1];
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
    for (created, due, closed_at) in candidates {
        for (week, (end, end_date)) in out.iter_mut().zip(&ends) {
            if created <= *end && due < *end_date && closed_at.is_none_or(|c| c > *end) {
                week.overdue_at_end += 1;
            }
        }
    }
    let mut days: Vec<Vec<f64>> = vec![Vec::new(); weeks];
    let from = midnight(first);
    let done = closed
        .iter()
        .filter(|(state, ..)| state == ActionState::Done.as_str());
    for (state, due, created, closed_at) in done {
        let Some(closed_at) = closed_at.filter(|c| *c >= from) else {
            continue;
        };
        let day = clock.local_date(closed_at);
        let Ok(index) = usize::try_from((day - first).num_days() / 7) else {
            continue;
        };
        let Some(week) = out.get_mut(index) else {
            continue;
        };
        let state: ActionState = types::read("corrective_actions.state", state)?;
        match closed_on_time(state, *due, day) {
            Some(true) => week.closed_on_time += 1,
            Some(false) => week.closed_late += 1,
            None => continue,
        }
        days[index].push(days_between(*created, closed_at));
    }
    for (week, days) in out.iter_mut().zip(days.iter_mut()) {
        days.sort_by(f64::total_cmp);
        week.median_days_to_close = median_of_sorted(days);
    }
    Ok((out, days))
}
