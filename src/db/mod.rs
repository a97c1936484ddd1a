//! Everything diesel: one connection type over SQLite and PostgreSQL, the pool,
//! migrations and the few places where the two backends need different SQL.

pub mod backup;
pub mod bulk;
mod deadline;
pub mod fault;
pub mod locks;
pub mod marks;
mod migrations;
pub mod models;
pub mod outbox_counts;
mod pool;
pub mod rules;
pub mod schema;
pub mod search;
pub mod size;
pub mod snapshots;
pub mod tally;
#[cfg(test)]
pub mod testing;
pub mod types;

use std::time::Duration;

use diesel::connection::{
    AnsiTransactionManager, Connection, SimpleConnection, TransactionManager,
};
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;
use diesel::RunQueryDsl;

use crate::config::database::{Backend, DatabaseUrl};

pub use deadline::Deadline;
pub use pool::{
    checkout, connect, lazy_pool, open_one, ConnectionManager, DbPool, PooledConnection,
};

pub use migrations::{
    migrate, migration_status, require_current, revert_all, MigrationStatus, POSTGRES_MIGRATIONS,
    SQLITE_MIGRATIONS,
};

/// One connection to whichever database the URL named.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

impl DbConnection {
    pub fn backend(&self) -> Backend {
        match self {
            DbConnection::Sqlite(_) => Backend::Sqlite,
            DbConnection::Pg(_) => Backend::Postgres,
        }
    }
}

/// Turns on SQLite's query planner stability guarantee (QPSG), and the progress
/// handler that enforces a `Deadline`, for every connection
/// this process opens from now on. Without it, SQLite plans a statement for the
/// values bound to it (`LIMIT ?`, a parameter compared with a partial index's
/// literal) and marks it to be compiled again each time they are bound: every
/// statement diesel caches was parsed and planned anew on every run, a quarter of
/// the server's CPU under ingest (docs/benchmarks.md). With it, a statement is
/// compiled once per connection. The partial indexes stay usable: `x = ?` implies
/// `x IS NOT NULL` whatever is bound, and the open-incident lookup has
/// `incidents_by_group`.
pub fn stable_sqlite_plans() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: `sqlite3_auto_extension` registers a function pointer that SQLite
    // calls on each new connection; the function is a plain `extern "C" fn` that
    // lives for the whole program.
    ONCE.call_once(|| unsafe {
        libsqlite3_sys::sqlite3_auto_extension(Some(enable_qpsg));
    });
}

/// Called by SQLite for each new connection (see `stable_sqlite_plans`).
unsafe extern "C" fn enable_qpsg(
    db: *mut libsqlite3_sys::sqlite3,
    _error: *mut *mut std::ffi::c_char,
    _api: *const libsqlite3_sys::sqlite3_api_routines,
) -> std::ffi::c_int {
    // SAFETY: `db` is the connection SQLite is opening; this option takes an int
    // (1: on) and an optional int pointer for the new setting (none wanted). The
    // progress handler that enforces `Deadline` is installed on the same occasion.
    unsafe {
        deadline::install(db);
        libsqlite3_sys::sqlite3_db_config(
            db,
            libsqlite3_sys::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as std::ffi::c_int,
            std::ptr::null_mut::<std::ffi::c_int>(),
        )
    }
}

