//! Faults of the database itself, as opposed to faults of a request: a SQLite file
//! that cannot be written, a full disk, a PostgreSQL server that went away. Each is a
//! `503` with its own code, never a `500`; the connection that met it leaves the pool
//! (a SQLite connection opened while the file was read-only stays read-only: each such
//! connection fails once and is replaced, so writes resume as soon as the file is
//! writable), and `/readyz` reports the fault until a write succeeds again.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use diesel::result::{DatabaseErrorKind, Error};

/// What is wrong with the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The SQLite file (or its `-wal`/`-shm` file or folder) cannot be written.
    ReadOnly,
    /// No space left for the database.
    DiskFull,
    /// Another process held SQLite's lock for longer than `database.busy_timeout_ms`
    /// ("database is locked"): a `sqlite3` shell left in a transaction, a second `coe`
    /// on the same file, a backup tool that locks it.
    Locked,
    /// The server went away, is shutting down or starting up; or the file cannot be
    /// opened or read.
    Unreachable,
    /// SQLite calls the database file corrupt ("database disk image is malformed"),
    /// for example after a copy was put back beside an older write-ahead log. It
    /// does not heal by itself: reported until the process restarts.
    Corrupt,
}

impl Fault {
    /// The error code the API answers with.
    pub fn code(self) -> &'static str {
        match self {
            Fault::ReadOnly => "database_read_only",
            Fault::DiskFull => "disk_full",
            Fault::Locked => "database_locked",
            Fault::Unreachable => "unavailable",
            Fault::Corrupt => "database_corrupt",
        }
    }

    /// What an operator reads.
    pub fn message(self) -> &'static str {
        match self {
            Fault::ReadOnly => {
                "the database cannot be written (read-only file or folder); \
                 writes resume once it is writable again"
            }
            Fault::DiskFull => {
                "the database's disk is full; writes resume once there is space again"
            }
            Fault::Locked => {
                "another process holds the SQLite database's lock; writes resume once it \
                 lets go"
            }
            Fault::Unreachable => "the database is not reachable; try again shortly",
            Fault::Corrupt => {
                "SQLite reports the database file as corrupt; restore the latest backup \
                 (coe restore, see docs/operations.md)"
            }
        }
    }
}

/// What `error` says about the database, if it is a fault of the database rather
/// than of the request.
pub fn classify(error: &Error) -> Option<Fault> {
    match error {
        Error::BrokenTransactionManager => Some(Fault::Unreachable),
        Error::DatabaseError(kind, info) => {
            if matches!(
                kind,
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand
            ) {
                return Some(Fault::Unreachable);
            }
            classify_message(info.message())
        }
        _ => None,
    }
}

/// The same from the message alone (SQLite reports these with no error kind).
pub fn classify_message(message: &str) -> Option<Fault> {
    let m = message.to_ascii_lowercase();
    if m.contains("database disk image is malformed") || m.contains("file is not a database") {
        Some(Fault::Corrupt)
    } else if m.contains("readonly database") || m.contains("read-only") {
        Some(Fault::ReadOnly)
    } else if m.contains("database or disk is full") || m.contains("no space left on device") {
        Some(Fault::DiskFull)
    } else if m.contains("database is locked") || m.contains("database table is locked") {
        Some(Fault::Locked)
    } else if [
        "disk i/o error",
        "unable to open database file",
        "server closed the connection",
        "terminating connection",
        "the database system is shutting down",
        "the database system is starting up",
        "the database system is in recovery mode",
        "no connection to the server",
        "could not receive data from server",
        "could not send data to server",
        "connection to server",
    ]
    .iter()
    .any(|s| m.contains(s))
    {
        Some(Fault::Unreachable)
    } else {
        None
    }
}

thread_local! {
    /// Set when the connection this thread holds met a fault: it is dropped, not
    /// returned to the pool, when the thread gives it back.
    static CONNECTION_FAULTED: Cell<bool> = const { Cell::new(false) };
}

/// A fault happened and no write succeeded since.
static PENDING: AtomicBool = AtomicBool::new(false);

/// The latest fault, until a write succeeds after it.
static LATEST: Mutex<Option<(Fault, Instant)>> = Mutex::new(None);

/// The last fault noted and when: a fault of the same kind within `REPORTED_FOR` of
/// it belongs to the same episode and is not logged again, even when a write got
/// through in between (a full disk lets a small one through now and then).
static LAST_NOTED: Mutex<Option<(Fault, Instant)>> = Mutex::new(None);

/// Set once SQLite called the database corrupt: a write that succeeds elsewhere in
/// the file does not mend it.
static CORRUPT: AtomicBool = AtomicBool::new(false);

/// How long `/readyz` reports a fault it cannot check itself (a full disk, a lost
/// server) when no write succeeded since.
pub const REPORTED_FOR: Duration = Duration::from_secs(30);

