//! The record of what the alerting systems said: incidents and their failure events
//! (read here), and what retention keeps of them once the events are dropped
//! (`retention`). Imports no other wing: a COE is built on this record.

pub mod retention;

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::db::models::{DeliveryRow, FailureEventRow, IncidentRow};
use crate::db::schema::{failure_events, incidents, webhook_deliveries};
use crate::db::{types, DbConnection};
use crate::domain::incident::IncidentState;
use crate::domain::{EventKind, EventStatus, Severity};

/// An incident as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Incident {
    pub id: String,
    pub group_key: String,
    /// The source of the event that opened it.
    pub source: String,
    pub title: String,
    pub service: Option<String>,
    /// The worst severity of its events.
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: IncidentState,
    /// When the earliest of its alerts started.
    #[serde(serialize_with = "crate::json::utc")]
    pub started_at: NaiveDateTime,
    /// When it was detected: the earliest alert's own start (Alertmanager's
    /// `startsAt`), not when `coe` heard of it.
    #[serde(serialize_with = "crate::json::utc")]
    pub detected_at: NaiveDateTime,
    /// When `coe` first heard of it (its first event was received).
    #[serde(serialize_with = "crate::json::utc")]
    pub received_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub acknowledged_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub resolved_at: Option<NaiveDateTime>,
    /// From start to resolution, when resolved.
    pub duration_seconds: Option<i64>,
    pub reopened_count: i32,
    pub event_count: i32,
    /// The COE mark: the incident reached the COE policy's severity.
    pub needs_coe: bool,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub coe_required_at: Option<NaiveDateTime>,
    /// The largest share of an SLO's error budget its events said they burned
    /// (`error_budget_burned`: 0.25 is a quarter).
    pub budget_burned: Option<f64>,
    /// That SLO.
    pub slo: Option<String>,
}

