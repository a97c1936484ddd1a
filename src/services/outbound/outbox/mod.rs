//! The email outbox: every email is a row first, written in the transaction that
//! decided to send it; a delivery pass claims due rows (a lease, with `SKIP LOCKED` on
//! PostgreSQL), sends them with no transaction open, and records each outcome.
//!
//! A crash between sending and recording leaves the row `sending` until its lease
//! expires; then it is sent again. So an email may at worst go out twice (its
//! Message-ID, derived from the row, shows it), and is never lost.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use crate::db::models::OutboxRow;
use crate::db::schema::{outbox_emails, people};
use crate::db::{self, DbConnection};
use crate::domain::notifications::Class;
use crate::email::{clean_line, EmailTemplates, Kind, TemplateError};
use crate::services::directory::notifications;

mod delivery;
pub mod direct;
mod listing;
pub mod restored;

pub use crate::services::outbound::queue::{backoff, DeliveryError};
pub use delivery::{claim, deliver, deliver_pooled, message, reclaim, DeliveryReport};
pub use listing::{get, list, retry, OutboxEmail, RetryError};

pub use crate::services::outbound::queue::{FAILED, PENDING, SENDING, SENT};
/// Being sent, or waiting to be, when the backup a restore put back was taken
/// (`restored`): sent only when an admin says so.
pub const HELD: &str = "held";
/// Held, and an admin chose not to send it.
pub const DROPPED: &str = "dropped";
pub const STATES: [&str; 6] = [PENDING, SENDING, SENT, FAILED, HELD, DROPPED];

/// What a stored email says where its private link goes (a sign-in link): plain ASCII
/// that HTML-escaping leaves as it is, so that it stands in the text and the HTML
/// alike. The link itself is kept apart (`outbox_emails.private_link`), put in its
/// place only in the message handed to the SMTP server (`message`), and forgotten
/// once the email is sent or dropped: nobody reads it in the outbox.
pub const PRIVATE_LINK: &str = "[[coe:private-link]]";

/// What an admin reads in place of a sign-in link.
pub const SIGN_IN_LINK_SHOWN: &str = "[the sign-in link: sent to the recipient only, never shown]";

/// What an admin reads in place of any other private link.
pub const PRIVATE_LINK_SHOWN: &str = "[a private link: sent to the recipient only, never shown]";

