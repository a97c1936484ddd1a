//! Totals by filter kept between the changes they count (the board's, the action
//! list's): an in-process cache keyed on a generation the database answers in a few
//! index reads per use, so any change on any replica makes the next use count again.

use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use super::tally;
use crate::db::schema::{corrective_actions, people};
use crate::db::DbConnection;

/// How long a kept value is used at most (a safety net: every change the totals
/// depend on is in the generation).
const KEPT_FOR: Duration = Duration::from_secs(600);

/// What totals of actions depend on besides the filter: today, the last action and
/// person written, and the changes their `updated_at` may not show (an action deleted,
/// closed, reopened or moved: `tally::change_number`).
fn generation(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<String> {
    let actions: Option<NaiveDateTime> = corrective_actions::table
        .select(diesel::dsl::max(corrective_actions::updated_at))
        .first(conn)?;
    let people: Option<NaiveDateTime> = people::table
        .select(diesel::dsl::max(people::updated_at))
        .first(conn)?;
    let changes = tally::change_number(conn)?;
    Ok(format!("{today}|{actions:?}|{people:?}|{changes}"))
}

/// Totals counted from actions and people, each kept until the next change they
/// depend on and at most ten minutes.
pub struct TotalsCache<V> {
    cache: moka::sync::Cache<String, V>,
}

impl<V: Clone + Send + Sync + 'static> TotalsCache<V> {
    /// Keeps up to `capacity` values (one per filter).
    pub fn new(capacity: u64) -> TotalsCache<V> {
        TotalsCache {
            cache: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .time_to_live(KEPT_FOR)
                .build(),
        }
    }

    /// The totals of `filter` as of now: kept, or counted by `count`.
    pub fn get<E: From<diesel::result::Error>>(
        &self,
        conn: &mut DbConnection,
        today: NaiveDate,
        filter: &str,
        count: impl FnOnce(&mut DbConnection) -> Result<V, E>,
    ) -> Result<V, E> {
        let key = format!("{filter}|{}", generation(conn, today)?);
        if let Some(value) = self.cache.get(&key) {
            return Ok(value);
        }
        let value = count(conn)?;
        self.cache.insert(key, value.clone());
        Ok(value)
    }
}
