//! COE writeups: opening drafts (by themselves, from incidents, or by hand), reading
//! the whole document with its completeness report, and editing it with optimistic
//! concurrency (every write names the version it was based on). Every change is
//! written to the audit log in the same transaction.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::config::Settings;
use crate::db::models::{
    AuditRow, CoeRow, FailureEventRow, IncidentRow, RelatedRow, ReviewCommentRow, SectionRow,
    TimelineRow, WhyChainRow,
};
use crate::db::schema::{
    audit_log, coe_recurrences, coe_sections, coes, corrective_actions, failure_events, incidents,
    related_items, review_comments, timeline_entries, why_chains,
};
use crate::db::{self, DbConnection};
use crate::domain::action::ActionState;
use crate::domain::coe::CoeState;
use crate::domain::rules::{self, Assessment, CoeContent, Finding, WhyStep};
use crate::domain::template::{SectionKind, Template};
use crate::domain::Severity;
use crate::services::actions::{self, ActionView};

/// Who is changing things: the token's person, or `token:<name>`, or `coe` itself.
pub type Actor<'a> = &'a str;

/// The actor recorded for changes the service makes by itself.
pub const SYSTEM_ACTOR: &str = "coe";

#[derive(Debug, thiserror::Error)]
pub enum CoeError {
    #[error("no COE with id `{0}`")]
    NotFound(String),
    #[error("the COE changed since version {expected}: it is now at version {current}")]
    Stale { expected: i32, current: i32 },
    #[error(
        "send the version this change is based on in `If-Match` (the COE is at version {current})"
    )]
    VersionRequired { current: i32 },
    #[error("the COE is {state}: its writeup can no longer be edited")]
    NotEditable { state: CoeState },
    #[error("invalid input")]
    Invalid(Vec<(String, String)>),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl CoeError {
    fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        CoeError::Invalid(vec![(field.into(), problem.into())])
    }
}

/// One section as the document shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SectionView {
    pub key: String,
    pub title: String,
    pub kind: SectionKind,
    pub required: bool,
    pub guidance: String,
    /// Markdown as written; empty until someone writes it. Text sections only.
    pub body: String,
    pub complete: bool,
    /// Why it is not complete.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TimelineEntry {
    pub id: String,
    pub at: NaiveDateTime,
    pub kind: String,
    pub text: String,
    pub source: Option<String>,
    pub event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, ToSchema)]
pub struct Why {
    pub why: String,
    pub because: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhyChain {
    pub id: String,
    pub position: i32,
    pub steps: Vec<Why>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelatedItem {
    pub id: String,
    pub kind: String,
    pub title: Option<String>,
    pub url: Option<String>,
    pub coe_id: Option<String>,
}

/// An earlier COE this one recurs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Recurrence {
    pub coe_id: String,
    pub title: String,
    pub state: CoeState,
    pub matched_on: String,
    pub created_at: NaiveDateTime,
    /// Its corrective actions: how many, and how many are still open.
    pub total_actions: usize,
    pub open_actions: usize,
}

/// A step of the review.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReviewComment {
    pub author: String,
    /// submitted, changes_requested, approved or comment.
    pub verdict: String,
    pub body: String,
    pub at: NaiveDateTime,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateRef {
    pub name: String,
    pub version: i32,
}

/// The whole COE document.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoeDocument {
    pub id: String,
    pub incident_id: Option<String>,
    pub title: String,
    pub service: Option<String>,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: CoeState,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    /// Bumped by every change; send it back in `If-Match`.
    pub version: i32,
    pub template: TemplateRef,
    pub started_at: Option<NaiveDateTime>,
    pub detected_at: Option<NaiveDateTime>,
    pub mitigated_at: Option<NaiveDateTime>,
    pub resolved_at: Option<NaiveDateTime>,
    pub duration_seconds: Option<i64>,
    /// Links gathered from the events (runbooks, dashboards).
    pub links: Vec<String>,
    pub sections: Vec<SectionView>,
    pub timeline: Vec<TimelineEntry>,
    pub five_whys: Vec<WhyChain>,
    pub related: Vec<RelatedItem>,
    /// Earlier COEs for the same service and alert or group.
    pub recurrence: Vec<Recurrence>,
    /// The corrective actions, oldest first.
    pub actions: Vec<ActionView>,
    /// Submissions, requests for changes and approvals, oldest first.
    pub review: Vec<ReviewComment>,
    pub completeness: Assessment,
    pub created_by: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

/// A COE in a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoeSummary {
    pub id: String,
    pub incident_id: Option<String>,
    pub title: String,
    pub service: Option<String>,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: CoeState,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    /// Search rank when `q` was given (higher is better).
    pub rank: Option<f64>,
}

/// What the service needs from settings.
pub struct Context<'a> {
    pub settings: &'a Settings,
    pub template: &'a Template,
    /// Email templates, for telling a new COE's owner.
    pub emails: &'a crate::email::EmailTemplates,
}

fn write_audit(
    conn: &mut DbConnection,
    coe_id: &str,
    actor: Actor<'_>,
    action: &str,
    before: Option<Value>,
    after: Option<Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    diesel::insert_into(audit_log::table)
        .values(AuditRow {
            id: db::new_id(),
            entity: "coe".into(),
            entity_id: coe_id.to_owned(),
            coe_id: Some(coe_id.to_owned()),
            actor: actor.to_owned(),
            action: action.to_owned(),
            before: before.map(|v| v.to_string()),
            after: after.map(|v| v.to_string()),
            at: now,
        })
        .execute(conn)
        .map(|_| ())
}

fn timeline_text(event: &FailureEventRow) -> String {
    let what = match event.kind.as_str() {
        "fired" => "Fired",
        "acknowledged" => "Acknowledged",
        "resolved" => "Resolved",
        _ => "Updated",
    };
    format!("{what}: {}", event.title)
}

fn timeline_from_event(coe_id: &str, event: &FailureEventRow, now: NaiveDateTime) -> TimelineRow {
    let at = match event.kind.as_str() {
        "resolved" => event.ended_at.unwrap_or(event.received_at),
        "fired" => event.started_at,
        _ => event.received_at,
    };
    TimelineRow {
        id: db::new_id(),
        coe_id: coe_id.to_owned(),
        at,
        kind: event.kind.clone(),
        text: timeline_text(event),
        source: Some(event.source.clone()),
        event_id: Some(event.id.clone()),
        created_at: now,
    }
}

