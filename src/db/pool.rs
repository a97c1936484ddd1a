//! The pool of connections to one database: opening them (`ConnectionManager`),
//! what the process knows of that database's outage (`Outage`: one log line when
//! it begins and one when it ends, and short waits meanwhile), and taking a
//! connection (`checkout`).

use std::collections::HashMap;
use std::time::Duration;

use diesel::r2d2::{self, ManageConnection, R2D2Connection};

use super::{establish, fault, DbConnection, DbError};
use crate::config::database::DatabaseUrl;
use crate::config::DatabaseSettings;

/// A pool of connections to one database, with what the process knows of that
/// database's outage (`Outage`). It is an r2d2 pool (`Deref`).
#[derive(Clone)]
pub struct DbPool {
    pool: r2d2::Pool<ConnectionManager>,
    outage: std::sync::Arc<Outage>,
}

impl std::ops::Deref for DbPool {
    type Target = r2d2::Pool<ConnectionManager>;

    fn deref(&self) -> &Self::Target {
        &self.pool
    }
}

impl std::fmt::Debug for DbPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pool.fmt(f)
    }
}

impl DbPool {
    /// The pool `builder` makes over `manager`, connecting only when a connection is
    /// first asked for.
    pub fn unchecked(
        builder: r2d2::Builder<ConnectionManager>,
        manager: ConnectionManager,
    ) -> DbPool {
        let outage = manager.outage.clone();
        DbPool {
            pool: builder.build_unchecked(manager),
            outage,
        }
    }

    /// The same, opening `min_idle` connections now (an error when it cannot).
    fn checked(
        builder: r2d2::Builder<ConnectionManager>,
        manager: ConnectionManager,
    ) -> Result<DbPool, r2d2::PoolError> {
        let outage = manager.outage.clone();
        Ok(DbPool {
            pool: builder.build(manager)?,
            outage,
        })
    }
}
pub type PooledConnection = r2d2::PooledConnection<ConnectionManager>;

/// Opens connections for the pool, picking the backend from the parsed URL.
#[derive(Debug, Clone)]
pub struct ConnectionManager {
    url: DatabaseUrl,
    busy_timeout_ms: u32,
    outage: std::sync::Arc<Outage>,
}

impl ConnectionManager {
    pub fn new(url: DatabaseUrl, busy_timeout_ms: u32) -> Self {
        ConnectionManager {
            outage: Outage::of(&url),
            url,
            busy_timeout_ms,
        }
    }
}

/// Whether new connections to one database fail, and since when: one per database in
/// the process (the pools of the requests and of the ingest writers reach one
/// database), so one log line when an outage begins and one when it ends, not one per
/// attempt (a refused connection repeats on every request until the database is
/// back). Another database's outage is not this one's (the tests run servers of many
/// databases in one process).
#[derive(Debug, Default)]
struct Outage {
    /// `since` is set: one atomic read for the usual case, no lock.
    failing: std::sync::atomic::AtomicBool,
    since: std::sync::Mutex<Option<std::time::Instant>>,
}

/// The outage of each database this process connects to, by URL.
static OUTAGES: std::sync::Mutex<Option<HashMap<String, std::sync::Arc<Outage>>>> =
    std::sync::Mutex::new(None);

impl Outage {
    /// The outage of the database at `url`, shared by every pool of it.
    fn of(url: &DatabaseUrl) -> std::sync::Arc<Outage> {
        let key = match url {
            DatabaseUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
            DatabaseUrl::Postgres(url) => url.clone(),
        };
        let mut all = OUTAGES.lock().unwrap_or_else(|p| p.into_inner());
        all.get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default()
            .clone()
    }

    /// Whether new connections fail now.
    fn known(&self) -> bool {
        self.failing.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn began(&self, error: &dyn std::fmt::Display) {
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        if since.is_none() {
            *since = Some(std::time::Instant::now());
            self.failing
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let error = error.to_string();
            let first_line = error.lines().next().unwrap_or_default().trim();
            tracing::error!(
                error = first_line,
                "database unreachable: new connections fail; requests that need one get 503 at \
                 once until it is back"
            );
        }
    }

    fn ended(&self) {
        if !self.failing.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(began) = since.take() {
            self.failing
                .store(false, std::sync::atomic::Ordering::SeqCst);
            tracing::info!(
                down_secs = began.elapsed().as_secs(),
                "database reachable again"
            );
        }
    }
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<DbConnection, r2d2::Error> {
        match establish(&self.url, self.busy_timeout_ms) {
            Ok(mut conn) => {
                fault::watch(&mut conn);
                self.outage.ended();
                Ok(conn)
            }
            Err(e) => {
                self.outage.began(&e);
                Err(r2d2::Error::ConnectionError(e))
            }
        }
    }

    /// Checked when taken from the pool: it answers.
    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), r2d2::Error> {
        conn.ping().map_err(r2d2::Error::QueryError)
    }

    /// Checked when given back: a connection that met a database fault is dropped.
    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        std::thread::panicking() || conn.is_broken() || fault::met_here()
    }
}

/// One connection outside any pool (for migrating before the pool opens: a new SQLite
/// file's pool would open its connections while the migration holds the write lock).
pub fn open_one(settings: &DatabaseSettings) -> Result<DbConnection, DbError> {
    let url = DatabaseUrl::parse(&settings.url).map_err(|e| DbError::Connect(e.to_string()))?;
    super::establish(&url, settings.busy_timeout_ms).map_err(|e| DbError::Connect(e.to_string()))
}

