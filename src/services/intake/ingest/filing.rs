//! Filing events into incidents in memory (`Pending`), and writing what a batch
//! changed in a few statements (`Pending::flush`): the other half of `ingest`, which
//! decides what is new in each delivery.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{group_hash, KeyHash, INSERT_CHUNK, LOOKUP_CHUNK};
use crate::db::models::{DeliveryRow, FailureEventRow, IncidentAlertRow, IncidentRow};
use crate::db::schema::{
    failure_events, incident_alerts, incident_groups, incidents, webhook_deliveries,
};
use crate::db::{self, DbConnection};
use crate::domain::incident::IncidentState;
use crate::domain::EventStatus;
use crate::services::coe::coes;

mod placing;

pub(super) use placing::file_into_incident;

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
pub(super) struct Pending {
    pub(super) now: NaiveDateTime,
    /// Groups looked up for the batch before it changed any, by group hash (a group
    /// missing here, or filed into since, is asked of the database).
    groups: HashMap<KeyHash, Known>,
    pub(super) deliveries: Vec<DeliveryRow>,
    /// Incidents touched, by id.
    incidents: HashMap<String, Touched>,
    /// The incident each group's events go to now, by group hash.
    current: HashMap<KeyHash, String>,
    /// Alert states changed: incident id → dedup key → status.
    alerts: HashMap<String, HashMap<String, EventStatus>>,
    pub(super) events: Vec<FailureEventRow>,
    /// Events to add to their COE's timeline once stored: (COE id, index in `events`).
    pub(super) timeline: Vec<(String, usize)>,
    /// Drafts to bring up to date with their incident: (COE id, incident id).
    pub(super) drafts: Vec<(String, String)>,
    /// The COE of each incident looked at: its id and whether it is a draft.
    pub(super) coes: HashMap<String, Option<(String, bool)>>,
    /// Drafts' severity, resolution and detection times as stored, where known, by
    /// COE id: a draft follows its incident only when they differ from the incident's
    /// (an earlier alert moves the start and the detection back together).
    pub(super) draft_states: HashMap<String, (i32, Option<NaiveDateTime>, Option<NaiveDateTime>)>,
    /// Incidents of this batch a drill's alert proving a fix was filed into: their
    /// other drill's events (the alert resolved, another of its group) ask for no COE.
    pub(super) drill_incidents: std::collections::HashSet<String>,
}

