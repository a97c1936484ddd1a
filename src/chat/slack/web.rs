//! The Slack Web API calls coe makes for work from chat, with the bot token
//! (api.slack.com/methods): who a user is (`users.info`, `users.lookupByEmail`), a
//! modal opened (`views.open`), a message posted or changed (`chat.postMessage`,
//! `chat.update`), and a message replaced through its `response_url`. Each call is made
//! with no pooled connection held; each failure says why in words.

use std::time::Duration;

use serde_json::{json, Value};

use crate::chat::send::transport_text;

/// Why a call did not do what it asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failed {
    /// A 429: Slack asks to wait (`Retry-After`, seconds).
    #[error("Slack asked to slow down (retry after {0:?} s)")]
    RateLimited(Option<u64>),
    /// `{"ok": false, "error": …}`: `expired_trigger_id`, `users_not_found`, a
    /// missing scope.
    #[error("Slack refused: {0}")]
    Refused(String),
    #[error("Slack did not answer: {0}")]
    NoAnswer(String),
}

/// A message Slack did not take, as the chat queue records it: to be sent again
/// later (a 429, no answer), or refused.
impl From<Failed> for crate::chat::Sent {
    fn from(failed: Failed) -> Self {
        match failed {
            Failed::RateLimited(after) => crate::chat::Sent::Retry {
                after_secs: after,
                error: "Slack asked to slow down".to_owned(),
            },
            Failed::NoAnswer(e) => crate::chat::Sent::Retry {
                after_secs: None,
                error: format!("Slack did not answer: {e}"),
            },
            Failed::Refused(e) => crate::chat::Sent::Refused(format!("Slack refused: {e}")),
        }
    }
}

/// The Web API at `base` (https://slack.com/api unless a channel names another) with
/// `token`; each call waits `timeout` at most.
pub struct Api<'a> {
    pub base: &'a str,
    pub token: &'a str,
    pub timeout: Duration,
}

/// Slack's own address of its Web API.
pub const SLACK_API: &str = "https://slack.com/api";

impl Api<'_> {
    fn agent(&self) -> ureq::Agent {
        ureq::AgentBuilder::new()
            .timeout(self.timeout)
            .redirects(0)
            .build()
    }

    fn url(&self, method: &str) -> String {
        format!("{}/{method}", self.base.trim_end_matches('/'))
    }

    /// A method that reads (`users.info`): its arguments in the query.
    fn get(&self, method: &str, args: &[(&str, &str)]) -> Result<Value, Failed> {
        let mut request = self
            .agent()
            .get(&self.url(method))
            .set("Authorization", &format!("Bearer {}", self.token));
        for (k, v) in args {
            request = request.query(k, v);
        }
        answered(request.call())
    }

    /// A method that writes: its arguments as JSON.
    fn post(&self, method: &str, body: &Value) -> Result<Value, Failed> {
        answered(
            self.agent()
                .post(&self.url(method))
                .set("Authorization", &format!("Bearer {}", self.token))
                .set("Content-Type", "application/json; charset=utf-8")
                .send_string(&body.to_string()),
        )
    }

    /// The email address of Slack user `user` (its profile's; `users:read.email`).
    pub fn email_of(&self, user: &str) -> Result<Option<String>, Failed> {
        let answer = self.get("users.info", &[("user", user)])?;
        Ok(answer["user"]["profile"]["email"]
            .as_str()
            .filter(|e| !e.is_empty())
            .map(str::to_owned))
    }

    /// The Slack user whose profile's email is `email`, if there is one.
    pub fn user_by_email(&self, email: &str) -> Result<Option<String>, Failed> {
        match self.get("users.lookupByEmail", &[("email", email)]) {
            Ok(answer) => Ok(answer["user"]["id"].as_str().map(str::to_owned)),
            Err(Failed::Refused(e)) if e == "users_not_found" => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens `view` for the person whose press or command gave `trigger_id` (valid
    /// three seconds).
    pub fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), Failed> {
        self.post(
            "views.open",
            &json!({"trigger_id": trigger_id, "view": view}),
        )
        .map(|_| ())
    }

    /// Posts `message` (`text` and `blocks`) to `channel` (a user's id posts in their
    /// direct messages with the app); gives the message's `channel` and `ts`.
    pub fn post_message(&self, channel: &str, message: &Value) -> Result<(String, String), Failed> {
        let mut body = message.clone();
        body["channel"] = json!(channel);
        let answer = self.post("chat.postMessage", &body)?;
        Ok((
            answer["channel"].as_str().unwrap_or(channel).to_owned(),
            answer["ts"].as_str().unwrap_or_default().to_owned(),
        ))
    }

    /// Replaces message `ts` of `channel` with `message`.
    pub fn update_message(&self, channel: &str, ts: &str, message: &Value) -> Result<(), Failed> {
        let mut body = message.clone();
        body["channel"] = json!(channel);
        body["ts"] = json!(ts);
        self.post("chat.update", &body).map(|_| ())
    }
}

/// Answers through the `response_url` Slack gave with a command or a press (valid 30
/// minutes, 5 uses): `message` with `replace_original` replaces the message the button
/// was on; with `response_type: in_channel`, everyone in the channel sees it.
pub fn respond(response_url: &str, message: &Value, timeout: Duration) -> Result<(), Failed> {
    let agent = ureq::AgentBuilder::new()
        .timeout(timeout)
        .redirects(0)
        .build();
    let answer = agent
        .post(response_url)
        .set("Content-Type", "application/json; charset=utf-8")
        .send_string(&message.to_string());
    match answer {
        Ok(_) => Ok(()),
        Err(ureq::Error::Status(429, r)) => Err(Failed::RateLimited(retry_after(&r))),
        Err(ureq::Error::Status(status, r)) => Err(Failed::Refused(format!(
            "HTTP {status}: {}",
            r.into_string()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect::<String>()
        ))),
        Err(ureq::Error::Transport(t)) => Err(Failed::NoAnswer(transport_text(&t))),
    }
}

fn retry_after(r: &ureq::Response) -> Option<u64> {
    r.header("retry-after").and_then(|v| v.trim().parse().ok())
}

fn answered(answer: Result<ureq::Response, ureq::Error>) -> Result<Value, Failed> {
    match answer {
        Ok(r) => {
            let text = r
                .into_string()
                .map_err(|e| Failed::NoAnswer(format!("the answer could not be read: {e}")))?;
            let body: Value = serde_json::from_str(&text)
                .map_err(|e| Failed::NoAnswer(format!("the answer is not JSON: {e}")))?;
            if body["ok"] == true {
                Ok(body)
            } else {
                Err(Failed::Refused(
                    body["error"]
                        .as_str()
                        .unwrap_or("no reason given")
                        .to_owned(),
                ))
            }
        }
        Err(ureq::Error::Status(429, r)) => Err(Failed::RateLimited(retry_after(&r))),
        Err(ureq::Error::Status(status, _)) => Err(Failed::NoAnswer(format!("HTTP {status}"))),
        Err(ureq::Error::Transport(t)) => Err(Failed::NoAnswer(transport_text(&t))),
    }
}
