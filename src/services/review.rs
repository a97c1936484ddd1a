//! The review step: a draft is submitted when it is complete, a reviewer who is not
//! its owner approves it or sends it back with comments.

use diesel::prelude::*;
use serde_json::json;

use crate::config::Settings;
use crate::db::models::{AuditRow, CoeRow, ReviewCommentRow};
use crate::db::schema::{audit_log, coes, review_comments};
use crate::db::{self, DbConnection};
use crate::domain::coe::CoeState;
use crate::services::actions;
use crate::services::coes::{self as coe_service, CoeError};

/// What a reviewer or an owner asks of a COE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Submit,
    Approve,
    RequestChanges,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Submit => "submit",
            Step::Approve => "approve",
            Step::RequestChanges => "request-changes",
        }
    }

    fn starts_from(self) -> CoeState {
        match self {
            Step::Submit => CoeState::Draft,
            Step::Approve | Step::RequestChanges => CoeState::InReview,
        }
    }
}

/// The review steps a state allows.
fn allowed(state: CoeState) -> &'static str {
    match state {
        CoeState::Draft => "submit",
        CoeState::InReview => "approve, request-changes",
        CoeState::Approved | CoeState::Closed => "none (the review is over)",
    }
}

/// Who is acting, for the reviewer-only rule.
pub struct Reviewer<'a> {
    /// How the change is recorded.
    pub actor: &'a str,
    /// The person's email, when the token names one.
    pub email: Option<&'a str>,
    /// Admins may do anything.
    pub is_admin: bool,
}

/// Takes one review step in one transaction; returns nothing, the caller reloads.
pub fn step(
    conn: &mut DbConnection,
    id: &str,
    step: Step,
    comment: Option<&str>,
    who: &Reviewer<'_>,
    settings: &Settings,
    emails: &crate::email::EmailTemplates,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        actions::lock_coe(conn, id)?;
        let row: CoeRow = coes::table
            .find(id)
            .select(CoeRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| CoeError::NotFound(id.to_owned()))?;
        let state = CoeState::parse(&row.state).unwrap_or(CoeState::Draft);
        if state != step.starts_from() {
            return Err(CoeError::Conflict(format!(
                "cannot {} a COE that is {state}; from {state} it can: {}",
                step.name(),
                allowed(state)
            )));
        }
        let comment = comment.map(str::trim).filter(|c| !c.is_empty());
        let next = match step {
            Step::Submit => {
                let reviewer = row.reviewer_email.as_deref().ok_or_else(|| {
                    CoeError::Invalid(vec![(
                        "reviewer".into(),
                        "the COE needs a reviewer before it is submitted (PATCH it)".into(),
                    )])
                })?;
                if row.owner_email.as_deref() == Some(reviewer) {
                    return Err(CoeError::Invalid(vec![(
                        "reviewer".into(),
                        "must not be the COE's owner".into(),
                    )]));
                }
                let doc = coe_service::load(conn, id, settings)?;
                if !doc.completeness.complete {
                    return Err(CoeError::Invalid(
                        doc.completeness
                            .missing
                            .into_iter()
                            .map(|f| (f.at, f.problem))
                            .collect(),
                    ));
                }
                CoeState::InReview
            }
            Step::Approve | Step::RequestChanges => {
                let is_reviewer = who.email.is_some() && who.email == row.reviewer_email.as_deref();
                if !(is_reviewer || who.is_admin) {
                    return Err(CoeError::Forbidden(format!(
                        "only the COE's reviewer ({}) may {}",
                        row.reviewer_email.as_deref().unwrap_or("none set"),
                        step.name()
                    )));
                }
                if step == Step::Approve
                    && row.owner_email.is_some()
                    && row.owner_email == row.reviewer_email
                {
                    return Err(CoeError::Invalid(vec![(
                        "reviewer".into(),
                        "must not be the COE's owner".into(),
                    )]));
                }
                if step == Step::RequestChanges && comment.is_none() {
                    return Err(CoeError::Invalid(vec![(
                        "comment".into(),
                        "say what needs to change".into(),
                    )]));
                }
                if step == Step::Approve {
                    CoeState::Approved
                } else {
                    CoeState::Draft
                }
            }
        };
        let now = db::now();
        diesel::update(coes::table.find(id))
            .set((
                coes::state.eq(next.as_str()),
                coes::version.eq(coes::version + 1),
                coes::updated_at.eq(now),
            ))
            .execute(conn)?;
        let verdict = match step {
            Step::Submit => "submitted",
            Step::Approve => "approved",
            Step::RequestChanges => "changes_requested",
        };
        let step_id = db::new_id();
        diesel::insert_into(review_comments::table)
            .values(ReviewCommentRow {
                id: step_id.clone(),
                coe_id: id.to_owned(),
                author: who.actor.to_owned(),
                verdict: verdict.to_owned(),
                body: comment.unwrap_or("").to_owned(),
                created_at: now,
            })
            .execute(conn)?;
        diesel::insert_into(audit_log::table)
            .values(AuditRow {
                id: db::new_id(),
                entity: "coe".into(),
                entity_id: id.to_owned(),
                coe_id: Some(id.to_owned()),
                actor: who.actor.to_owned(),
                action: format!("state:{}", next.as_str()),
                before: Some(json!({"state": state.as_str()}).to_string()),
                after: Some(json!({"state": next.as_str(), "comment": comment}).to_string()),
                at: now,
            })
            .execute(conn)?;
        let kind = match step {
            Step::Submit => crate::email::Kind::ReviewRequested,
            Step::Approve => crate::email::Kind::Approved,
            Step::RequestChanges => crate::email::Kind::ChangesRequested,
        };
        let severity = crate::domain::Severity::from_rank(row.severity)
            .map(|s| s.to_string())
            .unwrap_or_default();
        crate::services::reminders::review_step(
            conn,
            settings,
            emails,
            kind,
            &crate::services::reminders::CoeFacts {
                id,
                title: &row.title,
                owner: row.owner_email.as_deref(),
                reviewer: row.reviewer_email.as_deref(),
                severity: &severity,
                service: row.service.as_deref(),
                resolved_at: row.resolved_at,
            },
            who.email.unwrap_or(who.actor),
            comment,
            &step_id,
            now,
        )?;
        // Approved with every action already closed: it closes at once.
        if next == CoeState::Approved {
            actions::settle_coe(conn, id, who.actor, now)?;
        }
        Ok(())
    })
}
