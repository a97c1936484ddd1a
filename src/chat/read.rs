//! Reading an incident channel back, for a COE's timeline: the messages people wrote
//! in a time window, each with its author and time, links kept, bots' and the
//! platform's own messages left out. Matrix with the channel's bot token
//! (`/rooms/{room}/messages`), Slack with a bot token that may read
//! (`conversations.history`, by cursor), Mattermost with a bot's or a person's token
//! (`/api/v4/channels/{id}/posts`, by page).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime};
use serde_json::Value;

use crate::config::{ChannelSettings, ChatKind};

/// Most messages read from one window: an incident channel's busiest hours.
pub const MAX_MESSAGES: usize = 2000;

/// One message as the channel showed it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Said {
    pub author: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
    pub text: String,
}

/// Whether coe may read `channel` back (Matrix always; Slack and Mattermost with a
/// `read_token`; Teams with a single-tenant bot, through Microsoft Graph).
pub fn readable(channel: &ChannelSettings) -> bool {
    match channel.kind {
        ChatKind::Matrix => true,
        ChatKind::Teams => {
            channel.app_id.is_some()
                && channel.app_password.is_some()
                && channel.tenant_id.is_some()
        }
        ChatKind::Slack | ChatKind::Mattermost => channel.read_token.is_some(),
        _ => false,
    }
}

/// The conversation read when none is named: the Matrix room, or `read_channel`.
pub fn default_conversation(channel: &ChannelSettings) -> Option<&str> {
    match channel.kind {
        ChatKind::Matrix => channel.room_id.as_deref(),
        _ => channel.read_channel.as_deref(),
    }
}

/// The messages people wrote in `conversation` (else the channel's own) from `from`
/// to `to`, oldest first; an error in words (the platform's, without secrets).
pub fn read(
    channel: &ChannelSettings,
    conversation: Option<&str>,
    from: NaiveDateTime,
    to: NaiveDateTime,
    timeout: Duration,
) -> Result<Vec<Said>, String> {
    let conversation = conversation
        .or_else(|| default_conversation(channel))
        .ok_or("name the channel or room to read")?;
    let agent = ureq::AgentBuilder::new()
        .timeout(timeout)
        .redirects(0)
        .build();
    let mut said = match channel.kind {
        ChatKind::Matrix => matrix(&agent, channel, conversation, from, to),
        ChatKind::Slack => slack(&agent, channel, conversation, from, to),
        ChatKind::Mattermost => mattermost(&agent, channel, conversation, from, to),
        ChatKind::Teams => teams(&agent, channel, conversation, timeout),
        _ => Err(format!("{} channels cannot be read", channel.kind.as_str())),
    }
    .map_err(|e| scrub(e, channel))?;
    said.retain(|s| s.at >= from && s.at <= to && !s.text.trim().is_empty());
    said.sort_by_key(|s| s.at);
    said.truncate(MAX_MESSAGES);
    Ok(said)
}

fn scrub(error: String, channel: &ChannelSettings) -> String {
    let mut error = error;
    for secret in [
        &channel.access_token,
        &channel.read_token,
        &channel.app_password,
    ]
    .into_iter()
    .flatten()
    {
        if !secret.expose().is_empty() {
            error = error.replace(secret.expose(), "***");
        }
    }
    error
}

