//! What Statuspage and webhook channels are told of a summary for customers: its
//! publication (to every channel that hears publications of its team and service; a
//! Statuspage channel only when the publisher named its incident), a change of its
//! text (to the channels the publication went to, what was not sent yet of it
//! replaced), and its withdrawal (to the channels that were sent it). Each is keyed
//! under `published:{coe}:{token}`, so taking it down cancels what was not sent.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{cancel, enqueue_body, like_escaped, FAILED, SENDING, SENT};
use crate::chat::{self, PublicationEvent};
use crate::config::{ChannelSettings, ChatEvent, ChatKind};
use crate::db::schema::{chat_messages, coes};
use crate::db::DbConnection;
use crate::services::Env;

/// A summary for customers as the channels are told of it.
#[derive(Debug, Clone, Copy)]
pub struct Told<'a> {
    pub coe_id: &'a str,
    pub token: &'a str,
    pub url: &'a str,
    pub statuspage_incident: Option<&'a str>,
}

impl Told<'_> {
    /// The key of its posts, on every channel.
    fn key(&self) -> String {
        format!("published:{}:{}", self.coe_id, self.token)
    }
}

/// The channels that hear the publications of COE `coe_id` (its team and service):
/// Statuspage ones only when an incident is named.
pub fn channels_for<'e>(
    conn: &mut DbConnection,
    env: Env<'e>,
    coe_id: &str,
    with_incident: bool,
) -> QueryResult<Vec<&'e ChannelSettings>> {
    let (service, owner): (Option<String>, Option<String>) = coes::table
        .find(coe_id)
        .select((coes::service, coes::owner_email))
        .first(conn)?;
    let team = crate::services::directory::ownership::team_of_coe(
        conn,
        owner.as_deref(),
        service.as_deref(),
    )?;
    Ok(env
        .connections
        .channels
        .iter()
        .filter(|c| {
            c.wants(ChatEvent::Published, team.as_deref(), service.as_deref())
                && (with_incident || c.kind != ChatKind::Statuspage)
        })
        .collect())
}

/// Queues a published summary (its title and Markdown) for every channel that hears
/// publications of its COE.
pub fn published(
    conn: &mut DbConnection,
    env: Env<'_>,
    told: Told<'_>,
    (title, body): (&str, &str),
    now: NaiveDateTime,
) -> QueryResult<()> {
    let post = chat::publication(
        PublicationEvent::Published,
        told.statuspage_incident,
        Some((title, body)),
        told.url,
        &crate::json::format_utc(&now),
    );
    if let Some(incident) = told.statuspage_incident {
        // A withdrawal of that incident's postmortem still on its way would take
        // this one down after it: it is not sent.
        diesel::update(
            chat_messages::table
                .filter(
                    chat_messages::dedup_key
                        .like(format!("%:withdrawn:{}:%", like_escaped(told.coe_id)))
                        .escape('\\'),
                )
                .filter(
                    chat_messages::body
                        .like(format!(
                            "%\"statuspage_incident\":\"{}\"%",
                            like_escaped(incident)
                        ))
                        .escape('\\'),
                )
                .filter(chat_messages::state.eq(super::PENDING)),
        )
        .set((
            chat_messages::state.eq(FAILED),
            chat_messages::last_error.eq("published again before the withdrawal was sent"),
            chat_messages::updated_at.eq(now),
        ))
        .execute(conn)?;
    }
    for channel in channels_for(conn, env, told.coe_id, told.statuspage_incident.is_some())? {
        enqueue_body(conn, channel, ChatEvent::Published, &told.key(), &post, now)?;
    }
    Ok(())
}