/// Builds the pool. Fails when the first connection cannot be made, so a wrong
/// URL or a database that is down stops start-up with the reason.
pub fn connect(settings: &DatabaseSettings) -> Result<DbPool, DbError> {
    connect_sized(settings, settings.pool_size)
}

/// A pool of `size` connections, each opened when first needed and then kept (the
/// ingest writers' own: the main pool proved the database reachable, and a server
/// whose database went away starts anyway and reports it). Not opened ahead: a
/// connection opened while a SQLite file is read-only stays read-only, and one that
/// meets that fault leaves the pool, so the next one opened writes again.
pub fn lazy_pool(settings: &DatabaseSettings, size: u32) -> Result<DbPool, DbError> {
    let url = DatabaseUrl::parse(&settings.url).map_err(|e| DbError::Connect(e.to_string()))?;
    let manager = ConnectionManager::new(url, settings.busy_timeout_ms);
    let builder = r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(0))
        .idle_timeout(None)
        .connection_timeout(Duration::from_secs(settings.connect_timeout_secs.max(1)))
        .error_handler(Box::new(r2d2::NopErrorHandler));
    Ok(DbPool::unchecked(builder, manager))
}

/// The same with `size` connections at most.
fn connect_sized(settings: &DatabaseSettings, size: u32) -> Result<DbPool, DbError> {
    let url = DatabaseUrl::parse(&settings.url).map_err(|e| DbError::Connect(e.to_string()))?;
    let max_size = match &url {
        // Each connection to `:memory:` is its own database: keep one.
        DatabaseUrl::Sqlite(path) if path.as_os_str() == ":memory:" => 1,
        _ => size.max(1),
    };
    let manager = ConnectionManager::new(url, settings.busy_timeout_ms);
    let builder = r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(1))
        .connection_timeout(Duration::from_secs(settings.connect_timeout_secs.max(1)))
        // The manager logs an outage once (`Outage`); r2d2 would log
        // every failed attempt, several a second.
        .error_handler(Box::new(r2d2::NopErrorHandler));
    DbPool::checked(builder, manager).map_err(|e| DbError::Connect(e.to_string()))
}

/// How long a request waits for a connection while the database is known to be
/// unreachable: a refused connection is refused at once, and a request that waits the
/// whole `connect_timeout_secs` for it only holds a worker. Also the slice in which a
/// request that began waiting before the outage was known looks again (r2d2 wakes a
/// waiter when a connection is made or given back, not when making one fails).
const OUTAGE_WAIT: Duration = Duration::from_millis(250);

/// A connection from the pool: waits up to `database.connect_timeout_secs`, or only
/// `OUTAGE_WAIT` when new connections to its database are known to fail or a pool that
/// keeps connections holds none at all. The requests' pool keeps one open
/// (`min_idle`) and drops those that met a fault, so none means the database is
/// unreachable: each attempt to connect is refused at once, and a request that waits
/// the whole timeout for it only holds a worker (a database that is back still
/// connects within the short wait). A request that was already waiting when the
/// outage began gives up within `OUTAGE_WAIT` of it too: it waits in slices and looks
/// between them. A failure is logged here outside an outage; an outage is logged once
/// by the manager (`Outage`).
pub fn checkout(pool: &DbPool) -> Result<PooledConnection, r2d2::PoolError> {
    // A pool that keeps connections and holds none lost them all; a lazy one (the
    // ingest writers') holds none until first asked, and its first connection may take
    // a while on a loaded machine.
    let emptied = pool.state().connections == 0 && pool.min_idle().is_some_and(|m| m > 0);
    let outage = emptied || pool.outage.known();
    if outage {
        return pool.get_timeout(OUTAGE_WAIT);
    }
    let deadline = std::time::Instant::now() + pool.connection_timeout();
    // Each slice that times out takes r2d2's last error: the latest one that said why
    // is the one logged.
    let mut why: Option<String> = None;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let result = pool.get_timeout(left.min(OUTAGE_WAIT));
        let error = match result {
            Ok(conn) => return Ok(conn),
            Err(e) => e,
        };
        // An outage that began meanwhile is logged once, by the manager.
        if pool.outage.known() {
            return Err(error);
        }
        let message = error.to_string();
        let first_line = message.lines().next().unwrap_or_default().trim();
        if first_line != "timed out waiting for connection" {
            why = Some(first_line.to_owned());
        }
        if left <= OUTAGE_WAIT {
            let first_line = why.as_deref().unwrap_or(first_line);
            tracing::warn!(error = first_line, "no database connection");
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request that began waiting before anyone knew the database was down (here the
    /// first one ever, on a lazy pool) gives up once the first refusal is known, not
    /// after `connect_timeout_secs`: r2d2 does not wake it when connecting fails.
    #[test]
    fn a_waiting_request_gives_up_once_connections_are_refused() {
        // Port 1 on loopback refuses; the database name keeps this outage this test's.
        let settings = DatabaseSettings {
            url: "postgres://coe@127.0.0.1:1/a_waiting_request_gives_up".into(),
            connect_timeout_secs: 30,
            ..DatabaseSettings::default()
        };
        let pool = lazy_pool(&settings, 2).unwrap();
        let started = std::time::Instant::now();
        assert!(checkout(&pool).is_err());
        let waited = started.elapsed();
        assert!(pool.outage.known(), "the refusal is known as an outage");
        // Well under the 30 s timeout: a slice or two, on however loaded a machine.
        assert!(waited < Duration::from_secs(10), "waited {waited:?}");
        // The next request knows at once.
        let started = std::time::Instant::now();
        assert!(checkout(&pool).is_err());
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
