//! Changing a COE: the version check every write starts with, its own fields
//! (title, owner, reviewer, severity, service) and its text sections.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::search::reindex;
use super::{load_row, record_change, template_of, Actor, CoeError};
use crate::db::models::{CoeRow, SectionRow};
use crate::db::schema::{coe_sections, coes};
use crate::db::{self, types, DbConnection};
use crate::domain::coe::{self, CoeState};
use crate::domain::template::SectionKind;
use crate::domain::Severity;
use crate::services::access::{self, Editor};
use crate::services::notify;
use crate::services::Env;

/// Loads the COE for a change: checks that it exists, that `who` may change it, that the writer saw the current
/// version, and that it may still be edited.
fn begin_change(
    conn: &mut DbConnection,
    id: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
) -> Result<CoeRow, CoeError> {
    // Who may change it is decided here, inside the write transaction, so the answer
    // holds for the change itself (an owner replaced meanwhile is seen).
    access::coe(conn, id, who)?;
    let Some(version) = expected else {
        let row = load_row(conn, id)?;
        return Err(CoeError::VersionRequired {
            current: row.version,
        });
    };
    // Claim the version first: the conditional update takes the row's write lock, so
    // of two writers based on the same version exactly one gets on; the other waits,
    // then finds the version moved and is refused. Nothing is lost on PostgreSQL's
    // READ COMMITTED either.
    let claimed = diesel::update(
        coes::table
            .filter(coes::id.eq(id))
            .filter(coes::version.eq(version)),
    )
    .set(coes::version.eq(coes::version + 1))
    .execute(conn)?;
    let row = load_row(conn, id)?;
    if claimed == 0 {
        return Err(CoeError::Stale {
            expected: version,
            current: row.version,
        });
    }
    let state: CoeState = types::read("coes.state", &row.state)?;
    if !state.is_editable() {
        return Err(CoeError::NotEditable { state });
    }
    Ok(row)
}

/// What a change of a COE records in its history: the audit action (`section:impact`,
/// `timeline:add`) and what was there before and after.
pub(super) struct Recorded {
    pub action: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Every change of a COE's writeup, in one write transaction: checks that `who` may
/// change it and claims the version the writer saw (`begin_change`), runs `change`
/// (with the COE as it was and the time of the change), records what it says in the
/// COE's history (a change that records itself says `None`), then stamps the time and
/// refreshes the search index (`finish_change`).
pub(super) fn with_change<T>(
    conn: &mut DbConnection,
    id: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    change: impl FnOnce(
        &mut DbConnection,
        &CoeRow,
        NaiveDateTime,
    ) -> Result<(T, Option<Recorded>), CoeError>,
) -> Result<T, CoeError> {
    db::write_transaction(conn, |conn| {
        let row = begin_change(conn, id, expected, who)?;
        let now = db::now();
        let (done, recorded) = change(conn, &row, now)?;
        if let Some(Recorded {
            action,
            before,
            after,
        }) = recorded
        {
            record_change(conn, id, who.actor, &action, before, after, now)?;
        }
        finish_change(conn, id, now)?;
        Ok(done)
    })
}

/// Records the change time (the version was claimed by `begin_change`) and refreshes
/// the search index.
fn finish_change(conn: &mut DbConnection, id: &str, now: NaiveDateTime) -> Result<(), CoeError> {
    diesel::update(coes::table.find(id))
        .set(coes::updated_at.eq(now))
        .execute(conn)?;
    reindex(conn, id)?;
    Ok(())
}

/// Writes a text section's Markdown.
pub fn put_section(
    conn: &mut DbConnection,
    id: &str,
    key: &str,
    body: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    ctx: &Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, |conn, row, now| {
        let actor = who.actor;
        let template = template_of(row);
        let spec = template.section(key).ok_or_else(|| {
            CoeError::invalid(
                "key",
                format!(
                    "no section `{key}` in this COE's template; its sections are: {}",
                    template.keys()
                ),
            )
        })?;
        if spec.kind != SectionKind::Text {
            return Err(CoeError::invalid(
                "key",
                format!(
                    "section `{key}` is of kind {} and is edited through its own endpoint",
                    spec.kind
                ),
            ));
        }
        if body.len() > ctx.settings.coe.max_section_bytes {
            return Err(CoeError::invalid(
                "body",
                format!(
                    "must be at most {} bytes (coe.max_section_bytes; got {})",
                    ctx.settings.coe.max_section_bytes,
                    body.len()
                ),
            ));
        }
        let before: Option<String> = coe_sections::table
            .filter(coe_sections::coe_id.eq(id))
            .filter(coe_sections::key.eq(key))
            .select(coe_sections::body)
            .first(conn)
            .optional()?;
        diesel::delete(
            coe_sections::table
                .filter(coe_sections::coe_id.eq(id))
                .filter(coe_sections::key.eq(key)),
        )
        .execute(conn)?;
        diesel::insert_into(coe_sections::table)
            .values(SectionRow {
                coe_id: id.to_owned(),
                key: key.to_owned(),
                body: body.to_owned(),
                updated_by: actor.to_owned(),
                updated_at: now,
            })
            .execute(conn)?;
        let recorded = Recorded {
            action: format!("section:{key}"),
            before: before.map(|b| json!({ "body": b })),
            after: Some(json!({ "body": body })),
        };
        Ok(((), Some(recorded)))
    })
}

