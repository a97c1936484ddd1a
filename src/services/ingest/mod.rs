//! Storing failure events and grouping them into incidents. One delivery is stored
//! whole or not at all: its own transaction, or — through the group-commit writer
//! (`writer`) that the HTTP API uses — its own savepoint in a transaction shared
//! with the deliveries that arrived with it.

pub mod writer;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::db::models::{DeliveryRow, FailureEventRow, IncidentAlertRow, IncidentRow};
use crate::db::schema::{failure_events, incident_alerts, incidents, webhook_deliveries};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::incident::{place, GroupState, IncidentPolicy, IncidentState, Placement};
use crate::domain::{EventKind, EventStatus, FailureEvent};
use crate::services::coes;

/// One received delivery, as it arrived.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub source: &'a str,
    /// The sender's id for the delivery (`X-Webhook-Id`, SNS `MessageId`), if any.
    pub key: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: &'a [u8],
}

/// What happened to one event of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct StoredEvent {
    pub id: String,
    pub incident_id: String,
    /// True when this event had been stored before; nothing new was written.
    pub duplicate: bool,
}

/// The result of storing a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct IngestOutcome {
    /// The stored delivery; `None` when nothing in it was new.
    pub delivery_id: Option<String>,
    /// True when nothing in the delivery was new.
    pub duplicate: bool,
    pub events: Vec<StoredEvent>,
}

