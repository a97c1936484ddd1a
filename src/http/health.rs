//! Liveness and readiness probes.

use std::time::Duration;

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
/// SQLite file (and its `-wal` and `-shm`) opens for writing, and no write failed for
/// a full disk or a lost server in the last 30 seconds without one succeeding since.
#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "The database is not reachable (`unavailable`; the reason is logged, not told), cannot be written (`database_read_only`) or its disk is full (`disk_full`)", body = ErrorBody),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let pool = state.pool.clone();
    let url = state.settings.database_url();
    let backend = url.backend();
    // The reason (host, port, file) goes to the log, not to an unauthenticated caller.
    let unreachable = |e: &dyn std::fmt::Display| {
        tracing::warn!(error = %e, "readiness check: the database is unreachable");
        ApiError::Unavailable("database unreachable; the reason is in the service's log".into())
    };
    web::block(move || {
        let mut conn = pool
            .get_timeout(Duration::from_secs(2))
            .map_err(|e| unreachable(&e))?;
        conn.ping().map_err(|e| unreachable(&e))?;
        if let DatabaseUrl::Sqlite(path) = &url {
            if let Some(file) = read_only_file(path) {
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

/// The first of a SQLite database's files that exists and does not open for writing.
fn read_only_file(path: &std::path::Path) -> Option<std::path::PathBuf> {
    if path.as_os_str() == ":memory:" {
        return None;
    }
    ["", "-wal", "-shm"]
        .into_iter()
        .map(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name)
        })
        .filter(|file| file.exists())
        .find(|file| std::fs::OpenOptions::new().write(true).open(file).is_err())
}
