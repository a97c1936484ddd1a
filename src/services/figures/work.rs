//! The moves that wait on one person: what "My work" lists first, each with its link
//! and since when it waits. Nothing waits unseen: a review to do, a bar raiser's
//! review, a done action to verify, a COE sent back to its owner with changes asked,
//! an action sent back to its owner at verification.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;

use crate::db::schema::{audit_log, coes, corrective_actions, review_comments};
use crate::db::{types, DbConnection};
use crate::domain::action::{self, ActionState};
use crate::domain::coe::CoeState;
use crate::domain::Severity;

/// What kind of move waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// A COE in review that this person reviews and has not approved as it stands.
    Review,
    /// The same, as its bar raiser.
    BarRaiserReview,
    /// A done action of a COE this person reviews, to check against its success
    /// criteria (the COE's severity asks for it).
    Verify,
    /// A COE this person owns, sent back with changes asked.
    AnswerChanges,
    /// An action this person owns, sent back at verification.
    RedoAction,
    /// An action this person owns and marked done, waiting for the COE's reviewer to
    /// verify it (`by` is the reviewer): not their move, but not out of sight.
    AwaitVerification,
    /// A COE this person owns, in review, waiting for its reviewer's (or bar
    /// raiser's) approval (`by` is who it waits for).
    AwaitApproval,
    /// An action this person owns whose fix a drill is to prove (`said`: by when, and
    /// the alert's labels).
    RunDrill,
    /// A missed drill re-check of an action of a COE this person reviews: confirm the
    /// fix stands or reopen the action.
    DecideDrill,
}

/// One move that waits on the person.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    pub kind: MoveKind,
    pub coe_id: String,
    pub coe_title: String,
    pub severity: Severity,
    pub action_id: Option<String>,
    pub action_title: Option<String>,
    /// Who is waiting, or who asked (the COE's owner, the reviewer who sent it back);
    /// for what waits on others, whom it waits for.
    pub by: Option<String>,
    /// What they said (the reason an action was sent back, the changes asked).
    pub said: Option<String>,
    /// Since when it waits.
    #[serde(serialize_with = "crate::json::utc")]
    pub since: NaiveDateTime,
}

/// Most moves of each kind listed.
const SHOWN: i64 = 100;

/// `email`'s open actions (open or in progress), the overdue ones first (most days
/// overdue first), then the rest by due date: at most `limit` of each.
pub fn open_actions(
    conn: &mut DbConnection,
    email: &str,
    limit: i64,
    clock: crate::domain::Clock,
) -> QueryResult<Vec<crate::services::coe::actions::ActionView>> {
    use crate::services::coe::actions::{self, ActionFilter, ActionSort};
    let mut open = Vec::new();
    for window in [
        ActionFilter {
            overdue: Some(true),
            ..ActionFilter::default()
        },
        ActionFilter {
            due_from_today: true,
            ..ActionFilter::default()
        },
    ] {
        let mine = ActionFilter {
            owner: Some(email.to_owned()),
            ..window
        };
        open.extend(actions::page(
            conn,
            &mine,
            ActionSort::DaysOverdue,
            limit,
            0,
            clock,
        )?);
    }
    Ok(open)
}

/// Every move that waits on `me`, oldest first. `verify_from` is
/// `coe.verify_actions_from`; `dotless` is `auth.dotless_domains`.
pub fn moves(
    conn: &mut DbConnection,
    me: &str,
    verify_from: Severity,
    dotless: &[String],
) -> QueryResult<Vec<Move>> {
    let mut moves = Vec::new();
    reviews(conn, me, &mut moves)?;
    to_verify(conn, me, verify_from, dotless, &mut moves)?;
    sent_back(conn, me, &mut moves)?;
    refused(conn, me, &mut moves)?;
    drills(conn, me, dotless, &mut moves)?;
    moves.sort_by_key(|m| m.since);
    Ok(moves)
}

