//! `/api/v1/coes`: open, read, search, edit, export COE writeups.
//!
//! Every write names the version it is based on in `If-Match` (the `ETag` of the last
//! read); a stale write is refused with 412 and the current version, never applied.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::db::DbConnection;
use crate::domain::coe::CoeState;
use crate::domain::search::SearchText;
use crate::domain::Severity;
use crate::error::{ApiError, ErrorBody, FieldProblem};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiJson, ApiQuery, IfMatch, PathId};
use crate::http::pagination::{self, Listed, Page};
use crate::http::state::{search_turn, with_conn, with_write, AppState};
use crate::services::access::Editor;
use crate::services::coe::coes::{
    self, CoeDocument, CoeError, CoePatch, CoeSummary, HistoryEntry, NewCoe, RelatedInput,
    TimelineInput, WhyChainInput,
};
use crate::services::directory::tokens::Caller;

impl From<CoeError> for ApiError {
    fn from(e: CoeError) -> Self {
        match e {
            CoeError::NotFound(what) => {
                ApiError::NotFound(format!("no such COE or item: `{what}`"))
            }
            e @ (CoeError::Stale { .. } | CoeError::SectionChanged { .. }) => {
                ApiError::PreconditionFailed(e.to_string())
            }
            e @ CoeError::VersionRequired { .. } => ApiError::PreconditionRequired(e.to_string()),
            e @ CoeError::NotEditable { .. } => ApiError::Conflict {
                message: e.to_string(),
                fields: vec![],
            },
            CoeError::Invalid(problems) => ApiError::Validation(
                problems
                    .into_iter()
                    .map(|(f, p)| FieldProblem::new(f, p))
                    .collect(),
            ),
            CoeError::Conflict(message) => ApiError::Conflict {
                message,
                fields: vec![],
            },
            CoeError::Forbidden(message) => ApiError::Forbidden(message),
            CoeError::Database(e) => e.into(),
        }
    }
}

/// The document with its version as `ETag`.
pub(super) fn document_response(status: StatusCode, doc: CoeDocument) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::ETAG, format!("\"{}\"", doc.version)))
        .json(doc)
}

/// Runs a write on the COE `id` by the caller (the service checks, inside its
/// transaction, that the caller may change it) and answers with the whole updated
/// document. The write goes through `with_write` (on SQLite, the writer's next
/// batch: the edits that wait together share one commit); the document is read
/// after the commit, on a connection of the pool, so the writer reads nothing.
pub(super) async fn write_then_show<T: Send + 'static>(
    state: &web::Data<AppState>,
    caller: &Caller,
    id: PathId<ids::Coe>,
    status: StatusCode,
    write: impl FnOnce(&mut DbConnection, &str, &Editor<'_>, &AppState) -> Result<T, CoeError>
        + Send
        + 'static,
) -> Result<HttpResponse, ApiError> {
    let (id, acting) = (id.into_inner(), caller.acting());
    let written = id.clone();
    with_write(state, move |conn, state| {
        Ok(write(conn, &written, &acting.editor(), state)?)
    })
    .await?;
    Ok(document_response(status, document(state, id).await?))
}

/// COE `id`'s whole document, read on a connection of the pool (after the write that
/// changed it committed, when there was one).
pub(super) async fn document(
    state: &web::Data<AppState>,
    id: String,
) -> Result<CoeDocument, ApiError> {
    with_conn(state, move |conn, state| {
        Ok(coes::load(conn, &id, state.env())?)
    })
    .await
}

