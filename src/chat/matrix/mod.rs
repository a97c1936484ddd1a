//! Working from Matrix: what coe's bot user reads and says in the rooms it is in. The
//! bot reads from where it last stopped (`/sync` with the position kept), answers a
//! message as a reply (`m.notice`, which the chat import leaves out), and marks each
//! message about an action with what it is about (`io.coe`, read back when someone
//! replies or reacts to it). What people write is read by `command`.

pub mod command;

use std::time::Duration;

use serde_json::{json, Value};

/// Where coe marks, in its own messages, the action each is about and the moves
/// a reply or reaction to it may make.
pub const MARK: &str = "io.coe";

/// Only the timeline's messages and reactions; nothing of presence, typing, receipts or
/// account data; members loaded lazily.
const FILTER: &str = r#"{"presence":{"not_types":["*"]},"account_data":{"not_types":["*"]},"room":{"timeline":{"types":["m.room.message","m.reaction"],"limit":50},"state":{"lazy_load_members":true,"types":["m.room.member"]},"ephemeral":{"not_types":["*"]},"account_data":{"not_types":["*"]}}}"#;

/// A call the homeserver refused or did not answer (status 0).
struct Refused {
    status: u16,
    retry_after_ms: Option<u64>,
    said: String,
}

impl Refused {
    fn said(status: u16, said: &str) -> Refused {
        Refused {
            status,
            retry_after_ms: None,
            said: said.to_owned(),
        }
    }
}

/// A bot account on a homeserver.
#[derive(Clone)]
pub struct Bot {
    base: String,
    token: String,
    agent: ureq::Agent,
}

/// One event of a room's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub room: String,
    pub id: String,
    pub sender: String,
    pub kind: String,
    pub content: Value,
    /// Milliseconds since 1970, by the homeserver that took it.
    pub at_millis: i64,
}

/// What one read of the rooms brought.
#[derive(Debug, Clone, Default)]
pub struct Synced {
    /// Where the next read starts.
    pub next: String,
    /// Each joined room's new messages and reactions, in order.
    pub events: Vec<Event>,
    /// The rooms the bot is invited to, with who invited it.
    pub invites: Vec<(String, String)>,
    /// The rooms where more happened than one read brings (older messages skipped).
    pub gaps: Vec<String>,
}

fn segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).collect()
}

impl Bot {
    /// The bot of homeserver `base` signed in with `token`; each call given `timeout`
    /// beyond any long poll.
    pub fn new(base: &str, token: &str, timeout: Duration) -> Bot {
        Bot {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            agent: ureq::AgentBuilder::new()
                .timeout(timeout + Duration::from_secs(30))
                .timeout_connect(timeout)
                .redirects(0)
                .build(),
        }
    }

    fn call(&self, request: ureq::Request, body: Option<&Value>) -> Result<Value, String> {
        self.ask(request, body).map_err(|e| e.said)
    }

    /// One call; a refusal with its status and the homeserver's `errcode`.
    fn ask(&self, request: ureq::Request, body: Option<&Value>) -> Result<Value, Refused> {
        let request = request.set("Authorization", &format!("Bearer {}", self.token));
        let answer = match body {
            Some(body) => request
                .set("Content-Type", "application/json")
                .send_string(&body.to_string()),
            None => request.call(),
        };
        let json = |r: ureq::Response| -> Value {
            r.into_string()
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null)
        };
        match answer {
            Ok(r) => {
                let got = json(r);
                if got.is_object() {
                    Ok(got)
                } else {
                    Err(Refused::said(
                        0,
                        "the homeserver's answer is not a JSON object",
                    ))
                }
            }
            Err(ureq::Error::Status(status, r)) => {
                let said = json(r);
                Err(Refused {
                    status,
                    retry_after_ms: said["retry_after_ms"].as_u64(),
                    said: format!(
                        "the homeserver answered {status} {}: {}",
                        said["errcode"].as_str().unwrap_or(""),
                        said["error"].as_str().unwrap_or("")
                    ),
                })
            }
            Err(e) => Err(Refused::said(
                0,
                &format!("the homeserver did not answer: {}", e.kind()),
            )),
        }
    }

    /// The bot's own user id (`@name:server`).
    pub fn whoami(&self) -> Result<String, String> {
        let me = self.call(
            self.agent
                .get(&format!("{}/_matrix/client/v3/account/whoami", self.base)),
            None,
        )?;
        me["user_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "the homeserver did not say who the bot is".to_owned())
    }

    /// What happened since `since` (waiting up to `wait` for something); from now when
    /// `since` is none (nothing before is read: what was said before coe listened is
    /// not taken as said to it).
    pub fn sync(&self, since: Option<&str>, wait: Duration) -> Result<Synced, String> {
        let mut url = format!(
            "{}/_matrix/client/v3/sync?filter={}&timeout={}",
            self.base,
            segment(FILTER),
            wait.as_millis()
        );
        if let Some(since) = since {
            url.push_str(&format!("&since={}", segment(since)));
        }
        let got = self.call(self.agent.get(&url), None)?;
        let next = got["next_batch"]
            .as_str()
            .ok_or("the homeserver's sync has no next_batch")?
            .to_owned();
        if since.is_none() {
            return Ok(Synced {
                next,
                ..Synced::default()
            });
        }
        Ok(Synced {
            next,
            events: events_of(&got),
            invites: invites_of(&got),
            gaps: got["rooms"]["join"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, joined)| joined["timeline"]["limited"] == true)
                .map(|(room, _)| room.clone())
                .collect(),
        })
    }

    /// Event `id` of `room`; none when the bot may not see it (sent before it joined)
    /// or it is gone.
    pub fn event(&self, room: &str, id: &str) -> Result<Option<Value>, String> {
        let asked = self.ask(
            self.agent.get(&format!(
                "{}/_matrix/client/v3/rooms/{}/event/{}",
                self.base,
                segment(room),
                segment(id)
            )),
            None,
        );
        match asked {
            Ok(event) => Ok(Some(event)),
            Err(e) if e.status == 403 || e.status == 404 => Ok(None),
            Err(e) => Err(e.said),
        }
    }

    /// Says `content` (an `m.room.message`) in `room`, once for `txn`: the homeserver
    /// keeps the transaction, so that saying it again says nothing new.
    /// A homeserver that asks coe to slow down (429, `M_LIMIT_EXCEEDED`) is waited for,
    /// as long as it asks (at most ten seconds at a time, three times).
    pub fn say(&self, room: &str, txn: &str, content: &Value) -> Result<String, String> {
        let url = format!(
            "{}/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            self.base,
            segment(room),
            segment(txn)
        );
        let mut tries = 0;
        loop {
            match self.ask(self.agent.put(&url), Some(content)) {
                Ok(sent) => return Ok(sent["event_id"].as_str().unwrap_or_default().to_owned()),
                Err(e) if e.status == 429 && tries < 3 => {
                    tries += 1;
                    let wait = e.retry_after_ms.unwrap_or(1000).min(10_000);
                    std::thread::sleep(Duration::from_millis(wait));
                }
                Err(e) => return Err(e.said),
            }
        }
    }

    /// Joins `room` (an invitation taken).
    pub fn join(&self, room: &str) -> Result<(), String> {
        self.call(
            self.agent.post(&format!(
                "{}/_matrix/client/v3/rooms/{}/join",
                self.base,
                segment(room)
            )),
            Some(&json!({})),
        )
        .map(|_| ())
    }
}

