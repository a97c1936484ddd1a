//! The incidents a COE covers. One outage is often several alert groups — the
//! database's alerts, checkout's error rate, the gateway's 5xx — each its own
//! incident: they are attached to one COE (`coe_incidents`; an incident belongs to
//! one COE at most), whose times follow all of them (the earliest start and
//! detection, the latest resolution once all resolved) and whose timeline counts the
//! alerts of each. Later events of any of them reach the COE as its first incident's
//! do (`coes_of_incidents` reads this table).

use crate::services::Env;
use diesel::prelude::*;
use serde_json::json;

use super::edit::{with_current, Recorded};
use super::timeline::recompute_milestone;
use super::{alert_entries, follow_incident, CoeError};
use crate::db::models::FailureEventRow;
use crate::db::schema::{coe_incidents, coes, failure_events, timeline_entries};
use crate::db::{locks, DbConnection};
use crate::domain::coe::TimelineKind;
use crate::services::access::Editor;

/// The incidents COE `id` covers, the first attached first.
pub fn incidents_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<String>> {
    coe_incidents::table
        .filter(coe_incidents::coe_id.eq(id))
        .order((
            coe_incidents::attached_at.asc(),
            coe_incidents::incident_id.asc(),
        ))
        .select(coe_incidents::incident_id)
        .load(conn)
}

/// Attaches incident `incident_id` to COE `id` (a draft or in review): its alerts
/// join the timeline and its times the COE's. Attaching one already attached here
/// changes nothing; one that belongs to another COE is refused, naming it.
pub fn attach_incident(
    conn: &mut DbConnection,
    id: &str,
    incident_id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_current(conn, id, who, env, |conn, _, now| {
        let incident = super::incident_named(conn, incident_id)?;
        // Under the group's lock, as the draft of a new incident opens: the incident
        // cannot open a draft of its own meanwhile.
        locks::lock_group(conn, &incident.group_key)?;
        let owner: Option<String> = coe_incidents::table
            .find(incident_id)
            .select(coe_incidents::coe_id)
            .first(conn)
            .optional()?;
        match owner.as_deref() {
            Some(coe) if coe == id => return Ok(((), None)),
            Some(other) => {
                let state: String = coes::table.find(other).select(coes::state).first(conn)?;
                return Err(CoeError::Conflict(format!(
                    "incident `{incident_id}` is covered by COE `{other}` ({}): {}",
                    state.replace('_', " "),
                    if state == "draft" {
                        "merge the two drafts instead"
                    } else {
                        "detach it there first"
                    }
                )));
            }
            None => {}
        }
        diesel::insert_into(coe_incidents::table)
            .values((
                coe_incidents::incident_id.eq(incident_id),
                coe_incidents::coe_id.eq(id),
                coe_incidents::attached_by.eq(who.actor),
                coe_incidents::attached_at.eq(now),
            ))
            .execute(conn)?;
        let events: Vec<FailureEventRow> = failure_events::table
            .filter(failure_events::incident_id.eq(incident_id))
            .order((failure_events::received_at.asc(), failure_events::id.asc()))
            .select(FailureEventRow::as_select())
            .load(conn)?;
        if events.is_empty() {
            // Retention dropped the events and kept what the incident's page shows.
            if let Some(digest) =
                crate::services::incidents::retention::kept_digest(conn, incident_id)?
            {
                alert_entries::file_digest(conn, id, &digest, &incident.source, now)?;
            }
        }
        let events: Vec<&FailureEventRow> = events.iter().collect();
        alert_entries::file_new(conn, id, &events, now)?;
        follow_incident(conn, id, &incident)?;
        let recorded = Recorded {
            action: "incident:attach".into(),
            before: None,
            after: Some(json!({"incident_id": incident_id, "title": incident.title})),
        };
        Ok(((), Some(recorded)))
    })
}

/// Detaches incident `incident_id` from COE `id` (not its last): its alerts' entries
/// leave the timeline and the COE's times follow the incidents left.
pub fn detach_incident(
    conn: &mut DbConnection,
    id: &str,
    incident_id: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_current(conn, id, who, env, |conn, row, _| {
        let covered = incidents_of(conn, id)?;
        if !covered.iter().any(|i| i == incident_id) {
            return Err(CoeError::NotFound(format!("{id}/incidents/{incident_id}")));
        }
        if covered.len() == 1 {
            return Err(CoeError::Conflict(
                "this is the only incident the COE covers: a COE keeps at least one".into(),
            ));
        }
        diesel::delete(coe_incidents::table.find(incident_id)).execute(conn)?;
        // The entries its alerts made (not the ones people wrote or changed).
        diesel::delete(
            timeline_entries::table
                .filter(timeline_entries::coe_id.eq(id))
                .filter(timeline_entries::alert_key.is_not_null())
                .filter(
                    timeline_entries::event_id.eq_any(
                        failure_events::table
                            .filter(failure_events::incident_id.eq(incident_id))
                            .select(failure_events::id.nullable()),
                    ),
                ),
        )
        .execute(conn)?;
        // The COE's first incident is the earliest still attached.
        if row.incident_id.as_deref() == Some(incident_id) {
            let first = covered.iter().find(|i| *i != incident_id);
            diesel::update(coes::table.find(id))
                .set(coes::incident_id.eq(first))
                .execute(conn)?;
        }
        for kind in [
            TimelineKind::Started,
            TimelineKind::Detected,
            TimelineKind::Resolved,
        ] {
            recompute_milestone(conn, id, kind)?;
        }
        let recorded = Recorded {
            action: "incident:detach".into(),
            before: Some(json!({"incident_id": incident_id})),
            after: None,
        };
        Ok(((), Some(recorded)))
    })
}
