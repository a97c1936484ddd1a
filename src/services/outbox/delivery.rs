//! Delivering the outbox: claim due rows under a lease, send each with no transaction
//! open, and record each outcome only while the lease is still ours.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use lettre::message::{header::ContentType, Mailbox, MultiPart, SinglePart};
use lettre::Message;
use serde::Serialize;

use super::{FAILED, PENDING, SENDING, SENT};
use crate::config::{Settings, SMTP_TIMEOUT};
use crate::db::models::OutboxRow;
use crate::db::schema::outbox_emails;
use crate::db::{self, DbConnection};
use crate::email::{clean_line, SendError, Transport};

/// What one delivery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeliveryReport {
    pub sent: usize,
    /// Transient failures, to be retried later.
    pub deferred: usize,
    /// Permanent failures (or attempts used up), now `failed`.
    pub failed: usize,
}

/// Claims due emails: pending ones whose time has come, and `sending` ones whose
/// lease expired (their worker died). Each claim counts as an attempt.
pub fn claim(
    conn: &mut DbConnection,
    now: NaiveDateTime,
    lease: Duration,
    limit: i64,
) -> QueryResult<Vec<OutboxRow>> {
    db::write_transaction(conn, |conn| {
        // Replicas claim different rows instead of waiting for each other.
        let mut rows: Vec<OutboxRow> = crate::load_skip_locked!(
            conn,
            outbox_emails::table
                .filter(
                    outbox_emails::state
                        .eq(PENDING)
                        .and(outbox_emails::next_attempt_at.le(now))
                        .or(outbox_emails::state
                            .eq(SENDING)
                            .and(outbox_emails::lease_until.lt(now))),
                )
                .order((
                    outbox_emails::next_attempt_at.asc(),
                    outbox_emails::id.asc(),
                ))
                .limit(limit)
                .select(OutboxRow::as_select())
        )?;
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let until = now + lease;
        diesel::update(outbox_emails::table.filter(outbox_emails::id.eq_any(&ids)))
            .set((
                outbox_emails::state.eq(SENDING),
                outbox_emails::lease_until.eq(until),
                outbox_emails::attempts.eq(outbox_emails::attempts + 1),
                outbox_emails::updated_at.eq(now),
            ))
            .execute(conn)?;
        for row in &mut rows {
            row.state = SENDING.into();
            row.lease_until = Some(until);
            row.attempts += 1;
        }
        Ok(rows)
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

/// Builds the message of a row: From the settings, a Message-ID made of the row's id.
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
    Message::builder()
        .from(from)
        .to(Mailbox::new(name, address))
        .subject(clean_line(&row.subject))
        .message_id(Some(format!("<{}.{}@{domain}>", row.id, row.kind)))
        .multipart(
            MultiPart::alternative()
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_PLAIN)
                        .body(row.body_text.clone()),
                )
                .singlepart(
                    SinglePart::builder()
                        .header(ContentType::TEXT_HTML)
                        .body(row.body_html.clone()),
                ),
        )
        .map_err(|e| SendError::Permanent(format!("cannot build the message: {e}")))
}

