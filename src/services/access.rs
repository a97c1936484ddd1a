//! Who may change what. One rule per kind of thing, called by the services inside the
//! write transaction that makes the change, so the answer holds for the change itself.
//!
//! - A COE: its owner, its reviewer, and admins; a COE nobody owns yet, any member
//!   (someone has to take it).
//! - A corrective action: its owner, and whoever may change its COE.

use diesel::prelude::*;

use crate::db::schema::{coes, corrective_actions};
use crate::db::DbConnection;

/// The person (or token) asking for a change.
#[derive(Debug, Clone, Copy)]
pub struct Editor<'a> {
    /// How the change is recorded in the audit log.
    pub actor: &'a str,
    /// The person's email, when the token names one.
    pub email: Option<&'a str>,
    /// Who answers for the change in the review (naming a reviewer, submitting,
    /// deciding): the signed-in person, the person of a token of their own, or
    /// whoever made a token for someone else (`tokens::Caller::principal`).
    pub principal: &'a str,
    /// Admins may change anything.
    pub is_admin: bool,
}

/// An `Editor` that owns what it names, to move into the closure that runs the change
/// on a pooled connection: a token's caller (`tokens::Caller::acting`) and a signed-in
/// person (`auth::SessionPerson::acting`) each become one, and nothing else builds an
/// `Editor` by hand.
#[derive(Debug, Clone)]
pub struct Acting {
    pub actor: String,
    pub email: Option<String>,
    pub principal: String,
    pub is_admin: bool,
}

impl Acting {
    /// A person acting as themselves (signed in to the pages; the demo's people).
    pub fn person(email: &str, is_admin: bool) -> Acting {
        Acting {
            actor: email.to_owned(),
            email: Some(email.to_owned()),
            principal: email.to_owned(),
            is_admin,
        }
    }

    pub fn editor(&self) -> Editor<'_> {
        Editor {
            actor: &self.actor,
            email: self.email.as_deref(),
            principal: &self.principal,
            is_admin: self.is_admin,
        }
    }
}

/// Why a change is refused.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("no such {0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// Whether `who` may change COE `coe_id`.
pub fn coe(conn: &mut DbConnection, coe_id: &str, who: &Editor<'_>) -> Result<(), AccessError> {
    let (owner, reviewer): (Option<String>, Option<String>) = coes::table
        .find(coe_id)
        .select((coes::owner_email, coes::reviewer_email))
        .first(conn)
        .optional()?
        .ok_or_else(|| AccessError::NotFound(coe_id.to_owned()))?;
    if who.is_admin || owner.is_none() {
        return Ok(());
    }
    let allowed = who
        .email
        .is_some_and(|e| Some(e) == owner.as_deref() || Some(e) == reviewer.as_deref());
    if allowed {
        return Ok(());
    }
    Err(AccessError::Forbidden(format!(
        "only the COE's owner ({}) or reviewer ({}) may change it",
        owner.as_deref().unwrap_or("none"),
        reviewer.as_deref().unwrap_or("none")
    )))
}

/// Whether `who` may change corrective action `action_id`.
pub fn action(
    conn: &mut DbConnection,
    action_id: &str,
    who: &Editor<'_>,
) -> Result<(), AccessError> {
    let (owner, coe_id): (String, String) = corrective_actions::table
        .find(action_id)
        .select((corrective_actions::owner_email, corrective_actions::coe_id))
        .first(conn)
        .optional()?
        .ok_or_else(|| AccessError::NotFound(action_id.to_owned()))?;
    if who.is_admin || who.email == Some(owner.as_str()) {
        return Ok(());
    }
    coe(conn, &coe_id, who).map_err(|e| match e {
        AccessError::Forbidden(m) => AccessError::Forbidden(format!(
            "only the action's owner ({owner}) or {}",
            m.trim_start_matches("only ")
        )),
        other => other,
    })
}
