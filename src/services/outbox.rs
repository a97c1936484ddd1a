//! The email outbox: every email is a row first, written in the transaction that
//! decided to send it; a delivery pass claims due rows (a lease, with `SKIP LOCKED` on
//! PostgreSQL), sends them with no transaction open, and records each outcome.
//!
//! A crash between sending and recording leaves the row `sending` until its lease
//! expires; then it is sent again. So an email may at worst go out twice (its
//! Message-ID, derived from the row, shows it), and is never lost.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use lettre::message::{header::ContentType, Mailbox, MultiPart, SinglePart};
use lettre::Message;
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::Settings;
use crate::db::models::OutboxRow;
use crate::db::schema::{outbox_emails, people};
use crate::db::{self, DbConnection};
use crate::email::{clean_line, EmailTemplates, Kind, SendError, TemplateError, Transport};

pub const PENDING: &str = "pending";
pub const SENDING: &str = "sending";
pub const SENT: &str = "sent";
pub const FAILED: &str = "failed";
pub const STATES: [&str; 4] = [PENDING, SENDING, SENT, FAILED];

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
    })
}

/// Queues `email` unless one with its deduplication key exists. Returns whether it
/// was queued. Call it inside the transaction that made the decision.
pub fn enqueue(conn: &mut DbConnection, email: &NewEmail, now: NaiveDateTime) -> QueryResult<bool> {
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
        next_attempt_at: now,
        lease_until: None,
        last_error: None,
        created_at: now,
        updated_at: now,
        sent_at: None,
    };
    let inserted = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(outbox_emails::table).values(&row),
        outbox_emails::dedup_key
    )?;
    Ok(inserted == 1)
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
    let name: Option<String> = people::table
        .find(recipient)
        .select(people::name)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    match compose(templates, kind, dedup_key, recipient, name.as_deref(), data) {
        Ok(email) => {
            enqueue(conn, &email, now)?;
        }
        Err(e) => {
            tracing::error!(error = %e, kind = kind.name(), "cannot render an email; it is not sent");
        }
    }
    Ok(())
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
        // One query, typed once per backend.
        macro_rules! due {
            () => {
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
            };
        }
        let mut rows = match conn {
            // Replicas claim different rows instead of waiting for each other.
            DbConnection::Pg(c) => due!().for_update().skip_locked().load(c)?,
            // SQLite: the write transaction already excludes every other writer.
            DbConnection::Sqlite(c) => due!().load(c)?,
        };
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
            match renew(conn, &row, db::now() + lease)? {
                Some(until) => row.lease_until = Some(until),
                None => continue,
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

/// Extends this worker's lease on `row` to `until`, if it still holds it (the row is
/// `sending` under the lease this worker set). Returns the new lease, or `None` when
/// another worker has taken the email over.
fn renew(
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
fn record(
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

/// An email as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutboxEmail {
    pub id: String,
    /// overdue_digest, escalation, coe_opened, writeup_overdue, review_requested,
    /// changes_requested, approved or inspection_digest.
    pub kind: String,
    pub dedup_key: String,
    pub recipient: String,
    pub subject: String,
    /// pending, sending, sent or failed.
    pub state: String,
    pub attempts: i32,
    pub next_attempt_at: NaiveDateTime,
    /// The last failure: the SMTP server's answer, or why it could not be reached.
    pub last_error: Option<String>,
    pub created_at: NaiveDateTime,
    pub sent_at: Option<NaiveDateTime>,
}

impl From<OutboxRow> for OutboxEmail {
    fn from(r: OutboxRow) -> Self {
        OutboxEmail {
            id: r.id,
            kind: r.kind,
            dedup_key: r.dedup_key,
            recipient: r.recipient,
            subject: r.subject,
            state: r.state,
            attempts: r.attempts,
            next_attempt_at: r.next_attempt_at,
            last_error: r.last_error,
            created_at: r.created_at,
            sent_at: r.sent_at,
        }
    }
}

/// Newest first; `before` is the id of the last email of the previous page.
pub fn list(
    conn: &mut DbConnection,
    state: Option<&str>,
    recipient: Option<&str>,
    before: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<OutboxEmail>> {
    let mut query = outbox_emails::table
        .select(OutboxRow::as_select())
        .order(outbox_emails::id.desc())
        .limit(limit)
        .into_boxed();
    if let Some(state) = state {
        query = query.filter(outbox_emails::state.eq(state.to_owned()));
    }
    if let Some(recipient) = recipient {
        query = query.filter(outbox_emails::recipient.eq(recipient.to_owned()));
    }
    if let Some(before) = before {
        query = query.filter(outbox_emails::id.lt(before.to_owned()));
    }
    Ok(query.load(conn)?.into_iter().map(Into::into).collect())
}

#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("no email with id {0}")]
    NotFound(String),
    #[error("the email is {0}; only failed (or pending) emails can be retried")]
    NotFailed(String),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

/// Queues a failed email again, with a fresh count of attempts; a pending one is
/// brought forward to now.
pub fn retry(conn: &mut DbConnection, id: &str) -> Result<OutboxEmail, RetryError> {
    db::write_transaction(conn, |conn| {
        let row: OutboxRow = outbox_emails::table
            .find(id)
            .select(OutboxRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| RetryError::NotFound(id.to_owned()))?;
        if row.state != FAILED && row.state != PENDING {
            return Err(RetryError::NotFailed(row.state));
        }
        let now = db::now();
        // Only if it is still failed or pending: a worker may have claimed it meanwhile.
        let changed = diesel::update(
            outbox_emails::table
                .find(id)
                .filter(outbox_emails::state.eq_any([FAILED, PENDING])),
        )
        .set((
            outbox_emails::state.eq(PENDING),
            outbox_emails::attempts.eq(0),
            outbox_emails::next_attempt_at.eq(now),
            outbox_emails::updated_at.eq(now),
        ))
        .execute(conn)?;
        if changed == 0 {
            return Err(RetryError::NotFailed(SENDING.into()));
        }
        Ok(OutboxEmail {
            state: PENDING.into(),
            attempts: 0,
            next_attempt_at: now,
            ..row.into()
        })
    })
}

/// Deletes emails sent before `before`; returns how many. Failed and pending emails
/// stay. Their deduplication keys go with them, so `before` must be older than the
/// longest reminder period (the settings check it).
pub fn purge_sent(conn: &mut DbConnection, before: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        diesel::delete(
            outbox_emails::table
                .filter(outbox_emails::state.eq(SENT))
                .filter(outbox_emails::sent_at.lt(before)),
        )
        .execute(conn)
    })
}

/// Emails by state (every state present, zero included).
pub fn counts(conn: &mut DbConnection) -> QueryResult<BTreeMap<String, i64>> {
    let mut counts: BTreeMap<String, i64> = STATES.iter().map(|s| ((*s).to_owned(), 0)).collect();
    for (state, n) in outbox_emails::table
        .group_by(outbox_emails::state)
        .select((outbox_emails::state, diesel::dsl::count_star()))
        .load::<(String, i64)>(conn)?
    {
        counts.insert(state, n);
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> (tempfile::TempDir, crate::db::DbPool) {
        let dir = tempfile::tempdir().expect("dir");
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("t.db").display()),
            ..Default::default()
        };
        let pool = db::connect(&settings).expect("connect");
        db::migrate(&mut pool.get().expect("conn")).expect("migrate");
        (dir, pool)
    }

    fn email(key: &str) -> NewEmail {
        NewEmail {
            kind: Kind::Approved,
            dedup_key: key.into(),
            recipient: "ana@example.com".into(),
            recipient_name: Some("Ana\r\nBcc: x@example.com".into()),
            subject: "Approved: it".into(),
            text: "text".into(),
            html: "<p>html</p>".into(),
        }
    }

    #[test]
    fn an_email_is_queued_once_and_sent_once_with_its_row_in_the_message_id() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        let settings = Settings::default();
        assert!(enqueue(&mut conn, &email("k1"), db::now()).unwrap());
        assert!(
            !enqueue(&mut conn, &email("k1"), db::now()).unwrap(),
            "same key: no-op"
        );

        let transport = Transport::memory();
        let go = AtomicBool::new(false);
        let report = deliver(&mut conn, &transport, &settings, &go).unwrap();
        assert_eq!(report.sent, 1);
        assert_eq!(
            deliver(&mut conn, &transport, &settings, &go).unwrap().sent,
            0
        );
        let sent = transport.sent();
        assert_eq!(sent.len(), 1);
        let row = list(&mut conn, None, None, None, 10).unwrap().remove(0);
        assert_eq!(row.state, SENT);
        assert!(
            sent[0].contains(&format!("Message-ID: <{}.approved@localhost>", row.id)),
            "{}",
            sent[0]
        );
        assert!(!sent[0].contains("\r\nBcc:"), "the name lost its CR/LF");
    }

    #[test]
    fn a_claim_is_exclusive_until_its_lease_expires() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        enqueue(&mut conn, &email("k2"), db::now()).unwrap();
        let now = db::now();
        let lease = Duration::seconds(600);
        assert_eq!(claim(&mut conn, now, lease, 10).unwrap().len(), 1);
        assert!(claim(&mut conn, now, lease, 10).unwrap().is_empty());
        // The worker died: after the lease, another one takes the email again.
        let later = now + Duration::seconds(601);
        let again = claim(&mut conn, later, lease, 10).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempts, 2);
        // The first worker wakes up: it no longer holds the email and may not record it.
        let mut stale = again[0].clone();
        stale.lease_until = Some(now + lease);
        assert_eq!(renew(&mut conn, &stale, later + lease).unwrap(), None);
        record(&mut conn, &stale, &Ok(()), &Settings::default(), later).unwrap();
        let row = list(&mut conn, None, None, None, 10).unwrap().remove(0);
        assert_eq!(row.state, SENDING, "the stale worker changed nothing");
    }

    #[test]
    fn a_stop_puts_the_rest_of_the_batch_back() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        for key in ["a", "b", "c"] {
            enqueue(&mut conn, &email(key), db::now()).unwrap();
        }
        let stop = AtomicBool::new(true);
        let report = deliver(&mut conn, &Transport::memory(), &Settings::default(), &stop).unwrap();
        assert_eq!(report, DeliveryReport::default());
        let rows = list(&mut conn, None, None, None, 10).unwrap();
        assert!(
            rows.iter().all(|r| r.state == PENDING && r.attempts == 0),
            "{rows:?}"
        );
    }

    #[test]
    fn only_old_sent_emails_are_purged() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        let now = db::now();
        for key in ["old", "new", "failed"] {
            enqueue(&mut conn, &email(key), now).unwrap();
        }
        let set = |conn: &mut DbConnection, key: &str, state: &str, sent: Option<NaiveDateTime>| {
            diesel::update(outbox_emails::table.filter(outbox_emails::dedup_key.eq(key)))
                .set((
                    outbox_emails::state.eq(state),
                    outbox_emails::sent_at.eq(sent),
                ))
                .execute(conn)
                .unwrap();
        };
        set(&mut conn, "old", SENT, Some(now - Duration::days(100)));
        set(&mut conn, "new", SENT, Some(now - Duration::days(1)));
        set(&mut conn, "failed", FAILED, None);
        assert_eq!(purge_sent(&mut conn, now - Duration::days(90)).unwrap(), 1);
        let left: Vec<String> = list(&mut conn, None, None, None, 10)
            .unwrap()
            .into_iter()
            .map(|e| e.dedup_key)
            .collect();
        assert_eq!(left.len(), 2);
        assert!(!left.contains(&"old".to_owned()));
    }

    #[test]
    fn back_off_doubles_up_to_its_cap() {
        let settings = Settings::default();
        assert_eq!(backoff(&settings, 1), Duration::seconds(60));
        assert_eq!(backoff(&settings, 2), Duration::seconds(120));
        assert_eq!(backoff(&settings, 5), Duration::seconds(960));
        assert_eq!(backoff(&settings, 40), Duration::seconds(6 * 3600));
    }
}
