//! A SQLite database copied out and put back through SQLite itself, and its integrity
//! checked by SQLite. Nothing here opens a database file that SQLite has open in this
//! process with anything but SQLite: closing such a descriptor would drop SQLite's
//! POSIX locks, and another process could then delete the live write-ahead log. (The
//! copies are read and moved with `std::fs` only while no connection holds them.)
//! PostgreSQL has its own tools (`pg_dump`, `pg_restore`); the commands say how.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::sqlite::SqliteConnection;
use diesel::{Connection, QueryableByName, RunQueryDsl};

use crate::config::database::DatabaseUrl;

use super::{DbConnection, MigrationStatus};

/// Why a backup or a restore did not happen. Nothing was changed in any of them.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The database is PostgreSQL: the text says which tool to use and how.
    #[error("{0}")]
    Postgres(String),
    /// The request cannot be carried out as given (a file missing or already there, a
    /// copy that is not a sound `coe` database).
    #[error("{0}")]
    Refused(String),
    /// Another process (a running `coe serve`) holds the database.
    #[error(
        "{0} is in use by another process (a running `coe serve`?): stop every coe process \
         using it first, then restore"
    )]
    InUse(PathBuf),
    /// The copy or the move failed.
    #[error("{0}")]
    Failed(String),
}

/// A copy made or put in place.
#[derive(Debug)]
pub struct Copied {
    pub path: PathBuf,
    pub bytes: u64,
    /// The migrations the copy holds.
    pub migrations: MigrationStatus,
    pub took: Duration,
    /// For a restore: the database it replaced, kept under this name.
    pub previous: Option<PathBuf>,
}

#[derive(QueryableByName)]
struct CheckRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    result: String,
}

/// How thoroughly SQLite checks a file.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// `PRAGMA quick_check`: every page and record, not that indexes match tables.
    Quick,
    /// `PRAGMA integrity_check`: also that every index matches its table.
    Full,
}

/// The problems SQLite finds in the database on `conn` (empty when it is sound), at
/// most 100 of them.
pub fn problems(conn: &mut SqliteConnection, check: Check) -> diesel::QueryResult<Vec<String>> {
    let sql = match check {
        Check::Quick => "SELECT quick_check AS result FROM pragma_quick_check",
        Check::Full => "SELECT integrity_check AS result FROM pragma_integrity_check",
    };
    let rows: Vec<CheckRow> = diesel::sql_query(sql).load(conn)?;
    Ok(rows
        .into_iter()
        .map(|r| r.result)
        .filter(|r| r != "ok")
        .collect())
}

/// Checks the database at `url` once with a connection of its own (`PRAGMA
/// quick_check`: SQLite reads every page): `None` when sound; what it found, reported
/// to `/readyz` (`database_corrupt`), when not. The start-up integrity job runs it.
pub fn quick_check(url: &DatabaseUrl, busy_timeout_ms: u32) -> Result<Option<String>, String> {
    let found = super::establish(url, busy_timeout_ms)
        .map_err(|e| e.to_string())
        .and_then(|conn| match conn {
            DbConnection::Sqlite(mut c) => {
                problems(&mut c, Check::Quick).map_err(|e| e.to_string())
            }
            DbConnection::Pg(_) => Ok(Vec::new()),
        });
    match found {
        Ok(found) if found.is_empty() => Ok(None),
        Ok(found) => {
            let found = found.join("; ");
            super::fault::corrupt_found(&found);
            Ok(Some(found))
        }
        Err(e) if super::fault::classify_message(&e) == Some(super::fault::Fault::Corrupt) => {
            super::fault::corrupt_found(&e);
            Ok(Some(e))
        }
        Err(e) => Err(e),
    }
}

