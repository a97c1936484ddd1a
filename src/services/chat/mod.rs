//! Notices in team chat, delivered like email: `notify` decides, in the transaction
//! of the event, which channels hear it (`ChannelSettings::wants`) and queues one
//! row per channel in `chat_messages` (its body rendered for the platform; its
//! `dedup_key` makes it once, whichever replica decides it again); `deliver` sends
//! due rows under a lease, with no transaction open, and records each outcome. A
//! channel that answers 404/410 (or Matrix 401/403) is marked broken in
//! `chat_channels` and hears nothing more until an admin's test message gets through.
//! Chat never holds up email: it has its own delivery thread.
//!
//! What each event says, and to which channels, is `notices`.

pub mod import;
mod notices;

pub use notices::{
    coe_notice, escalations, inspection_due, inspection_weekly, overdue_daily, Escalated,
    WeeklyFigures,
};

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;

use crate::chat::{self, Notice, Sent};
use crate::config::{ChannelSettings, ChatEvent, Settings};
use crate::db::schema::{chat_channels, chat_messages};
use crate::db::{self, DbConnection};

pub const PENDING: &str = "pending";
pub const SENDING: &str = "sending";
pub const SENT: &str = "sent";
pub const FAILED: &str = "failed";

/// After this many attempts a message is failed (at the back-off's cap, about a day).
const MAX_ATTEMPTS: i32 = 12;

/// Whom a notice is about: the team and service that route it to channels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Route<'a> {
    pub team: Option<&'a str>,
    pub service: Option<&'a str>,
}

/// Queues `notice` for every channel that hears `event` about `route`, once per
/// channel and `key`. Returns how many were queued now.
pub fn notify(
    conn: &mut DbConnection,
    settings: &Settings,
    event: ChatEvent,
    route: Route<'_>,
    key: &str,
    notice: &Notice,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let mut queued = 0;
    for channel in settings
        .chat
        .channels
        .iter()
        .filter(|c| c.wants(event, route.team, route.service))
    {
        queued += enqueue(conn, channel, event, key, notice, now)?;
    }
    Ok(queued)
}

/// Queues `notice` for one channel (once per `key`).
pub fn enqueue(
    conn: &mut DbConnection,
    channel: &ChannelSettings,
    event: ChatEvent,
    key: &str,
    notice: &Notice,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    enqueue_body(
        conn,
        channel,
        event,
        key,
        &chat::render(channel.kind, notice),
        now,
    )
}

/// Queues `body`, as the platform takes it, for one channel (once per `key`).
pub fn enqueue_body(
    conn: &mut DbConnection,
    channel: &ChannelSettings,
    event: ChatEvent,
    key: &str,
    body: &serde_json::Value,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let body = body.to_string();
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(chat_messages::table).values((
            chat_messages::id.eq(db::new_id()),
            chat_messages::channel.eq(&channel.name),
            chat_messages::event.eq(event.as_str()),
            chat_messages::dedup_key.eq(format!("{}:{key}", channel.name)),
            chat_messages::body.eq(body),
            chat_messages::state.eq(PENDING),
            chat_messages::attempts.eq(0),
            chat_messages::next_attempt_at.eq(now),
            chat_messages::created_at.eq(now),
            chat_messages::updated_at.eq(now),
        )),
        chat_messages::dedup_key
    )
}

/// Fails, without sending, every message of `key` (on any channel) not sent yet:
/// what was queued for something taken back. Returns how many.
pub fn cancel(
    conn: &mut DbConnection,
    key: &str,
    why: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    diesel::update(
        chat_messages::table
            .filter(
                chat_messages::dedup_key
                    .like(format!("%:{}", key.replace('%', "\\%").replace('_', "\\_")))
                    .escape('\\'),
            )
            .filter(chat_messages::state.ne(SENT)),
    )
    .set((
        chat_messages::state.eq(FAILED),
        chat_messages::last_error.eq(why),
        chat_messages::lease_until.eq(None::<NaiveDateTime>),
        chat_messages::updated_at.eq(now),
    ))
    .execute(conn)
}

/// What one delivery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChatReport {
    pub sent: usize,
    pub deferred: usize,
    pub failed: usize,
}