/// Empties the raw bodies of deliveries received before `before` (the normalized
/// events stay); returns how many. `webhooks.keep_raw_days` sets `before`.
pub fn purge_raw_bodies(conn: &mut DbConnection, before: NaiveDateTime) -> QueryResult<usize> {
    diesel::update(
        webhook_deliveries::table
            .filter(webhook_deliveries::received_at.lt(before))
            .filter(webhook_deliveries::body.ne("")),
    )
    .set(webhook_deliveries::body.eq(""))
    .execute(conn)
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

/// The hash a group key is indexed by.
pub fn group_hash(group_key: &str) -> String {
    sha256_hex(&[group_key])
}

fn occurrence_hash(event: &FailureEvent) -> String {
    sha256_hex(&[&event.source, &event.dedup_key, &event.occurrence_key])
}

/// Stores a delivery's events, each exactly once, and files them into incidents, in
/// a transaction of its own (or a savepoint of the caller's) holding the delivery's
/// keys (`keys_of`). When an incident has (or gets) the COE mark, its COE draft
/// opens in the same transaction; an incident's later events are added to its COE's
/// timeline.
pub fn ingest(
    conn: &mut DbConnection,
    delivery: Delivery<'_>,
    events: &[FailureEvent],
    ctx: &coes::Context<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    db::write_transaction(conn, |conn| {
        locks::lock_keys(conn, keys_of(delivery, events))?;
        store(conn, delivery, events, ctx)
    })
}

/// What `ingest` does once the delivery's keys are locked: the caller holds them
/// (the group-commit writer locks a whole batch's at once) and the transaction.
pub(crate) fn store(
    conn: &mut DbConnection,
    delivery: Delivery<'_>,
    events: &[FailureEvent],
    ctx: &coes::Context<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    let policy = &ctx.settings.incident_policy();
    if let Some(key) = delivery.key {
        let earlier: Option<String> = webhook_deliveries::table
            .filter(webhook_deliveries::source.eq(delivery.source))
            .filter(webhook_deliveries::delivery_key.eq(key))
            .select(webhook_deliveries::id)
            .first(conn)
            .optional()?;
        if let Some(delivery_id) = earlier {
            let stored: Vec<(String, String)> = failure_events::table
                .filter(failure_events::delivery_id.eq(&delivery_id))
                .order(failure_events::id.asc())
                .select((failure_events::id, failure_events::incident_id))
                .load(conn)?;
            return Ok(IngestOutcome {
                delivery_id: Some(delivery_id),
                duplicate: true,
                events: stored
                    .into_iter()
                    .map(|(id, incident_id)| StoredEvent {
                        id,
                        incident_id,
                        duplicate: true,
                    })
                    .collect(),
            });
        }
    }
    let now = db::now();
    let mut delivery_id: Option<String> = None;
    let mut outcome: Vec<Option<StoredEvent>> = vec![None; events.len()];
    // Firing alerts first: a delivery that reports some alerts of a group resolved
    // and others firing describes one ongoing incident, not a closed one and a new one.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| events[i].status != EventStatus::Firing);
    for i in order {
        let event = &events[i];
        let hash = occurrence_hash(event);
        let existing: Option<(String, String)> = failure_events::table
            .filter(failure_events::occurrence_hash.eq(&hash))
            .select((failure_events::id, failure_events::incident_id))
            .first(conn)
            .optional()?;
        if let Some((id, incident_id)) = existing {
            outcome[i] = Some(StoredEvent {
                id,
                incident_id,
                duplicate: true,
            });
            continue;
        }
        let delivery_id = match &delivery_id {
            Some(id) => id.clone(),
            None => {
                let row = DeliveryRow {
                    id: db::new_id(),
                    source: delivery.source.to_owned(),
                    delivery_key: delivery.key.map(str::to_owned),
                    content_type: delivery.content_type.map(str::to_owned),
                    body: String::from_utf8_lossy(delivery.body).replace('\0', "\u{fffd}"),
                    received_at: now,
                };
                diesel::insert_into(webhook_deliveries::table)
                    .values(&row)
                    .execute(conn)?;
                delivery_id = Some(row.id.clone());
                row.id
            }
        };
        let incident = file_into_incident(conn, event, policy, now)?;
        let incident_id = incident.id.clone();
        let row = FailureEventRow {
            id: db::new_id(),
            delivery_id,
            incident_id: incident_id.clone(),
            source: event.source.clone(),
            dedup_key: event.dedup_key.clone(),
            group_key: event.group_key.clone(),
            occurrence_key: event.occurrence_key.clone(),
            occurrence_hash: hash,
            kind: event.kind.as_str().to_owned(),
            status: event.status.as_str().to_owned(),
            title: event.title.clone(),
            service: event.service.clone(),
            severity: event.severity.rank(),
            started_at: event.started_at,
            ended_at: event.ended_at,
            description: event.description.clone(),
            labels: serde_json::to_string(&event.labels).unwrap_or_else(|_| "{}".into()),
            annotations: serde_json::to_string(&event.annotations).unwrap_or_else(|_| "{}".into()),
            links: serde_json::to_string(&event.links).unwrap_or_else(|_| "[]".into()),
            received_at: now,
        };
        diesel::insert_into(failure_events::table)
            .values(&row)
            .execute(conn)?;
        let opened = match incident.coe_required_at {
            Some(_) => coes::open_draft_for_incident(conn, &incident, ctx, now)?,
            None => None,
        };
        if opened.is_none() {
            coes::record_event(conn, &incident, &row, now)?;
        }
        outcome[i] = Some(StoredEvent {
            id: row.id,
            incident_id,
            duplicate: false,
        });
    }
    Ok(IngestOutcome {
        duplicate: delivery_id.is_none(),
        delivery_id,
        events: outcome.into_iter().flatten().collect(),
    })
}

/// The lock keys of a delivery: its delivery key and every group key it touches.
/// Locked on PostgreSQL (`locks::lock_keys`: advisory locks in one order), so that
/// concurrent deliveries for one group are filed one after the other; SQLite's
/// `BEGIN IMMEDIATE` already serialises writers.
pub(crate) fn keys_of(delivery: Delivery<'_>, events: &[FailureEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| locks::group_key(&e.group_key))
        .chain(
            delivery
                .key
                .map(|key| locks::delivery_key(delivery.source, key)),
        )
        .collect()
}

/// Finds or makes the incident for `event` and updates it. Returns it as updated.
fn file_into_incident(
    conn: &mut DbConnection,
    event: &FailureEvent,
    policy: &IncidentPolicy,
    now: NaiveDateTime,
) -> Result<IncidentRow, diesel::result::Error> {
    let hash = group_hash(&event.group_key);
    let open: Option<String> = incidents::table
        .filter(incidents::group_hash.eq(&hash))
        .filter(incidents::state.eq(IncidentState::Open.as_str()))
        .select(incidents::id)
        .first(conn)
        .optional()?;
    let last_resolved_with_alert: Option<(String, Option<NaiveDateTime>)> = if open.is_none() {
        incidents::table
            .inner_join(incident_alerts::table)
            .filter(incidents::group_hash.eq(&hash))
            .filter(incidents::state.eq(IncidentState::Resolved.as_str()))
            .filter(incident_alerts::dedup_key.eq(&event.dedup_key))
            .order((incidents::resolved_at.desc(), incidents::created_at.desc()))
            .select((incidents::id, incidents::resolved_at))
            .first(conn)
            .optional()?
    } else {
        None
    };
    let latest: Option<String> = if open.is_none() {
        incidents::table
            .filter(incidents::group_hash.eq(&hash))
            .order((incidents::created_at.desc(), incidents::id.desc()))
            .select(incidents::id)
            .first(conn)
            .optional()?
    } else {
        None
    };
    let group = GroupState {
        open: open.as_deref(),
        last_resolved_with_alert: last_resolved_with_alert
            .as_ref()
            .map(|(id, at)| (id.as_str(), at.unwrap_or(now))),
        latest: latest.as_deref(),
    };
    let placement = place(event.status, event.started_at, group, policy);
    let mut incident = match placement {
        Placement::Attach(id) => load(conn, &id)?,
        Placement::Reopen(id) => {
            let mut row = load(conn, &id)?;
            row.state = IncidentState::Open.as_str().to_owned();
            row.resolved_at = None;
            row.reopened_count += 1;
            row
        }
        Placement::New => {
            let row = IncidentRow {
                id: db::new_id(),
                group_key: event.group_key.clone(),
                group_hash: hash,
                source: event.source.clone(),
                title: event.title.clone(),
                service: event.service.clone(),
                severity: event.severity.rank(),
                state: IncidentState::Open.as_str().to_owned(),
                started_at: event.started_at,
                detected_at: now,
                acknowledged_at: None,
                resolved_at: None,
                reopened_count: 0,
                event_count: 0,
                coe_required_at: None,
                created_at: now,
                updated_at: now,
            };
            diesel::insert_into(incidents::table)
                .values(&row)
                .execute(conn)?;
            row
        }
    };
    set_alert_status(conn, &incident.id, &event.dedup_key, event.status, now)?;

    let current = types::severity("incidents.severity", incident.severity)?;
    let severity = current.worst(event.severity);
    incident.severity = severity.rank();
    incident.event_count += 1;
    incident.updated_at = now;
    if event.started_at < incident.started_at {
        incident.started_at = event.started_at;
    }
    if incident.service.is_none() {
        incident.service = event.service.clone();
    }
    if event.kind == EventKind::Acknowledged && incident.acknowledged_at.is_none() {
        incident.acknowledged_at = Some(now);
    }
    if incident.coe_required_at.is_none() && policy.needs_coe(severity) {
        incident.coe_required_at = Some(now);
    }
    // An incident resolves when every alert in it has resolved. Asked only on a
    // resolution, and as "is any still firing" (one row), not a count: an incident of
    // a storm holds tens of thousands of alerts.
    if event.status == EventStatus::Resolved
        && incident.state == IncidentState::Open.as_str()
        && incident_alerts::table
            .filter(incident_alerts::incident_id.eq(&incident.id))
            .filter(incident_alerts::status.eq(EventStatus::Firing.as_str()))
            .select(incident_alerts::dedup_key)
            .first::<String>(conn)
            .optional()?
            .is_none()
    {
        incident.state = IncidentState::Resolved.as_str().to_owned();
        incident.resolved_at = Some(event.ended_at.unwrap_or(now));
    }
    diesel::update(incidents::table.find(&incident.id))
        .set(&incident)
        .execute(conn)?;
    Ok(incident)
}

fn load(conn: &mut DbConnection, id: &str) -> Result<IncidentRow, diesel::result::Error> {
    incidents::table
        .find(id)
        .select(IncidentRow::as_select())
        .first(conn)
}

fn set_alert_status(
    conn: &mut DbConnection,
    incident_id: &str,
    dedup_key: &str,
    status: EventStatus,
    now: NaiveDateTime,
) -> Result<(), diesel::result::Error> {
    let updated = diesel::update(
        incident_alerts::table
            .filter(incident_alerts::incident_id.eq(incident_id))
            .filter(incident_alerts::dedup_key.eq(dedup_key)),
    )
    .set((
        incident_alerts::status.eq(status.as_str()),
        incident_alerts::updated_at.eq(now),
    ))
    .execute(conn)?;
    if updated == 0 {
        diesel::insert_into(incident_alerts::table)
            .values(IncidentAlertRow {
                incident_id: incident_id.to_owned(),
                dedup_key: dedup_key.to_owned(),
                status: status.as_str().to_owned(),
                updated_at: now,
            })
            .execute(conn)?;
    }
    Ok(())
}
