//! Changing a COE: the version check every write starts with, and its own fields
//! (title, owner, reviewer, severity, service); its text sections are `sections`.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::{load_row, record_change, Actor, CoeError};
use crate::db::models::CoeRow;
use crate::db::schema::coes;
use crate::db::{self, types, DbConnection};
use crate::domain::coe::{self, CoeState};
use crate::domain::email::same_person_opt;
use crate::domain::Severity;
use crate::services::access::{self, Editor};
use crate::services::directory::people;
use crate::services::outbound::{self, CoeEvent};
use crate::services::Env;

/// What a change is based on: the version of the COE its writer saw (every change but
/// a text section's), or the sections' own revisions, checked section by section by
/// the change itself (`put_sections`).
#[derive(Clone, Copy)]
pub(super) enum Based {
    Version(Option<i32>),
    /// The change checks what it changes itself (a section's revision, an owner
    /// still missing).
    Unversioned,
}

/// Loads the COE for a change: checks that it exists, that `who` may change it, that the writer saw the current
/// version (when the change is based on one), and that it may still be edited.
fn begin_change(
    conn: &mut DbConnection,
    id: &str,
    based: Based,
    who: &Editor<'_>,
) -> Result<CoeRow, CoeError> {
    // Who may change it is decided here, inside the write transaction, so the answer
    // holds for the change itself (an owner replaced meanwhile is seen).
    access::coe(conn, id, who)?;
    // Claim the version first: the conditional update takes the row's write lock, so
    // of two writers based on the same version exactly one gets on; the other waits,
    // then finds the version moved and is refused. Nothing is lost on PostgreSQL's
    // READ COMMITTED either. A change based on sections takes the lock the same way
    // and moves the version on, whatever it was.
    let claim = diesel::update(coes::table.filter(coes::id.eq(id)));
    let claimed = match based {
        Based::Version(None) => {
            let row = load_row(conn, id)?;
            return Err(CoeError::VersionRequired {
                current: row.version,
            });
        }
        Based::Version(Some(version)) => claim
            .filter(coes::version.eq(version))
            .set(coes::version.eq(coes::version + 1))
            .execute(conn)?,
        Based::Unversioned => claim
            .set(coes::version.eq(coes::version + 1))
            .execute(conn)?,
    };
    let row = load_row(conn, id)?;
    if let (0, Based::Version(Some(version))) = (claimed, based) {
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
    env: Env<'_>,
    change: impl FnOnce(
        &mut DbConnection,
        &CoeRow,
        NaiveDateTime,
    ) -> Result<(T, Option<Recorded>), CoeError>,
) -> Result<T, CoeError> {
    with_claim(conn, id, Based::Version(expected), who, env, change)
}

/// `with_change` for a change that cannot conflict with another's (attaching an
/// incident): based on the COE as it is now, whatever version the caller saw.
pub(super) fn with_current<T>(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
    change: impl FnOnce(
        &mut DbConnection,
        &CoeRow,
        NaiveDateTime,
    ) -> Result<(T, Option<Recorded>), CoeError>,
) -> Result<T, CoeError> {
    with_claim(conn, id, Based::Unversioned, who, env, change)
}

/// `with_change`, based on what `based` says.
pub(super) fn with_claim<T>(
    conn: &mut DbConnection,
    id: &str,
    based: Based,
    who: &Editor<'_>,
    env: Env<'_>,
    change: impl FnOnce(
        &mut DbConnection,
        &CoeRow,
        NaiveDateTime,
    ) -> Result<(T, Option<Recorded>), CoeError>,
) -> Result<T, CoeError> {
    db::write_transaction(conn, |conn| {
        let row = begin_change(conn, id, based, who)?;
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
        finish_change(conn, id, who.actor, env, now)?;
        Ok(done)
    })
}

/// Records the change time (the version was claimed by `begin_change`), refreshes
/// the search index, and withdraws an approval given to the version before
/// (`approval::withdraw_stale_approval`).
fn finish_change(
    conn: &mut DbConnection,
    id: &str,
    actor: &str,
    env: Env<'_>,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    diesel::update(coes::table.find(id))
        .set(coes::updated_at.eq(now))
        .execute(conn)?;
    outbound::happened(conn, env, actor, CoeEvent::Changed { id }, now)?;
    Ok(())
}

/// Makes `who` the owner of an unowned COE (the "Take ownership" button); refused
/// when someone owns it already (they may have taken it a moment before).
pub fn take_ownership(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    let Some(me) = who.email else {
        return Err(CoeError::Forbidden(
            "a token that stands for no person cannot take a COE".into(),
        ));
    };
    // Taken meanwhile: say by whom (the change below, under the COE's lock, would
    // only say that others may not change it).
    if let Some(owner) = load_row(conn, id)?.owner_email {
        return Err(CoeError::Conflict(format!("{owner} owns this COE already")));
    }
    with_claim(conn, id, Based::Unversioned, who, env, |conn, row, now| {
        if let Some(owner) = &row.owner_email {
            return Err(CoeError::Conflict(format!("{owner} owns this COE already")));
        }
        if same_person_opt(
            row.reviewer_email.as_deref(),
            Some(me),
            &env.settings.auth.dotless_domains,
        ) {
            return Err(CoeError::invalid(
                "owner",
                "you review this COE: its owner and reviewer must be two people",
            ));
        }
        apply_patch(conn, id, &[("owner", json!(me))], who.actor, now)?;
        let after = load_row(conn, id)?;
        let assigned = CoeEvent::Assigned {
            before: row,
            after: &after,
            replaced: None,
        };
        outbound::happened(conn, env, who.actor, assigned, now)?;
        Ok(((), None))
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
    /// While a draft: another template by name (`coe.template`'s, or one of
    /// `coe.templates`). Text under the keys both have stays; the rest is kept and
    /// shown apart (`from_previous_template`).
    #[serde(default)]
    pub template: Option<String>,
}

/// Changes title, owner, reviewer, severity, service or (a draft's) template.
pub fn patch(
    conn: &mut DbConnection,
    id: &str,
    patch: CoePatch,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, row, now| {
        let actor = who.actor;
        let mut changes = Vec::new();
        if let Some(title) = &patch.title {
            let title = coe::check_title(title).map_err(|p| CoeError::invalid("title", p))?;
            changes.push(("title", json!(title)));
        }
        if let Some(owner) = &patch.owner {
            super::check_person(conn, env, "owner", owner.as_str())?;
            changes.push(("owner", json!(owner.as_str())));
        }
        if let Some(reviewer) = &patch.reviewer {
            super::check_person(conn, env, "reviewer", reviewer.as_str())?;
            if let Some(problem) = people::check_reviewer(conn, reviewer.as_str())? {
                return Err(CoeError::invalid("reviewer", problem));
            }
        }
        let dotless = &env.settings.auth.dotless_domains;
        let reviewer_named = patch
            .reviewer
            .as_ref()
            .filter(|r| row.reviewer_email.as_deref() != Some(r.as_str()));
        if let Some(reviewer) = &patch.reviewer {
            changes.push(("reviewer", json!(reviewer.as_str())));
        }
        if let Some(named) = reviewer_named {
            check_naming_reviewer(who, named.as_str(), dotless)?;
        }
        check_separate_people(conn, row, &patch, dotless)?;
        if let Some(severity) = patch.severity {
            changes.push(("severity", json!(severity)));
        }
        if let Some(service) = &patch.service {
            let service =
                coe::check_service(service).map_err(|p| CoeError::invalid("service", p))?;
            changes.push(("service", json!(service)));
        }
        let switched = match &patch.template {
            Some(name) => Some(switch_template(conn, row, name, env)?),
            None => None,
        };
        if changes.is_empty() && switched.is_none() {
            return Err(CoeError::invalid(
                "body",
                "names nothing to change (title, owner, reviewer, severity, service, template)",
            ));
        }
        if let Some((from, to)) = switched {
            record_change(
                conn,
                id,
                actor,
                "template",
                Some(json!({"template": from})),
                Some(json!({"template": to})),
                now,
            )?;
        }
        if changes.is_empty() {
            return Ok(((), None));
        }
        // Recorded field by field (`apply_patch`), not as one change.
        apply_patch(conn, id, &changes, actor, now)?;
        if reviewer_named.is_some() {
            diesel::update(coes::table.find(id))
                .set(coes::reviewer_named_by.eq(who.principal))
                .execute(conn)?;
        }
        let replaced = back_to_draft_for_new_reviewer(conn, row, &patch, actor, now)?;
        let after = load_row(conn, id)?;
        let assigned = CoeEvent::Assigned {
            before: row,
            after: &after,
            replaced: row.reviewer_email.as_deref().filter(|_| replaced),
        };
        outbound::happened(conn, env, actor, assigned, now)?;
        Ok(((), None))
    })
}

/// Refuses naming `named` the COE's reviewer when `who` may not: separation of
/// duties wants a reviewer named by someone else, and by a person who can be held
/// to it.
fn check_naming_reviewer(
    who: &Editor<'_>,
    named: &str,
    dotless: &[String],
) -> Result<(), CoeError> {
    // Separation of duties: a reviewer is named by someone else (the owner, an
    // admin), so that nobody approves a writeup they chose to review themselves.
    if who.is_same_person(named, dotless) {
        return Err(CoeError::invalid(
            "reviewer",
            "must not be you: nobody names themselves a COE's reviewer; ask its owner or \
             an admin to name you",
        ));
    }
    // Whoever names a reviewer must be a person who can be held to it: a token
    // for nobody could name its holder unseen.
    if !who.is_person() {
        return Err(CoeError::invalid(
            "reviewer",
            "a token that stands for no person cannot name a reviewer: use a token of \
             your own (one that names you) or the COE's page",
        ));
    }
    Ok(())
}

/// Refuses a change of COE `row` that would make one person hold two of its seats:
/// the owner, the reviewer and the bar raiser are three people.
fn check_separate_people(
    conn: &mut DbConnection,
    row: &CoeRow,
    patch: &CoePatch,
    dotless: &[String],
) -> Result<(), CoeError> {
    let same = |a: Option<&str>, b: Option<&str>| same_person_opt(a, b, dotless);
    // The bar raiser's approval is a second person's, from outside: never the
    // reviewer's, never the owner's (a COE handed to its bar raiser after they
    // approved would be approved by its owner).
    let bar_raiser: Option<String> = coes::table
        .find(&row.id)
        .select(coes::bar_raiser_email)
        .first(conn)?;
    if let Some(reviewer) = &patch.reviewer {
        if same(bar_raiser.as_deref(), Some(reviewer.as_str())) {
            return Err(CoeError::invalid(
                "reviewer",
                "is the COE's bar raiser: its reviewer and its bar raiser must be two people",
            ));
        }
    }
    if let Some(owner) = &patch.owner {
        if same(bar_raiser.as_deref(), Some(owner.as_str())) {
            return Err(CoeError::invalid(
                "owner",
                "is the COE's bar raiser: its owner and its bar raiser must be two people \
                 (an admin may name another bar raiser first)",
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
    if same(final_owner.as_deref(), final_reviewer.as_deref()) {
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
    Ok(())
}

/// Sends COE `row` back to draft when the patch gives it, in review, another
/// reviewer; says whether it did (the former reviewer is then told).
fn back_to_draft_for_new_reviewer(
    conn: &mut DbConnection,
    row: &CoeRow,
    patch: &CoePatch,
    actor: Actor<'_>,
    now: NaiveDateTime,
) -> Result<bool, CoeError> {
    // A COE in review is reviewed by the reviewer it was submitted to: a new
    // reviewer sends it back to draft (recorded), so it is submitted again to them
    // and nobody's review is taken away unseen. The former reviewer is told.
    let state: CoeState = types::read("coes.state", &row.state)?;
    let replaced = patch.reviewer.as_ref().is_some_and(|r| {
        state == CoeState::InReview && row.reviewer_email.as_deref() != Some(r.as_str())
    });
    if replaced {
        diesel::update(coes::table.find(&row.id))
            .set(coes::approved_by.eq(None::<String>))
            .execute(conn)?;
        crate::services::coe::lifecycle::move_to(
            conn,
            &row.id,
            CoeState::InReview,
            CoeState::Draft,
            actor,
            Some("the reviewer changed while in review: submit it again for the new reviewer"),
            now,
        )?;
    }
    Ok(replaced)
}

/// Gives draft `row` the template named `name`: refused for a COE past draft (its
/// sections were reviewed as they are) and for a name no template has. Returns the
/// names before and after.
fn switch_template(
    conn: &mut DbConnection,
    row: &CoeRow,
    name: &str,
    env: Env<'_>,
) -> Result<(String, String), CoeError> {
    let state: CoeState = types::read("coes.state", &row.state)?;
    if state != CoeState::Draft {
        return Err(CoeError::Conflict(format!(
            "the COE is {}: its template is chosen while it is a draft",
            state.as_str().replace('_', " ")
        )));
    }
    let templates = crate::services::coe::templates::all(conn, env)?;
    let names: Vec<String> = templates.iter().map(|t| t.name.clone()).collect();
    let Some(template) = templates.into_iter().find(|t| t.name == name.trim()) else {
        return Err(CoeError::invalid(
            "template",
            format!(
                "no template is named {name:?}; there are: {}",
                names.join(", ")
            ),
        ));
    };
    diesel::update(coes::table.find(&row.id))
        .set((
            coes::template.eq(serde_json::to_string(&template).unwrap_or_else(|_| "{}".into())),
            coes::template_name.eq(&template.name),
            coes::template_version.eq(i32::try_from(template.version).unwrap_or(i32::MAX)),
        ))
        .execute(conn)?;
    Ok((row.template_name.clone(), template.name))
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
