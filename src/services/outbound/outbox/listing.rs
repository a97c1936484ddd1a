//! What an admin sees of the outbox and may do to one email: the listing (with
//! which claims are stranded: their lease ran out, or their replica went silent), one
//! email with its readable text, and a retry.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::{readable, FAILED, HELD, PENDING, SENDING};
use crate::db::models::OutboxRow;
use crate::db::schema::outbox_emails;
use crate::db::{self, DbConnection};
use crate::services::outbound::queue;

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
    /// pending, sending, sent, failed, held (being sent when the backup a restore put
    /// back was taken: an admin sends it again or drops it) or dropped.
    pub state: String,
    pub attempts: i32,
    #[serde(serialize_with = "crate::json::utc")]
    pub next_attempt_at: NaiveDateTime,
    /// The last failure: the SMTP server's answer, or why it could not be reached.
    pub last_error: Option<String>,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub sent_at: Option<NaiveDateTime>,
    /// While `sending`: the replica that claimed it (`server.replica_name`) and until
    /// when its claim holds.
    pub claimed_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub lease_until: Option<NaiveDateTime>,
    /// `sending`, and the claim has run out: the replica that was sending it stopped
    /// and has not started again. Delivery takes it again by itself; an admin may
    /// retry it at once.
    pub stranded: bool,
}

impl From<OutboxRow> for OutboxEmail {
    fn from(r: OutboxRow) -> Self {
        let stranded = queue::stranded(&r.state, r.lease_until, db::now());
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
            stranded,
            claimed_by: r.claimed_by,
            lease_until: r.lease_until,
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
    let emails = query
        .load::<OutboxRow>(conn)?
        .into_iter()
        .map(Into::into)
        .collect();
    strand_silent_claims(conn, emails)
}

/// Marks `stranded` the emails being sent by a replica that has gone silent
/// (`services::replicas`), whose lease has not run out yet.
fn strand_silent_claims(
    conn: &mut DbConnection,
    mut emails: Vec<OutboxEmail>,
) -> QueryResult<Vec<OutboxEmail>> {
    let claimants: Vec<&str> = emails
        .iter()
        .filter(|e| e.state == SENDING && !e.stranded)
        .filter_map(|e| e.claimed_by.as_deref())
        .collect();
    let silent = crate::services::replicas::silent(conn, &claimants, db::now())?;
    for email in &mut emails {
        if email.state == SENDING
            && email
                .claimed_by
                .as_ref()
                .is_some_and(|by| silent.contains(by))
        {
            email.stranded = true;
        }
    }
    Ok(emails)
}

/// One email with what it says: the listing's fields and its plain-text body, for an
/// admin who wants to read what was (or will be) sent: a private link in it is shown
/// as words saying that one was sent (`readable`), never the link.
pub fn get(conn: &mut DbConnection, id: &str) -> QueryResult<Option<(OutboxEmail, String)>> {
    let row: Option<OutboxRow> = outbox_emails::table
        .find(id)
        .select(OutboxRow::as_select())
        .first(conn)
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let body = readable(&row.kind, &row.body_text);
    let email = strand_silent_claims(conn, vec![row.into()])?.pop();
    Ok(email.map(|email| (email, body)))
}

#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("no email with id {0}")]
    NotFound(String),
    #[error(
        "the email is {0}; only failed, pending or held emails, and those whose sender \
         stopped while sending them, can be retried"
    )]
    NotFailed(String),
    #[error("the email is {0}; only a held, pending or failed email can be dropped")]
    NotHeld(String),
    #[error(
        "the email is being sent by {by} (its claim runs until {until} UTC); it can be \
         retried once that has run out"
    )]
    BeingSent { by: String, until: NaiveDateTime },
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

/// Queues a failed email again, with a fresh count of attempts; a pending one is
/// brought forward to now; one whose claim ran out while it was being sent (its
/// replica stopped) is taken back from that claim.
pub fn retry(conn: &mut DbConnection, id: &str) -> Result<OutboxEmail, RetryError> {
    db::write_transaction(conn, |conn| {
        let row: OutboxRow = outbox_emails::table
            .find(id)
            .select(OutboxRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| RetryError::NotFound(id.to_owned()))?;
        let now = db::now();
        // A claim still held by a replica that has gone silent is stranded as well.
        let silent = match (&row.state, &row.claimed_by) {
            (state, Some(by)) if state == SENDING => {
                crate::services::replicas::silent(conn, &[by.as_str()], now)?
            }
            _ => Vec::new(),
        };
        if row.state == SENDING {
            if let Some(until) = queue::still_claimed(&row.state, row.lease_until, &silent, now) {
                return Err(RetryError::BeingSent {
                    by: row.claimed_by.clone().unwrap_or_else(|| "a replica".into()),
                    until,
                });
            }
        } else if ![FAILED, PENDING, HELD].contains(&row.state.as_str()) {
            return Err(RetryError::NotFailed(row.state));
        }
        // Only if it is still as read: a worker may have claimed it meanwhile.
        let changed = diesel::update(
            outbox_emails::table.find(id).filter(
                outbox_emails::state
                    .eq_any([FAILED, PENDING, HELD])
                    .or(queue::stale_claim!(outbox_emails, now, &silent)),
            ),
        )
        .set((
            outbox_emails::state.eq(PENDING),
            outbox_emails::attempts.eq(0),
            outbox_emails::next_attempt_at.eq(now),
            queue::released!(outbox_emails),
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
            claimed_by: None,
            lease_until: None,
            stranded: false,
            ..row.into()
        })
    })
}