fn segment(v: &str) -> String {
    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A GET's JSON, or what went wrong in words.
fn get(request: ureq::Request) -> Result<Value, String> {
    match request.call() {
        Ok(response) => response
            .into_string()
            .map_err(|e| format!("the answer could not be read: {e}"))
            .and_then(|text| {
                serde_json::from_str(&text).map_err(|e| format!("the answer is not JSON: {e}"))
            }),
        Err(ureq::Error::Status(429, response)) => Err(format!(
            "the platform asks to slow down (HTTP 429); try again in {} seconds",
            response.header("retry-after").unwrap_or("a few")
        )),
        Err(ureq::Error::Status(status, response)) => Err(format!(
            "HTTP {status}: {}",
            super::format::cut(response.into_string().unwrap_or_default().trim(), 300)
        )),
        Err(ureq::Error::Transport(t)) => {
            Err(format!("no answer: {}", super::send::transport_text(&t)))
        }
    }
}

/// `Bearer <token>` for a channel's secret (empty when unset: the platform says 401).
fn bearer(token: &Option<crate::config::secret::Secret>) -> String {
    format!(
        "Bearer {}",
        token.as_ref().map(|t| t.expose()).unwrap_or_default()
    )
}

fn at_millis(ms: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_millis(ms).map(|t| t.naive_utc())
}

fn matrix(
    agent: &ureq::Agent,
    channel: &ChannelSettings,
    room: &str,
    from: NaiveDateTime,
    to: NaiveDateTime,
) -> Result<Vec<Said>, String> {
    let base = channel
        .homeserver
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let token = bearer(&channel.access_token);
    let room = segment(room);
    let members = get(agent
        .get(&format!(
            "{base}/_matrix/client/v3/rooms/{room}/joined_members"
        ))
        .set("Authorization", &token))?;
    let name_of = |user: &str| {
        members["joined"][user]["display_name"]
            .as_str()
            .map_or_else(|| user.to_owned(), str::to_owned)
    };
    let mut said = Vec::new();
    let mut page_from: Option<String> = None;
    // Newest first, back to the window's start.
    for _ in 0..(MAX_MESSAGES / 100 + 1) {
        let mut url = format!("{base}/_matrix/client/v3/rooms/{room}/messages?dir=b&limit=100");
        if let Some(f) = &page_from {
            url.push_str(&format!("&from={}", segment(f)));
        }
        let page = get(agent.get(&url).set("Authorization", &token))?;
        let chunk = page["chunk"].as_array().cloned().unwrap_or_default();
        let mut older = false;
        for event in &chunk {
            let Some(at) = event["origin_server_ts"].as_i64().and_then(at_millis) else {
                continue;
            };
            older |= at < from;
            let content = &event["content"];
            let human = event["type"] == "m.room.message"
                && matches!(content["msgtype"].as_str(), Some("m.text" | "m.emote"))
                && content["m.relates_to"]["rel_type"] != "m.replace";
            if human && at <= to {
                said.push(Said {
                    author: name_of(event["sender"].as_str().unwrap_or_default()),
                    at,
                    text: content["body"].as_str().unwrap_or_default().to_owned(),
                });
            }
        }
        match page["end"].as_str() {
            Some(end) if !older => page_from = Some(end.to_owned()),
            _ => return Ok(said),
        }
    }
    Err(format!(
        "the room has more than {MAX_MESSAGES} messages after the window's start: choose a later or shorter window"
    ))
}

/// A Teams channel (`{team's group id}/{channel id}`) through Microsoft Graph
/// (`channelMessages`, replies expanded), with the bot's application permission
/// `ChannelMessage.Read.All`: people's messages, newest first, up to `MAX_MESSAGES`.
fn teams(
    agent: &ureq::Agent,
    channel: &ChannelSettings,
    conversation: &str,
    timeout: Duration,
) -> Result<Vec<Said>, String> {
    use super::teams::{connector::Bot, plain_text, Endpoints, GRAPH_SCOPE};
    let (team, teams_channel) = conversation
        .split_once('/')
        .ok_or("name the Teams channel as its team's id, a slash, and the channel's id (19:…@thread.tacv2)")?;
    let bot = Bot {
        app_id: channel.app_id.clone().unwrap_or_default(),
        password: channel
            .app_password
            .as_ref()
            .map(|p| p.expose().to_owned())
            .unwrap_or_default(),
        tenant: channel.tenant_id.clone(),
        endpoints: Endpoints::of(channel.api_url.as_deref(), channel.tenant_id.as_deref()),
        timeout,
    };
    let token = format!("Bearer {}", bot.token_for(GRAPH_SCOPE)?);
    let mut url = format!(
        "{}/teams/{}/channels/{}/messages?$top=50&$expand=replies",
        bot.endpoints.graph,
        segment(team),
        segment(teams_channel)
    );
    let mut said = Vec::new();
    let take = |m: &Value, said: &mut Vec<Said>| {
        let human = m["messageType"] == "message" && m["deletedDateTime"].is_null();
        let at = m["createdDateTime"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.naive_utc());
        let author = m["from"]["user"]["displayName"].as_str();
        if let (true, Some(at), Some(author)) = (human, at, author) {
            said.push(Said {
                author: author.to_owned(),
                at,
                text: plain_text(m["body"]["content"].as_str().unwrap_or_default()),
            });
        }
    };
    for _ in 0..(MAX_MESSAGES / 50 + 1) {
        let page = get(agent.get(&url).set("Authorization", &token))?;
        for m in page["value"].as_array().into_iter().flatten() {
            take(m, &mut said);
            for reply in m["replies"].as_array().into_iter().flatten() {
                take(reply, &mut said);
            }
        }
        match page["@odata.nextLink"].as_str() {
            // Graph's own next page, only on Graph's own address.
            Some(next) if next.starts_with(&bot.endpoints.graph) => url = next.to_owned(),
            _ => return Ok(said),
        }
    }
    Err(format!(
        "the channel has more than {MAX_MESSAGES} messages: coe reads no further back than that in a Teams channel"
    ))
}

fn slack(
    agent: &ureq::Agent,
    channel: &ChannelSettings,
    conversation: &str,
    from: NaiveDateTime,
    to: NaiveDateTime,
) -> Result<Vec<Said>, String> {
    let base = channel
        .api_url
        .as_deref()
        .unwrap_or("https://slack.com/api")
        .trim_end_matches('/');
    let token = bearer(&channel.read_token);
    let seconds = |t: NaiveDateTime| format!("{}.000000", t.and_utc().timestamp());
    let mut raw: Vec<Value> = Vec::new();
    let mut cursor = String::new();
    for _ in 0..(MAX_MESSAGES / 200 + 1) {
        let mut url = format!(
            "{base}/conversations.history?channel={}&oldest={}&latest={}&inclusive=true&limit=200",
            segment(conversation),
            seconds(from),
            seconds(to + chrono::Duration::seconds(1)),
        );
        if !cursor.is_empty() {
            url.push_str(&format!("&cursor={}", segment(&cursor)));
        }
        let page = get(agent.get(&url).set("Authorization", &token))?;
        if page["ok"] != true {
            return Err(format!(
                "Slack refused: {}",
                page["error"].as_str().unwrap_or("no reason given")
            ));
        }
        let messages = page["messages"].as_array().cloned().unwrap_or_default();
        let empty = messages.is_empty();
        raw.extend(messages);
        match page["response_metadata"]["next_cursor"].as_str() {
            Some(next) if !empty && next != cursor && page["has_more"] == true => {
                next.clone_into(&mut cursor);
            }
            _ => break,
        }
    }
    // People, not bots nor the channel's own notes (joins, topic changes).
    raw.retain(|m| m["subtype"].is_null() && m["bot_id"].is_null() && m["user"].is_string());
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for user in raw.iter().filter_map(|m| m["user"].as_str()) {
        if names.contains_key(user) || names.len() >= 200 {
            continue;
        }
        // A refusal (a missing scope, a 429) leaves the rest as their ids.
        let Ok(u) = get(agent
            .get(&format!("{base}/users.info?user={}", segment(user)))
            .set("Authorization", &token))
        else {
            break;
        };
        let found = Some(u).and_then(|u| {
            let p = &u["user"]["profile"];
            [&p["display_name"], &p["real_name"], &u["user"]["name"]]
                .into_iter()
                .filter_map(Value::as_str)
                .find(|n| !n.is_empty())
                .map(str::to_owned)
        });
        names.insert(user.to_owned(), found.unwrap_or_else(|| user.to_owned()));
    }
    Ok(raw
        .iter()
        .filter_map(|m| {
            let ts: f64 = m["ts"].as_str()?.parse().ok()?;
            // Milliseconds: whole seconds and the first three digits after them.
            #[allow(clippy::cast_possible_truncation)]
            let at = at_millis((ts * 1000.0).round() as i64)?;
            let user = m["user"].as_str()?;
            Some(Said {
                author: names.get(user).cloned().unwrap_or_else(|| user.to_owned()),
                at,
                text: slack_text(m["text"].as_str().unwrap_or_default(), &names),
            })
        })
        .collect())
}

/// Slack's markup in plain words: `<https://x|label>` → `label (https://x)`,
/// `<https://x>` → the address, `<@U1>` → `@name`, `<#C1|name>` → `#name`, and its
/// three escapes undone.
pub fn slack_text(text: &str, names: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('>') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &rest[open + 1..open + close];
        let (target, label) = inner.split_once('|').unwrap_or((inner, ""));
        let shown = if let Some(user) = target.strip_prefix('@') {
            format!(
                "@{}",
                names
                    .get(user)
                    .map_or(if label.is_empty() { user } else { label }, String::as_str)
            )
        } else if let Some(channel) = target.strip_prefix('#') {
            format!("#{}", if label.is_empty() { channel } else { label })
        } else if let Some(special) = target.strip_prefix('!') {
            format!("@{}", special.split('^').next().unwrap_or(special))
        } else if label.is_empty() {
            target.to_owned()
        } else {
            format!("{label} ({target})")
        };
        out.push_str(&shown);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn mattermost(
    agent: &ureq::Agent,
    channel: &ChannelSettings,
    conversation: &str,
    from: NaiveDateTime,
    to: NaiveDateTime,
) -> Result<Vec<Said>, String> {
    let base = channel
        .api_url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let token = bearer(&channel.read_token);
    // Newest first, 200 a page, back to the window's start.
    let start = from.and_utc().timestamp_millis();
    let mut all: Vec<Value> = Vec::new();
    let mut reached = false;
    for number in 0..(MAX_MESSAGES / 200 + 1) {
        let page = get(agent
            .get(&format!(
                "{base}/api/v4/channels/{}/posts?page={number}&per_page=200",
                segment(conversation)
            ))
            .set("Authorization", &token))?;
        let order: Vec<&str> = page["order"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for id in &order {
            if let Some(post) = page["posts"].get(*id) {
                reached |= post["create_at"].as_i64().unwrap_or(0) < start;
                all.push(post.clone());
            }
        }
        if order.len() < 200 || reached {
            reached = true;
            break;
        }
    }
    if !reached {
        return Err(format!(
            "the channel has more than {MAX_MESSAGES} messages after the window's start: choose a later or shorter window"
        ));
    }
    let posts: Vec<&Value> = all
        .iter()
        .filter(|p| {
            p["delete_at"].as_i64().unwrap_or(0) == 0
                && p["type"].as_str().unwrap_or_default().is_empty()
                && p["props"]["from_bot"] != "true"
                && p["props"]["from_webhook"] != "true"
        })
        .collect();
    let mut users: Vec<&str> = posts.iter().filter_map(|p| p["user_id"].as_str()).collect();
    users.sort_unstable();
    users.dedup();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    if !users.is_empty() {
        let found = agent
            .post(&format!("{base}/api/v4/users/ids"))
            .set("Authorization", &token)
            .set("Content-Type", "application/json")
            .send_string(&serde_json::json!(users).to_string());
        let found = found
            .ok()
            .and_then(|r| r.into_string().ok())
            .and_then(|text| serde_json::from_str::<Vec<Value>>(&text).ok());
        if let Some(found) = found {
            for u in found {
                if let (Some(id), Some(name)) = (u["id"].as_str(), u["username"].as_str()) {
                    names.insert(id.to_owned(), name.to_owned());
                }
            }
        }
    }
    Ok(posts
        .into_iter()
        .filter_map(|p| {
            let at = at_millis(p["create_at"].as_i64()?)?;
            let user = p["user_id"].as_str()?;
            Some(Said {
                author: names.get(user).cloned().unwrap_or_else(|| user.to_owned()),
                at,
                text: p["message"].as_str().unwrap_or_default().to_owned(),
            })
        })
        .filter(|s| s.at <= to)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_markup_reads_as_words_with_its_links() {
        let names = BTreeMap::from([("U1".to_owned(), "Ana".to_owned())]);
        assert_eq!(
            slack_text("<@U1> see <https://grafana.example.com/d/x|the graph> &amp; <https://x.io> in <#C9|inc-42> &lt;3 <!here>", &names),
            "@Ana see the graph (https://grafana.example.com/d/x) & https://x.io in #inc-42 <3 @here"
        );
        assert_eq!(slack_text("a < b", &names), "a < b");
    }
}
