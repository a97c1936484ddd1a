//! Opening drafts: by themselves for an incident that meets the policy, or by hand;
//! filing later events of the incident into its draft; linking recurrences.

use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::alert_entries;
use super::reindex;
use super::timeline::recompute_milestone;
use super::{edit, record_change, Actor, CoeError, SYSTEM_ACTOR};
use crate::db::models::{CoeRow, FailureEventRow, IncidentRow};
use crate::db::schema::{coe_incidents, coe_recurrences, coes, failure_events, incidents};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::coe::{self, CoeState, TimelineKind};
use crate::domain::template::Template;
use crate::domain::Severity;
use crate::services::coe::template_rules;
use crate::services::directory::ownership;
use crate::services::outbound::{self, CoeEvent};
use crate::services::Env;

/// Opens the draft for an incident that has the COE mark, unless it has one. Called in
/// the transaction that filed the event, under the group's lock, so exactly one draft
/// opens per incident; the unique index on `coes.incident_id` backs this up.
pub fn open_draft_for_incident(
    conn: &mut DbConnection,
    incident: &IncidentRow,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> QueryResult<Option<String>> {
    let id = insert_draft_for_incident(conn, incident, env, now)?;
    if let Some(id) = &id {
        tell_owner(conn, id, env, now)?;
        super::recurred::judge(conn, id, &incident.id, incident.started_at, env, now)?;
    }
    Ok(id)
}

/// Tells whoever a new COE went to (`CoeEvent::Opened`).
fn tell_owner(
    conn: &mut DbConnection,
    id: &str,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let row: CoeRow = coes::table
        .find(id)
        .select(CoeRow::as_select())
        .first(conn)?;
    outbound::happened(
        conn,
        *env,
        SYSTEM_ACTOR,
        CoeEvent::Opened { coe: &row },
        now,
    )
}

/// Inserts the draft for an incident (see `open_draft_for_incident`), telling no one.
fn insert_draft_for_incident(
    conn: &mut DbConnection,
    incident: &IncidentRow,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> QueryResult<Option<String>> {
    // An incident that has a COE already — its own, or one it was attached to — opens
    // no other.
    let exists: i64 = coe_incidents::table
        .filter(coe_incidents::incident_id.eq(&incident.id))
        .count()
        .get_result(conn)?;
    if exists > 0 {
        return Ok(None);
    }
    let events: Vec<FailureEventRow> = failure_events::table
        .filter(failure_events::incident_id.eq(&incident.id))
        .order((failure_events::received_at.asc(), failure_events::id.asc()))
        .select(FailureEventRow::as_select())
        .load(conn)?;
    let mut links: Vec<String> = Vec::new();
    for e in &events {
        for link in serde_json::from_str::<Vec<String>>(&e.links).unwrap_or_default() {
            if !links.contains(&link) {
                links.push(link);
            }
        }
    }
    let labels: Vec<BTreeMap<String, String>> = events
        .iter()
        .filter_map(|e| serde_json::from_str(&e.labels).ok())
        .collect();
    let assigned = ownership::for_alerts(conn, *env, &labels, incident.service.as_deref())?;
    let severity = types::severity("incidents.severity", incident.severity)?;
    let flat: Vec<(String, String)> = labels
        .iter()
        .flat_map(|l| l.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let template = template_for(
        conn,
        env,
        severity,
        incident.service.as_deref(),
        assigned.owner.as_deref(),
        &flat,
    )?;
    let row = new_coe_row(
        &template,
        Some(incident.id.clone()),
        incident.title.clone(),
        incident.service.clone(),
        severity,
        &assigned,
        SYSTEM_ACTOR,
        now,
    );
    let row = CoeRow {
        started_at: Some(incident.started_at),
        detected_at: Some(incident.detected_at),
        resolved_at: incident.resolved_at,
        links: serde_json::to_string(&links).unwrap_or_else(|_| "[]".into()),
        ..row
    };
    diesel::insert_into(coes::table)
        .values(&row)
        .execute(conn)?;
    diesel::insert_into(coe_incidents::table)
        .values((
            coe_incidents::incident_id.eq(&incident.id),
            coe_incidents::coe_id.eq(&row.id),
            coe_incidents::attached_by.eq(SYSTEM_ACTOR),
            coe_incidents::attached_at.eq(now),
        ))
        .execute(conn)?;
    alert_entries::file_all(conn, &row.id, &events, now)?;
    if events.is_empty() {
        // Retention dropped the events and kept what the incident's page shows.
        if let Some(digest) =
            crate::services::incidents::retention::kept_digest(conn, &incident.id)?
        {
            alert_entries::file_digest(conn, &row.id, &digest, &incident.source, now)?;
        }
    }
    link_recurrences(conn, &row, &events, now)?;
    record_change(
        conn,
        &row.id,
        SYSTEM_ACTOR,
        "opened",
        None,
        Some(
            json!({"incident_id": incident.id, "title": row.title, "owner": row.owner_email,
                    "owner_from": assigned.by, "reviewer": row.reviewer_email}),
        ),
        now,
    )?;
    reindex(conn, &row.id)?;
    tracing::info!(coe = %row.id, incident = %incident.id, owner = ?row.owner_email, owner_from = ?assigned.by, "COE draft opened");
    Ok(Some(row.id))
}

/// The template a new COE opens with: the first rule's that its severity, service,
/// team (its owner's, else its service's) and labels match, else the organisation's
/// (`services::coe::template_rules`).
fn template_for(
    conn: &mut DbConnection,
    env: &Env<'_>,
    severity: Severity,
    service: Option<&str>,
    owner: Option<&str>,
    labels: &[(String, String)],
) -> QueryResult<Template> {
    let subject = template_rules::Subject {
        severity,
        service,
        owner,
        team: None,
        labels,
    };
    Ok(template_rules::pick(conn, env, &subject)?.template)
}

#[allow(clippy::too_many_arguments)]
fn new_coe_row(
    template: &Template,
    incident_id: Option<String>,
    title: String,
    service: Option<String>,
    severity: Severity,
    assigned: &ownership::Assigned,
    actor: Actor<'_>,
    now: NaiveDateTime,
) -> CoeRow {
    CoeRow {
        id: db::new_id(),
        incident_id,
        title,
        service,
        severity: severity.rank(),
        state: CoeState::Draft.as_str().to_owned(),
        owner_email: assigned.owner.clone(),
        reviewer_email: assigned.reviewer.clone(),
        template: serde_json::to_string(template).unwrap_or_else(|_| "{}".into()),
        template_name: template.name.clone(),
        template_version: i32::try_from(template.version).unwrap_or(i32::MAX),
        started_at: None,
        detected_at: None,
        mitigated_at: None,
        resolved_at: None,
        links: "[]".into(),
        version: 1,
        created_by: actor.to_owned(),
        created_at: now,
        updated_at: now,
        submitted_by: None,
        // The service map named the reviewer: no person chose themselves.
        reviewer_named_by: assigned.reviewer.as_ref().map(|_| SYSTEM_ACTOR.to_owned()),
    }
}

/// Links a new COE to earlier COEs of the same service whose incidents share an alert
/// (dedup key) or the group key.
fn link_recurrences(
    conn: &mut DbConnection,
    coe: &CoeRow,
    events: &[FailureEventRow],
    now: NaiveDateTime,
) -> QueryResult<()> {
    let Some(service) = coe.service.as_deref() else {
        return Ok(());
    };
    let keys: Vec<&str> = events.iter().map(|e| e.dedup_key.as_str()).collect();
    let groups: Vec<&str> = events.iter().map(|e| e.group_key.as_str()).collect();
    // Every incident of every earlier COE of the service: a COE covering several
    // incidents recurs when any of them does.
    let candidates: Vec<(String, String)> = coe_incidents::table
        .inner_join(coes::table)
        .filter(coes::service.eq(service))
        .filter(coes::id.ne(&coe.id))
        .select((coes::id, coe_incidents::incident_id))
        .load(conn)?;
    let mut by_coe: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (earlier_id, incident_id) in candidates {
        by_coe.entry(earlier_id).or_default().push(incident_id);
    }
    for (earlier_id, incident_ids) in by_coe {
        let by_alert: i64 = failure_events::table
            .filter(failure_events::incident_id.eq_any(&incident_ids))
            .filter(failure_events::dedup_key.eq_any(&keys))
            .count()
            .get_result(conn)?;
        let matched_on = if by_alert > 0 {
            "alert"
        } else {
            let by_group: i64 = incidents::table
                .filter(incidents::id.eq_any(&incident_ids))
                .filter(incidents::group_key.eq_any(&groups))
                .count()
                .get_result(conn)?;
            if by_group == 0 {
                continue;
            }
            "group"
        };
        diesel::insert_into(coe_recurrences::table)
            .values((
                coe_recurrences::coe_id.eq(&coe.id),
                coe_recurrences::earlier_coe_id.eq(&earlier_id),
                coe_recurrences::matched_on.eq(matched_on),
                coe_recurrences::created_at.eq(now),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// The COE of an incident, if it has one: its id and whether it is still a draft
/// (a draft follows its incident's severity and resolution).
pub fn coe_of_incident(
    conn: &mut DbConnection,
    incident_id: &str,
) -> QueryResult<Option<(String, bool)>> {
    let coe: Option<(String, String)> = coe_incidents::table
        .inner_join(coes::table)
        .filter(coe_incidents::incident_id.eq(incident_id))
        .select((coes::id, coes::state))
        .first(conn)
        .optional()?;
    coe.map(|(id, state)| {
        Ok((
            id,
            types::read::<CoeState>("coes.state", &state)? == CoeState::Draft,
        ))
    })
    .transpose()
}

/// The COE of an incident, as `coes_of_incidents` gives it.
pub struct IncidentCoe {
    pub id: String,
    pub draft: bool,
    pub severity: i32,
    /// The COE's resolution time (its "resolved" milestone).
    pub resolved_at: Option<NaiveDateTime>,
    /// The COE's detection time (its "detected" milestone).
    pub detected_at: Option<NaiveDateTime>,
}

/// The COEs of the incidents `incident_ids`, by incident id (an incident without a
/// COE is missing).
pub fn coes_of_incidents(
    conn: &mut DbConnection,
    incident_ids: &[&String],
) -> QueryResult<HashMap<String, IncidentCoe>> {
    let mut found = HashMap::new();
    for chunk in incident_ids.chunks(500) {
        let select = (
            coe_incidents::incident_id,
            coes::id,
            coes::state,
            coes::severity,
            coes::resolved_at,
            coes::detected_at,
        );
        type Row = (
            String,
            String,
            String,
            i32,
            Option<NaiveDateTime>,
            Option<NaiveDateTime>,
        );
        // One value: a statement the connection keeps prepared (a list is not).
        let rows: Vec<Row> = match chunk {
            [id] => coe_incidents::table
                .inner_join(coes::table)
                .filter(coe_incidents::incident_id.eq(*id))
                .select(select)
                .load(conn)?,
            _ => coe_incidents::table
                .inner_join(coes::table)
                .filter(coe_incidents::incident_id.eq_any(chunk))
                .select(select)
                .load(conn)?,
        };
        for (incident_id, id, state, severity, resolved_at, detected_at) in rows {
            let draft = types::read::<CoeState>("coes.state", &state)? == CoeState::Draft;
            found.insert(
                incident_id,
                IncidentCoe {
                    id,
                    draft,
                    severity,
                    resolved_at,
                    detected_at,
                },
            );
        }
    }
    Ok(found)
}

/// Adds stored events of an incident to its COE's timeline (`coe_id`: the
/// incident's COE), each alert's events counted in its entry at once. The search
/// index is not refreshed for them (that would cost a rebuild per delivery in an
/// alert storm); the next edit refreshes it.
pub fn record_events(
    conn: &mut DbConnection,
    coe_id: &str,
    events: &[&FailureEventRow],
    now: NaiveDateTime,
) -> QueryResult<()> {
    alert_entries::file_new(conn, coe_id, events, now)
}

/// Brings a draft up to date with its incident as stored: the worst severity seen,
/// and the incident's start, detection and resolution unless a person wrote them in
/// the timeline. Once
/// per delivery, after its events are recorded.
pub fn follow_incident(
    conn: &mut DbConnection,
    coe_id: &str,
    incident: &IncidentRow,
) -> QueryResult<()> {
    diesel::update(coes::table.find(coe_id))
        .filter(coes::severity.gt(incident.severity))
        .set(coes::severity.eq(incident.severity))
        .execute(conn)?;
    // An earlier alert moves the start and the detection back; the last one resolved
    // ends it (unless someone wrote those milestones).
    for kind in [
        TimelineKind::Started,
        TimelineKind::Detected,
        TimelineKind::Resolved,
    ] {
        recompute_milestone(conn, coe_id, kind)?;
    }
    Ok(())
}

/// Input of `POST /api/v1/coes`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCoe {
    /// The incident this COE is about; the draft is then pre-filled from it.
    #[serde(default)]
    pub incident_id: Option<String>,
    /// Required without an incident; defaults to the incident's title.
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "sev3")]
    pub severity: Option<Severity>,
    /// Defaults to the service's owner from `ownership`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub owner: Option<crate::domain::EmailAddress>,
}

/// Opens a COE by hand, for an incident below the policy or for no incident at all.
pub fn create(
    conn: &mut DbConnection,
    input: NewCoe,
    actor: Actor<'_>,
    env: &Env<'_>,
) -> Result<String, CoeError> {
    // Sizes first: nothing is written for input that cannot be stored.
    check_sizes(&input)?;
    db::write_transaction(conn, |conn| {
        if let Some(owner) = &input.owner {
            super::check_person(conn, *env, "owner", owner.as_str())?;
        }
        let now = db::now();
        let id = match &input.incident_id {
            Some(incident_id) => open_for_incident(conn, incident_id, &input, actor, env, now)?,
            None => open_without_incident(conn, &input, actor, env, now)?,
        };
        tell_owner(conn, &id, env, now)?;
        Ok(id)
    })
    .map_err(|e| match e {
        // Another request opened the incident's COE between our check and our insert
        // (PostgreSQL; SQLite writers take turns): the unique index refused ours.
        CoeError::Database(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) if input.incident_id.is_some() => CoeError::Conflict(format!(
            "incident `{}` already has a COE",
            input.incident_id.as_deref().unwrap_or_default()
        )),
        e => e,
    })
}

/// Refuses a new COE whose title or service is too long to store, naming both.
fn check_sizes(input: &NewCoe) -> Result<(), CoeError> {
    let mut problems = Vec::new();
    if let Some(title) = input.title.as_deref().filter(|t| !t.trim().is_empty()) {
        if let Err(p) = coe::check_title(title) {
            problems.push(("title".to_owned(), p));
        }
    }
    if let Some(service) = input.service.as_deref() {
        if let Err(p) = coe::check_service(service) {
            problems.push(("service".to_owned(), p));
        }
    }
    if !problems.is_empty() {
        return Err(CoeError::Invalid(problems));
    }
    Ok(())
}

/// Opens the draft of incident `incident_id` by hand (refused when it has a COE),
/// with the title, owner, severity and service the person chose.
fn open_for_incident(
    conn: &mut DbConnection,
    incident_id: &str,
    input: &NewCoe,
    actor: Actor<'_>,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> Result<String, CoeError> {
    let incident = super::incident_named(conn, incident_id)?;
    locks::lock_group(conn, &incident.group_key)?;
    if let Some(existing) = coe_incidents::table
        .filter(coe_incidents::incident_id.eq(incident_id))
        .select(coe_incidents::coe_id)
        .first::<String>(conn)
        .optional()?
    {
        return Err(CoeError::Conflict(format!(
            "incident `{incident_id}` already has COE `{existing}`"
        )));
    }
    let id = insert_draft_for_incident(conn, &incident, env, now)?
        .ok_or_else(|| CoeError::Conflict("the incident already has a COE".into()))?;
    let mut changes = Vec::new();
    if let Some(title) = input.title.as_ref().filter(|t| !t.trim().is_empty()) {
        changes.push(("title", json!(title.trim())));
    }
    if let Some(owner) = &input.owner {
        changes.push(("owner", json!(owner.as_str())));
    }
    if let Some(severity) = input.severity {
        changes.push(("severity", json!(severity)));
    }
    if let Some(service) = &input.service {
        changes.push(("service", json!(service)));
    }
    if !changes.is_empty() {
        edit::apply_patch(conn, &id, &changes, actor, now)?;
        reindex(conn, &id)?;
    }
    Ok(id)
}

/// Opens a draft about no incident: a title is required; the service's people own
/// and review it unless an owner is chosen; sev3 unless given.
fn open_without_incident(
    conn: &mut DbConnection,
    input: &NewCoe,
    actor: Actor<'_>,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> Result<String, CoeError> {
    let title = input
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| CoeError::invalid("title", "is required without an incident_id"))?;
    let mut assigned = ownership::for_service(conn, *env, input.service.as_deref())?;
    if let Some(owner) = &input.owner {
        assigned.owner = Some(owner.as_str().to_owned());
        let dotless = &env.settings.auth.dotless_domains;
        assigned.reviewer = assigned
            .reviewer
            .filter(|r| !crate::domain::email::same_person(r, owner.as_str(), dotless));
    }
    let severity = input.severity.unwrap_or(Severity::Sev3);
    let template = template_for(
        conn,
        env,
        severity,
        input.service.as_deref(),
        assigned.owner.as_deref(),
        &[],
    )?;
    let row = new_coe_row(
        &template,
        None,
        title.to_owned(),
        input.service.clone(),
        severity,
        &assigned,
        actor,
        now,
    );
    diesel::insert_into(coes::table)
        .values(&row)
        .execute(conn)?;
    record_change(
        conn,
        &row.id,
        actor,
        "opened",
        None,
        Some(json!({"title": row.title})),
        now,
    )?;
    reindex(conn, &row.id)?;
    Ok(row.id)
}