/// Opens one connection; on SQLite, sets the pragmas every connection needs.
fn establish(
    url: &DatabaseUrl,
    busy_timeout_ms: u32,
) -> Result<DbConnection, diesel::ConnectionError> {
    match url {
        DatabaseUrl::Sqlite(path) => {
            stable_sqlite_plans();
            let mut conn = SqliteConnection::establish(&path.to_string_lossy())?;
            // WAL lets readers proceed while one writer writes; the busy timeout makes a
            // second writer wait instead of failing at once. synchronous = FULL syncs the
            // WAL at every commit: an event answered 2xx survives a power cut, not just a
            // crash of the process. temp_store = MEMORY keeps the savepoint journals (one
            // per delivery in a group commit) in memory, not in a temporary file.
            // A new database (no table yet) is made able to shrink after retention
            // prunes (`db::size::give_back`); an older one needs `coe vacuum` once. First
            // (WAL mode writes the file's header, after which it takes a VACUUM), and
            // only then: on a database in use the pragma would write its header, a write
            // that waits on every other writer.
            // The busy timeout before anything else: a connection opened while another
            // migrates a new file waits for its write lock instead of failing at once.
            conn.batch_execute(&format!("PRAGMA busy_timeout = {busy_timeout_ms};"))
                .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
            let new = if sqlite::is_empty(&mut conn) {
                "PRAGMA auto_vacuum = INCREMENTAL;"
            } else {
                ""
            };
            conn.batch_execute(&format!(
                "{new}
                 PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA temp_store = MEMORY;
                 PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES};"
            ))
            .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
            Ok(DbConnection::Sqlite(conn))
        }
        DatabaseUrl::Postgres(url) => Ok(DbConnection::Pg(PgConnection::establish(url)?)),
    }
}

mod sqlite {
    use diesel::prelude::*;

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }

    /// Whether the database has no table yet (a new file).
    pub fn is_empty(conn: &mut SqliteConnection) -> bool {
        diesel::sql_query("SELECT count(*) AS n FROM sqlite_master")
            .get_result::<Count>(conn)
            .is_ok_and(|c| c.n == 0)
    }
}

/// The write-ahead log's length (pages of 4 KiB) past which a commit checkpoints it
/// itself: a bound in case `Checkpointer` falls behind or is not running (the CLI).
/// SQLite's default, 1,000, is reached between two of the checkpointer's runs under
/// load, and the writer then copies what the checkpointer had not yet.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 10_000;

/// How often the checkpointer copies SQLite's write-ahead log into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(50);

/// Checkpoints a SQLite database's write-ahead log from a thread of its own, with a
/// connection of its own. Otherwise the commit that takes the log past 1,000 pages
/// copies it into the database itself: on the ingest writer, 6–11% of its time,
/// and a stall for the requests that commit waits for. Passive: it never blocks the
/// writer or readers; a commit that still finds a long log has little left to copy.
/// Stops when dropped (the drop waits for a checkpoint under way).
pub struct Checkpointer {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Checkpointer {
    /// Starts the thread on SQLite; PostgreSQL checkpoints on its own (`None`).
    pub fn start(url: &DatabaseUrl, busy_timeout_ms: u32) -> std::io::Result<Option<Checkpointer>> {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let DatabaseUrl::Sqlite(_) = url else {
            return Ok(None);
        };
        let (stop, stopped) = channel::<()>();
        let url = url.clone();
        let thread = std::thread::Builder::new()
            .name("coe-checkpoint".into())
            .spawn(move || {
                let mut conn: Option<DbConnection> = None;
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
                    if conn.is_none() {
                        conn = establish(&url, busy_timeout_ms)
                            .map_err(|e| tracing::debug!(error = %e, "checkpointer: no connection"))
                            .ok();
                    }
                    if let Some(c) = conn.as_mut() {
                        if let Err(e) = c.batch_execute("PRAGMA wal_checkpoint(PASSIVE)") {
                            // A read-only or full disk: the writers report it; try
                            // again with a new connection.
                            tracing::debug!(error = %e, "checkpointer: checkpoint failed");
                            conn = None;
                        }
                    }
                }
            })?;
        Ok(Some(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
        }))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Query(#[from] diesel::result::Error),
    #[error("cannot open the database: {0}")]
    Connect(String),
    #[error("cannot apply migrations: {0}")]
    Migrate(String),
    /// The database holds migrations this binary does not know: a newer `coe`
    /// migrated it, and this one would run on a schema it was not written for.
    #[error(
        "the database holds {} migration(s) this coe does not know ({}): a newer version of coe \
         migrated it; run that version (or restore a backup made before the upgrade)",
        .0.len(),
        .0.join(", ")
    )]
    UnknownMigrations(Vec<String>),
    /// `serve --no-migrate` on a database with migrations still to apply.
    #[error(
        "the database lacks {} migration(s) this coe needs ({}): run `coe migrate` first, or \
         start without --no-migrate",
        .0.len(),
        .0.join(", ")
    )]
    PendingMigrations(Vec<String>),
}

