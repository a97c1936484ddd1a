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
//! written with a few statements per group, instead of four writers' small batches
//! waiting for each other's group locks.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use tokio::sync::oneshot;

use super::{keys_of, store, store_all, Delivery, IngestOutcome};
use crate::config::database::Backend;
use crate::config::Settings;
use crate::db::fault::{self, Fault};
use crate::db::{self, locks, DbPool};
use crate::domain::template::Template;
use crate::domain::FailureEvent;
use crate::email::EmailTemplates;
use crate::services::coes;

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

/// Writer threads on PostgreSQL.
pub const POSTGRES_WRITERS: usize = 4;

/// One delivery to write, and where its answer goes.
pub struct Job {
    pub source: String,
    pub key: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub events: Vec<FailureEvent>,
    reply: oneshot::Sender<Result<IngestOutcome, WriteError>>,
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

/// What the writers need besides the pool: what opening a COE draft needs.
struct Shared {
    /// Deliveries queued and not yet taken by a writer, over all queues.
    waiting: AtomicUsize,
    /// Deliveries per committed transaction.
    batch_sizes: Histogram,
    pool: DbPool,
    settings: Arc<Settings>,
    template: Arc<Template>,
    emails: Arc<EmailTemplates>,
    /// Rung after a batch that queued emails ("COE opened").
    outbox_bell: crate::services::outbox::Bell,
}

/// The queues in front of the writer threads.
pub struct IngestWriter {
    /// One queue per writer thread (each can hold all of `QUEUE`).
    queues: Vec<SyncSender<Job>>,
    shared: Arc<Shared>,
    batch_sizes: Histogram,
    /// SQLite's checkpoints, off the writer thread (`db::Checkpointer`).
    _checkpointer: Option<db::Checkpointer>,
}

impl IngestWriter {
    /// Starts the writer threads (they end when the writer is dropped).
    pub fn start(
        pool: DbPool,
        settings: Arc<Settings>,
        template: Arc<Template>,
        emails: Arc<EmailTemplates>,
        outbox_bell: crate::services::outbox::Bell,
    ) -> std::io::Result<IngestWriter> {
        let checkpointer =
            db::Checkpointer::start(&settings.database_url(), settings.database.busy_timeout_ms)?;
        let writers = match settings.database_url().backend() {
            Backend::Sqlite => 1,
            Backend::Postgres => POSTGRES_WRITERS,
        };
        let batch_sizes = Histogram::new(exponential_buckets(1.0, 2.0, 9));
        let shared = Arc::new(Shared {
            waiting: AtomicUsize::new(0),
            batch_sizes: batch_sizes.clone(),
            pool,
            settings,
            template,
            emails,
            outbox_bell,
        });
        let mut queues = Vec::with_capacity(writers);
        for n in 0..writers {
            let (queue, jobs) = mpsc::sync_channel(QUEUE);
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("coe-ingest-{n}"))
                .spawn(move || run(&jobs, &shared))?;
            queues.push(queue);
        }
        Ok(IngestWriter {
            queues,
            shared,
            batch_sizes,
            _checkpointer: checkpointer,
        })
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
        };
        // The writer its first group key picks (`queues` is never empty).
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        job.events.first().map(|e| &e.group_key).hash(&mut hasher);
        let queue = &self.queues[hasher.finish() as usize % self.queues.len()];
        // At most `QUEUE` waiting over all queues: one queue may hold them all (a
        // storm on one group goes to one writer).
        let full = || {
            WriteError::Busy(format!(
                "{QUEUE} deliveries are waiting to be written; try again shortly"
            ))
        };
        if self.shared.waiting.fetch_add(1, Ordering::SeqCst) >= QUEUE {
            self.shared.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(full());
        }
        if let Err(refused) = queue.try_send(job) {
            self.shared.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(match refused {
                TrySendError::Full(_) => full(),
                TrySendError::Disconnected(_) => WriteError::Busy("the service is stopping".into()),
            });
        }
        answer
            .await
            .map_err(|_| WriteError::Busy("the ingest writer stopped; try again".into()))?
    }
}

/// A writer thread: takes what is queued, writes it, answers; until the queue closes.
fn run(jobs: &Receiver<Job>, shared: &Shared) {
    // Ends when the writer is dropped: the server is stopping.
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        shared.waiting.fetch_sub(batch.len(), Ordering::SeqCst);
        // A bug that panics fails its batch (each request is answered that the writer
        // stopped; nothing was committed), not the writer: the queue keeps draining.
        let written =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write_batch(batch, shared)));
        if written.is_err() {
            tracing::error!("the ingest writer panicked writing a batch; its deliveries failed");
        }
        shared.outbox_bell.ring_if_queued();
    }
}

