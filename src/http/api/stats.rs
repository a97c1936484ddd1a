//! `GET /api/v1/stats`: the figures leaders inspect.

use std::sync::Arc;

use actix_web::{web, HttpResponse};

use crate::db::DbConnection;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::state::{with_conn, AppState};
use crate::services::stats::{self, ActionFigures, Scope, Stats};

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
        state.action_figures.get(conn, clock.today(), "", |conn| {
            stats::action_figures(conn, clock, scope).map(Arc::new)
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

/// Open and overdue actions by team and owner, actions closed on time and late,
/// median days to close, COEs by state, COEs waiting for review, drafts past deadline.
#[utoipa::path(operation_id = "stats", get, path = "/api/v1/stats", tag = "stats", security(("bearer" = [])),
    responses(
        (status = 200, description = "The figures", body = Stats),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
    ))]
pub async fn get(_: Member, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let figures = with_conn(&state, current).await?;
    Ok(HttpResponse::Ok().json(figures))
}
