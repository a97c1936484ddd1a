//! Figures kept between the changes they count: a small in-process cache keyed on a
//! generation the database answers in one index read per use, so any change on any
//! replica makes the next use count again.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{corrective_actions, people};
use crate::db::DbConnection;
use crate::domain::Clock;
use crate::services::actions::tally::{self, Closing};

/// How long a kept value is used at most, so that sliding windows ("closed in the
/// last 30 days") move on with the clock.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// What the figures about actions (and the board's totals) depend on besides the
/// clock: today, the last change to any action or person, and the changes to the past
/// and closings the database counts (`tally::past`), each one index read. A cache
/// keyed on it is current after every change.
fn generation(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<String> {
    let actions: Option<NaiveDateTime> = corrective_actions::table
        .select(diesel::dsl::max(corrective_actions::updated_at))
        .first(conn)?;
    let (history, closings) = tally::past(conn)?;
    let people = people_changed(conn)?;
    Ok(format!(
        "{today}|{actions:?}|{people:?}|{history}|{closings}"
    ))
}

/// The last change to any person (their teams).
fn people_changed(conn: &mut DbConnection) -> QueryResult<Option<NaiveDateTime>> {
    people::table
        .select(diesel::dsl::max(people::updated_at))
        .first(conn)
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
        PerChange {
            cache: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .time_to_live(KEPT_FOR)
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

/// How far before its counting a kept value looks for actions closed since, so that
/// a replica whose clock is a little behind cannot close one unseen.
const CLOSINGS_MARGIN: chrono::Duration = chrono::Duration::seconds(60);

/// Values about the past (actions closed, the weeks), kept until something they count
/// changes (`tally::past`'s first count, or a person) and at most ten minutes. A plain
/// closing does not make them count again: the next use reads the actions closed
/// since (an index range, a few rows) and adds them (`absorb`), when their number is
/// the number of closings the database counted since; any other number means a
/// closing it cannot see (a clock far behind, a closing written in the past by SQL)
/// and the value is counted again.
pub struct Past<V> {
    cache: moka::sync::Cache<String, Arc<Kept<V>>>,
}

/// A value about the past and what it has counted.
struct Kept<V> {
    value: Arc<V>,
    /// The closings the database had counted before the value was read.
    closings: i64,
    /// The clock's time when it was counted.
    counted_at: NaiveDateTime,
    /// The actions closed from `counted_at - CLOSINGS_MARGIN` that it counts.
    seen: HashSet<String>,
    born: Instant,
}

impl<V: Clone + Send + Sync + 'static> Past<V> {
    /// Keeps up to `capacity` values (one per key).
    pub fn new(capacity: u64) -> Past<V> {
        Past {
            cache: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .time_to_live(KEPT_FOR)
                .build(),
        }
    }

    /// The value for `key` as of `clock`: kept, kept with the actions closed since
    /// added by `absorb` (given the value, a closing, and when the value was counted),
    /// or counted by `count`.
    pub fn get<E: From<diesel::result::Error>>(
        &self,
        conn: &mut DbConnection,
        clock: Clock,
        key: &str,
        count: impl FnOnce(&mut DbConnection) -> Result<V, E>,
        absorb: impl Fn(&mut V, &mut DbConnection, &Closing, NaiveDateTime) -> Result<(), E>,
    ) -> Result<Arc<V>, E> {
        // The counts first: whatever is read after them is at least as recent.
        let (history, closings) = tally::past(conn)?;
        let key = format!(
            "{key}|{}|{:?}|{history}",
            clock.today(),
            people_changed(conn)?
        );
        if let Some(kept) = self.cache.get(&key).filter(|k| k.born.elapsed() < KEPT_FOR) {
            if kept.closings == closings {
                return Ok(kept.value.clone());
            }
            if let Some(kept) = self.absorbed(conn, &kept, closings, &absorb)? {
                let value = kept.value.clone();
                self.cache.insert(key, Arc::new(kept));
                return Ok(value);
            }
        }
        let counted_at = clock.now.naive_utc();
        let value = Arc::new(count(conn)?);
        // Read after the count: a closing between the two is seen but not counted, and
        // then the numbers cannot agree (counted again), never counted twice.
        let seen = tally::closed_since(conn, counted_at - CLOSINGS_MARGIN)?
            .into_iter()
            .map(|c| c.id)
            .collect();
        self.cache.insert(
            key,
            Arc::new(Kept {
                value: value.clone(),
                closings,
                counted_at,
                seen,
                born: Instant::now(),
            }),
        );
        Ok(value)
    }

    /// `kept` with the actions closed since added, when they are all there is to add
    /// (`closings` counted now).
    fn absorbed<E: From<diesel::result::Error>>(
        &self,
        conn: &mut DbConnection,
        kept: &Kept<V>,
        closings: i64,
        absorb: &impl Fn(&mut V, &mut DbConnection, &Closing, NaiveDateTime) -> Result<(), E>,
    ) -> Result<Option<Kept<V>>, E> {
        let closed = tally::closed_since(conn, kept.counted_at - CLOSINGS_MARGIN)?;
        let fresh: Vec<Closing> = closed
            .into_iter()
            .filter(|c| !kept.seen.contains(&c.id))
            .collect();
        if fresh.len() as i64 != closings - kept.closings {
            return Ok(None);
        }
        let mut value = V::clone(&kept.value);
        let mut seen = kept.seen.clone();
        for closing in fresh {
            absorb(&mut value, conn, &closing, kept.counted_at)?;
            seen.insert(closing.id);
        }
        Ok(Some(Kept {
            value: Arc::new(value),
            closings,
            counted_at: kept.counted_at,
            seen,
            born: kept.born,
        }))
    }
}
