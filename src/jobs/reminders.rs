//! The reminder jobs: a sweep every `reminders.interval_secs` (it decides and queues
//! the reminders, and purges what is no longer of use), email delivery every
//! `reminders.delivery_interval_secs` and at once when a request or a sweep queues an
//! email (`outbox::DeliveryWaker`), and chat delivery (`[[chat.channels]]`) on a job of its
//! own, so that a slow or silent platform never holds up email.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Job;
use crate::config::Settings;
use crate::db::DbPool;
use crate::email::Transport;
use crate::services::outbound::outbox;
use crate::services::outbound::queue::{Queue, Report};
use crate::services::{reminders, sweep_settings, Env, Runtime};

/// The delivery job's name (the bell wakes it).
pub const DELIVERY: &str = "delivery";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// What `/metrics` has told of this process's sweeps since before the jobs had
/// metrics of their own (`job_*{job="sweep"}` says the same): kept for the alerts
/// written against them.
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
        self.last_run.set(crate::domain::clock::now().timestamp());
        self.last_ok.set(i64::from(ok));
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
    outcome: &'static str,
}

/// What `/metrics` tells of this process's deliveries: every queue's rows by outcome,
/// and, as before the queue was one, the emails sent and their failures by reason.
#[derive(Default, Clone)]
pub struct DeliveryMetrics {
    deliveries: Family<QueueLabels, Counter>,
    sent: Counter,
    failures: Family<ReasonLabels, Counter>,
}

impl DeliveryMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "deliveries",
            "Rows of the delivery queue this process handled, by queue (email, chat, \
             tracker) and outcome (sent; deferred: to be tried again; failed: for good)",
            self.deliveries.clone(),
        );
        registry.register(
            "emails_sent",
            "Emails this process handed to the SMTP server",
            self.sent.clone(),
        );
        registry.register(
            "email_delivery_failures",
            "Failed attempts to send an email by this process, by reason: rejected (the \
             server refused it for good: 5xx, an invalid address), temporary (4xx: retried), \
             unreachable (no connection, TLS: retried)",
            self.failures.clone(),
        );
    }

    fn record(&self, queue: Queue, report: &Report) {
        for (outcome, n) in [
            ("sent", report.sent),
            ("deferred", report.deferred),
            ("failed", report.failed),
        ] {
            self.deliveries
                .get_or_create(&QueueLabels {
                    queue: queue.name(),
                    outcome,
                })
                .inc_by(n as u64);
        }
        if queue != Queue::Email {
            return;
        }
        self.sent.inc_by(report.sent as u64);
        for (reason, n) in [
            ("rejected", report.rejected),
            ("temporary", report.temporary),
            ("unreachable", report.unreachable),
        ] {
            self.failures
                .get_or_create(&ReasonLabels { reason })
                .inc_by(n as u64);
        }
    }
}

/// The sweep: what this server sweeps with (so that a `coe sweep` with other settings
/// warns), the purge of sign-in links and sessions of no more use, and the reminders
/// (`reminders::sweep`); then the delivery job is woken for what it queued.
pub fn sweep(
    runtime: Runtime,
    pool: DbPool,
    bell: outbox::DeliveryWaker,
    metrics: SweepMetrics,
) -> Job {
    let every = Duration::from_secs(runtime.settings.reminders.interval_secs);
    Job {
        name: "sweep",
        run: Box::new(move |_| {
            let swept = sweep_once(runtime.env(), &pool);
            metrics.record(swept.is_ok());
            bell.wake_if_queued();
            swept
        }),
        next_in: Box::new(move || Some(every)),
    }
}

fn sweep_once(env: Env<'_>, pool: &DbPool) -> Result<(), String> {
    // `db::checkout` logged why (or the outage it belongs to).
    let mut conn = crate::db::checkout(pool).map_err(|_| "no database connection".to_owned())?;
    sweep_settings::record(&mut conn, env, crate::db::now()).map_err(|e| e.to_string())?;
    crate::services::accounts::auth::purge(&mut conn, env, crate::db::now())
        .map_err(|e| e.to_string())?;
    let report = reminders::sweep(&mut conn, env, crate::domain::clock::now(), false)
        .map_err(|e| e.to_string())?;
    if report.pruned.incidents > 0 || report.pruned.deliveries > 0 {
        tracing::info!(
            incidents = report.pruned.incidents,
            events = report.pruned.events,
            deliveries = report.pruned.deliveries,
            pages_given_back = report.pages_given_back,
            keep_days = env.settings.events.keep_days,
            "dropped the events past events.keep_days (the incidents and their pages stay)"
        );
    }
    if report.queued.is_empty() {
        tracing::debug!(already_queued = report.already_queued, "sweep: nothing new");
    } else {
        tracing::info!(
            queued = report.queued.len(),
            already_queued = report.already_queued,
            purged = report.purged,
            raw_bodies_purged = report.raw_bodies_purged,
            "sweep queued emails"
        );
    }
    Ok(())
}

