//! Work from chat: the moves people make in Slack, Teams and Matrix
//! keep coe's rules, because each is the same service call the pages make, as the
//! person whose email the chat user's profile has, and only someone in the directory.
//! What this wing adds: a request taken once (`fresh`: a replayed signature, a retried
//! delivery), a move made once and said in the history as made from chat (`once`), a
//! chat channel linked to its COE (`link`, `linked`), and what "My work" lists, for a
//! chat message (`mine`).

pub mod matrix;
mod mine;
pub mod moves;

pub use mine::{mine, Mine};
pub use moves::{make, Made, Move, MoveError};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{chat_links, chat_requests, coes, people};
use crate::db::{self, DbConnection};
use crate::domain::EmailAddress;
use crate::services::access::Acting;
use crate::services::audit;

/// A chat platform people work from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    Slack,
    Teams,
    Matrix,
}

impl Platform {
    /// As stored (`audit_log.via`, `chat_links.platform`) and counted (`/metrics`).
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Slack => "slack",
            Platform::Teams => "teams",
            Platform::Matrix => "matrix",
        }
    }

    /// Its name, as the history says "from Slack".
    pub fn name(self) -> &'static str {
        match self {
            Platform::Slack => "Slack",
            Platform::Teams => "Teams",
            Platform::Matrix => "Matrix",
        }
    }

    /// The platform stored as `word`, if it is one.
    pub fn read(word: &str) -> Option<Platform> {
        match word {
            "slack" => Some(Platform::Slack),
            "teams" => Some(Platform::Teams),
            "matrix" => Some(Platform::Matrix),
            _ => None,
        }
    }
}

/// The person a chat user is, by the email address their profile has: only someone in
/// coe's directory who has not left; anyone else is nobody here.
pub fn person(conn: &mut DbConnection, email: &str) -> QueryResult<Option<Acting>> {
    let Ok(address) = EmailAddress::parse(email) else {
        return Ok(None);
    };
    let found: Option<(String, bool)> = people::table
        .find(address.as_str())
        .filter(people::active.eq(true))
        .select((people::email, people::is_admin))
        .first(conn)
        .optional()?;
    Ok(found.map(|(email, is_admin)| Acting::person(&email, is_admin)))
}

/// How long a request's key is kept: far longer than Slack's five-minute window and
/// its retries.
const KEPT_HOURS: i64 = 24;

/// Takes request `key` of `platform` now: false when it was taken before (a replay, a
/// retried delivery). Keys older than a day are dropped.
pub fn fresh(
    conn: &mut DbConnection,
    platform: Platform,
    key: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    diesel::delete(
        chat_requests::table
            .filter(chat_requests::received_at.lt(now - Duration::hours(KEPT_HOURS))),
    )
    .execute(conn)?;
    let taken = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(chat_requests::table).values((
            chat_requests::key.eq(key),
            chat_requests::platform.eq(platform.as_str()),
            chat_requests::received_at.eq(now),
        )),
        chat_requests::key
    )?;
    Ok(taken == 1)
}

/// Runs `change` (a service's move, as the person) once for `key`, in one
/// transaction: `None` when the key was taken before (nothing done again); the history
/// records the move writes say they came from `platform` (`audit::from_chat`). A
/// refused move takes no key, so that the person may try again.
pub fn once<T, E: From<diesel::result::Error>>(
    conn: &mut DbConnection,
    platform: Platform,
    key: &str,
    change: impl FnOnce(&mut DbConnection) -> Result<T, E>,
) -> Result<Option<T>, E> {
    db::write_transaction(conn, |conn| {
        if !fresh(conn, platform, key, db::now())? {
            return Ok(None);
        }
        audit::from_chat(platform.as_str(), || change(conn)).map(Some)
    })
}

/// Links chat channel `channel` to COE `coe_id` (a failure reported there, or the
/// channel named for it): follow-ups added there go to that COE. A channel is linked to
/// one COE, the latest.
pub fn link(
    conn: &mut DbConnection,
    platform: Platform,
    channel: &str,
    coe_id: &str,
    by: &str,
) -> QueryResult<()> {
    let now = db::now();
    diesel::delete(
        chat_links::table
            .filter(chat_links::platform.eq(platform.as_str()))
            .filter(chat_links::channel_id.eq(channel)),
    )
    .execute(conn)?;
    diesel::insert_into(chat_links::table)
        .values((
            chat_links::platform.eq(platform.as_str()),
            chat_links::channel_id.eq(channel),
            chat_links::coe_id.eq(coe_id),
            chat_links::linked_by.eq(by),
            chat_links::linked_at.eq(now),
        ))
        .execute(conn)
        .map(|_| ())
}

/// The COE chat channel `channel` is linked to: its id and title.
pub fn linked(
    conn: &mut DbConnection,
    platform: Platform,
    channel: &str,
) -> QueryResult<Option<(String, String)>> {
    chat_links::table
        .inner_join(coes::table)
        .filter(chat_links::platform.eq(platform.as_str()))
        .filter(chat_links::channel_id.eq(channel))
        .select((coes::id, coes::title))
        .first(conn)
        .optional()
}

/// The COE id in `address` (its address in coe, or the id alone), as people paste it
/// in chat (Slack wraps it in `<…>`).
pub fn coe_id_of(address: &str) -> String {
    address
        .trim()
        .trim_matches(['<', '>'])
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim_matches(['<', '>'])
        .to_owned()
}

/// Links chat channel `channel` to COE `coe_id` when `who` may change that COE; gives
/// its title, or why not in words.
pub fn name_channel(
    conn: &mut DbConnection,
    platform: Platform,
    channel: &str,
    coe_id: &str,
    who: &crate::services::access::Editor<'_>,
) -> QueryResult<Result<String, String>> {
    let title: Option<String> = coes::table
        .find(coe_id)
        .select(coes::title)
        .first(conn)
        .optional()?;
    let Some(title) = title else {
        return Ok(Err(
            "No COE has that address: give its address in coe, such as https://coe.example.com/coes/….".to_owned(),
        ));
    };
    // Its owner, its reviewer or an admin: a linked channel is what "Import from chat"
    // reads into the COE by default.
    match crate::services::access::read_chat(conn, coe_id, who, false) {
        Ok(()) => {}
        Err(crate::services::access::AccessError::Database(e)) => return Err(e),
        Err(e) => return Ok(Err(format!("You may not link it: {e}."))),
    }
    db::write_transaction(conn, |conn| {
        link(conn, platform, channel, coe_id, who.actor)
    })?;
    Ok(Ok(title))
}
