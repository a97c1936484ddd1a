//! Pulling the cord: anyone signed in reports a failure that no alert caught (a
//! customer says orders are lost). The report opens a manual incident (source
//! `manual`, the reporter recorded) and, at or above the COE policy, its draft, owned
//! by the ownership rules or else by the reporter, who is told like any owner. Below
//! the policy the incident stands alone and its page offers to open a COE anyway.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::db::models::{IncidentRow, SectionRow, TimelineRow};
use crate::db::schema::{coe_sections, coes, incident_groups, incidents, timeline_entries};
use crate::db::{self, DbConnection};
use crate::domain::coe::{self, TimelineKind};
use crate::domain::incident::IncidentState;
use crate::domain::{EmailAddress, Severity};
use crate::services::access::Editor;
use crate::services::coe::coes::{self as coe_service, CoeError, NewCoe};
use crate::services::{directory::ownership, Env};

/// Longest "what customers saw", in bytes.
const MAX_SAW_BYTES: usize = 20_000;

/// How far in the future a reported time may be (clocks differ a little).
const CLOCK_SKEW_MINUTES: i64 = 5;

/// A failure as a person reports it.
#[derive(Debug, Clone, Default)]
pub struct FailureReport {
    pub title: String,
    pub service: Option<String>,
    pub severity: Option<Severity>,
    pub started_at: Option<NaiveDateTime>,
    pub detected_at: Option<NaiveDateTime>,
    pub resolved_at: Option<NaiveDateTime>,
    /// What customers saw, in words: the COE's impact section starts from it.
    pub customers_saw: Option<String>,
}

/// What a report opened.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Reported {
    pub incident_id: String,
    /// The draft, when the severity is at or above the COE policy.
    pub coe_id: Option<String>,
}

/// Every problem of a report at once, by field (what `report` refuses it for).
pub fn problems(report: &FailureReport) -> Vec<(String, String)> {
    check(report, db::now())
}

fn check(report: &FailureReport, now: NaiveDateTime) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let mut problem = |field: &str, text: &str| problems.push((field.to_owned(), text.to_owned()));
    if report.title.trim().is_empty() {
        problem("title", "is required: what failed, in a few words");
    } else if let Err(p) = coe::check_title(report.title.trim()) {
        problem("title", &p);
    }
    if report.severity.is_none() {
        problem("severity", "is required: sev1 (worst) to sev5");
    }
    let latest = now + Duration::minutes(CLOCK_SKEW_MINUTES);
    match report.started_at {
        None => problem("started_at", "is required: when customers first saw it"),
        Some(at) if at > latest => problem("started_at", "is in the future"),
        Some(_) => {}
    }
    for (field, at) in [
        ("detected_at", report.detected_at),
        ("resolved_at", report.resolved_at),
    ] {
        match (at, report.started_at) {
            (Some(at), _) if at > latest => problem(field, "is in the future"),
            (Some(at), Some(started)) if at < started => problem(field, "is before it started"),
            _ => {}
        }
    }
    if let (Some(noticed), Some(ended)) = (report.detected_at, report.resolved_at) {
        if noticed > ended {
            problem(
                "detected_at",
                "is after it ended: an outage is noticed at the latest when it ends",
            );
        }
    }
    if report
        .customers_saw
        .as_deref()
        .is_some_and(|s| s.len() > MAX_SAW_BYTES)
    {
        problem(
            "customers_saw",
            &format!("must be at most {MAX_SAW_BYTES} bytes"),
        );
    }
    problems
}

/// Files the report in one transaction: the manual incident, and at or above the
/// policy its draft (the ownership rules, else the reporter, own it).
pub fn report(
    conn: &mut DbConnection,
    input: &FailureReport,
    reporter: &Editor<'_>,
    env: Env<'_>,
) -> Result<Reported, CoeError> {
    let now = db::now();
    let problems = check(input, now);
    if !problems.is_empty() {
        return Err(CoeError::Invalid(problems));
    }
    let (Some(severity), Some(started)) = (input.severity, input.started_at) else {
        unreachable!("checked above");
    };
    let service = input
        .service
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let title = input.title.trim().to_owned();
    db::write_transaction(conn, |conn| {
        let id = db::new_id();
        let group_key = format!("manual:{id}");
        let needs_coe = env.settings.incident_policy().needs_coe(severity);
        let detected = input.detected_at.unwrap_or(started);
        let row = IncidentRow {
            group_hash: Sha256::digest(group_key.as_bytes()).to_vec(),
            // A group of its own, which this incident names.
            group_id: id.clone(),
            group_key,
            source: "manual".to_owned(),
            title: title.clone(),
            service: service.clone(),
            severity: severity.rank(),
            state: if input.resolved_at.is_some() {
                IncidentState::Resolved
            } else {
                IncidentState::Open
            }
            .as_str()
            .to_owned(),
            started_at: started,
            detected_at: detected,
            acknowledged_at: None,
            resolved_at: input.resolved_at,
            reopened_count: 0,
            event_count: 0,
            coe_required_at: needs_coe.then_some(now),
            created_at: now,
            updated_at: now,
            budget_burned: None,
            slo: None,
            id,
        };
        diesel::insert_into(incident_groups::table)
            .values((
                incident_groups::group_hash.eq(&row.group_hash),
                incident_groups::group_id.eq(&row.id),
            ))
            .execute(conn)?;
        diesel::insert_into(incidents::table)
            .values(&row)
            .execute(conn)?;
        diesel::update(incidents::table.find(&row.id))
            .set(incidents::reported_by.eq(reporter.actor))
            .execute(conn)?;
        tracing::info!(incident = %row.id, reporter = %reporter.actor, %severity, "a failure was reported by hand");
        if !needs_coe {
            return Ok(Reported {
                incident_id: row.id,
                coe_id: None,
            });
        }
        let coe_id = open_draft(conn, &row.id, service.as_deref(), reporter, env)?;
        fill_in_draft(conn, &coe_id, input, started, reporter, now)?;
        Ok(Reported {
            incident_id: row.id,
            coe_id: Some(coe_id),
        })
    })
}

