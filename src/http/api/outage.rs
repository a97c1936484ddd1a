//! One outage, one COE: the incidents a COE covers, attached and detached, and drafts of
//! the same outage merged into it.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::coes::write_then_show;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiJson, PathId};
use crate::http::state::AppState;
use crate::services::coe::coes::{self, CoeDocument};

/// Which incident to attach.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachInput {
    pub incident_id: String,
}

/// Attaches an incident to a COE (a draft or in review): one outage, one COE. Its
/// alerts join the timeline; the COE's times follow all its incidents. No `If-Match`
/// (it cannot conflict with another's change).
#[utoipa::path(operation_id = "attach_coe_incident", post, path = "/api/v1/coes/{id}/incidents", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = AttachInput,
    responses(
        (status = 200, description = "The document, with the incident in `incident_ids`", body = CoeDocument),
        (status = 403, description = "Not someone who may change the COE", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The incident is another COE's, or the COE is approved or closed", body = ErrorBody),
        (status = 422, description = "No such incident", body = ErrorBody),
    ))]
pub async fn attach_incident(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<AttachInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let incident = body.0.incident_id;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| coes::attach_incident(conn, id, &incident, who, state.env()),
    )
    .await
}

/// Detaches an incident from a COE; never its last.
#[utoipa::path(operation_id = "detach_coe_incident", delete, path = "/api/v1/coes/{id}/incidents/{incident_id}", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("incident_id" = String, Path, description = "The incident's id")),
    responses(
        (status = 200, description = "The document without the incident", body = CoeDocument),
        (status = 404, description = "No such COE, or it does not cover that incident", body = ErrorBody),
        (status = 409, description = "Its only incident, or the COE is approved or closed", body = ErrorBody),
    ))]
pub async fn detach_incident(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    incident: PathId<ids::CoveredIncident>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let incident = incident.into_inner();
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| coes::detach_incident(conn, id, &incident, who, state.env()),
    )
    .await
}

/// Which drafts to merge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeInput {
    /// The drafts to fold into this COE (at most 50).
    pub coe_ids: Vec<String>,
}

/// Folds drafts of the same outage into this COE (a draft or in review), in one
/// transaction: their incidents are attached, text written in their sections is
/// appended under a heading naming each, their timeline entries, 5 whys, related
/// items and actions move; each ends `merged` with `merged_into`. Everyone involved is
/// emailed once.
#[utoipa::path(operation_id = "merge_coes", post, path = "/api/v1/coes/{id}/merge", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE the drafts go into")),
    request_body = MergeInput,
    responses(
        (status = 200, description = "The COE, covering the drafts' incidents", body = CoeDocument),
        (status = 403, description = "Not someone who may change this COE", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "A named COE is not a draft, or this one is approved or closed", body = ErrorBody),
        (status = 422, description = "No drafts named, an unknown one, or this COE itself", body = ErrorBody),
    ))]
pub async fn merge(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<MergeInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let sources = body.0.coe_ids;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, state| coes::merge(conn, id, &sources, who, state.env()),
    )
    .await
}