/// The drills that wait on `me`: those to run for the actions they own, and the
/// missed re-checks of the COEs they review that they may decide on (neither owner nor
/// completer: `services::coe::actions::drill`).
fn drills(
    conn: &mut DbConnection,
    me: &str,
    dotless: &[String],
    moves: &mut Vec<Move>,
) -> QueryResult<()> {
    use crate::db::schema::drill_rechecks;
    use crate::domain::drill::{labels_words, RecheckState};
    type Row = (
        String,
        String,
        String,
        String,
        i32,
        String,
        NaiveDate,
        String,
        NaiveDateTime,
    );
    let select = (
        corrective_actions::id,
        corrective_actions::title,
        coes::id,
        coes::title,
        coes::severity,
        drill_rechecks::labels,
        drill_rechecks::last_day,
        corrective_actions::owner_email,
        drill_rechecks::opened_at,
    );
    let to_run: Vec<Row> = drill_rechecks::table
        .inner_join(corrective_actions::table.inner_join(coes::table))
        .filter(corrective_actions::owner_email.eq(me))
        .filter(drill_rechecks::state.eq(RecheckState::Waiting.as_str()))
        .limit(SHOWN)
        .select(select)
        .load(conn)?;
    // The reviewer's, and an admin's where the reviewer may not decide
    // (`services::access::drill_deciders`, asked below).
    let is_admin: bool = crate::db::schema::people::table
        .find(me)
        .select(crate::db::schema::people::is_admin)
        .first(conn)
        .optional()?
        .unwrap_or(false);
    let mut missed = drill_rechecks::table
        .inner_join(corrective_actions::table.inner_join(coes::table))
        .filter(drill_rechecks::state.eq(RecheckState::Missed.as_str()))
        .select((select, coes::reviewer_email))
        .into_boxed();
    if !is_admin {
        missed = missed.filter(coes::reviewer_email.eq(me));
    }
    let to_decide: Vec<(Row, Option<String>)> = missed.limit(SHOWN).load(conn)?;
    let admins = if is_admin {
        vec![me.to_owned()]
    } else {
        Vec::new()
    };
    let mut decide = Vec::new();
    for (row, reviewer) in to_decide {
        let completed_by = crate::services::coe::actions::completed_by(conn, &row.0)?;
        let deciders = crate::services::access::drill_deciders(
            reviewer.as_deref(),
            &admins,
            &row.7,
            completed_by.as_deref(),
            dotless,
        );
        if deciders.iter().any(|d| d == me) {
            decide.push(row);
        }
    }
    for (kind, rows) in [
        (MoveKind::RunDrill, to_run),
        (MoveKind::DecideDrill, decide),
    ] {
        for (id, title, coe_id, coe_title, severity, labels, last_day, owner, since) in rows {
            let labels: std::collections::BTreeMap<String, String> =
                serde_json::from_str(&labels).unwrap_or_default();
            moves.push(Move {
                kind,
                coe_id,
                coe_title,
                severity: types::severity("coes.severity", severity)?,
                action_id: Some(id),
                action_title: Some(title),
                by: (kind == MoveKind::DecideDrill).then_some(owner),
                said: Some(format!("by {last_day}, carrying {}", labels_words(&labels))),
                since,
            });
        }
    }
    Ok(())
}

/// What `me` did and now waits on someone else, oldest first: their done actions
/// waiting for the reviewer's verification, their COEs in review waiting for an
/// approval. "My work" keeps them in sight, each with whom it waits for and since when.
pub fn waiting_on_others(
    conn: &mut DbConnection,
    me: &str,
    verify_from: Severity,
    dotless: &[String],
) -> QueryResult<Vec<Move>> {
    let mut waiting: Vec<Move> =
        waiting_verification(conn, Whose::Owner(me), verify_from, dotless, SHOWN)?
            .into_iter()
            .map(|(reviewer, m)| Move {
                kind: MoveKind::AwaitVerification,
                by: Some(reviewer),
                ..m
            })
            .collect();
    in_review(conn, me, &mut waiting)?;
    waiting.sort_by_key(|m| m.since);
    Ok(waiting)
}

/// COEs `me` owns that are in review, each waiting for whoever has not approved it
/// as it stands (the reviewer first, then the bar raiser).
fn in_review(conn: &mut DbConnection, me: &str, waiting: &mut Vec<Move>) -> QueryResult<()> {
    let rows: Vec<CoeLine> = coes::table
        .filter(coes::state.eq(CoeState::InReview.as_str()))
        .filter(coes::owner_email.eq(me))
        .order(coes::updated_at.asc())
        .limit(SHOWN)
        .select((
            coes::id,
            coes::title,
            coes::severity,
            coes::reviewer_email,
            coes::bar_raiser_email,
            coes::approved_by,
            coes::approved_version,
            coes::version,
            coes::updated_at,
        ))
        .load(conn)?;
    for (id, title, severity, reviewer, bar_raiser, approved_by, approved_version, version, at) in
        rows
    {
        let approved = |who: &Option<String>| {
            who.is_some() && approved_by == *who && approved_version == Some(version)
        };
        let by = if !approved(&reviewer) {
            reviewer
        } else if bar_raiser.is_some() && !approved(&bar_raiser) {
            bar_raiser
        } else {
            continue;
        };
        let submitted = submitted_at(conn, &id)?;
        waiting.push(Move {
            kind: MoveKind::AwaitApproval,
            coe_id: id,
            coe_title: title,
            severity: types::severity("coes.severity", severity)?,
            action_id: None,
            action_title: None,
            by,
            said: None,
            since: submitted.unwrap_or(at),
        });
    }
    Ok(())
}

