//! The heartbeat: a replica that delivers says it is alive every few seconds
//! (`services::replicas`), so that what it was sending is known stranded within a
//! minute of its stopping, whatever name it comes back under.

use std::sync::atomic::AtomicBool;

use super::Job;
use crate::config::Settings;
use crate::db::DbPool;
use crate::services::replicas;

pub const HEARTBEAT: &str = "heartbeat";

/// Every [`replicas::BEAT_EVERY`]: this replica is alive (one short write); once an
/// hour, replicas silent for a week are forgotten.
pub fn job(settings: &Settings, pool: DbPool) -> Job {
    let name = settings.replica_name();
    let mut beats: u64 = 0;
    let forget_every = 3600 / replicas::BEAT_EVERY.as_secs().max(1);
    Job {
        name: HEARTBEAT,
        run: Box::new(move |_: &AtomicBool| {
            let mut conn =
                crate::db::checkout(&pool).map_err(|_| "no database connection".to_owned())?;
            let now = crate::db::now();
            replicas::beat(&mut conn, &name, now).map_err(|e| e.to_string())?;
            if beats % forget_every == 0 {
                replicas::forget_long_gone(&mut conn, now).map_err(|e| e.to_string())?;
            }
            beats += 1;
            Ok(())
        }),
        next_in: Box::new(|| Some(replicas::BEAT_EVERY)),
    }
}
