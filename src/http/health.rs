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

/// Why this replica is not ready: what `/readyz` answers 503 for, and the `reason` of
/// `coe_not_ready` in `/metrics` (both ask `readiness`, so they agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// SIGTERM arrived: the replica drains (`server.drain_secs`).
    Stopping,
    /// Every connection of the pool is in use and none came free within
    /// `database.connect_timeout_secs`.
    PoolExhausted,
    /// No connection to the database could be made or it did not answer.
    Unreachable,
    /// The database answers but cannot be written (`db::fault`).
    Fault(Fault),
}

impl NotReady {
    /// The `reason` label of `coe_not_ready` (one of `http::metrics::NOT_READY_REASONS`).
    pub fn reason(self) -> &'static str {
        match self {
            NotReady::Stopping => "stopping",
            NotReady::PoolExhausted => "pool_exhausted",
            NotReady::Unreachable => "unavailable",
            NotReady::Fault(fault) => fault.code(),
        }
    }

    /// The answer of `/readyz` (its code is `unavailable` when stopping, unreachable
    /// or with the pool exhausted; the fault's code otherwise).
    fn answer(self) -> ApiError {
        match self {
            NotReady::Stopping => {
                ApiError::Unavailable("this replica is stopping: send requests to another".into())
            }
            NotReady::PoolExhausted => ApiError::Unavailable(
                "every database connection of this replica is in use; try again shortly".into(),
            ),
            // The reason (host, port, file) goes to the log, not to an unauthenticated caller.
            NotReady::Unreachable => ApiError::Unavailable(
                "database unreachable; the reason is in the service's log".into(),
            ),
            NotReady::Fault(fault) => ApiError::Database(fault),
        }
    }
}

/// Whether this replica is ready (see `readyz`). Blocks: run it off the async threads.
pub fn readiness(state: &AppState) -> Result<(), NotReady> {
    if state.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(NotReady::Stopping);
    }
    let pool = &state.pool;
    let mut conn = crate::db::checkout(pool).map_err(|e| {
        // A checkout that failed is logged by `db::checkout`. Every connection made and
        // none idle: the pool is exhausted (in an outage, connections leave the pool).
        let now = pool.state();
        if now.connections >= pool.max_size() && now.idle_connections == 0 {
            tracing::debug!(error = %e, "readiness check: every connection of the pool is in use");
            NotReady::PoolExhausted
        } else {
            tracing::debug!(error = %e, "readiness check: the database is unreachable");
            NotReady::Unreachable
        }
    })?;
    conn.ping().map_err(|e| {
        tracing::debug!(error = %e, "readiness check: the database is unreachable");
        NotReady::Unreachable
    })?;
    drop(conn);
    if let DatabaseUrl::Sqlite(path) = &state.settings.database_url() {
        if let Some(file) = crate::db::fault::read_only_file(path) {
            tracing::warn!(file = %file.display(), "readiness check: the database file cannot be written");
            return Err(NotReady::Fault(Fault::ReadOnly));
        }
    }
    match fault::latest() {
        Some(fault) => Err(NotReady::Fault(fault)),
        None => Ok(()),
    }
}

/// The database is reachable (a connection answers `SELECT 1`) and can be written: a
/// SQLite file (and its `-wal` and `-shm`) may be written by this process, SQLite has
/// not called it corrupt (at start, `PRAGMA quick_check`; or any query since), and no
/// write failed for a full disk, a lock another process held or a lost server in the
/// last 30 seconds without one succeeding since. `/metrics` exports the same answer
/// (`coe_ready`, `coe_not_ready{reason}`).
#[utoipa::path(operation_id = "readyz", get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "The replica is stopping (`unavailable`, during `server.drain_secs` after SIGTERM), the database is not reachable or every connection of the pool is in use (`unavailable`; the reason is logged, not told), cannot be written (`database_read_only`), its disk is full (`disk_full`), another process holds SQLite's lock (`database_locked`) or SQLite calls it corrupt (`database_corrupt`)", body = ErrorBody),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let backend = state.settings.database_url().backend();
    let shared = state.clone();
    web::block(move || readiness(&shared).map_err(NotReady::answer)).await??;
    Ok(HttpResponse::Ok().json(Health {
        status: "ready",
        database: Some(backend.to_string()),
    }))
}
