//! Which replicas are alive: each one that delivers says so every
//! [`BEAT_EVERY`] under its `server.replica_name` (`replica_heartbeats`), and one silent
//! for [`SILENT_AFTER`] has stopped, or came back under another name. What a silent
//! replica was sending is stranded at once (the outbox page says so, delivery and an
//! admin may take it back) instead of when its claim's lease runs out.

use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::replica_heartbeats;
use crate::db::{self, DbConnection};

/// How often a delivering replica says it is alive.
pub const BEAT_EVERY: Duration = Duration::from_secs(10);

/// How long a replica may be silent before it counts as stopped: six beats missed, so
/// that a busy database or a pause of the process does not strand what it sends.
pub const SILENT_AFTER: Duration = Duration::from_secs(60);

/// Records that replica `name` is alive at `now`.
pub fn beat(conn: &mut DbConnection, name: &str, now: NaiveDateTime) -> QueryResult<()> {
    db::write_transaction(conn, |conn| {
        let seen = diesel::update(replica_heartbeats::table.find(name))
            .set(replica_heartbeats::seen_at.eq(now))
            .execute(conn)?;
        if seen == 0 {
            crate::insert_or_ignore!(
                conn,
                diesel::insert_into(replica_heartbeats::table).values((
                    replica_heartbeats::name.eq(name),
                    replica_heartbeats::started_at.eq(now),
                    replica_heartbeats::seen_at.eq(now),
                )),
                replica_heartbeats::name
            )?;
        }
        Ok(())
    })
}

/// Of `names`, those whose replica has been silent for [`SILENT_AFTER`] at `now`. A
/// name never heard of (a replica of a version before heartbeats) is not among them:
/// only its claim's lease tells.
pub fn silent(
    conn: &mut DbConnection,
    names: &[&str],
    now: NaiveDateTime,
) -> QueryResult<Vec<String>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    replica_heartbeats::table
        .filter(replica_heartbeats::name.eq_any(names))
        .filter(replica_heartbeats::seen_at.lt(silent_since(now)))
        .select(replica_heartbeats::name)
        .load(conn)
}

/// Every replica silent for [`SILENT_AFTER`] at `now`.
pub fn all_silent(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<Vec<String>> {
    replica_heartbeats::table
        .filter(replica_heartbeats::seen_at.lt(silent_since(now)))
        .select(replica_heartbeats::name)
        .load(conn)
}

fn silent_since(now: NaiveDateTime) -> NaiveDateTime {
    now - chrono::Duration::from_std(SILENT_AFTER).unwrap_or(chrono::Duration::MAX)
}

/// Forgets replicas silent for a week (names that will not come back, e.g. pods).
pub fn forget_long_gone(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::delete(
            replica_heartbeats::table
                .filter(replica_heartbeats::seen_at.lt(now - chrono::Duration::days(7))),
        )
        .execute(conn)
    })
}