/// Opens a COE by hand: for an incident below the COE policy, or for no incident.
#[utoipa::path(operation_id = "create_coe", post, path = "/api/v1/coes", tag = "coes", security(("bearer" = [])),
    request_body = NewCoe,
    responses(
        (status = 201, description = "The new draft; its ETag is its version", body = CoeDocument),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not write COEs", body = ErrorBody),
        (status = 409, description = "The incident already has a COE", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
pub async fn create(
    Member(caller): Member,
    body: ApiJson<NewCoe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (input, actor) = (body.0, caller.actor());
    let id = with_write(&state, move |conn, state| {
        Ok(coes::create(conn, input, &actor, &state.env())?)
    })
    .await?;
    Ok(document_response(
        StatusCode::CREATED,
        document(&state, id).await?,
    ))
}

/// The whole COE: sections with guidance and completeness, timeline, 5 whys, related
/// items, recurrence, and the completeness report with its warnings.
#[utoipa::path(operation_id = "get_coe", get, path = "/api/v1/coes/{id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "The document; ETag is its version", body = CoeDocument),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(document_response(
        StatusCode::OK,
        document(&state, id.into_inner()).await?,
    ))
}

/// Changes title, owner, reviewer, severity or service. Needs `If-Match`.
#[utoipa::path(operation_id = "patch_coe", patch, path = "/api/v1/coes/{id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = CoePatch,
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The COE can no longer be edited", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "A field is invalid", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn patch(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    IfMatch(expected): IfMatch,
    body: ApiJson<CoePatch>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let patch = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| coes::patch(conn, id, patch, expected, who, state.env()),
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionBody {
    /// Markdown, stored as written.
    pub body: String,
    /// The section's `revision` the change is based on: when given, the change is
    /// checked against this section only (another section saved meanwhile does not
    /// refuse it) and `If-Match` is not needed.
    #[serde(default)]
    pub based_on: Option<String>,
}

/// Writes a text section's Markdown. Needs `If-Match`, or `based_on` (the section's
/// revision) for a check of this section only.
#[utoipa::path(operation_id = "put_coe_section", put, path = "/api/v1/coes/{id}/sections/{key}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("key" = String, Path, description = "A text section's key, e.g. summary"),
           ("If-Match" = Option<String>, Header, description = "The version the change is based on (unless `based_on` names the section's revision)")),
    request_body = SectionBody,
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The COE can no longer be edited", body = ErrorBody),
        (status = 412, description = "The COE changed since that version, or the section since that revision", body = ErrorBody),
        (status = 422, description = "Unknown section (the template's keys are listed), or body too long", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn put_section(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    path: web::Path<(String, String)>,
    IfMatch(expected): IfMatch,
    body: ApiJson<SectionBody>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (_, key) = path.into_inner();
    let SectionBody { body, based_on } = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            let Some(based_on) = based_on else {
                return coes::put_section(conn, id, &key, &body, expected, who, &state.env());
            };
            let edit = coes::SectionEdit {
                key,
                body,
                based_on,
            };
            let edits = std::slice::from_ref(&edit);
            let saved = match coes::put_sections(conn, id, edits, who, &state.env()) {
                // One section, so its problem is the body's.
                Err(CoeError::Invalid(problems)) => Err(CoeError::Invalid(
                    problems
                        .into_iter()
                        .map(|(f, p)| {
                            if f == edit.key {
                                ("body".to_owned(), p)
                            } else {
                                (f, p)
                            }
                        })
                        .collect(),
                )),
                other => other,
            }?;
            match saved.conflicts.into_iter().next() {
                Some(c) => Err(CoeError::SectionChanged {
                    key: c.key,
                    based_on: edit.based_on,
                    current: c.revision,
                }),
                None => Ok(()),
            }
        },
    )
    .await
}

/// Adds a timeline entry. Needs `If-Match`.
#[utoipa::path(operation_id = "add_coe_timeline_entry", post, path = "/api/v1/coes/{id}/timeline", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = TimelineInput,
    responses(
        (status = 201, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "No valid time, unknown kind, or empty text", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn add_timeline(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    IfMatch(expected): IfMatch,
    body: ApiJson<TimelineInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::CREATED,
        move |conn, id, who, state| {
            coes::add_timeline(conn, id, &input, expected, who, state.env())
        },
    )
    .await
}

/// Replaces a timeline entry. Needs `If-Match`.
#[utoipa::path(operation_id = "edit_coe_timeline_entry", put, path = "/api/v1/coes/{id}/timeline/{entry_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("entry_id" = String, Path, description = "The entry's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = TimelineInput,
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE or entry", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "No valid time, unknown kind, or empty text", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn edit_timeline(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    entry: PathId<ids::TimelineEntry>,
    IfMatch(expected): IfMatch,
    body: ApiJson<TimelineInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let entry = entry.into_inner();
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            coes::edit_timeline(conn, id, &entry, &input, expected, who, state.env())
        },
    )
    .await
}

