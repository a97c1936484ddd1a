//! What every request from Slack goes through: its signature, then who its user is
//! in coe; and the ways coe answers.

use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use crate::chat::slack::{self, web::Api};
use crate::config::{ChannelSettings, ChatKind};
use crate::error::ApiError;
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::access::Acting;
use crate::services::from_chat::{self, Platform};

/// Largest request taken: a modal's state is the biggest Slack sends.
const MAX_BODY: usize = 256 * 1024;

/// How long one Web API call may take inside a request: Slack waits three seconds for
/// the answer, and a request makes at most two calls (who the person is, often
/// remembered; the modal opened).
pub(super) const IN_REQUEST: Duration = Duration::from_millis(1200);

/// Slack users' emails, as `users.info` gave them, for five minutes (by app and user):
/// a press and the modal it opens ask once.
fn emails() -> &'static moka::sync::Cache<(String, String), String> {
    static EMAILS: std::sync::OnceLock<moka::sync::Cache<(String, String), String>> =
        std::sync::OnceLock::new();
    EMAILS.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(10_000)
            .time_to_live(Duration::from_secs(300))
            .build()
    })
}

/// The email address of Slack user `user`'s profile (remembered a while), or why not.
pub(super) async fn email_of(
    app: &SlackApp,
    user: &str,
) -> Result<Result<Option<String>, slack::web::Failed>, ApiError> {
    let key = (app.channel.name.clone(), user.to_owned());
    if let Some(email) = emails().get(&key) {
        return Ok(Ok(Some(email)));
    }
    let (app, user) = (app.clone(), user.to_owned());
    let found = web::block(move || app.api(IN_REQUEST).email_of(&user)).await?;
    if let Ok(Some(email)) = &found {
        emails().insert(key, email.clone());
    }
    Ok(found)
}

/// The Slack app a request came from: the channel whose signing secret signed it.
#[derive(Clone)]
pub(super) struct SlackApp {
    channel: ChannelSettings,
}

impl SlackApp {
    pub(super) fn api(&self, timeout: Duration) -> Api<'_> {
        Api {
            base: self
                .channel
                .api_url
                .as_deref()
                .unwrap_or(slack::web::SLACK_API),
            token: self
                .channel
                .read_token
                .as_ref()
                .map(|t| t.expose())
                .unwrap_or_default(),
            timeout,
        }
    }
}

/// The request's body once its signature is checked and not seen before.
pub(super) async fn signed(
    req: &HttpRequest,
    payload: web::Payload,
    state: &web::Data<AppState>,
    what: &str,
) -> Result<(SlackApp, web::Bytes), ApiError> {
    let body =
        crate::http::extract::read_body(payload, MAX_BODY, "256 KiB for a Slack request").await?;
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (timestamp, signature) = (
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
    );
    let apps: Vec<ChannelSettings> = state
        .env()
        .connections
        .channels
        .iter()
        .filter(|c| c.kind == ChatKind::Slack && c.signing_secret.is_some())
        .cloned()
        .collect();
    let secrets: Vec<&str> = apps
        .iter()
        .filter_map(|c| c.signing_secret.as_ref().map(|s| s.expose()))
        .collect();
    let now = crate::domain::clock::now().timestamp();
    let found = slack::verify(
        &secrets,
        timestamp.as_deref(),
        signature.as_deref(),
        &body,
        now,
    );
    let index = match found {
        Ok(i) => i,
        Err(e) => {
            state
                .metrics
                .chat_move(Platform::Slack.as_str(), what, "unsigned");
            return Err(ApiError::Unauthorized(e.to_string()));
        }
    };
    // The request itself, not how its signature's hex is written: a replay in capitals
    // is the same request.
    let key = {
        use sha2::Digest;
        let mut digest = sha2::Sha256::new();
        digest.update(timestamp.unwrap_or_default().as_bytes());
        digest.update(b":");
        digest.update(&body);
        format!("sig:{}", hex::encode(digest.finalize()))
    };
    let fresh = with_write(state, move |conn, _| {
        Ok(from_chat::fresh(
            conn,
            Platform::Slack,
            &key,
            crate::db::now(),
        )?)
    })
    .await?;
    if !fresh {
        state
            .metrics
            .chat_move(Platform::Slack.as_str(), what, "replayed");
        return Err(ApiError::Unauthorized(
            "this request was taken before: a replay is refused".to_owned(),
        ));
    }
    Ok((
        SlackApp {
            channel: apps[index].clone(),
        },
        body,
    ))
}

/// Who Slack user `user` is in coe.
pub(super) enum Known {
    Person(Acting),
    /// Not a person of coe's (not in the directory, no email in Slack), or Slack could not
    /// be asked: what `/metrics` counts, and what to tell them.
    Nobody {
        outcome: &'static str,
        said: String,
    },
}

pub(super) async fn who(
    state: &web::Data<AppState>,
    app: &SlackApp,
    user: &str,
) -> Result<Known, ApiError> {
    let email = email_of(app, user).await?;
    let nobody = |outcome, said: String| Ok(Known::Nobody { outcome, said });
    let email = match email {
        Ok(Some(email)) => email,
        Ok(None) => {
            return nobody(
                "not_in_directory",
                "coe knows people by the email address of their Slack profile, and yours has \
                 none coe can read: ask an admin of coe."
                    .to_owned(),
            )
        }
        Err(e) => {
            return nobody(
                "failed",
                format!("coe could not ask Slack who you are ({e}): try again in a minute."),
            )
        }
    };
    let shown = email.clone();
    let person = with_conn(state, move |conn, _| Ok(from_chat::person(conn, &email)?)).await?;
    match person {
        Some(acting) => Ok(Known::Person(acting)),
        None => nobody(
            "not_in_directory",
            format!(
                "You are not in coe's directory as {}: ask an admin of coe to add you, then try \
                 again. Nothing was changed.",
                slack::blocks::escape(&shown)
            ),
        ),
    }
}

/// A private answer to the person who typed the command or pressed the button.
pub(super) fn privately(message: Value) -> HttpResponse {
    let mut message = message;
    message["response_type"] = json!("ephemeral");
    HttpResponse::Ok().json(message)
}

/// Slack's "received" with nothing to show.
pub(super) fn nothing() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// Answers through `response_url` after the request's answer, with no pooled
/// connection held: `message` replaces the message a button was on, or (`replace`
/// false) is added below it, for the presser alone unless it says `in_channel`. A
/// failure is logged: the move itself is made.
pub(super) fn tell_later(response_url: Option<String>, message: Value, replace: bool) {
    let Some(url) = response_url else {
        return;
    };
    let mut message = message;
    message["replace_original"] = json!(replace);
    if !replace && message.get("response_type").is_none() {
        message["response_type"] = json!("ephemeral");
    }
    actix_web::rt::spawn(async move {
        let sent =
            web::block(move || slack::web::respond(&url, &message, Duration::from_secs(10))).await;
        if let Ok(Err(e)) = sent {
            tracing::warn!(error = %e, "a Slack message could not be changed");
        }
    });
}
