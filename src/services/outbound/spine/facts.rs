//! What happened that nobody is told of: its history row, the search index.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Value};

use super::coe_history;
use crate::db::DbConnection;
use crate::domain::coe::CoeState;
use crate::services::audit::{self, Change, Subject};
use crate::services::search_index;

/// What happened that nobody is told of: its consequences (the history, the search
/// index) need nothing of the running server's settings.
pub enum Fact<'a> {
    /// A COE was changed (`what`: the history's name of the change).
    CoeEdited {
        coe_id: &'a str,
        what: &'a str,
        before: Option<Value>,
        after: Option<Value>,
    },
    /// A COE's words were written outside an edit (a draft opened, a report's first
    /// text, a merge): the search reads them again.
    CoeWritten { coe_id: &'a str },
    /// A COE moved through its life cycle (`comment`: what a review step said).
    CoeMoved {
        coe_id: &'a str,
        from: CoeState,
        to: CoeState,
        comment: Option<&'a str>,
    },
    /// A draft was merged into COE `into`.
    CoeMerged { coe_id: &'a str, into: &'a str },
    /// A sign-in link for `address` was made on the host's command line (`link`, its
    /// row; good until `expires_at`).
    SignInLinkFromHost {
        address: &'a str,
        link: &'a str,
        expires_at: NaiveDateTime,
    },
    /// An approver acknowledged that the COE's incidents are still open.
    OpenIncidentsAcknowledged {
        coe_id: &'a str,
        incidents: &'a [String],
    },
    /// The bar raiser chosen on submit (`chosen`: who, or why nobody).
    BarRaiserChosen { coe_id: &'a str, chosen: &'a Value },
    /// A chat channel or tracker kept in coe was saved (`before`: none when new) or
    /// removed (`after`: none): its settings with every secret masked, and which
    /// secrets changed — never a secret.
    ConnectionChanged {
        kind: &'a str,
        name: &'a str,
        before: Option<Value>,
        after: Option<Value>,
    },
}

/// The history row of `fact`, by `actor` at `now`, in the caller's transaction.
pub fn noted(
    conn: &mut DbConnection,
    actor: &str,
    fact: Fact<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match fact {
        Fact::CoeEdited {
            coe_id,
            what,
            before,
            after,
        } => coe_history(conn, coe_id, actor, what, before, after, now),
        Fact::CoeWritten { coe_id } => search_index::reindex(conn, coe_id),
        Fact::CoeMoved {
            coe_id,
            from,
            to,
            comment,
        } => coe_history(
            conn,
            coe_id,
            actor,
            &format!("state:{}", to.as_str()),
            Some(json!({ "state": from.as_str() })),
            Some(json!({ "state": to.as_str(), "comment": comment })),
            now,
        ),
        Fact::CoeMerged { coe_id, into } => coe_history(
            conn,
            coe_id,
            actor,
            "state:merged",
            Some(json!({ "state": CoeState::Draft.as_str() })),
            Some(json!({ "state": CoeState::Merged.as_str(), "merged_into": into })),
            now,
        ),
        Fact::SignInLinkFromHost {
            address,
            link,
            expires_at,
        } => {
            let after = json!({
                "link": link,
                "for": address,
                "from": "the host's command line (coe sign-in-link)",
                "expires_at": expires_at,
            });
            let change = Change {
                subject: Subject::Other {
                    entity: "person",
                    id: address,
                },
                actor,
                action: "sign_in_link:host",
                before: None,
                after: Some(after),
            };
            audit::record(conn, change, now)
        }
        Fact::OpenIncidentsAcknowledged { coe_id, incidents } => coe_history(
            conn,
            coe_id,
            actor,
            "open_incidents:acknowledged",
            None,
            Some(json!({ "incidents": incidents })),
            now,
        ),
        Fact::ConnectionChanged {
            kind,
            name,
            before,
            after,
        } => {
            let id = format!("{kind}:{name}");
            let action = match (&before, &after) {
                (None, _) => "connection:added",
                (_, None) => "connection:removed",
                _ => "connection:changed",
            };
            let change = Change {
                subject: Subject::Other {
                    entity: "connection",
                    id: &id,
                },
                actor,
                action,
                before,
                after,
            };
            audit::record(conn, change, now)
        }
        Fact::BarRaiserChosen { coe_id, chosen } => coe_history(
            conn,
            coe_id,
            actor,
            "bar_raiser",
            None,
            Some(chosen.clone()),
            now,
        ),
    }
}
