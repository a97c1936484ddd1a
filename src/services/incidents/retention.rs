//! Retention (`events.keep_days`): an incident whose last event is older than that,
//! that is not open and has no COE (nor events a COE's timeline points at), keeps what its page shows of its events — the
//! alerts collapsed and what each alert said (`Digest`) — and drops the events
//! themselves, and the deliveries left with none. Its counts, times and alerts stay,
//! and its page reads the digest: it shows the same. An incident with a COE keeps
//! every event (its evidence). The sweep prunes in bounded batches; on SQLite it then
//! gives the freed pages back to the file system (`db::size::give_back`).

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::db::schema::{
    coe_incidents, failure_events, incidents, timeline_entries, webhook_deliveries,
};
use crate::db::{self, DbConnection};
use crate::domain::timeline::{self, EventFacts};
use crate::services::incidents as incident_service;
use crate::services::incidents::Event;
use crate::services::Env;

/// How many of an incident's events its page collapses.
pub const COLLAPSED: i64 = 500;

/// What an incident's page shows of its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Digest {
    /// The alerts collapsed: when each first and last fired, and what.
    pub alerts: Vec<Value>,
    /// What each alert said of itself.
    pub said: Vec<Value>,
    /// How many events it was made from (the first `COLLAPSED`).
    pub shown: usize,
}

/// The digest of `events` (the incident's first `COLLAPSED`, oldest first).
pub fn digest(events: &[Event]) -> Digest {
    let all: Vec<EventFacts> = events.iter().map(facts).collect();
    let alerts = timeline::collapse(&all)
        .into_iter()
        .map(|c| {
            json!({
                "first": crate::json::format_utc(&c.tally.first),
                "last": crate::json::format_utc(&c.tally.last),
                "text": c.tally.text(),
                // For a COE opened on the incident later: its timeline's entries.
                "kind": c.tally.kind,
                "name": c.tally.name,
                "occurrences": c.tally.occurrences,
                "hosts": c.tally.hosts,
            })
        })
        .collect();
    Digest {
        alerts,
        said: alert_context(events),
        shown: all.len(),
    }
}

/// The digest kept for an incident whose events were dropped.
pub fn kept_digest(conn: &mut DbConnection, id: &str) -> QueryResult<Option<Digest>> {
    let kept: Option<Option<String>> = incidents::table
        .find(id)
        .select(incidents::digest)
        .first(conn)
        .optional()?;
    Ok(kept
        .flatten()
        .and_then(|text| serde_json::from_str(&text).ok()))
}

/// What one pruning pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub incidents: usize,
    pub events: usize,
    pub deliveries: usize,
}

/// Incidents pruned per transaction.
const BATCH: i64 = 20;

/// At most this many incidents a sweep: a first sweep over years of events spreads
/// its work over several sweeps instead of holding the writer for minutes.
const PER_SWEEP: usize = 2_000;

/// Prunes what `events.keep_days` allows at `now`: up to `PER_SWEEP` incidents, `BATCH`
/// to a transaction, then the deliveries left without events.
pub fn prune(conn: &mut DbConnection, env: Env<'_>, now: NaiveDateTime) -> QueryResult<Pruned> {
    let settings = env.settings;
    let mut pruned = Pruned::default();
    if settings.events.keep_days == 0 {
        return Ok(pruned);
    }
    let before = now - Duration::days(settings.events.keep_days);
    while pruned.incidents < PER_SWEEP {
        let (incidents, events) =
            db::write_transaction(conn, |conn| prune_batch(conn, before, now))?;
        pruned.incidents += incidents;
        pruned.events += events;
        if incidents < usize::try_from(BATCH).unwrap_or(usize::MAX) {
            break;
        }
    }
    pruned.deliveries = db::write_transaction(conn, |conn| {
        diesel::delete(
            webhook_deliveries::table
                .filter(webhook_deliveries::received_at.lt(before))
                .filter(diesel::dsl::not(diesel::dsl::exists(
                    failure_events::table
                        .filter(failure_events::delivery_id.eq(webhook_deliveries::id)),
                ))),
        )
        .execute(conn)
    })?;
    Ok(pruned)
}