/// Makes a consistent copy of the database at `url` in the new file `dest`, while
/// the service may be running and writing (`VACUUM INTO` reads one snapshot), and
/// checks the copy with `PRAGMA integrity_check` before giving it its name. Before
/// that, `before` runs on the copy in a write transaction with `secure_delete` on (what
/// it overwrites is not left in the file's free space): what the copy must not keep is
/// taken out there (`services::connections::withhold_secrets`).
pub fn backup<T>(
    url: &DatabaseUrl,
    dest: &Path,
    busy_timeout_ms: u32,
    before: impl FnOnce(&mut DbConnection) -> diesel::QueryResult<T>,
) -> Result<(Copied, T), CopyError> {
    let started = Instant::now();
    let source = match url {
        DatabaseUrl::Postgres(_) => {
            return Err(CopyError::Postgres(
                "the database is PostgreSQL: back it up with PostgreSQL's own tool while coe runs, \
                 e.g. `pg_dump --format=custom --file=coe.dump \"$COE_DATABASE_URL\"` (restore with \
                 `pg_restore --clean --if-exists --dbname=\"$COE_DATABASE_URL\" coe.dump` while coe \
                 is stopped); see docs/operations.md"
                    .into(),
            ))
        }
        DatabaseUrl::Sqlite(path) => path,
    };
    if source.as_os_str() == ":memory:" || !source.is_file() {
        return Err(CopyError::Refused(format!(
            "there is no SQLite database at {}",
            source.display()
        )));
    }
    if dest.exists() {
        return Err(CopyError::Refused(format!(
            "{} exists already: give a new file name (a backup never overwrites)",
            dest.display()
        )));
    }
    let partial = sibling(dest, &format!("partial-{}", std::process::id()));
    let made = (|| {
        let mut conn = match super::establish(url, busy_timeout_ms) {
            Ok(DbConnection::Sqlite(c)) => c,
            Ok(DbConnection::Pg(_)) => return Err("expected SQLite".to_owned()),
            Err(e) => return Err(format!("cannot open {}: {e}", source.display())),
        };
        diesel::sql_query("VACUUM INTO ?")
            .bind::<diesel::sql_types::Text, _>(partial.to_string_lossy())
            .execute(&mut conn)
            .map_err(|e| format!("cannot copy {}: {e}", source.display()))?;
        drop(conn);
        // A plain connection: the copy keeps its rollback journal (no WAL beside it).
        let mut conn = SqliteConnection::establish(&partial.to_string_lossy())
            .map(DbConnection::Sqlite)
            .map_err(|e| format!("cannot open the copy {}: {e}", partial.display()))?;
        diesel::sql_query("PRAGMA secure_delete = ON")
            .execute(&mut conn)
            .and_then(|_| conn.transaction(|conn| before(conn)))
            .map_err(|e| format!("cannot prepare the copy {}: {e}", partial.display()))
    })();
    let checked = made.and_then(|done| Ok((inspect(&partial, dest)?, done)));
    let (migrations, done) = match checked {
        Ok(checked) => checked,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(CopyError::Failed(e));
        }
    };
    let placed = sync_file(&partial)
        .and_then(|()| std::fs::rename(&partial, dest))
        .and_then(|()| sync_folder(dest));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&partial);
        return Err(CopyError::Failed(format!(
            "cannot write {}: {e}",
            dest.display()
        )));
    }
    let copied = Copied {
        path: dest.to_path_buf(),
        bytes: std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0),
        migrations,
        took: started.elapsed(),
        previous: None,
    };
    Ok((copied, done))
}