/// Deletes a timeline entry. Needs `If-Match`.
#[utoipa::path(operation_id = "delete_coe_timeline_entry", delete, path = "/api/v1/coes/{id}/timeline/{entry_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("entry_id" = String, Path, description = "The entry's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE or entry", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn delete_timeline(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    entry: PathId<ids::TimelineEntry>,
    IfMatch(expected): IfMatch,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let entry = entry.into_inner();
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            coes::delete_timeline(conn, id, &entry, expected, who, state.env())
        },
    )
    .await
}

/// Adds a 5-whys chain. Needs `If-Match`.
#[utoipa::path(operation_id = "add_coe_why_chain", post, path = "/api/v1/coes/{id}/whys", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = WhyChainInput,
    responses(
        (status = 201, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "An empty why or because", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn add_whys(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    IfMatch(expected): IfMatch,
    body: ApiJson<WhyChainInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::CREATED,
        move |conn, id, who, state| {
            coes::add_why_chain(conn, id, &input, expected, who, state.env())
        },
    )
    .await
}

/// Replaces a 5-whys chain's steps. Needs `If-Match`.
#[utoipa::path(operation_id = "replace_coe_why_chain", put, path = "/api/v1/coes/{id}/whys/{chain_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("chain_id" = String, Path, description = "The chain's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = WhyChainInput,
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE or chain", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "An empty why or because", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn replace_whys(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    chain: PathId<ids::WhyChain>,
    IfMatch(expected): IfMatch,
    body: ApiJson<WhyChainInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let chain = chain.into_inner();
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            coes::replace_why_chain(conn, id, &chain, &input, expected, who, state.env())
        },
    )
    .await
}

/// Deletes a 5-whys chain. Needs `If-Match`.
#[utoipa::path(operation_id = "delete_coe_why_chain", delete, path = "/api/v1/coes/{id}/whys/{chain_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("chain_id" = String, Path, description = "The chain's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE or chain", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn delete_whys(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    chain: PathId<ids::WhyChain>,
    IfMatch(expected): IfMatch,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let chain = chain.into_inner();
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            coes::delete_why_chain(conn, id, &chain, expected, who, state.env())
        },
    )
    .await
}

/// Adds a related item (link, ticket, runbook, change, or another COE). Needs `If-Match`.
#[utoipa::path(operation_id = "add_coe_related_item", post, path = "/api/v1/coes/{id}/related", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    request_body = RelatedInput,
    responses(
        (status = 201, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 422, description = "Unknown kind, bad URL or unknown COE", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn add_related(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    IfMatch(expected): IfMatch,
    body: ApiJson<RelatedInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::CREATED,
        move |conn, id, who, state| coes::add_related(conn, id, &input, expected, who, state.env()),
    )
    .await
}

/// Removes a related item. Needs `If-Match`.
#[utoipa::path(operation_id = "delete_coe_related_item", delete, path = "/api/v1/coes/{id}/related/{item_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("item_id" = String, Path, description = "The item's id"),
           ("If-Match" = String, Header, description = "The version the change is based on")),
    responses(
        (status = 200, description = "The updated document", body = CoeDocument),
        (status = 404, description = "No such COE or item", body = ErrorBody),
        (status = 412, description = "The COE changed since that version", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn delete_related(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    item: PathId<ids::RelatedItem>,
    IfMatch(expected): IfMatch,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let item = item.into_inner();
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| {
            coes::delete_related(conn, id, &item, expected, who, state.env())
        },
    )
    .await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct History {
    /// Oldest first.
    pub changes: Vec<HistoryEntry>,
}

/// Every change to the COE: who, when, what, before, after.
#[utoipa::path(operation_id = "coe_history", get, path = "/api/v1/coes/{id}/history", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "The audit trail, oldest first", body = History),
        (status = 404, description = "No such COE", body = ErrorBody),
    ))]