impl DbError {
    /// The error with what to do about it, when it is about a SQLite file that cannot
    /// be opened or written: which files coe needs, and what to check.
    pub fn explained(self, url: &DatabaseUrl) -> DbError {
        let DatabaseUrl::Sqlite(path) = url else {
            return self;
        };
        let message = self.to_string();
        if fault::classify_message(&message).is_none() {
            return self;
        }
        let file = path.display();
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| ".".to_owned(), |p| p.display().to_string());
        let hint = format!(
            "{message}. The SQLite database is {file}: the user running coe must be able to read \
             and write {file}, {file}-wal and {file}-shm and create files in {folder}; check their \
             owner and permissions (ls -l {file}*), and that the disk is not full or mounted read-only"
        );
        match self {
            DbError::Migrate(_) => DbError::Migrate(hint),
            _ => DbError::Connect(hint),
        }
    }
}

/// Writers of this process to SQLite take turns here before asking SQLite for its
/// write lock. SQLite's own busy handler polls and is not fair: under a burst of
/// concurrent writes one writer can lose every retry until its busy timeout expires.
/// Queueing in-process keeps the busy timeout for other processes only.
static SQLITE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` in a transaction that is ready to write. On SQLite it begins with
/// `BEGIN IMMEDIATE`, which takes the write lock up front: a deferred transaction that
/// reads and then writes can fail with "database is locked" without waiting.
pub fn write_transaction<T, E, F>(conn: &mut DbConnection, f: F) -> Result<T, E>
where
    F: FnOnce(&mut DbConnection) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    let outermost = outermost(conn)?;
    let _turn = match conn {
        DbConnection::Sqlite(_) if outermost => {
            Some(SQLITE_WRITER.lock().unwrap_or_else(|p| p.into_inner()))
        }
        _ => None,
    };
    match conn {
        DbConnection::Sqlite(c) if outermost => {
            AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")?
        }
        _ => Tm::begin_transaction(conn)?,
    }
    let value = finish(conn, f)?;
    if outermost {
        fault::cleared();
    }
    Ok(value)
}

type Tm = <DbConnection as Connection>::TransactionManager;

/// Whether `conn` is outside any transaction (the next one begun is the outermost).
fn outermost(conn: &mut DbConnection) -> diesel::QueryResult<bool> {
    Ok(Tm::transaction_manager_status_mut(conn)
        .transaction_depth()?
        .is_none())
}

/// Runs `f` in the transaction just begun on `conn`, then commits it, or rolls it
/// back when `f` fails.
fn finish<T, E, F>(conn: &mut DbConnection, f: F) -> Result<T, E>
where
    F: FnOnce(&mut DbConnection) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    match f(conn) {
        Ok(value) => {
            Tm::commit_transaction(conn)?;
            Ok(value)
        }
        Err(error) => {
            Tm::rollback_transaction(conn)?;
            Err(error)
        }
    }
}

/// Runs `f` on one snapshot of the database: every read in it sees the same committed
/// writes, none made after its first read. SQLite: a deferred transaction (WAL
/// readers keep the snapshot their first read took); PostgreSQL: `REPEATABLE READ
/// READ ONLY`. The second value is false when `conn` was in a transaction already:
/// its reads may then see different moments (PostgreSQL), or writes it rolls back.
pub fn read_snapshot<T, E, F>(conn: &mut DbConnection, f: F) -> Result<(T, bool), E>
where
    F: FnOnce(&mut DbConnection) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    let outermost = outermost(conn)?;
    let one_snapshot = match conn {
        DbConnection::Pg(c) if outermost => {
            AnsiTransactionManager::begin_transaction_sql(
                c,
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            )?;
            true
        }
        DbConnection::Pg(_) => {
            Tm::begin_transaction(conn)?;
            false
        }
        DbConnection::Sqlite(_) => {
            Tm::begin_transaction(conn)?;
            outermost
        }
    };
    Ok((finish(conn, f)?, one_snapshot))
}

