//! Rows as diesel reads and writes them. Domain types are built from these in `services`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::api_tokens;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub role: String,
    pub person_email: Option<String>,
    pub token_hash: String,
    pub created_at: NaiveDateTime,
    pub last_used_at: Option<NaiveDateTime>,
    pub revoked_at: Option<NaiveDateTime>,
}

use super::schema::{failure_events, incident_alerts, incidents, webhook_deliveries};

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = incidents, treat_none_as_null = true)]
pub struct IncidentRow {
    pub id: String,
    pub group_key: String,
    pub group_hash: String,
    pub source: String,
    pub title: String,
    pub service: Option<String>,
    pub severity: i32,
    pub state: String,
    pub started_at: NaiveDateTime,
    pub detected_at: NaiveDateTime,
    pub acknowledged_at: Option<NaiveDateTime>,
    pub resolved_at: Option<NaiveDateTime>,
    pub reopened_count: i32,
    pub event_count: i32,
    pub coe_required_at: Option<NaiveDateTime>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = incident_alerts)]
pub struct IncidentAlertRow {
    pub incident_id: String,
    pub dedup_key: String,
    pub status: String,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries)]
pub struct DeliveryRow {
    pub id: String,
    pub source: String,
    pub delivery_key: Option<String>,
    pub content_type: Option<String>,
    pub body: String,
    pub received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = failure_events)]
pub struct FailureEventRow {
    pub id: String,
    pub delivery_id: String,
    pub incident_id: String,
    pub source: String,
    pub dedup_key: String,
    pub group_key: String,
    pub occurrence_key: String,
    pub occurrence_hash: String,
    pub kind: String,
    pub status: String,
    pub title: String,
    pub service: Option<String>,
    pub severity: i32,
    pub started_at: NaiveDateTime,
    pub ended_at: Option<NaiveDateTime>,
    pub description: Option<String>,
    pub labels: String,
    pub annotations: String,
    pub links: String,
    pub received_at: NaiveDateTime,
}
