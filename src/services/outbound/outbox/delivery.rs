//! Delivering the outbox: email as a channel of the one delivery queue
//! (`outbound::queue`), which claims one due row at a time under a lease, sends it
//! with no transaction open (and, from the pool, no connection held:
//! `deliver_pooled`), and settles the outcome only while the lease is still ours.
//! This file says which emails are due, how one is built and sent by SMTP, and what
//! an SMTP answer means.

use std::sync::atomic::AtomicBool;

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::Message;

use super::{PRIVATE_LINK, SENDING};
use crate::db::models::OutboxRow;
use crate::db::{self, DbConnection, DbPool};
use crate::email::{clean_line, SendError, Transport};
use crate::services::outbound::queue::{
    self, backoff, due, Channel, Claim, DeliveryError, Flow, Pooled, Queue, Report, Settled,
};
use crate::services::Env;

/// What one delivery pass did (`queue::Report`: the emails refused for good,
/// deferred for now, or waiting for a server that could not be reached).
pub type DeliveryReport = Report;

/// Claims due emails for `claimant` (`Settings::replica_name`) under a lease of
/// `lease` (`queue::due!`, `Queue::take`): pending ones whose time has come, and
/// sending ones whose lease expired or whose replica went silent. Each claim counts as
/// an attempt. Delivery claims one at a time, so that a worker that dies holds only
/// the email it was sending.
pub fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    lease: Duration,
    limit: i64,
    claimant: &str,
) -> QueryResult<Vec<OutboxRow>> {
    db::write_transaction(conn, |conn| {
        let mut rows: Vec<OutboxRow> =
            due!(conn, outbox_emails, now, limit, OutboxRow::as_select())?;
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let until = now + lease;
        Queue::Email.take(conn, &ids, now, until, claimant)?;
        for row in &mut rows {
            row.state = SENDING.into();
            row.lease_until = Some(until);
            row.claimed_by = Some(claimant.to_owned());
            row.attempts += 1;
        }
        Ok(rows)
    })
}

/// Gives back the emails `claimant`'s earlier process was sending when it stopped
/// (`Queue::reclaim`): an email the SMTP server had taken just before the crash is
/// sent again, with the same Message-ID. Returns how many.
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    Queue::Email.reclaim(conn, claimant, now)
}

/// What a message says where its private link was, should the link be gone (an email
/// sent or dropped cannot be sent again, so this is not expected).
const LINK_GONE: &str = "(this link is no longer kept: ask for a new one)";

/// Builds the message of a row: From the settings, a Message-ID made of the row's id,
/// its private link (a sign-in link) put back in place of `PRIVATE_LINK` in the text
/// and (HTML-escaped, as the template would have) in the HTML.
pub fn message(row: &OutboxRow, env: Env<'_>) -> Result<Message, SendError> {
    let settings = env.settings;
    let from: Mailbox = settings
        .email
        .from
        .parse()
        .map_err(|e| SendError::Permanent(format!("email.from: {e}")))?;
    let address = row
        .recipient
        .parse::<lettre::Address>()
        .map_err(|e| SendError::Permanent(format!("invalid recipient {:?}: {e}", row.recipient)))?;
    let name = row
        .recipient_name
        .as_deref()
        .map(clean_line)
        .filter(|n| !n.is_empty());
    let domain = from.email.domain().to_owned();
    let mut builder = Message::builder()
        .from(from)
        .to(Mailbox::new(name, address))
        .subject(clean_line(&row.subject))
        .message_id(Some(format!("<{}.{}@{domain}>", row.id, row.kind)))
        // RFC 3834: sent by a program, so out-of-office replies stay away (and
        // Exchange's, which reads its own header).
        .raw_header(header("Auto-Submitted", "auto-generated"))
        .raw_header(header("X-Auto-Response-Suppress", "All"));
    if let Some(reply_to) = &settings.email.reply_to {
        let reply_to: Mailbox = reply_to
            .parse()
            .map_err(|e| SendError::Permanent(format!("email.reply_to: {e}")))?;
        builder = builder.reply_to(reply_to);
    }
    if let Some(token) = &row.unsubscribe_token {
        // RFC 2369 and RFC 8058: the list is coe's reminders to this organisation; the
        // link opens the person's notification settings, and a POST to it with
        // `List-Unsubscribe=One-Click` unsubscribes without a page.
        let link = format!(
            "{}/notifications/{token}",
            settings.public_url.trim_end_matches('/')
        );
        builder = builder
            .raw_header(header(
                "List-Id",
                &format!("coe reminders <reminders.{domain}>"),
            ))
            .raw_header(header("List-Unsubscribe", &format!("<{link}>")))
            .raw_header(header(
                "List-Unsubscribe-Post",
                "List-Unsubscribe=One-Click",
            ));
    }
    let (text, html) = match row.private_link.as_deref() {
        Some(link) => (
            row.body_text.replace(PRIVATE_LINK, link),
            row.body_html
                .replace(PRIVATE_LINK, &handlebars::html_escape(link)),
        ),
        None => (
            row.body_text.replace(PRIVATE_LINK, LINK_GONE),
            row.body_html.replace(PRIVATE_LINK, LINK_GONE),
        ),
    };
    let mut parts = MultiPart::alternative()
        .singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_PLAIN)
                .body(text),
        )
        .singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_HTML)
                .body(html),
        );
    // An invitation: its iCalendar part last, the one calendars read (RFC 6047), with
    // the method of the calendar in it (REQUEST, or CANCEL).
    if let Some(calendar) = &row.calendar {
        let method = if calendar.contains("\r\nMETHOD:CANCEL\r\n") {
            "CANCEL"
        } else {
            "REQUEST"
        };
        let kind = ContentType::parse(&format!("text/calendar; charset=utf-8; method={method}"))
            .map_err(|e| SendError::Permanent(format!("cannot build the message: {e}")))?;
        parts = parts.singlepart(SinglePart::builder().header(kind).body(calendar.clone()));
    }
    builder
        .multipart(parts)
        .map_err(|e| SendError::Permanent(format!("cannot build the message: {e}")))
}

