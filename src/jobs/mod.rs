//! Background jobs: work that runs on a schedule beside the requests, each on a
//! thread of its own (diesel blocks), with one way to start, to stop at shutdown, to
//! report in `/metrics` and to log. Started by `coe serve`.
//!
//! Jobs here: `figures` (the figures about the past, counted ahead of the views). The
//! reminder sweep and the deliveries still run in `scheduler`.

pub mod figures;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

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
            .set(chrono::Utc::now().timestamp());
        self.last_ok.get_or_create(&labels).set(i64::from(ok));
    }
}

/// A job: its name (in logs and metrics), what one run does, and how long to wait
/// after a run before the next.
pub struct Job {
    pub name: &'static str,
    pub run: Box<dyn FnMut() -> Result<(), String> + Send>,
    pub next_in: Box<dyn Fn() -> Duration + Send>,
}

/// The jobs running, until `stop`.
pub struct Jobs {
    stopping: Arc<(Mutex<bool>, Condvar)>,
    threads: Vec<JoinHandle<()>>,
}

impl Jobs {
    /// Starts each job on a thread of its own: a run at once, then one after each wait.
    pub fn start(jobs: Vec<Job>, metrics: &JobMetrics) -> std::io::Result<Jobs> {
        let stopping = Arc::new((Mutex::new(false), Condvar::new()));
        let mut threads = Vec::new();
        for job in jobs {
            let (stopping, metrics) = (stopping.clone(), metrics.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("coe-job-{}", job.name))
                    .spawn(move || run(job, &stopping, &metrics))?,
            );
        }
        Ok(Jobs { stopping, threads })
    }

    /// Stops every job after its current run and waits for them.
    pub fn stop(self) {
        let (lock, woken) = &*self.stopping;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        woken.notify_all();
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

fn run(mut job: Job, stopping: &(Mutex<bool>, Condvar), metrics: &JobMetrics) {
    let (lock, woken) = stopping;
    loop {
        let began = std::time::Instant::now();
        let ran = catch_unwind(AssertUnwindSafe(|| (job.run)()))
            .unwrap_or_else(|_| Err("the job panicked".to_owned()));
        let took = began.elapsed();
        match &ran {
            Ok(()) => tracing::debug!(job = job.name, ms = took.as_millis(), "job ran"),
            Err(error) => {
                tracing::warn!(job = job.name, %error, "job failed; it runs again at its next turn")
            }
        }
        metrics.record(job.name, ran.is_ok(), took);
        let wait = (job.next_in)();
        let stopped = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (stopped, _) = woken
            .wait_timeout_while(stopped, wait, |stopped| !*stopped)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *stopped {
            return;
        }
    }
}
