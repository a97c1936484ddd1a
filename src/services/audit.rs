//! The audit log: who changed what, when, with the value before and after. Every
//! change to a COE or a corrective action writes one record here, in the transaction
//! of the change; `record` is the only writer.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::Value;

use crate::db::models::AuditRow;
use crate::db::schema::audit_log;
use crate::db::{self, DbConnection};

/// The actor recorded for changes the service makes by itself.
pub const SYSTEM_ACTOR: &str = "coe";

/// What a record is about.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Coe(&'a str),
    Action {
        id: &'a str,
        coe_id: &'a str,
    },
    /// Anything else (an email of the outbox, a person's sign-in link): no COE.
    Other {
        entity: &'a str,
        id: &'a str,
    },
}

/// One change.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub subject: Subject<'a>,
    /// Who: a person's email, `token:<name>`, or `coe` for the service itself.
    pub actor: &'a str,
    /// What, e.g. `section:summary`, `state:approved`, `action:complete`.
    pub action: &'a str,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

thread_local! {
    /// The chat the changes recorded on this thread are made from (`from_chat`).
    static VIA: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// Runs `change` with every record it writes saying it was made from chat `via`
/// (`slack`): the history says "…, from Slack". Services run a change on one thread,
/// in one transaction; the mark is taken off when `change` returns or unwinds.
pub fn from_chat<T>(via: &'static str, change: impl FnOnce() -> T) -> T {
    struct Restore(Option<&'static str>);
    impl Drop for Restore {
        fn drop(&mut self) {
            VIA.with(|v| v.set(self.0));
        }
    }
    let _restore = Restore(VIA.with(|v| v.replace(Some(via))));
    change()
}

/// Writes one audit record at `at`.
pub fn record(conn: &mut DbConnection, change: Change<'_>, at: NaiveDateTime) -> QueryResult<()> {
    let (entity, entity_id, coe_id) = match change.subject {
        Subject::Coe(id) => ("coe", id, Some(id)),
        Subject::Action { id, coe_id } => ("action", id, Some(coe_id)),
        Subject::Other { entity, id } => (entity, id, None),
    };
    diesel::insert_into(audit_log::table)
        .values(AuditRow {
            id: db::new_id(),
            entity: entity.to_owned(),
            entity_id: entity_id.to_owned(),
            coe_id: coe_id.map(str::to_owned),
            actor: change.actor.to_owned(),
            action: change.action.to_owned(),
            before: change.before.map(|v| v.to_string()),
            after: change.after.map(|v| v.to_string()),
            at,
            via: VIA.with(std::cell::Cell::get).map(str::to_owned),
        })
        .execute(conn)
        .map(|_| ())
}

/// Every record about a COE and its actions, oldest first.
pub fn of_coe(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Vec<AuditRow>> {
    audit_log::table
        .filter(audit_log::coe_id.eq(coe_id))
        .order((audit_log::at.asc(), audit_log::id.asc()))
        .select(AuditRow::as_select())
        .load(conn)
}