/// Writes `batch` in one transaction (two when a delivery fails) and answers each job.
fn write_batch(batch: Vec<Job>, shared: &Shared) {
    shared.batch_sizes.observe(batch.len() as f64);
    let ctx = coes::Context {
        settings: &shared.settings,
        template: &shared.template,
        emails: &shared.emails,
    };
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
                match batch.as_slice() {
                    [job] => store(conn, job.delivery(), &job.events, &ctx).map(|one| vec![one]),
                    _ => {
                        let all: Vec<_> = batch
                            .iter()
                            .map(|job| (job.delivery(), job.events.as_slice()))
                            .collect();
                        store_all(conn, &all, &ctx)
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
            // only the one that fails rolls back.
            db::write_transaction(&mut conn, |conn| {
                locks::lock_keys(conn, keys)?;
                Ok::<_, diesel::result::Error>(
                    batch
                        .iter()
                        .map(|job| {
                            db::write_transaction(conn, |conn| {
                                store(conn, job.delivery(), &job.events, &ctx)
                            })
                            .map_err(|e| WriteError::of(&e))
                        })
                        .collect::<Vec<_>>(),
                )
            })
            .map_err(|e| WriteError::of(&e))
        });
    match written {
        Ok(outcomes) => {
            for (job, outcome) in batch.into_iter().zip(outcomes) {
                let _ = job.reply.send(outcome);
            }
        }
        Err(error) => {
            // Nothing of the batch was committed: every delivery gets the error.
            for job in batch {
                let _ = job.reply.send(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Severity;
    use crate::services::ingest::tests::{database, event, Parts};
    use diesel::prelude::*;

    /// A batch in which one delivery fails: written again one by one, only that one
    /// fails, the others are committed and answered as stored (SQLite; PostgreSQL
    /// with `TEST_POSTGRES_URL`).
    #[test]
    fn a_delivery_that_fails_in_a_batch_fails_alone() {
        a_delivery_fails_alone(None);
        if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
            a_delivery_fails_alone(Some(&url));
        }
    }

    fn a_delivery_fails_alone(postgres: Option<&str>) {
        let (_dir, pool) = database(postgres);
        let poison = match postgres {
            None => vec![
                "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
                 WHEN NEW.dedup_key = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
            ],
            Some(_) => vec![
                "CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN \
                 IF NEW.dedup_key = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
                 FOR EACH ROW EXECUTE FUNCTION poison()",
            ],
        };
        let mut conn = pool.get().expect("conn");
        for statement in poison {
            diesel::sql_query(statement)
                .execute(&mut conn)
                .expect("poison");
        }
        let parts = Parts::new();
        let shared = Shared {
            waiting: AtomicUsize::new(0),
            batch_sizes: Histogram::new(exponential_buckets(1.0, 2.0, 9)),
            pool: pool.clone(),
            settings: Arc::new(parts.settings),
            template: Arc::new(parts.template),
            emails: Arc::new(parts.emails),
            outbox_bell: Default::default(),
        };
        let mut answers = Vec::new();
        let batch: Vec<Job> = ["good-1", "poison", "good-2"]
            .into_iter()
            .enumerate()
            .map(|(n, alert)| {
                let (reply, answer) = oneshot::channel();
                answers.push(answer);
                Job {
                    source: "test".into(),
                    key: None,
                    content_type: Some("application/json".into()),
                    body: b"[]".to_vec(),
                    events: vec![event(alert, &format!("g{n}"), false, Severity::Sev3, 1)],
                    reply,
                }
            })
            .collect();
        write_batch(batch, &shared);
        let answers: Vec<Result<IngestOutcome, WriteError>> = answers
            .into_iter()
            .map(|answer| answer.blocking_recv().expect("answered"))
            .collect();
        assert!(answers[0].as_ref().is_ok_and(|o| o.delivery_id.is_some()));
        assert!(
            matches!(&answers[1], Err(WriteError::Failed(e)) if e.contains("poisoned")),
            "{:?}",
            answers[1]
        );
        assert!(answers[2].as_ref().is_ok_and(|o| o.delivery_id.is_some()));
        // The two good deliveries are committed, nothing of the poisoned one (its
        // incident included).
        use crate::db::schema::{failure_events, incidents, webhook_deliveries};
        let events: i64 = failure_events::table
            .count()
            .get_result(&mut conn)
            .expect("count");
        let opened: i64 = incidents::table
            .count()
            .get_result(&mut conn)
            .expect("count");
        let deliveries: i64 = webhook_deliveries::table
            .count()
            .get_result(&mut conn)
            .expect("count");
        assert_eq!((events, opened, deliveries), (2, 2, 2));
    }
}
