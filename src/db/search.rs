//! The full-text index of COEs, in each database's own engine: FTS5 on SQLite, a
//! `tsvector` with a GIN index on PostgreSQL (see the migrations).

use diesel::prelude::*;
use std::time::Duration;

use diesel::sql_types::{BigInt, Double, Text};

use super::DbConnection;
use crate::domain::search::SearchText;

/// Replaces the COE's row in the index.
pub fn write(conn: &mut DbConnection, coe_id: &str, title: &str, body: &str) -> QueryResult<()> {
    match conn {
        DbConnection::Sqlite(c) => {
            diesel::sql_query("DELETE FROM coe_search WHERE coe_id = ?")
                .bind::<Text, _>(coe_id)
                .execute(c)?;
            diesel::sql_query("INSERT INTO coe_search (coe_id, title, body) VALUES (?, ?, ?)")
                .bind::<Text, _>(coe_id)
                .bind::<Text, _>(title)
                .bind::<Text, _>(body)
                .execute(c)?;
        }
        DbConnection::Pg(c) => {
            diesel::sql_query(
                "INSERT INTO coe_search (coe_id, title, body) VALUES ($1, $2, $3) \
                 ON CONFLICT (coe_id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body",
            )
            .bind::<Text, _>(coe_id)
            .bind::<Text, _>(title)
            .bind::<Text, _>(body)
            .execute(c)?;
        }
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Hit {
    #[diesel(sql_type = Text)]
    coe_id: String,
    #[diesel(sql_type = Double)]
    rank: f64,
}

/// COE ids matching every word of `text`, with their rank, best first, at most
/// `limit`. The search stops when it has run for `within`: it then fails with an
/// error that `timed_out` recognises (SQLite's progress handler interrupts the
/// statement, see `db::configure_sqlite_connection`; PostgreSQL cancels it by
/// `statement_timeout`, set for this statement alone).
pub fn find(
    conn: &mut DbConnection,
    text: &SearchText,
    limit: i64,
    within: Duration,
) -> QueryResult<Vec<(String, f64)>> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let hits: Vec<Hit> = match conn {
        DbConnection::Sqlite(c) => {
            // Each word quoted: the user's text is data, never FTS5 query syntax.
            let query = text
                .words()
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" ");
            let _deadline = super::Deadline::set(within);
            diesel::sql_query(
                "SELECT coe_id, -bm25(coe_search, 0.0, 10.0, 1.0) AS rank FROM coe_search \
                 WHERE coe_search MATCH ? ORDER BY rank DESC LIMIT ?",
            )
            .bind::<Text, _>(query)
            .bind::<BigInt, _>(limit)
            .load(c)?
        }
        DbConnection::Pg(c) => {
            let millis = within.as_millis().clamp(1, i32::MAX as u128);
            c.transaction::<_, diesel::result::Error, _>(|c| {
                diesel::sql_query(format!("SET LOCAL statement_timeout = {millis}")).execute(c)?;
                let hits = diesel::sql_query(
                    "SELECT coe_id, CAST(ts_rank(tsv, plainto_tsquery('english', $1)) AS float8) \
                     AS rank FROM coe_search WHERE tsv @@ plainto_tsquery('english', $1) \
                     ORDER BY rank DESC LIMIT $2",
                )
                .bind::<Text, _>(text.to_string())
                .bind::<BigInt, _>(limit)
                .load(c)?;
                diesel::sql_query("SET LOCAL statement_timeout TO DEFAULT").execute(c)?;
                Ok(hits)
            })?
        }
    };
    Ok(hits.into_iter().map(|h| (h.coe_id, h.rank)).collect())
}

/// Whether `error` is a statement stopped for running past its time (`find`'s
/// `within`): SQLite's "interrupted", PostgreSQL's "canceling statement due to
/// statement timeout".
pub fn timed_out(error: &diesel::result::Error) -> bool {
    match error {
        diesel::result::Error::DatabaseError(_, info) => {
            let message = info.message();
            message == "interrupted" || message.contains("statement timeout")
        }
        _ => false,
    }
}