/// Opens the draft of manual incident `incident_id`, owned by the ownership rules'
/// owner of `service`, else by the reporter; says its id.
fn open_draft(
    conn: &mut DbConnection,
    incident_id: &str,
    service: Option<&str>,
    reporter: &Editor<'_>,
    env: Env<'_>,
) -> Result<String, CoeError> {
    // The ownership rules first; when none names an owner, the reporter owns it.
    let assigned = ownership::for_alerts(conn, env, &[], service)?;
    let owner = match assigned.owner {
        Some(_) => None,
        None => reporter.email.and_then(|e| EmailAddress::parse(e).ok()),
    };
    coe_service::create(
        conn,
        NewCoe {
            incident_id: Some(incident_id.to_owned()),
            owner,
            ..NewCoe::default()
        },
        reporter.actor,
        &env,
    )
}

/// Writes what the reporter knows into draft `coe_id`: what customers saw in its
/// impact section, and the times they gave as its timeline's first entries.
fn fill_in_draft(
    conn: &mut DbConnection,
    coe_id: &str,
    input: &FailureReport,
    started: NaiveDateTime,
    reporter: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    let customers_saw = input
        .customers_saw
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    // What the reporter knows goes into the draft: what customers saw, and the
    // times they gave as the timeline's first entries.
    if let Some(saw) = customers_saw {
        diesel::insert_into(coe_sections::table)
            .values(SectionRow {
                coe_id: coe_id.to_owned(),
                key: "impact".to_owned(),
                body: format!(
                    "What customers saw, as reported by {}: {saw}",
                    reporter.actor
                ),
                updated_by: reporter.actor.to_owned(),
                updated_at: now,
            })
            .execute(conn)?;
    }
    let mut entries = vec![(
        started,
        TimelineKind::Started,
        format!("Customers first saw it (reported by {})", reporter.actor),
    )];
    if let Some(at) = input.detected_at {
        entries.push((at, TimelineKind::Detected, "Detected".to_owned()));
    }
    if let Some(at) = input.resolved_at {
        entries.push((at, TimelineKind::Resolved, "Resolved".to_owned()));
    }
    for (at, kind, text) in entries {
        diesel::insert_into(timeline_entries::table)
            .values(TimelineRow {
                id: db::new_id(),
                coe_id: coe_id.to_owned(),
                at,
                kind: kind.as_str().to_owned(),
                text,
                source: Some("report".to_owned()),
                event_id: None,
                created_at: now,
                alert_key: None,
                alert_name: None,
                occurrences: 1,
                hosts: 0,
                last_at: None,
            })
            .execute(conn)?;
    }
    diesel::update(coes::table.find(coe_id))
        .set(coes::updated_at.eq(now))
        .execute(conn)?;
    coe_service::reindex_coe(conn, coe_id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_of_a_report_is_named_at_once() {
        let now = db::now();
        let fields = |r: &FailureReport| -> Vec<String> {
            check(r, now).into_iter().map(|(f, _)| f).collect()
        };
        assert_eq!(
            fields(&FailureReport::default()),
            ["title", "severity", "started_at"]
        );
        let report = FailureReport {
            title: "Orders lost".into(),
            severity: Some(Severity::Sev2),
            started_at: Some(now - Duration::hours(2)),
            detected_at: Some(now - Duration::hours(3)),
            resolved_at: Some(now + Duration::hours(1)),
            ..FailureReport::default()
        };
        assert_eq!(fields(&report), ["detected_at", "resolved_at"]);
        let fine = FailureReport {
            detected_at: Some(now - Duration::hours(1)),
            resolved_at: None,
            ..report
        };
        assert!(fields(&fine).is_empty());
        let noticed_after_the_end = FailureReport {
            detected_at: Some(now - Duration::minutes(10)),
            resolved_at: Some(now - Duration::hours(1)),
            ..fine
        };
        assert_eq!(fields(&noticed_after_the_end), ["detected_at"]);
    }
}
