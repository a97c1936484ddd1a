//! What waits in the queue, the three tables side by side: one view for the admin
//! page and the API over email, chat and tracker jobs alike.

use chrono::NaiveDateTime;
use diesel::dsl::{count_star, min};
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Queue, FAILED, PENDING, SENDING};
use crate::db::schema::{chat_messages, outbox_emails, tracker_jobs};
use crate::db::DbConnection;

/// An email held after a restore (`outbox::restored`): the one state only email has.
const HELD: &str = "held";

/// What waits in one table of the queue at a moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Waiting {
    /// `email`, `chat` or `tracker`.
    pub queue: String,
    /// Due now or later, not yet claimed.
    pub pending: i64,
    /// Claimed by a replica and being sent.
    pub sending: i64,
    /// Of those being sent, the ones whose claim no longer holds: the replica
    /// stopped; the next pass of any replica takes them again.
    pub stranded: i64,
    /// Given up on: the other side refused them, or the attempts ran out.
    pub failed: i64,
    /// Held after a restore, waiting for an admin (email only).
    pub held: i64,
    /// When the oldest row still to be sent (pending or being sent) was made.
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub oldest: Option<NaiveDateTime>,
}

/// Counts table `$t`'s rows still to be sent or given up on (on the index of
/// `(state, next_attempt_at)`: the sent rows are not read).
macro_rules! waiting_in {
    ($conn:expr, $t:ident, $queue:expr, $now:expr, $silent:expr) => {{
        let mut w = Waiting {
            queue: $queue.name().to_owned(),
            ..Waiting::default()
        };
        let by_state: Vec<(String, i64)> = $t::table
            .filter($t::state.eq_any([PENDING, SENDING, FAILED, HELD]))
            .group_by($t::state)
            .select(($t::state, count_star()))
            .load($conn)?;
        for (state, n) in by_state {
            match state.as_str() {
                PENDING => w.pending = n,
                SENDING => w.sending = n,
                FAILED => w.failed = n,
                _ => w.held = n,
            }
        }
        w.stranded = $t::table
            .filter(super::stale_claim!($t, $now, $silent))
            .count()
            .get_result($conn)?;
        w.oldest = $t::table
            .filter($t::state.eq_any([PENDING, SENDING]))
            .select(min($t::created_at))
            .first($conn)?;
        w
    }};
}

/// What waits in each table of the queue now: emails, chat notices, tracker
/// jobs, in that order.
pub fn waiting(conn: &mut DbConnection) -> QueryResult<Vec<Waiting>> {
    let now = crate::db::now();
    let silent = crate::services::replicas::all_silent(conn, now)?;
    Ok(vec![
        waiting_in!(conn, outbox_emails, Queue::Email, now, &silent),
        waiting_in!(conn, chat_messages, Queue::Chat, now, &silent),
        waiting_in!(conn, tracker_jobs, Queue::Tracker, now, &silent),
    ])
}