fn events_of(sync: &Value) -> Vec<Event> {
    let mut events = Vec::new();
    let Some(rooms) = sync["rooms"]["join"].as_object() else {
        return events;
    };
    for (room, joined) in rooms {
        for e in joined["timeline"]["events"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (Some(id), Some(sender), Some(kind)) = (
                e["event_id"].as_str(),
                e["sender"].as_str(),
                e["type"].as_str(),
            ) else {
                continue;
            };
            events.push(Event {
                room: room.clone(),
                id: id.to_owned(),
                sender: sender.to_owned(),
                kind: kind.to_owned(),
                content: e["content"].clone(),
                at_millis: e["origin_server_ts"].as_i64().unwrap_or_default(),
            });
        }
    }
    events
}

fn invites_of(sync: &Value) -> Vec<(String, String)> {
    let mut invites = Vec::new();
    let Some(rooms) = sync["rooms"]["invite"].as_object() else {
        return invites;
    };
    for (room, invited) in rooms {
        let by = invited["invite_state"]["events"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["type"] == "m.room.member" && e["content"]["membership"] == "invite")
            .and_then(|e| e["sender"].as_str());
        if let Some(by) = by {
            invites.push((room.clone(), by.to_owned()));
        }
    }
    invites
}

/// A reply to event `to` of `sender` saying `text` (plain) and `html`, as a notice;
/// about an action when `about` is given (its id and the moves a reply may make).
pub fn reply(to: &str, text: &str, html: &str, about: Option<Value>) -> Value {
    let mut content = json!({
        "msgtype": "m.notice",
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": html,
        "m.relates_to": {"m.in_reply_to": {"event_id": to}},
    });
    if let Some(about) = about {
        content[MARK] = about;
    }
    content
}

/// The server part of user id `user` (`@name:server` → `server`).
pub fn server_of(user: &str) -> Option<&str> {
    user.strip_prefix('@')?.split_once(':').map(|(_, s)| s)
}

/// The localpart of user id `user` (`@name:server` → `name`), only as the
/// specification makes new ones: lower-case letters, digits and `._=/+-`.
pub fn localpart_of(user: &str) -> Option<&str> {
    let (local, _) = user.strip_prefix('@')?.split_once(':')?;
    let fine = !local.is_empty()
        && local
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._=/+-".contains(&b));
    fine.then_some(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_s_messages_and_invitations_are_read() {
        let sync = json!({
            "next_batch": "s2",
            "rooms": {
                "join": {"!r:hs": {"timeline": {"events": [
                    {"event_id": "$1", "sender": "@a:hs", "type": "m.room.message",
                     "content": {"msgtype": "m.text", "body": "!coe mine"}, "origin_server_ts": 5},
                    {"sender": "@a:hs", "type": "m.room.message", "content": {}}
                ]}}},
                "invite": {"!i:hs": {"invite_state": {"events": [
                    {"type": "m.room.name", "sender": "@b:hs", "content": {"name": "x"}},
                    {"type": "m.room.member", "sender": "@b:hs", "state_key": "@coe:hs",
                     "content": {"membership": "invite"}}
                ]}}}
            }
        });
        let events = events_of(&sync);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].id, "$1");
        assert_eq!(events[0].at_millis, 5);
        assert_eq!(
            invites_of(&sync),
            vec![("!i:hs".to_owned(), "@b:hs".to_owned())]
        );
    }

    #[test]
    fn a_user_id_has_its_parts() {
        assert_eq!(server_of("@dev:example.com:8448"), Some("example.com:8448"));
        assert_eq!(localpart_of("@dev:example.com"), Some("dev"));
        assert_eq!(server_of("dev"), None);
        assert_eq!(localpart_of("@Dev:example.com"), None, "no folding");
        assert_eq!(localpart_of("@de\u{212A}:example.com"), None);
    }
}
