//! The full-text index of COEs, in each database's own engine: FTS5 on SQLite, a
//! `tsvector` with a GIN index on PostgreSQL (see the migrations). Each COE's text is
//! indexed twice: by stems (English: "failing" finds "failed"), which every word of a
//! search must match, and as written (`coe_search_exact` on SQLite, the `exact`
//! column on PostgreSQL), which a quoted phrase must match and which tells the COEs
//! holding the words together from those holding them apart. The index's own words
//! (`search_words`) answer a typo with "did you mean".

use diesel::prelude::*;
use std::time::Duration;

use diesel::sql_types::{BigInt, Double, Integer, Text};

use super::schema::search_words;
use super::DbConnection;
use crate::domain::search::{self as rules, SearchText};

/// How many words apart two words typed side by side may stand and still count as
/// near each other.
pub const NEAR_WORDS: usize = 8;

/// Replaces the COE's row in the index, and adds its new words to the vocabulary.
pub fn write(conn: &mut DbConnection, coe_id: &str, title: &str, body: &str) -> QueryResult<()> {
    match conn {
        DbConnection::Sqlite(c) => {
            // The COE's row, found by its rowid (`coe_search_rows`), replaced under the
            // same rowid in both tables.
            let row: Option<i64> =
                diesel::sql_query("SELECT search_row AS n FROM coe_search_rows WHERE coe_id = ?")
                    .bind::<Text, _>(coe_id)
                    .get_result::<Number>(c)
                    .optional()?
                    .map(|r| r.n);
            if let Some(row) = row {
                for table in ["coe_search", "coe_search_exact"] {
                    diesel::sql_query(format!("DELETE FROM {table} WHERE rowid = ?"))
                        .bind::<BigInt, _>(row)
                        .execute(c)?;
                }
            }
            diesel::sql_query(
                "INSERT INTO coe_search (rowid, coe_id, title, body) VALUES (?, ?, ?, ?)",
            )
            .bind::<diesel::sql_types::Nullable<BigInt>, _>(row)
            .bind::<Text, _>(coe_id)
            .bind::<Text, _>(title)
            .bind::<Text, _>(body)
            .execute(c)?;
            let row = match row {
                Some(row) => row,
                None => {
                    let row = diesel::sql_query("SELECT last_insert_rowid() AS n")
                        .get_result::<Number>(c)?
                        .n;
                    diesel::sql_query(
                        "INSERT INTO coe_search_rows (coe_id, search_row) VALUES (?, ?)",
                    )
                    .bind::<Text, _>(coe_id)
                    .bind::<BigInt, _>(row)
                    .execute(c)?;
                    row
                }
            };
            diesel::sql_query(
                "INSERT INTO coe_search_exact (rowid, coe_id, text) VALUES (?, ?, ?)",
            )
            .bind::<BigInt, _>(row)
            .bind::<Text, _>(coe_id)
            .bind::<Text, _>(format!("{title}\n{body}"))
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
    let words: Vec<_> = rules::vocabulary_of(&format!("{title}\n{body}"))
        .into_iter()
        .map(|w| search_words::word.eq(w))
        .collect();
    for chunk in words.chunks(500) {
        crate::insert_rows_or_ignore!(conn, search_words::table, chunk, search_words::word)?;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Number {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Hit {
    #[diesel(sql_type = Text)]
    coe_id: String,
    /// 2: the words as typed, side by side; 1: each near the next; 0: anywhere.
    #[diesel(sql_type = Integer)]
    together: i32,
    /// The engine's relevance, 0 or more.
    #[diesel(sql_type = Double)]
    rank: f64,
}

/// An FTS5 string: the text in double quotes (the words are letters and digits only,
/// `SearchText`; anything else is dropped all the same, so that a person's text is
/// never FTS5 syntax).
fn quoted(words: &[String]) -> String {
    let words: Vec<String> = words
        .iter()
        .map(|w| w.chars().filter(|c| c.is_alphanumeric()).collect())
        .collect();
    format!("\"{}\"", words.join(" "))
}

/// The pairs of words typed side by side (each once): the nearness ranked.
fn pairs(sequence: &[String]) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for pair in sequence.windows(2) {
        let (a, b) = (pair[0].as_str(), pair[1].as_str());
        if a != b && !out.contains(&(a, b)) {
            out.push((a, b));
        }
    }
    out
}

/// COE ids matching every word of `text` (and each of its quoted phrases exactly),
/// with their rank, best first, at most `limit`. The COEs holding the words as typed
/// side by side come first, then those holding each near the next, then the rest, each
/// by the engine's relevance; the rank says so: its whole part is that order (2, 1,
/// 0), its fraction the relevance. The search stops when it has run for `within`: it
/// then fails with an error that `timed_out` recognises (SQLite's progress handler
/// interrupts the statement, see `db::configure_sqlite_connection`; PostgreSQL cancels
/// it by `statement_timeout`, set for this statement alone).
pub fn find(
    conn: &mut DbConnection,
    text: &SearchText,
    limit: i64,
    within: Duration,
) -> QueryResult<Vec<(String, f64)>> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let sequence = text.sequence();
    let pairs = pairs(sequence);
    let hits: Vec<Hit> = match conn {
        DbConnection::Sqlite(c) => {
            // Each word quoted: the user's text is data, never FTS5 query syntax.
            let all = text
                .words()
                .iter()
                .map(|w| quoted(std::slice::from_ref(w)))
                .collect::<Vec<_>>()
                .join(" ");
            let phrases = text
                .phrases()
                .iter()
                .map(|p| quoted(p))
                .collect::<Vec<_>>()
                .join(" ");
            let near = pairs
                .iter()
                .map(|(a, b)| {
                    format!(
                        "NEAR({} {}, {NEAR_WORDS})",
                        quoted(&[(*a).to_owned()]),
                        quoted(&[(*b).to_owned()])
                    )
                })
                .collect::<Vec<_>>()
                .join(" AND ");
            let together = if pairs.is_empty() {
                "0".to_owned()
            } else {
                "CASE WHEN coe_id IN (SELECT coe_id FROM coe_search_exact \
                 WHERE coe_search_exact MATCH ?) THEN 2 \
                 WHEN coe_id IN (SELECT coe_id FROM coe_search WHERE coe_search MATCH ?) \
                 THEN 1 ELSE 0 END"
                    .to_owned()
            };
            let exactly = if phrases.is_empty() {
                ""
            } else {
                " AND coe_id IN (SELECT coe_id FROM coe_search_exact \
                 WHERE coe_search_exact MATCH ?)"
            };
            let mut query = diesel::sql_query(format!(
                "SELECT coe_id, {together} AS together, \
                 -bm25(coe_search, 0.0, 10.0, 1.0) AS rank FROM coe_search \
                 WHERE coe_search MATCH ?{exactly} ORDER BY together DESC, rank DESC LIMIT ?"
            ))
            .into_boxed::<diesel::sqlite::Sqlite>();
            if !pairs.is_empty() {
                query = query
                    .bind::<Text, _>(quoted(sequence))
                    .bind::<Text, _>(near);
            }
            query = query.bind::<Text, _>(all);
            if !phrases.is_empty() {
                query = query.bind::<Text, _>(phrases);
            }
            let _deadline = super::Deadline::set(within);
            query.bind::<BigInt, _>(limit).load(c)?
        }
        DbConnection::Pg(c) => {
            let millis = within.as_millis().clamp(1, i32::MAX as u128);
            let mut binds: Vec<String> = vec![text.words().join(" ")];
            let at = |value: String, binds: &mut Vec<String>| {
                binds.push(value);
                format!("${}", binds.len())
            };
            let together = if pairs.is_empty() {
                "0".to_owned()
            } else {
                // Each pair within NEAR_WORDS of each other, in either order.
                let near = pairs
                    .iter()
                    .map(|(a, b)| {
                        let apart: Vec<String> = (1..=NEAR_WORDS)
                            .flat_map(|d| [format!("{a} <{d}> {b}"), format!("{b} <{d}> {a}")])
                            .collect();
                        format!("({})", apart.join(" | "))
                    })
                    .collect::<Vec<_>>()
                    .join(" & ");
                let phrase = at(sequence.join(" "), &mut binds);
                let near = at(near, &mut binds);
                format!(
                    "CASE WHEN exact @@ phraseto_tsquery('simple', {phrase}) THEN 2 \
                     WHEN exact @@ to_tsquery('simple', {near}) THEN 1 ELSE 0 END"
                )
            };
            let exactly: String = text
                .phrases()
                .iter()
                .map(|p| {
                    let p = at(p.join(" "), &mut binds);
                    format!(" AND exact @@ phraseto_tsquery('simple', {p})")
                })
                .collect();
            let limit_at = format!("${}", binds.len() + 1);
            let sql = format!(
                "SELECT coe_id, {together} AS together, \
                 CAST(ts_rank(tsv, plainto_tsquery('english', $1)) \
                 + ts_rank_cd(exact, plainto_tsquery('simple', $1)) AS float8) AS rank \
                 FROM coe_search WHERE tsv @@ plainto_tsquery('english', $1){exactly} \
                 ORDER BY together DESC, rank DESC LIMIT {limit_at}"
            );
            c.transaction::<_, diesel::result::Error, _>(|c| {
                diesel::sql_query(format!("SET LOCAL statement_timeout = {millis}")).execute(c)?;
                let mut query = diesel::sql_query(sql).into_boxed::<diesel::pg::Pg>();
                for value in binds {
                    query = query.bind::<Text, _>(value);
                }
                let hits = query.bind::<BigInt, _>(limit).load(c)?;
                diesel::sql_query("SET LOCAL statement_timeout TO DEFAULT").execute(c)?;
                Ok(hits)
            })?
        }
    };
    Ok(hits
        .into_iter()
        .map(|h| {
            let relevance = h.rank.max(0.0);
            (
                h.coe_id,
                f64::from(h.together) + relevance / (1.0 + relevance),
            )
        })
        .collect())
}

/// For each word of `text` the index does not hold, the nearest word it does (a slip
/// away, `domain::search::did_you_mean`), among the words of the same first letter:
/// `(typed, meant)`. Empty when every word is known or none is near.
pub fn did_you_mean(
    conn: &mut DbConnection,
    text: &SearchText,
) -> QueryResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for typed in text.words().iter().filter(|w| rules::is_vocabulary(w)) {
        let known: i64 = search_words::table
            .filter(search_words::word.eq(typed))
            .count()
            .get_result(conn)?;
        if known > 0 {
            continue;
        }
        let Some(first) = typed.chars().next() else {
            continue;
        };
        let length = typed.chars().count();
        let candidates: Vec<String> = search_words::table
            .filter(search_words::word.like(format!("{first}%")))
            .select(search_words::word)
            .load::<String>(conn)?
            .into_iter()
            .filter(|w| w.chars().count().abs_diff(length) <= 2)
            .collect();
        if let Some(meant) = rules::did_you_mean(typed, &candidates) {
            out.push((typed.clone(), meant.to_owned()));
        }
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_typed_side_by_side_are_paired_once() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            pairs(&words("timed out timed out")),
            [("timed", "out"), ("out", "timed")]
        );
        assert!(pairs(&words("pool")).is_empty());
        assert!(pairs(&words("out out")).is_empty());
        assert_eq!(quoted(&words("ran out")), "\"ran out\"");
        assert_eq!(quoted(&["a\"b".to_owned()]), "\"ab\"");
    }
}
