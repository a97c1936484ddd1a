//! A reviewer's comments on the sections of a COE in review, and the owner's answers.
//!
//! The reviewer reads the COE and attaches comments to its sections while it is in
//! review; sending it back (request changes) may then go without a general comment.
//! Whoever may change the COE answers each comment in words while it is being
//! changed, and it cannot go back to review while a comment waits for its answer
//! (`unanswered`, listed by the submit with what else is missing). Comments are not
//! part of the writeup: they do not bump its version, so no open form goes stale.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{child_of_coe, load_row, record_change, template_of, CoeError};
use crate::db::schema::{coes, section_comments};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::coe::CoeState;
use crate::domain::coe::MAX_COMMENT_BYTES;
use crate::services::access::{self, Editor};

/// A comment on one section, with its answer once given.
#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = section_comments)]
pub struct SectionComment {
    pub id: String,
    #[serde(skip)]
    pub coe_id: String,
    /// The key of the section it is about (`impact`, `five_whys`, …).
    pub section: String,
    pub author: String,
    pub body: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    /// The owner's answer, in words; `null` while it waits for one.
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub answered_at: Option<NaiveDateTime>,
}

/// A comment as the reviewer writes it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentInput {
    /// The key of the section it is about.
    pub section: String,
    pub body: String,
}

/// An answer to a comment.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerInput {
    pub answer: String,
}

/// `text` trimmed, when it is some text no longer than a review comment may be.
fn words_of(field: &str, text: &str) -> Result<String, CoeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(CoeError::invalid(field, "must not be empty"));
    }
    if text.len() > MAX_COMMENT_BYTES {
        return Err(CoeError::invalid(
            field,
            format!("must be at most {MAX_COMMENT_BYTES} bytes"),
        ));
    }
    Ok(text.to_owned())
}

/// Every comment on COE `id`, oldest first.
pub fn of_coe(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<SectionComment>> {
    section_comments::table
        .filter(section_comments::coe_id.eq(id))
        .order((
            section_comments::created_at.asc(),
            section_comments::id.asc(),
        ))
        .select(SectionComment::as_select())
        .load(conn)
}

/// The comments on COE `id` that wait for an answer, oldest first.
pub fn unanswered(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<SectionComment>> {
    Ok(of_coe(conn, id)?
        .into_iter()
        .filter(|c| c.answer.is_none())
        .collect())
}

/// Adds the reviewer's comment on a section of COE `id`, in review; returns its id.
pub fn add_comment(
    conn: &mut DbConnection,
    id: &str,
    input: &CommentInput,
    who: &Editor<'_>,
) -> Result<String, CoeError> {
    db::write_transaction(conn, |conn| {
        locks::lock_coe(conn, id)?;
        let row = load_row(conn, id)?;
        let state: CoeState = types::read("coes.state", &row.state)?;
        if state != CoeState::InReview {
            return Err(CoeError::Conflict(format!(
                "the COE is {}: comments are made on a COE in review",
                state.as_str().replace('_', " ")
            )));
        }
        let bar_raiser: Option<String> = coes::table
            .find(id)
            .select(coes::bar_raiser_email)
            .first(conn)?;
        access::comment_on_sections(who, row.reviewer_email.as_deref(), bar_raiser.as_deref())?;
        let template = template_of(&row);
        if template.section(&input.section).is_none() {
            return Err(CoeError::invalid(
                "section",
                format!(
                    "no section `{}` in this COE's template; its sections are: {}",
                    input.section,
                    template.keys()
                ),
            ));
        }
        let body = words_of("body", &input.body)?;
        let (comment_id, now) = (db::new_id(), db::now());
        diesel::insert_into(section_comments::table)
            .values((
                section_comments::id.eq(&comment_id),
                section_comments::coe_id.eq(id),
                section_comments::section.eq(&input.section),
                section_comments::author.eq(who.actor),
                section_comments::body.eq(&body),
                section_comments::created_at.eq(now),
            ))
            .execute(conn)?;
        record_change(
            conn,
            id,
            who.actor,
            &format!("comment:{}", input.section),
            None,
            Some(json!({"id": comment_id, "body": body})),
            now,
        )?;
        Ok(comment_id)
    })
}

/// Answers comment `comment_id` on COE `id` (again, replacing the answer), by someone
/// who may change the COE while it is being changed.
pub fn answer_comment(
    conn: &mut DbConnection,
    id: &str,
    comment_id: &str,
    input: &AnswerInput,
    who: &Editor<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        locks::lock_coe(conn, id)?;
        access::coe(conn, id, who)?;
        let row = load_row(conn, id)?;
        let comment: SectionComment = child_of_coe!(
            conn,
            section_comments,
            SectionComment::as_select(),
            id,
            comment_id,
            "comments"
        )?;
        access::answer_comment(who, &comment.author)?;
        let state: CoeState = types::read("coes.state", &row.state)?;
        if !state.is_editable() {
            return Err(CoeError::NotEditable { state });
        }
        let answer = words_of("answer", &input.answer)?;
        let now = db::now();
        diesel::update(section_comments::table.find(comment_id))
            .set((
                section_comments::answer.eq(&answer),
                section_comments::answered_by.eq(who.actor),
                section_comments::answered_at.eq(now),
            ))
            .execute(conn)?;
        record_change(
            conn,
            id,
            who.actor,
            &format!("answer:{}", comment.section),
            comment
                .answer
                .map(|a| json!({"id": comment_id, "answer": a})),
            Some(json!({"id": comment_id, "answer": answer})),
            now,
        )?;
        Ok(())
    })
}
