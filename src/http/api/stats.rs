//! `GET /api/v1/stats`: the figures leaders inspect (`services::figures::stats::inspect`).

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::ApiQuery;
use crate::http::state::{with_conn, AppState};
use crate::services::figures::stats::{self, inspect, Scope, Stats};
use serde::Deserialize;
use utoipa::IntoParams;

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
    let period = inspect::period(query.from.as_deref(), query.to.as_deref(), today)
        .map_err(|(field, problem)| ApiError::field(field, problem))?;
    let team = query
        .team
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    let figures = with_conn(&state, move |conn, state| {
        let scope = Scope::asked(conn, team.as_deref(), stats::WEEKS, period)?;
        let live = &state.live_figures;
        Ok(inspect::audited(conn, state.env(), live, &scope)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(figures))
}
