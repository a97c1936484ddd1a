//! The schema's migrations, embedded in the binary: applying them (on PostgreSQL
//! under an advisory lock), reading which a database holds, and refusing a database
//! a newer version migrated.

use diesel::connection::SimpleConnection;
use diesel::migration::MigrationSource;
use diesel::RunQueryDsl;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

use super::{write_transaction, DbConnection, DbError};

/// Migrations for each backend, embedded in the binary. The two folders hold the
/// same migration names (a test checks it).
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

/// Key of the PostgreSQL advisory lock held while migrating, so that replicas
/// starting together apply each migration once. ("coe-migr" in ASCII.)
const MIGRATION_LOCK_KEY: i64 = 0x636f_652d_6d69_6772;

/// Migrations that rewrite rows in a way a running older version cannot follow (it
/// would write what the migrated database refuses): every replica stops before they
/// run (docs/operations.md, "Migrations"). Each one's `up.sql`, in both folders, says
/// so on a line of its own (`-- coe: stop every replica before this migration runs`);
/// a test holds the two together.
pub const STOP_EVERY_REPLICA: &[&str] = &[
    "2026-12-03-000016_binary_hashes",
    "2026-12-15-000038_incident_groups",
];

/// Which migrations a database holds, against those this binary carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// Applied, by name (`2026-11-29-000001_create_api_tokens`), oldest first.
    pub applied: Vec<String>,
    /// Known to this binary and not yet applied, by name, in the order they apply.
    pub pending: Vec<String>,
    /// Applied by a newer binary: their versions (the database records no names).
    pub unknown: Vec<String>,
}

impl MigrationStatus {
    /// The pending migrations that need every replica stopped before they run. A
    /// database that holds no migration yet has no replica running on it: none.
    pub fn pending_stopping_every_replica(&self) -> Vec<&str> {
        if self.applied.is_empty() {
            return Vec::new();
        }
        self.pending
            .iter()
            .map(String::as_str)
            .filter(|name| STOP_EVERY_REPLICA.contains(name))
            .collect()
    }
}

/// Reads the migrations a database holds; writes nothing (a database never migrated
/// has them all pending).
pub fn migration_status(conn: &mut DbConnection) -> Result<MigrationStatus, DbError> {
    fn status<DB, C>(
        c: &mut C,
        source: EmbeddedMigrations,
        has_table: bool,
    ) -> Result<MigrationStatus, Box<dyn std::error::Error + Send + Sync>>
    where
        DB: diesel::backend::Backend,
        C: MigrationHarness<DB>,
        EmbeddedMigrations: MigrationSource<DB>,
    {
        let applied: Vec<String> = if has_table {
            c.applied_migrations()?
                .iter()
                .map(ToString::to_string)
                .collect()
        } else {
            Vec::new()
        };
        let known: Vec<(String, String)> = MigrationSource::<DB>::migrations(&source)?
            .iter()
            .map(|m| (m.name().version().to_string(), m.name().to_string()))
            .collect();
        let mut out = MigrationStatus {
            applied: Vec::new(),
            pending: Vec::new(),
            unknown: applied
                .iter()
                .filter(|v| !known.iter().any(|(k, _)| k == *v))
                .cloned()
                .collect(),
        };
        for (version, name) in known {
            if applied.contains(&version) {
                out.applied.push(name);
            } else {
                out.pending.push(name);
            }
        }
        out.unknown.sort();
        Ok(out)
    }
    // diesel's `applied_migrations` creates its table when missing: on a database never
    // migrated, ask first, so that reading the status writes nothing.
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let probe = match conn {
        DbConnection::Sqlite(_) => {
            "SELECT count(*) AS n FROM sqlite_master \
             WHERE type = 'table' AND name = '__diesel_schema_migrations'"
        }
        DbConnection::Pg(_) => {
            "SELECT count(*) AS n FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = '__diesel_schema_migrations'"
        }
    };
    let has_table = diesel::sql_query(probe)
        .get_result::<Found>(conn)
        .map_err(|e| DbError::Migrate(e.to_string()))?
        .n
        > 0;
    match conn {
        DbConnection::Sqlite(c) => status(c, SQLITE_MIGRATIONS, has_table),
        DbConnection::Pg(c) => status(c, POSTGRES_MIGRATIONS, has_table),
    }
    .map_err(|e| DbError::Migrate(e.to_string()))
}

/// Refuses a database that holds migrations this binary does not know.
fn refuse_unknown(conn: &mut DbConnection) -> Result<(), DbError> {
    let status = migration_status(conn)?;
    if status.unknown.is_empty() {
        Ok(())
    } else {
        Err(DbError::UnknownMigrations(status.unknown))
    }
}