/// A failure event as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Event {
    pub id: String,
    pub incident_id: String,
    pub source: String,
    pub dedup_key: String,
    pub group_key: String,
    pub kind: EventKind,
    pub status: EventStatus,
    pub title: String,
    pub service: Option<String>,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    #[serde(serialize_with = "crate::json::utc")]
    pub started_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub ended_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc")]
    pub received_at: NaiveDateTime,
    pub description: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub links: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IncidentDetail {
    #[serde(flatten)]
    pub incident: Incident,
    /// Who reported it from the pages, for an incident of source `manual`.
    pub reported_by: Option<String>,
    /// Its first `DETAIL_EVENTS` events, oldest first; all `event_count` of them
    /// page by page at `/api/v1/incidents/{id}/events`.
    pub events: Vec<Event>,
    /// When its events were dropped, `events.keep_days` after its last one (it had no
    /// COE): its counts and times stay, its events are gone from here and the events
    /// pages, its web page shows what they said.
    #[serde(serialize_with = "crate::json::utc_option")]
    pub events_dropped_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventDetail {
    #[serde(flatten)]
    pub event: Event,
    pub delivery_id: String,
    pub occurrence_key: String,
    pub content_type: Option<String>,
    /// The delivery exactly as received: parsed JSON (an object or an array) when it is
    /// JSON, else a string; `null` once older than `webhooks.keep_raw_days`.
    #[schema(value_type = Value)]
    pub raw_payload: Value,
}

/// Filters of the incident list. Times compare with `started_at`.
#[derive(Debug, Clone, Default)]
pub struct IncidentFilter {
    pub state: Option<IncidentState>,
    pub severity: Option<Severity>,
    pub min_severity: Option<Severity>,
    pub service: Option<String>,
    pub since: Option<NaiveDateTime>,
    pub until: Option<NaiveDateTime>,
    pub needs_coe: Option<bool>,
}

impl TryFrom<IncidentRow> for Incident {
    type Error = diesel::result::Error;

    fn try_from(row: IncidentRow) -> QueryResult<Self> {
        Ok(Incident {
            duration_seconds: row
                .resolved_at
                .map(|r| (r - row.started_at).num_seconds().max(0)),
            severity: types::severity("incidents.severity", row.severity)?,
            state: types::read("incidents.state", &row.state)?,
            needs_coe: row.coe_required_at.is_some(),
            id: row.id,
            group_key: row.group_key,
            source: row.source,
            title: row.title,
            service: row.service,
            started_at: row.started_at,
            detected_at: row.detected_at,
            received_at: row.created_at,
            acknowledged_at: row.acknowledged_at,
            resolved_at: row.resolved_at,
            reopened_count: row.reopened_count,
            event_count: row.event_count,
            coe_required_at: row.coe_required_at,
            budget_burned: row.budget_burned,
            slo: row.slo,
        })
    }
}

impl TryFrom<FailureEventRow> for Event {
    type Error = diesel::result::Error;

    fn try_from(row: FailureEventRow) -> QueryResult<Self> {
        Ok(Event {
            kind: types::read("failure_events.kind", &row.kind)?,
            status: types::read("failure_events.status", &row.status)?,
            severity: types::severity("failure_events.severity", row.severity)?,
            labels: serde_json::from_str(&row.labels).unwrap_or_default(),
            annotations: serde_json::from_str(&row.annotations).unwrap_or_default(),
            links: serde_json::from_str(&row.links).unwrap_or_default(),
            id: row.id,
            incident_id: row.incident_id,
            source: row.source,
            dedup_key: row.dedup_key,
            group_key: row.group_key,
            title: row.title,
            service: row.service,
            started_at: row.started_at,
            ended_at: row.ended_at,
            received_at: row.received_at,
            description: row.description,
        })
    }
}

fn filtered(filter: &IncidentFilter) -> incidents::BoxedQuery<'static, crate::db::MultiBackend> {
    let mut query = incidents::table.into_boxed();
    if let Some(state) = filter.state {
        query = query.filter(incidents::state.eq(state.as_str()));
    }
    if let Some(severity) = filter.severity {
        query = query.filter(incidents::severity.eq(severity.rank()));
    }
    if let Some(severity) = filter.min_severity {
        query = query.filter(incidents::severity.le(severity.rank()));
    }
    if let Some(service) = &filter.service {
        query = query.filter(incidents::service.eq(service.clone()));
    }
    if let Some(since) = filter.since {
        query = query.filter(incidents::started_at.ge(since));
    }
    if let Some(until) = filter.until {
        query = query.filter(incidents::started_at.lt(until));
    }
    match filter.needs_coe {
        Some(true) => query = query.filter(incidents::coe_required_at.is_not_null()),
        Some(false) => query = query.filter(incidents::coe_required_at.is_null()),
        None => {}
    }
    query
}

/// A page of incidents, newest first, and how many match in all.
pub fn list(
    conn: &mut DbConnection,
    filter: &IncidentFilter,
    limit: i64,
    offset: i64,
) -> QueryResult<(Vec<Incident>, i64)> {
    let total: i64 = filtered(filter).count().get_result(conn)?;
    let rows: Vec<IncidentRow> = filtered(filter)
        .order((incidents::started_at.desc(), incidents::id.desc()))
        .limit(limit)
        .offset(offset)
        .select(IncidentRow::as_select())
        .load(conn)?;
    let page = rows
        .into_iter()
        .map(Incident::try_from)
        .collect::<QueryResult<_>>()?;
    Ok((page, total))
}

/// How many events the incident itself shows (an alert storm files thousands).
pub const DETAIL_EVENTS: i64 = 100;

