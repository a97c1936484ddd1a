//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::{web, HttpResponse};
use diesel::r2d2::R2D2Connection;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::http::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` when alive; `ready` when the database answers.
    pub status: &'static str,
    /// For readiness: `sqlite` or `postgres`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
}

/// The process is alive. Touches nothing else.
#[utoipa::path(operation_id = "healthz", get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", body = Health)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Health {
        status: "ok",
        database: None,
    })
}

/// The database is reachable: a connection answers `SELECT 1`.
#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "The database is not reachable (the reason is logged, not told)", body = ErrorBody),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let pool = state.pool.clone();
    let backend = state.settings.database_url().backend();
    // The reason (host, port, file) goes to the log, not to an unauthenticated caller.
    let unreachable = |e: &dyn std::fmt::Display| {
        tracing::warn!(error = %e, "readiness check: the database is unreachable");
        ApiError::Unavailable("database unreachable; the reason is in the service's log".into())
    };
    web::block(move || {
        let mut conn = pool
            .get_timeout(Duration::from_secs(2))
            .map_err(|e| unreachable(&e))?;
        conn.ping().map_err(|e| unreachable(&e))
    })
    .await??;
    Ok(HttpResponse::Ok().json(Health {
        status: "ready",
        database: Some(backend.to_string()),
    }))
}
