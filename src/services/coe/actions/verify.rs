//! The verification of a done action by its COE's reviewer, against its success
//! criteria: verified, or sent back to in progress with the reason. Whoever owns or
//! completed it never verifies it (`domain::action::may_verify`).

use diesel::prelude::*;

use super::change::{clean_text, load_locked, MAX_NOTE_BYTES};
use super::{invalid, ActionError};
use crate::db::schema::{coes, corrective_actions};
use crate::db::types;
use crate::db::{self, DbConnection};
use crate::domain::action::ActionState;
use crate::services::access::{self, Editor};
use crate::services::coe::lifecycle;
use crate::services::outbound::{self, ActionEvent};
use crate::services::Env;

/// The COE's reviewer's verdict on a done action: verified, or not (with the reason:
/// it goes back to in progress).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyInput {
    pub verified: Option<bool>,
    /// Why it is not verified: required when `verified` is false.
    pub reason: Option<String>,
}

/// The COE's reviewer verifies done action `id` against its success criteria, or
/// refuses it (back to in progress, with the reason). Audited, and the action's
/// owner is emailed; a COE that waited only for this closes.
pub fn verify(
    conn: &mut DbConnection,
    id: &str,
    input: &VerifyInput,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), ActionError> {
    let Some(verified) = input.verified else {
        return Err(invalid(
            "verified",
            "say whether it is verified: true or false",
        ));
    };
    let reason = clean_text("reason", input.reason.as_deref(), MAX_NOTE_BYTES)?;
    if !verified && reason.is_none() {
        return Err(invalid(
            "reason",
            "say why it is not verified: the owner reads it",
        ));
    }
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let (coe_title, reviewer): (String, Option<String>) = coes::table
            .find(&row.coe_id)
            .select((coes::title, coes::reviewer_email))
            .first(conn)?;
        // The reviewer as a person, as for approving: a token an admin made for
        // them answers as the admin, and verifies nothing.
        let completed_by = super::completed_by(conn, id)?;
        let by = access::verify_action(
            who,
            reviewer.as_deref(),
            &row.owner_email,
            completed_by.as_deref(),
            &env.settings.auth.dotless_domains,
        )?;
        let from: ActionState = types::read("corrective_actions.state", &row.state)?;
        if from != ActionState::Done {
            return Err(ActionError::Conflict(format!(
                "the action is {}: only a done action is verified",
                from.as_str().replace('_', " ")
            )));
        }
        let now = db::now();
        let actor = who.actor;
        if verified {
            row.verified_at = Some(now);
            row.verified_by = Some(by.to_owned());
        } else {
            row.state = ActionState::InProgress.as_str().to_owned();
            row.closed_at = None;
            (row.verified_at, row.verified_by) = (None, None);
        }
        row.updated_at = now;
        diesel::update(corrective_actions::table.find(id))
            .set(&row)
            .execute(conn)?;
        let verdict = ActionEvent::Verified {
            action: &row,
            coe_title: &coe_title,
            from,
            reason: reason.as_deref(),
        };
        outbound::happened(conn, env, actor, verdict, now)?;
        lifecycle::settle(
            conn,
            &row.coe_id,
            env.settings.coe.verify_actions_from,
            actor,
            now,
        )?;
        Ok(())
    })
}
