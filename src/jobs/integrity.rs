//! The start-up integrity check: once, on SQLite, `PRAGMA quick_check` reads every
//! page with a connection of its own, so that a file it calls corrupt is reported by
//! `/readyz` (`database_corrupt`) before a request meets it (`db::backup::quick_check`).
//! Nothing on PostgreSQL.

use std::time::Instant;

use super::Job;
use crate::config::database::DatabaseUrl;
use crate::config::Settings;

/// The check, or none (PostgreSQL, an in-memory database).
pub fn job(settings: &Settings) -> Option<Job> {
    let url = settings.database_url();
    match &url {
        DatabaseUrl::Sqlite(path) if path.as_os_str() != ":memory:" => {}
        _ => return None,
    }
    let busy_timeout_ms = settings.database.busy_timeout_ms;
    Some(Job {
        name: "integrity",
        run: Box::new(move |_| {
            let started = Instant::now();
            match crate::db::backup::quick_check(&url, busy_timeout_ms) {
                Ok(None) => {
                    tracing::info!(
                        took_ms = started.elapsed().as_millis() as u64,
                        "database integrity checked (PRAGMA quick_check): ok"
                    );
                    Ok(())
                }
                // Reported (and `/readyz` answers it) by the check itself.
                Ok(Some(found)) => Err(format!("the database is corrupt: {found}")),
                Err(e) => Err(format!("cannot check the database's integrity: {e}")),
            }
        }),
        next_in: Box::new(|| None),
    })
}
