//! After a restore: the emails the backup holds as being sent may have gone out since,
//! and those it holds as waiting were most likely sent by the database the restore
//! replaced; so none is sent again by itself (`hold_after_restore`). A sign-in link is
//! useless by then: its email is dropped and its link expired. A notice or a digest
//! older than `STALE_AFTER_HOURS` is dropped as stale. The rest is `held` for an admin
//! to send (`release_held`, or `retry` one) or drop (`drop_email`, `drop_all_held`),
//! listed on the outbox page. `coe restore` does it on SQLite; on PostgreSQL the first
//! replica to start on a restored database does (`db::marks`), and `coe outbox
//! hold-pending` does it by hand.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;

use super::{OutboxEmail, RetryError, DROPPED, FAILED, HELD, PENDING, SENDING};
use crate::db::models::OutboxRow;
use crate::db::schema::{outbox_emails, sign_in_links};
use crate::db::{self, DbConnection};
use crate::domain::notifications::Class;
use crate::email::Kind;
use crate::services::audit;
use crate::services::outbound::queue::released;

pub use crate::db::backup::HELD_BECAUSE;

/// A notice or digest waiting longer than this when its database is restored is
/// dropped as stale (a digest of that day is superseded by the next sweep's).
pub const STALE_AFTER_HOURS: i64 = 24;

/// What a held email that was waiting (not being sent) says.
pub const HELD_PENDING_BECAUSE: &str = "it was waiting to be sent when the backup this \
     database was restored from was taken, and the database the restore replaced may have \
     sent it already: held, not sent by itself; send what is held or drop it";

/// What a sign-in email dropped by a restore says.
pub const SIGN_IN_DROPPED_BECAUSE: &str = "a sign-in link waiting when the backup this \
     database was restored from was taken: dropped and its link expired by the restore (its \
     recipient asks for a new one)";

/// What a notice dropped by a restore as stale says.
pub const STALE_BECAUSE: &str = "a notice or digest that had waited more than 24 hours when \
     this database was restored: dropped as stale";

/// What a restore did to the outbox.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// Being sent when the backup was taken: held.
    pub in_flight_held: usize,
    /// Waiting when the backup was taken: held.
    pub pending_held: usize,
    /// Sign-in emails dropped (their links expired).
    pub sign_in_dropped: usize,
    /// Sign-in links (emailed or not) expired.
    pub links_expired: usize,
    /// Notices and digests dropped as stale.
    pub stale_dropped: usize,
}

impl Restored {
    pub fn held(&self) -> usize {
        self.in_flight_held + self.pending_held
    }
    pub fn changed_anything(&self) -> bool {
        *self != Restored::default()
    }
    /// One sentence for the operator.
    pub fn describe(&self) -> String {
        format!(
            "{} email(s) were being sent and {} waiting when the backup was taken: held, not \
             sent by themselves (the database the restore replaced may have sent them); an \
             admin sends what is held or drops it on the outbox page (/admin/outbox?state=held); \
             {} sign-in email(s) dropped and {} sign-in link(s) expired; {} notice(s) older than \
             {STALE_AFTER_HOURS} hours dropped as stale",
            self.in_flight_held,
            self.pending_held,
            self.sign_in_dropped,
            self.links_expired,
            self.stale_dropped
        )
    }
}

/// The kinds dropped as stale once old: notices and digests (an escalation, an
/// assignment or a request is held however old).
fn stale_kinds() -> Vec<&'static str> {
    Kind::ALL
        .into_iter()
        .filter(|k| matches!(k.class(), Class::Notice | Class::Digest))
        .map(Kind::name)
        .collect()
}

