//! Group commit: deliveries that arrive together are written together. A writer
//! thread takes every delivery queued (up to `MAX_BATCH`, never waiting for more:
//! while it commits, the next ones queue), writes them in one transaction, commits
//! once (twice when one of them fails, below), and only then answers each
//! delivery's request. The batch is first written
//! as one (`store_all`: a few statements for all its deliveries); should any
//! statement fail, that transaction rolls back and a second one writes each delivery
//! in a savepoint of its own, so a delivery that fails rolls back alone. Nothing is
//! acknowledged before the commit that holds it: a durable commit (SQLite
//! `synchronous = FULL`, PostgreSQL `fsync`) costs the same for one delivery as for
//! a hundred.
//!
//! SQLite has one writer at a time anyway: one thread. PostgreSQL writes side by side:
//! `POSTGRES_WRITERS` threads, each locking the group keys of its whole batch up front
//! in one order, so two batches never wait on each other in a cycle. Each writer has
//! a queue of its own, and a delivery goes to the queue its first group key picks:
//! deliveries about the same groups (an alert storm) meet in one writer's batch,
//! written with a few statements per group, instead of several writers' small batches
//! waiting for each other's group locks.
//!
//! Ordinary writes (`OrdinaryWrite`: every change people make through the API and the pages,
//! through `http::state::with_write`) take the same queue on SQLite, so they share its
//! commits too: the writer runs each work of what it took in a savepoint of one
//! transaction (a work that fails — a 409, a 412, a 422 — rolls back alone), commits
//! once, then answers each. They are written before the deliveries taken with them,
//! in a transaction of their own. A database fault met by any of
//! them rolls the whole transaction back and answers each of them with it.
//!
//! The writers have connections of their own (a pool the size of the writers), so
//! that page and API traffic cannot take them all and starve ingest into 503s. What
//! waits is bounded twice: `QUEUE` deliveries and `QUEUE_BYTES` of their bodies. On
//! shutdown `stop` lets each writer finish what is queued and joins it.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use tokio::sync::oneshot;

use super::{keys_of, store, store_all, Delivery, IngestOutcome};
use crate::config::database::Backend;
use crate::db::fault::{self, Fault};
use crate::db::{self, locks, DbPool};
use crate::domain::FailureEvent;
use crate::services::Env;

mod ordinary;
use ordinary::write_ordinary;
pub use ordinary::{Answer, OrdinaryWrite};

/// Why a delivery was not written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// Too much queued, no connection, or stopping: try again shortly.
    #[error("{0}")]
    Busy(String),
    /// The database cannot be written (see `db::fault`).
    #[error("{}", .0.message())]
    Fault(Fault),
    /// Any other database error (a fault of ours).
    #[error("database: {0}")]
    Failed(String),
}

impl WriteError {
    /// `error` as a write error; a database fault is noted (on this thread, so the
    /// connection that met it leaves the pool).
    fn of(error: &diesel::result::Error) -> WriteError {
        match fault::note(error) {
            Some(fault) => WriteError::Fault(fault),
            None => WriteError::Failed(error.to_string()),
        }
    }
}

/// Most deliveries one transaction holds.
pub const MAX_BATCH: usize = 256;

/// Deliveries waiting for the writers; past this, a delivery is answered 503 at once.
pub const QUEUE: usize = 8_192;

/// Bytes of bodies waiting for the writers; past this, a delivery is answered 503 at
/// once (one delivery is always taken when nothing waits, whatever its size).
pub const QUEUE_BYTES: usize = 64 << 20;

/// Writer threads on PostgreSQL. Each batch costs the server about thirty statements
/// whatever its size, and the server's CPU is what bounds ingest: two writers make
/// batches twice as large as four do, and wrote 25–60% more single-event deliveries a
/// second (docs/benchmarks.md, session 22); one writer waits for every commit alone.
pub const POSTGRES_WRITERS: usize = 2;

/// One delivery to write, and where its answer goes.
pub struct Job {
    pub source: String,
    pub key: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub events: Vec<FailureEvent>,
    reply: oneshot::Sender<Result<IngestOutcome, WriteError>>,
    /// The request's span (its id), for what the writer logs of the batch.
    span: tracing::Span,
}

impl Job {
    fn delivery(&self) -> Delivery<'_> {
        Delivery {
            source: &self.source,
            key: self.key.as_deref(),
            content_type: self.content_type.as_deref(),
            body: &self.body,
        }
    }
}

