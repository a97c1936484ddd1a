//! Row and advisory locks, per backend. SQLite's `BEGIN IMMEDIATE` already makes
//! writers take turns, so most of these are PostgreSQL-only.

use diesel::prelude::*;
use diesel::sql_types::Text;

use super::schema::coes;
use super::DbConnection;

/// Takes the COE row's write lock for the rest of the transaction (a no-op update).
/// Every change to a COE's actions or state goes through it first, so that on
/// PostgreSQL's READ COMMITTED two of them cannot both miss the other (the closing
/// rule, a transition checked against a stale state). Returns how many rows it locked
/// (0: no such COE).
pub fn lock_coe(conn: &mut DbConnection, coe_id: &str) -> QueryResult<usize> {
    diesel::update(coes::table.find(coe_id))
        .set(coes::updated_at.eq(coes::updated_at))
        .execute(conn)
}

/// A COE's state (`None`: no such COE), read under a share lock held for the rest of
/// the transaction on PostgreSQL: a change that goes through `lock_coe` waits for it,
/// and it for such a change, but two of these do not wait for each other, so actions
/// added to one COE side by side commit together instead of one after the other.
/// SQLite's writers take turns anyway: a plain read.
pub fn coe_state_shared(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Option<String>> {
    let query = coes::table.find(coe_id).select(coes::state);
    match conn {
        DbConnection::Pg(pg) => query.for_share().first(pg).optional(),
        conn => query.first(conn).optional(),
    }
}

/// Takes transaction-scoped advisory locks on `keys`, sorted, so that two
/// transactions locking overlapping sets never deadlock (PostgreSQL; a no-op on SQLite).
pub fn lock_keys(conn: &mut DbConnection, mut keys: Vec<String>) -> QueryResult<()> {
    let DbConnection::Pg(pg) = conn else {
        return Ok(());
    };
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return Ok(());
    }
    // One round trip for all: `unnest` yields the array in order, so the locks are
    // taken in the sorted order all transactions share.
    let keys: Vec<String> = keys.iter().map(|k| k.replace('\0', "/")).collect();
    diesel::sql_query(
        "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(keys)
    .execute(pg)
    .map(|_| ())
}

/// The advisory-lock key of an incident group.
pub fn group_key(group_key: &str) -> String {
    format!("group\0{group_key}")
}

/// The advisory-lock key of a sender's delivery id.
pub fn delivery_key(source: &str, key: &str) -> String {
    format!("delivery\0{source}\0{key}")
}

/// Takes, for the rest of the transaction, the lock ingestion takes on an incident's
/// group (PostgreSQL; SQLite writers already take turns). Whoever opens a COE for the
/// incident by hand takes it too, so the two never race to insert it.
pub fn lock_group(conn: &mut DbConnection, group: &str) -> QueryResult<()> {
    lock_keys(conn, vec![group_key(group)])
}
