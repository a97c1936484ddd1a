//! Background jobs: every task that runs beside the requests on a schedule or when
//! woken — the heartbeat, the reminder sweep, email delivery, chat delivery, Matrix
//! listening, the figures, the start-up integrity check — each on a thread of its own (diesel and the SMTP client
//! block), with one way to start (`Jobs::start`), to be woken (`Jobs::waker`), to
//! stop at shutdown (`Jobs::stop`: each finishes its step), to report in `/metrics`
//! (`job_*`) and to log. `coe serve` starts them (`serve`); several replicas may run
//! them side by side: the outbox's keys and claims keep every email single, and a
//! count of figures older than the one kept is not kept.
//!
//! Not jobs: the ingest writer (`services::intake::ingest::writer`, the group commit every
//! write request waits on) with its SQLite checkpointer, and the sign-in link written
//! after its page answered (`http::pages::sign_in`), which are part of a request.

pub mod connections;
pub mod figures;
pub mod heartbeat;
pub mod integrity;
pub mod matrix;
pub mod reminders;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::db::DbPool;
use crate::email::Transport;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    job: &'static str,
    outcome: &'static str,
}

/// What `/metrics` tells of this process's jobs: when each last ran, whether it
/// succeeded, how long it took, and how many runs ended each way.
#[derive(Default, Clone)]
pub struct JobMetrics {
    last_run: Family<JobLabels, Gauge>,
    last_ok: Family<JobLabels, Gauge>,
    last_millis: Family<JobLabels, Gauge>,
    runs: Family<OutcomeLabels, Counter>,
}

impl JobMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "job_last_run_timestamp_seconds",
            "When this process's last run of each background job ended (Unix time)",
            self.last_run.clone(),
        );
        registry.register(
            "job_last_success",
            "1 when this process's last run of the job succeeded, 0 when it failed",
            self.last_ok.clone(),
        );
        registry.register(
            "job_last_duration_milliseconds",
            "How long this process's last run of the job took",
            self.last_millis.clone(),
        );
        registry.register(
            "job_runs",
            "Runs of each background job by this process, by outcome (ok, failed)",
            self.runs.clone(),
        );
    }

    /// The count first and the success gauge last, so that a scrape that sees
    /// `job_last_success 1` also sees the run counted.
    fn record(&self, job: &'static str, ok: bool, took: Duration) {
        let outcome = if ok { "ok" } else { "failed" };
        self.runs
            .get_or_create(&OutcomeLabels { job, outcome })
            .inc();
        let labels = JobLabels { job };
        self.last_millis
            .get_or_create(&labels)
            .set(i64::try_from(took.as_millis()).unwrap_or(i64::MAX));
        self.last_run
            .get_or_create(&labels)
            .set(crate::domain::clock::now().timestamp());
        self.last_ok.get_or_create(&labels).set(i64::from(ok));
    }
}

/// One run of a job; `stopping` is set when the service stops (a long run, a delivery
/// pass, ends after its current step).
pub type Run = Box<dyn FnMut(&AtomicBool) -> Result<(), String> + Send>;

/// A job: its name (in logs and metrics, `job="…"`), what one run does, and how long
/// to wait after a run before the next (none: it ran once and is done). A job is
/// also run early when woken (`Jobs::waker`).
pub struct Job {
    pub name: &'static str,
    pub run: Run,
    pub next_in: Box<dyn Fn() -> Option<Duration> + Send>,
}

/// The jobs running, until `stop`.
pub struct Jobs {
    stopping: Arc<AtomicBool>,
    /// Whose first run it is (`Turn`).
    turn: Arc<Turn>,
    running: Vec<(&'static str, mpsc::Sender<()>, JoinHandle<()>)>,
}

/// The jobs' first runs go one after another, in the order given: a server that
/// starts opens one database connection for them, not one each, and its first
/// seconds are not spent on every job at once.
#[derive(Default)]
struct Turn {
    next: std::sync::Mutex<usize>,
    moved: std::sync::Condvar,
}

impl Turn {
    /// Waits until it is job `i`'s turn (or the service stops).
    fn wait_for(&self, i: usize, stopping: &AtomicBool) {
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *next < i && !stopping.load(Ordering::Relaxed) {
            next = self
                .moved
                .wait(next)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Gives the turn to the next job.
    fn pass(&self) {
        *self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        self.moved.notify_all();
    }
}

impl Jobs {
    /// Starts each job on a thread of its own: a first run when the job before it
    /// ran its first (`Turn`), then one after each wait or wake-up.
    pub fn start(jobs: Vec<Job>, metrics: &JobMetrics) -> std::io::Result<Jobs> {
        let stopping = Arc::new(AtomicBool::new(false));
        let turn = Arc::new(Turn::default());
        let mut running = Vec::new();
        for (i, job) in jobs.into_iter().enumerate() {
            let (wake, woken) = mpsc::channel();
            let (name, stopping, metrics) = (job.name, stopping.clone(), metrics.clone());
            let turn = turn.clone();
            let thread = std::thread::Builder::new()
                .name(format!("coe-job-{name}"))
                .spawn(move || {
                    turn.wait_for(i, &stopping);
                    run(job, &woken, &stopping, &metrics, &turn);
                })?;
            running.push((name, wake, thread));
        }
        Ok(Jobs {
            stopping,
            turn,
            running,
        })
    }

    /// What wakes job `name` for a run now (none: no such job runs).
    pub fn waker(&self, name: &str) -> Option<mpsc::Sender<()>> {
        self.running
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, wake, _)| wake.clone())
    }