/// Opens the draft for an incident that has the COE mark, unless it has one. Called in
/// the transaction that filed the event, under the group's lock, so exactly one draft
/// opens per incident; the unique index on `coes.incident_id` backs this up.
pub fn open_draft_for_incident(
    conn: &mut DbConnection,
    incident: &IncidentRow,
    ctx: &Context<'_>,
    now: NaiveDateTime,
) -> QueryResult<Option<String>> {
    let id = insert_draft_for_incident(conn, incident, ctx, now)?;
    if let Some(id) = &id {
        tell_owner(conn, id, ctx, now)?;
    }
    Ok(id)
}

/// Queues the "COE opened" email to the COE's owner, in the caller's transaction.
fn tell_owner(
    conn: &mut DbConnection,
    id: &str,
    ctx: &Context<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let row: CoeRow = coes::table
        .find(id)
        .select(CoeRow::as_select())
        .first(conn)?;
    let severity = Severity::from_rank(row.severity).unwrap_or(Severity::Sev3);
    crate::services::reminders::coe_opened(
        conn,
        ctx.settings,
        ctx.emails,
        &crate::services::reminders::CoeFacts {
            id: &row.id,
            title: &row.title,
            owner: row.owner_email.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            severity: &severity.to_string(),
            service: row.service.as_deref(),
            resolved_at: row.resolved_at,
        },
        now,
    )
}

