//! `GET /api/v1/stats`: the figures leaders inspect.

use std::sync::Arc;

use actix_web::{web, HttpResponse};

use crate::db::DbConnection;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::ApiQuery;
use crate::http::state::{with_conn, AppState};
use crate::services::actions::tally::{self, PastChange};
use crate::services::coverage::{self, ClosedByTeam};
use crate::services::stats::{self, ActionFigures, History, Read, Scope, Stats};
use chrono::NaiveDate;
use diesel::QueryResult;
use serde::Deserialize;
use utoipa::IntoParams;

/// The inspection figures now, for everyone. The figures about actions are counted
/// once per change to actions or people (and at least every ten minutes), not per
/// request.
pub fn current(conn: &mut DbConnection, state: &AppState) -> Result<Stats, ApiError> {
    scoped(conn, state, &Scope::default())
}

/// The inspection figures now, for `scope`: everyone's from the cache (`current`),
/// a team's or another period's counted for the asking.
pub fn scoped(conn: &mut DbConnection, state: &AppState, scope: &Scope) -> Result<Stats, ApiError> {
    let clock = state.settings.clock();
    let figures = if scope.owners.is_none() && scope.weeks == stats::WEEKS {
        // The past (actions closed, the weeks) is counted once, then kept with the
        // changes since applied; open and overdue come from the rows the database
        // keeps. Overdue is counted against the organisation's today, which the
        // changes the database keeps for the past are dated against (an action
        // written due before it is one): it is today before the past is counted.
        let today = clock.today();
        tally::move_day(conn, today)?;
        state.action_figures.get(conn, today, "", |conn| {
            let history = past_history(conn, state, Read::View)?;
            stats::action_figures_with(conn, clock, scope, stats::History::clone(&history))
                .map(Arc::new)
        })?
    } else {
        Arc::new(stats::action_figures(conn, clock, scope)?)
    };
    Ok(stats::with_action_figures(
        conn,
        clock,
        state.settings.coe.writeup_days,
        ActionFigures::clone(&figures),
        scope,
    )?)
}

/// `scoped`, with the audits a person reads (the API, the dashboard) and `/metrics`
/// does not scrape: the coverage of the scope's period and the contributing factors.
pub fn audited(
    conn: &mut DbConnection,
    state: &AppState,
    scope: &Scope,
) -> Result<Stats, ApiError> {
    let clock = state.settings.clock();
    let mut stats = scoped(conn, state, scope)?;
    let (from, to) = scope
        .period
        .unwrap_or_else(|| (stats::first_day(clock, scope.weeks), clock.today()));
    // The actions closed in the period, kept like the figures about actions: reading
    // every one of them is the audit's costly part.
    let closed = past_closed(conn, state, (from, to), Read::View)?;
    stats.coverage = coverage::audit_with(
        conn,
        &state.settings,
        scope.team.as_deref(),
        from,
        to,
        &closed,
    )?;
    stats.contributing_factors = coverage::factors(
        conn,
        &state.settings,
        scope.team.as_deref(),
        FACTOR_QUARTERS,
    )?;
    Ok(stats)
}

/// Everyone's figures about the past now.
fn past_history(
    conn: &mut DbConnection,
    state: &AppState,
    read: Read,
) -> QueryResult<Arc<History>> {
    let clock = state.settings.clock();
    let count = |conn: &mut DbConnection| stats::history(conn, clock, &Scope::default());
    let apply = |history: &mut History, _: &mut DbConnection, change: &PastChange| {
        history.apply(clock, change)
    };
    state
        .action_history
        .get(read, conn, clock, "", count, apply)
}

/// The actions closed from `from` to `to`, by team (the coverage audit's costly
/// part), kept like the figures about the past.
fn past_closed(
    conn: &mut DbConnection,
    state: &AppState,
    (from, to): (NaiveDate, NaiveDate),
    read: Read,
) -> QueryResult<Arc<ClosedByTeam>> {
    let clock = state.settings.clock();
    // By the owners' teams: counted again when the teams change.
    let key = format!("{from}|{to}|{}", stats::teams_changed(conn)?);
    let teams = coverage::OwnerTeams::default();
    let count = |conn: &mut DbConnection| coverage::closed_by_team(conn, clock, from, to);
    let apply = |closed: &mut ClosedByTeam, conn: &mut DbConnection, change: &PastChange| {
        coverage::apply_closed(closed, conn, clock, (from, to), change, &teams)
    };
    state
        .closed_by_team
        .get(read, conn, clock, &key, count, apply)
}

/// Counts everyone's figures about the past and the dashboard's coverage audit
/// ahead of the views when they were counted a while ago or on another day (the
/// server's warmer, every `stats::WARM_EVERY`): at a million actions a count takes
/// a second or more, which no view then waits for.
pub fn warm(conn: &mut DbConnection, state: &AppState) -> Result<(), ApiError> {
    let clock = state.settings.clock();
    tally::move_day(conn, clock.today())?;
    past_history(conn, state, Read::Warm)?;
    let period = (stats::first_day(clock, stats::WEEKS), clock.today());
    past_closed(conn, state, period, Read::Warm)?;
    Ok(())
}

/// How many quarters the contributing factors cover.
const FACTOR_QUARTERS: u32 = 4;

/// `GET /api/v1/stats` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsQuery {
    /// Only this team's (the directory's teams, any case): the actions its people
    /// own, the COEs they own, the incidents of its services.
    pub team: Option<String>,
    /// The coverage audit's first day (YYYY-MM-DD); 12 weeks back by default.
    pub from: Option<String>,
    /// The coverage audit's last day (YYYY-MM-DD, included); today by default.
    pub to: Option<String>,
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
    let from = from
        .unwrap_or(to - chrono::Duration::weeks(stats::WEEKS as i64) + chrono::Duration::days(1));
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

/// Open and overdue actions by team and owner, actions closed on time and late,
/// median days to close, COEs by state, COEs waiting for review, drafts past deadline.
/// With `team`, `from` or `to`, counted for the asking: one team's figures, and the
/// coverage audit of that period.
#[utoipa::path(operation_id = "stats", get, path = "/api/v1/stats", tag = "stats", security(("bearer" = [])),
    params(StatsQuery),
    responses(
        (status = 200, description = "The figures", body = Stats),
        (status = 400, description = "An unknown parameter", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 422, description = "A bad date or period", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    query: ApiQuery<StatsQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = query.0;
    let today = state.settings.clock().today();
    let period = period(query.from.as_deref(), query.to.as_deref(), today)
        .map_err(|(field, problem)| ApiError::field(field, problem))?;
    let team = query
        .team
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    let figures = with_conn(&state, move |conn, state| {
        let mut scope = match &team {
            Some(team) => Scope::team(conn, team, stats::WEEKS)?,
            None => Scope::default(),
        };
        scope.period = period;
        audited(conn, state, &scope)
    })
    .await?;
    Ok(HttpResponse::Ok().json(figures))
}
