//! Correcting what customers read after approval: the COE's owner, reviewer or an
//! admin writes a new title and text for its summary for customers; the same checks
//! as before submit apply; it waits for the reviewer's approval of that section
//! alone (the rest of the COE stays approved; a change the reviewer wrote, an
//! admin's). Approved, it becomes the section's text and, while the summary is
//! published, replaces it at the same address ("updated …"), the Statuspage
//! postmortem and the webhooks told. Sent back, its writer is told why. One change
//! waits at a time: a new one replaces it.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{approved_section, check_text, check_title, live, public_url, PublicationRow};
use crate::db::schema::{coes, publications, summary_changes};
use crate::db::DbConnection;
use crate::services::access::{self, Editor};
use crate::services::coe::coes::{self as writeup, CoeError};
use crate::services::outbound::{self, CoeEvent};
use crate::services::Env;

/// A change of the summary for customers, as asked for.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRequest {
    /// The title customers read.
    pub title: String,
    /// The text customers read (Markdown).
    pub body: String,
}

/// What the reviewer decides.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeDecision {
    /// `true` approves it; `false` sends it back (with a `note` saying why).
    pub approve: bool,
    #[serde(default)]
    pub note: Option<String>,
    /// The change decided (its `id`, as read): refused with 409 when another
    /// replaced it meanwhile, so nobody approves a text they did not read.
    #[serde(default)]
    pub change: Option<String>,
}

/// A change of the summary for customers and where it stands.
#[derive(Debug, Clone, Serialize, ToSchema, Queryable)]
pub struct ChangeView {
    pub id: String,
    pub title: String,
    pub body: String,
    pub proposed_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub proposed_at: NaiveDateTime,
    /// `approved`, `sent_back` or `replaced` once decided; none while it waits.
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub decided_at: Option<NaiveDateTime>,
    pub note: Option<String>,
}

type ChangeColumns = (
    summary_changes::id,
    summary_changes::title,
    summary_changes::body,
    summary_changes::proposed_by,
    summary_changes::proposed_at,
    summary_changes::decision,
    summary_changes::decided_by,
    summary_changes::decided_at,
    summary_changes::note,
);

const CHANGE_COLUMNS: ChangeColumns = (
    summary_changes::id,
    summary_changes::title,
    summary_changes::body,
    summary_changes::proposed_by,
    summary_changes::proposed_at,
    summary_changes::decision,
    summary_changes::decided_by,
    summary_changes::decided_at,
    summary_changes::note,
);

/// The change of COE `id`'s summary waiting for the reviewer, if one does.
pub fn waiting(conn: &mut DbConnection, id: &str) -> QueryResult<Option<ChangeView>> {
    summary_changes::table
        .filter(summary_changes::coe_id.eq(id))
        .filter(summary_changes::decided_at.is_null())
        .select(CHANGE_COLUMNS)
        .first(conn)
        .optional()
}

/// COE `id`'s newest change, waiting or decided.
pub fn latest(conn: &mut DbConnection, id: &str) -> QueryResult<Option<ChangeView>> {
    summary_changes::table
        .filter(summary_changes::coe_id.eq(id))
        .order(summary_changes::proposed_at.desc())
        .select(CHANGE_COLUMNS)
        .first(conn)
        .optional()
}

/// The title of COE `id`'s newest approved change.
pub fn approved_title(conn: &mut DbConnection, id: &str) -> QueryResult<Option<String>> {
    summary_changes::table
        .filter(summary_changes::coe_id.eq(id))
        .filter(summary_changes::decision.eq("approved"))
        .order(summary_changes::decided_at.desc())
        .select(summary_changes::title)
        .first(conn)
        .optional()
}

