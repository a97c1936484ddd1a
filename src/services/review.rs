//! The review step: a draft is submitted when it is complete, a reviewer who is not
//! its owner approves it or sends it back with comments. Who may take which step from
//! which state is `domain::coe::review`; this module loads the facts, checks the
//! writeup's completeness on submit, and records the step.

use crate::services::Env;
use diesel::prelude::*;

use crate::db::models::{CoeRow, ReviewCommentRow};
use crate::db::schema::{coes, review_comments};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::coe::{self, CoeState, ReviewFacts, ReviewRefusal};
use crate::email::Kind;
use crate::services::coes::{self as coe_service, CoeError};
use crate::services::notify::{self, CoeFacts};
use crate::services::{access, lifecycle};

pub use crate::domain::coe::MAX_COMMENT_BYTES;

pub use crate::domain::coe::ReviewStep as Step;

/// Who takes a review step: submitting needs the right to change the COE
/// (`services::access`), approving and sending back are the reviewer's.
pub use crate::services::access::Editor as Reviewer;

impl From<ReviewRefusal> for CoeError {
    fn from(r: ReviewRefusal) -> Self {
        match r {
            ReviewRefusal::WrongState(m) => CoeError::Conflict(m),
            ReviewRefusal::NotReviewer(m) => CoeError::Forbidden(m),
            ReviewRefusal::Invalid(problems) => CoeError::Invalid(problems),
        }
    }
}

/// Takes one review step in one transaction; returns nothing, the caller reloads.
pub fn step(
    conn: &mut DbConnection,
    id: &str,
    step: Step,
    comment: Option<&str>,
    who: &Reviewer<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        locks::lock_coe(conn, id)?;
        let row: CoeRow = coes::table
            .find(id)
            .select(CoeRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| CoeError::NotFound(id.to_owned()))?;
        if step == Step::Submit {
            access::coe(conn, id, who)?;
            // The submitter may not approve the round: it must be a person who can be
            // held to it, not a token for nobody.
            if !who.principal.contains('@') {
                return Err(CoeError::Forbidden(
                    "a token that stands for no person cannot submit a COE for review: use a \
                     token of your own (one that names you) or the COE's page"
                        .into(),
                ));
            }
        }
        let state: CoeState = types::read("coes.state", &row.state)?;
        let comment = comment.map(str::trim).filter(|c| !c.is_empty());
        if comment.is_some_and(|c| c.len() > MAX_COMMENT_BYTES) {
            return Err(CoeError::Invalid(vec![(
                "comment".into(),
                format!("must be at most {MAX_COMMENT_BYTES} bytes"),
            )]));
        }
        // The reviewer's comments still waiting for an answer: a submit lists them
        // with what the writeup lacks; a request for changes may stand on them alone.
        let waiting = coe_service::unanswered(conn, id)?;
        let template = coe_service::template_of(&row);
        let title_of = |key: &str| {
            template
                .section(key)
                .map_or_else(|| key.to_owned(), |s| s.title.clone())
        };
        let gaps = if step == Step::Submit {
            let doc = coe_service::load(conn, id, env.settings)?;
            doc.completeness
                .missing
                .into_iter()
                .map(|f| (f.at, f.problem))
                .chain(waiting.iter().map(|c| {
                    (
                        c.section.clone(),
                        format!(
                            "the comment by {} waits for an answer: “{}”",
                            c.author, c.body
                        ),
                    )
                }))
                .collect()
        } else {
            Vec::new()
        };
        let next = coe::review(
            step,
            &ReviewFacts {
                state,
                owner: row.owner_email.as_deref(),
                reviewer: row.reviewer_email.as_deref(),
                // The person who answers for the step (a token made by someone else
                // for them answers as its maker; a token for nobody, as nobody).
                by: who.email.filter(|e| *e == who.principal),
                submitted_by: row.submitted_by.as_deref(),
                reviewer_named_by: row.reviewer_named_by.as_deref(),
                has_comment: comment.is_some()
                    || (step == Step::RequestChanges && !waiting.is_empty()),
            },
            gaps,
        )?;
        let now = db::now();
        lifecycle::move_to(conn, id, state, next, who.actor, comment, now)?;
        if step == Step::Submit {
            diesel::update(coes::table.find(id))
                .set(coes::submitted_by.eq(who.principal))
                .execute(conn)?;
        }
        let step_id = db::new_id();
        diesel::insert_into(review_comments::table)
            .values(ReviewCommentRow {
                id: step_id.clone(),
                coe_id: id.to_owned(),
                author: who.actor.to_owned(),
                verdict: step.verdict().to_owned(),
                body: comment.unwrap_or("").to_owned(),
                created_at: now,
            })
            .execute(conn)?;
        let kind = match step {
            Step::Submit => Kind::ReviewRequested,
            Step::Approve => Kind::Approved,
            Step::RequestChanges => Kind::ChangesRequested,
        };
        // Sent back: the email holds the section comments too, each under its section.
        let mut said = comment.unwrap_or_default().to_owned();
        if step == Step::RequestChanges {
            for c in &waiting {
                said.push_str(&format!("\n\nOn {}: {}", title_of(&c.section), c.body));
            }
        }
        let said = said.trim().to_owned();
        let severity = types::severity("coes.severity", row.severity)?.to_string();
        notify::review_step(
            conn,
            env.settings,
            env.emails,
            kind,
            &CoeFacts::of(&row, &severity),
            who.email.unwrap_or(who.actor),
            Some(said.as_str()).filter(|s| !s.is_empty()),
            &step_id,
            now,
        )?;
        // Approved with every action already closed: it closes at once.
        if next == CoeState::Approved {
            lifecycle::settle(
                conn,
                id,
                env.settings.coe.verify_actions_from,
                who.actor,
                now,
            )?;
        }
        Ok(())
    })
}
