//! A COE's summary for customers: published once the COE is approved (`POST
//! /api/v1/coes/{id}/publication`), read (`GET`), revoked (`DELETE`); a change of it
//! after approval asked for (`PUT …/publication/change`) and decided by the reviewer
//! (`POST …/publication/change/decision`); what was published (`GET
//! /api/v1/publications`). The public page itself is `pages::publishing`.

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::{ids, ApiJson, OptionalJson, PathId};
use crate::http::state::{with_conn, AppState};
use crate::services::coe::publishing::changes::{self, ChangeDecision, ChangeRequest, ChangeView};
use crate::services::coe::publishing::{self, PublicationView, PublishRequest};

/// Publishes the COE's section written for customers under a `title` written for
/// them: a public page at an unguessable address, and a post to each Statuspage
/// (when `statuspage_incident` is given) and webhook channel, delivered like chat
/// notices.
#[utoipa::path(operation_id = "publish_summary", post, path = "/api/v1/coes/{id}/publication", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body(content = PublishRequest, description = "The title for customers; optionally the Statuspage incident it is the postmortem of"),
    responses(
        (status = 201, description = "Published: `url` is the public page", body = PublicationView),
        (status = 403, description = "Not the COE's owner, its reviewer or an admin", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not approved yet, published already, or its template has no section for customers", body = ErrorBody),
        (status = 422, description = "The title is missing, the section is empty, either names a person or an internal host (named), or the incident id is malformed", body = ErrorBody),
    ))]
pub async fn publish(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: OptionalJson<PublishRequest>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, ask, acting) = (id.into_inner(), body.0.unwrap_or_default(), caller.acting());
    let view = with_conn(&state, move |conn, state| {
        Ok(publishing::publish(
            conn,
            state.env(),
            &id,
            &ask,
            &acting.editor(),
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Created().json(view))
}

/// The COE's publication: its public address while published, who published and
/// revoked it, and when.
#[utoipa::path(operation_id = "get_publication", get, path = "/api/v1/coes/{id}/publication", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Its publication", body = PublicationView),
        (status = 404, description = "No such COE, or never published", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let view = with_conn(&state, move |conn, state| {
        Ok(publishing::of(conn, state.env(), &id)?)
    })
    .await?
    .ok_or_else(|| ApiError::NotFound("its summary for customers was never published".into()))?;
    Ok(HttpResponse::Ok().json(view))
}

/// Takes the public page down: its address says the notice was withdrawn (without
/// its text) from now on; the Statuspage postmortem it became is reverted to a draft
/// and the webhooks are told.
#[utoipa::path(operation_id = "revoke_publication", delete, path = "/api/v1/coes/{id}/publication", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Revoked", body = PublicationView),
        (status = 403, description = "Not the COE's owner, its reviewer or an admin", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not published", body = ErrorBody),
    ))]
pub async fn revoke(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, acting) = (id.into_inner(), caller.acting());
    let view = with_conn(&state, move |conn, state| {
        Ok(publishing::revoke(
            conn,
            state.env(),
            &id,
            &acting.editor(),
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(view))
}

/// What the API answers to a change asked for: it, and the checks' warnings.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ChangeAsked {
    pub change: ChangeView,
    /// Words worth a second look (a given name that is also an ordinary word).
    pub warnings: Vec<String>,
}

/// Asks for a change of an approved COE's summary for customers (title and text):
/// checked as before submit; it waits for the reviewer's approval of that section
/// alone (a change already waiting is replaced).
#[utoipa::path(operation_id = "propose_summary_change", put, path = "/api/v1/coes/{id}/publication/change", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body(content = ChangeRequest, description = "The new title and text for customers"),
    responses(
        (status = 201, description = "It waits for the reviewer", body = ChangeAsked),
        (status = 400, description = "Malformed JSON, a wrong type or an unknown field", body = ErrorBody),
        (status = 403, description = "Not the COE's owner, its reviewer or an admin", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not approved, or its template has no section for customers", body = ErrorBody),
        (status = 422, description = "Empty, unchanged, too long, or naming a person or an internal host (the field named)", body = ErrorBody),
    ))]
pub async fn propose_change(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<ChangeRequest>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, ask, acting) = (id.into_inner(), body.0, caller.acting());
    let (change, warnings) = with_conn(&state, move |conn, state| {
        let now = crate::db::now();
        Ok(changes::propose(
            conn,
            state.env(),
            &id,
            &ask,
            &acting.editor(),
            now,
        )?)
    })
    .await?;
    Ok(HttpResponse::Created().json(ChangeAsked { change, warnings }))
}

/// The newest change of the COE's summary for customers: waiting, or how it was
/// decided.
#[utoipa::path(operation_id = "get_summary_change", get, path = "/api/v1/coes/{id}/publication/change", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Its newest change", body = ChangeView),
        (status = 404, description = "No such COE, or no change was asked for", body = ErrorBody),
    ))]
pub async fn get_change(
    _: Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let change = with_conn(&state, move |conn, _| Ok(changes::latest(conn, &id)?))
        .await?
        .ok_or_else(|| ApiError::NotFound("no change of its summary was asked for".into()))?;
    Ok(HttpResponse::Ok().json(change))
}

/// The reviewer approves the change waiting (it replaces what customers read, at the
/// same address) or sends it back with a `note`.
#[utoipa::path(operation_id = "decide_summary_change", post, path = "/api/v1/coes/{id}/publication/change/decision", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body(content = ChangeDecision, description = "Approve, or send back with a note"),
    responses(
        (status = 200, description = "Decided", body = ChangeView),
        (status = 400, description = "Malformed JSON, a wrong type or an unknown field", body = ErrorBody),
        (status = 403, description = "Not the COE's reviewer (an admin, for the reviewer's own change), or its writer", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "No change waits", body = ErrorBody),
        (status = 422, description = "Sent back without a note, or it names what it may not any more", body = ErrorBody),
    ))]
pub async fn decide_change(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<ChangeDecision>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, decision, acting) = (id.into_inner(), body.0, caller.acting());
    let change = with_conn(&state, move |conn, state| {
        let now = crate::db::now();
        Ok(changes::decide(
            conn,
            state.env(),
            &id,
            &decision,
            &acting.editor(),
            now,
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(change))
}

/// What was published for customers, newest first: each notice's title, address,
/// who published it and when, its last update, where it went and whether it was
/// taken down.
#[utoipa::path(operation_id = "list_publications", get, path = "/api/v1/publications", tag = "coes", security(("bearer" = [])),
    responses(
        (status = 200, description = "The publications, newest first (at most 500)", body = [publishing::Published]),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn list(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let list = with_conn(&state, move |conn, state| {
        Ok(publishing::published(conn, state.env(), false, 500)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(list))
}
