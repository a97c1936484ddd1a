//! A person's notification settings: reading and saving their choice
//! (`domain::notifications`), the unsubscribe links in reminders and digests, and the
//! one-click unsubscribe (RFC 8058) those links take.

use std::collections::HashMap;

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{notification_settings, unsubscribe_links};
use crate::db::{self, DbConnection};
use crate::domain::notifications::{Choice, Mode, Reach, LINK_DAYS};
use crate::domain::TokenSecret;

/// `email`'s choice; the default (every email) when they have made none.
pub fn choice(conn: &mut DbConnection, email: &str) -> QueryResult<Choice> {
    let row: Option<(String, Option<NaiveDateTime>, String)> = notification_settings::table
        .find(email)
        .select((
            notification_settings::mode,
            notification_settings::paused_until,
            notification_settings::reach,
        ))
        .first(conn)
        .optional()?;
    Ok(
        row.map_or_else(Choice::default, |(mode, paused_until, reach)| Choice {
            mode: Mode::parse(&mode).unwrap_or_default(),
            paused_until,
            reach: Reach::parse(&reach).unwrap_or_default(),
        }),
    )
}

/// Every choice made (people who made none get every email), for a sweep.
pub fn choices(conn: &mut DbConnection) -> QueryResult<HashMap<String, Choice>> {
    let rows: Vec<(String, String, Option<NaiveDateTime>, String)> = notification_settings::table
        .select((
            notification_settings::email,
            notification_settings::mode,
            notification_settings::paused_until,
            notification_settings::reach,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(email, mode, paused_until, reach)| {
            let mode = Mode::parse(&mode).unwrap_or_default();
            let reach = Reach::parse(&reach).unwrap_or_default();
            (
                email,
                Choice {
                    mode,
                    paused_until,
                    reach,
                },
            )
        })
        .collect())
}

/// Saves `email`'s choice. Call it inside a write transaction.
pub fn save(
    conn: &mut DbConnection,
    email: &str,
    choice: Choice,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let updated = diesel::update(notification_settings::table.find(email))
        .set((
            notification_settings::mode.eq(choice.mode.name()),
            notification_settings::paused_until.eq(choice.paused_until),
            notification_settings::reach.eq(choice.reach.name()),
            notification_settings::updated_at.eq(now),
        ))
        .execute(conn)?;
    if updated == 0 {
        diesel::insert_into(notification_settings::table)
            .values((
                notification_settings::email.eq(email),
                notification_settings::mode.eq(choice.mode.name()),
                notification_settings::paused_until.eq(choice.paused_until),
                notification_settings::reach.eq(choice.reach.name()),
                notification_settings::updated_at.eq(now),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// A new unsubscribe link's token for `email` (kept hashed). Call it inside the
/// transaction that queues the email carrying it.
pub fn new_link(conn: &mut DbConnection, email: &str, now: NaiveDateTime) -> QueryResult<String> {
    let secret = TokenSecret::generate();
    diesel::insert_into(unsubscribe_links::table)
        .values((
            unsubscribe_links::token_hash.eq(secret.hash()),
            unsubscribe_links::email.eq(email),
            unsubscribe_links::created_at.eq(now),
        ))
        .execute(conn)?;
    Ok(secret.expose().to_owned())
}

/// The address an unsubscribe link's `token` was made for, while it is valid.
pub fn link_owner(conn: &mut DbConnection, token: &str) -> QueryResult<Option<String>> {
    let hash = TokenSecret::from_presented(token).hash();
    unsubscribe_links::table
        .find(hash)
        .filter(unsubscribe_links::created_at.gt(db::now() - Duration::days(LINK_DAYS)))
        .select(unsubscribe_links::email)
        .first(conn)
        .optional()
}

/// The one-click unsubscribe: the link's owner gets only what needs them from now on
/// (a pause they had stays). Returns the address, or `None` for an unknown link.
pub fn unsubscribe(conn: &mut DbConnection, token: &str) -> QueryResult<Option<String>> {
    db::write_transaction(conn, |conn| {
        let Some(email) = link_owner(conn, token)? else {
            return Ok(None);
        };
        let mut choice = choice(conn, &email)?;
        choice.mode = Mode::Essential;
        save(conn, &email, choice, db::now())?;
        tracing::info!(email = %email, "unsubscribed from reminders and digests by the one-click link");
        Ok(Some(email))
    })
}

/// Drops the links older than they work. Returns how many.
pub fn prune_links(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::delete(
            unsubscribe_links::table
                .filter(unsubscribe_links::created_at.le(now - Duration::days(LINK_DAYS))),
        )
        .execute(conn)
    })
}