/// Fields `PATCH /api/v1/coes/{id}` may change.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CoePatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub owner: Option<crate::domain::EmailAddress>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub reviewer: Option<crate::domain::EmailAddress>,
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "sev2")]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub service: Option<String>,
}

/// Changes title, owner, reviewer, severity or service.
pub fn patch(
    conn: &mut DbConnection,
    id: &str,
    patch: CoePatch,
    expected: Option<i32>,
    who: &Editor<'_>,
    mail: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, |conn, row, now| {
        let actor = who.actor;
        let mut changes = Vec::new();
        if let Some(title) = &patch.title {
            let title = coe::check_title(title).map_err(|p| CoeError::invalid("title", p))?;
            changes.push(("title", json!(title)));
        }
        if let Some(owner) = &patch.owner {
            changes.push(("owner", json!(owner.as_str())));
        }
        let reviewer_named = patch
            .reviewer
            .as_ref()
            .filter(|r| row.reviewer_email.as_deref() != Some(r.as_str()));
        if let Some(reviewer) = &patch.reviewer {
            changes.push(("reviewer", json!(reviewer.as_str())));
        }
        // Separation of duties: a reviewer is named by someone else (the owner, an
        // admin), so that nobody approves a writeup they chose to review themselves.
        if let Some(named) = reviewer_named {
            if who.email == Some(named.as_str()) || who.principal == named.as_str() {
                return Err(CoeError::invalid(
                    "reviewer",
                    "must not be you: nobody names themselves a COE's reviewer; ask its owner or \
                     an admin to name you",
                ));
            }
            // Whoever names a reviewer must be a person who can be held to it: a token
            // for nobody could name its holder unseen.
            if !who.principal.contains('@') {
                return Err(CoeError::invalid(
                    "reviewer",
                    "a token that stands for no person cannot name a reviewer: use a token of \
                     your own (one that names you) or the COE's page",
                ));
            }
        }
        // Whatever changes, the owner and the reviewer stay two people.
        let final_owner = patch
            .owner
            .as_ref()
            .map(|o| o.as_str().to_owned())
            .or(row.owner_email.clone());
        let final_reviewer = patch
            .reviewer
            .as_ref()
            .map(|r| r.as_str().to_owned())
            .or(row.reviewer_email.clone());
        if final_owner.is_some() && final_owner == final_reviewer {
            let field = if patch.reviewer.is_some() {
                "reviewer"
            } else {
                "owner"
            };
            return Err(CoeError::invalid(
                field,
                "the COE's owner and reviewer must be two people",
            ));
        }
        if let Some(severity) = patch.severity {
            changes.push(("severity", json!(severity)));
        }
        if let Some(service) = &patch.service {
            let service =
                coe::check_service(service).map_err(|p| CoeError::invalid("service", p))?;
            changes.push(("service", json!(service)));
        }
        if changes.is_empty() {
            return Err(CoeError::invalid(
                "body",
                "names nothing to change (title, owner, reviewer, severity, service)",
            ));
        }
        // Recorded field by field (`apply_patch`), not as one change.
        apply_patch(conn, id, &changes, actor, now)?;
        if reviewer_named.is_some() {
            diesel::update(coes::table.find(id))
                .set(coes::reviewer_named_by.eq(who.principal))
                .execute(conn)?;
        }
        // A COE in review is reviewed by the reviewer it was submitted to: a new
        // reviewer sends it back to draft (recorded), so it is submitted again to them
        // and nobody's review is taken away unseen. The former reviewer is told.
        let state: CoeState = types::read("coes.state", &row.state)?;
        let replaced = patch.reviewer.as_ref().is_some_and(|r| {
            state == CoeState::InReview && row.reviewer_email.as_deref() != Some(r.as_str())
        });
        if replaced {
            crate::services::lifecycle::move_to(
                conn,
                id,
                CoeState::InReview,
                CoeState::Draft,
                actor,
                Some("the reviewer changed while in review: submit it again for the new reviewer"),
                now,
            )?;
        }
        // Whoever becomes the owner or the reviewer now is told so.
        let after = load_row(conn, id)?;
        if let (true, Some(former)) = (replaced, row.reviewer_email.as_deref()) {
            notify::reviewer_replaced(conn, mail, &after, former, actor, now)?;
        }
        for (before, now_set, as_reviewer) in [
            (&row.owner_email, &after.owner_email, false),
            (&row.reviewer_email, &after.reviewer_email, true),
        ] {
            if let Some(person) = now_set.as_deref().filter(|p| Some(*p) != before.as_deref()) {
                notify::coe_assigned(conn, mail, &after, person, as_reviewer, actor, now)?;
            }
        }
        Ok(((), None))
    })
}