/// Loads the rows of `query` that no other transaction has locked, locking them
/// (`FOR UPDATE SKIP LOCKED`) on PostgreSQL; on SQLite the write transaction already
/// excludes every other writer, so it is a plain load. The one place that matches on
/// the backend for it.
#[macro_export]
macro_rules! load_skip_locked {
    ($conn:expr, $query:expr) => {{
        use diesel::RunQueryDsl as _;
        match $conn {
            $crate::db::DbConnection::Pg(c) => $query.for_update().skip_locked().load(c),
            $crate::db::DbConnection::Sqlite(c) => $query.load(c),
        }
    }};
}

/// `INSERT … ON CONFLICT (column) DO NOTHING` on whichever backend `conn` is: diesel
/// types upserts per backend, so this is the one place that matches on it. Evaluates
/// to the number of rows inserted (0 when the row was there already).
#[macro_export]
macro_rules! insert_or_ignore {
    ($conn:expr, $insert:expr, $column:expr) => {{
        use diesel::RunQueryDsl as _;
        match $conn {
            $crate::db::DbConnection::Sqlite(c) => {
                $insert.on_conflict($column).do_nothing().execute(c)
            }
            $crate::db::DbConnection::Pg(c) => $insert.on_conflict($column).do_nothing().execute(c),
        }
    }};
}

/// Inserts rows in one statement, skipping those whose key (`target`) is there
/// already (SQLite: `INSERT OR IGNORE`; PostgreSQL: `ON CONFLICT DO NOTHING`).
/// Evaluates to the number of rows inserted.
#[macro_export]
macro_rules! insert_rows_or_ignore {
    ($conn:expr, $table:expr, $values:expr, $target:expr) => {{
        use diesel::RunQueryDsl as _;
        match $conn {
            $crate::db::DbConnection::Sqlite(c) => diesel::insert_or_ignore_into($table)
                .values($values)
                .execute(c),
            $crate::db::DbConnection::Pg(c) => diesel::insert_into($table)
                .values($values)
                .on_conflict($target)
                .do_nothing()
                .execute(c),
        }
    }};
}

/// Inserts many rows in one statement (`values` is a slice of rows or of tuples).
/// Multi-row inserts go to the backend's own connection.
#[macro_export]
macro_rules! insert_rows {
    ($conn:expr, $table:expr, $values:expr) => {{
        use diesel::RunQueryDsl as _;
        match $conn {
            $crate::db::DbConnection::Sqlite(c) => {
                diesel::insert_into($table).values($values).execute(c)
            }
            $crate::db::DbConnection::Pg(c) => {
                diesel::insert_into($table).values($values).execute(c)
            }
        }
    }};
}

/// Inserts rows in one statement, a row already there for a key (`target`)
/// replaced by the new one: SQLite's `REPLACE`, PostgreSQL's `ON CONFLICT (target)
/// DO UPDATE SET changes` (with `diesel::upsert::excluded`). `changes` must set
/// every column outside the key, so that both do the same. (diesel has no multi-row
/// upsert on SQLite; a statement per row would be compiled for every row.)
#[macro_export]
macro_rules! replace_rows {
    ($conn:expr, $table:expr, $values:expr, $target:expr, $changes:expr) => {{
        use diesel::RunQueryDsl as _;
        match $conn {
            $crate::db::DbConnection::Sqlite(c) => {
                diesel::replace_into($table).values($values).execute(c)
            }
            $crate::db::DbConnection::Pg(c) => diesel::insert_into($table)
                .values($values)
                .on_conflict($target)
                .do_update()
                .set($changes)
                .execute(c),
        }
    }};
}

/// Runs `f` (in a transaction) with PostgreSQL planning each statement for the
/// values bound to it, when `lists` says its statements look up lists of values.
/// A prepared `column = ANY($1)` is planned once for any list after five runs, for
/// the table as it was then: on a new database, a sequential scan comparing every
/// row with every value, kept while the table grows (measured: 85–98 ms a lookup of
/// 100 values after 20,000 events, under 1 ms planned for its values). SQLite plans
/// such a statement for its table every time.
pub fn planned_for_values<T>(
    conn: &mut DbConnection,
    lists: bool,
    f: impl FnOnce(&mut DbConnection) -> diesel::QueryResult<T>,
) -> diesel::QueryResult<T> {
    if !lists || conn.backend() != Backend::Postgres {
        return f(conn);
    }
    diesel::sql_query("SET LOCAL plan_cache_mode = force_custom_plan").execute(conn)?;
    let value = f(conn)?;
    diesel::sql_query("SET LOCAL plan_cache_mode TO DEFAULT").execute(conn)?;
    Ok(value)
}

