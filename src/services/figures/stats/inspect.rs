//! What the dashboard, `GET /api/v1/stats`, the weekly digest and `/metrics` read:
//! the live counters (open and overdue, kept per owner by the database) with the
//! figures about the past the figures job counted (`snapshot`), dated; a team's
//! figures, other weeks or another period counted for the asking.

use std::sync::Arc;

use chrono::{Duration, NaiveDate};
use diesel::QueryResult;

use super::{
    first_day, history, live_figures, snapshot, with_action_figures, with_history, LiveFigures,
    Scope, Stats, WEEKS,
};
use crate::db::DbConnection;
use crate::services::coe::actions::totals_cache::TotalsCache;
use crate::services::figures::coverage;
use crate::services::Env;

/// Everyone's open and overdue figures, kept between the changes they count (summing
/// 10,000 owners' kept rows by team costs a view more than the rest of the figures).
pub type LiveCache = TotalsCache<Arc<LiveFigures>>;

/// How many quarters the contributing factors cover.
const FACTOR_QUARTERS: u32 = 4;

/// How old the job's figures may be before a view counts them itself: the job has
/// then missed two turns (it is failing, or no replica runs it).
fn max_age(env: Env<'_>) -> Option<Duration> {
    let settings = env.settings;
    match settings.server.figures_every_secs {
        0 => None,
        every => Some(Duration::seconds(3 * every as i64)),
    }
}

/// The inspection figures now, for everyone.
pub fn current(conn: &mut DbConnection, env: Env<'_>, live: &LiveCache) -> QueryResult<Stats> {
    scoped(conn, env, live, &Scope::default())
}

/// The inspection figures now, for `scope`: everyone's figures about the past as the
/// figures job counted them (when it did, today and recently), else counted now.
pub fn scoped(
    conn: &mut DbConnection,
    env: Env<'_>,
    live: &LiveCache,
    scope: &Scope,
) -> QueryResult<Stats> {
    let settings = env.settings;
    let clock = settings.clock();
    let kept = match max_age(env) {
        Some(age) if scope.owners.is_none() && scope.weeks == WEEKS => {
            snapshot::past(conn, clock, age)?
        }
        _ => None,
    };
    let (past, counted_at) = match kept {
        Some(kept) => (kept.figures, Some(kept.at)),
        None => (history(conn, clock, scope)?, None),
    };
    let now = match scope.owners {
        None => live.get(conn, clock.today(), "everyone", |conn| {
            live_figures(conn, clock, scope).map(Arc::new)
        })?,
        Some(_) => Arc::new(live_figures(conn, clock, scope)?),
    };
    let figures = with_history(LiveFigures::clone(&now), past);
    let mut stats = with_action_figures(conn, clock, settings.coe.writeup_days, figures, scope)?;
    stats.past_counted_at = counted_at;
    Ok(stats)
}

/// `scoped`, with the audits a person reads (the API, the dashboard) and `/metrics`
/// does not scrape: the coverage of the scope's period and the contributing factors.
pub fn audited(
    conn: &mut DbConnection,
    env: Env<'_>,
    live: &LiveCache,
    scope: &Scope,
) -> QueryResult<Stats> {
    let settings = env.settings;
    let clock = settings.clock();
    let mut stats = scoped(conn, env, live, scope)?;
    let default_period = snapshot::default_period(clock);
    let (from, to) = scope
        .period
        .unwrap_or_else(|| (first_day(clock, scope.weeks), clock.today()));
    // Reading every action closed in the period is the audit's costly part: the job
    // counted the default period's.
    let kept = match max_age(env) {
        Some(age) if (from, to) == default_period => {
            snapshot::closed(conn, clock, (from, to), age)?
        }
        _ => None,
    };
    let closed = match kept {
        Some(kept) => {
            stats.past_counted_at = stats.past_counted_at.map(|at| at.min(kept.at));
            kept.figures
        }
        None => {
            // Counted now: the figures about the past say no earlier time than that.
            stats.past_counted_at = None;
            coverage::closed_by_team(conn, clock, from, to)?
        }
    };
    stats.coverage = coverage::audit_with(conn, env, scope.team.as_deref(), from, to, &closed)?;
    stats.contributing_factors =
        coverage::factors(conn, env, scope.team.as_deref(), FACTOR_QUARTERS)?;
    Ok(stats)
}

/// The audit's period from `from` and `to` (YYYY-MM-DD), when either is given: the
/// problem, naming the field, when it is not a date or the period runs backwards or
/// longer than a year and a half.
pub fn period(
    from: Option<&str>,
    to: Option<&str>,
    today: NaiveDate,
) -> Result<Option<(NaiveDate, NaiveDate)>, (String, String)> {
    let day = |field: &str, v: Option<&str>| -> Result<Option<NaiveDate>, (String, String)> {
        match v.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => {
                let date = NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|_| {
                    (
                        field.to_owned(),
                        format!("must be a date as YYYY-MM-DD (got {v:?})"),
                    )
                })?;
                // Dates at chrono's ends overflow the period's arithmetic.
                crate::domain::action::check_date(date).map_err(|p| (field.to_owned(), p))?;
                Ok(Some(date))
            }
        }
    };
    let (from, to) = (day("from", from)?, day("to", to)?);
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let to = to.unwrap_or(today);
    let from = from.unwrap_or(to - Duration::weeks(WEEKS as i64) + Duration::days(1));
    if from > to {
        return Err(("from".into(), format!("must not be after `to` ({to})")));
    }
    if (to - from).num_days() > 550 {
        return Err((
            "to".into(),
            "the period may be at most 550 days (a year and a half)".into(),
        ));
    }
    Ok(Some((from, to)))
}
