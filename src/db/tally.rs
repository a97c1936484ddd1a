//! The owners' kept counts (`action_tally`, kept by triggers: migrations 000033 and
//! 000042): the statements that differ by backend, or that spell a rule in SQL.

use chrono::NaiveDate;
use diesel::prelude::*;
use diesel::sql_types::{Date, Text};

use super::rules::{action_is_active_sql, action_is_overdue_sql, not_past_due_sql, past_due_sql};
use super::schema::action_tally_day;
use super::DbConnection;

/// The day `overdue` is counted against, taken for the rest of the transaction: on
/// PostgreSQL `FOR UPDATE` (the triggers hold it `FOR SHARE`, so no action write is
/// half-counted against either day); SQLite's writer holds the whole database.
pub fn day_for_update(conn: &mut DbConnection) -> QueryResult<NaiveDate> {
    let day = action_tally_day::table
        .find(1)
        .select(action_tally_day::day);
    match conn {
        DbConnection::Pg(c) => day.for_update().first(c),
        DbConnection::Sqlite(c) => day.first(c),
    }
}

/// Counts `overdue` again against `today` for the owners with actions still to be
/// done due from `from` to before `to` (the days the count moved over).
pub fn recount_overdue(
    conn: &mut DbConnection,
    today: NaiveDate,
    (from, to): (NaiveDate, NaiveDate),
) -> QueryResult<usize> {
    let active = action_is_active_sql("c");
    let statement = |p: fn(usize) -> String| {
        format!(
            "UPDATE action_tally SET overdue = (SELECT count(*) FROM corrective_actions c \
             WHERE c.owner_email = action_tally.owner_email AND {}) \
             WHERE owner_email IN (SELECT c.owner_email FROM corrective_actions c \
             WHERE {active} AND {} AND {})",
            action_is_overdue_sql("c", &p(1)),
            not_past_due_sql("c", &p(2)),
            past_due_sql("c", &p(3))
        )
    };
    let query = match conn {
        DbConnection::Pg(_) => statement(|i| format!("${i}")),
        DbConnection::Sqlite(_) => statement(|_| "?".to_owned()),
    };
    diesel::sql_query(query)
        .bind::<Date, _>(today)
        .bind::<Date, _>(from)
        .bind::<Date, _>(to)
        .execute(conn)
}

#[derive(QueryableByName)]
struct Drift {
    #[diesel(sql_type = Text)]
    owner_email: String,
}

/// The owners whose kept row differs from a count of the actions as they stand
/// (none, unless a write bypassed the triggers, or a trigger spells "active" apart
/// from `rules`). Reads every action: for the tests, not for pages.
pub fn drift(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    let rows: Vec<Drift> = diesel::sql_query(format!(
        "SELECT c.owner_email FROM action_tally_counted c \
         LEFT JOIN action_tally t ON t.owner_email = c.owner_email \
         WHERE c.open > 0 AND (t.owner_email IS NULL OR t.open <> c.open \
           OR t.overdue <> c.overdue OR t.oldest_due <> c.oldest_due \
           OR (t.oldest_due IS NULL) <> (c.oldest_due IS NULL)) \
         UNION ALL \
         SELECT t.owner_email FROM action_tally t \
         WHERE t.open > 0 AND NOT EXISTS (SELECT 1 FROM corrective_actions a \
           WHERE a.owner_email = t.owner_email AND {})",
        action_is_active_sql("a")
    ))
    .load(conn)?;
    Ok(rows.into_iter().map(|d| d.owner_email).collect())
}
