//! How big the database is, and how much room its disk has left (for `/metrics`).

use std::path::Path;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

use super::DbConnection;

/// The database's size in bytes: SQLite's pages (the write-ahead log not included),
/// PostgreSQL's `pg_database_size`.
pub fn database_bytes(conn: &mut DbConnection) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Size {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        bytes: i64,
    }
    let sql = match conn {
        DbConnection::Pg(_) => {
            "SELECT CAST(pg_database_size(current_database()) AS BIGINT) AS bytes"
        }
        DbConnection::Sqlite(_) => {
            "SELECT CAST(p.page_count * s.page_size AS BIGINT) AS bytes \
               FROM pragma_page_count() p, pragma_page_size() s"
        }
    };
    Ok(diesel::sql_query(sql).get_result::<Size>(conn)?.bytes)
}

/// The bytes an unprivileged process may still write on the file system holding
/// `file` (a SQLite database), if it can be asked.
pub fn disk_free_bytes(file: &Path) -> Option<u64> {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stat = rustix::fs::statvfs(folder).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// SQLite: gives up to `pages` free pages back to the file system
/// (`PRAGMA incremental_vacuum`, on a database made with `auto_vacuum = INCREMENTAL`,
/// as coe makes new ones; an older one needs `coe vacuum` once), then checkpoints so
/// that the file itself shrinks. Returns the pages given back. PostgreSQL: 0 (its
/// autovacuum reuses the space).
pub fn give_back(conn: &mut DbConnection, pages: u32) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    if !matches!(conn, DbConnection::Sqlite(_)) {
        return Ok(0);
    }
    let free = |conn: &mut DbConnection| -> QueryResult<i64> {
        Ok(diesel::sql_query(
            "SELECT CAST(freelist_count AS BIGINT) AS n FROM pragma_freelist_count()",
        )
        .get_result::<Count>(conn)?
        .n)
    };
    let before = free(conn)?;
    if before == 0 {
        return Ok(0);
    }
    if let DbConnection::Sqlite(sqlite) = conn {
        sqlite.batch_execute(&format!(
            "PRAGMA incremental_vacuum({pages}); PRAGMA wal_checkpoint(TRUNCATE);"
        ))?;
    }
    Ok(before - free(conn)?)
}

/// SQLite: whether the database can give freed pages back (`auto_vacuum` is
/// incremental). PostgreSQL: true.
pub fn can_give_back(conn: &mut DbConnection) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Mode {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        auto_vacuum: i64,
    }
    if !matches!(conn, DbConnection::Sqlite(_)) {
        return Ok(true);
    }
    let mode: Mode = diesel::sql_query(
        "SELECT CAST(auto_vacuum AS BIGINT) AS auto_vacuum FROM pragma_auto_vacuum()",
    )
    .get_result(conn)?;
    Ok(mode.auto_vacuum == 2)
}
