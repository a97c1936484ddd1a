//! Provisioning from the identity provider (SCIM 2.0): Users are people of the
//! directory, Groups are kept and some of them are teams (`scim.team_groups`). The
//! protocol itself (schemas, filters, PATCH, projection) is `crate::scim`; the routes
//! are `http::scim`. Every write runs in the caller's transaction.

use chrono::NaiveDateTime;
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::scim::{list_response, project, ListQuery, ScimError, PATCH_OP};
use scim_v2::models::others::{PatchOp, PatchOperation};

pub mod groups;
mod teams;
pub mod users;

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
fn object(body: &Value) -> Result<&Map<String, Value>, ApiError> {
    body.as_object().ok_or_else(|| {
        ScimError::bad(
            "invalidSyntax",
            "the body must be a JSON object (a SCIM resource)",
        )
        .into()
    })
}

/// The operations of a PATCH body (RFC 7644 section 3.5.2), or why not.
fn patch_ops(body: &Value) -> Result<Vec<PatchOperation>, ApiError> {
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

/// A ListResponse of the resources of `found` that match the query's filter: the page
/// asked for, each projected.
fn matching_page(found: impl Iterator<Item = Value>, q: &ListQuery) -> Value {
    let matching: Vec<Value> = found
        .filter(|r| {
            q.filter
                .as_ref()
                .is_none_or(|f| crate::scim::filter::matches(f, r))
        })
        .collect();
    let total = matching.len();
    let page = matching
        .into_iter()
        .skip(q.start_index - 1)
        .take(q.count)
        .collect();
    at_page(total, q, page)
}

/// A ListResponse of `page` (already the page asked for), each projected.
fn at_page(total: usize, q: &ListQuery, page: Vec<Value>) -> Value {
    let page = page
        .into_iter()
        .map(|r| project(r, &q.attributes, &q.excluded))
        .collect();
    list_response(total, q.start_index, page)
}