/// Puts the copy `source` in place of the database at `url`: refuses while another
/// process holds the database, checks the copy (`integrity_check`, and that this
/// binary knows every migration it holds), removes the old database's `-wal` and
/// `-shm` (an old write-ahead log replayed onto the copy corrupts it) and renames the
/// copy into place, so that the database is either the old one or the copy, never
/// half of each. The database it replaced stays beside it, named
/// `<name>.replaced-<time>`. A database SQLite cannot read is replaced only with
/// `force` (whether a process holds it cannot be told). Before the copy is put in
/// place, `after` runs on it (migrated to this version) in a write transaction: the
/// outbox holds what it would otherwise send again (`services::outbound::outbox::restored`).
pub fn restore<T>(
    url: &DatabaseUrl,
    source: &Path,
    force: bool,
    after: impl FnOnce(&mut DbConnection) -> diesel::QueryResult<T>,
) -> Result<(Copied, T), CopyError> {
    let started = Instant::now();
    let target =
        match url {
            DatabaseUrl::Postgres(_) => return Err(CopyError::Postgres(
                "the database is PostgreSQL: restore a pg_dump archive with PostgreSQL's own tool \
                 while every coe process is stopped, e.g. `pg_restore --clean --if-exists \
                 --dbname=\"$COE_DATABASE_URL\" coe.dump`, then start coe (it applies any newer \
                 migrations); see docs/operations.md"
                    .into(),
            )),
            DatabaseUrl::Sqlite(path) if path.as_os_str() == ":memory:" => {
                return Err(CopyError::Refused(
                    "the database is in memory: there is nothing to restore into".into(),
                ))
            }
            DatabaseUrl::Sqlite(path) => path,
        };
    if !source.is_file() {
        return Err(CopyError::Refused(format!(
            "there is no backup at {}",
            source.display()
        )));
    }
    if target.exists() && same_file(source, target) {
        return Err(CopyError::Refused(format!(
            "{} is the database itself, not a copy of it",
            source.display()
        )));
    }
    // Copied beside the database first (the same file system, for an atomic rename),
    // and checked there: the check reads what will be put in place.
    let incoming = sibling(target, &format!("restoring-{}", std::process::id()));
    let checked = std::fs::copy(source, &incoming)
        .map_err(|e| {
            CopyError::Failed(format!(
                "cannot copy {} to {}: {e}",
                source.display(),
                incoming.display()
            ))
        })
        .and_then(|_| inspect(&incoming, source).map_err(CopyError::Refused))
        .and_then(|status| {
            if status.unknown.is_empty() {
                Ok(status)
            } else {
                Err(CopyError::Refused(format!(
                    "{} holds migrations this coe does not know ({}): restore it with the version \
                     of coe that made it",
                    source.display(),
                    status.unknown.join(", ")
                )))
            }
        })
        .and_then(|status| release(target, force).map(|()| status));
    let migrations = match checked {
        Ok(status) => status,
        Err(e) => {
            let _ = std::fs::remove_file(&incoming);
            return Err(e);
        }
    };
    // What was being sent, or waiting, when the backup was taken may have gone out
    // since: held for an admin (`services::outbound::outbox::restored`), never sent by itself.
    let held = match prepare(&incoming, after) {
        Ok(held) => held,
        Err(e) => {
            let _ = std::fs::remove_file(&incoming);
            return Err(CopyError::Failed(e));
        }
    };
    // The copy takes the database's owner and mode: restored by root (`sudo coe
    // restore`), a database the service's user could no longer open would stop it at
    // its next start. One who may not give it that owner is refused, nothing changed.
    if let Err(e) = keep_owner_and_mode(target, &incoming) {
        let _ = std::fs::remove_file(&incoming);
        return Err(CopyError::Refused(e));
    }
    let previous = target.exists().then(|| {
        sibling(
            target,
            &format!(
                "replaced-{}",
                crate::domain::clock::now().format("%Y%m%dT%H%M%SZ")
            ),
        )
    });
    let placed = (|| -> std::io::Result<()> {
        sync_file(&incoming)?;
        if let Some(previous) = &previous {
            std::fs::hard_link(target, previous)?;
        }
        for suffix in ["-wal", "-shm"] {
            match std::fs::remove_file(with_suffix(target, suffix)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&incoming, target)?;
        sync_folder(target)
    })();
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&incoming);
        return Err(CopyError::Failed(format!(
            "cannot put the copy in place of {}: {e}",
            target.display()
        )));
    }
    Ok((
        Copied {
            path: target.clone(),
            bytes: std::fs::metadata(target).map(|m| m.len()).unwrap_or(0),
            migrations,
            took: started.elapsed(),
            previous,
        },
        held,
    ))
}

