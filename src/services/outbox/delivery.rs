//! Delivering the outbox: claim one due row at a time under a lease and the replica's
//! name, send it with no transaction open (and, from the pool, no connection held:
//! `deliver_pooled`), and record the outcome only while the lease is still ours. A
//! replica that starts again gives back what it held when it died (`reclaim`); a
//! replica that never comes back leaves one email to its lease.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::Message;
use serde::Serialize;

use super::{FAILED, PENDING, PRIVATE_LINK, SENDING, SENT};
use crate::config::Settings;
use crate::db::models::OutboxRow;
use crate::db::schema::outbox_emails;
use crate::db::{self, DbConnection, DbPool};
use crate::email::{clean_line, SendError, Transport};

/// What one delivery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeliveryReport {
    pub sent: usize,
    /// Transient failures, to be retried later.
    pub deferred: usize,
    /// Permanent failures (or attempts used up), now `failed`.
    pub failed: usize,
    /// The attempts that failed, by why: the server refused the message for good
    /// (5xx, an invalid address), for now (4xx), or could not be reached.
    pub rejected: usize,
    pub temporary: usize,
    pub unreachable: usize,
}

/// Claims due emails for `claimant` (`Settings::replica_name`): pending ones whose
/// time has come, and `sending` ones whose lease expired (their worker died). Each
/// claim counts as an attempt. Delivery claims one at a time, so that a worker that
/// dies holds only the email it was sending.
pub fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    lease: Duration,
    limit: i64,
    claimant: &str,
) -> QueryResult<Vec<OutboxRow>> {
    db::write_transaction(conn, |conn| {
        // Replicas claim different rows instead of waiting for each other. Two queries,
        // each on the index `(state, next_attempt_at)`: one with an `OR` of the two
        // states reads and sorts the whole outbox, for every email claimed.
        // Those whose claim ran out, or whose replica has gone silent (it stopped, or
        // came back under another name), first: they waited longest.
        let silent = crate::services::replicas::all_silent(conn, now)?;
        let mut rows: Vec<OutboxRow> = crate::load_skip_locked!(
            conn,
            outbox_emails::table
                .filter(outbox_emails::state.eq(SENDING))
                .filter(
                    outbox_emails::lease_until
                        .lt(now)
                        .or(outbox_emails::claimed_by.eq_any(&silent)),
                )
                .order((
                    outbox_emails::next_attempt_at.asc(),
                    outbox_emails::id.asc(),
                ))
                .limit(limit)
                .select(OutboxRow::as_select())
        )?;
        let more = limit - i64::try_from(rows.len()).unwrap_or(limit);
        if more > 0 {
            let due: Vec<OutboxRow> = crate::load_skip_locked!(
                conn,
                outbox_emails::table
                    .filter(outbox_emails::state.eq(PENDING))
                    .filter(outbox_emails::next_attempt_at.le(now))
                    .order((
                        outbox_emails::next_attempt_at.asc(),
                        outbox_emails::id.asc(),
                    ))
                    .limit(more)
                    .select(OutboxRow::as_select())
            )?;
            rows.extend(due);
        }
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let until = now + lease;
        diesel::update(outbox_emails::table.filter(outbox_emails::id.eq_any(&ids)))
            .set((
                outbox_emails::state.eq(SENDING),
                outbox_emails::lease_until.eq(until),
                outbox_emails::claimed_by.eq(claimant),
                outbox_emails::attempts.eq(outbox_emails::attempts + 1),
                outbox_emails::updated_at.eq(now),
            ))
            .execute(conn)?;
        for row in &mut rows {
            row.state = SENDING.into();
            row.lease_until = Some(until);
            row.claimed_by = Some(claimant.to_owned());
            row.attempts += 1;
        }
        Ok(rows)
    })
}

/// Gives back what `claimant`'s earlier process was sending when it stopped (a
/// process that starts holds nothing yet): due now, its attempt not counted. An email
/// the SMTP server had taken just before the crash is sent again (the one duplicate a
/// crash can make, with the same Message-ID). Returns how many.
pub fn reclaim(conn: &mut DbConnection, claimant: &str, now: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::update(
            outbox_emails::table
                .filter(outbox_emails::state.eq(SENDING))
                .filter(outbox_emails::claimed_by.eq(claimant)),
        )
        .set((
            outbox_emails::state.eq(PENDING),
            outbox_emails::lease_until.eq(None::<NaiveDateTime>),
            outbox_emails::claimed_by.eq(None::<String>),
            outbox_emails::next_attempt_at.eq(now),
            outbox_emails::attempts.eq(outbox_emails::attempts - 1),
            outbox_emails::updated_at.eq(now),
        ))
        .execute(conn)
    })
}

