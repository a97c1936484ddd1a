//! One reminder sweep over 1,000,000 actions, through the service layer.
//!
//! ```sh
//! cargo bench --bench reminders                                   # SQLite in a temp folder
//! BENCH_DATABASE_URL=postgres://… cargo bench --bench reminders   # an empty PostgreSQL database
//! ```
//!
//! Fills the shared data set (`benches/support`) with a directory (10,000 owners, 100
//! managers) and COEs with owners and reviewers, then times: the first sweep of the
//! day (decides, renders and queues every digest and escalation), a second sweep the
//! same day (everything already queued: the cost every `reminders.interval_secs`),
//! and one delivery pass writing every queued email as an `.eml` file. Peak memory is
//! the process's high-water mark (VmHWM), reset before each step (Linux).

mod support;

use std::time::Instant;

use chrono::{Timelike, Utc};
use coe::email::Transport;
use coe::services::outbound::outbox;
use coe::services::reminders;

use support::{ACTIONS, OWNERS};

/// Resets the process's peak resident memory (Linux: `echo 5 > /proc/self/clear_refs`).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A memory figure of this process from /proc/self/status (`VmHWM`, `VmRSS`), in MiB.
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// Peak resident memory since the last reset, in MiB.
fn peak_mib() -> f64 {
    status_mib("VmHWM:")
}

fn main() {
    let mut bench = support::open("reminders.db");
    // Every hour is past the send hour, so the sweep decides whenever it runs.
    bench.settings.reminders.send_hour = 0;
    let filled = support::fill(&bench, true);
    let runtime =
        coe::services::Runtime::load(bench.settings.clone()).expect("the built-in templates load");
    let (env, settings) = (runtime.env(), &bench.settings);
    let mut conn = bench.pool.get().expect("conn");
    let at = Utc::now().with_hour(12).unwrap_or_else(Utc::now);

    let before = status_mib("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let first = reminders::sweep(&mut conn, env, at, false).expect("sweep");
    let first_time = t.elapsed();
    let first_peak = peak_mib();

    reset_peak();
    let t = Instant::now();
    let second = reminders::sweep(&mut conn, env, at, false).expect("sweep");
    let second_time = t.elapsed();
    let second_peak = peak_mib();
    assert!(second.queued.is_empty(), "the second sweep queues nothing");

    let dir = tempfile::tempdir().expect("dir");
    let mut file_settings = settings.clone();
    file_settings.email.file_dir = dir.path().to_owned();
    let transport = Transport::from_settings(&file_settings).expect("file transport");
    reset_peak();
    let t = Instant::now();
    let go = std::sync::atomic::AtomicBool::new(false);
    let delivered = outbox::deliver(&mut conn, &transport, env, "bench", &go).expect("deliver");
    let deliver_time = t.elapsed();
    let deliver_peak = peak_mib();

    let count = |kind: &str| first.queued.iter().filter(|p| p.kind == kind).count();
    println!(
        "{}: {ACTIONS} actions, 100,000 overdue, {OWNERS} owners (filled in {:.0} s)",
        bench.backend,
        filled.as_secs_f64()
    );
    println!("resident memory before the sweeps: {before:.0} MiB");
    println!("| step | emails | time | peak RSS |");
    println!("|---|---|---|---|");
    println!(
        "| first sweep of the day | {} queued ({} digests, {} escalations, {} writeup reminders) | {:.2} s | {:.0} MiB |",
        first.queued.len(),
        count("overdue_digest"),
        count("escalation"),
        first.queued.len() - count("overdue_digest") - count("escalation"),
        first_time.as_secs_f64(),
        first_peak
    );
    println!(
        "| second sweep, same day | 0 queued, {} already queued | {:.2} s | {:.0} MiB |",
        second.already_queued,
        second_time.as_secs_f64(),
        second_peak
    );
    println!(
        "| one delivery pass (.eml files; includes the 1,000 COE-opened emails) | {} sent, {} deferred, {} failed | {:.2} s | {:.0} MiB |",
        delivered.sent,
        delivered.deferred,
        delivered.failed,
        deliver_time.as_secs_f64(),
        deliver_peak
    );
}