impl Pending {
    pub(super) fn new(now: NaiveDateTime) -> Pending {
        Pending {
            drill_incidents: std::collections::HashSet::new(),
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
    pub(super) fn incident(&self, id: &str) -> QueryResult<&IncidentRow> {
        // Every id asked for was filed by this delivery; a miss is a fault of ours.
        self.incidents
            .get(id)
            .map(|touched| &touched.row)
            .ok_or(diesel::result::Error::NotFound)
    }

    /// Asks at once what the groups `hashes` (sorted) have: their open incidents and
    /// these incidents' COEs, and which groups have no incident at all.
    pub(super) fn look_up_groups(
        &mut self,
        conn: &mut DbConnection,
        hashes: &[KeyHash],
    ) -> QueryResult<()> {
        // Each group known with its open incident, if any, in one statement.
        let groups = incident_groups::table.left_join(
            incidents::table.on(incidents::group_id
                .eq(incident_groups::group_id)
                .and(incidents::state.eq(IncidentState::Open.as_str()))),
        );
        // IncidentRow's columns in its order (`as_select` cannot be made nullable
        // for a connection of either backend).
        let row = (
            incidents::id,
            incidents::group_key,
            incidents::group_hash,
            incidents::group_id,
            incidents::source,
            incidents::title,
            incidents::service,
            incidents::severity,
            incidents::state,
            incidents::started_at,
            incidents::detected_at,
            incidents::acknowledged_at,
            incidents::resolved_at,
            incidents::reopened_count,
            incidents::event_count,
            incidents::coe_required_at,
            incidents::created_at,
            incidents::updated_at,
            incidents::budget_burned,
            incidents::slo,
        );
        let select = (incident_groups::group_hash, row.nullable());
        for chunk in hashes.chunks(LOOKUP_CHUNK) {
            // One value: a statement the connection keeps prepared (a list is not).
            let found: Vec<(KeyHash, Option<IncidentRow>)> = match chunk {
                [hash] => groups
                    .filter(incident_groups::group_hash.eq(hash))
                    .select(select)
                    .load(conn)?,
                _ => groups
                    .filter(incident_groups::group_hash.eq_any(chunk))
                    .select(select)
                    .load(conn)?,
            };
            let mut known: HashSet<KeyHash> = HashSet::with_capacity(found.len());
            let mut open: Vec<IncidentRow> = Vec::new();
            for (hash, row) in found {
                known.insert(hash);
                open.extend(row);
            }
            for hash in chunk.iter().filter(|hash| !known.contains(*hash)) {
                self.groups.insert(hash.clone(), Known::Empty);
            }
            // Their COEs, at once (an incident this batch makes has none).
            let ids: Vec<&String> = open.iter().map(|row| &row.id).collect();
            let mut found = coes::coes_of_incidents(conn, &ids)?;
            for row in open {
                let coe = found.remove(&row.id);
                if let Some(coe) = coe.as_ref().filter(|coe| coe.draft) {
                    self.draft_states.insert(
                        coe.id.clone(),
                        (coe.severity, coe.resolved_at, coe.detected_at),
                    );
                }
                self.coes
                    .insert(row.id.clone(), coe.map(|coe| (coe.id, coe.draft)));
                self.groups
                    .insert(row.group_hash.clone(), Known::Open(Box::new(row)));
            }
        }
        Ok(())
    }

    /// What the look-up found for a group: its open incident, or `None` for a group
    /// without incidents; not looked up (or with incidents, all resolved): nothing.
    #[cfg(test)]
    pub(super) fn known(&self, hash: &KeyHash) -> Option<Option<&IncidentRow>> {
        match self.groups.get(hash)? {
            Known::Open(row) => Some(Some(row)),
            Known::Empty => Some(None),
        }
    }

    /// Writes everything pending: deliveries, incidents, alert states, events, then
    /// what the events add to their COEs (timeline entries refer to the events).
    pub(super) fn flush(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
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
        let new = self.flush_incidents(conn)?;
        // A new incident's alerts are new rows; a stored one's may be there already.
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
        self.flush_timeline(conn)?;
        self.events.clear();
        self.follow_drafts(conn)
    }

    /// Writes the incidents the batch changed and the ones it made (with the groups
    /// these name); says which are new.
    fn flush_incidents(&mut self, conn: &mut DbConnection) -> QueryResult<HashSet<String>> {
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
        db::bulk::update_incidents(conn, &changed, INSERT_CHUNK)?;
        // A new group is named by its first incident (the groups of the others are
        // stored already).
        let groups: Vec<NewGroup> = new
            .iter()
            .filter(|row| row.group_id == row.id)
            .map(|row| NewGroup {
                group_hash: &row.group_hash,
                group_id: &row.id,
            })
            .collect();
        for chunk in groups.chunks(INSERT_CHUNK) {
            match chunk {
                [row] => diesel::insert_into(incident_groups::table)
                    .values(row)
                    .execute(conn)?,
                _ => crate::insert_rows!(&mut *conn, incident_groups::table, chunk)?,
            };
        }
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
        Ok(new.into_iter().map(|row| row.id.clone()).collect())
    }

    /// Adds the events written to their COEs' timelines, each COE's at once.
    fn flush_timeline(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
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
        Ok(())
    }

    /// Brings the drafts of the incidents touched up to date with them, where they
    /// differ.
    fn follow_drafts(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
        for (coe_id, incident_id) in std::mem::take(&mut self.drafts) {
            let touched = self
                .incidents
                .get_mut(&incident_id)
                .ok_or(diesel::result::Error::NotFound)?;
            let incident = &touched.row;
            // Following changes nothing when the draft is as worst as the incident
            // and shows its resolution time (a resolution people wrote is theirs).
            let needed = self.draft_states.get(&coe_id).is_none_or(
                |(severity, resolved_at, detected_at)| {
                    *severity > incident.severity
                        || *resolved_at != incident.resolved_at
                        || *detected_at != Some(incident.detected_at)
                },
            );
            if needed {
                coes::follow_incident(conn, &coe_id, incident)?;
                let severity = self
                    .draft_states
                    .get(&coe_id)
                    .map_or(incident.severity, |(s, _, _)| (*s).min(incident.severity));
                self.draft_states.insert(
                    coe_id,
                    (severity, incident.resolved_at, Some(incident.detected_at)),
                );
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

/// A group's first incident names it (`incident_groups`).
#[derive(Insertable)]
#[diesel(table_name = incident_groups)]
struct NewGroup<'a> {
    group_hash: &'a [u8],
    group_id: &'a str,
}