/// Checks that no other process holds the database at `target` and leaves it with
/// no connection and no write-ahead log: an exclusive lock is taken (refused at once
/// while any other connection is open, a running server's included), then the
/// connection is closed, which checkpoints the log into the file and deletes it. A
/// database SQLite cannot read (the corrupt one being replaced) is no obstacle.
fn release(target: &Path, force: bool) -> Result<(), CopyError> {
    if !target.exists() {
        return Ok(());
    }
    // A database SQLite cannot read (the corrupt one being replaced) cannot say
    // whether another process holds it: then only the operator can (`--force`).
    let unknown = |e: &dyn std::fmt::Display| {
        if force {
            tracing::warn!(error = %e, "the database being replaced cannot be read; replaced as asked (--force)");
            Ok(())
        } else {
            Err(CopyError::Refused(format!(
                "SQLite cannot read {} ({e}), so whether a coe process still holds it cannot be \
                 told: stop every coe process using it, then run `coe restore --force`",
                target.display()
            )))
        }
    };
    let mut conn = match SqliteConnection::establish(&target.to_string_lossy()) {
        Ok(conn) => conn,
        Err(e) => return unknown(&e),
    };
    let taken = conn.batch_execute(
        "PRAGMA busy_timeout = 0;
         PRAGMA locking_mode = EXCLUSIVE;
         BEGIN EXCLUSIVE;
         SELECT count(*) FROM sqlite_master;
         COMMIT;",
    );
    match taken {
        Ok(()) => Ok(()),
        Err(e) => {
            let message = e.to_string().to_ascii_lowercase();
            if message.contains("locked") || message.contains("busy") {
                Err(CopyError::InUse(target.to_path_buf()))
            } else {
                unknown(&e)
            }
        }
    }
}

/// Opens a copy (held by no other connection), checks its integrity and reads its
/// migrations; the connection is closed before returning. Errors name the copy as
/// `shown` (the file the person named, not the temporary one).
fn inspect(copy: &Path, shown: &Path) -> Result<MigrationStatus, String> {
    let mut conn = SqliteConnection::establish(&copy.to_string_lossy())
        .map_err(|e| format!("cannot open the copy {}: {e}", shown.display()))?;
    let found = problems(&mut conn, Check::Full).unwrap_or_else(|e| vec![e.to_string()]);
    if !found.is_empty() {
        return Err(format!(
            "SQLite's integrity check fails on the copy {}: {}",
            shown.display(),
            found.join("; ")
        ));
    }
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let tables: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM sqlite_master \
         WHERE type = 'table' AND name = '__diesel_schema_migrations'",
    )
    .get_result(&mut conn)
    .map_err(|e| e.to_string())?;
    if tables.n == 0 {
        return Err(format!(
            "{} is a SQLite database but not one of coe's (it records no migrations)",
            shown.display()
        ));
    }
    let mut conn = DbConnection::Sqlite(conn);
    super::migration_status(&mut conn).map_err(|e| e.to_string())
}

/// What `coe vacuum` did.
#[derive(Debug)]
pub struct Vacuumed {
    pub before: u64,
    pub after: u64,
    pub took: Duration,
}

