//! Related items: links, tickets, runbooks, changes and other COEs.

use crate::services::Env;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::edit::{with_change, Recorded};
use super::{child_of_coe, CoeError};
use crate::db::models::RelatedRow;
use crate::db::schema::{coes, related_items};
use crate::db::{self, DbConnection};
use crate::domain::coe::RelatedKind;
use crate::services::access::Editor;

/// A related item as people add it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelatedInput {
    /// link, ticket, runbook, change or coe.
    pub kind: String,
    #[serde(default)]
    pub title: Option<String>,
    /// An http(s) URL; required unless kind is `coe`.
    #[serde(default)]
    pub url: Option<String>,
    /// For kind `coe`: the other COE's id.
    #[serde(default)]
    pub coe_id: Option<String>,
}

/// Adds a related item; returns its id.
pub fn add_related(
    conn: &mut DbConnection,
    id: &str,
    input: &RelatedInput,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<String, CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, now| {
        let kind =
            RelatedKind::from_input(&input.kind).map_err(|p| CoeError::invalid("kind", p))?;
        // A blank title counts as none; any other is held to a title's length.
        if let Some(title) = input.title.as_deref().filter(|t| !t.trim().is_empty()) {
            crate::domain::coe::check_title(title).map_err(|p| CoeError::invalid("title", p))?;
        }
        let (url, related) = if kind == RelatedKind::Coe {
            let other = input
                .coe_id
                .as_deref()
                .ok_or_else(|| CoeError::invalid("coe_id", "is required for kind coe"))?;
            if other == id {
                return Err(CoeError::invalid("coe_id", "must be another COE"));
            }
            let exists: i64 = coes::table
                .filter(coes::id.eq(other))
                .count()
                .get_result(conn)?;
            if exists == 0 {
                return Err(CoeError::invalid(
                    "coe_id",
                    format!("no COE with id `{other}`"),
                ));
            }
            (None, Some(other.to_owned()))
        } else {
            let url = input
                .url
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| CoeError::invalid("url", "is required"))?;
            let Some(url) = crate::domain::event::web_link(url) else {
                let shown: String = url.chars().take(100).collect();
                return Err(CoeError::invalid(
                    "url",
                    format!(
                        "must be an http or https URL of at most {} bytes (got {shown:?})",
                        crate::domain::event::MAX_LINK_BYTES,
                    ),
                ));
            };
            (Some(url), None)
        };
        let row = RelatedRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            kind: kind.as_str().to_owned(),
            title: input.title.clone().filter(|t| !t.trim().is_empty()),
            url,
            related_coe_id: related,
            created_at: now,
        };
        diesel::insert_into(related_items::table)
            .values(&row)
            .execute(conn)?;
        let recorded = Recorded {
            action: "related:add".into(),
            before: None,
            after: Some(
                json!({"id": row.id, "kind": row.kind, "url": row.url, "coe_id": row.related_coe_id, "title": row.title}),
            ),
        };
        Ok((row.id, Some(recorded)))
    })
}

/// Removes a related item.
pub fn delete_related(
    conn: &mut DbConnection,
    id: &str,
    item_id: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, _| {
        let row: RelatedRow = child_of_coe!(
            conn,
            related_items,
            RelatedRow::as_select(),
            id,
            item_id,
            "related"
        )?;
        diesel::delete(related_items::table.find(item_id)).execute(conn)?;
        let recorded = Recorded {
            action: "related:delete".into(),
            before: Some(
                json!({"id": row.id, "kind": row.kind, "url": row.url, "coe_id": row.related_coe_id}),
            ),
            after: None,
        };
        Ok(((), Some(recorded)))
    })
}
