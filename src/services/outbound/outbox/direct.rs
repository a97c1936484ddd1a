//! Direct messages in Slack: what needs a person (an action given to them, a review
//! asked, a verdict, verifications waiting, overdue actions) reaches them in Slack
//! when they chose it (`domain::notifications::Reach`), from the Slack app
//! (`ChannelSettings::signing_secret`, its bot token). Each is a row of
//! `chat_messages` on the channel `CHANNEL`, queued beside its email in the same
//! transaction (`outbox::enqueue`), delivered by the chat delivery like any notice: the
//! person found by their email (`users.lookupByEmail`), then `chat.postMessage`. When
//! it is to reach them in Slack instead of by email, the email waits
//! (`Reach::EMAIL_FALLBACK_MINUTES`) and is dropped once the message is delivered;
//! undelivered, the email goes.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde_json::{json, Value};

use super::{NewEmail, DROPPED, PENDING};
use crate::chat::slack;
use crate::chat::Sent;
use crate::config::{ChannelSettings, ChatKind};
use crate::db::schema::{chat_messages, outbox_emails};
use crate::db::{self, DbConnection};
use crate::domain::notifications::Reach;
use crate::services::Env;

/// The channel name direct messages are queued on (no channel of the settings has a
/// `:` in its name).
pub const CHANNEL: &str = "slack:direct";

/// The event they are stored as.
const EVENT: &str = "direct";

/// The Slack app coe works as: the first Slack channel with a signing secret and a
/// bot token.
pub fn app<'a>(env: Env<'a>) -> Option<&'a ChannelSettings> {
    env.connections
        .channels
        .iter()
        .find(|c| c.kind == ChatKind::Slack && c.signing_secret.is_some() && c.read_token.is_some())
}

/// Whether `email` goes to its recipient in Slack as well (`reach`): a kind that may
/// (`slack::direct::goes_direct`) made from its template's data.
pub fn wanted(email: &NewEmail, reach: Reach) -> bool {
    reach.in_chat() && slack::direct::goes_direct(email.kind) && email.data.is_object()
}

/// When `email` is sent: at once, or after the wait for its Slack message when it
/// goes in Slack instead (`wanted` and `Reach::Chat`).
pub fn email_due(email: &NewEmail, reach: Reach, now: NaiveDateTime) -> NaiveDateTime {
    if reach == Reach::Chat && wanted(email, reach) {
        now + Duration::minutes(Reach::EMAIL_FALLBACK_MINUTES)
    } else {
        now
    }
}

/// Queues the Slack message of `email` (`wanted`), once per email.
pub fn queue(
    conn: &mut DbConnection,
    email: &NewEmail,
    reach: Reach,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let Some(message) = slack::direct::message(email.kind, &email.subject, &email.data) else {
        return Ok(());
    };
    let body = json!({
        "to": email.recipient,
        "email_key": email.dedup_key,
        "instead": reach == Reach::Chat,
        "message": message,
    });
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(chat_messages::table).values((
            chat_messages::id.eq(db::new_id()),
            chat_messages::channel.eq(CHANNEL),
            chat_messages::event.eq(EVENT),
            chat_messages::dedup_key.eq(format!("{CHANNEL}:{}", email.dedup_key)),
            chat_messages::body.eq(body.to_string()),
            chat_messages::state.eq(PENDING),
            chat_messages::attempts.eq(0),
            chat_messages::next_attempt_at.eq(now),
            chat_messages::created_at.eq(now),
            chat_messages::updated_at.eq(now),
        )),
        chat_messages::dedup_key
    )?;
    Ok(())
}

/// Sends one direct message with the Slack app: the person by their email, then the
/// message. No Slack user with that email, or no app: refused (the email goes).
pub fn send(env: Env<'_>, body: &Value, timeout: std::time::Duration) -> Sent {
    let Some(app) = app(env) else {
        return Sent::Refused("no Slack app is set up any more".to_owned());
    };
    let api = slack::web::Api {
        base: app.api_url.as_deref().unwrap_or(slack::web::SLACK_API),
        token: app
            .read_token
            .as_ref()
            .map(|t| t.expose())
            .unwrap_or_default(),
        timeout,
    };
    let to = body["to"].as_str().unwrap_or_default();
    let sent = api.user_by_email(to).and_then(|user| match user {
        Some(user) => api.post_message(&user, &body["message"]).map(|_| true),
        None => Ok(false),
    });
    match sent {
        Ok(true) => Sent::Delivered,
        Ok(false) => Sent::Refused(format!("no Slack user has the email address {to}")),
        Err(failed) => failed.into(),
    }
}

/// The email a direct message stands in for (`instead`): its key and recipient.
fn email_waiting(body: &Value) -> Option<(&str, &str)> {
    if body["instead"] != true {
        return None;
    }
    Some((body["email_key"].as_str()?, body["to"].as_str()?))
}

/// A direct message that will not be delivered (refused, failed for good, no Slack app
/// any more): the email waiting for it (`instead`) goes now.
pub fn undelivered(conn: &mut DbConnection, body: &Value, now: NaiveDateTime) -> QueryResult<()> {
    let Some((key, to)) = email_waiting(body) else {
        return Ok(());
    };
    diesel::update(
        outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .filter(outbox_emails::recipient.eq(to))
            .filter(outbox_emails::state.eq(PENDING))
            .filter(outbox_emails::next_attempt_at.gt(now)),
    )
    .set((
        outbox_emails::next_attempt_at.eq(now),
        outbox_emails::updated_at.eq(now),
    ))
    .execute(conn)
    .map(|_| ())
}

/// With no Slack app set up (removed since they were queued), the direct messages
/// waiting fail and their emails go now. Returns how many.
pub fn without_app(conn: &mut DbConnection, now: NaiveDateTime) -> QueryResult<usize> {
    // Read first: a chat pass with none waiting (nearly every one) writes nothing.
    let any: bool = diesel::select(diesel::dsl::exists(
        chat_messages::table
            .filter(chat_messages::channel.eq(CHANNEL))
            .filter(chat_messages::state.eq(PENDING)),
    ))
    .get_result(conn)?;
    if !any {
        return Ok(0);
    }
    db::write_transaction(conn, |conn| {
        let waiting: Vec<(String, String)> = chat_messages::table
            .filter(chat_messages::channel.eq(CHANNEL))
            .filter(chat_messages::state.eq(PENDING))
            .select((chat_messages::id, chat_messages::body))
            .load(conn)?;
        for (id, body) in &waiting {
            let body: Value = serde_json::from_str(body).unwrap_or_default();
            undelivered(conn, &body, now)?;
            diesel::update(chat_messages::table.find(id))
                .set((
                    chat_messages::state.eq(super::FAILED),
                    chat_messages::last_error.eq("no Slack app is set up any more"),
                    chat_messages::updated_at.eq(now),
                ))
                .execute(conn)?;
        }
        Ok(waiting.len())
    })
}

/// A direct message delivered: the email waiting for it (`instead`) is not sent.
pub fn delivered(conn: &mut DbConnection, body: &Value, now: NaiveDateTime) -> QueryResult<()> {
    let Some((key, to)) = email_waiting(body) else {
        return Ok(());
    };
    diesel::update(
        outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .filter(outbox_emails::recipient.eq(to))
            .filter(outbox_emails::state.eq(PENDING)),
    )
    .set((
        outbox_emails::state.eq(DROPPED),
        outbox_emails::last_error.eq("delivered as a direct message in Slack instead"),
        outbox_emails::updated_at.eq(now),
    ))
    .execute(conn)
    .map(|_| ())
}
