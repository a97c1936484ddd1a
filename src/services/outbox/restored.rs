//! After a restore: the emails that were being sent when the backup was taken may
//! have gone out since, so none is sent again by itself. They are `held` for an admin
//! to send again (`retry`) or drop (`drop_held`), listed on the outbox page.
//! `coe restore` holds them on SQLite; on PostgreSQL the first replica to start on a
//! restored database does (`db::marks`).

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{OutboxEmail, RetryError, DROPPED, HELD, SENDING};
use crate::db::models::OutboxRow;
use crate::db::schema::outbox_emails;
use crate::db::{self, DbConnection};

pub use crate::db::backup::HELD_BECAUSE;

/// Holds every email being sent. Returns how many. Call it inside a write transaction.
pub fn hold_in_flight(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<usize> {
    diesel::update(outbox_emails::table.filter(outbox_emails::state.eq(SENDING)))
        .set((
            outbox_emails::state.eq(HELD),
            outbox_emails::lease_until.eq(None::<NaiveDateTime>),
            outbox_emails::claimed_by.eq(None::<String>),
            outbox_emails::last_error.eq(HELD_BECAUSE),
            outbox_emails::updated_at.eq(now),
        ))
        .execute(conn)
}

/// On a database restored since a coe last started on it (PostgreSQL: `db::marks`),
/// holds the emails that were being sent. Returns how many (0 when not restored).
pub fn hold_if_restored(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        if db::marks::outbox_table_replaced(conn)? {
            hold_in_flight(conn, now)
        } else {
            Ok(0)
        }
    })
}

/// Drops a held email: it is not sent, and its secrets (a private link, an
/// unsubscribe token) are forgotten. Only a held one.
pub fn drop_held(conn: &mut DbConnection, id: &str) -> Result<OutboxEmail, RetryError> {
    db::write_transaction(conn, |conn| {
        let row: OutboxRow = outbox_emails::table
            .find(id)
            .select(OutboxRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| RetryError::NotFound(id.to_owned()))?;
        if row.state != HELD {
            return Err(RetryError::NotHeld(row.state));
        }
        let now = db::now();
        diesel::update(outbox_emails::table.find(id))
            .set((
                outbox_emails::state.eq(DROPPED),
                outbox_emails::private_link.eq(None::<String>),
                outbox_emails::unsubscribe_token.eq(None::<String>),
                outbox_emails::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(OutboxEmail {
            state: DROPPED.into(),
            ..row.into()
        })
    })
}