pub async fn history(
    _: Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let changes = with_conn(&state, move |conn, _| Ok(coes::history(conn, &id)?)).await?;
    Ok(HttpResponse::Ok().json(History { changes }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CoeQuery {
    /// Words to find in titles, writeups (sections, timeline, 5 whys) and corrective
    /// actions (title, description, success criteria, closing notes), each or a form of
    /// it; words in double quotes must stand together as typed. Ranked: the words
    /// typed side by side first, then each near the next, then the rest.
    pub q: Option<String>,
    /// draft, in_review, approved or closed.
    #[param(value_type = Option<String>)]
    pub state: Option<CoeState>,
    pub service: Option<String>,
    /// Exactly this severity.
    #[param(value_type = Option<String>)]
    pub severity: Option<Severity>,
    pub owner: Option<String>,
    /// Owned by someone of this team (the directory's teams, any case).
    pub team: Option<String>,
    /// Without `q`: newest (the default), oldest, updated (most recently changed
    /// first) or severity (worst first).
    #[param(value_type = Option<String>)]
    pub sort: Option<coes::CoeSort>,
    /// Created at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Created before this RFC 3339 time.
    pub until: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// A page of COEs.
pub type CoePage = Page<CoeSummary>;

impl Listed for CoeSummary {
    const FIELD: &'static str = "coes";
    const PAGE: &'static str = "CoePage";
    const ORDER: Option<&'static str> = Some("Best match first with `q`, else newest first.");
}

/// Lists COEs with filters, or searches them with `q` (full-text, ranked).
#[utoipa::path(operation_id = "list_coes", get, path = "/api/v1/coes", tag = "coes", security(("bearer" = [])),
    params(CoeQuery),
    responses(
        (status = 200, description = "A page of COEs", body = CoePage),
        (status = 422, description = "A bad query parameter", body = ErrorBody),
    ))]
pub async fn list(
    _: Member,
    query: ApiQuery<CoeQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = query.0;
    let (limit, offset) = pagination::limits(q.limit, q.offset)?;
    let text = match q.q.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(text) => Some(
            SearchText::parse(text).map_err(|refused| ApiError::field("q", refused.to_string()))?,
        ),
        None => None,
    };
    let filter = coes::CoeFilter {
        text,
        search_within: Some(Duration::from_millis(
            state.settings.server.search_timeout_ms,
        )),
        state: q.state,
        service: q.service,
        severity: q.severity,
        owner: q.owner.map(|o| o.trim().to_lowercase()),
        since: crate::http::time_param("since", q.since.as_deref())?,
        until: crate::http::time_param("until", q.until.as_deref())?,
        reviewer: None,
        team: q
            .team
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim().to_owned()),
        sort: q.sort.unwrap_or_default(),
    };
    // A search waits for its turn, so that searches never hold every connection.
    let _turn = match filter.text {
        Some(_) => Some(search_turn(&state).await?),
        None => None,
    };
    let found = with_conn(&state, move |conn, _| {
        Ok(coes::list(conn, &filter, limit, offset)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(CoePage::new(found, limit, offset)))
}

/// The whole COE as Markdown, for a wiki or the review meeting.
#[utoipa::path(operation_id = "export_coe", get, path = "/api/v1/coes/{id}/export.md", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Markdown", content_type = "text/markdown", body = String),
        (status = 404, description = "No such COE", body = ErrorBody),
    ))]
pub async fn export(
    _: Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let markdown = with_conn(&state, move |conn, state| {
        let doc = coes::load(conn, &id, state.env())?;
        crate::services::figures::export::markdown(&doc).map_err(ApiError::Internal)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .content_type("text/markdown; charset=utf-8")
        .body(markdown))
}