/// The delay before attempt `attempts + 1`: the base, doubled per attempt, capped.
pub fn backoff(settings: &Settings, attempts: i32) -> Duration {
    let r = &settings.reminders;
    let exponent = u32::try_from(attempts.saturating_sub(1))
        .unwrap_or(0)
        .min(30);
    let secs = r
        .retry_base_secs
        .saturating_mul(1u64 << exponent)
        .min(r.retry_max_secs);
    Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 1000))
}

/// What a message says where its private link was, should the link be gone (an email
/// sent or dropped cannot be sent again, so this is not expected).
const LINK_GONE: &str = "(this link is no longer kept: ask for a new one)";

/// Builds the message of a row: From the settings, a Message-ID made of the row's id,
/// its private link (a sign-in link) put back in place of `PRIVATE_LINK` in the text
/// and (HTML-escaped, as the template would have) in the HTML.
pub fn message(row: &OutboxRow, settings: &Settings) -> Result<Message, SendError> {
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
    builder
        .multipart(
            MultiPart::alternative()
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_PLAIN)
                        .body(text),
                )
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_HTML)
                        .body(html),
                ),
        )
        .map_err(|e| SendError::Permanent(format!("cannot build the message: {e}")))
}

/// A header lettre has no type for.
fn header(name: &'static str, value: &str) -> HeaderValue {
    HeaderValue::new(HeaderName::new_from_ascii_str(name), value.to_owned())
}

/// Why a delivery pass from the pool stopped early.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// The pool gave no connection in time (`db::checkout` logged why).
    #[error("no database connection")]
    NoConnection,
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

/// Where a delivery pass takes a database connection for each of its steps (a claim,
/// a record).
pub(crate) trait Connections {
    type Error: From<diesel::result::Error>;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> Result<T, Self::Error>;
}

/// A connection the caller holds for the whole pass, and shares with nobody.
impl Connections for &mut DbConnection {
    type Error = diesel::result::Error;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> QueryResult<T> {
        step(self)
    }
}

/// A connection taken from the pool for each step and given back at its end.
pub(crate) struct Pooled<'a>(pub(crate) &'a DbPool);

impl Connections for Pooled<'_> {
    type Error = DeliveryError;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> Result<T, DeliveryError> {
        let mut conn = db::checkout(self.0).map_err(|_| DeliveryError::NoConnection)?;
        Ok(step(&mut conn)?)
    }
}

