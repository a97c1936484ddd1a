//! A COE's own channels hear its notices: where its failure was reported from chat, or
//! one linked to it (`chat_links`, `services::from_chat`), is told of each review step
//! beside the channels of its team and service — a Slack channel by the Slack app
//! (`chat.postMessage` with its bot token), a Matrix room by the Matrix bot people work
//! with there. (A linked Teams channel is not told: coe keeps no address to write to it
//! unasked.) Each is a row of `chat_messages` on `SLACK` or `MATRIX`, once per channel
//! and notice, delivered by the chat delivery like any notice.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::chat::slack;
use crate::chat::{self, Notice, Sent};
use crate::config::{ChannelSettings, ChatEvent, ChatKind};
use crate::db::schema::chat_links;
use crate::db::DbConnection;
use crate::services::outbound::outbox::direct;
use crate::services::Env;

/// The channel names they are queued on (no channel of the settings has a `:`).
pub const SLACK: &str = "slack:linked";
pub const MATRIX: &str = "matrix:linked";

/// Whether `channel` is one of these.
pub fn is(channel: &str) -> bool {
    channel == SLACK || channel == MATRIX
}

/// The Matrix bot people work with: the first Matrix channel with `people_domain`.
fn matrix_bot<'a>(env: Env<'a>) -> Option<&'a ChannelSettings> {
    env.connections
        .channels
        .iter()
        .find(|c| c.kind == ChatKind::Matrix && c.people_domain.is_some())
}

/// The queues that may be delivered now: those with a bot to write as.
pub fn usable(env: Env<'_>) -> Vec<String> {
    let mut usable = Vec::new();
    if direct::app(env).is_some() {
        usable.push(SLACK.to_owned());
    }
    if matrix_bot(env).is_some() {
        usable.push(MATRIX.to_owned());
    }
    usable
}

/// Queues `notice` (of `event`, once per `key`) for the channels linked to COE `coe`
/// (of `route`'s team and service).
#[allow(clippy::too_many_arguments)]
pub fn queue(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe: &str,
    route: super::Route<'_>,
    event: ChatEvent,
    key: &str,
    notice: &Notice,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let links: Vec<(String, String)> = chat_links::table
        .filter(chat_links::coe_id.eq(coe))
        .select((chat_links::platform, chat_links::channel_id))
        .load(conn)?;
    let mut queued = 0;
    for (platform, to) in links {
        let (name, via) = match platform.as_str() {
            "slack" => (SLACK, direct::app(env)),
            "matrix" => (MATRIX, matrix_bot(env)),
            _ => continue,
        };
        let Some(via) = via else {
            continue;
        };
        // The bot's own room, or the channel the Slack app reads, hears it already
        // when it wants it.
        let own = via.room_id.as_deref() == Some(to.as_str())
            || via.read_channel.as_deref() == Some(to.as_str());
        if own && via.wants(event, route.team, route.service) {
            continue;
        }
        let body = json!({"to": to, "via": via.name, "message": chat::render(via.kind, notice)});
        queued += super::queue_row(
            conn,
            name,
            event,
            &format!("{name}:{to}:{key}"),
            &body.to_string(),
            now,
        )?;
    }
    Ok(queued)
}

/// Sends one (message `id`, queued on `channel`).
pub fn send(
    env: Env<'_>,
    id: &str,
    channel: &str,
    body: &Value,
    timeout: std::time::Duration,
) -> Sent {
    let to = body["to"].as_str().unwrap_or_default();
    let Some(via) = env
        .connections
        .channels
        .iter()
        .find(|c| Some(c.name.as_str()) == body["via"].as_str())
    else {
        return Sent::Refused("the bot it was to be sent as is set up no more".to_owned());
    };
    if channel == MATRIX {
        let mut room = via.clone();
        room.room_id = Some(to.to_owned());
        return chat::send(&room, id, &body["message"], timeout);
    }
    let api = slack::web::Api {
        base: via.api_url.as_deref().unwrap_or(slack::web::SLACK_API),
        token: via
            .read_token
            .as_ref()
            .map(|t| t.expose())
            .unwrap_or_default(),
        timeout,
    };
    match api.post_message(to, &body["message"]) {
        Ok(_) => Sent::Delivered,
        Err(failed) => failed.into(),
    }
}