type Claimed = (String, String, String, i32);

/// Claims due messages (pending and due, or sending with an expired lease) of
/// channels that are not broken. Each claim counts as an attempt.
/// What a claim reads of a message: id, channel, body, attempts.
const CLAIMED: (
    chat_messages::id,
    chat_messages::channel,
    chat_messages::body,
    chat_messages::attempts,
) = (
    chat_messages::id,
    chat_messages::channel,
    chat_messages::body,
    chat_messages::attempts,
);

fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    lease: Duration,
    limit: i64,
    usable: &[String],
    claimant: &str,
) -> QueryResult<Vec<Claimed>> {
    db::write_transaction(conn, |conn| {
        // Two queries on the index `(state, next_attempt_at)` (see `outbox::claim`):
        // the messages whose claim ran out first, then the pending ones due.
        let mut rows: Vec<Claimed> = crate::load_skip_locked!(
            conn,
            chat_messages::table
                .filter(chat_messages::state.eq(SENDING))
                .filter(chat_messages::lease_until.lt(now))
                .filter(chat_messages::channel.eq_any(usable))
                .order((
                    chat_messages::next_attempt_at.asc(),
                    chat_messages::id.asc(),
                ))
                .limit(limit)
                .select(CLAIMED)
        )?;
        let more = limit - i64::try_from(rows.len()).unwrap_or(limit);
        if more > 0 {
            let due: Vec<Claimed> = crate::load_skip_locked!(
                conn,
                chat_messages::table
                    .filter(chat_messages::state.eq(PENDING))
                    .filter(chat_messages::next_attempt_at.le(now))
                    .filter(chat_messages::channel.eq_any(usable))
                    .order((
                        chat_messages::next_attempt_at.asc(),
                        chat_messages::id.asc(),
                    ))
                    .limit(more)
                    .select(CLAIMED)
            )?;
            rows.extend(due);
        }
        let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        diesel::update(chat_messages::table.filter(chat_messages::id.eq_any(&ids)))
            .set((
                chat_messages::state.eq(SENDING),
                chat_messages::lease_until.eq(now + lease),
                chat_messages::claimed_by.eq(claimant),
                chat_messages::attempts.eq(chat_messages::attempts + 1),
                chat_messages::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(rows
            .into_iter()
            .map(|(id, channel, body, attempts)| (id, channel, body, attempts + 1))
            .collect())
    })
}

/// How long a platform may take to answer (`chat.timeout_secs`).
fn timeout(settings: &Settings) -> std::time::Duration {
    std::time::Duration::from_secs(settings.chat.timeout_secs)
}

/// The channels marked broken.
fn broken(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    chat_channels::table
        .filter(chat_channels::broken_at.is_not_null())
        .select(chat_channels::name)
        .load(conn)
}

/// One delivery pass over the chat messages, on a connection the caller holds for the
/// pass (`coe sweep`'s, from a pool of its own; tests): the delivery job uses
/// `deliver_pooled`.
pub fn deliver(
    conn: &mut DbConnection,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> QueryResult<ChatReport> {
    pass(conn, settings, claimant, stop)
}

/// One delivery pass taking a connection from `pool` for each step (the claim, the
/// record) and giving it back between them: none is held while a chat platform
/// answers.
pub fn deliver_pooled(
    pool: &crate::db::DbPool,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<ChatReport, crate::services::outbox::DeliveryError> {
    pass(
        crate::services::outbox::Pooled(pool),
        settings,
        claimant,
        stop,
    )
}

fn pass<C: crate::services::outbox::Connections>(
    mut conns: C,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<ChatReport, C::Error> {
    let mut report = ChatReport::default();
    if settings.chat.channels.is_empty() {
        return Ok(report);
    }
    let broken = conns.with(broken)?;
    let mut usable: Vec<String> = settings
        .chat
        .channels
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| !broken.contains(n))
        .collect();
    let lease = Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600));
    // One message claimed at a time: a worker that dies holds only the one it was
    // sending (given back when its replica starts again: `reclaim`).
    while !stop.load(Ordering::Relaxed) {
        let Some((id, name, body, attempts)) = conns
            .with(|conn| claim(conn, db::now(), lease, 1, &usable, claimant))?
            .pop()
        else {
            break;
        };
        let Some(channel) = settings.chat.channels.iter().find(|c| c.name == name) else {
            continue;
        };
        let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let outcome = chat::send(channel, &id, &body, timeout(settings));
        conns.with(|conn| record(conn, settings, &id, &name, attempts, &outcome, &mut report))?;
        if matches!(outcome, Sent::Broken(_)) {
            // Its other messages wait for the channel to be mended.
            usable.retain(|n| *n != name);
        }
    }
    Ok(report)
}

/// Gives back the chat messages `claimant`'s earlier process was sending when it
/// stopped (see `outbox::reclaim`). Returns how many.
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::update(
            chat_messages::table
                .filter(chat_messages::state.eq(SENDING))
                .filter(chat_messages::claimed_by.eq(claimant)),
        )
        .set((
            chat_messages::state.eq(PENDING),
            chat_messages::lease_until.eq(None::<NaiveDateTime>),
            chat_messages::claimed_by.eq(None::<String>),
            chat_messages::next_attempt_at.eq(now),
            chat_messages::attempts.eq(chat_messages::attempts - 1),
            chat_messages::updated_at.eq(now),
        ))
        .execute(conn)
    })
}

