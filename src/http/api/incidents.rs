//! Reading incidents and events.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::domain::incident::IncidentState;
use crate::domain::Severity;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiQuery, PathId};
use crate::http::pagination::{self, Listed, Page};
use crate::http::state::{with_conn, AppState};
use crate::services::incidents::{
    self, Event, EventDetail, Incident, IncidentDetail, IncidentFilter,
};

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

/// A page of incidents.
pub type IncidentPage = Page<Incident>;

impl Listed for Incident {
    const FIELD: &'static str = "incidents";
    const PAGE: &'static str = "IncidentPage";
    const ORDER: Option<&'static str> = Some("Newest first.");
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
    _: Member,
    query: ApiQuery<IncidentQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = query.0;
    let (limit, offset) = pagination::limits(q.limit, q.offset)?;
    let filter = IncidentFilter {
        state: q.status,
        severity: q.severity,
        min_severity: q.min_severity,
        service: q.service,
        since: crate::http::time_param("since", q.since.as_deref())?,
        until: crate::http::time_param("until", q.until.as_deref())?,
        needs_coe: q.needs_coe,
    };
    let found = with_conn(&state, move |conn, _| {
        Ok(incidents::list(conn, &filter, limit, offset)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(IncidentPage::new(found, limit, offset)))
}

/// One incident with its events.
#[utoipa::path(operation_id = "get_incident", get, path = "/api/v1/incidents/{id}", tag = "incidents", security(("bearer" = [])),
    params(("id" = String, Path, description = "The incident's id")),
    responses(
        (status = 200, description = "The incident and its first 100 events, oldest first", body = IncidentDetail),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not read", body = ErrorBody),
        (status = 404, description = "No such incident", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    id: PathId<ids::Incident>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = id.as_str().to_owned();
    let found = with_conn(&state, move |conn, _| Ok(incidents::get(conn, &key)?)).await?;
    found
        .map(|detail| HttpResponse::Ok().json(detail))
        .ok_or_else(|| id.not_found())
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Events to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// A page of an incident's events.
pub type EventPage = Page<Event>;

impl Listed for Event {
    const FIELD: &'static str = "events";
    const PAGE: &'static str = "EventPage";
    const ORDER: Option<&'static str> = Some("Oldest first.");
}

/// All of an incident's events, page by page (the incident shows the first 100).
#[utoipa::path(operation_id = "list_incident_events", get, path = "/api/v1/incidents/{id}/events", tag = "incidents", security(("bearer" = [])),
    params(("id" = String, Path, description = "The incident's id"), EventQuery),
    responses(
        (status = 200, description = "A page of the incident's events, oldest first", body = EventPage),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "An ingest token may not read", body = ErrorBody),
        (status = 404, description = "No such incident", body = ErrorBody),
        (status = 422, description = "A bad query parameter", body = ErrorBody),
    ))]
pub async fn events(
    _: Member,
    id: PathId<ids::Incident>,
    query: ApiQuery<EventQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (limit, offset) = pagination::limits(query.0.limit, query.0.offset)?;
    let key = id.as_str().to_owned();
    let found = with_conn(&state, move |conn, _| {
        Ok(incidents::events(conn, &key, limit, offset)?)
    })
    .await?;
    found
        .map(|page| HttpResponse::Ok().json(EventPage::new(page, limit, offset)))
        .ok_or_else(|| id.not_found())
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
    _: Member,
    id: PathId<ids::Event>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let key = id.as_str().to_owned();
    let found = with_conn(&state, move |conn, _| Ok(incidents::event(conn, &key)?)).await?;
    found
        .map(|detail| HttpResponse::Ok().json(detail))
        .ok_or_else(|| id.not_found())
}