/// One incident with its first `DETAIL_EVENTS` events, oldest first.
pub fn get(conn: &mut DbConnection, id: &str) -> QueryResult<Option<IncidentDetail>> {
    let Some(row) = incidents::table
        .find(id)
        .select(IncidentRow::as_select())
        .first(conn)
        .optional()?
    else {
        return Ok(None);
    };
    let (reported_by, events_dropped_at): (Option<String>, Option<NaiveDateTime>) =
        incidents::table
            .find(id)
            .select((incidents::reported_by, incidents::events_pruned_at))
            .first(conn)?;
    let events: Vec<FailureEventRow> = failure_events::table
        .filter(failure_events::incident_id.eq(id))
        .order((failure_events::received_at.asc(), failure_events::id.asc()))
        .limit(DETAIL_EVENTS)
        .select(FailureEventRow::as_select())
        .load(conn)?;
    Ok(Some(IncidentDetail {
        incident: row.try_into()?,
        reported_by,
        events_dropped_at,
        events: events
            .into_iter()
            .map(Event::try_from)
            .collect::<QueryResult<_>>()?,
    }))
}

/// A page of an incident's events, oldest first, with their number; `None` when
/// there is no such incident.
pub fn events(
    conn: &mut DbConnection,
    id: &str,
    limit: i64,
    offset: i64,
) -> QueryResult<Option<(Vec<Event>, i64)>> {
    let total: Option<i32> = incidents::table
        .find(id)
        .select(incidents::event_count)
        .first(conn)
        .optional()?;
    let Some(total) = total else {
        return Ok(None);
    };
    let rows: Vec<FailureEventRow> = failure_events::table
        .filter(failure_events::incident_id.eq(id))
        .order((failure_events::received_at.asc(), failure_events::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(FailureEventRow::as_select())
        .load(conn)?;
    let events = rows
        .into_iter()
        .map(Event::try_from)
        .collect::<QueryResult<_>>()?;
    Ok(Some((events, i64::from(total))))
}

/// The id of the incident's COE, if it has one.
pub fn coe_of(conn: &mut DbConnection, incident_id: &str) -> QueryResult<Option<String>> {
    use crate::db::schema::coe_incidents;
    coe_incidents::table
        .filter(coe_incidents::incident_id.eq(incident_id))
        .select(coe_incidents::coe_id)
        .first(conn)
        .optional()
}

/// The titles and states of incidents `ids`, in that order: (id, title, state).
pub fn titles(
    conn: &mut DbConnection,
    ids: &[String],
) -> QueryResult<Vec<(String, String, String)>> {
    let rows: Vec<(String, String, String)> = incidents::table
        .filter(incidents::id.eq_any(ids))
        .select((incidents::id, incidents::title, incidents::state))
        .load(conn)?;
    Ok(ids
        .iter()
        .filter_map(|id| rows.iter().find(|r| r.0 == *id).cloned())
        .collect())
}

/// The COEs of incidents `ids`: incident id → (COE id, its state).
pub fn coes_of(
    conn: &mut DbConnection,
    ids: &[String],
) -> QueryResult<std::collections::HashMap<String, (String, String)>> {
    use crate::db::schema::{coe_incidents, coes};
    let rows: Vec<(String, String, String)> = coe_incidents::table
        .inner_join(coes::table)
        .filter(coe_incidents::incident_id.eq_any(ids))
        .select((coe_incidents::incident_id, coes::id, coes::state))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(incident, id, state)| (incident, (id, state)))
        .collect())
}

/// One event with the delivery it arrived in.
pub fn event(conn: &mut DbConnection, id: &str) -> QueryResult<Option<EventDetail>> {
    let found: Option<(FailureEventRow, DeliveryRow)> = failure_events::table
        .inner_join(webhook_deliveries::table)
        .filter(failure_events::id.eq(id))
        .select((FailureEventRow::as_select(), DeliveryRow::as_select()))
        .first(conn)
        .optional()?;
    found
        .map(|(row, delivery)| {
            let raw_payload = if delivery.body.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&delivery.body)
                    .unwrap_or_else(|_| Value::String(delivery.body.clone()))
            };
            Ok(EventDetail {
                delivery_id: row.delivery_id.clone(),
                occurrence_key: row.occurrence_key.clone(),
                content_type: delivery.content_type,
                raw_payload,
                event: row.try_into()?,
            })
        })
        .transpose()
}