type CoeLine = (
    String,
    String,
    i32,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i32>,
    i32,
    NaiveDateTime,
);

/// COEs in review this person reviews or bar-raises and has not approved as they stand.
fn reviews(conn: &mut DbConnection, me: &str, moves: &mut Vec<Move>) -> QueryResult<()> {
    let rows: Vec<CoeLine> = coes::table
        .filter(coes::state.eq(CoeState::InReview.as_str()))
        .filter(
            coes::reviewer_email
                .eq(me)
                .or(coes::bar_raiser_email.eq(me)),
        )
        .order(coes::updated_at.asc())
        .limit(SHOWN)
        .select((
            coes::id,
            coes::title,
            coes::severity,
            coes::owner_email,
            coes::reviewer_email,
            coes::approved_by,
            coes::approved_version,
            coes::version,
            coes::updated_at,
        ))
        .load(conn)?;
    for (id, title, severity, owner, reviewer, approved_by, approved_version, version, updated) in
        rows
    {
        let approved_it = approved_by.as_deref() == Some(me) && approved_version == Some(version);
        if approved_it {
            continue;
        }
        let submitted = submitted_at(conn, &id)?;
        moves.push(Move {
            kind: if reviewer.as_deref() == Some(me) {
                MoveKind::Review
            } else {
                MoveKind::BarRaiserReview
            },
            coe_id: id,
            coe_title: title,
            severity: types::severity("coes.severity", severity)?,
            action_id: None,
            action_title: None,
            by: owner,
            said: None,
            since: submitted.unwrap_or(updated),
        });
    }
    Ok(())
}

/// When COE `id`'s review round under way was submitted.
fn submitted_at(conn: &mut DbConnection, id: &str) -> QueryResult<Option<NaiveDateTime>> {
    review_comments::table
        .filter(review_comments::coe_id.eq(id))
        .filter(review_comments::verdict.eq("submitted"))
        .select(diesel::dsl::max(review_comments::created_at))
        .first(conn)
}

/// A done action: its id, title, owner and closing time; its COE's id, title,
/// severity and reviewer.
type DoneLine = (
    String,
    String,
    String,
    Option<NaiveDateTime>,
    String,
    String,
    i32,
    String,
);

/// Done actions waiting for this person's verification: of COEs they review whose
/// severity asks for it, not verified, and not their own work.
fn to_verify(
    conn: &mut DbConnection,
    me: &str,
    verify_from: Severity,
    dotless: &[String],
    moves: &mut Vec<Move>,
) -> QueryResult<()> {
    moves.extend(
        waiting_verification(conn, Whose::Reviewer(me), verify_from, dotless, SHOWN)?
            .into_iter()
            .map(|(_, m)| m),
    );
    Ok(())
}

