//! What trackers send back: each delivery's signature checked (Jira's
//! `X-Hub-Signature` when a secret is set, Linear's `Linear-Signature` with its
//! 60-second `webhookTimestamp` window, GitHub's `X-Hub-Signature-256`), its delivery
//! id (for taking it once) and the ticket and status it tells of.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Status;
use crate::config::{TrackerKind, TrackerSettings};
use crate::ingest::signature::{self, SignatureError};

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Unsigned, wrongly signed or too old: 401.
    #[error("{0}")]
    Signature(String),
    /// Not what the tracker sends: 400, naming the field.
    #[error("{field}: {problem}")]
    Malformed {
        field: &'static str,
        problem: String,
    },
}

/// What one delivery tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The tracker's delivery id (Jira's `X-Atlassian-Webhook-Identifier`,
    /// `Linear-Delivery`, `X-GitHub-Delivery`); a hash of the body when absent.
    pub id: String,
    /// A digest of the body (`body:` and its SHA-256): none of the three trackers
    /// signs its delivery id, so a signed body replayed under a new id is known by
    /// this.
    pub body: String,
    /// The ticket it is about and its status now, when it is about an issue.
    pub ticket: Option<Told>,
}

/// A ticket and the status a delivery says it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    pub key: String,
    pub id: String,
    pub status: Status,
}

fn malformed(field: &'static str, problem: &str) -> Refused {
    Refused::Malformed {
        field,
        problem: problem.into(),
    }
}

fn signature_error(e: SignatureError) -> Refused {
    Refused::Signature(e.to_string())
}

/// Checks and reads one delivery; `header` reads a request header by name.
pub fn read(
    tracker: &TrackerSettings,
    header: &dyn Fn(&str) -> Option<String>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<Delivery, Refused> {
    let secret = tracker.webhook_secret.as_ref().map(|s| s.expose());
    let (sig_name, prefix, id_name) = match tracker.kind {
        TrackerKind::Jira => (
            "X-Hub-Signature",
            "sha256=",
            "X-Atlassian-Webhook-Identifier",
        ),
        TrackerKind::Linear => ("Linear-Signature", "", "Linear-Delivery"),
        TrackerKind::Github => ("X-Hub-Signature-256", "sha256=", "X-GitHub-Delivery"),
    };
    if let Some(secret) = secret {
        signature::verify_prefixed(sig_name, prefix, secret, body, header(sig_name).as_deref())
            .map_err(signature_error)?;
    }
    let json: Value =
        serde_json::from_slice(body).map_err(|e| malformed("body", &format!("not JSON: {e}")))?;
    if !json.is_object() {
        return Err(malformed("body", "a JSON object is expected"));
    }
    if tracker.kind == TrackerKind::Linear {
        // A signed delivery replayed later is refused: Linear says to check that
        // `webhookTimestamp` is within a minute.
        let at = json["webhookTimestamp"]
            .as_i64()
            .ok_or_else(|| malformed("webhookTimestamp", "a time in milliseconds is required"))?;
        if (now.timestamp_millis() - at).abs() > 60_000 {
            return Err(Refused::Signature(format!(
                "webhookTimestamp {at} is more than 60 seconds from now"
            )));
        }
    }
    let id = header(id_name)
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| signature::sign_hex("delivery", body));
    if id.len() > 200 {
        return Err(malformed("delivery id", "longer than 200 characters"));
    }
    let ticket = match tracker.kind {
        TrackerKind::Jira => jira(&json)?,
        TrackerKind::Linear => linear(&json)?,
        TrackerKind::Github => {
            if header("X-GitHub-Event").as_deref() == Some("issues") {
                github(&json)?
            } else {
                None
            }
        }
    };
    let body = format!("body:{}", hex::encode(Sha256::digest(body)));
    Ok(Delivery { id, body, ticket })
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// `jira:issue_created`, `jira:issue_updated`: the issue with its fields.
fn jira(json: &Value) -> Result<Option<Told>, Refused> {
    let event = json["webhookEvent"].as_str().unwrap_or_default();
    if !event.starts_with("jira:issue_") || event == "jira:issue_deleted" {
        return Ok(None);
    }
    let issue = &json["issue"];
    let key = text(&issue["key"]);
    if key.is_empty() {
        return Err(malformed("issue.key", "the issue's key is missing"));
    }
    let fields = &issue["fields"];
    let name = text(&fields["status"]["name"]);
    if name.is_empty() {
        return Err(malformed(
            "issue.fields.status",
            "the issue's status is missing",
        ));
    }
    Ok(Some(Told {
        key,
        id: text(&issue["id"]),
        status: Status {
            name,
            category: text(&fields["status"]["statusCategory"]["key"]),
            reason: fields["resolution"]["name"].as_str().map(Into::into),
        },
    }))
}

/// `type: "Issue"` with the issue in `data`.
fn linear(json: &Value) -> Result<Option<Told>, Refused> {
    if json["type"] != "Issue" || json["action"] == "remove" {
        return Ok(None);
    }
    let data = &json["data"];
    let id = text(&data["id"]);
    if id.is_empty() {
        return Err(malformed("data.id", "the issue's id is missing"));
    }
    let state = &data["state"];
    if !state.is_object() {
        return Err(malformed("data.state", "the issue's state is missing"));
    }
    Ok(Some(Told {
        key: text(&data["identifier"]),
        id,
        status: Status {
            name: text(&state["name"]),
            category: text(&state["type"]),
            reason: None,
        },
    }))
}

/// The `issues` event: the issue and its repository (a deleted or transferred
/// issue tells no status).
fn github(json: &Value) -> Result<Option<Told>, Refused> {
    if matches!(json["action"].as_str(), Some("deleted" | "transferred")) {
        return Ok(None);
    }
    let repo = text(&json["repository"]["full_name"]).to_ascii_lowercase();
    let number = text(&json["issue"]["number"]);
    if repo.is_empty() || number.is_empty() {
        return Err(malformed(
            "issue.number",
            "the issue's number and repository are missing",
        ));
    }
    let state = text(&json["issue"]["state"]);
    Ok(Some(Told {
        key: format!("{repo}#{number}"),
        id: number,
        status: Status {
            name: state.clone(),
            category: state,
            reason: json["issue"]["state_reason"].as_str().map(Into::into),
        },
    }))
}
