//! Storing failure events and grouping them into incidents. One delivery is stored
//! whole or not at all. Alone (`ingest`, the command line) it has a transaction of
//! its own. Through the group-commit writer (`writer`) that the HTTP API uses, the
//! deliveries that arrived together are written as one (`store_all`), in one
//! transaction; should a statement fail, the writer writes them again one by one,
//! each in a savepoint of its own, so that only the failing one rolls back (a fault
//! of the database itself rolls back the whole batch).

mod filing;
pub mod writer;

use std::collections::HashMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::db::models::{DeliveryRow, FailureEventRow};
use crate::db::schema::{failure_events, webhook_deliveries};
use crate::db::{self, locks, DbConnection};
use crate::domain::incident::IncidentPolicy;
use crate::domain::{EventStatus, FailureEvent};
use crate::services::{coe::actions::drill, coe::coes, Env};
use filing::{file_into_incident, Pending};

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

/// A SHA-256 digest, as its 32 bytes: what groups and occurrences are indexed by
/// (keys can be long; 32 bytes, not 64 hexadecimal characters, keep the indexes small).
pub type KeyHash = Vec<u8>;

fn sha256(parts: &[&str]) -> KeyHash {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().to_vec()
}

/// The hash a group key is indexed by.
pub fn group_hash(group_key: &str) -> KeyHash {
    sha256(&[group_key])
}

fn occurrence_hash(event: &FailureEvent) -> KeyHash {
    sha256(&[&event.source, &event.dedup_key, &event.occurrence_key])
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
    env: &Env<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    db::write_transaction(conn, |conn| {
        locks::lock_keys(conn, keys_of(delivery, events))?;
        store(conn, delivery, events, env)
    })
}

/// What `ingest` does once the delivery's keys are locked: the caller holds them
/// and the transaction.
pub(crate) fn store(
    conn: &mut DbConnection,
    delivery: Delivery<'_>,
    events: &[FailureEvent],
    env: &Env<'_>,
) -> Result<IngestOutcome, diesel::result::Error> {
    store_all(conn, &[(delivery, events)], env)?
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
    env: &Env<'_>,
) -> Result<Vec<IngestOutcome>, diesel::result::Error> {
    let policy = &env.settings.incident_policy();
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
    let hashes: Vec<Vec<KeyHash>> = deliveries
        .iter()
        .map(|(_, events)| events.iter().map(occurrence_hash).collect())
        .collect();
    let asked: Vec<&KeyHash> = hashes
        .iter()
        .zip(&again)
        .filter(|(_, again)| again.is_none())
        .flat_map(|(hashes, _)| hashes)
        .collect();
    // Lists of values: planned for the values (see `db::planned_for_values`), both
    // look-ups under one setting (each setting is a statement of its own).
    let lists = asked.len() > 1;
    let mut seen = db::planned_for_values(conn, lists, |conn| {
        let seen = occurrences(conn, &asked)?;
        // The groups of the new events, asked at once.
        let mut groups: Vec<KeyHash> = deliveries
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
        pending.look_up_groups(conn, &groups)?;
        Ok(seen)
    })?;

    // The drills' alerts among them that prove a fix (`services::coe::actions::drill`):
    // their incidents ask for no COE. No query when no drill's alert is among them.
    // Only events to be stored: one sent before proves nothing again.
    let eligible: Vec<(usize, usize, &FailureEvent)> = deliveries
        .iter()
        .zip(&hashes)
        .zip(&again)
        .enumerate()
        .filter(|(_, (_, again))| again.is_none())
        .flat_map(|(d, (((_, events), hashes), _))| {
            events
                .iter()
                .zip(hashes)
                .enumerate()
                .filter(|(_, (_, hash))| !seen.contains_key(*hash))
                .map(move |(e, (event, _))| (d, e, event))
        })
        .collect();
    let proving = drill::proven_by(conn, &eligible)?;

    let mut outcomes: Vec<IngestOutcome> = Vec::with_capacity(deliveries.len());
    // Keyed deliveries of this batch: (source, key) → their outcome.
    let mut keyed: HashMap<(&str, &str), usize> = HashMap::new();
    for (d, (((delivery, events), hashes), again)) in
        deliveries.iter().zip(&hashes).zip(again).enumerate()
    {
        let drills: Vec<usize> = proving
            .iter()
            .filter(|p| p.at.0 == d)
            .map(|p| p.at.1)
            .collect();
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
                (policy, &drills),
                env,
            )?,
        };
        if let Some(key) = delivery.key {
            keyed.insert((delivery.source, key), outcomes.len());
        }
        outcomes.push(outcome);
    }
    pending.flush(conn)?;
    // Each drill's alert stored (not one sent before) proves its re-check.
    let proven: Vec<_> = proving
        .into_iter()
        .filter_map(|p| {
            let (d, e) = p.at;
            let stored = outcomes[d].events.get(e).filter(|s| !s.duplicate)?;
            Some((p.recheck, stored.id.as_str(), &deliveries[d].1[e]))
        })
        .collect();
    drill::prove(conn, *env, proven)?;
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
    hashes: &[&KeyHash],
) -> QueryResult<HashMap<KeyHash, (String, String)>> {
    let mut seen = HashMap::new();
    for chunk in hashes.chunks(LOOKUP_CHUNK) {
        let select = (
            failure_events::occurrence_hash,
            failure_events::id,
            failure_events::incident_id,
        );
        // One value: a statement the connection keeps prepared (a list is not).
        let found: Vec<(KeyHash, String, String)> = match chunk {
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
    hashes: &[KeyHash],
    seen: &mut HashMap<KeyHash, (String, String)>,
    (policy, drills): (&IncidentPolicy, &[usize]),
    env: &Env<'_>,
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
        let filed = file_into_incident(conn, pending, event, policy, drills.contains(&i))?;
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
                if let Some(id) = coes::open_draft_for_incident(conn, &incident, env, now)? {
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

#[cfg(test)]
mod tests;
