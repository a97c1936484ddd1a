//! Figures kept between the changes they count: a small in-process cache keyed on a
//! generation the database answers in one index read per use, so any change on any
//! replica makes the next use count again.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{corrective_actions, people};
use crate::db::DbConnection;

/// What the figures about actions (and the board's totals) depend on besides the
/// clock: today, the last change to any action or person, and the changes to the
/// past (`history_generation`), each one index read. A cache keyed on it is current
/// after every change.
fn generation(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<String> {
    let actions: Option<NaiveDateTime> = corrective_actions::table
        .select(diesel::dsl::max(corrective_actions::updated_at))
        .first(conn)?;
    Ok(format!("{actions:?}|{}", history_generation(conn, today)?))
}

/// What the figures about the past (actions closed, the weeks) depend on besides the
/// clock: today, the last change to any person (their teams), and the count of changes
/// the database keeps of actions closed, reopened or deleted and due dates moved
/// (`actions::tally::history`). A new action, an edit or a start leave it as it is.
fn history_generation(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<String> {
    let people: Option<NaiveDateTime> = people::table
        .select(diesel::dsl::max(people::updated_at))
        .first(conn)?;
    let history = crate::services::actions::tally::history(conn)?;
    Ok(format!("{today}|{people:?}|{history}"))
}

/// Values counted from actions and people, each kept until the next change they
/// depend on (a generation: one index read per use instead of a count) and at most ten
/// minutes, so that sliding windows ("closed in the last 30 days") move on with the
/// clock. Any change on any replica makes the next use count again.
pub struct PerChange<V> {
    cache: moka::sync::Cache<String, V>,
    generation: fn(&mut DbConnection, NaiveDate) -> QueryResult<String>,
}

impl<V: Clone + Send + Sync + 'static> PerChange<V> {
    /// Keeps up to `capacity` values (one per key) until any action or person changes.
    pub fn new(capacity: u64) -> PerChange<V> {
        PerChange::keyed_on(capacity, generation)
    }

    /// Keeps up to `capacity` values about the past (actions closed, the weeks) until
    /// one of them changes (`history_generation`).
    pub fn of_history(capacity: u64) -> PerChange<V> {
        PerChange::keyed_on(capacity, history_generation)
    }

    fn keyed_on(
        capacity: u64,
        generation: fn(&mut DbConnection, NaiveDate) -> QueryResult<String>,
    ) -> PerChange<V> {
        PerChange {
            cache: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .time_to_live(std::time::Duration::from_secs(600))
                .build(),
            generation,
        }
    }

    /// The value for `key` (a filter, say) as of now: kept, or counted by `count`.
    pub fn get<E: From<diesel::result::Error>>(
        &self,
        conn: &mut DbConnection,
        today: NaiveDate,
        key: &str,
        count: impl FnOnce(&mut DbConnection) -> Result<V, E>,
    ) -> Result<V, E> {
        let key = format!("{key}|{}", (self.generation)(conn, today)?);
        if let Some(value) = self.cache.get(&key) {
            return Ok(value);
        }
        let value = count(conn)?;
        self.cache.insert(key, value.clone());
        Ok(value)
    }
}