/// What a writer's queue carries: a delivery, an ordinary write, or the word to
/// finish and stop.
enum Message {
    Job(Job),
    Ordinary(OrdinaryWrite),
    Stop,
}

/// What the writers need besides the pool: what opening a COE draft needs.
struct Shared {
    /// Deliveries queued and not yet taken by a writer, over all queues.
    waiting: AtomicUsize,
    /// The bytes of their bodies.
    waiting_bytes: AtomicUsize,
    /// Deliveries per committed transaction.
    batch_sizes: Histogram,
    pool: DbPool,
    runtime: crate::services::Runtime,
    /// Rung after a batch that queued emails ("COE opened").
    delivery_waker: crate::services::outbound::outbox::DeliveryWaker,
    /// The SQLite file written (none on PostgreSQL or in memory).
    sqlite_file: Option<std::path::PathBuf>,
}

impl Shared {
    /// Whether the SQLite file (or its folder) cannot be written, its permissions
    /// changed under the server: then every write is refused at once, as `/readyz`
    /// reports it. A connection opened before could still write into the log, one
    /// opened after could not, and the answer must not depend on which one the pool
    /// hands out.
    fn read_only(&self) -> bool {
        self.sqlite_file
            .as_deref()
            .is_some_and(|path| crate::db::fault::read_only_file(path).is_some())
    }
}

/// The SQLite file `settings` name, if any.
fn sqlite_file(env: Env<'_>) -> Option<std::path::PathBuf> {
    let settings = env.settings;
    match settings.database_url() {
        crate::config::database::DatabaseUrl::Sqlite(path) if path.as_os_str() != ":memory:" => {
            Some(path)
        }
        _ => None,
    }
}

/// The queues in front of the writer threads.
pub struct GroupCommit {
    /// One queue per writer thread (each can hold all of `QUEUE`).
    queues: Vec<SyncSender<Message>>,
    /// The writer threads, until `stop` joins them.
    threads: Mutex<Vec<JoinHandle<()>>>,
    shared: Arc<Shared>,
    batch_sizes: Histogram,
    /// SQLite's checkpoints, off the writer thread (`db::Checkpointer`).
    _checkpointer: Option<db::Checkpointer>,
}