fn record(
    conn: &mut DbConnection,
    settings: &Settings,
    id: &str,
    channel: &str,
    attempts: i32,
    outcome: &Sent,
    report: &mut ChatReport,
) -> QueryResult<()> {
    let now = db::now();
    let mine = chat_messages::table
        .find(id)
        .filter(chat_messages::state.eq(SENDING));
    match outcome {
        Sent::Delivered => {
            diesel::update(mine)
                .set((
                    chat_messages::state.eq(SENT),
                    chat_messages::sent_at.eq(now),
                    chat_messages::lease_until.eq(None::<NaiveDateTime>),
                    chat_messages::updated_at.eq(now),
                ))
                .execute(conn)?;
            channel_state(conn, channel, None, false, now)?;
            report.sent += 1;
        }
        Sent::Retry { after_secs, error } if attempts < MAX_ATTEMPTS => {
            let wait = after_secs
                .map(|s| Duration::seconds(i64::try_from(s.min(86_400)).unwrap_or(60)))
                .unwrap_or_else(|| super::outbox::backoff(settings, attempts));
            diesel::update(mine)
                .set((
                    chat_messages::state.eq(PENDING),
                    chat_messages::next_attempt_at.eq(now + wait),
                    chat_messages::lease_until.eq(None::<NaiveDateTime>),
                    chat_messages::last_error.eq(error),
                    chat_messages::updated_at.eq(now),
                ))
                .execute(conn)?;
            channel_state(conn, channel, Some(error), false, now)?;
            tracing::warn!(channel, error = %error, retry_in_secs = wait.num_seconds(), "a chat message will be sent again");
            report.deferred += 1;
        }
        Sent::Broken(error) => {
            // Back in the queue: sent when the channel is mended.
            diesel::update(mine)
                .set((
                    chat_messages::state.eq(PENDING),
                    chat_messages::attempts.eq(chat_messages::attempts - 1),
                    chat_messages::lease_until.eq(None::<NaiveDateTime>),
                    chat_messages::last_error.eq(error),
                    chat_messages::updated_at.eq(now),
                ))
                .execute(conn)?;
            channel_state(conn, channel, Some(error), true, now)?;
            tracing::error!(channel, error = %error, "a chat channel is broken: nothing more is sent to it until a test message from the admin page gets through");
            report.deferred += 1;
        }
        Sent::Retry { error, .. } | Sent::Refused(error) => {
            diesel::update(mine)
                .set((
                    chat_messages::state.eq(FAILED),
                    chat_messages::lease_until.eq(None::<NaiveDateTime>),
                    chat_messages::last_error.eq(error),
                    chat_messages::updated_at.eq(now),
                ))
                .execute(conn)?;
            channel_state(conn, channel, Some(error), false, now)?;
            tracing::error!(channel, error = %error, "a chat message failed for good");
            report.failed += 1;
        }
    }
    Ok(())
}

