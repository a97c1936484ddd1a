//! What "My work" lists, for a chat message: the moves that wait on the person
//! (reviews, verifications, work sent back) and their open actions, overdue first.

use diesel::QueryResult;

use crate::db::DbConnection;
use crate::services::coe::actions::{self, ActionFilter, ActionSort, ActionView};
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
    let mut list = Vec::new();
    let mut open_count = 0;
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
        let filter = ActionFilter {
            owner: Some(email.to_owned()),
            ..window
        };
        open_count += actions::count(conn, &filter, clock)?;
        list.extend(actions::page(
            conn,
            &filter,
            ActionSort::DaysOverdue,
            SHOWN,
            0,
            clock,
        )?);
    }
    list.truncate(SHOWN as usize);
    Ok(Mine {
        moves,
        actions: list,
        open_count,
    })
}
