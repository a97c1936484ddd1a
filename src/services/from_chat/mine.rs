//! What "My work" lists, for a chat message: the moves that wait on the person
//! (reviews, verifications, work sent back) and their open actions, overdue first.

use diesel::QueryResult;

use crate::db::DbConnection;
use crate::domain::action::ActionState;
use crate::services::coe::actions::{self, ActionFilter, ActionView};
use crate::services::figures::work::{self, Move};
use crate::services::Env;

/// The person's moves and open actions.
#[derive(Debug, Clone)]
pub struct Mine {
    pub moves: Vec<Move>,
    /// Open or in progress, overdue first, then by due date.
    pub actions: Vec<ActionView>,
    /// How many open actions they have in all (more than listed, perhaps).
    pub open_count: i64,
}

/// Most of each listed.
const SHOWN: i64 = 20;

/// What waits on `email`.
pub fn mine(conn: &mut DbConnection, env: Env<'_>, email: &str) -> QueryResult<Mine> {
    let settings = env.settings;
    let clock = settings.clock();
    let moves = work::moves(
        conn,
        email,
        settings.coe.verify_actions_from,
        &settings.auth.dotless_domains,
    )?;
    let mut actions = work::open_actions(conn, email, SHOWN, clock)?;
    actions.truncate(usize::try_from(SHOWN).unwrap_or(usize::MAX));
    let mut open_count = 0;
    for state in [ActionState::Open, ActionState::InProgress] {
        let filter = ActionFilter {
            owner: Some(email.to_owned()),
            state: Some(state),
            ..ActionFilter::default()
        };
        open_count += actions::count(conn, &filter, clock)?;
    }
    Ok(Mine {
        moves,
        actions,
        open_count,
    })
}
