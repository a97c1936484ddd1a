//! The background worker of `coe serve`: a sweep every `reminders.interval_secs`
//! and a delivery pass every `reminders.delivery_interval_secs`, and at once when a
//! request queues an email (`outbox::Bell`), on a thread of its own (diesel and the
//! SMTP client block). Several replicas may run one each: the
//! outbox's deduplication keys and claims keep every email single.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::config::Settings;
use crate::db::DbPool;
use crate::email::{EmailTemplates, Transport};
use crate::services::{outbox, reminders, sweep_settings};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// What `/metrics` tells of this process's sweeps: when the last one ran and whether
/// it succeeded, and how many ran by outcome. (Each replica sweeps; the outbox keeps
/// every email single.)
#[derive(Default, Clone)]
pub struct SweepMetrics {
    last_run: Gauge,
    last_ok: Gauge,
    runs: Family<OutcomeLabels, Counter>,
}

impl SweepMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sweep_last_run_timestamp_seconds",
            "When this process's last reminder sweep ended (Unix time)",
            self.last_run.clone(),
        );
        registry.register(
            "sweep_last_success",
            "1 when this process's last reminder sweep succeeded, 0 when it failed",
            self.last_ok.clone(),
        );
        registry.register(
            "sweeps",
            "Reminder sweeps run by this process, by outcome (ok, failed)",
            self.runs.clone(),
        );
    }

    /// The count first and the success gauge last, so a scrape that sees
    /// `sweep_last_success 1` also sees the sweep counted.
    fn record(&self, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        self.runs.get_or_create(&OutcomeLabels { outcome }).inc();
        self.last_run.set(chrono::Utc::now().timestamp());
        self.last_ok.set(i64::from(ok));
    }
}

