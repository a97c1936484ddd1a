//! Filing events into a COE's timeline: one counted entry per alert and kind (see
//! `domain::timeline`), created with the draft from the incident's events so far and
//! updated as later events arrive. The raw events stay on the incident.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::models::{FailureEventRow, TimelineRow};
use crate::db::schema::{timeline_entries, timeline_hosts};
use crate::db::{self, DbConnection};
use crate::domain::timeline::{self, EventFacts, Tally};

/// How many rows one multi-row insert carries (SQLite allows 32,766 bound values).
const CHUNK: usize = 500;

fn facts(event: &FailureEventRow) -> EventFacts {
    let labels: BTreeMap<String, String> = serde_json::from_str(&event.labels).unwrap_or_default();
    let at = match event.kind.as_str() {
        "resolved" => event.ended_at.unwrap_or(event.received_at),
        "fired" => event.started_at,
        _ => event.received_at,
    };
    EventFacts {
        event_id: event.id.clone(),
        kind: event.kind.clone(),
        title: event.title.clone(),
        name: timeline::alert_name(&event.title, &labels).to_owned(),
        host: timeline::host(&labels, &event.dedup_key),
        at,
    }
}

fn count(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn row(
    coe_id: &str,
    key: String,
    event: &EventFacts,
    source: &str,
    tally: &Tally,
    now: NaiveDateTime,
) -> TimelineRow {
    TimelineRow {
        id: db::new_id(),
        coe_id: coe_id.to_owned(),
        at: tally.first,
        kind: event.kind.clone(),
        text: tally.text(),
        source: Some(source.to_owned()),
        event_id: Some(event.event_id.clone()),
        created_at: now,
        alert_key: Some(key),
        alert_name: Some(tally.name.clone()),
        occurrences: count(tally.occurrences),
        hosts: count(tally.hosts),
        last_at: Some(tally.last),
    }
}

/// Writes the entries of a new draft from its incident's events (oldest first).
pub(super) fn file_all(
    conn: &mut DbConnection,
    coe_id: &str,
    events: &[FailureEventRow],
    now: NaiveDateTime,
) -> QueryResult<()> {
    let all: Vec<EventFacts> = events.iter().map(facts).collect();
    let sources: BTreeMap<&str, &str> = events
        .iter()
        .map(|e| (e.id.as_str(), e.source.as_str()))
        .collect();
    let mut rows = Vec::new();
    let mut hosts = Vec::new();
    for entry in timeline::collapse(&all) {
        let first = all
            .iter()
            .find(|e| e.event_id == entry.first_event_id)
            .expect("the first event of an entry is one of its events");
        let source = sources.get(first.event_id.as_str()).copied().unwrap_or("");
        let row = row(coe_id, entry.key, first, source, &entry.tally, now);
        hosts.extend(entry.hosts.into_iter().map(|h| {
            (
                timeline_hosts::entry_id.eq(row.id.clone()),
                timeline_hosts::host.eq(h),
            )
        }));
        rows.push(row);
    }
    for chunk in rows.chunks(CHUNK) {
        crate::insert_rows!(conn, timeline_entries::table, chunk)?;
    }
    for chunk in hosts.chunks(CHUNK) {
        crate::insert_rows!(conn, timeline_hosts::table, chunk)?;
    }
    Ok(())
}

/// Writes the entries of a COE opened on (or attached to) an incident whose events
/// retention dropped: from the digest it kept, one entry per alert it collapsed, as
/// the events would have made them (an alert the timeline has already is counted into
/// its entry; its hosts added, since which hosts they were is not kept). A digest kept
/// before it named each alert's kind and counts gives them from its text.
pub(super) fn file_digest(
    conn: &mut DbConnection,
    coe_id: &str,
    digest: &crate::services::incidents::retention::Digest,
    source: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let time = |value: &serde_json::Value| {
        value
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.naive_utc())
    };
    for alert in &digest.alerts {
        let Some(first) = time(&alert["first"]) else {
            continue;
        };
        let text = alert["text"].as_str().unwrap_or_default();
        let kind = alert["kind"]
            .as_str()
            .unwrap_or_else(|| timeline::kind_of_text(text))
            .to_owned();
        let name = alert["name"].as_str().unwrap_or(text).to_owned();
        let tally = Tally {
            kind: kind.clone(),
            name: name.clone(),
            // One occurrence: the text is "Fired: <title>".
            first_title: text.split_once(": ").map_or(text, |(_, t)| t).to_owned(),
            occurrences: alert["occurrences"].as_i64().unwrap_or(1),
            hosts: alert["hosts"].as_i64().unwrap_or(1),
            first,
            last: time(&alert["last"]).unwrap_or(first),
        };
        let key = timeline::alert_key(&kind, &name);
        match entry_for(conn, coe_id, &key)? {
            None => {
                let row = TimelineRow {
                    id: db::new_id(),
                    coe_id: coe_id.to_owned(),
                    at: tally.first,
                    kind,
                    text: tally.text(),
                    source: Some(source.to_owned()),
                    event_id: None,
                    created_at: now,
                    alert_key: Some(key),
                    alert_name: Some(name),
                    occurrences: count(tally.occurrences),
                    hosts: count(tally.hosts),
                    last_at: Some(tally.last),
                };
                diesel::insert_into(timeline_entries::table)
                    .values(&row)
                    .execute(conn)?;
            }
            Some(entry) => {
                let merged = Tally {
                    occurrences: i64::from(entry.occurrences) + tally.occurrences,
                    hosts: i64::from(entry.hosts) + tally.hosts,
                    first: entry.at.min(tally.first),
                    last: entry.last_at.unwrap_or(entry.at).max(tally.last),
                    ..tally
                };
                diesel::update(timeline_entries::table.find(&entry.id))
                    .set((
                        timeline_entries::at.eq(merged.first),
                        timeline_entries::last_at.eq(Some(merged.last)),
                        timeline_entries::occurrences.eq(count(merged.occurrences)),
                        timeline_entries::hosts.eq(count(merged.hosts)),
                        timeline_entries::text.eq(merged.text()),
                    ))
                    .execute(conn)?;
            }
        }
    }
    Ok(())
}

