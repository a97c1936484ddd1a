//! Working from Matrix: the rooms of each Matrix channel's bot read and answered
//! (`services::from_chat::matrix`), one long poll after another, every move counted in
//! `/metrics` (`coe_chat_moves_total{platform="matrix"}`). Several replicas may listen
//! side by side: each event's move is made once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Job;
use crate::db::DbPool;
use crate::http::metrics::Metrics;
use crate::services::from_chat::matrix::{listen, Heard};
use crate::services::Runtime;

/// How long one read waits for something to be said.
const WAIT: Duration = Duration::from_secs(5);

/// Reads and answers once, waiting up to `wait`; counts the moves.
pub fn pass(pool: &DbPool, runtime: &Runtime, metrics: &Metrics, wait: Duration) -> Heard {
    let heard = listen(pool, runtime.env(), wait);
    for (what, outcome) in &heard.moves {
        metrics.chat_move("matrix", what, outcome);
    }
    heard
}

/// The job: always on (a Matrix channel may be set up in the pages at any time; with
/// none, a run reads the connections in memory and nothing else). After a failure
/// (the homeserver away), the next read is in 30 seconds.
pub fn job(runtime: Runtime, pool: DbPool, metrics: Arc<Metrics>) -> Job {
    let failing = Arc::new(AtomicBool::new(false));
    let failed = failing.clone();
    Job {
        name: "matrix",
        run: Box::new(move |_stop| {
            // Failing until the pass says otherwise: a pass that panics is followed by
            // the slower pace too.
            failing.store(true, Ordering::Relaxed);
            let heard = pass(&pool, &runtime, &metrics, WAIT);
            failing.store(!heard.failures.is_empty(), Ordering::Relaxed);
            if heard.failures.is_empty() {
                Ok(())
            } else {
                Err(heard.failures.join("; "))
            }
        }),
        next_in: Box::new(move || {
            Some(if failed.load(Ordering::Relaxed) {
                Duration::from_secs(30)
            } else {
                Duration::from_millis(500)
            })
        }),
    }
}