/// A stored email's text as an admin may read it: its private link (and any sign-in
/// link written out in full, as emails queued before links were kept apart were,
/// or a backup of that time holds) replaced by words saying that one was sent.
pub fn readable(kind: &str, text: &str) -> String {
    let words = if kind == Kind::SignIn.name() {
        SIGN_IN_LINK_SHOWN
    } else {
        PRIVATE_LINK_SHOWN
    };
    let text = text.replace(PRIVATE_LINK, words);
    if !text.contains(SIGN_IN_PATH) {
        return text;
    }
    text.split_inclusive(char::is_whitespace)
        .map(|piece| {
            let word = piece.trim_end_matches(char::is_whitespace);
            if word.contains(SIGN_IN_PATH) {
                format!("{SIGN_IN_LINK_SHOWN}{}", &piece[word.len()..])
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

/// The path every sign-in link takes (the sign-in service's `send_link` writes it).
const SIGN_IN_PATH: &str = "/sign-in/confirm?token=";

/// An email decided on, rendered, not yet queued.
#[derive(Debug, Clone, Serialize)]
pub struct NewEmail {
    pub kind: Kind,
    pub dedup_key: String,
    pub recipient: String,
    pub recipient_name: Option<String>,
    pub subject: String,
    #[serde(skip)]
    pub text: String,
    #[serde(skip)]
    pub html: String,
    /// What its template was given: a direct message in Slack is made from it
    /// (`chat::direct`); `Null` for an email made otherwise.
    #[serde(skip)]
    pub data: serde_json::Value,
    /// An iCalendar part to carry (`text/calendar`), when it is an invitation.
    #[serde(skip)]
    pub calendar: Option<String>,
}

/// Renders `kind` for `recipient`; the greeting uses `name` (from the directory).
pub fn compose(
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    name: Option<&str>,
    mut data: serde_json::Value,
) -> Result<NewEmail, TemplateError> {
    let name = name.map(clean_line).filter(|n| !n.is_empty());
    if let serde_json::Value::Object(map) = &mut data {
        map.insert(
            "recipient_name".into(),
            serde_json::Value::String(name.clone().unwrap_or_default()),
        );
    }
    let rendered = templates.render(kind, &data)?;
    Ok(NewEmail {
        kind,
        dedup_key,
        recipient: recipient.to_owned(),
        recipient_name: name,
        subject: rendered.subject,
        text: rendered.text,
        html: rendered.html,
        data,
        calendar: None,
    })
}

/// Queues `email` unless one with its deduplication key exists, or it is a notice its
/// recipient's notification settings leave out (`domain::notifications`; the sweep
/// holds reminders and digests itself, at the time it decides for). Returns whether
/// it was queued. Call it inside the transaction that made the decision.
pub fn enqueue(conn: &mut DbConnection, email: &NewEmail, now: NaiveDateTime) -> QueryResult<bool> {
    queue(conn, email, None, now)
}

/// Queues `email` as `enqueue` does; its text and HTML say `PRIVATE_LINK` where `link`
/// goes (a sign-in link: the template's data had the placeholder). The link is kept
/// apart from them, never shown, put in place only in the message sent, and forgotten
/// once the email is sent or dropped.
pub fn enqueue_with_private_link(
    conn: &mut DbConnection,
    email: &NewEmail,
    link: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    queue(conn, email, Some(link), now)
}

fn queue(
    conn: &mut DbConnection,
    email: &NewEmail,
    private_link: Option<&str>,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let class = email.kind.class();
    let choice = notifications::choice(conn, &email.recipient)?;
    if class == Class::Notice && !choice.allows(class, now) {
        return Ok(false);
    }
    // Reminders and digests carry a link that unsubscribes in one click (RFC 8058),
    // made only for an email not queued already.
    let unsubscribe_token = match class {
        Class::Digest => {
            let queued: bool = diesel::select(diesel::dsl::exists(
                outbox_emails::table.filter(outbox_emails::dedup_key.eq(&email.dedup_key)),
            ))
            .get_result(conn)?;
            if queued {
                return Ok(false);
            }
            Some(notifications::new_link(conn, &email.recipient, now)?)
        }
        Class::Essential | Class::Notice => None,
    };
    let row = OutboxRow {
        id: db::new_id(),
        kind: email.kind.name().to_owned(),
        dedup_key: email.dedup_key.clone(),
        recipient: email.recipient.clone(),
        recipient_name: email.recipient_name.clone(),
        subject: email.subject.clone(),
        body_text: email.text.clone(),
        body_html: email.html.clone(),
        state: PENDING.into(),
        attempts: 0,
        next_attempt_at: direct::email_due(email, choice.reach, now),
        lease_until: None,
        last_error: None,
        created_at: now,
        updated_at: now,
        sent_at: None,
        claimed_by: None,
        unsubscribe_token,
        private_link: private_link.map(str::to_owned),
        calendar: email.calendar.clone(),
    };
    let inserted = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(outbox_emails::table).values(&row),
        outbox_emails::dedup_key
    )?;
    if inserted == 1 {
        QUEUED_HERE.with(|q| q.set(true));
        // In Slack too, when the person chose it.
        if direct::wanted(email, choice.reach) {
            direct::queue(conn, email, choice.reach, now)?;
        }
    }
    Ok(inserted == 1)
}

thread_local! {
    /// Set when this thread queued an email: whoever called the service rings the
    /// delivery job's bell afterwards (`DeliveryWaker::wake_if_queued`).
    static QUEUED_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wakes the delivery job when an email was queued, so that it leaves at once
/// instead of at the next pass (`reminders.delivery_interval_secs`): a sign-in link
/// reaches the SMTP server within a second. Connected to the delivery job when it
/// starts (`jobs::serve`); until then (and with `reminders.enabled = false`) ringing
/// does nothing.
#[derive(Clone, Default)]
pub struct DeliveryWaker(std::sync::Arc<std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>>);

impl DeliveryWaker {
    /// Gives the bell the delivery job's wake-up channel.
    pub fn connect(&self, worker: std::sync::mpsc::Sender<()>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(worker);
    }

    /// Rings if this thread queued an email since it last asked (and forgets it).
    pub fn wake_if_queued(&self) {
        if QUEUED_HERE.with(|q| q.replace(false)) {
            if let Some(worker) = self.0.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                let _ = worker.send(());
            }
        }
    }
}

/// Composes and queues one event email (COE opened, review steps). A template that
/// fails is logged and the email skipped: it must not undo the change that caused it.
pub fn notify(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    data: serde_json::Value,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if let Some(email) = composed(conn, templates, kind, dedup_key, recipient, data)? {
        enqueue(conn, &email, now)?;
    }
    Ok(())
}

/// Queues `kind` for `recipient` carrying the iCalendar part `calendar` (an
/// invitation), in the caller's transaction.
#[allow(clippy::too_many_arguments)]
pub fn notify_with_calendar(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    data: serde_json::Value,
    calendar: String,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if let Some(mut email) = composed(conn, templates, kind, dedup_key, recipient, data)? {
        email.calendar = Some(calendar);
        enqueue(conn, &email, now)?;
    }
    Ok(())
}

/// Composes one event email to `recipient` (named as the directory names them), to be
/// queued by `enqueue`: composed before a write, it is queued inside it. `None` when a
/// template fails (logged: it must not undo the change that caused it).
pub fn composed(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    data: serde_json::Value,
) -> QueryResult<Option<NewEmail>> {
    let name: Option<String> = people::table
        .find(recipient)
        .select(people::name)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    Ok(
        match compose(templates, kind, dedup_key, recipient, name.as_deref(), data) {
            Ok(email) => Some(email),
            Err(e) => {
                tracing::error!(error = %e, kind = kind.name(), "cannot render an email; it is not sent");
                None
            }
        },
    )
}

/// The day of the latest email of `kind` to each recipient on or before `up_to`, read from the
/// deduplication keys (`kind:YYYY-MM-DD:recipient`; ISO dates sort as text, so the
/// greatest key is the latest). Sent emails are kept `reminders.keep_sent_days`,
/// longer than any period, so the memory outlives every cadence.
pub fn last_sent(
    conn: &mut DbConnection,
    kind: Kind,
    up_to: chrono::NaiveDate,
) -> QueryResult<std::collections::HashMap<String, chrono::NaiveDate>> {
    // Keys are `kind:YYYY-MM-DD:recipient`: those of days after `up_to` sort after
    // `kind:<the next day>:` (ISO dates sort as they count).
    let after = format!("{}:{}:", kind.name(), up_to + chrono::Duration::days(1));
    let rows: Vec<(String, Option<String>)> = outbox_emails::table
        .filter(outbox_emails::kind.eq(kind.name()))
        .filter(outbox_emails::dedup_key.lt(after))
        .group_by(outbox_emails::recipient)
        .select((
            outbox_emails::recipient,
            diesel::dsl::max(outbox_emails::dedup_key),
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(recipient, key)| {
            let day = key?.split(':').nth(1)?.parse().ok()?;
            Some((recipient, day))
        })
        .collect())
}

/// Which of `keys` are in the outbox already: the sweep skips rendering these. Exact
/// matches on the unique index, 1,000 keys per query (no collation can change them).
pub fn existing_keys(
    conn: &mut DbConnection,
    keys: &[&str],
) -> QueryResult<std::collections::HashSet<String>> {
    let mut existing = std::collections::HashSet::new();
    for chunk in keys.chunks(1000) {
        existing.extend(
            outbox_emails::table
                .filter(outbox_emails::dedup_key.eq_any(chunk))
                .select(outbox_emails::dedup_key)
                .load::<String>(conn)?,
        );
    }
    Ok(existing)
}

/// Deletes emails sent (or dropped) before `before`; returns how many. Failed, held
/// and pending emails stay. Their deduplication keys go with them, so `before` must be
/// older than the longest reminder period (the settings check it).
pub fn purge_sent(conn: &mut DbConnection, before: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        let sent = diesel::delete(
            outbox_emails::table
                .filter(outbox_emails::state.eq(SENT))
                .filter(outbox_emails::sent_at.lt(before)),
        )
        .execute(conn)?;
        let dropped = diesel::delete(
            outbox_emails::table
                .filter(outbox_emails::state.eq(DROPPED))
                .filter(outbox_emails::updated_at.lt(before)),
        )
        .execute(conn)?;
        Ok(sent + dropped)
    })
}

/// Emails by state (every state present, zero included): the counts the outbox's
/// writes keep (migration 000036), with their changes not yet folded in.
pub fn counts(conn: &mut DbConnection) -> QueryResult<BTreeMap<String, i64>> {
    let mut counts: BTreeMap<String, i64> = STATES.iter().map(|s| ((*s).to_owned(), 0)).collect();
    counts.extend(db::outbox_counts::read(conn)?);
    Ok(counts)
}

/// Folds the changes PostgreSQL's triggers appended to the counts
/// (`db::outbox_counts::fold`); on SQLite the writes keep the counts themselves.
pub fn fold_counts(conn: &mut DbConnection) -> QueryResult<()> {
    db::outbox_counts::fold(conn)
}

#[cfg(test)]
mod tests;