/// Holds what a restored outbox would otherwise send by itself (see the module). Call
/// it inside a write transaction, on a database just restored.
pub fn hold_after_restore(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<Restored> {
    let waiting = || outbox_emails::state.eq_any([PENDING, SENDING]);
    let sign_in_dropped = diesel::update(
        outbox_emails::table
            .filter(waiting())
            .filter(outbox_emails::kind.eq(Kind::SignIn.name())),
    )
    .set((
        outbox_emails::state.eq(DROPPED),
        outbox_emails::private_link.eq(None::<String>),
        released!(outbox_emails),
        outbox_emails::last_error.eq(SIGN_IN_DROPPED_BECAUSE),
        outbox_emails::updated_at.eq(now),
    ))
    .execute(conn)?;
    let links_expired = diesel::update(
        sign_in_links::table
            .filter(sign_in_links::used_at.is_null())
            .filter(sign_in_links::expires_at.gt(now)),
    )
    .set(sign_in_links::expires_at.eq(now))
    .execute(conn)?;
    let stale_dropped = diesel::update(
        outbox_emails::table
            .filter(outbox_emails::state.eq(PENDING))
            .filter(outbox_emails::kind.eq_any(stale_kinds()))
            .filter(outbox_emails::created_at.lt(now - Duration::hours(STALE_AFTER_HOURS))),
    )
    .set((
        outbox_emails::state.eq(DROPPED),
        outbox_emails::private_link.eq(None::<String>),
        outbox_emails::unsubscribe_token.eq(None::<String>),
        outbox_emails::last_error.eq(STALE_BECAUSE),
        outbox_emails::updated_at.eq(now),
    ))
    .execute(conn)?;
    let in_flight_held = hold(conn, SENDING, HELD_BECAUSE, now)?;
    let pending_held = hold(conn, PENDING, HELD_PENDING_BECAUSE, now)?;
    Ok(Restored {
        in_flight_held,
        pending_held,
        sign_in_dropped,
        links_expired,
        stale_dropped,
    })
}

fn hold(
    conn: &mut DbConnection,
    state: &str,
    because: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    diesel::update(outbox_emails::table.filter(outbox_emails::state.eq(state)))
        .set((
            outbox_emails::state.eq(HELD),
            released!(outbox_emails),
            outbox_emails::last_error.eq(because),
            outbox_emails::updated_at.eq(now),
        ))
        .execute(conn)
}

/// On a database restored since a coe last started on it (PostgreSQL: `db::marks`),
/// holds what its outbox would send by itself (`hold_after_restore`); nothing when not
/// restored.
pub fn hold_if_restored(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<Restored> {
    db::write_transaction(conn, |conn| {
        if db::marks::outbox_table_replaced(conn)? {
            hold_after_restore(conn, now)
        } else {
            Ok(Restored::default())
        }
    })
}

/// `coe outbox hold-pending`: the same as a detected restore, asked for by the operator
/// (a PostgreSQL restore coe cannot tell, e.g. `pg_restore --data-only`). Audited.
pub fn hold_by_hand(conn: &mut DbConnection, actor: &str) -> QueryResult<Restored> {
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let done = hold_after_restore(conn, now)?;
        audit(conn, actor, "outbox:hold_pending", &done, now)?;
        Ok(done)
    })
}

/// What an admin does to every held email at once (`release_held`, `drop_all_held`):
/// on a connection, as the admin; returns how many.
pub type AllHeld = fn(&mut DbConnection, &str) -> QueryResult<usize>;

/// Every held email is sent after all (queued again, due now). Returns how many. Audited.
pub fn release_held(conn: &mut DbConnection, actor: &str) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let n = diesel::update(outbox_emails::table.filter(outbox_emails::state.eq(HELD)))
            .set((
                outbox_emails::state.eq(PENDING),
                outbox_emails::attempts.eq(0),
                outbox_emails::next_attempt_at.eq(now),
                outbox_emails::last_error.eq(None::<String>),
                outbox_emails::updated_at.eq(now),
            ))
            .execute(conn)?;
        if n > 0 {
            super::QUEUED_HERE.with(|q| q.set(true));
        }
        audit(
            conn,
            actor,
            "outbox:send_held",
            &serde_json::json!({ "emails": n }),
            now,
        )?;
        Ok(n)
    })
}

/// Every held email is dropped. Returns how many. Audited.
pub fn drop_all_held(conn: &mut DbConnection, actor: &str) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let n = diesel::update(outbox_emails::table.filter(outbox_emails::state.eq(HELD)))
            .set(dropped!(now))
            .execute(conn)?;
        audit(
            conn,
            actor,
            "outbox:drop_held",
            &serde_json::json!({ "emails": n }),
            now,
        )?;
        Ok(n)
    })
}

/// What a dropped email is set to: not sent, its secrets forgotten.
macro_rules! dropped {
    ($now:expr) => {
        (
            outbox_emails::state.eq(DROPPED),
            outbox_emails::private_link.eq(None::<String>),
            outbox_emails::unsubscribe_token.eq(None::<String>),
            $crate::services::outbound::queue::released!(outbox_emails),
            outbox_emails::updated_at.eq($now),
        )
    };
}
use dropped;