/// Inserts the draft for an incident (see `open_draft_for_incident`), telling no one.
fn insert_draft_for_incident(
    conn: &mut DbConnection,
    incident: &IncidentRow,
    ctx: &Context<'_>,
    now: NaiveDateTime,
) -> QueryResult<Option<String>> {
    let exists: i64 = coes::table
        .filter(coes::incident_id.eq(&incident.id))
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
    let row = new_coe_row(
        ctx,
        Some(incident.id.clone()),
        incident.title.clone(),
        incident.service.clone(),
        Severity::from_rank(incident.severity).unwrap_or(Severity::Sev3),
        ctx.settings.owner_for(incident.service.as_deref()),
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
    let entries: Vec<TimelineRow> = events
        .iter()
        .map(|e| timeline_from_event(&row.id, e, now))
        .collect();
    if !entries.is_empty() {
        for entry in &entries {
            diesel::insert_into(timeline_entries::table)
                .values(entry)
                .execute(conn)?;
        }
    }
    link_recurrences(conn, &row, &events, now)?;
    write_audit(
        conn,
        &row.id,
        SYSTEM_ACTOR,
        "opened",
        None,
        Some(json!({"incident_id": incident.id, "title": row.title, "owner": row.owner_email})),
        now,
    )?;
    reindex(conn, &row.id)?;
    tracing::info!(coe = %row.id, incident = %incident.id, owner = ?row.owner_email, "COE draft opened");
    Ok(Some(row.id))
}

#[allow(clippy::too_many_arguments)]
fn new_coe_row(
    ctx: &Context<'_>,
    incident_id: Option<String>,
    title: String,
    service: Option<String>,
    severity: Severity,
    owner: Option<String>,
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
        owner_email: owner,
        reviewer_email: None,
        template: serde_json::to_string(ctx.template).unwrap_or_else(|_| "{}".into()),
        template_name: ctx.template.name.clone(),
        template_version: i32::try_from(ctx.template.version).unwrap_or(i32::MAX),
        started_at: None,
        detected_at: None,
        mitigated_at: None,
        resolved_at: None,
        links: "[]".into(),
        version: 1,
        created_by: actor.to_owned(),
        created_at: now,
        updated_at: now,
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
    let candidates: Vec<(String, Option<String>)> = coes::table
        .filter(coes::service.eq(service))
        .filter(coes::id.ne(&coe.id))
        .select((coes::id, coes::incident_id))
        .load(conn)?;
    for (earlier_id, incident_id) in candidates {
        let Some(incident_id) = incident_id else {
            continue;
        };
        let by_alert: i64 = failure_events::table
            .filter(failure_events::incident_id.eq(&incident_id))
            .filter(failure_events::dedup_key.eq_any(&keys))
            .count()
            .get_result(conn)?;
        let matched_on = if by_alert > 0 {
            "alert"
        } else {
            let by_group: i64 = incidents::table
                .filter(incidents::id.eq(&incident_id))
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

/// Records a newly filed event on its incident's COE, if there is one: a timeline
/// entry, and (while the COE is a draft) the incident's severity and resolution time.
pub fn record_event(
    conn: &mut DbConnection,
    incident: &IncidentRow,
    event: &FailureEventRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let coe: Option<CoeRow> = coes::table
        .filter(coes::incident_id.eq(&incident.id))
        .select(CoeRow::as_select())
        .first(conn)
        .optional()?;
    let Some(mut coe) = coe else {
        return Ok(());
    };
    diesel::insert_into(timeline_entries::table)
        .values(timeline_from_event(&coe.id, event, now))
        .execute(conn)?;
    if coe.state == CoeState::Draft.as_str() {
        coe.severity = coe.severity.min(incident.severity);
        diesel::update(coes::table.find(&coe.id))
            .set(coes::severity.eq(coe.severity))
            .execute(conn)?;
        // The incident's resolution, unless a person wrote one in the timeline.
        recompute_milestone(conn, &coe.id, "resolved")?;
    }
    // The search index is not refreshed for each event (that would cost a rebuild per
    // event in an alert storm); the next edit refreshes it.
    Ok(())
}

/// Input of `POST /api/v1/coes`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
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
    ctx: &Context<'_>,
) -> Result<String, CoeError> {
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let id = match &input.incident_id {
            Some(incident_id) => {
                let incident: IncidentRow = incidents::table
                    .find(incident_id)
                    .select(IncidentRow::as_select())
                    .first(conn)
                    .optional()?
                    .ok_or_else(|| {
                        CoeError::invalid(
                            "incident_id",
                            format!("no incident with id `{incident_id}`"),
                        )
                    })?;
                crate::services::ingest::lock_group(conn, &incident.group_key)?;
                if let Some(existing) = coes::table
                    .filter(coes::incident_id.eq(incident_id))
                    .select(coes::id)
                    .first::<String>(conn)
                    .optional()?
                {
                    return Err(CoeError::Conflict(format!(
                        "incident `{incident_id}` already has COE `{existing}`"
                    )));
                }
                let id = insert_draft_for_incident(conn, &incident, ctx, now)?
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
                    apply_patch(conn, &id, &changes, actor, now)?;
                    reindex(conn, &id)?;
                }
                id
            }
            None => {
                let title = input
                    .title
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        CoeError::invalid("title", "is required without an incident_id")
                    })?;
                let owner = input
                    .owner
                    .as_ref()
                    .map(|o| o.as_str().to_owned())
                    .or_else(|| ctx.settings.owner_for(input.service.as_deref()));
                let row = new_coe_row(
                    ctx,
                    None,
                    title.to_owned(),
                    input.service.clone(),
                    input.severity.unwrap_or(Severity::Sev3),
                    owner,
                    actor,
                    now,
                );
                diesel::insert_into(coes::table)
                    .values(&row)
                    .execute(conn)?;
                write_audit(
                    conn,
                    &row.id,
                    actor,
                    "opened",
                    None,
                    Some(json!({"title": row.title})),
                    now,
                )?;
                reindex(conn, &row.id)?;
                row.id
            }
        };
        tell_owner(conn, &id, ctx, now)?;
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

fn load_row(conn: &mut DbConnection, id: &str) -> Result<CoeRow, CoeError> {
    coes::table
        .find(id)
        .select(CoeRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| CoeError::NotFound(id.to_owned()))
}

fn template_of(row: &CoeRow) -> Template {
    serde_json::from_str(&row.template).unwrap_or_else(|_| Template::default_template())
}

/// The whole document, with its completeness report.
pub fn load(
    conn: &mut DbConnection,
    id: &str,
    settings: &Settings,
) -> Result<CoeDocument, CoeError> {
    let phrases = &settings.coe.intention_phrases;
    let clock = actions::Clock::now(settings);
    let row = load_row(conn, id)?;
    let template = template_of(&row);
    let sections: BTreeMap<String, String> = coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select((coe_sections::key, coe_sections::body))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect();
    let timeline: Vec<TimelineRow> = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .order((
            timeline_entries::at.asc(),
            timeline_entries::created_at.asc(),
        ))
        .select(TimelineRow::as_select())
        .load(conn)?;
    let chains: Vec<WhyChainRow> = why_chains::table
        .filter(why_chains::coe_id.eq(id))
        .order((why_chains::position.asc(), why_chains::created_at.asc()))
        .select(WhyChainRow::as_select())
        .load(conn)?;
    let related: Vec<RelatedRow> = related_items::table
        .filter(related_items::coe_id.eq(id))
        .order(related_items::created_at.asc())
        .select(RelatedRow::as_select())
        .load(conn)?;
    let recurrences: Vec<(String, String, String, String, NaiveDateTime)> = coe_recurrences::table
        .inner_join(coes::table.on(coes::id.eq(coe_recurrences::earlier_coe_id)))
        .filter(coe_recurrences::coe_id.eq(id))
        .select((
            coes::id,
            coes::title,
            coes::state,
            coe_recurrences::matched_on,
            coes::created_at,
        ))
        .load(conn)?;

    let action_views = actions::for_coe(conn, id, clock)?;
    let review: Vec<ReviewComment> = review_comments::table
        .filter(review_comments::coe_id.eq(id))
        .order((review_comments::created_at.asc(), review_comments::id.asc()))
        .select(ReviewCommentRow::as_select())
        .load(conn)?
        .into_iter()
        .map(|r| ReviewComment {
            author: r.author,
            verdict: r.verdict,
            body: r.body,
            at: r.created_at,
        })
        .collect();
    let mut recurrence_views = Vec::new();
    for (coe_id, title, state, matched_on, created_at) in recurrences {
        let states: Vec<String> = corrective_actions::table
            .filter(corrective_actions::coe_id.eq(&coe_id))
            .select(corrective_actions::state)
            .load(conn)?;
        let open = states
            .iter()
            .filter(|s| ActionState::parse(s).is_some_and(ActionState::is_active))
            .count();
        recurrence_views.push(Recurrence {
            coe_id,
            title,
            state: CoeState::parse(&state).unwrap_or(CoeState::Draft),
            matched_on,
            created_at,
            total_actions: states.len(),
            open_actions: open,
        });
    }
    let five_whys: Vec<WhyChain> = chains
        .into_iter()
        .map(|c| WhyChain {
            steps: serde_json::from_str(&c.steps).unwrap_or_default(),
            id: c.id,
            position: c.position,
        })
        .collect();
    let content = CoeContent {
        sections: sections
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        timeline_entries: timeline.len(),
        why_chains: five_whys
            .iter()
            .map(|c| {
                c.steps
                    .iter()
                    .map(|s| WhyStep {
                        why: s.why.clone(),
                        because: s.because.clone(),
                    })
                    .collect()
            })
            .collect(),
        action_count: Some(action_views.len()),
        other_texts: action_views
            .iter()
            .enumerate()
            .flat_map(|(i, a)| {
                [
                    (format!("actions[{i}].title"), a.title.clone()),
                    (
                        format!("actions[{i}].description"),
                        a.description.clone().unwrap_or_default(),
                    ),
                ]
            })
            .collect(),
    };
    let completeness = rules::assess(&template, &content, phrases);
    let problems_of = |key: &str| -> Vec<String> {
        completeness
            .missing
            .iter()
            .filter(|f: &&Finding| f.at == key)
            .map(|f| f.problem.clone())
            .collect()
    };
    let section_views = template
        .sections
        .iter()
        .map(|s| {
            let problems = problems_of(&s.key);
            SectionView {
                key: s.key.clone(),
                title: s.title.clone(),
                kind: s.kind,
                required: s.required,
                guidance: s.guidance.clone(),
                body: sections.get(&s.key).cloned().unwrap_or_default(),
                complete: problems.is_empty(),
                problems,
            }
        })
        .collect();
    Ok(CoeDocument {
        duration_seconds: match (row.started_at, row.resolved_at) {
            (Some(s), Some(r)) => Some((r - s).num_seconds().max(0)),
            _ => None,
        },
        severity: Severity::from_rank(row.severity).unwrap_or(Severity::Sev3),
        state: CoeState::parse(&row.state).unwrap_or(CoeState::Draft),
        links: serde_json::from_str(&row.links).unwrap_or_default(),
        template: TemplateRef {
            name: row.template_name.clone(),
            version: row.template_version,
        },
        sections: section_views,
        timeline: timeline
            .into_iter()
            .map(|t| TimelineEntry {
                id: t.id,
                at: t.at,
                kind: t.kind,
                text: t.text,
                source: t.source,
                event_id: t.event_id,
            })
            .collect(),
        five_whys,
        related: related
            .into_iter()
            .map(|r| RelatedItem {
                id: r.id,
                kind: r.kind,
                title: r.title,
                url: r.url,
                coe_id: r.related_coe_id,
            })
            .collect(),
        recurrence: recurrence_views,
        actions: action_views,
        review,
        completeness,
        id: row.id,
        incident_id: row.incident_id,
        title: row.title,
        service: row.service,
        owner: row.owner_email,
        reviewer: row.reviewer_email,
        version: row.version,
        started_at: row.started_at,
        detected_at: row.detected_at,
        mitigated_at: row.mitigated_at,
        resolved_at: row.resolved_at,
        created_by: row.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Who may change a COE: its owner and its reviewer, and admins. A COE nobody owns
/// yet may be changed by any member (someone has to take it).
pub fn may_edit(
    conn: &mut DbConnection,
    id: &str,
    email: Option<&str>,
    is_admin: bool,
) -> Result<(), CoeError> {
    let (owner, reviewer): (Option<String>, Option<String>) = coes::table
        .find(id)
        .select((coes::owner_email, coes::reviewer_email))
        .first(conn)
        .optional()?
        .ok_or_else(|| CoeError::NotFound(id.to_owned()))?;
    if is_admin || owner.is_none() {
        return Ok(());
    }
    let allowed =
        email.is_some_and(|e| Some(e) == owner.as_deref() || Some(e) == reviewer.as_deref());
    if allowed {
        Ok(())
    } else {
        Err(CoeError::Forbidden(format!(
            "only the COE's owner ({}) or reviewer ({}) may change it",
            owner.as_deref().unwrap_or("none"),
            reviewer.as_deref().unwrap_or("none")
        )))
    }
}

/// Loads the COE for a change: checks that it exists, that the writer saw the current
/// version, and that it may still be edited.
fn begin_change(
    conn: &mut DbConnection,
    id: &str,
    expected: Option<i32>,
) -> Result<CoeRow, CoeError> {
    let Some(version) = expected else {
        let row = load_row(conn, id)?;
        return Err(CoeError::VersionRequired {
            current: row.version,
        });
    };
    // Claim the version first: the conditional update takes the row's write lock, so
    // of two writers based on the same version exactly one gets on; the other waits,
    // then finds the version moved and is refused. Nothing is lost on PostgreSQL's
    // READ COMMITTED either.
    let claimed = diesel::update(
        coes::table
            .filter(coes::id.eq(id))
            .filter(coes::version.eq(version)),
    )
    .set(coes::version.eq(coes::version + 1))
    .execute(conn)?;
    let row = load_row(conn, id)?;
    if claimed == 0 {
        return Err(CoeError::Stale {
            expected: version,
            current: row.version,
        });
    }
    let state = CoeState::parse(&row.state).unwrap_or(CoeState::Draft);
    if !state.is_editable() {
        return Err(CoeError::NotEditable { state });
    }
    Ok(row)
}

/// Records the change time (the version was claimed by `begin_change`) and refreshes
/// the search index.
fn finish_change(conn: &mut DbConnection, id: &str, now: NaiveDateTime) -> Result<(), CoeError> {
    diesel::update(coes::table.find(id))
        .set(coes::updated_at.eq(now))
        .execute(conn)?;
    reindex(conn, id)?;
    Ok(())
}

/// Writes a text section's Markdown.
pub fn put_section(
    conn: &mut DbConnection,
    id: &str,
    key: &str,
    body: &str,
    expected: Option<i32>,
    actor: Actor<'_>,
    ctx: &Context<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        let row = begin_change(conn, id, expected)?;
        let template = template_of(&row);
        let spec = template.section(key).ok_or_else(|| {
            CoeError::invalid(
                "key",
                format!(
                    "no section `{key}` in this COE's template; its sections are: {}",
                    template.keys()
                ),
            )
        })?;
        if spec.kind != SectionKind::Text {
            return Err(CoeError::invalid(
                "key",
                format!(
                    "section `{key}` is of kind {} and is edited through its own endpoint",
                    spec.kind
                ),
            ));
        }
        if body.len() > ctx.settings.coe.max_section_bytes {
            return Err(CoeError::invalid(
                "body",
                format!(
                    "must be at most {} bytes (coe.max_section_bytes; got {})",
                    ctx.settings.coe.max_section_bytes,
                    body.len()
                ),
            ));
        }
        let now = db::now();
        let before: Option<String> = coe_sections::table
            .filter(coe_sections::coe_id.eq(id))
            .filter(coe_sections::key.eq(key))
            .select(coe_sections::body)
            .first(conn)
            .optional()?;
        diesel::delete(
            coe_sections::table
                .filter(coe_sections::coe_id.eq(id))
                .filter(coe_sections::key.eq(key)),
        )
        .execute(conn)?;
        diesel::insert_into(coe_sections::table)
            .values(SectionRow {
                coe_id: id.to_owned(),
                key: key.to_owned(),
                body: body.to_owned(),
                updated_by: actor.to_owned(),
                updated_at: now,
            })
            .execute(conn)?;
        write_audit(
            conn,
            id,
            actor,
            &format!("section:{key}"),
            before.map(|b| json!({ "body": b })),
            Some(json!({ "body": body })),
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// Fields `PATCH /api/v1/coes/{id}` may change.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CoePatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub owner: Option<crate::domain::EmailAddress>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub reviewer: Option<crate::domain::EmailAddress>,
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "sev2")]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub service: Option<String>,
}

/// Changes title, owner, reviewer, severity or service.
pub fn patch(
    conn: &mut DbConnection,
    id: &str,
    patch: CoePatch,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        let row = begin_change(conn, id, expected)?;
        let mut changes = Vec::new();
        if let Some(title) = &patch.title {
            let title = title.trim();
            if title.is_empty() {
                return Err(CoeError::invalid("title", "must not be empty"));
            }
            changes.push(("title", json!(title)));
        }
        if let Some(owner) = &patch.owner {
            changes.push(("owner", json!(owner.as_str())));
        }
        if let Some(reviewer) = &patch.reviewer {
            changes.push(("reviewer", json!(reviewer.as_str())));
        }
        // Whatever changes, the owner and the reviewer stay two people.
        let final_owner = patch
            .owner
            .as_ref()
            .map(|o| o.as_str().to_owned())
            .or(row.owner_email.clone());
        let final_reviewer = patch
            .reviewer
            .as_ref()
            .map(|r| r.as_str().to_owned())
            .or(row.reviewer_email.clone());
        if final_owner.is_some() && final_owner == final_reviewer {
            let field = if patch.reviewer.is_some() {
                "reviewer"
            } else {
                "owner"
            };
            return Err(CoeError::invalid(
                field,
                "the COE's owner and reviewer must be two people",
            ));
        }
        if let Some(severity) = patch.severity {
            changes.push(("severity", json!(severity)));
        }
        if let Some(service) = &patch.service {
            changes.push(("service", json!(service.trim())));
        }
        if changes.is_empty() {
            return Err(CoeError::invalid(
                "body",
                "names nothing to change (title, owner, reviewer, severity, service)",
            ));
        }
        let now = db::now();
        apply_patch(conn, id, &changes, actor, now)?;
        finish_change(conn, id, now)
    })
}

fn apply_patch(
    conn: &mut DbConnection,
    id: &str,
    changes: &[(&str, Value)],
    actor: Actor<'_>,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    let row = load_row(conn, id)?;
    let mut before = serde_json::Map::new();
    let mut after = serde_json::Map::new();
    for (field, value) in changes {
        let text = value.as_str().map(str::to_owned);
        match *field {
            "title" => {
                before.insert("title".into(), json!(row.title));
                diesel::update(coes::table.find(id))
                    .set(coes::title.eq(text.clone().unwrap_or_default()))
                    .execute(conn)?;
            }
            "owner" => {
                before.insert("owner".into(), json!(row.owner_email));
                diesel::update(coes::table.find(id))
                    .set(coes::owner_email.eq(text.clone()))
                    .execute(conn)?;
            }
            "reviewer" => {
                before.insert("reviewer".into(), json!(row.reviewer_email));
                diesel::update(coes::table.find(id))
                    .set(coes::reviewer_email.eq(text.clone()))
                    .execute(conn)?;
            }
            "severity" => {
                before.insert(
                    "severity".into(),
                    json!(Severity::from_rank(row.severity).map(|s| s.as_str())),
                );
                let rank = text
                    .as_deref()
                    .and_then(|s| s.parse::<Severity>().ok())
                    .map_or(row.severity, Severity::rank);
                diesel::update(coes::table.find(id))
                    .set(coes::severity.eq(rank))
                    .execute(conn)?;
            }
            "service" => {
                before.insert("service".into(), json!(row.service));
                diesel::update(coes::table.find(id))
                    .set(coes::service.eq(text.clone().filter(|s| !s.is_empty())))
                    .execute(conn)?;
            }
            _ => continue,
        }
        after.insert((*field).to_owned(), value.clone());
    }
    write_audit(
        conn,
        id,
        actor,
        "update",
        Some(Value::Object(before)),
        Some(Value::Object(after)),
        now,
    )?;
    Ok(())
}

/// A timeline entry as people write it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineInput {
    /// RFC 3339.
    pub at: String,
    /// started, detected, diagnosed, mitigated, resolved, fired, acknowledged, updated or note.
    pub kind: String,
    pub text: String,
}