impl GroupCommit {
    /// Starts the writer threads, each with a connection of its own from a pool
    /// opened for them (`database` is `pool`'s); they end with `stop`.
    pub fn start(
        database: &crate::config::DatabaseSettings,
        pool: DbPool,
        runtime: crate::services::Runtime,
        delivery_waker: crate::services::outbound::outbox::DeliveryWaker,
    ) -> std::io::Result<GroupCommit> {
        let settings = &runtime.settings;
        let checkpointer =
            db::Checkpointer::start(&settings.database_url(), settings.database.busy_timeout_ms)?;
        let writers = match settings.database_url().backend() {
            Backend::Sqlite => 1,
            Backend::Postgres => POSTGRES_WRITERS,
        };
        // A database in memory is one connection's own: the writers share it.
        let pool = if database.url.contains(":memory:") {
            pool
        } else {
            db::lazy_pool(database, u32::try_from(writers).unwrap_or(1))
                .map_err(|e| std::io::Error::other(e.to_string()))?
        };
        let batch_sizes = Histogram::new(exponential_buckets(1.0, 2.0, 9));
        let shared = Arc::new(Shared {
            waiting: AtomicUsize::new(0),
            waiting_bytes: AtomicUsize::new(0),
            batch_sizes: batch_sizes.clone(),
            pool,
            sqlite_file: sqlite_file(runtime.env()),
            runtime,
            delivery_waker,
        });
        let mut queues = Vec::with_capacity(writers);
        let mut threads = Vec::with_capacity(writers);
        for n in 0..writers {
            let (queue, jobs) = mpsc::sync_channel(QUEUE);
            let shared = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("coe-ingest-{n}"))
                    .spawn(move || run(&jobs, &shared))?,
            );
            queues.push(queue);
        }
        Ok(GroupCommit {
            queues,
            threads: Mutex::new(threads),
            shared,
            batch_sizes,
            _checkpointer: checkpointer,
        })
    }

    /// Lets each writer write what is queued, then stops it and waits for it. A
    /// delivery that comes after is answered 503 (the service is stopping).
    pub fn stop(&self) {
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        if threads.is_empty() {
            return;
        }
        for queue in &self.queues {
            // Waits for room when the queue is full: the writer is draining it.
            let _ = queue.send(Message::Stop);
        }
        for thread in threads {
            if thread.join().is_err() {
                tracing::error!("an ingest writer thread panicked");
            }
        }
        tracing::info!("ingest writers stopped");
    }

    /// Deliveries per transaction, for `/metrics` (`coe_ingest_batch_deliveries`).
    pub fn batch_sizes(&self) -> Histogram {
        self.batch_sizes.clone()
    }

    /// Writes one delivery's events (`delivery`: where it came from, its key and
    /// content type, as `ingest::Delivery` says); answers once they are committed.
    pub async fn write(
        &self,
        delivery: Delivery<'_>,
        events: Vec<FailureEvent>,
    ) -> Result<IngestOutcome, WriteError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            source: delivery.source.to_owned(),
            key: delivery.key.map(str::to_owned),
            content_type: delivery.content_type.map(str::to_owned),
            body: delivery.body.to_vec(),
            events,
            reply,
            span: tracing::Span::current(),
        };
        // The writer its first group key picks (`queues` is never empty).
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        job.events.first().map(|e| &e.group_key).hash(&mut hasher);
        let queue = &self.queues[hasher.finish() as usize % self.queues.len()];
        // At most `QUEUE` deliveries and `QUEUE_BYTES` of bodies waiting over all
        // queues: one queue may hold them all (a storm on one group goes to one writer).
        let bytes = job.body.len();
        let waiting = self.shared.waiting.fetch_add(1, Ordering::SeqCst);
        let waiting_bytes = self.shared.waiting_bytes.fetch_add(bytes, Ordering::SeqCst);
        let refused = match too_much_waiting(waiting, waiting_bytes, bytes) {
            Some(why) => Some(why),
            None => match queue.try_send(Message::Job(job)) {
                Ok(()) => None,
                Err(TrySendError::Full(_)) => Some(format!(
                    "{QUEUE} deliveries are waiting to be written; try again shortly"
                )),
                Err(TrySendError::Disconnected(_)) => Some("the service is stopping".into()),
            },
        };
        if let Some(why) = refused {
            self.shared.waiting.fetch_sub(1, Ordering::SeqCst);
            self.shared.waiting_bytes.fetch_sub(bytes, Ordering::SeqCst);
            return Err(WriteError::Busy(why));
        }
        answer
            .await
            .map_err(|_| WriteError::Busy("the service is stopping; try again".into()))?
    }
}

/// Why a delivery of `bytes` is refused when `waiting` deliveries of `waiting_bytes`
/// wait already, if it is: past `QUEUE` deliveries, or past `QUEUE_BYTES` of bodies
/// (a delivery is always taken when nothing waits, whatever its size).
fn too_much_waiting(waiting: usize, waiting_bytes: usize, bytes: usize) -> Option<String> {
    if waiting >= QUEUE {
        Some(format!(
            "{QUEUE} deliveries are waiting to be written; try again shortly"
        ))
    } else if waiting > 0 && waiting_bytes + bytes > QUEUE_BYTES {
        Some(format!(
            "{} MiB of deliveries are waiting to be written; try again shortly",
            waiting_bytes >> 20
        ))
    } else {
        None
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A writer thread: takes what is queued, writes it, answers; until told to stop.
fn run(queue: &Receiver<Message>, shared: &Shared) {
    let mut stopping = false;
    while !stopping {
        let Ok(first) = queue.recv() else {
            break;
        };
        let (mut batch, mut works) = (Vec::new(), Vec::new());
        match first {
            Message::Job(job) => batch.push(job),
            Message::Ordinary(work) => works.push(work),
            Message::Stop => break,
        }
        while batch.len() + works.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Message::Job(job)) => batch.push(job),
                Ok(Message::Ordinary(work)) => works.push(work),
                Ok(Message::Stop) => {
                    stopping = true;
                    break;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        shared
            .waiting
            .fetch_sub(batch.len() + works.len(), Ordering::SeqCst);
        if !works.is_empty() {
            write_ordinary(works, shared);
        }
        if batch.is_empty() {
            shared.delivery_waker.wake_if_queued();
            continue;
        }
        let bytes = batch.iter().map(|job| job.body.len()).sum();
        shared.waiting_bytes.fetch_sub(bytes, Ordering::SeqCst);
        // A bug that panics fails its batch (nothing of it was committed), not the
        // writer: the queue keeps draining.
        let written =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write_batch(&batch, shared)));
        let outcomes = written.unwrap_or_else(|_| {
            tracing::error!("the ingest writer panicked writing a batch; its deliveries failed");
            let failed = WriteError::Failed(
                "the ingest writer failed on this delivery (a bug, in the server's log); \
                 nothing of it was written"
                    .into(),
            );
            vec![Err(failed); batch.len()]
        });
        for (job, outcome) in batch.into_iter().zip(outcomes) {
            let _ = job.reply.send(outcome);
        }
        shared.delivery_waker.wake_if_queued();
    }
}

