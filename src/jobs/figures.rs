//! The figures job: counts the figures about the past (actions closed in 30 and 90
//! days, the median days to close, the weeks, the coverage audit's actions closed)
//! every `server.figures_every_secs` and just after each local midnight, into
//! `figure_snapshots` (`services::figures::stats::snapshot`). The dashboard's first view after
//! any change then reads a row instead of every action closed in 90 days.

use std::sync::Arc;
use std::time::Duration;

use super::Job;
use crate::config::Settings;
use crate::db::DbPool;

/// The job, or none when `server.figures_every_secs` is 0 (every view counts).
pub fn job(settings: Arc<Settings>, pool: DbPool) -> Option<Job> {
    let every = Duration::from_secs(settings.server.figures_every_secs);
    if every.is_zero() {
        return None;
    }
    let at = settings.clone();
    Some(Job {
        name: "figures",
        run: Box::new(move |_| {
            let mut conn = crate::db::checkout(&pool).map_err(|e| e.to_string())?;
            crate::services::figures::stats::snapshot::count(&mut conn, at.clock())
                .map_err(|e| e.to_string())
        }),
        next_in: Box::new(move || Some(every.min(until_next_day(&settings)))),
    })
}

/// How long until just after the organisation's next midnight, when the day's
/// windows move.
fn until_next_day(settings: &Settings) -> Duration {
    let clock = settings.clock();
    let midnight = clock.midnight(clock.today() + chrono::Duration::days(1));
    let left = midnight - clock.now.naive_utc();
    left.to_std().unwrap_or_default() + Duration::from_secs(1)
}
