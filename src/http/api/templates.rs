//! COE templates: every one there is with its versions (`GET /api/v1/templates`),
//! and a new version saved by an admin (`POST /api/v1/templates/{name}`), as the
//! admin page saves it; the rules that pick a new COE's template
//! (`/api/v1/template-rules`) and which one a COE would get (`…/check`).

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::ApiJson;
use crate::http::state::{with_conn, AppState};
use crate::services::coe::template_rules::{
    self, Answer, KeptRule, Question, QuestionError, RuleSet, RulesDraft,
};
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

/// The rules that pick the template of a new COE: the settings file's (read there,
/// first) and those kept in coe (changed here), in order.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TemplateRules {
    /// `[[coe.templates]]`, read first, each with its template's name.
    pub settings_file: Vec<KeptRule>,
    /// Those kept in coe, read after.
    pub kept: RuleSet,
}

/// Every rule that picks a new COE's template, in the order they are read.
#[utoipa::path(operation_id = "list_template_rules", get, path = "/api/v1/template-rules", tag = "coes", security(("bearer" = [])),
    responses(
        (status = 200, description = "The rules", body = TemplateRules),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
    ))]
pub async fn rules(_: Member, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let kept = with_conn(&state, |conn, _| Ok(template_rules::kept(conn)?)).await?;
    Ok(HttpResponse::Ok().json(TemplateRules {
        settings_file: template_rules::of_file(state.env()),
        kept,
    }))
}

/// Replaces the rules kept in coe with a new ordered list (a new version); COEs
/// opened from now on are picked by it. The settings file's rules are read first
/// and changed there.
#[utoipa::path(operation_id = "save_template_rules", put, path = "/api/v1/template-rules", tag = "admin", security(("bearer" = [])),
    request_body(content = RulesDraft, description = "The whole list, and the version it was made from"),
    responses(
        (status = 200, description = "The rules saved", body = RuleSet),
        (status = 400, description = "Malformed JSON, a wrong type or an unknown field", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 409, description = "Another admin saved the rules since they were read", body = ErrorBody),
        (status = 422, description = "A rule names no template coe has, or says no when (the rule and field are named)", body = ErrorBody),
    ))]
pub async fn save_rules(
    Admin(caller): Admin,
    body: ApiJson<RulesDraft>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (draft, by) = (body.0, caller.actor());
    let saved = with_conn(&state, move |conn, state| {
        Ok(template_rules::save(
            conn,
            state.env(),
            &by,
            draft,
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(saved))
}

/// Which template a new COE would get now: for an incident (its severity, service,
/// labels and owner), or for the facts given.
#[utoipa::path(operation_id = "check_template_rules", post, path = "/api/v1/template-rules/check", tag = "coes", security(("bearer" = [])),
    request_body(content = Question, description = "An incident_id, or a severity, service, team and labels"),
    responses(
        (status = 200, description = "The template and the rule that picks it", body = Answer),
        (status = 400, description = "Malformed JSON, a wrong type or an unknown field", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 404, description = "No such incident", body = ErrorBody),
    ))]
pub async fn check_rules(
    _: Member,
    body: ApiJson<Question>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let question = body.0;
    let answer = with_conn(&state, move |conn, state| {
        template_rules::answer(conn, &state.env(), &question).map_err(|e| match e {
            QuestionError::NoIncident(id) => {
                ApiError::NotFound(format!("no incident `{}`", id.escape_default()))
            }
            QuestionError::Database(e) => e.into(),
        })
    })
    .await?;
    Ok(HttpResponse::Ok().json(answer))
}
