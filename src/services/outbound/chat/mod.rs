//! Notices in team chat, delivered like email: `notify` decides, in the transaction
//! of the event, which channels hear it (`ChannelSettings::wants`) and queues one
//! row per channel in `chat_messages` (its body rendered for the platform; its
//! `dedup_key` makes it once, whichever replica decides it again); `deliver` sends
//! them as a channel of the one delivery queue (`outbound::queue`: claimed under a
//! lease, sent with no transaction open, each outcome recorded). A
//! channel that answers 404/410 (or Matrix 401/403) is marked broken in
//! `chat_channels` and hears nothing more until an admin's test message gets through.
//! Chat never holds up email: it has its own delivery thread.
//!
//! What each event says, and to which channels, is `notices`.

pub mod import;
pub mod linked;
mod notices;
pub mod publications;

pub use notices::{
    coe_notice, escalations, inspection_due, inspection_weekly, overdue_daily, Escalated,
    WeeklyFigures,
};

use std::sync::atomic::AtomicBool;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use crate::chat::{self, Notice, Sent};
use crate::config::{ChannelSettings, ChatEvent};
use crate::db::schema::{chat_channels, chat_messages};
use crate::db::{self, DbConnection};

use crate::services::connections::Tried;
use crate::services::outbound::outbox::direct;
use crate::services::outbound::queue::{
    self, due, Claim, DeliveryError, Flow, Pooled, Queue, Report, Settled,
};
pub use crate::services::outbound::queue::{FAILED, PENDING, SENDING, SENT};
use crate::services::Env;

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
    env: Env<'_>,
    event: ChatEvent,
    route: Route<'_>,
    key: &str,
    notice: &Notice,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let mut queued = 0;
    for channel in env
        .connections
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
    queue_row(
        conn,
        &channel.name,
        event,
        &format!("{}:{key}", channel.name),
        &body.to_string(),
        now,
    )
}