fn check_timeline(input: &TimelineInput) -> Result<(NaiveDateTime, &'static str), CoeError> {
    let at = crate::domain::event::parse_time(&input.at)
        .map_err(|p| CoeError::invalid("at", p))?
        .ok_or_else(|| {
            CoeError::invalid("at", format!("must be a real time (got {:?})", input.at))
        })?;
    let kind =
        crate::domain::coe::timeline_kind(&input.kind).map_err(|p| CoeError::invalid("kind", p))?;
    if input.text.trim().is_empty() {
        return Err(CoeError::invalid("text", "must not be empty"));
    }
    if input.text.len() > 10_000 {
        return Err(CoeError::invalid("text", "must be at most 10000 bytes"));
    }
    Ok((at, kind))
}

/// One child row of COE `$coe` (a timeline entry, a 5-whys chain, a related item) by
/// its id, as `$select`: `NotFound` naming `$coe/$what/$child` when it does not exist
/// or belongs to another COE.
macro_rules! child_of_coe {
    ($conn:expr, $table:ident, $select:expr, $coe:expr, $child:expr, $what:literal) => {
        $table::table
            .filter($table::id.eq($child))
            .filter($table::coe_id.eq($coe))
            .select($select)
            .first($conn)
            .optional()?
            .ok_or_else(|| CoeError::NotFound(format!("{}/{}/{}", $coe, $what, $child)))
    };
}