pub(super) fn apply_patch(
    conn: &mut DbConnection,
    id: &str,
    changes: &[(&str, Value)],
    actor: Actor<'_>,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    let row = load_row(conn, id)?;
    let mut before = serde_json::Map::new();
    let mut after = serde_json::Map::new();
    for (field, value) in changes {
        let text = value.as_str().map(str::to_owned);
        match *field {
            "title" => {
                before.insert("title".into(), json!(row.title));
                diesel::update(coes::table.find(id))
                    .set(coes::title.eq(text.clone().unwrap_or_default()))
                    .execute(conn)?;
            }
            "owner" => {
                before.insert("owner".into(), json!(row.owner_email));
                diesel::update(coes::table.find(id))
                    .set(coes::owner_email.eq(text.clone()))
                    .execute(conn)?;
            }
            "reviewer" => {
                before.insert("reviewer".into(), json!(row.reviewer_email));
                diesel::update(coes::table.find(id))
                    .set(coes::reviewer_email.eq(text.clone()))
                    .execute(conn)?;
            }
            "severity" => {
                before.insert(
                    "severity".into(),
                    json!(Severity::from_rank(row.severity).map(|s| s.as_str())),
                );
                let rank = text
                    .as_deref()
                    .and_then(|s| s.parse::<Severity>().ok())
                    .map_or(row.severity, Severity::rank);
                diesel::update(coes::table.find(id))
                    .set(coes::severity.eq(rank))
                    .execute(conn)?;
            }
            "service" => {
                before.insert("service".into(), json!(row.service));
                diesel::update(coes::table.find(id))
                    .set(coes::service.eq(text.clone().filter(|s| !s.is_empty())))
                    .execute(conn)?;
            }
            _ => continue,
        }
        after.insert((*field).to_owned(), value.clone());
    }
    record_change(
        conn,
        id,
        actor,
        "update",
        Some(Value::Object(before)),
        Some(Value::Object(after)),
        now,
    )?;
    Ok(())
}
