//! A COE's history of changes, and who looked at it when (the reviewer's page shows
//! what others changed since).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{load_row, CoeError};
use crate::db::schema::coe_reads;
use crate::db::DbConnection;
use crate::services::audit;

/// One audit record.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HistoryEntry {
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
    pub actor: String,
    pub action: String,
    /// What the change replaced; `null` when it created something.
    #[schema(value_type = Option<Value>)]
    pub before: Option<Value>,
    /// What the change made; `null` when it deleted something.
    #[schema(value_type = Option<Value>)]
    pub after: Option<Value>,
    /// For a change of one of its corrective actions: that action's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    /// The chat the change was made from (`slack`); none from coe's pages or API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Every change to a COE, oldest first.
pub fn history(conn: &mut DbConnection, id: &str) -> Result<Vec<HistoryEntry>, CoeError> {
    load_row(conn, id)?;
    let rows = audit::of_coe(conn, id)?;
    Ok(rows
        .into_iter()
        .map(|r| HistoryEntry {
            action_id: (r.entity == "action").then(|| r.entity_id.clone()),
            at: r.at,
            actor: r.actor,
            action: r.action,
            before: r.before.and_then(|b| serde_json::from_str(&b).ok()),
            after: r.after.and_then(|a| serde_json::from_str(&a).ok()),
            via: r.via,
        })
        .collect())
}

/// Notes that `who` looked at COE `id` (at `version`) now; returns when they looked
/// before, if they did. The reviewer's page shows what others changed since.
pub fn note_look(
    conn: &mut DbConnection,
    id: &str,
    who: &str,
    version: i32,
) -> QueryResult<Option<NaiveDateTime>> {
    let previous: Option<NaiveDateTime> = coe_reads::table
        .find((id, who))
        .select(coe_reads::read_at)
        .first(conn)
        .optional()?;
    let now = crate::db::now();
    if previous.is_some() {
        diesel::update(coe_reads::table.find((id, who)))
            .set((coe_reads::version.eq(version), coe_reads::read_at.eq(now)))
            .execute(conn)?;
    } else {
        crate::insert_or_ignore!(
            conn,
            diesel::insert_into(coe_reads::table).values((
                coe_reads::coe_id.eq(id),
                coe_reads::person_email.eq(who),
                coe_reads::version.eq(version),
                coe_reads::read_at.eq(now),
            )),
            (coe_reads::coe_id, coe_reads::person_email)
        )?;
    }
    Ok(previous)
}