/// Asks for a change of approved COE `id`'s summary for customers: checked as the
/// section is checked before submit (the title too); the reviewer is asked to
/// approve it. A change already waiting is replaced. Returns it and the checks'
/// warnings for the writer.
pub fn propose(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    ask: &ChangeRequest,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<(ChangeView, Vec<String>), CoeError> {
    crate::db::write_transaction(conn, |conn| {
        access::coe(conn, id, editor)?;
        crate::db::locks::lock_coe(conn, id)?;
        let (_, current) = approved_section(conn, env, id)?;
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        match check_title(conn, env, Some(&ask.title)) {
            Ok((_, found)) => warnings.extend(found),
            Err(CoeError::Invalid(found)) => problems.extend(found),
            Err(other) => return Err(other),
        }
        let body = ask.body.replace("\r\n", "\n");
        if body.len() > env.settings.coe.max_section_bytes {
            problems.push((
                "body".into(),
                format!(
                    "is longer than {} bytes",
                    env.settings.coe.max_section_bytes
                ),
            ));
        } else {
            match check_text(conn, env, "body", &body) {
                Ok(found) => warnings.extend(found),
                Err(CoeError::Invalid(found)) => problems.extend(found),
                Err(other) => return Err(other),
            }
        }
        if !problems.is_empty() {
            return Err(CoeError::Invalid(problems));
        }
        let title = ask.title.trim();
        // What customers read now: the live notice, else the approved section.
        let (live_title, current) = match live(conn, id)? {
            Some(now) => (Some(now.title), now.body),
            None => (None, current),
        };
        if body.trim() == current.trim() && live_title.as_deref().is_none_or(|t| t == title) {
            return Err(CoeError::invalid(
                "body",
                "says what customers read already: there is nothing to approve",
            ));
        }
        diesel::update(
            summary_changes::table
                .filter(summary_changes::coe_id.eq(id))
                .filter(summary_changes::decided_at.is_null()),
        )
        .set((
            summary_changes::decision.eq("replaced"),
            summary_changes::decided_by.eq(editor.actor),
            summary_changes::decided_at.eq(now),
        ))
        .execute(conn)?;
        let change_id = crate::db::new_id();
        diesel::insert_into(summary_changes::table)
            .values((
                summary_changes::id.eq(&change_id),
                summary_changes::coe_id.eq(id),
                summary_changes::title.eq(title),
                summary_changes::body.eq(&body),
                // Who answers for it: a token's maker, not the person it names.
                summary_changes::proposed_by.eq(editor.principal),
                summary_changes::proposed_at.eq(now),
            ))
            .execute(conn)?;
        let reviewer: Option<String> = coes::table
            .find(id)
            .select(coes::reviewer_email)
            .first(conn)?;
        let proposed = CoeEvent::SummaryChangeProposed {
            coe_id: id,
            change_id: &change_id,
            to: reviewer.as_deref(),
            proposer: editor.principal,
        };
        outbound::happened(conn, env, editor.actor, proposed, now)?;
        let view = waiting(conn, id)?.unwrap_or_else(|| unreachable!("written above"));
        Ok((view, warnings))
    })
}

/// The reviewer approves or sends back the change of COE `id`'s summary that waits.
/// Approved, it is the section's text, and the published notice (if any) says it at
/// the same address, its channels told; checked once more first (the directory may
/// have grown since it was written).
pub fn decide(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    decision: &ChangeDecision,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<ChangeView, CoeError> {
    let note = decision
        .note
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if !decision.approve && note.is_none() {
        return Err(CoeError::invalid(
            "note",
            "is missing: say what to change, so its writer can",
        ));
    }
    if note.is_some_and(|n| n.chars().count() > 2000) {
        return Err(CoeError::invalid(
            "note",
            "must be at most 2,000 characters",
        ));
    }
    crate::db::write_transaction(conn, |conn| {
        crate::db::locks::lock_coe(conn, id)?;
        let reviewer: Option<String> = coes::table
            .find(id)
            .select(coes::reviewer_email)
            .first(conn)
            .optional()?
            .ok_or_else(|| CoeError::NotFound(id.to_owned()))?;
        let Some(change) = waiting(conn, id)? else {
            return Err(CoeError::Conflict(
                "no change of its summary for customers waits for approval".into(),
            ));
        };
        let by = access::decide_summary_change(editor, reviewer.as_deref(), &change.proposed_by)?;
        if decision.change.as_ref().is_some_and(|c| *c != change.id) {
            return Err(CoeError::Conflict(
                "the change was replaced by a newer one since it was read: read that one first"
                    .into(),
            ));
        }
        if decision.approve {
            let (key, _) = approved_section(conn, env, id)?;
            check_text(conn, env, "body", &change.body)?;
            check_title(conn, env, Some(&change.title))?;
            writeup::write_approved_change(conn, id, &key, &change.body, by, now)?;
            republish(conn, env, id, &change, by, now)?;
        }
        diesel::update(summary_changes::table.find(&change.id))
            .set((
                summary_changes::decision.eq(if decision.approve {
                    "approved"
                } else {
                    "sent_back"
                }),
                summary_changes::decided_by.eq(by),
                summary_changes::decided_at.eq(now),
                summary_changes::note.eq(note),
            ))
            .execute(conn)?;
        let decided = CoeEvent::SummaryChangeDecided {
            coe_id: id,
            change_id: &change.id,
            approved: decision.approve,
            proposer: &change.proposed_by,
            note,
        };
        outbound::happened(conn, env, by, decided, now)?;
        latest(conn, id)?.ok_or_else(|| CoeError::NotFound(id.to_owned()))
    })
}

/// Puts an approved change on COE `id`'s live notice, if it has one.
fn republish(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    change: &ChangeView,
    by: &str,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    let Some(PublicationRow {
        token,
        statuspage_incident: incident,
        ..
    }) = live(conn, id)?
    else {
        return Ok(());
    };
    diesel::update(publications::table.find(&token))
        .set((
            publications::title.eq(&change.title),
            publications::body.eq(&change.body),
            publications::updated_by.eq(by),
            publications::updated_at.eq(now),
        ))
        .execute(conn)?;
    let updated = CoeEvent::PublicationUpdated {
        coe_id: id,
        token: &token,
        url: &public_url(env, &token),
        title: &change.title,
        body: &change.body,
        statuspage_incident: incident.as_deref(),
    };
    outbound::happened(conn, env, by, updated, now)?;
    Ok(())
}
