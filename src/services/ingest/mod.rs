//! Storing failure events and grouping them into incidents. One delivery is stored
//! whole or not at all: its own transaction, or — through the group-commit writer
//! (`writer`) that the HTTP API uses — its own savepoint in a transaction shared
//! with the deliveries that arrived with it.

pub mod writer;

use std::collections::HashMap;

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
    // Every event's occurrence looked up at once (the same occurrence twice in one
    // delivery: the second is a duplicate of the first).
    let hashes: Vec<String> = events.iter().map(occurrence_hash).collect();
    let mut seen: HashMap<String, (String, String)> = HashMap::new();
    for chunk in hashes.chunks(LOOKUP_CHUNK) {
        let select = (
            failure_events::occurrence_hash,
            failure_events::id,
            failure_events::incident_id,
        );
        // One value: a statement the connection keeps prepared (a list is not).
        let found: Vec<(String, String, String)> = match chunk {
            [hash] => failure_events::table
                .filter(failure_events::occurrence_hash.eq(hash))
                .select(select)
                .load(conn)?,
            _ => failure_events::table
                .filter(failure_events::occurrence_hash.eq_any(chunk))
                .select(select)
                .load(conn)?,
        };
        seen.extend(
            found
                .into_iter()
                .map(|(hash, id, incident)| (hash, (id, incident))),
        );
    }
    let mut delivery_id: Option<String> = None;
    let mut pending = Pending::new(now);
    let mut outcome: Vec<Option<StoredEvent>> = vec![None; events.len()];
    // Firing alerts first: a delivery that reports some alerts of a group resolved
    // and others firing describes one ongoing incident, not a closed one and a new one.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| events[i].status != EventStatus::Firing);
    for i in order {
        let event = &events[i];
        let hash = &hashes[i];
        if let Some((id, incident_id)) = seen.get(hash) {
            outcome[i] = Some(StoredEvent {
                id: id.clone(),
                incident_id: incident_id.clone(),
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
        let filed = file_into_incident(conn, &mut pending, event, policy)?;
        let incident_id = filed.id;
        let row = FailureEventRow {
            id: db::new_id(),
            delivery_id,
            incident_id: incident_id.clone(),
            source: event.source.clone(),
            dedup_key: event.dedup_key.clone(),
            group_key: event.group_key.clone(),
            occurrence_key: event.occurrence_key.clone(),
            occurrence_hash: hash.clone(),
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
        seen.insert(hash.clone(), (row.id.clone(), incident_id.clone()));
        outcome[i] = Some(StoredEvent {
            id: row.id.clone(),
            incident_id: incident_id.clone(),
            duplicate: false,
        });
        pending.events.push(row);
        let coe = match pending.coes.get(&incident_id) {
            Some(coe) => coe.clone(),
            // An incident this delivery makes has no COE yet.
            None if !filed.stored => None,
            None => {
                let coe = coes::coe_of_incident(conn, &incident_id)?;
                pending.coes.insert(incident_id.clone(), coe.clone());
                coe
            }
        };
        match coe {
            // The draft opens with every event of the incident stored so far.
            None if filed.coe_required => {
                pending.flush(conn)?;
                let incident = pending.incident(&incident_id)?.clone();
                if let Some(id) = coes::open_draft_for_incident(conn, &incident, ctx, now)? {
                    pending.coes.insert(incident_id, Some((id, true)));
                }
            }
            None => {}
            Some((coe_id, is_draft)) => {
                pending
                    .timeline
                    .push((coe_id.clone(), pending.events.len() - 1));
                if is_draft && !pending.drafts.iter().any(|(id, _)| *id == coe_id) {
                    pending.drafts.push((coe_id, incident_id));
                }
            }
        }
    }
    pending.flush(conn)?;
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

/// Most values looked up or written in one statement.
const LOOKUP_CHUNK: usize = 500;
/// Most rows inserted in one statement (21 columns: within SQLite's 32,766 and
/// PostgreSQL's 65,535 bind parameters).
const INSERT_CHUNK: usize = 500;

/// An incident a delivery touched, as it now is.
struct Touched {
    row: IncidentRow,
    /// Whether the row is in the database (a new incident is inserted by `flush`).
    stored: bool,
    /// Whether the row has changes `flush` has not written.
    changed: bool,
}

/// What a delivery has changed and not yet written. `flush` writes it in a few
/// statements: an incident touched by a hundred events is written once, the events
/// and alert states in multi-row statements.
struct Pending {
    now: NaiveDateTime,
    /// Incidents touched, by id.
    incidents: HashMap<String, Touched>,
    /// The incident each group's events go to now, by group hash.
    current: HashMap<String, String>,
    /// Alert states changed: incident id → dedup key → status.
    alerts: HashMap<String, HashMap<String, EventStatus>>,
    events: Vec<FailureEventRow>,
    /// Events to add to their COE's timeline once stored: (COE id, index in `events`).
    timeline: Vec<(String, usize)>,
    /// Drafts to bring up to date with their incident: (COE id, incident id).
    drafts: Vec<(String, String)>,
    /// The COE of each incident looked at: its id and whether it is a draft.
    coes: HashMap<String, Option<(String, bool)>>,
}

impl Pending {
    fn new(now: NaiveDateTime) -> Pending {
        Pending {
            now,
            incidents: HashMap::new(),
            current: HashMap::new(),
            alerts: HashMap::new(),
            events: Vec::new(),
            timeline: Vec::new(),
            drafts: Vec::new(),
            coes: HashMap::new(),
        }
    }

    /// An incident this delivery touched.
    fn incident(&self, id: &str) -> QueryResult<&IncidentRow> {
        // Every id asked for was filed by this delivery; a miss is a fault of ours.
        self.incidents
            .get(id)
            .map(|touched| &touched.row)
            .ok_or(diesel::result::Error::NotFound)
    }

    /// Writes everything pending: incidents, alert states, events, then what the
    /// events add to their COEs (timeline entries refer to the events).
    fn flush(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
        for touched in self.incidents.values_mut().filter(|t| t.changed) {
            if touched.stored {
                diesel::update(incidents::table.find(&touched.row.id))
                    .set(&touched.row)
                    .execute(conn)?;
            } else {
                diesel::insert_into(incidents::table)
                    .values(&touched.row)
                    .execute(conn)?;
                touched.stored = true;
            }
            touched.changed = false;
        }
        let incident_ids: Vec<String> = self.alerts.keys().cloned().collect();
        for incident_id in incident_ids {
            self.flush_alerts(conn, &incident_id)?;
        }
        for chunk in self.events.chunks(INSERT_CHUNK) {
            match chunk {
                // One row: a statement the connection keeps prepared (many are not).
                [row] => diesel::insert_into(failure_events::table)
                    .values(row)
                    .execute(conn)?,
                _ => crate::insert_rows!(&mut *conn, failure_events::table, chunk)?,
            };
        }
        for (coe_id, event) in self.timeline.drain(..) {
            coes::record_event(conn, &coe_id, &self.events[event], self.now)?;
        }
        self.events.clear();
        for (coe_id, incident_id) in std::mem::take(&mut self.drafts) {
            coes::follow_incident(conn, &coe_id, self.incident(&incident_id)?)?;
        }
        Ok(())
    }

    /// Writes the changed alert states of one (stored) incident.
    fn flush_alerts(&mut self, conn: &mut DbConnection, incident_id: &str) -> QueryResult<()> {
        let Some(alerts) = self.alerts.remove(incident_id) else {
            return Ok(());
        };
        let rows: Vec<IncidentAlertRow> = alerts
            .into_iter()
            .map(|(dedup_key, status)| IncidentAlertRow {
                incident_id: incident_id.to_owned(),
                dedup_key,
                status: status.as_str().to_owned(),
                updated_at: self.now,
            })
            .collect();
        for chunk in rows.chunks(INSERT_CHUNK) {
            crate::upsert_rows!(
                &mut *conn,
                incident_alerts::table,
                chunk,
                (incident_alerts::incident_id, incident_alerts::dedup_key),
                (
                    incident_alerts::status.eq(diesel::upsert::excluded(incident_alerts::status)),
                    incident_alerts::updated_at
                        .eq(diesel::upsert::excluded(incident_alerts::updated_at)),
                )
            )?;
        }
        Ok(())
    }
}

/// The incident an event was filed into.
struct Filed {
    id: String,
    /// Whether the incident needs a COE.
    coe_required: bool,
    /// Whether the incident is in the database already (a new one is written by
    /// `flush`): only then can it have a COE.
    stored: bool,
}

/// Finds or makes the incident for `event` and updates it (in `pending`).
fn file_into_incident(
    conn: &mut DbConnection,
    pending: &mut Pending,
    event: &FailureEvent,
    policy: &IncidentPolicy,
) -> Result<Filed, diesel::result::Error> {
    let now = pending.now;
    let hash = group_hash(&event.group_key);
    // The group's open incident, if this delivery touched it already; taken out of
    // `pending` while this event changes it, and put back below.
    let cached_open = pending
        .current
        .get(&hash)
        .filter(|id| {
            pending
                .incidents
                .get(*id)
                .is_some_and(|t| t.row.state == IncidentState::Open.as_str())
        })
        .and_then(|id| pending.incidents.remove(id));
    let mut touched = match cached_open {
        Some(touched) => touched,
        None => {
            if pending.current.contains_key(&hash) {
                // Resolved earlier in this delivery: ask the database as it will be.
                pending.flush(conn)?;
            }
            let touched = place_in_group(conn, event, &hash, policy, now)?;
            pending.current.insert(hash, touched.row.id.clone());
            touched
        }
    };
    let id = touched.row.id.clone();
    let alerts = pending.alerts.entry(id.clone()).or_default();
    alerts.insert(event.dedup_key.clone(), event.status);
    let firing_here = alerts.values().any(|s| *s == EventStatus::Firing);

    touched.changed = true;
    let incident = &mut touched.row;
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
    // a storm holds tens of thousands of alerts. A new incident's alerts are all in
    // `pending`; a stored one's are asked of the database once this one's are written.
    if event.status == EventStatus::Resolved && incident.state == IncidentState::Open.as_str() {
        let still_firing = firing_here
            || (touched.stored && {
                pending.flush_alerts(conn, &id)?;
                incident_alerts::table
                    .filter(incident_alerts::incident_id.eq(&id))
                    .filter(incident_alerts::status.eq(EventStatus::Firing.as_str()))
                    .select(incident_alerts::dedup_key)
                    .first::<String>(conn)
                    .optional()?
                    .is_some()
            });
        if !still_firing {
            let incident = &mut touched.row;
            incident.state = IncidentState::Resolved.as_str().to_owned();
            incident.resolved_at = Some(event.ended_at.unwrap_or(now));
        }
    }
    let filed = Filed {
        id: id.clone(),
        coe_required: touched.row.coe_required_at.is_some(),
        stored: touched.stored,
    };
    pending.incidents.insert(id, touched);
    Ok(filed)
}

/// The incident an event of a group goes to when the group has no open incident
/// touched in this delivery: the open one, one reopened, or a new one (`place`).
fn place_in_group(
    conn: &mut DbConnection,
    event: &FailureEvent,
    hash: &str,
    policy: &IncidentPolicy,
    now: NaiveDateTime,
) -> Result<Touched, diesel::result::Error> {
    // The group's latest incident, read whole: usually the open one, or none (a new
    // group), so that one query is all it takes.
    let latest: Option<IncidentRow> = incidents::table
        .filter(incidents::group_hash.eq(hash))
        .order((incidents::created_at.desc(), incidents::id.desc()))
        .select(IncidentRow::as_select())
        .first(conn)
        .optional()?;
    let open: Option<IncidentRow> = match &latest {
        None => None,
        Some(row) if row.state == IncidentState::Open.as_str() => latest.clone(),
        // An older incident reopened after a later one resolved.
        Some(_) => incidents::table
            .filter(incidents::group_hash.eq(hash))
            .filter(incidents::state.eq(IncidentState::Open.as_str()))
            .select(IncidentRow::as_select())
            .first(conn)
            .optional()?,
    };
    let latest = latest.filter(|_| open.is_none()).map(|row| row.id);
    // Asked only of a group that has incidents, all resolved.
    let last_resolved_with_alert: Option<(String, Option<NaiveDateTime>)> =
        if open.is_none() && latest.is_some() {
            incidents::table
                .inner_join(incident_alerts::table)
                .filter(incidents::group_hash.eq(hash))
                .filter(incidents::state.eq(IncidentState::Resolved.as_str()))
                .filter(incident_alerts::dedup_key.eq(&event.dedup_key))
                .order((incidents::resolved_at.desc(), incidents::created_at.desc()))
                .select((incidents::id, incidents::resolved_at))
                .first(conn)
                .optional()?
        } else {
            None
        };
    let group = GroupState {
        open: open.as_ref().map(|row| row.id.as_str()),
        last_resolved_with_alert: last_resolved_with_alert
            .as_ref()
            .map(|(id, at)| (id.as_str(), at.unwrap_or(now))),
        latest: latest.as_deref(),
    };
    let (row, stored) = match place(event.status, event.started_at, group, policy) {
        Placement::Attach(id) => match open {
            Some(row) if row.id == id => (row, true),
            _ => (load(conn, &id)?, true),
        },
        Placement::Reopen(id) => {
            let mut row = load(conn, &id)?;
            row.state = IncidentState::Open.as_str().to_owned();
            row.resolved_at = None;
            row.reopened_count += 1;
            (row, true)
        }
        Placement::New => {
            let row = IncidentRow {
                id: db::new_id(),
                group_key: event.group_key.clone(),
                group_hash: hash.to_owned(),
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
            (row, false)
        }
    };
    Ok(Touched {
        row,
        stored,
        changed: true,
    })
}

fn load(conn: &mut DbConnection, id: &str) -> Result<IncidentRow, diesel::result::Error> {
    incidents::table
        .find(id)
        .select(IncidentRow::as_select())
        .first(conn)
}