    /// Stops every job after its current step and waits for them.
    pub fn stop(self) {
        self.stopping.store(true, Ordering::Relaxed);
        // A job still waiting for its first turn stops waiting.
        self.turn.moved.notify_all();
        for (_, wake, _) in &self.running {
            let _ = wake.send(());
        }
        for (name, _, thread) in self.running {
            if thread.join().is_err() {
                tracing::error!(job = name, "a job's thread panicked");
            }
        }
    }
}

fn run(
    mut job: Job,
    woken: &mpsc::Receiver<()>,
    stopping: &AtomicBool,
    metrics: &JobMetrics,
    turn: &Turn,
) {
    if stopping.load(Ordering::Relaxed) {
        return;
    }
    tracing::debug!(job = job.name, "job started");
    let mut first = true;
    loop {
        let began = std::time::Instant::now();
        // A bug in one run must not stop the job for good: counted as failed, and the
        // next run goes ahead as planned.
        let ran = catch_unwind(AssertUnwindSafe(|| (job.run)(stopping)))
            .unwrap_or_else(|_| Err("the job panicked".to_owned()));
        let took = began.elapsed();
        if let Err(error) = &ran {
            tracing::error!(job = job.name, %error, "job failed; its next run goes ahead as planned");
        }
        metrics.record(job.name, ran.is_ok(), took);
        if std::mem::take(&mut first) {
            turn.pass();
        }
        let Some(wait) = (job.next_in)() else {
            return;
        };
        if stopping.load(Ordering::Relaxed) {
            return;
        }
        match woken.recv_timeout(wait) {
            // One run answers every wake-up so far.
            Ok(()) => while woken.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if stopping.load(Ordering::Relaxed) {
            return;
        }
    }
}

/// What `coe serve` runs besides the requests.
pub struct Parts {
    /// The settings, the COE template and the email templates.
    pub runtime: crate::services::Runtime,
    pub pool: DbPool,
    pub transport: Transport,
    /// Rung by a request that queued an email: wakes the delivery job.
    pub bell: crate::services::outbound::outbox::DeliveryWaker,
    pub registry: Arc<crate::http::metrics::Metrics>,
}

/// Starts the jobs of `coe serve`: the figures and the start-up integrity check
/// always; the sweep, email delivery and chat delivery unless `reminders.enabled` is
/// false (a cron job runs `coe sweep` instead).
pub fn serve(parts: Parts) -> std::io::Result<Jobs> {
    let settings = &parts.runtime.settings;
    let metrics = JobMetrics::default();
    parts.registry.with_registry(|r| metrics.register(r));
    // In the order of their first runs: reminders, then the figures, then the check.
    let mut jobs: Vec<Job> = Vec::new();
    if settings.reminders.enabled {
        tracing::info!(
            sweep_every_secs = settings.reminders.interval_secs,
            transport = %parts.transport.describe(),
            "reminder jobs started"
        );
        // First: a replica that claims work says it is alive before it claims any.
        jobs.push(heartbeat::job(settings, parts.pool.clone()));
        let sweeps = reminders::SweepMetrics::default();
        parts.registry.with_registry(|r| sweeps.register(r));
        jobs.push(reminders::sweep(
            parts.runtime.clone(),
            parts.pool.clone(),
            parts.bell.clone(),
            sweeps,
        ));
        let deliveries = reminders::DeliveryMetrics::default();
        parts.registry.with_registry(|r| deliveries.register(r));
        jobs.push(reminders::delivery(
            parts.runtime.clone(),
            parts.pool.clone(),
            parts.transport,
            deliveries.clone(),
        ));
        jobs.extend(reminders::chat(
            parts.runtime.clone(),
            parts.pool.clone(),
            deliveries.clone(),
        ));
        jobs.extend(reminders::trackers(
            parts.runtime.clone(),
            parts.pool.clone(),
            deliveries,
        ));
    } else {
        tracing::info!("reminders.enabled is false: no sweeps or deliveries in this process");
    }
    // Every replica, delivering or not, sees another's saved connections.
    jobs.push(connections::job(
        parts.runtime.connections.clone(),
        parts.pool.clone(),
    ));
    // Every replica listens to Matrix, as every replica answers Slack.
    jobs.push(matrix::job(
        parts.runtime.clone(),
        parts.pool.clone(),
        parts.registry.clone(),
    ));
    jobs.extend(figures::job(settings.clone(), parts.pool.clone()));
    jobs.extend(integrity::job(settings));
    let started = Jobs::start(jobs, &metrics)?;
    if let Some(wake) = started.waker(reminders::DELIVERY) {
        parts.bell.connect(wake);
    }
    Ok(started)
}
