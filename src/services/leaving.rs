//! A person leaving the organisation (the identity provider deactivates or deletes
//! them): they can no longer sign in or call the API, and they are marked as gone
//! with the day they left. Coming back (reactivated) undoes the mark.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::{api_tokens, people};
use crate::db::DbConnection;

/// Marks `email` as having left at `now` (if they had not), ends their sessions and
/// revokes their tokens. Returns whether they were still active.
pub fn leave(
    conn: &mut DbConnection,
    email: &str,
    now: NaiveDateTime,
    by: &str,
) -> QueryResult<bool> {
    let marked = diesel::update(
        people::table
            .filter(people::email.eq(email))
            .filter(people::active.eq(true)),
    )
    .set((
        people::active.eq(false),
        people::left_at.eq(Some(now)),
        people::updated_at.eq(now),
    ))
    .execute(conn)?;
    crate::services::auth::end_all(conn, email, by)?;
    diesel::update(
        api_tokens::table
            .filter(api_tokens::person_email.eq(email))
            .filter(api_tokens::revoked_at.is_null()),
    )
    .set(api_tokens::revoked_at.eq(Some(now)))
    .execute(conn)?;
    if marked > 0 {
        tracing::info!(
            person = email,
            by,
            "a person left: their sessions and tokens ended"
        );
    }
    Ok(marked > 0)
}

/// Marks `email` as working here again (reactivated by the provider).
pub fn rejoin(conn: &mut DbConnection, email: &str, now: NaiveDateTime) -> QueryResult<bool> {
    let n = diesel::update(
        people::table
            .filter(people::email.eq(email))
            .filter(people::active.eq(false)),
    )
    .set((
        people::active.eq(true),
        people::left_at.eq(None::<NaiveDateTime>),
        people::updated_at.eq(now),
    ))
    .execute(conn)?;
    Ok(n > 0)
}
