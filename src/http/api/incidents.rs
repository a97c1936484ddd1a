//! Reading incidents and events.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::incident::IncidentState;
use crate::domain::{Role, Severity};
use crate::error::{ApiError, ErrorBody};
use crate::http::extract::ApiQuery;
use crate::http::state::AppState;
use crate::services::incidents::{self, EventDetail, Incident, IncidentDetail, IncidentFilter};
use crate::services::tokens::Caller;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct IncidentQuery {
    /// `open` or `resolved`.
    #[param(value_type = Option<String>)]
    pub status: Option<IncidentState>,
    /// Exactly this severity (`sev1`…`sev5`).
    #[param(value_type = Option<String>)]
    pub severity: Option<Severity>,
    /// This severity or worse.
    #[param(value_type = Option<String>)]
    pub min_severity: Option<Severity>,
    pub service: Option<String>,
    /// Started at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Started before this RFC 3339 time.
    pub until: Option<String>,
    /// Only incidents with (true) or without (false) the COE mark.
    pub needs_coe: Option<bool>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Incidents to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentPage {
    /// Newest first.
    pub incidents: Vec<Incident>,
    /// How many incidents match the filters in all.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// Lists incidents, newest first, with filters and pages.
#[utoipa::path(operation_id = "list_incidents", get, path = "/api/v1/incidents", tag = "incidents", security(("bearer" = [])),
    params(IncidentQuery),
    responses(
        (status = 200, description = "A page of incidents", body = IncidentPage),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not read", body = ErrorBody),
        (status = 422, description = "A bad query parameter", body = ErrorBody),
    ))]
pub async fn list(
    caller: Caller,
    query: ApiQuery<IncidentQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Member)?;
    let q = query.0;
    let (limit, offset) = crate::http::page(q.limit, q.offset)?;
    let filter = IncidentFilter {
        state: q.status,
        severity: q.severity,
        min_severity: q.min_severity,
        service: q.service,
        since: crate::http::time_param("since", q.since.as_deref())?,
        until: crate::http::time_param("until", q.until.as_deref())?,
        needs_coe: q.needs_coe,
    };
    let (incidents, total) = web::block(move || -> Result<_, ApiError> {
        let mut conn = state.pool.get()?;
        Ok(incidents::list(&mut conn, &filter, limit, offset)?)
    })
    .await??;
    Ok(HttpResponse::Ok().json(IncidentPage {
        incidents,
        total,
        limit,
        offset,
    }))
}

/// One incident with its events.
#[utoipa::path(operation_id = "get_incident", get, path = "/api/v1/incidents/{id}", tag = "incidents", security(("bearer" = [])),
    params(("id" = String, Path, description = "The incident's id")),
    responses(
        (status = 200, description = "The incident and its events, oldest first", body = IncidentDetail),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not read", body = ErrorBody),
        (status = 404, description = "No such incident", body = ErrorBody),
    ))]
pub async fn get(
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Member)?;
    let id = id.into_inner();
    let shown = id.escape_default().to_string();
    crate::http::checked_id(&id, "incident")?;
    let found = web::block(move || -> Result<_, ApiError> {
        let mut conn = state.pool.get()?;
        Ok(incidents::get(&mut conn, &id)?)
    })
    .await??;
    found
        .map(|detail| HttpResponse::Ok().json(detail))
        .ok_or_else(|| ApiError::NotFound(format!("no incident with id `{shown}`")))
}

/// One failure event with the delivery it arrived in, exactly as received.
#[utoipa::path(operation_id = "get_event", get, path = "/api/v1/events/{id}", tag = "events", security(("bearer" = [])),
    params(("id" = String, Path, description = "The event's id")),
    responses(
        (status = 200, description = "The event and its raw payload", body = EventDetail),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not read", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ))]
pub async fn event(
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Member)?;
    let id = id.into_inner();
    let shown = id.escape_default().to_string();
    crate::http::checked_id(&id, "event")?;
    let found = web::block(move || -> Result<_, ApiError> {
        let mut conn = state.pool.get()?;
        Ok(incidents::event(&mut conn, &id)?)
    })
    .await??;
    found
        .map(|detail| HttpResponse::Ok().json(detail))
        .ok_or_else(|| ApiError::NotFound(format!("no event with id `{shown}`")))
}