/// Prunes the next `BATCH` incidents last changed before `before`. Returns how many
/// incidents it pruned and how many events it dropped.
fn prune_batch(
    conn: &mut DbConnection,
    before: NaiveDateTime,
    now: NaiveDateTime,
) -> QueryResult<(usize, usize)> {
    // Neither an open incident (an event may still come) nor one with a COE (its
    // events are the COE's evidence), nor one whose events a COE's timeline points at
    // (an entry someone edited stays when its incident is detached).
    let ids: Vec<String> = incidents::table
        .filter(incidents::events_pruned_at.is_null())
        .filter(incidents::updated_at.lt(before))
        .filter(incidents::state.ne("open"))
        .filter(diesel::dsl::not(diesel::dsl::exists(
            coe_incidents::table.filter(coe_incidents::incident_id.eq(incidents::id)),
        )))
        .filter(diesel::dsl::not(diesel::dsl::exists(
            failure_events::table
                .inner_join(
                    timeline_entries::table
                        .on(timeline_entries::event_id.eq(failure_events::id.nullable())),
                )
                .filter(failure_events::incident_id.eq(incidents::id)),
        )))
        .order(incidents::updated_at.asc())
        .limit(BATCH)
        .select(incidents::id)
        .load(conn)?;
    let mut dropped = 0;
    for id in &ids {
        let events = incident_service::events(conn, id, COLLAPSED, 0)?
            .map(|(events, _)| events)
            .unwrap_or_default();
        let kept = serde_json::to_string(&digest(&events)).unwrap_or_default();
        diesel::update(incidents::table.find(id))
            .set((
                incidents::digest.eq(kept),
                incidents::events_pruned_at.eq(now),
            ))
            .execute(conn)?;
        dropped += diesel::delete(failure_events::table.filter(failure_events::incident_id.eq(id)))
            .execute(conn)?;
    }
    Ok((ids.len(), dropped))
}

fn facts(event: &Event) -> EventFacts {
    let at = match event.kind.as_str() {
        "resolved" => event.ended_at.unwrap_or(event.received_at),
        "fired" => event.started_at,
        _ => event.received_at,
    };
    let labels: &BTreeMap<String, String> = &event.labels;
    EventFacts {
        event_id: event.id.clone(),
        kind: event.kind.as_str().to_owned(),
        title: event.title.clone(),
        name: timeline::alert_name(&event.title, labels).to_owned(),
        host: timeline::host(labels, &event.dedup_key),
        at,
    }
}

/// How many distinct alerts the incident page shows the labels and annotations of.
const ALERTS_DESCRIBED: usize = 20;

/// What each alert said of itself, one entry per alert name, first seen first (an
/// alert storm of twenty `HighErrorRate`s is one entry naming its twenty instances,
/// not twenty entries of the same name): its summary and description, its links
/// (runbook, dashboard, the generator's URL; only http(s) ones are links), the labels
/// all its instances share, and for each instance the labels that set it apart.
fn alert_context(events: &[Event]) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    let mut groups: Vec<(String, Vec<&Event>)> = Vec::new();
    for e in events.iter().filter(|e| seen.insert(e.dedup_key.clone())) {
        let name = timeline::alert_name(&e.title, &e.labels);
        if let Some((_, instances)) = groups.iter_mut().find(|(n, _)| *n == name) {
            instances.push(e);
        } else if groups.len() < ALERTS_DESCRIBED {
            groups.push((name.to_owned(), vec![e]));
        }
    }
    groups
        .into_iter()
        .map(|(name, instances)| {
            let first = instances[0];
            let shared =
                |k: &String, v: &String| instances.iter().all(|i| i.labels.get(k) == Some(v));
            let labels: Vec<Value> = first
                .labels
                .iter()
                .filter(|(k, v)| shared(k, v))
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect();
            let apart: Vec<String> = if instances.len() > 1 {
                instances
                    .iter()
                    .map(|i| {
                        i.labels
                            .iter()
                            .filter(|(k, v)| !shared(k, v))
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let annotations: Vec<Value> = first
                .annotations
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "summary" | "description"))
                .map(|(k, v)| json!({"name": k, "value": v, "href": timeline::web_href(Some(v))}))
                .collect();
            let links: Vec<String> = first
                .links
                .iter()
                .filter_map(|l| timeline::web_href(Some(l)))
                .collect();
            json!({
                "name": name,
                "count": instances.len(),
                "instances": apart,
                "summary": first.annotations.get("summary"),
                "description": first.annotations.get("description").or(first.description.as_ref()),
                "labels": labels,
                "annotations": annotations,
                "links": links,
            })
        })
        .collect()
}
