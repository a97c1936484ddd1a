//! Figures kept between the changes they count: a small in-process cache keyed on a
//! generation the database answers in one index read per use, so any change on any
//! replica makes the next use count again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{corrective_actions, people};
use crate::db::DbConnection;
use crate::domain::Clock;
use crate::services::actions::tally::{self, PastChange};

/// How long a kept value is used at most, so that sliding windows ("closed in the
/// last 30 days") move on with the clock.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// How often the server counts everyone's figures about the past ahead of the views
/// (`Past::get` with `Read::Warm`), so that no view waits for a count: a value older than
/// `WARM_AFTER` is counted again, long before any view would find it past `KEPT_FOR`.
pub const WARM_EVERY: Duration = Duration::from_secs(120);
const WARM_AFTER: Duration = Duration::from_secs(360);

/// What the figures about actions (and the board's totals) depend on besides the
/// clock: today, the last change to any action or person, and the changes to the past
/// the database counts (`tally::past`), each one index read. A cache
/// keyed on it is current after every change.
fn generation(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<String> {
    let actions: Option<NaiveDateTime> = corrective_actions::table
        .select(diesel::dsl::max(corrective_actions::updated_at))
        .first(conn)?;
    let history = tally::past(conn)?;
    let people = people_changed(conn)?;
    Ok(format!("{today}|{actions:?}|{people:?}|{history}"))
}

/// The last change to any person (their teams).
fn people_changed(conn: &mut DbConnection) -> QueryResult<Option<NaiveDateTime>> {
    people::table
        .select(diesel::dsl::max(people::updated_at))
        .first(conn)
}

/// How many people have a team and the last change to one of them: part of the key
/// of a value counted by team, which a person added without a team (a new owner,
/// say) does not change.
pub fn teams_changed(conn: &mut DbConnection) -> QueryResult<String> {
    let (people, last): (i64, Option<NaiveDateTime>) = people::table
        .filter(people::team.is_not_null())
        .select((
            diesel::dsl::count_star(),
            diesel::dsl::max(people::updated_at),
        ))
        .first(conn)?;
    Ok(format!("{people}|{last:?}"))
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

/// Values about the past (actions closed, the weeks), kept for the day and at most
/// ten minutes (a value counted by team has their last change in its key:
/// `teams_changed`). A change to what they count does not make
/// them count again: the next use reads the changes made since
/// (`tally::changes`, an index range of a few rows) and applies each (`apply`: it
/// takes away what the action counted as it was and adds what it counts as it is).
/// The count reads the changes' number and the actions on one snapshot, so a change
/// is either in the count or applied after it, never both, never neither.
pub struct Past<V> {
    cache: moka::sync::Cache<String, Arc<Kept<V>>>,
}

/// How a value about the past is read: as a view reads it (counted again when counted
/// more than `KEPT_FOR` ago), or as the server's warmer counts it ahead (every
/// `WARM_EVERY`, when counted more than `WARM_AFTER` ago), so that the views find a
/// value counted less than `KEPT_FOR` ago, or one of the new day.
#[derive(Debug, Clone, Copy)]
pub enum Read {
    View,
    Warm,
}

/// A value about the past and the last change it counts.
struct Kept<V> {
    value: Arc<V>,
    seq: i64,
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

    /// The value for `key` as of `clock`: kept, kept with the changes since applied
    /// by `apply`, or counted by `count` (when counted too long ago for `read`).
    pub fn get<E: From<diesel::result::Error>>(
        &self,
        read: Read,
        conn: &mut DbConnection,
        clock: Clock,
        key: &str,
        count: impl FnOnce(&mut DbConnection) -> Result<V, E>,
        apply: impl Fn(&mut V, &mut DbConnection, &PastChange) -> Result<(), E>,
    ) -> Result<Arc<V>, E> {
        let age = match read {
            Read::View => KEPT_FOR,
            Read::Warm => WARM_AFTER,
        };
        self.counted_within(age, conn, clock, key, count, apply)
    }

    /// The value for `key`: kept, if counted less than `age` ago (with the changes
    /// since applied), else counted.
    fn counted_within<E: From<diesel::result::Error>>(
        &self,
        age: Duration,
        conn: &mut DbConnection,
        clock: Clock,
        key: &str,
        count: impl FnOnce(&mut DbConnection) -> Result<V, E>,
        apply: impl Fn(&mut V, &mut DbConnection, &PastChange) -> Result<(), E>,
    ) -> Result<Arc<V>, E> {
        let seq = tally::past(conn)?;
        let key = format!("{key}|{}", clock.today());
        if let Some(kept) = self.cache.get(&key).filter(|k| k.born.elapsed() < age) {
            if kept.seq >= seq {
                return Ok(kept.value.clone());
            }
            if let Some(changes) = tally::changes(conn, kept.seq, seq)? {
                let mut value = V::clone(&kept.value);
                for change in &changes {
                    apply(&mut value, conn, change)?;
                }
                let value = Arc::new(value);
                self.cache.insert(
                    key,
                    Arc::new(Kept {
                        value: value.clone(),
                        seq,
                        born: kept.born,
                    }),
                );
                return Ok(value);
            }
        }
        let ((seq, value), one_snapshot) = crate::db::read_snapshot(conn, |conn| {
            let seq = tally::past(conn)?;
            Ok::<_, E>((seq, count(conn)?))
        })?;
        let value = Arc::new(value);
        if one_snapshot {
            self.cache.insert(
                key,
                Arc::new(Kept {
                    value: value.clone(),
                    seq,
                    born: Instant::now(),
                }),
            );
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A value kept with every change applied is read again only by the warmer, and
    /// by it only once it is older than `WARM_AFTER`; a change is applied, not
    /// counted.
    #[test]
    fn the_warmer_counts_again_only_a_value_counted_a_while_ago() {
        let dir = tempfile::tempdir().expect("dir");
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("t.db").display()),
            ..Default::default()
        };
        let pool = crate::db::connect(&settings).expect("connect");
        let mut conn = pool.get().expect("conn");
        crate::db::migrate(&mut conn).expect("migrate");
        let clock = crate::config::Settings::default().clock();
        let past: Past<i64> = Past::new(4);
        let counts = AtomicUsize::new(0);
        let read = |conn: &mut DbConnection, age: Duration| {
            past.counted_within(
                age,
                conn,
                clock,
                "",
                |_| {
                    counts.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, diesel::result::Error>(0)
                },
                |value, _, _| {
                    *value += 1;
                    Ok(())
                },
            )
            .expect("read")
        };
        assert_eq!(*read(&mut conn, KEPT_FOR), 0);
        diesel::sql_query("UPDATE action_tally_day SET history = history + 1")
            .execute(&mut conn)
            .expect("a change numbered");
        diesel::sql_query(
            "INSERT INTO action_past_changes (seq, action_id) \
             SELECT history, 'a' FROM action_tally_day",
        )
        .execute(&mut conn)
        .expect("a change kept");
        assert_eq!(*read(&mut conn, WARM_AFTER), 1, "applied");
        assert_eq!(counts.load(Ordering::SeqCst), 1, "counted once");
        assert_eq!(*read(&mut conn, Duration::ZERO), 0, "counted again");
        assert_eq!(counts.load(Ordering::SeqCst), 2);
    }
}