/// One delivery pass for `claimant` (`Settings::replica_name`): claims the due emails
/// one at a time and sends each, recording its outcome at once (only while the claim is
/// still this worker's). When the server cannot be reached, or `stop` is set, the pass
/// ends; what is left waits for the next. On a connection of the caller's own, held
/// for the pass (`coe sweep`'s, from a pool of its own): the delivery job uses
/// `deliver_pooled`.
pub fn deliver(
    conn: &mut DbConnection,
    transport: &Transport,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> QueryResult<DeliveryReport> {
    pass(conn, transport, settings, claimant, stop)
}

/// `deliver` on connections from `pool`, none of them held while the SMTP server
/// answers (it may take `SMTP_TIMEOUT`): the claim is written and its connection given
/// back, the email sent, and a connection taken again to record the outcome. So a
/// slow or silent SMTP server never takes a connection the requests need.
pub fn deliver_pooled(
    pool: &DbPool,
    transport: &Transport,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<DeliveryReport, DeliveryError> {
    pass(Pooled(pool), transport, settings, claimant, stop)
}

fn pass<C: Connections>(
    mut conns: C,
    transport: &Transport,
    settings: &Settings,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<DeliveryReport, C::Error> {
    let lease = Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600));
    let mut report = DeliveryReport::default();
    conns.with(super::fold_counts)?;
    // One email claimed at a time: a worker that dies holds only the one it was
    // sending. The pass ends when none is due, on a stop, or when the server is down.
    while !stop.load(Ordering::Relaxed) {
        let Some(row) = conns
            .with(|conn| claim(conn, db::now(), lease, 1, claimant))?
            .pop()
        else {
            break;
        };
        // The claim is written and its connection given back: none is held while the
        // SMTP server answers. (Should none come back in time to record the outcome,
        // the claim runs out and the email is sent again: a duplicate, never a loss.)
        let outcome = message(&row, settings).and_then(|m| transport.send(&m));
        let unreachable = matches!(outcome, Err(SendError::Unreachable(_)));
        match &outcome {
            Ok(()) => report.sent += 1,
            Err(SendError::Permanent(_)) => {
                report.failed += 1;
                report.rejected += 1;
            }
            Err(SendError::Transient(_)) => {
                report.temporary += 1;
                if row.attempts >= settings.reminders.max_attempts {
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
        conns.with(|conn| record(conn, &row, &outcome, settings, db::now()))?;
        if unreachable {
            // The server is down: the rest waits for the next pass.
            break;
        }
    }
    Ok(report)
}

/// Writes the outcome of one attempt.
pub(super) fn record(
    conn: &mut DbConnection,
    row: &OutboxRow,
    outcome: &Result<(), SendError>,
    settings: &Settings,
    now: NaiveDateTime,
) -> QueryResult<()> {
    // Only while this worker still holds it: the lease it set is its claim.
    let mine = outbox_emails::table
        .filter(outbox_emails::id.eq(&row.id))
        .filter(outbox_emails::state.eq(SENDING))
        .filter(outbox_emails::lease_until.eq(row.lease_until));
    db::write_transaction(conn, |conn| {
        match outcome {
            Ok(()) => {
                tracing::info!(email = %row.id, kind = %row.kind, to = %row.recipient, "email sent");
                // Its secrets have done their work: no raw link outlives its delivery.
                diesel::update(mine)
                    .set((
                        outbox_emails::state.eq(SENT),
                        outbox_emails::sent_at.eq(now),
                        outbox_emails::lease_until.eq(None::<NaiveDateTime>),
                        outbox_emails::claimed_by.eq(None::<String>),
                        outbox_emails::last_error.eq(None::<String>),
                        outbox_emails::private_link.eq(None::<String>),
                        outbox_emails::unsubscribe_token.eq(None::<String>),
                        outbox_emails::updated_at.eq(now),
                    ))
                    .execute(conn)?;
            }
            Err(error) => {
                let give_up = match error {
                    SendError::Permanent(_) => true,
                    SendError::Transient(_) => row.attempts >= settings.reminders.max_attempts,
                    // Never give up on a server that is down: nothing may be lost.
                    SendError::Unreachable(_) => false,
                };
                let message: String = error.to_string().chars().take(2000).collect();
                if give_up {
                    tracing::error!(email = %row.id, kind = %row.kind, to = %row.recipient, error = %message, "email failed for good");
                    diesel::update(mine)
                        .set((
                            outbox_emails::state.eq(FAILED),
                            outbox_emails::lease_until.eq(None::<NaiveDateTime>),
                            outbox_emails::claimed_by.eq(None::<String>),
                            outbox_emails::last_error.eq(message),
                            outbox_emails::updated_at.eq(now),
                        ))
                        .execute(conn)?;
                } else {
                    let next = now + backoff(settings, row.attempts);
                    // An unreachable server uses no attempt up: emails wait for it.
                    let spent = i32::from(!matches!(error, SendError::Unreachable(_)));
                    tracing::warn!(email = %row.id, to = %row.recipient, error = %message, retry_at = %next, "email deferred");
                    diesel::update(mine)
                        .set((
                            outbox_emails::state.eq(PENDING),
                            outbox_emails::next_attempt_at.eq(next),
                            outbox_emails::lease_until.eq(None::<NaiveDateTime>),
                            outbox_emails::claimed_by.eq(None::<String>),
                            outbox_emails::attempts.eq(outbox_emails::attempts - 1 + spent),
                            outbox_emails::last_error.eq(message),
                            outbox_emails::updated_at.eq(now),
                        ))
                        .execute(conn)?;
                }
            }
        }
        Ok(())
    })
}