/// A header lettre has no type for.
fn header(name: &'static str, value: &str) -> HeaderValue {
    HeaderValue::new(HeaderName::new_from_ascii_str(name), value.to_owned())
}

/// One delivery pass for `claimant` (`queue::pass`) on a connection of the caller's
/// own, held for the pass (`coe sweep`'s, from a pool of its own): the delivery job
/// uses `deliver_pooled`.
pub fn deliver(
    conn: &mut DbConnection,
    transport: &Transport,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> QueryResult<DeliveryReport> {
    queue::pass(conn, &mut Emails { transport, env }, env, claimant, stop)
}

/// `deliver` on connections from `pool`, none of them held while the SMTP server
/// answers (it may take `SMTP_TIMEOUT`).
pub fn deliver_pooled(
    pool: &DbPool,
    transport: &Transport,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<DeliveryReport, DeliveryError> {
    queue::pass(
        Pooled(pool),
        &mut Emails { transport, env },
        env,
        claimant,
        stop,
    )
}

/// Email as a channel of the queue: one row claimed at a time, sent by SMTP; a
/// server that cannot be reached ends the pass.
struct Emails<'a> {
    transport: &'a Transport,
    env: Env<'a>,
}

impl Channel for Emails<'_> {
    type Job = OutboxRow;
    type Sent = Result<(), SendError>;

    fn begin(&mut self, conn: &mut DbConnection) -> QueryResult<bool> {
        super::fold_counts(conn)?;
        Ok(true)
    }

    fn claim(
        &mut self,
        conn: &mut DbConnection,
        now: NaiveDateTime,
        until: NaiveDateTime,
        claimant: &str,
    ) -> QueryResult<Option<OutboxRow>> {
        Ok(claim(conn, now, until - now, 1, claimant)?.pop())
    }

    fn send(&mut self, row: &mut OutboxRow) -> Result<(), SendError> {
        message(row, self.env).and_then(|m| self.transport.send(&m))
    }

    fn record(
        &mut self,
        conn: &mut DbConnection,
        row: &OutboxRow,
        outcome: Result<(), SendError>,
        report: &mut Report,
    ) -> QueryResult<Flow> {
        match &outcome {
            Ok(()) => report.sent += 1,
            Err(SendError::Permanent(_)) => {
                report.failed += 1;
                report.rejected += 1;
            }
            Err(SendError::Transient(_)) => {
                report.temporary += 1;
                if row.attempts >= self.env.settings.reminders.max_attempts {
                    report.failed += 1;
                } else {
                    report.deferred += 1;
                }
            }
            Err(SendError::Unreachable(_)) => {
                report.deferred += 1;
                report.unreachable += 1;
            }
        }
        record(conn, row, &outcome, self.env, db::now())?;
        // The server is down: the rest waits for the next pass.
        Ok(match outcome {
            Err(SendError::Unreachable(_)) => Flow::Stop,
            _ => Flow::Next,
        })
    }
}

/// Writes the outcome of one attempt, only while this worker still holds the email
/// (the lease it set is its claim).
pub(super) fn record(
    conn: &mut DbConnection,
    row: &OutboxRow,
    outcome: &Result<(), SendError>,
    env: Env<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let settings = env.settings;
    let Some(until) = row.lease_until else {
        return Ok(());
    };
    let claim = Claim {
        id: row.id.clone(),
        until,
        attempts: row.attempts,
    };
    let message: String;
    let settled = match outcome {
        Ok(()) => {
            tracing::info!(email = %row.id, kind = %row.kind, to = %row.recipient, "email sent");
            Settled::sent(now)
        }
        Err(error) => {
            let give_up = match error {
                SendError::Permanent(_) => true,
                SendError::Transient(_) => row.attempts >= settings.reminders.max_attempts,
                // Never give up on a server that is down: nothing may be lost.
                SendError::Unreachable(_) => false,
            };
            message = error.to_string().chars().take(2000).collect();
            if give_up {
                tracing::error!(email = %row.id, kind = %row.kind, to = %row.recipient, error = %message, "email failed for good");
                Settled::failed(&message, now)
            } else {
                let next = now + backoff(env, row.attempts);
                tracing::warn!(email = %row.id, to = %row.recipient, error = %message, retry_at = %next, "email deferred");
                let again = Settled::again(next, Some(&message));
                // An unreachable server uses no attempt up: emails wait for it.
                match error {
                    SendError::Unreachable(_) => again.uncounted(),
                    _ => again,
                }
            }
        }
    };
    db::write_transaction(conn, |conn| {
        Queue::Email.settle(conn, &claim, &settled, now)?;
        Ok(())
    })
}
