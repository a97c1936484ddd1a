//! The full-text index of COEs, in each database's own engine: FTS5 on SQLite, a
//! `tsvector` with a GIN index on PostgreSQL (see the migrations).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Text};

use super::DbConnection;

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

/// COE ids matching `text`, with their rank, best first, at most `limit`.
pub fn find(conn: &mut DbConnection, text: &str, limit: i64) -> QueryResult<Vec<(String, f64)>> {
    let hits: Vec<Hit> = match conn {
        DbConnection::Sqlite(c) => {
            // Each word quoted: the user's text is data, never FTS5 query syntax.
            let query = text
                .split(|ch: char| !ch.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" ");
            if query.is_empty() {
                return Ok(Vec::new());
            }
            diesel::sql_query(
                "SELECT coe_id, -bm25(coe_search, 0.0, 10.0, 1.0) AS rank FROM coe_search \
                 WHERE coe_search MATCH ? ORDER BY rank DESC LIMIT ?",
            )
            .bind::<Text, _>(query)
            .bind::<BigInt, _>(limit)
            .load(c)?
        }
        DbConnection::Pg(c) => diesel::sql_query(
            "SELECT coe_id, CAST(ts_rank(tsv, websearch_to_tsquery('english', $1)) AS float8) AS rank \
             FROM coe_search WHERE tsv @@ websearch_to_tsquery('english', $1) \
             ORDER BY rank DESC LIMIT $2",
        )
        .bind::<Text, _>(text)
        .bind::<BigInt, _>(limit)
        .load(c)?,
    };
    Ok(hits.into_iter().map(|h| (h.coe_id, h.rank)).collect())
}