/// Milestone kinds also set the COE's own times (see `recompute_milestone`).
fn set_milestone(
    conn: &mut DbConnection,
    id: &str,
    kind: &str,
    at: Option<NaiveDateTime>,
) -> QueryResult<()> {
    let target = coes::table.find(id);
    match kind {
        "started" => diesel::update(target)
            .set(coes::started_at.eq(at))
            .execute(conn)?,
        "detected" => diesel::update(target)
            .set(coes::detected_at.eq(at))
            .execute(conn)?,
        "mitigated" => diesel::update(target)
            .set(coes::mitigated_at.eq(at))
            .execute(conn)?,
        "resolved" => diesel::update(target)
            .set(coes::resolved_at.eq(at))
            .execute(conn)?,
        _ => 0,
    };
    Ok(())
}

/// Sets the COE's time for milestone `kind`: from the timeline entries people wrote,
/// the earliest (started, detected, mitigated) or the latest (resolved); with none,
/// the incident's time (started, detected, resolved: its alerts decide it, all of
/// them together), else none. Called after every timeline change of that kind, and
/// by `record_event` when the incident's resolution changes.
fn recompute_milestone(conn: &mut DbConnection, id: &str, kind: &str) -> QueryResult<()> {
    if !matches!(kind, "started" | "detected" | "mitigated" | "resolved") {
        return Ok(());
    }
    let written = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .filter(timeline_entries::kind.eq(kind))
        .filter(timeline_entries::source.is_null());
    let mut at: Option<NaiveDateTime> = if kind == "resolved" {
        written
            .select(diesel::dsl::max(timeline_entries::at))
            .first(conn)?
    } else {
        written
            .select(diesel::dsl::min(timeline_entries::at))
            .first(conn)?
    };
    if at.is_none() {
        let incident: Option<IncidentRow> = coes::table
            .inner_join(incidents::table)
            .filter(coes::id.eq(id))
            .select(IncidentRow::as_select())
            .first(conn)
            .optional()?;
        at = incident.and_then(|i| match kind {
            "started" => Some(i.started_at),
            "detected" => Some(i.detected_at),
            "resolved" => i.resolved_at,
            _ => None,
        });
    }
    set_milestone(conn, id, kind, at)
}

