//! A COE's summary for customers: published once the COE is approved (`POST
//! /api/v1/coes/{id}/publication`), read (`GET`), revoked (`DELETE`). The public page
//! itself is `pages::publishing`.

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, OptionalJson, PathId};
use crate::http::state::{with_conn, AppState};
use crate::services::coe::publishing::{self, PublicationView, PublishRequest};

/// Publishes the COE's section written for customers: a public page at an
/// unguessable address, and a post to each Statuspage (when `statuspage_incident`
/// is given) and webhook channel, delivered like chat notices.
#[utoipa::path(operation_id = "publish_summary", post, path = "/api/v1/coes/{id}/publication", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body(content = PublishRequest, description = "Optional: the Statuspage incident it is the postmortem of"),
    responses(
        (status = 201, description = "Published: `url` is the public page", body = PublicationView),
        (status = 403, description = "Not the COE's owner, its reviewer or an admin", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not approved yet, published already, or its template has no section for customers", body = ErrorBody),
        (status = 422, description = "The section is empty, names a person or an internal host (named), or the incident id is malformed", body = ErrorBody),
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

/// Takes the public page down: its address answers 404 from now on (what a
/// Statuspage or webhook was sent stays there).
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
