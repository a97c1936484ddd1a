//! The watch on the connections kept in coe: every
//! [`connections::WATCH_EVERY`] a replica reads the `connections_revision` mark (one
//! short read) and, when another replica saved a channel or a tracker, reads them all
//! again. What it cannot read (a key it was not given, a broken row) is logged and the
//! connections in use stay.

use std::sync::atomic::AtomicBool;

use super::Job;
use crate::db::DbPool;
use crate::services::connections::{self, LiveConnections};

pub const WATCH: &str = "connections";

pub fn job(live: LiveConnections, pool: DbPool) -> Job {
    Job {
        name: WATCH,
        run: Box::new(move |_: &AtomicBool| {
            let mut conn =
                crate::db::checkout(&pool).map_err(|_| "no database connection".to_owned())?;
            if live.refresh(&mut conn).map_err(|e| e.to_string())? {
                tracing::info!(connections = ?live, "connections read again: one was saved");
            }
            Ok(())
        }),
        next_in: Box::new(|| Some(connections::WATCH_EVERY)),
    }
}