/// Adds a timeline entry; returns its id.
pub fn add_timeline(
    conn: &mut DbConnection,
    id: &str,
    input: &TimelineInput,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<String, CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let (at, kind) = check_timeline(input)?;
        let now = db::now();
        let entry = TimelineRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            at,
            kind: kind.to_owned(),
            text: input.text.trim().to_owned(),
            source: None,
            event_id: None,
            created_at: now,
        };
        diesel::insert_into(timeline_entries::table)
            .values(&entry)
            .execute(conn)?;
        recompute_milestone(conn, id, kind)?;
        write_audit(
            conn,
            id,
            actor,
            "timeline:add",
            None,
            Some(json!({"id": entry.id, "at": at, "kind": kind, "text": entry.text})),
            now,
        )?;
        finish_change(conn, id, now)?;
        Ok(entry.id)
    })
}

/// Replaces a timeline entry.
pub fn edit_timeline(
    conn: &mut DbConnection,
    id: &str,
    entry_id: &str,
    input: &TimelineInput,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let (at, kind) = check_timeline(input)?;
        let existing: TimelineRow = child_of_coe!(
            conn,
            timeline_entries,
            TimelineRow::as_select(),
            id,
            entry_id,
            "timeline"
        )?;
        let now = db::now();
        diesel::update(timeline_entries::table.find(entry_id))
            .set((
                timeline_entries::at.eq(at),
                timeline_entries::kind.eq(kind),
                timeline_entries::text.eq(input.text.trim()),
            ))
            .execute(conn)?;
        recompute_milestone(conn, id, &existing.kind)?;
        if existing.kind != kind {
            recompute_milestone(conn, id, kind)?;
        }
        write_audit(
            conn,
            id,
            actor,
            "timeline:edit",
            Some(
                json!({"id": entry_id, "at": existing.at, "kind": existing.kind, "text": existing.text}),
            ),
            Some(json!({"id": entry_id, "at": at, "kind": kind, "text": input.text.trim()})),
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// Deletes a timeline entry.
pub fn delete_timeline(
    conn: &mut DbConnection,
    id: &str,
    entry_id: &str,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let existing: TimelineRow = child_of_coe!(
            conn,
            timeline_entries,
            TimelineRow::as_select(),
            id,
            entry_id,
            "timeline"
        )?;
        diesel::delete(timeline_entries::table.find(entry_id)).execute(conn)?;
        recompute_milestone(conn, id, &existing.kind)?;
        let now = db::now();
        write_audit(
            conn,
            id,
            actor,
            "timeline:delete",
            Some(
                json!({"id": entry_id, "at": existing.at, "kind": existing.kind, "text": existing.text}),
            ),
            None,
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// A 5-whys chain as people write it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyChainInput {
    /// From the symptom down to the root cause.
    pub steps: Vec<Why>,
}

fn check_steps(input: &WhyChainInput) -> Result<String, CoeError> {
    if input.steps.is_empty() {
        return Err(CoeError::invalid("steps", "must hold at least one why"));
    }
    if input.steps.len() > 50 {
        return Err(CoeError::invalid("steps", "must hold at most 50 whys"));
    }
    for (i, step) in input.steps.iter().enumerate() {
        if step.why.trim().is_empty() {
            return Err(CoeError::invalid(
                format!("steps[{i}].why"),
                "must not be empty",
            ));
        }
        if step.because.trim().is_empty() {
            return Err(CoeError::invalid(
                format!("steps[{i}].because"),
                "must not be empty",
            ));
        }
        if step.why.len() + step.because.len() > 10_000 {
            return Err(CoeError::invalid(
                format!("steps[{i}]"),
                "must be at most 10000 bytes",
            ));
        }
    }
    Ok(serde_json::to_string(&input.steps).unwrap_or_else(|_| "[]".into()))
}

/// Adds a 5-whys chain at the end; returns its id.
pub fn add_why_chain(
    conn: &mut DbConnection,
    id: &str,
    input: &WhyChainInput,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<String, CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let steps = check_steps(input)?;
        let position: Option<i32> = why_chains::table
            .filter(why_chains::coe_id.eq(id))
            .select(diesel::dsl::max(why_chains::position))
            .first(conn)?;
        let now = db::now();
        let row = WhyChainRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            position: position.map_or(0, |p| p + 1),
            steps,
            created_at: now,
            updated_at: now,
        };
        diesel::insert_into(why_chains::table)
            .values(&row)
            .execute(conn)?;
        write_audit(
            conn,
            id,
            actor,
            "five_whys:add",
            None,
            Some(json!({"id": row.id, "steps": input.steps})),
            now,
        )?;
        finish_change(conn, id, now)?;
        Ok(row.id)
    })
}