diesel::define_sql_function!(
    /// SQL's `lower(text)`, on both databases: for names people type in any case (a
    /// team, a service).
    fn lower(x: diesel::sql_types::Nullable<diesel::sql_types::Text>) -> diesel::sql_types::Nullable<diesel::sql_types::Text>
);

/// A new random, time-ordered id for a row.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The current time as stored: naive UTC, to the microsecond (PostgreSQL's precision).
pub fn now() -> chrono::NaiveDateTime {
    use chrono::SubsecRound;
    crate::domain::clock::now().naive_utc().trunc_subsecs(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(diesel::QueryableByName)]
    struct PlanStep {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }

    /// The plan of a statement with bound values, as SQLite runs it.
    fn plan_of(conn: &mut DbConnection, open: &str) -> String {
        use diesel::sql_types::Text;
        let steps: Vec<PlanStep> =
            diesel::sql_query("EXPLAIN QUERY PLAN SELECT k FROM t WHERE k = ? AND s = ?")
                .bind::<Text, _>("a")
                .bind::<Text, _>(open)
                .load(conn)
                .expect("plan");
        steps
            .into_iter()
            .map(|s| s.detail)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Without the query planner stability guarantee, SQLite plans a statement for the
    /// values bound to it (here: the partial index fits only `s = 'open'`) and compiles
    /// it again whenever they are bound anew; with it, one plan whatever is bound.
    #[test]
    fn sqlite_connections_plan_a_statement_once_whatever_is_bound() {
        let dir = tempfile::tempdir().expect("dir");
        let url = DatabaseUrl::Sqlite(dir.path().join("plans.db"));
        let mut conn = establish(&url, 1_000).expect("connection");
        conn.batch_execute(
            "CREATE TABLE t (k TEXT NOT NULL, s TEXT NOT NULL);
             CREATE INDEX t_by_k ON t (k);
             CREATE UNIQUE INDEX t_open ON t (k) WHERE s = 'open';",
        )
        .expect("schema");
        let open = plan_of(&mut conn, "open");
        let closed = plan_of(&mut conn, "closed");
        assert_eq!(open, closed, "one plan for both values");
        assert!(!open.contains("t_open"), "{open}");
    }

    /// Fills `conn`'s table `t` with about 2 MiB more, written to the WAL only
    /// (the connection's own checkpoint bound is far).
    fn write_two_mib(conn: &mut DbConnection) {
        conn.batch_execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO t (k) SELECT hex(randomblob(500)) FROM n;",
        )
        .expect("rows");
    }

    /// The checkpointer copies the WAL into the database file while the writing
    /// connection stays open (that connection would not, short of 10,000 pages), and
    /// stops when dropped.
    #[test]
    fn the_checkpointer_copies_the_wal_into_the_file_until_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("wal.db");
        let url = DatabaseUrl::Sqlite(path.clone());
        let mut conn = establish(&url, 1_000).expect("connection");
        conn.batch_execute("CREATE TABLE t (k TEXT NOT NULL)")
            .expect("schema");
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        write_two_mib(&mut conn);
        let before = size();
        assert!(before < 1 << 20, "nothing copied yet: {before} bytes");

        let checkpointer = Checkpointer::start(&url, 1_000)
            .expect("thread")
            .expect("a checkpointer on SQLite");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size() < 3 << 19 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(size() >= 3 << 19, "copied into the file: {} bytes", size());

        // Dropping it joins its thread: once `drop` returns, no pass is under way or
        // to come, so what is written next stays in the WAL (no wait could show more).
        drop(checkpointer);
        let stopped = size();
        write_two_mib(&mut conn);
        assert_eq!(size(), stopped, "nothing copied once dropped");
    }
}
