//! `GET /api/v1/stats`: the figures leaders inspect.

use actix_web::{web, HttpResponse};

use crate::domain::Role;
use crate::error::{ApiError, ErrorBody};
use crate::http::state::AppState;
use crate::services::actions::Clock;
use crate::services::stats::{self, Stats};
use crate::services::tokens::Caller;

/// The inspection figures now.
pub fn current(state: &AppState) -> Result<Stats, ApiError> {
    let mut conn = state.pool.get()?;
    let clock = Clock::now(&state.settings);
    Ok(stats::stats(
        &mut conn,
        clock,
        state.settings.coe.writeup_days,
    )?)
}

/// Open and overdue actions by team and owner, actions closed on time and late,
/// median days to close, COEs by state, COEs waiting for review, drafts past deadline.
#[utoipa::path(operation_id = "stats", get, path = "/api/v1/stats", tag = "stats", security(("bearer" = [])),
    responses(
        (status = 200, description = "The figures", body = Stats),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
    ))]
pub async fn get(caller: Caller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Member)?;
    let figures = web::block(move || current(&state)).await??;
    Ok(HttpResponse::Ok().json(figures))
}