/// Classifies `error` and, when it is a fault, remembers it: the connection in use
/// on this thread is dropped when given back, and `/readyz` reports it. Logged once
/// per episode (faults of one kind with no gap over `REPORTED_FOR` between them:
/// `LAST_NOTED`), not once per request that meets it; the rest at debug. The line
/// carries the request's id when a request met it (its span is entered where the
/// request's database work runs: `http::state`).
pub fn note(error: &Error) -> Option<Fault> {
    let fault = classify(error)?;
    if fault == Fault::Corrupt {
        CORRUPT.store(true, Ordering::SeqCst);
    }
    let known = CONNECTION_FAULTED.with(|f| f.replace(true));
    PENDING.store(true, Ordering::SeqCst);
    let now = Instant::now();
    *LATEST.lock().unwrap_or_else(|p| p.into_inner()) = Some((fault, now));
    let before = LAST_NOTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .replace((fault, now));
    let new_episode =
        before.is_none_or(|(kind, at)| kind != fault || now.duration_since(at) > REPORTED_FOR);
    if new_episode {
        tracing::warn!(error = %error, code = fault.code(), "database fault");
    } else if !known {
        tracing::debug!(error = %error, code = fault.code(), "database fault (the same episode)");
    }
    Some(fault)
}

/// Makes a pooled connection note every fault its queries meet, on the thread that
/// runs them (the one that holds the connection and gives it back): a faulted
/// connection leaves the pool whatever the caller does with the error, even when it
/// carries it elsewhere before turning it into an answer.
pub fn watch(conn: &mut crate::db::DbConnection) {
    use diesel::connection::{Connection, InstrumentationEvent};
    conn.set_instrumentation(|event: InstrumentationEvent<'_>| {
        if let InstrumentationEvent::FinishQuery {
            error: Some(error), ..
        } = event
        {
            note(error);
        }
    });
}

/// A write committed: the database can be written again.
pub fn cleared() {
    // Commits are frequent and faults rare: one atomic read in the usual case.
    if PENDING.load(Ordering::Relaxed) && PENDING.swap(false, Ordering::SeqCst) {
        *LATEST.lock().unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!("database writable again");
    }
}

/// SQLite's integrity check found the database corrupt (see `Fault::Corrupt`).
pub fn corrupt_found(detail: &str) {
    CORRUPT.store(true, Ordering::SeqCst);
    tracing::error!(detail, code = Fault::Corrupt.code(), "database fault");
}

/// The fault `/readyz` reports: corruption, once found; otherwise the latest fault,
/// if no write succeeded since and it is recent.
pub fn latest() -> Option<Fault> {
    if CORRUPT.load(Ordering::Relaxed) {
        return Some(Fault::Corrupt);
    }
    let latest = LATEST.lock().unwrap_or_else(|p| p.into_inner());
    latest.and_then(|(fault, at)| (at.elapsed() < REPORTED_FOR).then_some(fault))
}

/// Whether the connection this thread holds met a fault (kept until it is given back).
pub fn faulted_here() -> bool {
    CONNECTION_FAULTED.with(|f| f.get())
}

/// Whether the connection this thread gives back met a fault (and forgets it).
pub(super) fn met_here() -> bool {
    CONNECTION_FAULTED.with(|f| f.replace(false))
}

/// The first of a SQLite database's files (or, for a `-wal` or `-shm` not there,
/// its folder) that this process may not write. Asked with `access(2)`, which opens
/// nothing: opening and closing any descriptor of the database file would drop every
/// POSIX lock SQLite holds on it for this process, and another process (a backup, a
/// second `coe`) could then delete the live write-ahead log or write beside us.
pub fn read_only_file(path: &std::path::Path) -> Option<std::path::PathBuf> {
    use rustix::fs::{access, Access};
    if path.as_os_str() == ":memory:" {
        return None;
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let files = ["", "-wal", "-shm"].into_iter().map(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    });
    for file in files {
        // `exists` is a stat: it opens nothing either.
        let target = if file.exists() { file } else { folder.clone() };
        if access(&target, Access::WRITE_OK).is_err() {
            return Some(target);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_both_databases_are_told_apart() {
        for (message, fault) in [
            (
                "attempt to write a readonly database",
                Some(Fault::ReadOnly),
            ),
            ("database or disk is full", Some(Fault::DiskFull)),
            (
                "could not extend file \"base/5/16384\": No space left on device",
                Some(Fault::DiskFull),
            ),
            ("disk I/O error", Some(Fault::Unreachable)),
            ("database is locked", Some(Fault::Locked)),
            ("database disk image is malformed", Some(Fault::Corrupt)),
            (
                "terminating connection due to administrator command",
                Some(Fault::Unreachable),
            ),
            (
                "server closed the connection unexpectedly",
                Some(Fault::Unreachable),
            ),
            ("UNIQUE constraint failed: coes.id", None),
            ("syntax error", None),
        ] {
            assert_eq!(classify_message(message), fault, "{message}");
        }
    }
}
