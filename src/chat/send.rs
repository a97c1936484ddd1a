//! Sending one chat message: a webhook's POST, or Matrix's `PUT …/send/m.room.message/
//! {txnId}` (the message's id as the transaction id, so a retry after a lost answer is
//! not a second message). What the platform answered decides what happens next.

use std::time::Duration;

use serde_json::Value;

use crate::config::{ChannelSettings, ChatKind};

/// What came of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// Try again later: after the platform's `Retry-After` when it gave one.
    Retry {
        after_secs: Option<u64>,
        error: String,
    },
    /// The channel is gone (a deleted webhook, a room the bot left, a revoked token):
    /// nothing more is sent to it until an admin's test message gets through.
    Broken(String),
    /// The platform refused this message for good (its format): not retried.
    Refused(String),
}

/// Sends `body` to `channel`; `message_id` names it (Matrix's transaction id). The
/// platform has `timeout` to answer.
pub fn send(channel: &ChannelSettings, message_id: &str, body: &Value, timeout: Duration) -> Sent {
    let agent = ureq::AgentBuilder::new()
        .timeout(timeout)
        .redirects(0)
        .build();
    let text = body.to_string();
    let request = match channel.kind {
        ChatKind::Matrix => {
            let base = channel
                .homeserver
                .as_deref()
                .unwrap_or_default()
                .trim_end_matches('/');
            let room: String = percent_encoding::utf8_percent_encode(
                channel.room_id.as_deref().unwrap_or_default(),
                percent_encoding::NON_ALPHANUMERIC,
            )
            .collect();
            let token = channel
                .access_token
                .as_ref()
                .map(|t| t.expose())
                .unwrap_or_default();
            agent
                .put(&format!(
                    "{base}/_matrix/client/v3/rooms/{room}/send/m.room.message/{message_id}"
                ))
                .set("Authorization", &format!("Bearer {token}"))
        }
        ChatKind::Statuspage => return scrubbed(statuspage(&agent, channel, body), channel),
        _ => agent.post(channel.url.as_ref().map(|u| u.expose()).unwrap_or_default()),
    };
    let request = match (channel.kind, &channel.access_token) {
        (ChatKind::Webhook, Some(secret)) => {
            request.set("X-Coe-Signature-256", &signature(secret.expose(), &text))
        }
        _ => request,
    };
    let answer = request
        .set("Content-Type", "application/json; charset=utf-8")
        .send_string(&text);
    scrubbed(answered(channel.kind, answer), channel)
}

/// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`, as GitHub signs.
pub fn signature(secret: &str, body: &str) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A summary as the postmortem of its Statuspage incident: the draft written, then
/// published (both `PUT`s may be repeated; a changed text is written and published
/// again); withdrawn, the postmortem reverted to a draft. Without an incident (an
/// admin's test), the page is read, which checks the key.
fn statuspage(agent: &ureq::Agent, channel: &ChannelSettings, body: &Value) -> Sent {
    let base = channel
        .api_url
        .as_deref()
        .unwrap_or("https://api.statuspage.io/v1")
        .trim_end_matches('/');
    let segment = |v: &str| {
        percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    let page = segment(channel.page_id.as_deref().unwrap_or_default());
    let key = format!(
        "OAuth {}",
        channel
            .access_token
            .as_ref()
            .map(|t| t.expose())
            .unwrap_or_default()
    );
    let Some(incident) = body["statuspage_incident"].as_str() else {
        return answered(
            ChatKind::Statuspage,
            agent
                .get(&format!("{base}/pages/{page}"))
                .set("Authorization", &key)
                .call(),
        );
    };
    let postmortem = format!(
        "{base}/pages/{page}/incidents/{}/postmortem",
        segment(incident)
    );
    // Withdrawn: the published postmortem goes back to a draft, off the page.
    if body["event"] == "withdrawn" {
        return match answered(
            ChatKind::Statuspage,
            agent
                .put(&format!("{postmortem}/revert"))
                .set("Authorization", &key)
                .call(),
        ) {
            Sent::Broken(e) if e.starts_with("HTTP 404") => Sent::Refused(e),
            other => other,
        };
    }
    let draft = serde_json::json!({"postmortem": {"body_draft": body["markdown"]}});
    let sent = answered(
        ChatKind::Statuspage,
        agent
            .put(&postmortem)
            .set("Authorization", &key)
            .set("Content-Type", "application/json; charset=utf-8")
            .send_string(&draft.to_string()),
    );
    match sent {
        Sent::Delivered => {}
        // No such incident: this summary's mistake, not the page's.
        Sent::Broken(e) if e.starts_with("HTTP 404") => return Sent::Refused(e),
        other => return other,
    }
    let publish =
        serde_json::json!({"postmortem": {"notify_twitter": false, "notify_subscribers": false}});
    answered(
        ChatKind::Statuspage,
        agent
            .put(&format!("{postmortem}/publish"))
            .set("Authorization", &key)
            .set("Content-Type", "application/json; charset=utf-8")
            .send_string(&publish.to_string()),
    )
}

/// What an answer means.
fn answered(kind: ChatKind, answer: Result<ureq::Response, ureq::Error>) -> Sent {
    match answer {
        // Redirects are not followed (the message would go where nobody configured):
        // a webhook that answers with one is not delivered to.
        Ok(response) if (300..400).contains(&response.status()) => Sent::Broken(format!(
            "HTTP {}: the address answered with a redirect, which is not followed",
            response.status()
        )),
        Ok(_) => Sent::Delivered,
        Err(ureq::Error::Status(status, response)) => {
            let retry_after = response
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u64>().ok());
            let said = response.into_string().unwrap_or_default();
            judge(kind, status, retry_after, &said)
        }
        Err(ureq::Error::Transport(t)) => Sent::Retry {
            after_secs: None,
            error: format!("no answer: {}", transport_text(&t)),
        },
    }
}