/// `coe vacuum`: makes a SQLite database able to give freed pages back
/// (`auto_vacuum = INCREMENTAL`, which an older database lacks) and rewrites it
/// compact, with every other process kept out (refused while one holds it).
pub fn vacuum(url: &DatabaseUrl) -> Result<Vacuumed, CopyError> {
    let started = Instant::now();
    let path = match url {
        DatabaseUrl::Postgres(_) => {
            return Err(CopyError::Postgres(
                "the database is PostgreSQL: its autovacuum reuses the space events left; \
                 `VACUUM FULL` (which locks each table while it runs) gives it back to the \
                 file system"
                    .into(),
            ))
        }
        DatabaseUrl::Sqlite(path) if !path.exists() => {
            return Err(CopyError::Refused(format!(
                "there is no database at {}",
                path.display()
            )))
        }
        DatabaseUrl::Sqlite(path) => path,
    };
    let size = || {
        [path.to_path_buf(), with_suffix(path, "-wal")]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum::<u64>()
    };
    let before = size();
    let mut conn = SqliteConnection::establish(&path.to_string_lossy())
        .map_err(|e| CopyError::Failed(format!("cannot open {}: {e}", path.display())))?;
    let done = conn.batch_execute(
        "PRAGMA busy_timeout = 0;
         PRAGMA locking_mode = EXCLUSIVE;
         BEGIN EXCLUSIVE;
         COMMIT;
         PRAGMA auto_vacuum = INCREMENTAL;
         VACUUM;
         PRAGMA wal_checkpoint(TRUNCATE);",
    );
    if let Err(e) = done {
        let message = e.to_string().to_ascii_lowercase();
        return Err(if message.contains("locked") || message.contains("busy") {
            CopyError::InUse(path.to_path_buf())
        } else {
            CopyError::Failed(format!("cannot vacuum {}: {e}", path.display()))
        });
    }
    drop(conn);
    Ok(Vacuumed {
        before,
        after: size(),
        took: started.elapsed(),
    })
}

/// What a held email's last error says (`services::outbound::outbox::restored`).
pub const HELD_BECAUSE: &str = "it was being sent when the backup this database was restored \
     from was taken, so it may have gone out already: send it again or drop it";

/// Brings `copy` to this version's migrations (a backup of an older version) and runs
/// `after` on it in a write transaction.
fn prepare<T>(
    copy: &Path,
    after: impl FnOnce(&mut DbConnection) -> diesel::QueryResult<T>,
) -> Result<T, String> {
    let conn = SqliteConnection::establish(&copy.to_string_lossy())
        .map_err(|e| format!("cannot open the copy: {e}"))?;
    let mut conn = DbConnection::Sqlite(conn);
    super::migrate(&mut conn).map_err(|e| format!("cannot migrate the copy: {e}"))?;
    super::write_transaction(&mut conn, after)
        .map_err(|e| format!("cannot hold the emails the backup has waiting: {e}"))
}

/// `path` with `suffix` appended to its file name (`coe.db` → `coe.db-wal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Gives `copy` the owner and permissions of `target` (when it exists), read with
/// `stat` (nothing of the live database is opened).
fn keep_owner_and_mode(target: &Path, copy: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(was) = std::fs::metadata(target) else {
        return Ok(());
    };
    let now =
        std::fs::metadata(copy).map_err(|e| format!("cannot read {}: {e}", copy.display()))?;
    if (now.uid(), now.gid()) != (was.uid(), was.gid()) {
        std::os::unix::fs::chown(copy, Some(was.uid()), Some(was.gid())).map_err(|e| {
            format!(
                "{} belongs to user {} and group {}, and this user cannot give the restored copy \
                 that owner ({e}): run coe restore as that user or as root",
                target.display(),
                was.uid(),
                was.gid()
            )
        })?;
    }
    std::fs::set_permissions(copy, was.permissions()).map_err(|e| {
        format!(
            "cannot give {} the mode of {}: {e}",
            copy.display(),
            target.display()
        )
    })
}

/// A file beside `path`: `coe.db` → `coe.db.<tag>`.
fn sibling(path: &Path, tag: &str) -> PathBuf {
    with_suffix(path, &format!(".{tag}"))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Flushes a file no connection holds to the disk.
fn sync_file(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// Flushes the folder holding `path`, so that a rename in it survives a power cut.
fn sync_folder(path: &Path) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(folder)?.sync_all()
}