/// On a database restored from a dump since a coe last started on it (PostgreSQL), what
/// its outbox would send by itself is held for an admin, sign-in links expired and stale
/// notices dropped (`outbox::restored`).
pub fn hold_if_restored(conn: &mut crate::db::DbConnection) -> Result<(), String> {
    let done =
        outbox::restored::hold_if_restored(conn, crate::db::now()).map_err(|e| e.to_string())?;
    if done.changed_anything() {
        tracing::warn!(
            held = done.held(),
            sign_in_dropped = done.sign_in_dropped,
            stale_dropped = done.stale_dropped,
            "this database was restored from a dump: {}",
            done.describe()
        );
    }
    Ok(())
}

/// A delivery job of the queue (`outbound::queue`): on its first run it gives back
/// what this replica's earlier process was sending when it stopped (`Queue::reclaim`),
/// then each run is one pass (`pass`), counted in `metrics` and logged when it did
/// anything. A pass every `reminders.delivery_interval_secs`.
fn delivery_job(
    name: &'static str,
    queue: Queue,
    settings: &Settings,
    pool: DbPool,
    metrics: DeliveryMetrics,
    mut pass: impl FnMut(&AtomicBool) -> Result<Report, String> + Send + 'static,
) -> Job {
    let every = Duration::from_secs(settings.reminders.delivery_interval_secs);
    let claimant = settings.replica_name();
    let mut started = false;
    Job {
        name,
        run: Box::new(move |stopping: &AtomicBool| {
            if !started {
                let mut conn =
                    crate::db::checkout(&pool).map_err(|_| "no database connection".to_owned())?;
                if queue == Queue::Email {
                    hold_if_restored(&mut conn)?;
                }
                let back = queue
                    .reclaim(&mut conn, &claimant, crate::db::now())
                    .map_err(|e| e.to_string())?;
                if back > 0 {
                    tracing::warn!(
                        queue = queue.name(),
                        rows = back,
                        replica = %claimant,
                        "what this replica was sending when it stopped is sent again (one the \
                         other side had taken just before may arrive twice; an email with the \
                         same Message-ID)"
                    );
                }
                started = true;
            }
            let report = pass(stopping)?;
            metrics.record(queue, &report);
            if report != Report::default() {
                tracing::info!(
                    queue = queue.name(),
                    sent = report.sent,
                    deferred = report.deferred,
                    failed = report.failed,
                    "delivery pass"
                );
            }
            Ok(())
        }),
        next_in: Box::new(move || Some(every)),
    }
}

/// Email delivery: the emails due, each claimed, sent and marked
/// (`outbox::deliver_pooled`: no connection held while the SMTP server answers); a stop
/// ends the pass after the email being sent.
pub fn delivery(
    runtime: Runtime,
    pool: DbPool,
    transport: Transport,
    metrics: DeliveryMetrics,
) -> Job {
    let (r, p) = (runtime.clone(), pool.clone());
    delivery_job(
        DELIVERY,
        Queue::Email,
        &runtime.settings,
        pool,
        metrics,
        move |stop| {
            outbox::deliver_pooled(&p, &transport, r.env(), &r.settings.replica_name(), stop)
                .map_err(|e| e.to_string())
        },
    )
}

/// Chat delivery, on a job of its own so that a slow
/// or silent platform never holds up email (a notice decided meanwhile waits at most
/// `reminders.delivery_interval_secs`).
pub fn chat(runtime: Runtime, pool: DbPool, metrics: DeliveryMetrics) -> Option<Job> {
    // Always on: a channel may be added in the pages at any time (a pass with none
    // reads one count).
    let settings = runtime.settings.clone();
    tracing::info!(
        channels = runtime.env().connections.channels.len(),
        "chat delivery started"
    );
    let (r, p) = (runtime, pool.clone());
    Some(delivery_job(
        "chat",
        Queue::Chat,
        &settings,
        pool,
        metrics,
        move |stop| {
            crate::services::outbound::chat::deliver_pooled(
                &p,
                r.env(),
                &r.settings.replica_name(),
                stop,
            )
            .map_err(|e| e.to_string())
        },
    ))
}

/// Issue trackers: each pass tells the trackers what waits
/// (`services::coe::trackers::deliver`) and reads back the linked tickets of each tracker
/// whose round is due (`services::coe::trackers::reconcile`). A pass every
/// `reminders.delivery_interval_secs`.
pub fn trackers(runtime: Runtime, pool: DbPool, metrics: DeliveryMetrics) -> Option<Job> {
    // Always on: a tracker may be added in the pages at any time.
    let settings = runtime.settings.clone();
    tracing::info!(
        trackers = runtime.env().connections.trackers.len(),
        "tracker sync started"
    );
    let p = pool.clone();
    Some(delivery_job(
        "trackers",
        Queue::Tracker,
        &settings,
        pool,
        metrics,
        move |stop| {
            // The passes take a connection for each step and hold none while a tracker
            // answers.
            let env = runtime.env();
            let claimant = env.settings.replica_name();
            let report = crate::services::coe::trackers::deliver(&p, env, &claimant, stop)
                .map_err(|e| e.to_string())?;
            crate::services::coe::trackers::reconcile(&p, env, stop).map_err(|e| e.to_string())?;
            Ok(report)
        },
    ))
}
