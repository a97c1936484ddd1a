//! An approval stands only for the version of the COE its approver read: after any
//! change to the writeup or its actions, an approval of an earlier version is
//! withdrawn and its approver told (`review::step` refuses an approval of a version
//! that is not the current one).

use diesel::prelude::*;

use crate::db::models::CoeRow;
use crate::db::schema::coes;
use crate::db::{types, DbConnection};
use crate::domain::coe::CoeState;
use crate::services::audit::{self, Change, Subject};
use crate::services::outbound::notify::{self, CoeFacts};
use crate::services::Env;

/// Withdraws the standing first approval of COE `id` when it was given to a version
/// before the current one (a change to the writeup or its actions since): the COE is
/// approved only as both approvers read it. The approver is emailed and the
/// withdrawal is in the COE's history. Called after every change of a COE
/// (`coes::edit::finish_change`, `touch_in_review`). A leaf: the services that change
/// COEs and actions call it, and it calls none of them.
pub fn withdraw_stale_approval(
    conn: &mut DbConnection,
    id: &str,
    actor: &str,
    env: Env<'_>,
    now: chrono::NaiveDateTime,
) -> QueryResult<()> {
    let (approved_by, approved_version, version): (Option<String>, Option<i32>, i32) = coes::table
        .find(id)
        .select((coes::approved_by, coes::approved_version, coes::version))
        .first(conn)?;
    let Some(approver) = approved_by else {
        return Ok(());
    };
    if approved_version == Some(version) {
        return Ok(());
    }
    diesel::update(coes::table.find(id))
        .set((
            coes::approved_by.eq(None::<String>),
            coes::approved_version.eq(None::<i32>),
        ))
        .execute(conn)?;
    audit::record(
        conn,
        Change {
            subject: Subject::Coe(id),
            actor,
            action: "approval:withdrawn",
            before: Some(serde_json::json!({
                "approved_by": approver, "version": approved_version
            })),
            after: Some(serde_json::json!({ "approved_by": null, "version": version })),
        },
        now,
    )?;
    let row: CoeRow = coes::table
        .find(id)
        .select(CoeRow::as_select())
        .first(conn)?;
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    notify::approval_withdrawn(
        conn,
        env,
        &CoeFacts::of(&row, &severity),
        &approver,
        actor,
        approved_version.unwrap_or_default(),
        now,
    )
}

/// After a change to the actions of COE `id` (added, changed, closed, reopened,
/// deleted): while it is in review, the change is a new version of what the
/// reviewers read, and an approval of the one before is withdrawn.
pub fn touch_in_review(
    conn: &mut DbConnection,
    id: &str,
    actor: &str,
    env: Env<'_>,
    now: chrono::NaiveDateTime,
) -> QueryResult<()> {
    let bumped = diesel::update(
        coes::table
            .find(id)
            .filter(coes::state.eq(CoeState::InReview.as_str())),
    )
    .set((
        coes::version.eq(coes::version + 1),
        coes::updated_at.eq(now),
    ))
    .execute(conn)?;
    if bumped > 0 {
        withdraw_stale_approval(conn, id, actor, env, now)?;
    }
    Ok(())
}