fn entry_for(conn: &mut DbConnection, coe_id: &str, key: &str) -> QueryResult<Option<TimelineRow>> {
    timeline_entries::table
        .filter(timeline_entries::coe_id.eq(coe_id))
        .filter(timeline_entries::alert_key.eq(key))
        .select(TimelineRow::as_select())
        .first(conn)
        .optional()
}

/// The events of one alert key to count in its entry.
struct AlertEvents<'e> {
    key: String,
    name: String,
    /// The entry as stored; `None`: a new entry.
    entry: Option<TimelineRow>,
    /// The events with their sources, in the order they arrived.
    events: Vec<(EventFacts, &'e str)>,
}

/// Counts newly filed events of a COE's incident in their alerts' entries, creating
/// an entry for an alert not seen before (or, past the limit of distinct alerts,
/// counting it under "Other alerts"). The events of one alert are tallied together
/// and its entry written once: a storm adds thousands of events to a few entries.
pub(super) fn file_new(
    conn: &mut DbConnection,
    coe_id: &str,
    events: &[&FailureEventRow],
    now: NaiveDateTime,
) -> QueryResult<()> {
    let mut by_key: Vec<(String, Vec<(EventFacts, &str)>)> = Vec::new();
    for event in events {
        let facts = facts(event);
        let key = timeline::alert_key(&facts.kind, &facts.name);
        match by_key.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push((facts, &event.source)),
            None => by_key.push((key, vec![(facts, &event.source)])),
        }
    }
    // Distinct alerts with an entry, counted when a new alert first needs it.
    let mut distinct: Option<i64> = None;
    let mut writes: Vec<AlertEvents<'_>> = Vec::new();
    for (key, group) in by_key {
        let (kind, name) = (group[0].0.kind.clone(), group[0].0.name.clone());
        let entry = entry_for(conn, coe_id, &key)?;
        let (key, name, entry) = if entry.is_some() {
            (key, name, entry)
        } else {
            let n = match distinct {
                Some(n) => n,
                None => timeline_entries::table
                    .filter(timeline_entries::coe_id.eq(coe_id))
                    .filter(timeline_entries::alert_key.is_not_null())
                    .filter(timeline_entries::alert_name.ne(timeline::OTHER_ALERTS))
                    .count()
                    .get_result(conn)?,
            };
            if n >= timeline::MAX_ALERT_ENTRIES {
                distinct = Some(n);
                let other = timeline::other_alerts_key(&kind);
                let entry = if writes.iter().any(|w| w.key == other) {
                    None // counted into the write already planned for it
                } else {
                    entry_for(conn, coe_id, &other)?
                };
                (other, timeline::OTHER_ALERTS.to_owned(), entry)
            } else {
                distinct = Some(n + 1);
                (key, name, None)
            }
        };
        match writes.iter_mut().find(|w| w.key == key) {
            Some(write) => write.events.extend(group),
            None => writes.push(AlertEvents {
                key,
                name,
                entry,
                events: group,
            }),
        }
    }
    for write in writes {
        write_entry(conn, coe_id, write, now)?;
    }
    Ok(())
}

