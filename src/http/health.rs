//! Liveness and readiness probes.

use actix_web::{web, HttpResponse};
use diesel::r2d2::R2D2Connection;
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::database::DatabaseUrl;
use crate::db::fault::{self, Fault};
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

/// The database is reachable (a connection answers `SELECT 1`) and can be written: a
/// SQLite file (and its `-wal` and `-shm`) may be written by this process, SQLite has
/// not called it corrupt (at start, `PRAGMA quick_check`; or any query since), and no
/// write failed for a full disk or a lost server in the last 30 seconds without one
/// succeeding since.
#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "The replica is stopping (`unavailable`, during `server.drain_secs` after SIGTERM), the database is not reachable (`unavailable`; the reason is logged, not told), cannot be written (`database_read_only`), its disk is full (`disk_full`) or SQLite calls it corrupt (`database_corrupt`)", body = ErrorBody),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if state.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(ApiError::Unavailable(
            "this replica is stopping: send requests to another".into(),
        ));
    }
    let pool = state.pool.clone();
    let url = state.settings.database_url();
    let backend = url.backend();
    // The reason (host, port, file) goes to the log, not to an unauthenticated caller.
    let unreachable = |e: &dyn std::fmt::Display| {
        // A checkout that failed is logged by `db::checkout`.
        tracing::debug!(error = %e, "readiness check: the database is unreachable");
        ApiError::Unavailable("database unreachable; the reason is in the service's log".into())
    };
    web::block(move || {
        let mut conn = crate::db::checkout(&pool).map_err(|e| unreachable(&e))?;
        conn.ping().map_err(|e| unreachable(&e))?;
        if let DatabaseUrl::Sqlite(path) = &url {
            if let Some(file) = crate::db::fault::read_only_file(path) {
                tracing::warn!(file = %file.display(), "readiness check: the database file cannot be written");
                return Err(ApiError::Database(Fault::ReadOnly));
            }
        }
        match fault::latest() {
            Some(fault) => Err(ApiError::Database(fault)),
            None => Ok(()),
        }
    })
    .await??;
    Ok(HttpResponse::Ok().json(Health {
        status: "ready",
        database: Some(backend.to_string()),
    }))
}
