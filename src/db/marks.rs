//! Facts about the database itself (`database_marks`, migration 000046).

use diesel::prelude::*;

use super::DbConnection;

/// PostgreSQL: whether the outbox's table is another than the one the database's mark
/// names — the database was restored from a dump (or its tables made again) since a
/// coe last started on it — and, if so, the mark moved to this one, so that exactly one
/// of several replicas starting at once is told. Call it inside a write transaction.
/// SQLite: never (`coe restore` holds what was in flight itself).
pub fn outbox_table_replaced(conn: &mut DbConnection) -> QueryResult<bool> {
    if !matches!(conn, DbConnection::Pg(_)) {
        return Ok(false);
    }
    let moved = diesel::sql_query(
        "UPDATE database_marks \
            SET value = CAST(CAST('outbox_emails'::regclass AS oid) AS TEXT) \
          WHERE name = 'outbox_emails_oid' \
            AND value <> CAST(CAST('outbox_emails'::regclass AS oid) AS TEXT)",
    )
    .execute(conn)?;
    Ok(moved == 1)
}