fn audit(
    conn: &mut DbConnection,
    actor: &str,
    action: &str,
    after: &impl Serialize,
    now: NaiveDateTime,
) -> QueryResult<()> {
    audit::record(
        conn,
        audit::Change {
            subject: audit::Subject::Other {
                entity: "outbox",
                id: "outbox",
            },
            actor,
            action,
            before: None,
            after: serde_json::to_value(after).ok(),
        },
        now,
    )
}

/// Drops a held, pending or failed email: it is not sent, and its secrets (a private
/// link, an unsubscribe token) are forgotten. Audited.
pub fn drop_email(
    conn: &mut DbConnection,
    id: &str,
    actor: &str,
) -> Result<OutboxEmail, RetryError> {
    const DROPPABLE: [&str; 3] = [HELD, PENDING, FAILED];
    db::write_transaction(conn, |conn| {
        let row: OutboxRow = outbox_emails::table
            .find(id)
            .select(OutboxRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| RetryError::NotFound(id.to_owned()))?;
        if !DROPPABLE.contains(&row.state.as_str()) {
            return Err(RetryError::NotHeld(row.state));
        }
        let now = db::now();
        // Only if it is still as read: a worker may have claimed it meanwhile.
        let changed = diesel::update(
            outbox_emails::table
                .find(id)
                .filter(outbox_emails::state.eq_any(DROPPABLE)),
        )
        .set(dropped!(now))
        .execute(conn)?;
        if changed == 0 {
            return Err(RetryError::NotHeld(SENDING.into()));
        }
        audit::record(
            conn,
            audit::Change {
                subject: audit::Subject::Other {
                    entity: "email",
                    id,
                },
                actor,
                action: "outbox:drop",
                before: Some(serde_json::json!({ "state": row.state })),
                after: Some(serde_json::json!({ "state": DROPPED })),
            },
            now,
        )?;
        Ok(OutboxEmail {
            state: DROPPED.into(),
            ..row.into()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::database;
    use crate::services::outbound::outbox::{enqueue, enqueue_with_private_link, NewEmail};

    fn email(kind: Kind, key: &str) -> NewEmail {
        NewEmail {
            kind,
            dedup_key: key.into(),
            recipient: format!("{key}@example.com"),
            recipient_name: None,
            subject: key.into(),
            text: "text".into(),
            html: "<p>html</p>".into(),
            data: serde_json::Value::Null,
            calendar: None,
        }
    }

    fn states(conn: &mut DbConnection) -> Vec<(String, String, Option<String>)> {
        outbox_emails::table
            .order(outbox_emails::dedup_key.asc())
            .select((
                outbox_emails::dedup_key,
                outbox_emails::state,
                outbox_emails::private_link,
            ))
            .load(conn)
            .expect("states")
    }

    #[test]
    fn a_restore_drops_sign_in_and_stale_emails_and_holds_the_rest_until_all_are_dropped() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        let now = db::now();
        let old = now - Duration::hours(STALE_AFTER_HOURS + 1);
        enqueue_with_private_link(&mut conn, &email(Kind::SignIn, "a-signin"), "L", now).unwrap();
        enqueue(&mut conn, &email(Kind::Approved, "b-stale"), old).unwrap();
        enqueue(
            &mut conn,
            &email(Kind::OverdueDigest, "c-stale-digest"),
            old,
        )
        .unwrap();
        enqueue(&mut conn, &email(Kind::Escalation, "d-old-escalation"), old).unwrap();
        enqueue(&mut conn, &email(Kind::Approved, "e-notice"), now).unwrap();
        let done = hold_after_restore(&mut conn, now).unwrap();
        assert_eq!(
            done,
            Restored {
                in_flight_held: 0,
                pending_held: 2,
                sign_in_dropped: 1,
                links_expired: 0,
                stale_dropped: 2,
            }
        );
        let shown = |s: &str| s.to_owned();
        assert_eq!(
            states(&mut conn),
            [
                (shown("a-signin"), shown(DROPPED), None),
                (shown("b-stale"), shown(DROPPED), None),
                (shown("c-stale-digest"), shown(DROPPED), None),
                (shown("d-old-escalation"), shown(HELD), None),
                (shown("e-notice"), shown(HELD), None),
            ]
        );
        assert_eq!(drop_all_held(&mut conn, "admin@example.com").unwrap(), 2);
        assert!(states(&mut conn).iter().all(|(_, s, _)| s == DROPPED));
        assert_eq!(release_held(&mut conn, "admin@example.com").unwrap(), 0);
    }
}