/// Replaces a chain's steps.
pub fn replace_why_chain(
    conn: &mut DbConnection,
    id: &str,
    chain_id: &str,
    input: &WhyChainInput,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let steps = check_steps(input)?;
        let before: String =
            child_of_coe!(conn, why_chains, why_chains::steps, id, chain_id, "whys")?;
        let now = db::now();
        diesel::update(why_chains::table.find(chain_id))
            .set((why_chains::steps.eq(&steps), why_chains::updated_at.eq(now)))
            .execute(conn)?;
        write_audit(
            conn,
            id,
            actor,
            "five_whys:edit",
            Some(
                json!({"id": chain_id, "steps": serde_json::from_str::<Value>(&before).unwrap_or(Value::Null)}),
            ),
            Some(json!({"id": chain_id, "steps": input.steps})),
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// Deletes a chain.
pub fn delete_why_chain(
    conn: &mut DbConnection,
    id: &str,
    chain_id: &str,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let before: String =
            child_of_coe!(conn, why_chains, why_chains::steps, id, chain_id, "whys")?;
        diesel::delete(why_chains::table.find(chain_id)).execute(conn)?;
        let now = db::now();
        write_audit(
            conn,
            id,
            actor,
            "five_whys:delete",
            Some(
                json!({"id": chain_id, "steps": serde_json::from_str::<Value>(&before).unwrap_or(Value::Null)}),
            ),
            None,
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// A related item as people add it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelatedInput {
    /// link, ticket, runbook, change or coe.
    pub kind: String,
    #[serde(default)]
    pub title: Option<String>,
    /// An http(s) URL; required unless kind is `coe`.
    #[serde(default)]
    pub url: Option<String>,
    /// For kind `coe`: the other COE's id.
    #[serde(default)]
    pub coe_id: Option<String>,
}

/// Adds a related item; returns its id.
pub fn add_related(
    conn: &mut DbConnection,
    id: &str,
    input: &RelatedInput,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<String, CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        if !crate::domain::coe::RELATED_KINDS.contains(&input.kind.as_str()) {
            return Err(CoeError::invalid(
                "kind",
                format!(
                    "must be one of {} (got {:?})",
                    crate::domain::coe::RELATED_KINDS.join(", "),
                    input.kind
                ),
            ));
        }
        let (url, related) = if input.kind == "coe" {
            let other = input
                .coe_id
                .as_deref()
                .ok_or_else(|| CoeError::invalid("coe_id", "is required for kind coe"))?;
            if other == id {
                return Err(CoeError::invalid("coe_id", "must be another COE"));
            }
            let exists: i64 = coes::table
                .filter(coes::id.eq(other))
                .count()
                .get_result(conn)?;
            if exists == 0 {
                return Err(CoeError::invalid(
                    "coe_id",
                    format!("no COE with id `{other}`"),
                ));
            }
            (None, Some(other.to_owned()))
        } else {
            let url = input
                .url
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| CoeError::invalid("url", "is required"))?;
            if crate::domain::event::web_links([url.to_owned()]).is_empty() {
                return Err(CoeError::invalid(
                    "url",
                    format!("must be an http or https URL (got {url:?})"),
                ));
            }
            (Some(url.to_owned()), None)
        };
        let now = db::now();
        let row = RelatedRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            kind: input.kind.clone(),
            title: input.title.clone().filter(|t| !t.trim().is_empty()),
            url,
            related_coe_id: related,
            created_at: now,
        };
        diesel::insert_into(related_items::table)
            .values(&row)
            .execute(conn)?;
        write_audit(
            conn,
            id,
            actor,
            "related:add",
            None,
            Some(
                json!({"id": row.id, "kind": row.kind, "url": row.url, "coe_id": row.related_coe_id, "title": row.title}),
            ),
            now,
        )?;
        finish_change(conn, id, now)?;
        Ok(row.id)
    })
}

/// Removes a related item.
pub fn delete_related(
    conn: &mut DbConnection,
    id: &str,
    item_id: &str,
    expected: Option<i32>,
    actor: Actor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        begin_change(conn, id, expected)?;
        let row: RelatedRow = child_of_coe!(
            conn,
            related_items,
            RelatedRow::as_select(),
            id,
            item_id,
            "related"
        )?;
        diesel::delete(related_items::table.find(item_id)).execute(conn)?;
        let now = db::now();
        write_audit(
            conn,
            id,
            actor,
            "related:delete",
            Some(
                json!({"id": row.id, "kind": row.kind, "url": row.url, "coe_id": row.related_coe_id}),
            ),
            None,
            now,
        )?;
        finish_change(conn, id, now)
    })
}

/// One audit record.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HistoryEntry {
    pub at: NaiveDateTime,
    pub actor: String,
    pub action: String,
    #[schema(value_type = Object)]
    pub before: Option<Value>,
    #[schema(value_type = Object)]
    pub after: Option<Value>,
}

/// Every change to a COE, oldest first.
pub fn history(conn: &mut DbConnection, id: &str) -> Result<Vec<HistoryEntry>, CoeError> {
    load_row(conn, id)?;
    let rows: Vec<AuditRow> = audit_log::table
        .filter(audit_log::coe_id.eq(id))
        .order((audit_log::at.asc(), audit_log::id.asc()))
        .select(AuditRow::as_select())
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|r| HistoryEntry {
            at: r.at,
            actor: r.actor,
            action: r.action,
            before: r.before.and_then(|b| serde_json::from_str(&b).ok()),
            after: r.after.and_then(|a| serde_json::from_str(&a).ok()),
        })
        .collect())
}

