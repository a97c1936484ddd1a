//! The COE's life cycle applied to the database: the only code that writes
//! `coes.state`. The rules themselves are pure, in `domain::coe` (`review`, `settle`);
//! this module makes a decided move durable with its version bump and audit record.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::{coes, corrective_actions};
use crate::db::{types, DbConnection};
use crate::domain::action::ActionState;
use crate::domain::coe::{self, CoeState};
use crate::domain::Severity;
use crate::services::outbound::{self, Fact};

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
    let moved = Fact::CoeMoved {
        coe_id,
        from,
        to,
        comment,
    };
    outbound::noted(conn, actor, moved, now)
}

/// Ends draft `coe_id` merged into COE `into` (`coes::merge` moved everything over):
/// the state, the COE it went into, a new version, and the audit record.
pub fn merge(
    conn: &mut DbConnection,
    coe_id: &str,
    into: &str,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    diesel::update(coes::table.find(coe_id))
        .set((
            coes::state.eq(CoeState::Merged.as_str()),
            coes::merged_into.eq(into),
            coes::version.eq(coes::version + 1),
            coes::updated_at.eq(now),
        ))
        .execute(conn)?;
    outbound::noted(conn, actor, Fact::CoeMerged { coe_id, into }, now)
}

/// Applies the closing rule (`domain::coe::settle`) after a change to the COE's
/// actions or its approval: a COE at or above `verify_from` (`coe.verify_actions_from`)
/// also waits for its reviewer to verify each done action. The caller holds the
/// COE's row lock.
pub fn settle(
    conn: &mut DbConnection,
    coe_id: &str,
    verify_from: Severity,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let (state, severity): (String, i32) = coes::table
        .find(coe_id)
        .select((coes::state, coes::severity))
        .first(conn)?;
    let state: CoeState = types::read("coes.state", &state)?;
    let severity = types::severity("coes.severity", severity)?;
    let active: i64 = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(coe_id))
        .filter(crate::db::rules::action_is_active())
        .count()
        .get_result(conn)?;
    let unverified: i64 = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(coe_id))
        .filter(corrective_actions::state.eq(ActionState::Done.as_str()))
        .filter(corrective_actions::verified_at.is_null())
        .count()
        .get_result(conn)?;
    let left = coe::still_to_close(
        usize::try_from(active).unwrap_or(usize::MAX),
        usize::try_from(unverified).unwrap_or(usize::MAX),
        coe::needs_verification(severity, verify_from),
    );
    match coe::settle(state, left) {
        Some(next) => move_to(conn, coe_id, state, next, actor, None, now),
        None => Ok(()),
    }
}