/// For `serve --no-migrate`: the schema must be exactly the one this binary knows.
pub fn require_current(conn: &mut DbConnection) -> Result<(), DbError> {
    let status = migration_status(conn)?;
    if !status.unknown.is_empty() {
        return Err(DbError::UnknownMigrations(status.unknown));
    }
    if !status.pending.is_empty() {
        return Err(DbError::PendingMigrations(status.pending));
    }
    Ok(())
}

/// Applies pending migrations; on PostgreSQL under an advisory lock. Returns the
/// versions applied (empty when the schema was already current). Refuses, applying
/// nothing, a database that holds a migration this binary does not know.
pub fn migrate(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    let to_strings = |versions: Vec<diesel::migration::MigrationVersion<'_>>| {
        versions.iter().map(|v| v.to_string()).collect::<Vec<_>>()
    };
    match conn {
        // The write lock taken up front serialises processes migrating one file.
        DbConnection::Sqlite(_) => {
            // A migration that rewrites a table's rows (an UPDATE inside the
            // migration's transaction) keeps the original of every page it changes
            // in a statement journal: in a temporary file (SQLITE_TMPDIR, TMPDIR,
            // /var/tmp or /tmp), not in memory as the service's connections do, or
            // memory grows with the table (1.4 GB for a million events).
            conn.batch_execute("PRAGMA temp_store = FILE")
                .map_err(|e| DbError::Migrate(e.to_string()))?;
            let applied = write_transaction(conn, |conn| {
                refuse_unknown(conn)?;
                let DbConnection::Sqlite(c) = conn else {
                    return Err(DbError::Migrate("expected a SQLite connection".into()));
                };
                c.run_pending_migrations(SQLITE_MIGRATIONS)
                    .map(to_strings)
                    .map_err(|e| DbError::Migrate(e.to_string()))
            });
            let restored = conn
                .batch_execute("PRAGMA temp_store = MEMORY")
                .map_err(|e| DbError::Migrate(e.to_string()));
            let applied = applied?;
            restored?;
            Ok(applied)
        }
        DbConnection::Pg(_) => {
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
                .execute(conn)
                .map_err(|e| DbError::Migrate(e.to_string()))?;
            let result = refuse_unknown(conn).and_then(|()| match conn {
                DbConnection::Pg(c) => c
                    .run_pending_migrations(POSTGRES_MIGRATIONS)
                    .map(to_strings)
                    .map_err(|e| DbError::Migrate(e.to_string())),
                DbConnection::Sqlite(_) => Err(DbError::Migrate("expected PostgreSQL".into())),
            });
            let unlock =
                diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
                    .execute(conn);
            let applied = result?;
            unlock.map_err(|e| DbError::Migrate(e.to_string()))?;
            Ok(applied)
        }
    }
}

/// Reverts every applied migration (for tests and for `down.sql` checks).
pub fn revert_all(conn: &mut DbConnection) -> Result<(), DbError> {
    let result = match conn {
        DbConnection::Sqlite(c) => c.revert_all_migrations(SQLITE_MIGRATIONS).map(|_| ()),
        DbConnection::Pg(c) => c.revert_all_migrations(POSTGRES_MIGRATIONS).map(|_| ()),
    };
    result.map_err(|e| DbError::Migrate(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line in a migration's `up.sql` that puts it in [`STOP_EVERY_REPLICA`].
    const STOP_EVERY_REPLICA_MARK: &str = "-- coe: stop every replica before this migration runs";

    /// The list and the marks in the migration files say the same, in both folders.
    #[test]
    fn the_migrations_that_stop_every_replica_are_marked_in_their_files() {
        for backend in ["sqlite", "postgres"] {
            let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(backend);
            let mut marked: Vec<String> = std::fs::read_dir(&folder)
                .expect("the migrations folder")
                .filter_map(Result::ok)
                .filter(|entry| {
                    std::fs::read_to_string(entry.path().join("up.sql"))
                        .is_ok_and(|sql| sql.lines().any(|l| l.trim() == STOP_EVERY_REPLICA_MARK))
                })
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect();
            marked.sort();
            assert_eq!(marked, STOP_EVERY_REPLICA, "{backend}");
        }
    }

    #[test]
    fn only_a_database_in_use_waits_for_replicas_to_stop() {
        let status = |applied: &[&str], pending: &[&str]| MigrationStatus {
            applied: applied.iter().map(|s| s.to_string()).collect(),
            pending: pending.iter().map(|s| s.to_string()).collect(),
            unknown: Vec::new(),
        };
        let all = ["2026-11-29-000001_create_api_tokens", STOP_EVERY_REPLICA[1]];
        assert!(status(&[], &all)
            .pending_stopping_every_replica()
            .is_empty());
        assert_eq!(
            status(&all[..1], &all[1..]).pending_stopping_every_replica(),
            [STOP_EVERY_REPLICA[1]]
        );
        assert!(status(&all, &[])
            .pending_stopping_every_replica()
            .is_empty());
    }
}