/// Writes `batch` in one transaction (two when a delivery fails); what each job
/// came to, in order.
fn write_batch(batch: &[Job], shared: &Shared) -> Vec<Result<IngestOutcome, WriteError>> {
    shared.batch_sizes.observe(batch.len() as f64);
    // What the batch logs (a database fault among it) carries the request id of its
    // first delivery; every delivery of the batch is answered the same.
    let _request = batch.first().map(|job| job.span.enter());
    let env = shared.runtime.env();
    if shared.read_only() {
        return batch
            .iter()
            .map(|_| Err(WriteError::Fault(Fault::ReadOnly)))
            .collect();
    }
    // Every group and delivery key of the batch, locked in one order at the start of
    // each transaction (PostgreSQL; SQLite's write lock already excludes other writers).
    let keys: Vec<String> = batch
        .iter()
        .flat_map(|job| keys_of(job.delivery(), &job.events))
        .collect();
    let written = crate::db::checkout(&shared.pool)
        .map_err(|_| {
            // `db::checkout` logged it.
            WriteError::Busy("the database is not reachable; try again shortly".into())
        })
        .and_then(|mut conn| {
            // The whole batch written together, in a transaction of its own rather than
            // a savepoint (SQLite would copy every page the batch changes into the
            // savepoint's journal).
            let together = db::write_transaction(&mut conn, |conn| {
                locks::lock_keys(conn, keys.clone())?;
                match batch {
                    [job] => store(conn, job.delivery(), &job.events, &env).map(|one| vec![one]),
                    _ => {
                        let all: Vec<_> = batch
                            .iter()
                            .map(|job| (job.delivery(), job.events.as_slice()))
                            .collect();
                        store_all(conn, &all, &env)
                    }
                }
            });
            match together {
                Ok(stored) => return Ok(stored.into_iter().map(Ok).collect()),
                // The database cannot be written: no delivery can.
                Err(error) if fault::classify(&error).is_some() => {
                    return Err(WriteError::of(&error))
                }
                // One delivery: its own answer.
                Err(error) if batch.len() == 1 => return Ok(vec![Err(WriteError::of(&error))]),
                Err(error) => tracing::debug!(
                    %error,
                    "a batch of deliveries failed together; writing them one by one"
                ),
            }
            // Rolled back whole: each delivery again, in a savepoint of its own, so that
            // only the one that fails rolls back. A fault of the database (it cannot be
            // written) is no delivery's own: it rolls back the batch, as above.
            db::write_transaction(&mut conn, |conn| {
                locks::lock_keys(conn, keys)?;
                let mut outcomes = Vec::with_capacity(batch.len());
                for job in batch {
                    let stored = db::write_transaction(conn, |conn| {
                        store(conn, job.delivery(), &job.events, &env)
                    });
                    match stored {
                        Err(error) if fault::classify(&error).is_some() => return Err(error),
                        Err(error) => outcomes.push(Err(WriteError::of(&error))),
                        Ok(stored) => outcomes.push(Ok(stored)),
                    }
                }
                Ok(outcomes)
            })
            .map_err(|e| WriteError::of(&e))
        });
    // Nothing of the batch was committed on an error: every delivery gets it.
    written.unwrap_or_else(|error| vec![Err(error); batch.len()])
}

#[cfg(test)]
impl Shared {
    /// What a test's writer needs, over `pool`.
    fn for_tests(pool: DbPool) -> Shared {
        let parts = crate::services::intake::ingest::tests::Parts::new();
        Shared {
            waiting: AtomicUsize::new(0),
            waiting_bytes: AtomicUsize::new(0),
            batch_sizes: Histogram::new(exponential_buckets(1.0, 2.0, 9)),
            pool,
            runtime: crate::services::Runtime {
                settings: Arc::new(parts.settings),
                template: Arc::new(parts.template),
                emails: Arc::new(parts.emails),
                connections: parts.connections,
            },
            delivery_waker: Default::default(),
            sqlite_file: None,
        }
    }
}

#[cfg(test)]
mod tests;