/// Whose done actions waiting for verification are read.
#[derive(Debug, Clone, Copy)]
pub enum Whose<'a> {
    /// Everyone's (the reviewers' daily emails).
    Everyone,
    /// Those this reviewer is to verify.
    Reviewer(&'a str),
    /// Those this person owns (what they wait for).
    Owner(&'a str),
}

/// Done actions waiting for their COE's reviewer to verify them (the COE's severity
/// asks for it; the reviewer neither owns nor completed the action), oldest done
/// first, with their reviewer. What "My work" lists (to the reviewer, and to the
/// owner as waiting on someone else) and the daily email to each reviewer
/// (`reminders`) says.
pub fn waiting_verification(
    conn: &mut DbConnection,
    whose: Whose<'_>,
    verify_from: Severity,
    dotless: &[String],
    limit: i64,
) -> QueryResult<Vec<(String, Move)>> {
    let mut query = corrective_actions::table
        .inner_join(coes::table)
        .filter(coes::reviewer_email.is_not_null())
        .filter(coes::severity.le(verify_from.rank()))
        .filter(coes::state.ne(CoeState::Merged.as_str()))
        .filter(corrective_actions::state.eq(ActionState::Done.as_str()))
        .filter(corrective_actions::verified_at.is_null())
        .into_boxed();
    match whose {
        Whose::Everyone => {}
        Whose::Reviewer(reviewer) => {
            query = query.filter(coes::reviewer_email.eq(reviewer.to_owned()));
        }
        Whose::Owner(owner) => {
            query = query.filter(corrective_actions::owner_email.eq(owner.to_owned()));
        }
    }
    let rows: Vec<DoneLine> = query
        .order((
            corrective_actions::closed_at.asc(),
            corrective_actions::id.asc(),
        ))
        .limit(limit)
        .select((
            corrective_actions::id,
            corrective_actions::title,
            corrective_actions::owner_email,
            corrective_actions::closed_at,
            coes::id,
            coes::title,
            coes::severity,
            coes::reviewer_email.assume_not_null(),
        ))
        .load(conn)?;
    let mut waiting = Vec::new();
    for (id, title, owner, closed, coe_id, coe_title, severity, reviewer) in rows {
        let completed_by = crate::services::coe::actions::completed_by(conn, &id)?;
        if action::may_verify(&reviewer, &owner, completed_by.as_deref(), dotless).is_err() {
            continue;
        }
        waiting.push((
            reviewer,
            Move {
                kind: MoveKind::Verify,
                coe_id,
                coe_title,
                severity: types::severity("coes.severity", severity)?,
                action_id: Some(id),
                action_title: Some(title),
                by: Some(owner),
                said: None,
                since: closed.unwrap_or_default(),
            },
        ));
    }
    Ok(waiting)
}

/// Drafts this person owns whose last review step sent them back.
fn sent_back(conn: &mut DbConnection, me: &str, moves: &mut Vec<Move>) -> QueryResult<()> {
    let drafts: Vec<(String, String, i32)> = coes::table
        .filter(coes::owner_email.eq(me))
        .filter(coes::state.eq(CoeState::Draft.as_str()))
        .limit(SHOWN)
        .select((coes::id, coes::title, coes::severity))
        .load(conn)?;
    for (id, title, severity) in drafts {
        let last: Option<(String, String, String, NaiveDateTime)> = review_comments::table
            .filter(review_comments::coe_id.eq(&id))
            .filter(review_comments::verdict.ne("comment"))
            .order((
                review_comments::created_at.desc(),
                review_comments::id.desc(),
            ))
            .select((
                review_comments::verdict,
                review_comments::author,
                review_comments::body,
                review_comments::created_at,
            ))
            .first(conn)
            .optional()?;
        if let Some((verdict, author, body, at)) = last {
            if verdict == "changes_requested" {
                moves.push(Move {
                    kind: MoveKind::AnswerChanges,
                    coe_id: id,
                    coe_title: title,
                    severity: types::severity("coes.severity", severity)?,
                    action_id: None,
                    action_title: None,
                    by: Some(author),
                    said: Some(body).filter(|b| !b.is_empty()),
                    since: at,
                });
            }
        }
    }
    Ok(())
}

/// Actions this person owns that are in progress because their verification refused
/// them (their last step), with the reason.
fn refused(conn: &mut DbConnection, me: &str, moves: &mut Vec<Move>) -> QueryResult<()> {
    let mine: Vec<(String, String, String, String, i32)> = corrective_actions::table
        .inner_join(coes::table)
        .filter(corrective_actions::owner_email.eq(me))
        .filter(corrective_actions::state.eq(ActionState::InProgress.as_str()))
        .limit(SHOWN)
        .select((
            corrective_actions::id,
            corrective_actions::title,
            coes::id,
            coes::title,
            coes::severity,
        ))
        .load(conn)?;
    for (id, title, coe_id, coe_title, severity) in mine {
        let last: Option<(String, String, Option<String>, NaiveDateTime)> = audit_log::table
            .filter(audit_log::entity.eq("action"))
            .filter(audit_log::entity_id.eq(&id))
            .filter(audit_log::action.eq_any([
                "action:start",
                "action:complete",
                "action:reopen",
                "action:refuse",
                "action:verify",
            ]))
            .order((audit_log::at.desc(), audit_log::id.desc()))
            .select((
                audit_log::action,
                audit_log::actor,
                audit_log::after,
                audit_log::at,
            ))
            .first(conn)
            .optional()?;
        if let Some((step, actor, after, at)) = last {
            if step == "action:refuse" {
                let reason = after
                    .and_then(|a| serde_json::from_str::<serde_json::Value>(&a).ok())
                    .and_then(|a| a["reason"].as_str().map(str::to_owned));
                moves.push(Move {
                    kind: MoveKind::RedoAction,
                    coe_id,
                    coe_title,
                    severity: types::severity("coes.severity", severity)?,
                    action_id: Some(id),
                    action_title: Some(title),
                    by: Some(actor),
                    said: reason,
                    since: at,
                });
            }
        }
    }
    Ok(())
}
