//! COE templates: every one there is with its versions (`GET /api/v1/templates`),
//! and a new version saved by an admin (`POST /api/v1/templates/{name}`), as the
//! admin page saves it.

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::ApiJson;
use crate::http::state::{with_conn, AppState};
use crate::services::coe::templates::{self, TemplateDraft, TemplateList};

/// Every template a COE may be opened with, each at its newest version, with where
/// that comes from, the versions saved here and how many COEs each version opened.
#[utoipa::path(operation_id = "list_templates", get, path = "/api/v1/templates", tag = "coes", security(("bearer" = [])),
    responses(
        (status = 200, description = "The templates", body = TemplateList),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
    ))]
pub async fn list(_: Member, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let all = with_conn(&state, |conn, state| {
        Ok(templates::listings(conn, state.env())?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(TemplateList { templates: all }))
}

/// Saves a new version of template `name` (a new name starts at version 1). COEs
/// opened from now on get it; those opened before keep the version they have.
#[utoipa::path(operation_id = "save_template", post, path = "/api/v1/templates/{name}", tag = "coes", security(("bearer" = [])),
    params(("name" = String, Path, description = "The template's name: a-z, 0-9, '-' and '_'")),
    request_body(content = TemplateDraft, description = "Its sections and contributing factors"),
    responses(
        (status = 201, description = "The version saved", body = Object),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 409, description = "Another admin saved the same version at the same moment", body = ErrorBody),
        (status = 422, description = "Not a template coe can open COEs with (the section and the problem are named)", body = ErrorBody),
    ))]
pub async fn save(
    Admin(caller): Admin,
    name: web::Path<String>,
    body: ApiJson<TemplateDraft>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (name, draft, by) = (name.into_inner(), body.0, caller.actor());
    let saved = with_conn(&state, move |conn, state| {
        Ok(templates::save(
            conn,
            state.env(),
            &name,
            draft,
            &by,
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Created().json(saved))
}