pub struct Scheduler {
    /// Wakes the thread from its wait.
    wake: mpsc::Sender<()>,
    /// Tells a delivery pass to stop after the email it is sending.
    stopping: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    /// Delivers chat notices (`[[chat.channels]]`) on a thread of its own, so that a
    /// slow or silent platform never holds up email; with its wake-up.
    chat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Scheduler {
    pub fn start(
        settings: Arc<Settings>,
        pool: DbPool,
        templates: Arc<EmailTemplates>,
        transport: Transport,
        metrics: SweepMetrics,
        bell: &crate::services::outbox::Bell,
    ) -> std::io::Result<Scheduler> {
        let (wake, woken) = mpsc::channel();
        // A ring is a wake-up that is not a stop: a delivery pass now.
        bell.connect(wake.clone());
        let stopping = Arc::new(AtomicBool::new(false));
        let chat = if settings.chat.channels.is_empty() {
            None
        } else {
            let (chat_wake, chat_woken) = mpsc::channel();
            let (settings, pool, flag) = (settings.clone(), pool.clone(), stopping.clone());
            let thread = std::thread::Builder::new()
                .name("coe-chat".into())
                .spawn(move || run_chat(&settings, &pool, &chat_woken, &flag))?;
            Some((chat_wake, thread))
        };
        let flag = stopping.clone();
        let thread = std::thread::Builder::new()
            .name("coe-scheduler".into())
            .spawn(move || {
                run(
                    &settings, &pool, &templates, &transport, &metrics, &woken, &flag,
                )
            })?;
        Ok(Scheduler {
            wake,
            stopping,
            thread,
            chat,
        })
    }

    /// Stops after the current step (at worst one SMTP conversation, or the rest of a
    /// sweep) and waits for the thread. Emails claimed and not sent are put back.
    pub fn stop(self) {
        self.stopping.store(true, Ordering::Relaxed);
        let _ = self.wake.send(());
        if self.thread.join().is_err() {
            tracing::error!("the scheduler thread panicked");
        }
        if let Some((wake, thread)) = self.chat {
            let _ = wake.send(());
            if thread.join().is_err() {
                tracing::error!("the chat delivery thread panicked");
            }
        }
    }
}

fn run(
    settings: &Settings,
    pool: &DbPool,
    templates: &EmailTemplates,
    transport: &Transport,
    metrics: &SweepMetrics,
    woken: &mpsc::Receiver<()>,
    stopping: &AtomicBool,
) {
    let sweep_every = Duration::from_secs(settings.reminders.interval_secs);
    let deliver_every = Duration::from_secs(settings.reminders.delivery_interval_secs);
    tracing::info!(
        sweep_every_secs = sweep_every.as_secs(),
        transport = %transport.describe(),
        "reminder scheduler started"
    );
    let mut next_sweep = Instant::now();
    loop {
        // A bug in one step must not stop reminders for good: log it and go on.
        if Instant::now() >= next_sweep {
            let ok = guarded("sweep", || sweep_once(settings, pool, templates));
            metrics.record(ok == Some(true));
            next_sweep = Instant::now() + sweep_every;
        }
        if stopping.load(Ordering::Relaxed) {
            break;
        }
        guarded("delivery pass", || {
            deliver_once(settings, pool, transport, stopping)
        });
        let wait = next_sweep
            .saturating_duration_since(Instant::now())
            .min(deliver_every);
        match woken.recv_timeout(wait) {
            // Rung (an email was queued, or `stop`): one pass answers every ring so far.
            Ok(()) => while woken.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if stopping.load(Ordering::Relaxed) {
            break;
        }
    }
    tracing::info!("reminder scheduler stopped");
}

/// Runs a step; a panic is logged and gives `None`.
fn guarded<T>(step: &str, f: impl FnOnce() -> T) -> Option<T> {
    let result = catch_unwind(AssertUnwindSafe(f));
    if result.is_err() {
        tracing::error!(
            step,
            "the scheduler step panicked; the next one runs as planned"
        );
    }
    result.ok()
}

/// One sweep; whether it succeeded.
fn sweep_once(settings: &Settings, pool: &DbPool, templates: &EmailTemplates) -> bool {
    let result = crate::db::checkout(pool)
        // `db::checkout` logged why (or the outage it belongs to).
        .map_err(|_| "no database connection".to_owned())
        .and_then(|mut conn| {
            // What this server sweeps with, so that a `coe sweep` with other settings warns.
            sweep_settings::record(&mut conn, settings, crate::db::now())
                .map_err(|e| e.to_string())?;
            // Sign-in links, requests and dead sessions a day old are of no use to anyone.
            crate::services::auth::purge(&mut conn, settings, crate::db::now())
                .map_err(|e| e.to_string())?;
            reminders::sweep(&mut conn, settings, templates, chrono::Utc::now(), false)
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(report) if !report.queued.is_empty() => {
            tracing::info!(
                queued = report.queued.len(),
                already_queued = report.already_queued,
                purged = report.purged,
                raw_bodies_purged = report.raw_bodies_purged,
                "sweep queued emails"
            );
        }
        Ok(report) => tracing::debug!(already_queued = report.already_queued, "sweep: nothing new"),
        Err(e) => {
            tracing::error!(error = %e, "sweep failed; the next one retries");
            return false;
        }
    }
    true
}

fn deliver_once(settings: &Settings, pool: &DbPool, transport: &Transport, stopping: &AtomicBool) {
    let result = crate::db::checkout(pool)
        .map_err(|_| "no database connection".to_owned())
        .and_then(|mut conn| {
            outbox::deliver(&mut conn, transport, settings, stopping).map_err(|e| e.to_string())
        });
    match result {
        Ok(r) if r != outbox::DeliveryReport::default() => tracing::info!(
            sent = r.sent,
            deferred = r.deferred,
            failed = r.failed,
            "delivery pass"
        ),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "delivery pass failed; the next one retries"),
    }
}

/// The chat thread: a delivery pass every `reminders.delivery_interval_secs` (a
/// notice decided meanwhile waits at most that long), until stopped.
fn run_chat(settings: &Settings, pool: &DbPool, woken: &mpsc::Receiver<()>, stopping: &AtomicBool) {
    let every = Duration::from_secs(settings.reminders.delivery_interval_secs);
    tracing::info!(
        channels = settings.chat.channels.len(),
        "chat delivery started"
    );
    while !stopping.load(Ordering::Relaxed) {
        guarded("chat delivery pass", || chat_once(settings, pool, stopping));
        match woken.recv_timeout(every) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    tracing::info!("chat delivery stopped");
}

fn chat_once(settings: &Settings, pool: &DbPool, stopping: &AtomicBool) {
    if settings.chat.channels.is_empty() {
        return;
    }
    let result = crate::db::checkout(pool)
        .map_err(|_| "no database connection".to_owned())
        .and_then(|mut conn| {
            crate::services::chat::deliver(&mut conn, settings, stopping).map_err(|e| e.to_string())
        });
    match result {
        Ok(r) if r != crate::services::chat::ChatReport::default() => tracing::info!(
            sent = r.sent,
            deferred = r.deferred,
            failed = r.failed,
            "chat delivery pass"
        ),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "chat delivery pass failed; the next one retries"),
    }
}