/// Records how a channel answered: delivered (clears its error and its broken mark),
/// or an error (and whether it broke).
fn channel_state(
    conn: &mut DbConnection,
    channel: &str,
    error: Option<&str>,
    broke: bool,
    now: NaiveDateTime,
) -> QueryResult<()> {
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(chat_channels::table).values(chat_channels::name.eq(channel)),
        chat_channels::name
    )?;
    let row = chat_channels::table.find(channel);
    match error {
        None => diesel::update(row)
            .set((
                chat_channels::last_delivered_at.eq(now),
                chat_channels::broken_at.eq(None::<NaiveDateTime>),
            ))
            .execute(conn)?,
        Some(error) => diesel::update(row)
            .set((
                chat_channels::last_error.eq(error),
                chat_channels::last_error_at.eq(now),
            ))
            .execute(conn)?,
    };
    if broke {
        diesel::update(row.filter(chat_channels::broken_at.is_null()))
            .set(chat_channels::broken_at.eq(now))
            .execute(conn)?;
    }
    Ok(())
}

/// A channel as the admin page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelStatus {
    pub name: String,
    pub kind: &'static str,
    pub events: Vec<&'static str>,
    pub teams: Vec<String>,
    pub services: Vec<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_delivered_at: Option<NaiveDateTime>,
    pub last_error: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_error_at: Option<NaiveDateTime>,
    pub broken: bool,
    /// Messages waiting to be sent.
    pub waiting: i64,
}

type ChannelRow = (
    String,
    Option<NaiveDateTime>,
    Option<String>,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
);

/// Every configured channel with its last delivery, its last error and what waits.
pub fn statuses(conn: &mut DbConnection, settings: &Settings) -> QueryResult<Vec<ChannelStatus>> {
    let rows: Vec<ChannelRow> = chat_channels::table
        .select((
            chat_channels::name,
            chat_channels::last_delivered_at,
            chat_channels::last_error,
            chat_channels::last_error_at,
            chat_channels::broken_at,
        ))
        .load(conn)?;
    let mut out = Vec::new();
    for c in &settings.chat.channels {
        let row = rows.iter().find(|r| r.0 == c.name);
        let waiting: i64 = chat_messages::table
            .filter(chat_messages::channel.eq(&c.name))
            .filter(chat_messages::state.eq_any([PENDING, SENDING]))
            .count()
            .get_result(conn)?;
        out.push(ChannelStatus {
            name: c.name.clone(),
            kind: c.kind.as_str(),
            events: c.events.iter().map(|e| e.as_str()).collect(),
            teams: c.teams.clone(),
            services: c.services.clone(),
            last_delivered_at: row.and_then(|r| r.1),
            last_error: row.and_then(|r| r.2.clone()),
            last_error_at: row.and_then(|r| r.3),
            broken: row.is_some_and(|r| r.4.is_some()),
            waiting,
        });
    }
    Ok(out)
}

/// Sends a test message to `channel` now (not through the queue): the admin's check
/// of a channel, which mends a broken one when it gets through.
pub fn test_message(
    conn: &mut DbConnection,
    settings: &Settings,
    channel: &ChannelSettings,
    by: &str,
) -> QueryResult<Sent> {
    let public_url = &settings.public_url;
    let notice = Notice {
        headline: "coe can post here".into(),
        facts: vec![
            ("Channel".into(), channel.name.clone()),
            ("Sent by".into(), by.into()),
        ],
        items: Vec::new(),
        total_items: 0,
        link_label: "Open coe".into(),
        link_url: format!("{}/", public_url.trim_end_matches('/')),
    };
    let outcome = chat::send(
        channel,
        &db::new_id(),
        &chat::render(channel.kind, &notice),
        timeout(settings),
    );
    let now = db::now();
    match &outcome {
        Sent::Delivered => channel_state(conn, &channel.name, None, false, now)?,
        Sent::Broken(e) => channel_state(conn, &channel.name, Some(e), true, now)?,
        Sent::Retry { error, .. } | Sent::Refused(error) => {
            channel_state(conn, &channel.name, Some(error), false, now)?
        }
    }
    Ok(outcome)
}
