//! Storing failure events and grouping them into incidents. One delivery is stored
//! whole or not at all: its own transaction, or — through the group-commit writer
//! (`writer`) that the HTTP API uses — its own savepoint in a transaction shared
//! with the deliveries that arrived with it.

pub mod writer;

use std::collections::{HashMap, HashSet};

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
/// and the transaction.
pub(crate) fn store(
    conn: &mut DbConnection,
    delivery: Delivery<'_>,
    events: &[FailureEvent],
    ctx: &coes::Context<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    store_all(conn, &[(delivery, events)], ctx)?
        .pop()
        .ok_or(diesel::result::Error::NotFound)
}

/// Stores deliveries that arrived together (the group-commit writer's batch), in
/// order, as `store` would one after the other, but written together: their
/// occurrences and groups looked up at once, then incidents, alert states,
/// deliveries and events each in a few statements, and each COE's timeline once.
/// One failing statement fails them all; the writer then stores them one by one,
/// each in a savepoint of its own.
pub(crate) fn store_all(
    conn: &mut DbConnection,
    deliveries: &[(Delivery<'_>, &[FailureEvent])],
    ctx: &coes::Context<'_>,
) -> Result<Vec<IngestOutcome>, diesel::result::Error> {
    let policy = &ctx.settings.incident_policy();
    let mut pending = Pending::new(db::now());
    // A delivery its sender sent before is answered as it was; nothing is written.
    let mut again: Vec<Option<IngestOutcome>> = Vec::with_capacity(deliveries.len());
    for (delivery, _) in deliveries {
        again.push(match delivery.key {
            Some(key) => stored_delivery(conn, delivery.source, key)?,
            None => None,
        });
    }
    // Every event's occurrence looked up at once (the same occurrence twice: the
    // second is a duplicate of the first).
    let hashes: Vec<Vec<String>> = deliveries
        .iter()
        .map(|(_, events)| events.iter().map(occurrence_hash).collect())
        .collect();
    let asked: Vec<&String> = hashes
        .iter()
        .zip(&again)
        .filter(|(_, again)| again.is_none())
        .flat_map(|(hashes, _)| hashes)
        .collect();
    // Lists of values: planned for the values (see `db::planned_for_values`).
    let lists = asked.len() > 1;
    let mut seen = db::planned_for_values(conn, lists, |conn| occurrences(conn, &asked))?;
    // The groups of the new events, asked at once.
    let mut groups: Vec<String> = deliveries
        .iter()
        .zip(&hashes)
        .zip(&again)
        .filter(|(_, again)| again.is_none())
        .flat_map(|(((_, events), hashes), _)| events.iter().zip(hashes))
        .filter(|(_, hash)| !seen.contains_key(*hash))
        .map(|(event, _)| group_hash(&event.group_key))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    db::planned_for_values(conn, lists, |conn| pending.look_up_groups(conn, &groups))?;

    let mut outcomes: Vec<IngestOutcome> = Vec::with_capacity(deliveries.len());
    // Keyed deliveries of this batch: (source, key) → their outcome.
    let mut keyed: HashMap<(&str, &str), usize> = HashMap::new();
    for (((delivery, events), hashes), again) in deliveries.iter().zip(&hashes).zip(again) {
        let earlier = delivery
            .key
            .and_then(|key| keyed.get(&(delivery.source, key)))
            .map(|&n| &outcomes[n])
            .filter(|outcome| outcome.delivery_id.is_some());
        let outcome = match (again, earlier) {
            (Some(outcome), _) => outcome,
            (None, Some(earlier)) => sent_again(earlier),
            (None, None) => store_one(
                conn,
                &mut pending,
                *delivery,
                events,
                hashes,
                &mut seen,
                policy,
                ctx,
            )?,
        };
        if let Some(key) = delivery.key {
            keyed.insert((delivery.source, key), outcomes.len());
        }
        outcomes.push(outcome);
    }
    pending.flush(conn)?;
    Ok(outcomes)
}

/// The answer to a delivery whose sender sent it before (its key stored), if so.
fn stored_delivery(
    conn: &mut DbConnection,
    source: &str,
    key: &str,
) -> QueryResult<Option<IngestOutcome>> {
    let earlier: Option<String> = webhook_deliveries::table
        .filter(webhook_deliveries::source.eq(source))
        .filter(webhook_deliveries::delivery_key.eq(key))
        .select(webhook_deliveries::id)
        .first(conn)
        .optional()?;
    let Some(delivery_id) = earlier else {
        return Ok(None);
    };
    let stored: Vec<(String, String)> = failure_events::table
        .filter(failure_events::delivery_id.eq(&delivery_id))
        .order(failure_events::id.asc())
        .select((failure_events::id, failure_events::incident_id))
        .load(conn)?;
    Ok(Some(IngestOutcome {
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
    }))
}

/// The answer to a delivery sent again within one batch: as `stored_delivery` gives
/// it, the events stored with the earlier copy, in the order of their ids.
fn sent_again(earlier: &IngestOutcome) -> IngestOutcome {
    let mut events: Vec<StoredEvent> = earlier
        .events
        .iter()
        .filter(|event| !event.duplicate)
        .map(|event| StoredEvent {
            duplicate: true,
            ..event.clone()
        })
        .collect();
    events.sort_by(|a, b| a.id.cmp(&b.id));
    IngestOutcome {
        delivery_id: earlier.delivery_id.clone(),
        duplicate: true,
        events,
    }
}

/// The stored events of the occurrences `hashes`: occurrence hash → (event id,
/// incident id).
fn occurrences(
    conn: &mut DbConnection,
    hashes: &[&String],
) -> QueryResult<HashMap<String, (String, String)>> {
    let mut seen = HashMap::new();
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
    Ok(seen)
}

/// Files one delivery's events (their occurrence hashes `hashes`) into `pending`.
#[allow(clippy::too_many_arguments)]
fn store_one(
    conn: &mut DbConnection,
    pending: &mut Pending,
    delivery: Delivery<'_>,
    events: &[FailureEvent],
    hashes: &[String],
    seen: &mut HashMap<String, (String, String)>,
    policy: &IncidentPolicy,
    ctx: &coes::Context<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    let now = pending.now;
    let mut delivery_id: Option<String> = None;
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
                let id = db::new_id();
                pending.deliveries.push(DeliveryRow {
                    id: id.clone(),
                    source: delivery.source.to_owned(),
                    delivery_key: delivery.key.map(str::to_owned),
                    content_type: delivery.content_type.map(str::to_owned),
                    body: String::from_utf8_lossy(delivery.body).replace('\0', "\u{fffd}"),
                    received_at: now,
                });
                delivery_id = Some(id.clone());
                id
            }
        };
        let filed = file_into_incident(conn, pending, event, policy)?;
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
                    pending.coes.insert(incident_id.clone(), Some((id, true)));
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

impl Touched {
    /// An incident as stored.
    fn stored(row: IncidentRow) -> Touched {
        Touched {
            row,
            stored: true,
            changed: true,
        }
    }

    /// A new incident, not yet stored.
    fn new(row: IncidentRow) -> Touched {
        Touched {
            stored: false,
            ..Touched::stored(row)
        }
    }
}

/// What a group's incidents were when the batch began, as far as filing needs.
enum Known {
    /// Its open incident.
    Open(Box<IncidentRow>),
    /// The group has no incident at all.
    Empty,
}

/// What a batch of deliveries has changed and not yet written. `flush` writes it in
/// a few statements: an incident touched by a hundred events is written once, the
/// deliveries, events and alert states in multi-row statements.
struct Pending {
    now: NaiveDateTime,
    /// Groups looked up for the batch before it changed any, by group hash (a group
    /// missing here, or filed into since, is asked of the database).
    groups: HashMap<String, Known>,
    deliveries: Vec<DeliveryRow>,
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
    /// Drafts' severity and resolution time as stored, where known, by COE id: a
    /// draft follows its incident only when they differ from the incident's.
    draft_states: HashMap<String, (i32, Option<NaiveDateTime>)>,
}

impl Pending {
    fn new(now: NaiveDateTime) -> Pending {
        Pending {
            now,
            groups: HashMap::new(),
            deliveries: Vec::new(),
            incidents: HashMap::new(),
            current: HashMap::new(),
            alerts: HashMap::new(),
            events: Vec::new(),
            timeline: Vec::new(),
            drafts: Vec::new(),
            coes: HashMap::new(),
            draft_states: HashMap::new(),
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

    /// Asks at once what the groups `hashes` (sorted) have: their open incidents and
    /// these incidents' COEs, and which groups have no incident at all.
    fn look_up_groups(&mut self, conn: &mut DbConnection, hashes: &[String]) -> QueryResult<()> {
        let open = incidents::state.eq(IncidentState::Open.as_str());
        for chunk in hashes.chunks(LOOKUP_CHUNK) {
            // One value: statements the connection keeps prepared (lists are not).
            let (open, known): (Vec<IncidentRow>, Vec<String>) = match chunk {
                [hash] => (
                    incidents::table
                        .filter(incidents::group_hash.eq(hash))
                        .filter(open)
                        .select(IncidentRow::as_select())
                        .load(conn)?,
                    incidents::table
                        .filter(incidents::group_hash.eq(hash))
                        .select(incidents::group_hash)
                        .distinct()
                        .load(conn)?,
                ),
                _ => (
                    incidents::table
                        .filter(incidents::group_hash.eq_any(chunk))
                        .filter(open)
                        .select(IncidentRow::as_select())
                        .load(conn)?,
                    incidents::table
                        .filter(incidents::group_hash.eq_any(chunk))
                        .select(incidents::group_hash)
                        .distinct()
                        .load(conn)?,
                ),
            };
            let known: HashSet<String> = known.into_iter().collect();
            for hash in chunk.iter().filter(|hash| !known.contains(*hash)) {
                self.groups.insert(hash.clone(), Known::Empty);
            }
            // Their COEs, at once (an incident this batch makes has none).
            let ids: Vec<&String> = open.iter().map(|row| &row.id).collect();
            let mut found = coes::coes_of_incidents(conn, &ids)?;
            for row in open {
                let coe = found.remove(&row.id);
                if let Some(coe) = coe.as_ref().filter(|coe| coe.draft) {
                    self.draft_states
                        .insert(coe.id.clone(), (coe.severity, coe.resolved_at));
                }
                self.coes
                    .insert(row.id.clone(), coe.map(|coe| (coe.id, coe.draft)));
                self.groups
                    .insert(row.group_hash.clone(), Known::Open(Box::new(row)));
            }
        }
        Ok(())
    }

    /// Writes everything pending: deliveries, incidents, alert states, events, then
    /// what the events add to their COEs (timeline entries refer to the events).
    fn flush(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
        for chunk in self.deliveries.chunks(INSERT_CHUNK) {
            match chunk {
                // One row: a statement the connection keeps prepared (many are not).
                [row] => diesel::insert_into(webhook_deliveries::table)
                    .values(row)
                    .execute(conn)?,
                _ => crate::insert_rows!(&mut *conn, webhook_deliveries::table, chunk)?,
            };
        }
        self.deliveries.clear();
        let mut new: Vec<&IncidentRow> = Vec::new();
        let mut changed: Vec<&IncidentRow> = Vec::new();
        for touched in self.incidents.values_mut().filter(|t| t.changed) {
            touched.changed = false;
            if touched.stored {
                changed.push(&touched.row);
            } else {
                touched.stored = true;
                new.push(&touched.row);
            }
        }
        update_incidents(conn, &changed)?;
        match new.as_slice() {
            [] => {}
            [row] => {
                diesel::insert_into(incidents::table)
                    .values(*row)
                    .execute(conn)?;
            }
            _ => {
                for chunk in new.chunks(INSERT_CHUNK) {
                    crate::insert_rows!(&mut *conn, incidents::table, chunk.to_vec())?;
                }
            }
        }
        // A new incident's alerts are new rows; a stored one's may be there already.
        let new: HashSet<String> = new.into_iter().map(|row| row.id.clone()).collect();
        let mut rows: Vec<IncidentAlertRow> = Vec::new();
        for (incident_id, alerts) in self.alerts.iter_mut().filter(|(id, _)| new.contains(*id)) {
            rows.extend(alerts.drain().map(|(dedup_key, status)| IncidentAlertRow {
                incident_id: incident_id.clone(),
                dedup_key,
                status: status.as_str().to_owned(),
                updated_at: self.now,
            }));
        }
        for chunk in rows.chunks(INSERT_CHUNK) {
            match chunk {
                [row] => diesel::insert_into(incident_alerts::table)
                    .values(row)
                    .execute(conn)?,
                _ => crate::insert_rows!(&mut *conn, incident_alerts::table, chunk)?,
            };
        }
        let incident_ids: Vec<String> = self.alerts.keys().cloned().collect();
        self.flush_alerts(conn, &incident_ids)?;
        for chunk in self.events.chunks(INSERT_CHUNK) {
            match chunk {
                // One row: a statement the connection keeps prepared (many are not).
                [row] => diesel::insert_into(failure_events::table)
                    .values(row)
                    .execute(conn)?,
                _ => crate::insert_rows!(&mut *conn, failure_events::table, chunk)?,
            };
        }
        // Each COE's new events counted in its timeline at once, in arrival order.
        let mut timeline: Vec<(String, Vec<&FailureEventRow>)> = Vec::new();
        for (coe_id, event) in self.timeline.drain(..) {
            let event = &self.events[event];
            match timeline.iter_mut().find(|(id, _)| *id == coe_id) {
                Some((_, events)) => events.push(event),
                None => timeline.push((coe_id, vec![event])),
            }
        }
        for (coe_id, events) in &timeline {
            coes::record_events(conn, coe_id, events, self.now)?;
        }
        drop(timeline);
        self.events.clear();
        for (coe_id, incident_id) in std::mem::take(&mut self.drafts) {
            let touched = self
                .incidents
                .get_mut(&incident_id)
                .ok_or(diesel::result::Error::NotFound)?;
            let incident = &touched.row;
            // Following changes nothing when the draft is as worst as the incident
            // and shows its resolution time (a resolution people wrote is theirs).
            let needed = self
                .draft_states
                .get(&coe_id)
                .is_none_or(|(severity, resolved_at)| {
                    *severity > incident.severity || *resolved_at != incident.resolved_at
                });
            if needed {
                coes::follow_incident(conn, &coe_id, incident)?;
                let severity = self
                    .draft_states
                    .get(&coe_id)
                    .map_or(incident.severity, |(s, _)| (*s).min(incident.severity));
                self.draft_states
                    .insert(coe_id, (severity, incident.resolved_at));
            }
        }
        Ok(())
    }

    /// Writes the changed alert states of (stored) incidents.
    fn flush_alerts(
        &mut self,
        conn: &mut DbConnection,
        incident_ids: &[String],
    ) -> QueryResult<()> {
        let mut rows: Vec<IncidentAlertRow> = Vec::new();
        for incident_id in incident_ids {
            let Some(alerts) = self.alerts.remove(incident_id) else {
                continue;
            };
            rows.extend(
                alerts
                    .into_iter()
                    .map(|(dedup_key, status)| IncidentAlertRow {
                        incident_id: incident_id.clone(),
                        dedup_key,
                        status: status.as_str().to_owned(),
                        updated_at: self.now,
                    }),
            );
        }
        for chunk in rows.chunks(INSERT_CHUNK) {
            crate::replace_rows!(
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

/// Writes the changes filing made to stored incidents: on SQLite a statement per
/// incident (kept prepared; no round trip), on PostgreSQL one for a hundred.
fn update_incidents(conn: &mut DbConnection, rows: &[&IncidentRow]) -> QueryResult<()> {
    use diesel::upsert::excluded;
    match (conn, rows) {
        (_, []) => {}
        (conn @ DbConnection::Sqlite(_), _) | (conn, [_]) => {
            for row in rows {
                diesel::update(incidents::table.find(&row.id))
                    .set(*row)
                    .execute(conn)?;
            }
        }
        (DbConnection::Pg(conn), _) => {
            // Every row is there: each "insert" updates its row by id.
            for chunk in rows.chunks(INSERT_CHUNK) {
                diesel::insert_into(incidents::table)
                    .values(chunk.to_vec())
                    .on_conflict(incidents::id)
                    .do_update()
                    .set((
                        incidents::service.eq(excluded(incidents::service)),
                        incidents::severity.eq(excluded(incidents::severity)),
                        incidents::state.eq(excluded(incidents::state)),
                        incidents::started_at.eq(excluded(incidents::started_at)),
                        incidents::acknowledged_at.eq(excluded(incidents::acknowledged_at)),
                        incidents::resolved_at.eq(excluded(incidents::resolved_at)),
                        incidents::reopened_count.eq(excluded(incidents::reopened_count)),
                        incidents::event_count.eq(excluded(incidents::event_count)),
                        incidents::coe_required_at.eq(excluded(incidents::coe_required_at)),
                        incidents::updated_at.eq(excluded(incidents::updated_at)),
                    ))
                    .execute(conn)?;
            }
        }
    }
    Ok(())
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
            let touched = if pending.current.contains_key(&hash) {
                // Resolved earlier in this batch: ask the database as it will be.
                pending.flush(conn)?;
                place_in_group(conn, event, &hash, policy, now)?
            } else {
                // As `place` decides: an open incident takes the event; a group
                // without incidents gets a new one.
                match pending.groups.remove(&hash) {
                    Some(Known::Open(row)) => Touched::stored(*row),
                    Some(Known::Empty) => Touched::new(new_incident(event, &hash, now)),
                    None => place_in_group(conn, event, &hash, policy, now)?,
                }
            };
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
                pending.flush_alerts(conn, std::slice::from_ref(&id))?;
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
    Ok(match place(event.status, event.started_at, group, policy) {
        Placement::Attach(id) => match open {
            Some(row) if row.id == id => Touched::stored(row),
            _ => Touched::stored(load(conn, &id)?),
        },
        Placement::Reopen(id) => {
            let mut touched = Touched::stored(load(conn, &id)?);
            let row = &mut touched.row;
            row.state = IncidentState::Open.as_str().to_owned();
            row.resolved_at = None;
            row.reopened_count += 1;
            touched
        }
        Placement::New => Touched::new(new_incident(event, hash, now)),
    })
}

/// A new incident of `event`'s group (`hash`), not yet stored.
fn new_incident(event: &FailureEvent, hash: &str, now: NaiveDateTime) -> IncidentRow {
    IncidentRow {
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
    }
}

fn load(conn: &mut DbConnection, id: &str) -> Result<IncidentRow, diesel::result::Error> {
    incidents::table
        .find(id)
        .select(IncidentRow::as_select())
        .first(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::db::schema::{coes as coe_rows, timeline_entries};
    use crate::domain::template::Template;
    use crate::domain::Severity;
    use crate::email::EmailTemplates;
    use chrono::NaiveDate;
    use std::collections::BTreeMap;

    /// A new, migrated database: a SQLite file, or with `postgres` (a server's URL,
    /// from `TEST_POSTGRES_URL`) a new database on that server.
    fn database(postgres: Option<&str>) -> (tempfile::TempDir, crate::db::DbPool) {
        let dir = tempfile::tempdir().expect("dir");
        let url = match postgres {
            None => format!("sqlite://{}", dir.path().join("t.db").display()),
            Some(admin) => {
                let name = format!("coe_unit_{}", uuid::Uuid::now_v7().simple());
                let mut conn = diesel::PgConnection::establish(admin).expect("TEST_POSTGRES_URL");
                diesel::sql_query(format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .expect("create a database");
                let (server, _) = admin.rsplit_once('/').expect("a database in the URL");
                format!("{server}/{name}")
            }
        };
        let settings = crate::config::DatabaseSettings {
            url,
            ..Default::default()
        };
        let pool = db::connect(&settings).expect("connect");
        db::migrate(&mut pool.get().expect("conn")).expect("migrate");
        (dir, pool)
    }

    fn at(minute: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 11, 29)
            .and_then(|d| d.and_hms_opt(10, minute, 0))
            .expect("a time")
    }

    fn event(
        alert: &str,
        group: &str,
        resolved: bool,
        severity: Severity,
        minute: u32,
    ) -> FailureEvent {
        let status = if resolved {
            EventStatus::Resolved
        } else {
            EventStatus::Firing
        };
        FailureEvent {
            source: "test".into(),
            dedup_key: alert.into(),
            group_key: group.into(),
            occurrence_key: format!("{}@{minute}", status.as_str()),
            kind: if resolved {
                EventKind::Resolved
            } else {
                EventKind::Fired
            },
            status,
            title: format!("{alert} is failing"),
            service: Some("checkout".into()),
            severity,
            started_at: at(minute),
            ended_at: resolved.then(|| at(minute + 1)),
            description: None,
            labels: BTreeMap::from([
                (
                    "alertname".into(),
                    alert.trim_end_matches(char::is_numeric).into(),
                ),
                ("instance".into(), format!("host-{}", minute % 3)),
            ]),
            annotations: BTreeMap::new(),
            links: Vec::new(),
        }
    }

    /// Deliveries that exercise every path of filing: a draft opened by one
    /// delivery and followed by later ones, an occurrence and a keyed delivery sent
    /// again, a group resolved and reopened, more distinct alerts than a timeline
    /// shows.
    fn deliveries() -> Vec<(Option<&'static str>, Vec<FailureEvent>)> {
        use Severity::*;
        let many: Vec<FailureEvent> = (0..45)
            .map(|n| event(&format!("Alert{n}x"), "g1", false, Sev3, 20))
            .collect();
        vec![
            (
                None,
                vec![
                    event("Cpu1", "g1", false, Sev1, 1),
                    event("Disk1", "g2", false, Sev3, 1),
                ],
            ),
            (
                None,
                vec![
                    event("Cpu2", "g1", false, Sev3, 2),
                    event("Cpu1", "g1", false, Sev1, 1),
                ],
            ),
            (
                Some("k1"),
                vec![
                    event("Disk1", "g2", true, Sev3, 3),
                    event("Mem1", "g3", false, Sev2, 3),
                ],
            ),
            (
                Some("k1"),
                vec![
                    event("Disk1", "g2", true, Sev3, 3),
                    event("Mem1", "g3", false, Sev2, 3),
                ],
            ),
            (
                None,
                vec![
                    event("Disk1", "g2", false, Sev3, 6),
                    event("Cpu3", "g1", false, Sev2, 7),
                ],
            ),
            (None, many),
            (
                None,
                vec![
                    event("Cpu2", "g1", true, Sev3, 30),
                    event("Mem1", "g3", true, Sev2, 30),
                ],
            ),
        ]
    }

    /// A counted timeline entry: key, occurrences, hosts, text, first and last time.
    type Entry = (
        Option<String>,
        i32,
        i32,
        String,
        NaiveDateTime,
        Option<NaiveDateTime>,
    );

    /// What a database holds after filing, without ids and times of writing.
    fn snapshot(conn: &mut DbConnection) -> Vec<String> {
        let mut out = Vec::new();
        let incidents: Vec<IncidentRow> = incidents::table
            .order(incidents::group_key)
            .select(IncidentRow::as_select())
            .load(conn)
            .expect("incidents");
        for i in &incidents {
            out.push(format!(
                "incident {} {} sev{} events {} reopened {} coe {} resolved {:?}",
                i.group_key,
                i.state,
                i.severity,
                i.event_count,
                i.reopened_count,
                i.coe_required_at.is_some(),
                i.resolved_at
            ));
            let mut alerts: Vec<(String, String)> = incident_alerts::table
                .filter(incident_alerts::incident_id.eq(&i.id))
                .select((incident_alerts::dedup_key, incident_alerts::status))
                .load(conn)
                .expect("alerts");
            alerts.sort();
            out.push(format!("  alerts {alerts:?}"));
            let coes: Vec<(String, i32, String)> = coe_rows::table
                .filter(coe_rows::incident_id.eq(&i.id))
                .select((coe_rows::id, coe_rows::severity, coe_rows::state))
                .load(conn)
                .expect("coes");
            for (coe_id, severity, state) in coes {
                out.push(format!("  coe sev{severity} {state}"));
                let mut entries: Vec<Entry> = timeline_entries::table
                    .filter(timeline_entries::coe_id.eq(&coe_id))
                    .filter(timeline_entries::alert_key.is_not_null())
                    .select((
                        timeline_entries::alert_key,
                        timeline_entries::occurrences,
                        timeline_entries::hosts,
                        timeline_entries::text,
                        timeline_entries::at,
                        timeline_entries::last_at,
                    ))
                    .load(conn)
                    .expect("timeline");
                entries.sort();
                out.extend(entries.iter().map(|e| format!("  entry {e:?}")));
            }
        }
        let events: i64 = failure_events::table
            .count()
            .get_result(conn)
            .expect("count");
        let deliveries: i64 = webhook_deliveries::table
            .count()
            .get_result(conn)
            .expect("count");
        out.push(format!("{events} events in {deliveries} deliveries"));
        out
    }

    /// The answers, each event named by its alert (ids differ between databases).
    fn answers(conn: &mut DbConnection, outcomes: &[IngestOutcome]) -> Vec<String> {
        outcomes
            .iter()
            .map(|o| {
                let events: Vec<(String, bool)> = o
                    .events
                    .iter()
                    .map(|e| {
                        let alert: String = failure_events::table
                            .find(&e.id)
                            .select(failure_events::dedup_key)
                            .first(conn)
                            .expect("a stored event");
                        (alert, e.duplicate)
                    })
                    .collect();
                format!(
                    "stored {} duplicate {} events {events:?}",
                    o.delivery_id.is_some(),
                    o.duplicate
                )
            })
            .collect()
    }

    /// On SQLite, and on PostgreSQL when `TEST_POSTGRES_URL` names a server.
    #[test]
    fn a_batch_is_stored_as_its_deliveries_one_by_one_would_be() {
        a_batch_is_stored_as_one_by_one(None);
        if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
            a_batch_is_stored_as_one_by_one(Some(&url));
        }
    }

    fn a_batch_is_stored_as_one_by_one(postgres: Option<&str>) {
        let settings = Settings::default();
        let template = Template::default_template();
        let emails = EmailTemplates::load(None, "http://localhost").expect("email templates");
        let ctx = coes::Context {
            settings: &settings,
            template: &template,
            emails: &emails,
        };
        let deliveries = deliveries();
        let delivery = |key: Option<&'static str>| Delivery {
            source: "test",
            key,
            content_type: Some("application/json"),
            body: b"[]",
        };

        let (_one_dir, one) = database(postgres);
        let mut conn = one.get().expect("conn");
        let one_by_one: Vec<IngestOutcome> = deliveries
            .iter()
            .map(|(key, events)| ingest(&mut conn, delivery(*key), events, &ctx).expect("stored"))
            .collect();
        let expected = snapshot(&mut conn);
        let expected_answers = answers(&mut conn, &one_by_one);

        let (_batch_dir, batch) = database(postgres);
        let mut conn = batch.get().expect("conn");
        let all: Vec<(Delivery<'_>, &[FailureEvent])> = deliveries
            .iter()
            .map(|(key, events)| (delivery(*key), events.as_slice()))
            .collect();
        // The first alone (its groups are then open when the rest arrive), the
        // rest in one batch.
        let mut together = Vec::new();
        for part in [&all[..1], &all[1..]] {
            together.extend(
                db::write_transaction(&mut conn, |conn| store_all(conn, part, &ctx))
                    .expect("stored"),
            );
        }

        assert_eq!(answers(&mut conn, &together), expected_answers);
        assert_eq!(snapshot(&mut conn), expected);
        // The paths the deliveries were chosen for were taken.
        let text = expected.join("\n");
        assert!(
            text.contains("incident g2 open sev3 events 3 reopened 1"),
            "{text}"
        );
        assert!(text.contains("incident g3 resolved"), "{text}");
        assert!(text.contains("Other alerts"), "{text}");
        assert!(text.contains("54 events in 6 deliveries"), "{text}");
    }

    /// A draft that no longer shows its incident's severity or resolution (a person
    /// changed it, or it was in review when the incident changed) follows the
    /// incident again with its next events, even when they change nothing.
    #[test]
    fn a_draft_that_drifted_from_its_incident_follows_it_again() {
        use Severity::*;
        let settings = Settings::default();
        let template = Template::default_template();
        let emails = EmailTemplates::load(None, "http://localhost").expect("email templates");
        let ctx = coes::Context {
            settings: &settings,
            template: &template,
            emails: &emails,
        };
        let delivery = Delivery {
            source: "test",
            key: None,
            content_type: Some("application/json"),
            body: b"[]",
        };
        let (_dir, pool) = database(None);
        let mut conn = pool.get().expect("conn");
        let store = |conn: &mut DbConnection, events: &[FailureEvent]| {
            db::write_transaction(conn, |conn| store_all(conn, &[(delivery, events)], &ctx))
                .expect("stored");
        };
        store(&mut conn, &[event("Cpu1", "g1", false, Sev1, 1)]);
        let severity = |conn: &mut DbConnection| -> (i32, Option<NaiveDateTime>) {
            coe_rows::table
                .select((coe_rows::severity, coe_rows::resolved_at))
                .first(conn)
                .expect("the draft")
        };
        assert_eq!(severity(&mut conn), (1, None));
        diesel::update(coe_rows::table)
            .set(coe_rows::severity.eq(3))
            .execute(&mut conn)
            .expect("drift");
        // An event that changes nothing on the incident: the draft follows anyway.
        store(&mut conn, &[event("Cpu2", "g1", false, Sev3, 2)]);
        assert_eq!(severity(&mut conn), (1, None));
        // Resolved: the draft shows the resolution time.
        store(
            &mut conn,
            &[
                event("Cpu1", "g1", true, Sev1, 5),
                event("Cpu2", "g1", true, Sev3, 5),
            ],
        );
        assert_eq!(severity(&mut conn), (1, Some(at(6))));
    }
}