/// One delivery pass: claims due emails batch by batch and sends them, recording each
/// outcome at once. Before each email the worker renews its lease on it, and skips it if
/// another worker took it over (its lease had expired). When the server cannot be
/// reached, or `stop` is set, the rest of the batch is put back untouched and the pass ends.
pub fn deliver(
    conn: &mut DbConnection,
    transport: &Transport,
    settings: &Settings,
    stop: &AtomicBool,
) -> QueryResult<DeliveryReport> {
    let lease = Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600));
    let mut report = DeliveryReport::default();
    super::fold_counts(conn)?;
    loop {
        let rows = claim(conn, db::now(), lease, settings.reminders.batch_size)?;
        let claimed = rows.len();
        let mut rows = rows.into_iter().peekable();
        let mut interrupted = false;
        while let Some(mut row) = rows.next_if(|_| !interrupted) {
            if stop.load(Ordering::Relaxed) {
                release(conn, std::slice::from_ref(&row))?;
                interrupted = true;
                continue;
            }
            // The lease must outlast the send: renewed unless what is left of it
            // covers the longest SMTP conversation (most emails of a batch leave in
            // its first seconds: one write each, not two).
            let now = db::now();
            if needs_renewal(row.lease_until, now) {
                match renew(conn, &row, now + lease)? {
                    Some(until) => row.lease_until = Some(until),
                    None => continue,
                }
            }
            let outcome = message(&row, settings).and_then(|m| transport.send(&m));
            match &outcome {
                Ok(()) => report.sent += 1,
                Err(SendError::Permanent(_)) => report.failed += 1,
                Err(SendError::Transient(_)) => {
                    if row.attempts >= settings.reminders.max_attempts {
                        report.failed += 1;
                    } else {
                        report.deferred += 1;
                    }
                }
                Err(SendError::Unreachable(_)) => {
                    report.deferred += 1;
                    interrupted = true;
                }
            }
            record(conn, &row, &outcome, settings, db::now())?;
        }
        let rest: Vec<OutboxRow> = rows.collect();
        release(conn, &rest)?;
        if interrupted || claimed < usize::try_from(settings.reminders.batch_size).unwrap_or(1) {
            return Ok(report);
        }
    }
}

/// Whether a lease that ends at `until` must be renewed before a send at `now`: when
/// less is left of it than the longest SMTP conversation (a dozen steps of at most
/// `SMTP_TIMEOUT`) and a minute for clocks that differ between replicas. Validation
/// keeps `reminders.lease_secs` at least 15 timeouts, so a fresh lease needs none.
pub(super) fn needs_renewal(until: Option<NaiveDateTime>, now: NaiveDateTime) -> bool {
    let longest_send = Duration::seconds(13 * i64::try_from(SMTP_TIMEOUT.as_secs()).unwrap_or(60));
    until.is_none_or(|until| until - now < longest_send)
}

/// Extends this worker's lease on `row` to `until`, if it still holds it (the row is
/// `sending` under the lease this worker set). Returns the new lease, or `None` when
/// another worker has taken the email over.
pub(super) fn renew(
    conn: &mut DbConnection,
    row: &OutboxRow,
    until: NaiveDateTime,
) -> QueryResult<Option<NaiveDateTime>> {
    let Some(lease) = row.lease_until else {
        return Ok(None);
    };
    let renewed = db::write_transaction(conn, |conn| {
        diesel::update(
            outbox_emails::table
                .filter(outbox_emails::id.eq(&row.id))
                .filter(outbox_emails::state.eq(SENDING))
                .filter(outbox_emails::lease_until.eq(lease)),
        )
        .set(outbox_emails::lease_until.eq(until))
        .execute(conn)
    })?;
    Ok((renewed == 1).then_some(until))
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
                diesel::update(mine)
                    .set((
                        outbox_emails::state.eq(SENT),
                        outbox_emails::sent_at.eq(now),
                        outbox_emails::lease_until.eq(None::<NaiveDateTime>),
                        outbox_emails::last_error.eq(None::<String>),
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

/// Puts claimed, unattempted emails back as they were (those this worker still holds).
fn release(conn: &mut DbConnection, rows: &[OutboxRow]) -> QueryResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    db::write_transaction(conn, |conn| {
        for row in rows {
            diesel::update(
                outbox_emails::table
                    .filter(outbox_emails::id.eq(&row.id))
                    .filter(outbox_emails::state.eq(SENDING))
                    .filter(outbox_emails::lease_until.eq(row.lease_until)),
            )
            .set((
                outbox_emails::state.eq(PENDING),
                outbox_emails::lease_until.eq(None::<NaiveDateTime>),
                outbox_emails::attempts.eq(outbox_emails::attempts - 1),
            ))
            .execute(conn)?;
        }
        Ok(())
    })
}
