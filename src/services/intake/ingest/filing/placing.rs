//! Filing one event: into its group's open incident, a recent one it reopens, or a
//! new incident (`domain::incident::place` decides), kept in memory until `flush`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::group_hash;
use super::{Known, Pending, Touched};
use crate::db::models::IncidentRow;
use crate::db::schema::{incident_alerts, incident_groups, incidents};
use crate::db::{self, types, DbConnection};
use crate::domain::incident::{place, GroupState, IncidentPolicy, IncidentState, Placement};
use crate::domain::{EventKind, EventStatus, FailureEvent};

/// The incident an event was filed into.
pub(in crate::services::intake::ingest) struct Filed {
    pub(in crate::services::intake::ingest) id: String,
    /// Whether the incident needs a COE.
    pub(in crate::services::intake::ingest) coe_required: bool,
    /// Whether the incident is in the database already (a new one is written by
    /// `flush`): only then can it have a COE.
    pub(in crate::services::intake::ingest) stored: bool,
}

/// Finds or makes the incident for `event` and updates it (in `pending`).
pub(in crate::services::intake::ingest) fn file_into_incident(
    conn: &mut DbConnection,
    pending: &mut Pending,
    event: &FailureEvent,
    policy: &IncidentPolicy,
    proves_a_fix: bool,
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
                    Some(Known::Empty) => Touched::new(new_incident(event, &hash, None, now)),
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
    // Started and detected: the earliest alert's own start (Alertmanager's
    // `startsAt`), whenever coe heard of it; when it was received is `created_at`.
    if event.started_at < incident.started_at {
        incident.started_at = event.started_at;
    }
    if event.started_at < incident.detected_at {
        incident.detected_at = event.started_at;
    }
    if incident.service.is_none() {
        incident.service = event.service.clone();
    }
    if event.kind == EventKind::Acknowledged && incident.acknowledged_at.is_none() {
        incident.acknowledged_at = Some(now);
    }
    if let Some(burned) = crate::domain::event::budget_burned(event) {
        if incident.budget_burned.is_none_or(|b| burned > b) {
            incident.budget_burned = Some(burned);
            incident.slo = crate::domain::event::slo_of(event);
        }
    }
    // A drill's alert that proves a fix (`services::coe::actions::drill`) asks for no
    // COE, nor do the other drill's events of its incident (the alert resolved, another
    // alert of its group); a drill's event that proves nothing is an outage like any
    // other. Asked of the database only for a drill's event.
    if proves_a_fix {
        pending.drill_incidents.insert(id.clone());
    }
    let drill = proves_a_fix
        || (crate::domain::drill::is_drill(event)
            && (pending.drill_incidents.contains(&id)
                || (touched.stored && drill_proven_in(conn, &id)?)));
    let incident = &mut touched.row;
    if incident.coe_required_at.is_none()
        && !drill
        && (policy.needs_coe(severity) || policy.burned_too_much(incident.budget_burned))
    {
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

/// Whether a drill's alert proved a fix in incident `id` (`drill_rechecks.event_id`).
fn drill_proven_in(conn: &mut DbConnection, id: &str) -> QueryResult<bool> {
    use crate::db::schema::{drill_rechecks, failure_events};
    let events = failure_events::table
        .filter(failure_events::incident_id.eq(id))
        .select(failure_events::id.nullable());
    drill_rechecks::table
        .filter(drill_rechecks::event_id.eq_any(events))
        .select(drill_rechecks::id)
        .first::<String>(conn)
        .optional()
        .map(|found| found.is_some())
}

/// The incident an event of a group goes to when the group has no open incident
/// touched in this delivery: the open one, one reopened, or a new one (`place`).
fn place_in_group(
    conn: &mut DbConnection,
    event: &FailureEvent,
    hash: &[u8],
    policy: &IncidentPolicy,
    now: NaiveDateTime,
) -> Result<Touched, diesel::result::Error> {
    let group_id: Option<String> = incident_groups::table
        .find(hash)
        .select(incident_groups::group_id)
        .first(conn)
        .optional()?;
    let Some(group_id) = group_id else {
        return Ok(Touched::new(new_incident(event, hash, None, now)));
    };
    // The group's latest incident, read whole: usually the open one, so that one
    // query is all it takes.
    let latest: Option<IncidentRow> = incidents::table
        .filter(incidents::group_id.eq(&group_id))
        .order((incidents::created_at.desc(), incidents::id.desc()))
        .select(IncidentRow::as_select())
        .first(conn)
        .optional()?;
    let open: Option<IncidentRow> = match &latest {
        None => None,
        Some(row) if row.state == IncidentState::Open.as_str() => latest.clone(),
        // An older incident reopened after a later one resolved.
        Some(_) => incidents::table
            .filter(incidents::group_id.eq(&group_id))
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
                .filter(incidents::group_id.eq(&group_id))
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
        Placement::New => Touched::new(new_incident(event, hash, Some(group_id), now)),
    })
}

/// A new incident of `event`'s group (`hash`, named `group` when it has incidents;
/// else the new incident names it), not yet stored.
fn new_incident(
    event: &FailureEvent,
    hash: &[u8],
    group: Option<String>,
    now: NaiveDateTime,
) -> IncidentRow {
    let id = db::new_id();
    IncidentRow {
        group_id: group.unwrap_or_else(|| id.clone()),
        id,
        group_key: event.group_key.clone(),
        group_hash: hash.to_owned(),
        source: event.source.clone(),
        title: event.title.clone(),
        service: event.service.clone(),
        severity: event.severity.rank(),
        state: IncidentState::Open.as_str().to_owned(),
        started_at: event.started_at,
        // The alerting system detected it when the alert began, not when coe heard.
        detected_at: event.started_at.min(now),
        acknowledged_at: None,
        resolved_at: None,
        reopened_count: 0,
        event_count: 0,
        coe_required_at: None,
        created_at: now,
        updated_at: now,
        budget_burned: None,
        slo: None,
    }
}

fn load(conn: &mut DbConnection, id: &str) -> Result<IncidentRow, diesel::result::Error> {
    incidents::table
        .find(id)
        .select(IncidentRow::as_select())
        .first(conn)
}
