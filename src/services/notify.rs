//! Emails decided by events, not by the calendar: a COE opened, a review step. Each
//! is queued through the outbox in the transaction of the event that caused it, with
//! a deduplication key naming that event, so it is sent once. The calendar's emails
//! (digests, escalations) are the reminder sweep's.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use crate::config::Settings;
use crate::db::models::CoeRow;
use crate::db::{types, DbConnection};
use crate::domain::clock::local_date;
use crate::domain::reminder::writeup_deadline;
use crate::email::content::{CoeLine, CoeOpened, Links, ReviewEmail};
use crate::email::{EmailTemplates, Kind};
use crate::services::outbox;

/// What an event email needs to know of its COE.
pub struct CoeFacts<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub owner: Option<&'a str>,
    pub reviewer: Option<&'a str>,
    pub severity: &'a str,
    pub service: Option<&'a str>,
    pub resolved_at: Option<NaiveDateTime>,
}

fn coe_line(settings: &Settings, coe: &CoeFacts<'_>) -> CoeLine {
    CoeLine {
        coe_id: coe.id.to_owned(),
        title: coe.title.to_owned(),
        owner: coe.owner.unwrap_or_default().to_owned(),
        reviewer: coe.reviewer.unwrap_or_default().to_owned(),
        deadline: coe
            .resolved_at
            .map(|t| {
                local_date(
                    writeup_deadline(t, settings.coe.writeup_days),
                    settings.org_timezone(),
                )
                .to_string()
            })
            .unwrap_or_default(),
        days: 0,
        link: Links::new(&settings.public_url).coe(coe.id),
    }
}

/// Tells a new COE's owner it is theirs. Call it in the transaction that opened it.
pub fn coe_opened(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    coe: &CoeFacts<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let Some(owner) = coe.owner else {
        return Ok(());
    };
    let data = json!(CoeOpened {
        recipient_name: String::new(),
        coe: coe_line(settings, coe),
        severity: coe.severity.to_owned(),
        service: coe.service.unwrap_or_default().to_owned(),
        writeup_days: settings.coe.writeup_days,
    });
    let key = format!("{}:{}:{owner}", Kind::CoeOpened.name(), coe.id);
    outbox::notify(conn, templates, Kind::CoeOpened, key, owner, data, now)
}

/// Tells the reviewer (submitted) or the owner (changes requested, approved) of a
/// review step. `step_id` (the review comment's id) makes each step's email unique.
#[allow(clippy::too_many_arguments)]
pub fn review_step(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    kind: Kind,
    coe: &CoeFacts<'_>,
    actor: &str,
    comment: Option<&str>,
    step_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let recipient = match kind {
        Kind::ReviewRequested => coe.reviewer,
        _ => coe.owner,
    };
    let Some(recipient) = recipient else {
        return Ok(());
    };
    if recipient == actor {
        return Ok(());
    }
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: coe_line(settings, coe),
        actor: actor.to_owned(),
        comment: comment.unwrap_or_default().to_owned(),
    });
    let key = format!("{}:{}:{step_id}", kind.name(), coe.id);
    outbox::notify(conn, templates, kind, key, recipient, data, now)
}

impl CoeFacts<'_> {
    /// The facts of a stored COE; `severity` is its label (`sev2`).
    pub fn of<'a>(row: &'a CoeRow, severity: &'a str) -> CoeFacts<'a> {
        CoeFacts {
            id: &row.id,
            title: &row.title,
            owner: row.owner_email.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            severity,
            service: row.service.as_deref(),
            resolved_at: row.resolved_at,
        }
    }
}

/// Tells the owner of stored COE `row` that it opened (see `coe_opened`).
pub fn coe_opened_row(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    row: &CoeRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    coe_opened(
        conn,
        settings,
        templates,
        &CoeFacts::of(row, &severity),
        now,
    )
}
