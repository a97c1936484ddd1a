//! What an operator pages on, read at a scrape of `/metrics`: how long the oldest
//! email and chat message has waited, when an email last went out, how big the
//! database is and how much room its disk has left.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::config::database::DatabaseUrl;
use crate::db::schema::{chat_messages, outbox_emails};
use crate::db::{self, DbConnection};
use crate::services::outbound::outbox::{PENDING, SENDING, SENT};
use crate::services::Env;

/// The figures; a time is `None` when there is nothing of the kind.
#[derive(Debug, Clone, Default)]
pub struct OperatorFigures {
    /// When the oldest email waiting to go (pending or being sent) was queued.
    pub email_oldest_waiting: Option<NaiveDateTime>,
    /// The same for chat messages.
    pub chat_oldest_waiting: Option<NaiveDateTime>,
    /// When the last email was sent.
    pub email_last_sent: Option<NaiveDateTime>,
    pub database_bytes: i64,
    /// SQLite only: the room left on the database's file system.
    pub disk_free_bytes: Option<u64>,
}

/// Reads the figures (four indexed queries).
pub fn figures(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<OperatorFigures> {
    let settings = env.settings;
    let email_oldest_waiting = outbox_emails::table
        .filter(outbox_emails::state.eq_any([PENDING, SENDING]))
        .select(diesel::dsl::min(outbox_emails::created_at))
        .first(conn)?;
    let chat_oldest_waiting = chat_messages::table
        .filter(chat_messages::state.eq_any([PENDING, SENDING]))
        .select(diesel::dsl::min(chat_messages::created_at))
        .first(conn)?;
    let email_last_sent = outbox_emails::table
        .filter(outbox_emails::state.eq(SENT))
        .select(diesel::dsl::max(outbox_emails::sent_at))
        .first(conn)?;
    let database_bytes = db::size::database_bytes(conn)?;
    let disk_free_bytes = match settings.database_url() {
        DatabaseUrl::Sqlite(path) => db::size::disk_free_bytes(&path),
        DatabaseUrl::Postgres(_) => None,
    };
    Ok(OperatorFigures {
        email_oldest_waiting,
        chat_oldest_waiting,
        email_last_sent,
        database_bytes,
        disk_free_bytes,
    })
}
