//! The outbox's counts by state (`outbox_counts`, migration 000036): kept by the
//! writes' triggers on SQLite; on PostgreSQL the triggers append changes
//! (`outbox_count_changes`) that a delivery pass folds in, so that concurrent writers
//! never wait on one row.

use diesel::prelude::*;

use super::schema::outbox_count_changes;
use super::DbConnection;

/// Emails by state, the changes not yet folded in included, read in one statement so
/// that a fold is never seen half done. States without a row are left out.
pub fn read(conn: &mut DbConnection) -> QueryResult<Vec<(String, i64)>> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::Text)]
        state: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let rows: Vec<Count> = diesel::sql_query(
        "SELECT state, CAST(SUM(n) AS BIGINT) AS n \
           FROM (SELECT state, n FROM outbox_counts \
                 UNION ALL SELECT state, n FROM outbox_count_changes) c \
          GROUP BY state",
    )
    .load(conn)?;
    Ok(rows.into_iter().map(|c| (c.state, c.n)).collect())
}

/// Folds the changes PostgreSQL's triggers appended: each change deleted and added in
/// one statement, so that it is counted once whichever replica folds it. The counts'
/// rows are locked first, in order, so that two folds wait for each other instead of
/// deadlocking. Nothing to do on SQLite.
pub fn fold(conn: &mut DbConnection) -> QueryResult<()> {
    if !matches!(conn, DbConnection::Pg(_)) {
        return Ok(());
    }
    // Most passes find nothing to fold: they write nothing (no row lock, no commit).
    let changed: bool = diesel::select(diesel::dsl::exists(
        outbox_count_changes::table.select(outbox_count_changes::id),
    ))
    .get_result(conn)?;
    if !changed {
        return Ok(());
    }
    super::write_transaction(conn, |conn| {
        diesel::sql_query("SELECT state FROM outbox_counts ORDER BY state FOR UPDATE")
            .execute(conn)?;
        diesel::sql_query(
            "WITH moved AS (DELETE FROM outbox_count_changes RETURNING state, n) \
             UPDATE outbox_counts c SET n = c.n + m.n \
               FROM (SELECT state, CAST(SUM(n) AS BIGINT) AS n FROM moved GROUP BY state) m \
              WHERE c.state = m.state",
        )
        .execute(conn)?;
        Ok(())
    })
}