/// Each channel that was sent (or is still to be sent) something of `told`: what it
/// was last (`published`, `updated`, `withdrawn`) and whether it got there.
pub fn went_to(
    conn: &mut DbConnection,
    told: &Told<'_>,
) -> QueryResult<Vec<(String, &'static str, String)>> {
    let key = like_escaped(&told.key());
    let withdrawn = like_escaped(&format!("withdrawn:{}:{}", told.coe_id, told.token));
    let rows: Vec<(String, String, String)> = chat_messages::table
        .filter(
            chat_messages::dedup_key
                .like(format!("%:{key}"))
                .escape('\\')
                .or(chat_messages::dedup_key
                    .like(format!("%:{key}:%"))
                    .escape('\\'))
                .or(chat_messages::dedup_key
                    .like(format!("%:{withdrawn}"))
                    .escape('\\')),
        )
        .select((
            chat_messages::channel,
            chat_messages::dedup_key,
            chat_messages::state,
        ))
        .order((
            chat_messages::channel.asc(),
            chat_messages::created_at.desc(),
        ))
        .load(conn)?;
    let mut last: Vec<(String, &'static str, String)> = Vec::new();
    for (channel, dedup_key, state) in rows {
        if last.last().is_some_and(|(c, _, _)| *c == channel) {
            continue;
        }
        let what = if dedup_key.contains(":withdrawn:") {
            "withdrawn"
        } else if dedup_key.contains(":updated:") {
            "updated"
        } else {
            "published"
        };
        last.push((channel, what, state));
    }
    Ok(last)
}

/// The channels that were sent anything of `told` (`sent` only: delivered), by name.
fn told_channels(conn: &mut DbConnection, told: &Told<'_>, sent: bool) -> QueryResult<Vec<String>> {
    let key = like_escaped(&told.key());
    let mut query = chat_messages::table
        .filter(
            chat_messages::dedup_key
                .like(format!("%:{key}"))
                .escape('\\')
                .or(chat_messages::dedup_key
                    .like(format!("%:{key}:%"))
                    .escape('\\')),
        )
        .select(chat_messages::channel)
        .distinct()
        .into_boxed();
    query = if sent {
        // One being sent right now gets there too.
        query.filter(chat_messages::state.eq_any([SENT, SENDING]))
    } else {
        query.filter(chat_messages::state.ne(FAILED))
    };
    query.load(conn)
}

/// Queues the approved new text of `told` for the channels its publication went to
/// (what of it was not sent yet is replaced: the new text says it all).
pub fn updated(
    conn: &mut DbConnection,
    env: Env<'_>,
    told: Told<'_>,
    (title, body): (&str, &str),
    now: NaiveDateTime,
) -> QueryResult<()> {
    let names = told_channels(conn, &told, false)?;
    cancel(
        conn,
        &told.key(),
        "replaced by a newer text before it was sent",
        now,
    )?;
    let post = chat::publication(
        PublicationEvent::Updated,
        told.statuspage_incident,
        Some((title, body)),
        told.url,
        &crate::json::format_utc(&now),
    );
    let key = format!(
        "{}:updated:{}",
        told.key(),
        now.and_utc().timestamp_micros()
    );
    tell(conn, env, &names, &key, &post, now)
}

/// Tells the channels that were sent `told` that it was withdrawn (a Statuspage
/// postmortem is reverted to a draft); what was not sent yet is not sent at all.
pub fn withdrawn(
    conn: &mut DbConnection,
    env: Env<'_>,
    told: Told<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let names = told_channels(conn, &told, true)?;
    let why = "the summary was taken down before it was sent";
    cancel(conn, &told.key(), why, now)?;
    let post = chat::publication(
        PublicationEvent::Withdrawn,
        told.statuspage_incident,
        None,
        told.url,
        &crate::json::format_utc(&now),
    );
    let key = format!("withdrawn:{}:{}", told.coe_id, told.token);
    tell(conn, env, &names, &key, &post, now)
}

/// Queues `post` under `key` for the channels named `names`.
fn tell(
    conn: &mut DbConnection,
    env: Env<'_>,
    names: &[String],
    key: &str,
    post: &serde_json::Value,
    now: NaiveDateTime,
) -> QueryResult<()> {
    for channel in env
        .connections
        .channels
        .iter()
        .filter(|c| names.contains(&c.name))
    {
        enqueue_body(conn, channel, ChatEvent::Published, key, post, now)?;
    }
    Ok(())
}
