//! Ordinary writes on the writer's queue (`OrdinaryWrite`, from `http::state::with_write`):
//! the writer runs the ones it took in one transaction of their own, each in a
//! savepoint, commits once, then answers each.

use std::sync::atomic::Ordering;
use std::sync::mpsc::TrySendError;

use super::{fault, GroupCommit, Message, Shared, WriteError, QUEUE};
use crate::config::database::Backend;
use crate::db;

/// An ordinary write: run on the writer thread inside the batch's transaction (the
/// caller's own savepoint around what it writes), it gives back whether it failed and
/// what to answer once the transaction is over (`None`: committed; else why not).
pub type OrdinaryWrite = Box<dyn FnOnce(&mut db::DbConnection) -> Answer + Send>;

/// A work's answer, sent after the commit (or the rollback) of its transaction.
pub type Answer = Box<dyn FnOnce(Option<WriteError>) + Send>;

impl GroupCommit {
    /// Whether ordinary writes go through the writer (`submit`): on SQLite, whose one
    /// writer at a time makes a commit per request the limit.
    pub fn takes_work(&self) -> bool {
        self.shared.runtime.settings.database_url().backend() == Backend::Sqlite
    }

    /// Queues an ordinary write for the writer (`takes_work`); its answer comes once
    /// the transaction that holds it is over. Refused when too much waits or the
    /// service is stopping: then `work` is given back, not run.
    pub fn submit(&self, work: OrdinaryWrite) -> Result<(), (OrdinaryWrite, WriteError)> {
        let waiting = self.shared.waiting.fetch_add(1, Ordering::SeqCst);
        let refused = if waiting >= QUEUE {
            Err(Message::Ordinary(work))
        } else {
            self.queues[0]
                .try_send(Message::Ordinary(work))
                .map_err(|e| match e {
                    TrySendError::Full(m) | TrySendError::Disconnected(m) => m,
                })
        };
        match refused {
            Ok(()) => Ok(()),
            Err(message) => {
                self.shared.waiting.fetch_sub(1, Ordering::SeqCst);
                let Message::Ordinary(work) = message else {
                    unreachable!("a work was sent")
                };
                Err((
                    work,
                    WriteError::Busy(format!(
                        "{QUEUE} writes are waiting or the service is stopping; try again shortly"
                    )),
                ))
            }
        }
    }
}

/// Runs `works` in one transaction, each in a savepoint of its own, and answers each
/// once it is over: committed, or why not (every one of them, when the database meets
/// a fault or the writer a bug).
pub(super) fn write_ordinary(works: Vec<OrdinaryWrite>, shared: &Shared) {
    shared.batch_sizes.observe(works.len() as f64);
    let mut answers: Vec<Answer> = Vec::with_capacity(works.len());
    // A file that cannot be written (`Shared::read_only`) fails them all: they run,
    // for their answers, and are rolled back.
    let read_only = shared.read_only();
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut conn = crate::db::checkout(&shared.pool).map_err(|_| {
            // `db::checkout` logged it.
            WriteError::Busy("the database is not reachable; try again shortly".into())
        })?;
        db::write_transaction(&mut conn, |conn| {
            for work in works {
                answers.push(work(conn));
                if fault::faulted_here() {
                    // The database cannot be written: roll back every work with it.
                    return Err(diesel::result::Error::RollbackTransaction);
                }
            }
            if read_only {
                return Err(diesel::result::Error::RollbackTransaction);
            }
            Ok(())
        })
        .map_err(|error| {
            if read_only {
                return WriteError::Fault(fault::Fault::ReadOnly);
            }
            match fault::latest().filter(|_| fault::faulted_here()) {
                Some(fault) => WriteError::Fault(fault),
                None => WriteError::of(&error),
            }
        })
    }));
    let failed = match written {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error),
        Err(_) => {
            tracing::error!("the writer panicked running a batch of writes; none was written");
            Some(WriteError::Failed(
                "the writer failed on this request (a bug, in the server's log); nothing of \
                 it was written"
                    .into(),
            ))
        }
    };
    // (A work whose answer was not given back — the one that panicked — is answered by
    // its dropped channel.)
    for answer in answers {
        answer(failed.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DbPool;
    use crate::services::intake::ingest::tests::database;
    use diesel::prelude::*;
    use std::sync::mpsc;

    /// Ordinary writes taken together share one commit; one that fails rolls back
    /// its own writes alone, and a bug in one (a panic) fails them all, nothing
    /// written.
    #[test]
    fn works_share_a_commit_and_one_that_fails_rolls_back_alone() {
        let (_dir, pool) = database(None);
        let shared = Shared::for_tests(pool.clone());
        let (answers, answered) = mpsc::channel::<(String, Option<String>)>();
        // Each work adds a person and then fails or not; its answer says whether it
        // was committed (with the work's own result).
        let work = |email: &'static str, fails: bool, panics: bool| -> OrdinaryWrite {
            let answers = answers.clone();
            Box::new(move |conn| {
                let result = db::write_transaction(conn, |conn| {
                    diesel::sql_query(format!(
                        "INSERT INTO people (email, created_at, updated_at, is_admin, bar_raiser) \
                         VALUES ('{email}', '2026-12-01 00:00:00', '2026-12-01 00:00:00', false, false)"
                    ))
                    .execute(conn)?;
                    assert!(!panics, "a bug in a work");
                    if fails {
                        return Err(diesel::result::Error::NotFound);
                    }
                    Ok(())
                });
                Box::new(move |failed: Option<WriteError>| {
                    let outcome = match (failed, result) {
                        (Some(e), _) => Some(format!("not committed: {e}")),
                        (None, Err(e)) => Some(format!("failed: {e}")),
                        (None, Ok(())) => None,
                    };
                    let _ = answers.send((email.to_owned(), outcome));
                })
            })
        };
        let people = |pool: &DbPool| -> Vec<String> {
            use crate::db::schema::people;
            people::table
                .select(people::email)
                .order(people::email)
                .load(&mut pool.get().expect("conn"))
                .expect("people")
        };
        write_ordinary(
            vec![
                work("a@example.com", false, false),
                work("b@example.com", true, false),
                work("c@example.com", false, false),
            ],
            &shared,
        );
        let mut got: Vec<_> = answered.try_iter().collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("a@example.com".to_owned(), None),
                (
                    "b@example.com".to_owned(),
                    Some("failed: Record not found".to_owned())
                ),
                ("c@example.com".to_owned(), None),
            ]
        );
        assert_eq!(people(&pool), ["a@example.com", "c@example.com"]);

        write_ordinary(
            vec![
                work("d@example.com", false, false),
                work("e@example.com", false, true),
                work("f@example.com", false, false),
            ],
            &shared,
        );
        let got: Vec<_> = answered.try_iter().collect();
        // d's answer was given back before the panic: told it was not written; e's and
        // f's answers were never made (their channels close: "try again").
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "d@example.com");
        assert!(
            got[0]
                .1
                .as_deref()
                .is_some_and(|e| e.contains("not committed")),
            "{got:?}"
        );
        assert_eq!(
            people(&pool),
            ["a@example.com", "c@example.com"],
            "nothing of the batch"
        );
    }
}