/// Writes one alert's entry with `write`'s events counted in it.
fn write_entry(
    conn: &mut DbConnection,
    coe_id: &str,
    write: AlertEvents<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let AlertEvents {
        key,
        name,
        entry,
        events,
    } = write;
    let (first, source) = &events[0];
    let mut hosts: Vec<&str> = Vec::new();
    for (facts, _) in &events {
        if !hosts.contains(&facts.host.as_str()) {
            hosts.push(&facts.host);
        }
    }
    let at = |pick: fn(NaiveDateTime, NaiveDateTime) -> NaiveDateTime| {
        events
            .iter()
            .map(|(f, _)| f.at)
            .reduce(pick)
            .unwrap_or(first.at)
    };
    let (earliest, latest) = (at(NaiveDateTime::min), at(NaiveDateTime::max));
    let occurrences = i64::try_from(events.len()).unwrap_or(i64::MAX);
    let Some(entry) = entry else {
        let tally = Tally {
            kind: first.kind.clone(),
            name,
            first_title: first.title.clone(),
            occurrences,
            hosts: i64::try_from(hosts.len()).unwrap_or(i64::MAX),
            first: earliest,
            last: latest,
        };
        let row = row(coe_id, key, first, source, &tally, now);
        diesel::insert_into(timeline_entries::table)
            .values(&row)
            .execute(conn)?;
        add_hosts(conn, &row.id, hosts)?;
        return Ok(());
    };
    let new_hosts = add_hosts(conn, &entry.id, hosts)?;
    let tally = Tally {
        kind: entry.kind.clone(),
        name: entry.alert_name.clone().unwrap_or(name),
        // Two events or more: the text counts them and names no single title.
        first_title: first.title.clone(),
        occurrences: i64::from(entry.occurrences) + occurrences,
        hosts: i64::from(entry.hosts) + i64::try_from(new_hosts).unwrap_or(0),
        first: entry.at.min(earliest),
        last: entry.last_at.unwrap_or(entry.at).max(latest),
    };
    diesel::update(timeline_entries::table.find(&entry.id))
        .set((
            timeline_entries::at.eq(tally.first),
            timeline_entries::last_at.eq(Some(tally.last)),
            timeline_entries::occurrences.eq(count(tally.occurrences)),
            timeline_entries::hosts.eq(count(tally.hosts)),
            timeline_entries::text.eq(tally.text()),
        ))
        .execute(conn)?;
    Ok(())
}

/// Counts `hosts` under entry `entry_id`, each once; returns how many it had not yet.
fn add_hosts(conn: &mut DbConnection, entry_id: &str, hosts: Vec<&str>) -> QueryResult<usize> {
    let rows: Vec<_> = hosts
        .into_iter()
        .map(|host| {
            (
                timeline_hosts::entry_id.eq(entry_id),
                timeline_hosts::host.eq(host),
            )
        })
        .collect();
    let mut added = 0;
    for chunk in rows.chunks(CHUNK) {
        added += crate::insert_rows_or_ignore!(
            &mut *conn,
            timeline_hosts::table,
            chunk,
            (timeline_hosts::entry_id, timeline_hosts::host)
        )?;
    }
    Ok(added)
}

/// Forgets the hosts an entry counted (when it is deleted).
pub(super) fn forget_hosts(conn: &mut DbConnection, entry_id: &str) -> QueryResult<()> {
    diesel::delete(timeline_hosts::table.filter(timeline_hosts::entry_id.eq(entry_id)))
        .execute(conn)
        .map(drop)
}
