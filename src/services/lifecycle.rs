//! The COE's life cycle applied to the database: the only code that writes
//! `coes.state`. The rules themselves are pure, in `domain::coe` (`review`, `settle`);
//! this module makes a decided move durable with its version bump and audit record.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use crate::db::schema::{coes, corrective_actions};
use crate::db::{types, DbConnection};
use crate::domain::coe::{self, CoeState};
use crate::services::audit::{self, Change, Subject};

/// Moves COE `coe_id` from `from` to `to`: the state, a new version, and the audit
/// record (`state:<to>`, with the comment when a review step gave one).
pub fn move_to(
    conn: &mut DbConnection,
    coe_id: &str,
    from: CoeState,
    to: CoeState,
    actor: &str,
    comment: Option<&str>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    diesel::update(coes::table.find(coe_id))
        .set((
            coes::state.eq(to.as_str()),
            coes::version.eq(coes::version + 1),
            coes::updated_at.eq(now),
        ))
        .execute(conn)?;
    let action = format!("state:{}", to.as_str());
    audit::record(
        conn,
        Change {
            subject: Subject::Coe(coe_id),
            actor,
            action: &action,
            before: Some(json!({ "state": from.as_str() })),
            after: Some(json!({ "state": to.as_str(), "comment": comment })),
        },
        now,
    )
}

/// Applies the closing rule (`domain::coe::settle`) after a change to the COE's
/// actions or its approval. The caller holds the COE's row lock.
pub fn settle(
    conn: &mut DbConnection,
    coe_id: &str,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let state: String = coes::table.find(coe_id).select(coes::state).first(conn)?;
    let state: CoeState = types::read("coes.state", &state)?;
    let active: i64 = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(coe_id))
        .filter(crate::db::rules::action_is_active())
        .count()
        .get_result(conn)?;
    match coe::settle(state, usize::try_from(active).unwrap_or(usize::MAX)) {
        Some(next) => move_to(conn, coe_id, state, next, actor, None, now),
        None => Ok(()),
    }
}
