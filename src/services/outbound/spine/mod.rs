//! The outbound spine: a use case says once what happened (an `Event`), in the
//! transaction that made it happen, and `happened` turns it into every consequence
//! there: its rows in the history (audit), the emails (each person's own), the
//! tracker jobs, the search index, and a new version of a COE in review (its stale
//! approval withdrawn). A new channel (a chat message, another tracker) is a line
//! here, not an edit in every use case.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::Value;

use crate::db::DbConnection;
use crate::services::audit::{self, Change, Subject};
use crate::services::outbound::outbox::{self, NewEmail};
use crate::services::Env;

mod actions;
mod coes;
mod facts;
mod review;

pub use actions::{new_owner_email, ActionChange, ActionEvent};
pub use coes::CoeEvent;
pub use facts::{noted, Fact};
pub use review::{ReviewEvent, ReviewStepped};

/// What happened, with what its consequences need: one enum a subject.
pub enum Event<'a> {
    Action(ActionEvent<'a>),
    Coe(CoeEvent<'a>),
    Review(ReviewEvent<'a>),
}

/// Every consequence of `event`, made by `actor` at `now`, in the caller's
/// transaction.
pub fn happened<'a>(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    event: impl Into<Event<'a>>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match event.into() {
        Event::Action(event) => actions::happened(conn, env, actor, event, now),
        Event::Coe(event) => coes::happened(conn, env, actor, event, now),
        Event::Review(event) => review::happened(conn, env, actor, event, now),
    }
}

/// A reminder the sweep decided (a digest, an escalation, a writeup reminder), rendered:
/// it goes out by email. Returns whether it was queued now (false: queued before).
pub fn reminded(
    conn: &mut DbConnection,
    email: &NewEmail,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    outbox::enqueue(conn, email, now)
}

/// A row of COE `coe_id`'s history.
pub(super) fn coe_history(
    conn: &mut DbConnection,
    coe_id: &str,
    actor: &str,
    what: &str,
    before: Option<Value>,
    after: Option<Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    audit::record(
        conn,
        Change {
            subject: Subject::Coe(coe_id),
            actor,
            action: what,
            before,
            after,
        },
        now,
    )
}
