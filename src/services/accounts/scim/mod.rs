//! Provisioning from the identity provider (SCIM 2.0): Users are people of the
//! directory, Groups are kept and some of them are teams (`scim.team_groups`). The
//! protocol itself (schemas, filters, PATCH, projection) is `crate::scim`; the routes
//! are `http::scim`. Every write runs in the caller's transaction.

use chrono::NaiveDateTime;
use serde_json::{json, Map, Value};

use crate::scim::{
    clean_resource, list_response, project, ListQuery, ResourceKind, ScimError, PATCH_OP,
};
use scim_v2::models::others::{PatchOp, PatchOperation};

pub mod groups;
mod teams;
pub mod users;

/// Why a SCIM request was not done: the protocol's own refusal (answered in SCIM's
/// shape, `crate::scim::ScimError`), or the database's fault.
#[derive(Debug, thiserror::Error)]
pub enum ProvisioningError {
    #[error("{}", .0.detail)]
    Refused(ScimError),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl From<ScimError> for ProvisioningError {
    fn from(e: ScimError) -> Self {
        ProvisioningError::Refused(e)
    }
}

/// Who the audit and the ended sessions name for the provider's changes.
pub const BY: &str = "the identity provider (SCIM)";

/// What every SCIM write needs: where resources live, the settings and email
/// templates (a leaver's work passes on with a notice), the time.
pub struct Ctx<'a> {
    /// `PUBLIC_URL/scim/v2`.
    pub base: String,
    pub env: crate::services::Env<'a>,
    pub now: NaiveDateTime,
    /// Set when a write made someone leave (their tokens were revoked).
    pub someone_left: std::cell::Cell<bool>,
}

/// The body as a JSON object, or a refusal naming what it is instead.
fn object(body: &Value) -> Result<&Map<String, Value>, ProvisioningError> {
    body.as_object().ok_or_else(|| {
        ScimError::bad(
            "invalidSyntax",
            "the body must be a JSON object (a SCIM resource)",
        )
        .into()
    })
}

/// The operations of a PATCH body (RFC 7644 section 3.5.2), or why not.
fn patch_ops(body: &Value) -> Result<Vec<PatchOperation>, ProvisioningError> {
    let op: PatchOp = serde_json::from_value(body.clone()).map_err(|e| {
        ScimError::bad(
            "invalidSyntax",
            format!("the body is not a PATCH request: {e}"),
        )
    })?;
    if !op.schemas.iter().any(|s| s == PATCH_OP) {
        return Err(
            ScimError::bad("invalidSyntax", format!("schemas must name {PATCH_OP}")).into(),
        );
    }
    if op.operations.is_empty() {
        return Err(ScimError::bad("invalidValue", "Operations is empty").into());
    }
    Ok(op.operations)
}

fn stamp(t: NaiveDateTime) -> String {
    t.and_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn resource_meta(
    ctx: &Ctx,
    kind: &str,
    id: &str,
    created: NaiveDateTime,
    modified: NaiveDateTime,
) -> Value {
    json!({"resourceType": kind, "created": stamp(created), "lastModified": stamp(modified),
           "location": format!("{}/{kind}s/{id}", ctx.base)})
}

/// The most resources one filter is held against: a filter that the database cannot
/// narrow (by userName, externalId or id) to this many is refused `tooMany`.
pub const MAX_CANDIDATES: usize = 20_000;

/// What a list found: the page itself (no filter: paged by the database), or the
/// resources a filter may match, to be held against it without a connection.
pub enum Listed {
    Page(Value),
    Candidates(Vec<Value>),
}

/// SCIM's refusal of a filter that would take more than coe is willing to do
/// (RFC 7644 section 3.12, `tooMany`).
pub fn too_many(what: &str) -> ScimError {
    ScimError::bad(
        "tooMany",
        format!(
            "the filter would have coe look through more {what} than it does for one \
             request: filter by userName, externalId or id"
        ),
    )
}

/// What a PATCH starts from: the resource's document and a stamp of it as read, so
/// that the write can tell whether it changed meanwhile.
pub struct Seen {
    pub kind: ResourceKind,
    pub doc: Map<String, Value>,
    pub stamp: String,
}

/// The document `seen` becomes under the PATCH `body`, cleaned by the schema. Pure:
/// it runs with no connection held and outside the writer's turn.
pub fn patched(seen: &Seen, body: &Value) -> Result<Map<String, Value>, ProvisioningError> {
    let ops = patch_ops(body)?;
    let mut doc = seen.doc.clone();
    crate::scim::patch::apply(&mut doc, &ops)?;
    Ok(clean_resource(seen.kind, &doc)?)
}

/// The page of `found` that matches the query's filter, each projected; refused
/// `tooMany` when holding the filter against them runs past `until`.
pub fn filtered_page(
    found: Vec<Value>,
    q: &ListQuery,
    until: std::time::Instant,
) -> Result<Value, ScimError> {
    let mut matching = Vec::new();
    for (i, r) in found.into_iter().enumerate() {
        if i % 64 == 63 && std::time::Instant::now() > until {
            return Err(ScimError::bad(
                "tooMany",
                "the filter took longer than coe gives one request: filter by userName, \
                 externalId or id",
            ));
        }
        if q.filter
            .as_ref()
            .is_none_or(|f| crate::scim::filter::matches(f, &r))
        {
            matching.push(r);
        }
    }
    let total = matching.len();
    let page = matching
        .into_iter()
        .skip(q.start_index - 1)
        .take(q.count)
        .collect();
    Ok(at_page(total, q, page))
}

/// A ListResponse of `page` (already the page asked for), each projected.
fn at_page(total: usize, q: &ListQuery, page: Vec<Value>) -> Value {
    let page = page
        .into_iter()
        .map(|r| project(r, &q.attributes, &q.excluded))
        .collect();
    list_response(total, q.start_index, page)
}