/// Queues a row of `chat_messages` on `channel` (a channel's name, or a queue of its
/// own: `linked`), once per `dedup_key`.
fn queue_row(
    conn: &mut DbConnection,
    channel: &str,
    event: ChatEvent,
    dedup_key: &str,
    body: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(chat_messages::table).values((
            chat_messages::id.eq(db::new_id()),
            chat_messages::channel.eq(channel),
            chat_messages::event.eq(event.as_str()),
            chat_messages::dedup_key.eq(dedup_key),
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

/// Fails, without sending, every message of `key` (on any channel, and of the keys
/// under it, `key:…`) not sent yet: what was queued for something taken back or
/// replaced. Returns how many.
pub fn cancel(
    conn: &mut DbConnection,
    key: &str,
    why: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let key = like_escaped(key);
    diesel::update(
        chat_messages::table
            .filter(
                chat_messages::dedup_key
                    .like(format!("%:{key}"))
                    .escape('\\')
                    .or(chat_messages::dedup_key
                        .like(format!("%:{key}:%"))
                        .escape('\\')),
            )
            // One being sent right now is not retried; the channels it may have
            // reached are read before (`publications::withdrawn`, `updated`) and
            // told what follows.
            .filter(chat_messages::state.ne(SENT)),
    )
    .set((
        chat_messages::state.eq(FAILED),
        chat_messages::last_error.eq(why),
        queue::released!(chat_messages),
        chat_messages::updated_at.eq(now),
    ))
    .execute(conn)
}

/// `text` for a `LIKE` pattern escaped with `\\`.
fn like_escaped(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// What one delivery pass did (`queue::Report`).
pub type ChatReport = Report;

/// A claimed message: its claim, channel and body.
struct Message {
    claim: Claim,
    channel: String,
    body: String,
}

/// How long a platform may take to answer (`chat.timeout_secs`).
fn timeout(env: Env<'_>) -> std::time::Duration {
    let settings = env.settings;
    std::time::Duration::from_secs(settings.chat.timeout_secs)
}

/// The channels marked broken.
fn broken(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    chat_channels::table
        .filter(chat_channels::broken_at.is_not_null())
        .select(chat_channels::name)
        .load(conn)
}

/// One delivery pass over the chat messages (`queue::pass`), on a connection the
/// caller holds for the pass (`coe sweep`'s, from a pool of its own; tests): the
/// delivery job uses `deliver_pooled`.
pub fn deliver(
    conn: &mut DbConnection,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> QueryResult<ChatReport> {
    queue::pass(conn, &mut Chat::new(env), env, claimant, stop)
}

/// One delivery pass taking a connection from `pool` for each step (the claim, the
/// record) and giving it back between them: none is held while a chat platform
/// answers.
pub fn deliver_pooled(
    pool: &crate::db::DbPool,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<ChatReport, DeliveryError> {
    queue::pass(Pooled(pool), &mut Chat::new(env), env, claimant, stop)
}

/// Gives back the chat messages `claimant`'s earlier process was sending when it
/// stopped (`Queue::reclaim`). Returns how many.
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    Queue::Chat.reclaim(conn, claimant, now)
}

/// Chat as a channel of the queue: messages of the channels that are set up and not
/// broken; a channel that breaks during the pass is left for the rest of it.
struct Chat<'a> {
    env: Env<'a>,
    usable: Vec<String>,
}

impl<'a> Chat<'a> {
    fn new(env: Env<'a>) -> Chat<'a> {
        Chat {
            env,
            usable: Vec::new(),
        }
    }
}

impl queue::Channel for Chat<'_> {
    type Job = Message;
    type Sent = Sent;

    fn begin(&mut self, conn: &mut DbConnection) -> QueryResult<bool> {
        if direct::app(self.env).is_none() {
            direct::without_app(conn, db::now())?;
        }
        if self.env.connections.channels.is_empty() {
            return Ok(false);
        }
        let broken = broken(conn)?;
        self.usable = self
            .env
            .connections
            .channels
            .iter()
            .map(|c| c.name.clone())
            .filter(|n| !broken.contains(n))
            .collect();
        // Direct messages go while a Slack app is set up.
        if direct::app(self.env).is_some() {
            self.usable.push(direct::CHANNEL.to_owned());
        }
        // A COE's own channels, while a bot may write there.
        self.usable.extend(linked::usable(self.env));
        Ok(true)
    }

    fn claim(
        &mut self,
        conn: &mut DbConnection,
        now: NaiveDateTime,
        until: NaiveDateTime,
        claimant: &str,
    ) -> QueryResult<Option<Message>> {
        let usable = &self.usable;
        db::write_transaction(conn, |conn| {
            let rows: Vec<(String, String, String, i32)> = due!(
                conn,
                chat_messages,
                now,
                1,
                (
                    chat_messages::id,
                    chat_messages::channel,
                    chat_messages::body,
                    chat_messages::attempts,
                ),
                chat_messages::channel.eq_any(usable)
            )?;
            let Some((id, channel, body, attempts)) = rows.into_iter().next() else {
                return Ok(None);
            };
            Queue::Chat.take(conn, &[&id], now, until, claimant)?;
            Ok(Some(Message {
                claim: Claim {
                    id,
                    until,
                    attempts: attempts + 1,
                },
                channel,
                body,
            }))
        })
    }

    fn send(&mut self, message: &mut Message) -> Sent {
        if message.channel == direct::CHANNEL {
            let body: serde_json::Value = serde_json::from_str(&message.body).unwrap_or_default();
            return direct::send(self.env, &body, timeout(self.env));
        }
        if linked::is(&message.channel) {
            let body: serde_json::Value = serde_json::from_str(&message.body).unwrap_or_default();
            return linked::send(
                self.env,
                &message.claim.id,
                &message.channel,
                &body,
                timeout(self.env),
            );
        }
        let Some(channel) = self
            .env
            .connections
            .channels
            .iter()
            .find(|c| c.name == message.channel)
        else {
            return Sent::Refused(format!(
                "no chat channel is named {} any more (removed from the settings file or Admin → Chat)",
                message.channel
            ));
        };
        let body: serde_json::Value = serde_json::from_str(&message.body).unwrap_or_default();
        chat::send(channel, &message.claim.id, &body, timeout(self.env))
    }

    fn record(
        &mut self,
        conn: &mut DbConnection,
        message: &Message,
        outcome: Sent,
        report: &mut Report,
    ) -> QueryResult<Flow> {
        db::write_transaction(conn, |conn| {
            record(conn, self.env, message, &outcome, report)
        })?;
        if matches!(outcome, Sent::Broken(_)) {
            // Its other messages wait for the channel to be mended.
            self.usable.retain(|n| *n != message.channel);
        }
        Ok(Flow::Next)
    }
}

fn record(
    conn: &mut DbConnection,
    env: Env<'_>,
    message: &Message,
    outcome: &Sent,
    report: &mut Report,
) -> QueryResult<()> {
    let now = db::now();
    let (channel, attempts) = (message.channel.as_str(), message.claim.attempts);
    if channel == direct::CHANNEL || linked::is(channel) {
        return record_direct(conn, env, message, outcome, report, now);
    }
    let settled = match outcome {
        Sent::Delivered => {
            channel_state(conn, channel, None, false, now)?;
            report.sent += 1;
            Settled::sent(now)
        }
        Sent::Retry { after_secs, error } if attempts < MAX_ATTEMPTS => {
            let wait = after_secs
                .map(queue::asked_wait)
                .unwrap_or_else(|| queue::backoff(env, attempts));
            channel_state(conn, channel, Some(error), false, now)?;
            tracing::warn!(channel, error = %error, retry_in_secs = wait.num_seconds(), "a chat message will be sent again");
            report.deferred += 1;
            report.temporary += 1;
            Settled::again(now + wait, Some(error))
        }
        Sent::Broken(error) => {
            // Back in the queue: sent when the channel is mended.
            channel_state(conn, channel, Some(error), true, now)?;
            tracing::error!(channel, error = %error, "a chat channel is broken: nothing more is sent to it until a test message from the admin page gets through");
            report.deferred += 1;
            report.unreachable += 1;
            Settled::again(now, Some(error)).uncounted()
        }
        Sent::Retry { error, .. } | Sent::Refused(error) => {
            channel_state(conn, channel, Some(error), false, now)?;
            tracing::error!(channel, error = %error, "a chat message failed for good");
            report.failed += 1;
            report.rejected += 1;
            Settled::failed(error, now)
        }
    };
    Queue::Chat.settle(conn, &message.claim, &settled, now)?;
    Ok(())
}

/// What came of a direct message: delivered (its email, if it waited, is not sent),
/// to be tried again, or not to be delivered (its email goes now); and of a notice to
/// a COE's own channel (`linked`). The channel's state is not kept for them: each is a
/// person's or a COE's, not a configured channel's.
fn record_direct(
    conn: &mut DbConnection,
    env: Env<'_>,
    message: &Message,
    outcome: &Sent,
    report: &mut Report,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let body: serde_json::Value = serde_json::from_str(&message.body).unwrap_or_default();
    let settled = match outcome {
        Sent::Delivered => {
            if !linked::is(&message.channel) {
                direct::delivered(conn, &body, now)?;
            }
            report.sent += 1;
            Settled::sent(now)
        }
        Sent::Retry { after_secs, error } if message.claim.attempts < MAX_ATTEMPTS => {
            let wait = after_secs
                .map(queue::asked_wait)
                .unwrap_or_else(|| queue::backoff(env, message.claim.attempts));
            report.deferred += 1;
            report.temporary += 1;
            Settled::again(now + wait, Some(error))
        }
        Sent::Retry { error, .. } | Sent::Refused(error) | Sent::Broken(error) => {
            if linked::is(&message.channel) {
                tracing::warn!(error = %error, "a notice to a COE's own channel was not delivered");
            } else {
                tracing::warn!(error = %error, "a direct message in Slack was not delivered: its email goes");
                direct::undelivered(conn, &body, now)?;
            }
            report.failed += 1;
            report.rejected += 1;
            Settled::failed(error, now)
        }
    };
    Queue::Chat.settle(conn, &message.claim, &settled, now)?;
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
    /// Who saved it last, when it is kept in coe (none: the settings file's).
    pub saved_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub saved_at: Option<NaiveDateTime>,
}

type ChannelRow = (
    String,
    Option<NaiveDateTime>,
    Option<String>,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
);

/// Every configured channel with its last delivery, its last error and what waits.
pub fn statuses(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<ChannelStatus>> {
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
    for c in &env.connections.channels {
        let row = rows.iter().find(|r| r.0 == c.name);
        let waiting: i64 = chat_messages::table
            .filter(chat_messages::channel.eq(&c.name))
            .filter(chat_messages::state.eq_any([PENDING, SENDING]))
            .count()
            .get_result(conn)?;
        let kept = env
            .connections
            .kept(crate::services::connections::Kind::Chat, &c.name);
        out.push(ChannelStatus {
            saved_by: kept.map(|k| k.updated_by.clone()),
            saved_at: kept.map(|k| k.updated_at),
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

/// Sends a test message to `channel` now (not through the queue), with no database
/// connection held: the admin's check of a channel. `record_test` then keeps what
/// came of it (a broken channel is mended when it gets through).
pub fn send_test(env: Env<'_>, channel: &ChannelSettings, by: &str, note: &str) -> Sent {
    let public_url = &env.settings.public_url;
    let mut facts = vec![
        ("Channel".into(), channel.name.clone()),
        ("Sent by".into(), by.into()),
    ];
    if !note.is_empty() {
        facts.push(("Note".into(), note.into()));
    }
    let notice = Notice {
        headline: "coe can post here".into(),
        facts,
        items: Vec::new(),
        total_items: 0,
        link_label: "Open coe".into(),
        link_url: format!("{}/", public_url.trim_end_matches('/')),
    };
    chat::send(
        channel,
        &db::new_id(),
        &chat::render(channel.kind, &notice),
        timeout(env),
    )
}

/// Keeps what a test message to a channel in use came to: its last error, or none.
pub fn record_test(conn: &mut DbConnection, channel: &str, outcome: &Sent) -> QueryResult<()> {
    let now = db::now();
    match outcome {
        Sent::Delivered => channel_state(conn, channel, None, false, now),
        Sent::Broken(e) => channel_state(conn, channel, Some(e), true, now),
        Sent::Retry { error, .. } | Sent::Refused(error) => {
            channel_state(conn, channel, Some(error), false, now)
        }
    }
}

/// What "Check the connection" found for a channel not yet saved, each in a sentence:
/// a test message posted (a Statuspage page is read, not posted to), and the channel
/// or room read back where coe may read it (Matrix; Slack and Mattermost with a
/// token to read). No database connection is held.
pub fn try_channel(env: Env<'_>, channel: &ChannelSettings, by: &str) -> Vec<Tried> {
    let mut tried = Vec::new();
    // A Statuspage "test" reads its page: nothing is posted on a public page.
    let statuspage = channel.kind == crate::config::ChatKind::Statuspage;
    let note = "A check from coe's admin page: nothing is saved yet.";
    tried.push(match (send_test(env, channel, by, note), statuspage) {
        (Sent::Delivered, false) => {
            Tried::worked("A test message reached the channel: look for it there.".into())
        }
        (Sent::Delivered, true) => Tried::worked("coe can read the Statuspage page.".into()),
        (Sent::Broken(e) | Sent::Refused(e) | Sent::Retry { error: e, .. }, _) => {
            Tried::failed(format!("It did not get through: {e}."))
        }
    });
    if chat::read::readable(channel) {
        match chat::read::default_conversation(channel) {
            Some(place) => {
                let to = db::now();
                let from = to - chrono::Duration::hours(1);
                tried.push(
                    match chat::read::read(channel, None, from, to, timeout(env)) {
                        Ok(said) => Tried::worked(format!(
                            "coe can read {place} back ({} messages by people in the last hour).",
                            said.len()
                        )),
                        Err(e) => Tried::failed(format!("coe cannot read {place} back: {e}.")),
                    },
                );
            }
            None => tried.push(Tried::worked(
                "The token to read channels is set; which channel to read is asked on each import."
                    .into(),
            )),
        }
    }
    tried
}