/// What is logged, stored and shown on the admin page never holds the channel's
/// secrets, even when a platform repeats them in its answer.
fn scrubbed(sent: Sent, channel: &ChannelSettings) -> Sent {
    match sent {
        Sent::Delivered => Sent::Delivered,
        Sent::Retry { after_secs, error } => Sent::Retry {
            after_secs,
            error: scrub(error, channel),
        },
        Sent::Broken(error) => Sent::Broken(scrub(error, channel)),
        Sent::Refused(error) => Sent::Refused(scrub(error, channel)),
    }
}

/// What a request that got no answer says, fit for a log, a stored error or a page:
/// its kind ("Connection Failed"), ureq's message and the causes ("Connection
/// refused (os error 111)"), never its URL. (ureq's `Display` of an error starts
/// with the URL, and a webhook's URL is its secret.)
pub fn transport_text(t: &ureq::Transport) -> String {
    let mut text = t.kind().to_string();
    if let Some(message) = t.message() {
        text.push_str(": ");
        text.push_str(message);
    }
    let mut cause = std::error::Error::source(t);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// What a failed request says, its URL left out (`transport_text`; an error answer
/// as its status and the first 300 characters of its body).
pub fn failure_text(error: ureq::Error) -> String {
    match error {
        ureq::Error::Status(status, response) => {
            let said = response.into_string().unwrap_or_default();
            format!(
                "HTTP {status}: {}",
                crate::chat::format::cut(said.trim(), 300)
            )
        }
        ureq::Error::Transport(t) => transport_text(&t),
    }
}

/// `text` with the channel's secrets (its webhook URL, the URL's path and query, its
/// access token) replaced by `***`.
fn scrub(mut text: String, channel: &ChannelSettings) -> String {
    let mut secrets: Vec<String> = Vec::new();
    if let Some(url) = &channel.url {
        secrets.push(url.expose().to_owned());
        if let Ok(parsed) = url::Url::parse(url.expose()) {
            secrets.push(parsed.as_str().to_owned());
            secrets.push(parsed[url::Position::BeforePath..].to_owned());
        }
    }
    if let Some(token) = &channel.access_token {
        secrets.push(token.expose().to_owned());
    }
    // Longest first, so that a URL goes before its path; a short one ("/") is no
    // secret and would garble the text.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.iter().filter(|s| s.len() >= 8) {
        text = text.replace(secret.as_str(), "***");
    }
    text
}

/// What an error answer means, by platform.
pub fn judge(kind: ChatKind, status: u16, retry_after: Option<u64>, said: &str) -> Sent {
    let said = crate::chat::format::cut(said.trim(), 300);
    let error = format!("HTTP {status}: {said}");
    // Matrix says how long to wait in its body (`retry_after_ms`).
    let matrix_wait = || {
        serde_json::from_str::<Value>(&said)
            .ok()
            .and_then(|v| v["retry_after_ms"].as_u64())
            .map(|ms| ms.div_ceil(1000))
    };
    match status {
        // Statuspage's own "slow down".
        420 | 429 => Sent::Retry {
            after_secs: retry_after.or_else(matrix_wait),
            error,
        },
        // A deleted webhook or channel, an archived one (Slack 404/410), a room the
        // bot may not post in or a token that no longer works (Matrix 401/403).
        404 | 410 => Sent::Broken(error),
        401 | 403 => Sent::Broken(error),
        // Mattermost answers a deleted hook with 400 `…incoming_webhook.invalid…`.
        400 if kind == ChatKind::Mattermost && said.contains("incoming_webhook.invalid") => {
            Sent::Broken(error)
        }
        408 | 500..=599 => Sent::Retry {
            after_secs: retry_after,
            error,
        },
        _ => Sent::Refused(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_judged_as_each_platform_means_them() {
        assert_eq!(
            judge(ChatKind::Slack, 429, Some(30), "rate_limited"),
            Sent::Retry {
                after_secs: Some(30),
                error: "HTTP 429: rate_limited".into()
            }
        );
        assert!(matches!(
            judge(
                ChatKind::Matrix,
                429,
                None,
                r#"{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":4001}"#
            ),
            Sent::Retry {
                after_secs: Some(5),
                ..
            }
        ));
        assert!(matches!(
            judge(ChatKind::Slack, 404, None, "no_service"),
            Sent::Broken(_)
        ));
        assert!(matches!(
            judge(ChatKind::Slack, 410, None, "channel_is_archived"),
            Sent::Broken(_)
        ));
        assert!(matches!(
            judge(ChatKind::Matrix, 401, None, "M_UNKNOWN_TOKEN"),
            Sent::Broken(_)
        ));
        assert!(matches!(
            judge(
                ChatKind::Mattermost,
                400,
                None,
                "web.incoming_webhook.invalid.app_error"
            ),
            Sent::Broken(_)
        ));
        assert!(matches!(
            judge(ChatKind::Slack, 400, None, "invalid_blocks"),
            Sent::Refused(_)
        ));
        assert!(matches!(
            judge(ChatKind::Teams, 503, None, ""),
            Sent::Retry { .. }
        ));
    }
}
