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

fn entry_for(conn: &mut DbConnection, coe_id: &str, key: &str) -> QueryResult<Option<TimelineRow>> {
    timeline_entries::table
        .filter(timeline_entries::coe_id.eq(coe_id))
        .filter(timeline_entries::alert_key.eq(key))
        .select(TimelineRow::as_select())
        .first(conn)
        .optional()
}

/// Counts one newly filed event in its alert's entry, creating the entry (or, past
/// the limit of distinct alerts, counting it under "Other alerts").
pub(super) fn file_one(
    conn: &mut DbConnection,
    coe_id: &str,
    event: &FailureEventRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let facts = facts(event);
    let mut key = timeline::alert_key(&facts.kind, &facts.name);
    let mut name = facts.name.clone();
    let mut existing = entry_for(conn, coe_id, &key)?;
    if existing.is_none() {
        let distinct: i64 = timeline_entries::table
            .filter(timeline_entries::coe_id.eq(coe_id))
            .filter(timeline_entries::alert_key.is_not_null())
            .filter(timeline_entries::alert_name.ne(timeline::OTHER_ALERTS))
            .count()
            .get_result(conn)?;
        if distinct >= timeline::MAX_ALERT_ENTRIES {
            key = timeline::other_alerts_key(&facts.kind);
            name = timeline::OTHER_ALERTS.to_owned();
            existing = entry_for(conn, coe_id, &key)?;
        }
    }
    let Some(entry) = existing else {
        let tally = Tally {
            kind: facts.kind.clone(),
            name,
            first_title: facts.title.clone(),
            occurrences: 1,
            hosts: 1,
            first: facts.at,
            last: facts.at,
        };
        let row = row(coe_id, key, &facts, &event.source, &tally, now);
        diesel::insert_into(timeline_entries::table)
            .values(&row)
            .execute(conn)?;
        diesel::insert_into(timeline_hosts::table)
            .values((
                timeline_hosts::entry_id.eq(&row.id),
                timeline_hosts::host.eq(&facts.host),
            ))
            .execute(conn)?;
        return Ok(());
    };
    let new_host = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(timeline_hosts::table).values((
            timeline_hosts::entry_id.eq(&entry.id),
            timeline_hosts::host.eq(&facts.host),
        )),
        (timeline_hosts::entry_id, timeline_hosts::host)
    )?;
    let tally = Tally {
        kind: entry.kind.clone(),
        name: entry.alert_name.clone().unwrap_or(name),
        // Two events or more: the text counts them and names no single title.
        first_title: facts.title.clone(),
        occurrences: i64::from(entry.occurrences) + 1,
        hosts: i64::from(entry.hosts) + i64::try_from(new_host).unwrap_or(0),
        first: entry.at.min(facts.at),
        last: entry.last_at.unwrap_or(entry.at).max(facts.at),
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

/// Forgets the hosts an entry counted (when it is deleted).
pub(super) fn forget_hosts(conn: &mut DbConnection, entry_id: &str) -> QueryResult<()> {
    diesel::delete(timeline_hosts::table.filter(timeline_hosts::entry_id.eq(entry_id)))
        .execute(conn)
        .map(drop)
}
