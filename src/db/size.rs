//! How big the database is, and how much room its disk has left (for `/metrics`).

use std::path::Path;

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