/// Rebuilds the COE's row in the full-text index: its title, and its sections,
/// timeline and 5 whys as the body.
fn reindex(conn: &mut DbConnection, id: &str) -> QueryResult<()> {
    let title: String = coes::table.find(id).select(coes::title).first(conn)?;
    let mut body = String::new();
    for text in coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select(coe_sections::body)
        .load::<String>(conn)?
    {
        body.push_str(&text);
        body.push('\n');
    }
    for text in timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .select(timeline_entries::text)
        .load::<String>(conn)?
    {
        body.push_str(&text);
        body.push('\n');
    }
    for steps in why_chains::table
        .filter(why_chains::coe_id.eq(id))
        .select(why_chains::steps)
        .load::<String>(conn)?
    {
        for step in serde_json::from_str::<Vec<Why>>(&steps).unwrap_or_default() {
            body.push_str(&step.why);
            body.push(' ');
            body.push_str(&step.because);
            body.push('\n');
        }
    }
    use diesel::sql_types::Text;
    match conn {
        DbConnection::Sqlite(c) => {
            diesel::sql_query("DELETE FROM coe_search WHERE coe_id = ?")
                .bind::<Text, _>(id)
                .execute(c)?;
            diesel::sql_query("INSERT INTO coe_search (coe_id, title, body) VALUES (?, ?, ?)")
                .bind::<Text, _>(id)
                .bind::<Text, _>(&title)
                .bind::<Text, _>(&body)
                .execute(c)?;
        }
        DbConnection::Pg(c) => {
            diesel::sql_query(
                "INSERT INTO coe_search (coe_id, title, body) VALUES ($1, $2, $3) \
                 ON CONFLICT (coe_id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body",
            )
            .bind::<Text, _>(id)
            .bind::<Text, _>(&title)
            .bind::<Text, _>(&body)
            .execute(c)?;
        }
    }
    Ok(())
}

/// Filters of the COE list. `text` searches titles and writeups, ranked.
#[derive(Debug, Clone, Default)]
pub struct CoeFilter {
    pub text: Option<String>,
    pub state: Option<CoeState>,
    pub service: Option<String>,
    pub severity: Option<Severity>,
    pub owner: Option<String>,
    pub since: Option<NaiveDateTime>,
    pub until: Option<NaiveDateTime>,
}

/// Most search hits ranked before filtering.
const MAX_SEARCH_HITS: i64 = 1_000;

#[derive(QueryableByName)]
struct Hit {
    #[diesel(sql_type = diesel::sql_types::Text)]
    coe_id: String,
    #[diesel(sql_type = diesel::sql_types::Double)]
    rank: f64,
}

/// Full-text search through the database's own index (FTS5 on SQLite, a `tsvector`
/// with a GIN index on PostgreSQL): ids with their rank, best first.
fn search(conn: &mut DbConnection, text: &str) -> QueryResult<Vec<(String, f64)>> {
    use diesel::sql_types::{BigInt, Text};
    let hits: Vec<Hit> = match conn {
        DbConnection::Sqlite(c) => {
            // Each word quoted: the user's text is data, never FTS5 query syntax.
            let query = text
                .split(|ch: char| !ch.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" ");
            if query.is_empty() {
                return Ok(Vec::new());
            }
            diesel::sql_query(
                "SELECT coe_id, -bm25(coe_search, 0.0, 10.0, 1.0) AS rank FROM coe_search \
                 WHERE coe_search MATCH ? ORDER BY rank DESC LIMIT ?",
            )
            .bind::<Text, _>(query)
            .bind::<BigInt, _>(MAX_SEARCH_HITS)
            .load(c)?
        }
        DbConnection::Pg(c) => diesel::sql_query(
            "SELECT coe_id, CAST(ts_rank(tsv, websearch_to_tsquery('english', $1)) AS float8) AS rank \
             FROM coe_search WHERE tsv @@ websearch_to_tsquery('english', $1) \
             ORDER BY rank DESC LIMIT $2",
        )
        .bind::<Text, _>(text)
        .bind::<BigInt, _>(MAX_SEARCH_HITS)
        .load(c)?,
    };
    Ok(hits.into_iter().map(|h| (h.coe_id, h.rank)).collect())
}

fn summary(row: CoeRow, rank: Option<f64>) -> CoeSummary {
    CoeSummary {
        severity: Severity::from_rank(row.severity).unwrap_or(Severity::Sev3),
        state: CoeState::parse(&row.state).unwrap_or(CoeState::Draft),
        id: row.id,
        incident_id: row.incident_id,
        title: row.title,
        service: row.service,
        owner: row.owner_email,
        reviewer: row.reviewer_email,
        created_at: row.created_at,
        updated_at: row.updated_at,
        rank,
    }
}

/// A page of COEs: ranked by relevance with `text`, else newest first.
pub fn list(
    conn: &mut DbConnection,
    filter: &CoeFilter,
    limit: i64,
    offset: i64,
) -> QueryResult<(Vec<CoeSummary>, i64)> {
    let hits = match &filter.text {
        Some(text) => Some(search(conn, text)?),
        None => None,
    };
    let filtered = || {
        let mut query = coes::table.into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(coes::state.eq(state.as_str()));
        }
        if let Some(service) = &filter.service {
            query = query.filter(coes::service.eq(service.clone()));
        }
        if let Some(severity) = filter.severity {
            query = query.filter(coes::severity.eq(severity.rank()));
        }
        if let Some(owner) = &filter.owner {
            query = query.filter(coes::owner_email.eq(owner.clone()));
        }
        if let Some(since) = filter.since {
            query = query.filter(coes::created_at.ge(since));
        }
        if let Some(until) = filter.until {
            query = query.filter(coes::created_at.lt(until));
        }
        if let Some(hits) = &hits {
            let ids: Vec<String> = hits.iter().map(|(id, _)| id.clone()).collect();
            query = query.filter(coes::id.eq_any(ids));
        }
        query
    };
    match &hits {
        None => {
            let total: i64 = filtered().count().get_result(conn)?;
            let rows: Vec<CoeRow> = filtered()
                .order((coes::created_at.desc(), coes::id.desc()))
                .limit(limit)
                .offset(offset)
                .select(CoeRow::as_select())
                .load(conn)?;
            Ok((rows.into_iter().map(|r| summary(r, None)).collect(), total))
        }
        Some(hits) => {
            let rows: Vec<CoeRow> = filtered().select(CoeRow::as_select()).load(conn)?;
            let rank: BTreeMap<String, f64> = hits.iter().cloned().collect();
            let mut found: Vec<CoeSummary> = rows
                .into_iter()
                .map(|r| {
                    let score = rank.get(&r.id).copied();
                    summary(r, score)
                })
                .collect();
            found.sort_by(|a, b| {
                b.rank
                    .partial_cmp(&a.rank)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| b.created_at.cmp(&a.created_at))
            });
            let total = i64::try_from(found.len()).unwrap_or(i64::MAX);
            let page = found
                .into_iter()
                .skip(usize::try_from(offset).unwrap_or(0))
                .take(usize::try_from(limit).unwrap_or(0))
                .collect();
            Ok((page, total))
        }
    }
}
