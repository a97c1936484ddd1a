//! SCIM Groups: every group the provider sends is kept as it wrote it, with its
//! members (Users of this service) in `scim_group_members`; a change of a group's
//! name or members moves its members' teams (`teams::follow_groups`).

use std::collections::HashSet;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Map, Value};

use super::ProvisioningError;
use super::{at_page, resource_meta, teams, too_many, Ctx, Listed, Seen, MAX_CANDIDATES};
use crate::db::schema::{people, scim_group_members, scim_groups};
use crate::db::{self, DbConnection};
use crate::scim::filter::demanded;
use crate::scim::{clean_resource, ListQuery, ResourceKind, ScimError, GROUP};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = scim_groups)]
struct GroupRow {
    id: String,
    display_name: String,
    external_id: Option<String>,
    doc: String,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn doc_of(row: &GroupRow) -> Map<String, Value> {
    serde_json::from_str(&row.doc).unwrap_or_default()
}

fn resource(ctx: &Ctx, row: &GroupRow) -> Value {
    let mut doc = doc_of(row);
    doc.insert("schemas".into(), json!([GROUP]));
    doc.insert(
        "meta".into(),
        resource_meta(ctx, "Group", &row.id, row.created_at, row.updated_at),
    );
    doc.insert("id".into(), json!(row.id));
    Value::Object(doc)
}

fn by_id(conn: &mut DbConnection, id: &str) -> QueryResult<Option<GroupRow>> {
    scim_groups::table
        .find(id)
        .select(GroupRow::as_select())
        .first(conn)
        .optional()
}

fn not_found(id: &str) -> ProvisioningError {
    ScimError::not_found(format!("no Group has the id {id:?}")).into()
}

fn member_ids(doc: &Map<String, Value>) -> Vec<String> {
    let mut ids: Vec<String> = doc
        .get("members")
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(|m| m.get("value").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.dedup();
    ids
}

/// How many ids one statement names (well under SQLite's and PostgreSQL's limits of
/// bound values).
const CHUNK: usize = 500;

fn write(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: Option<&str>,
    doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    let members = member_ids(&doc);
    let mut known: HashSet<String> = HashSet::with_capacity(members.len());
    for chunk in members.chunks(CHUNK) {
        known.extend(
            people::table
                .filter(people::scim_id.eq_any(chunk))
                .select(people::scim_id.assume_not_null())
                .load::<String>(conn)?,
        );
    }
    if let Some(stranger) = members.iter().find(|m| !known.contains(*m)) {
        return Err(ScimError::bad(
            "invalidValue",
            format!("members: no User has the id {stranger:?} (groups of groups are not kept)"),
        )
        .into());
    }
    let display_name = doc
        .get("displayName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    let external_id = doc
        .get("externalId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let now = ctx.now;
    let (id, before, renamed) = match id {
        Some(id) => {
            let old = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
            let renamed = old.display_name != display_name;
            diesel::update(scim_groups::table.find(id))
                .set((
                    scim_groups::display_name.eq(&display_name),
                    scim_groups::external_id.eq(&external_id),
                    scim_groups::doc.eq(Value::Object(doc).to_string()),
                    scim_groups::updated_at.eq(now),
                ))
                .execute(conn)?;
            (id.to_owned(), member_ids(&doc_of(&old)), renamed)
        }
        None => {
            let id = db::new_id();
            diesel::insert_into(scim_groups::table)
                .values(GroupRow {
                    id: id.clone(),
                    display_name,
                    external_id,
                    doc: Value::Object(doc).to_string(),
                    created_at: now,
                    updated_at: now,
                })
                .execute(conn)?;
            (id, Vec::new(), true)
        }
    };
    // Only the members who came or went are written, and only their teams (or, when
    // the group's name changed, every member's) are looked at again: a PATCH of a few
    // members of a group of thousands is a few rows for the writer.
    let (was, now): (HashSet<&String>, HashSet<&String>) =
        (before.iter().collect(), members.iter().collect());
    let gone: Vec<&String> = was.difference(&now).copied().collect();
    let came: Vec<&String> = now.difference(&was).copied().collect();
    for chunk in gone.chunks(CHUNK) {
        diesel::delete(
            scim_group_members::table
                .filter(scim_group_members::group_id.eq(&id))
                .filter(scim_group_members::member_id.eq_any(chunk)),
        )
        .execute(conn)?;
    }
    for m in &came {
        diesel::insert_into(scim_group_members::table)
            .values((
                scim_group_members::group_id.eq(&id),
                scim_group_members::member_id.eq(*m),
            ))
            .execute(conn)?;
    }
    let mut touched: Vec<String> = if renamed {
        was.union(&now).map(|m| (*m).clone()).collect()
    } else {
        gone.iter()
            .chain(came.iter())
            .map(|m| (*m).clone())
            .collect()
    };
    touched.sort();
    teams::follow_groups(conn, ctx, &touched)?;
    let written = by_id(conn, &id)?.ok_or_else(|| not_found(&id))?;
    Ok(resource(ctx, &written))
}

/// A Group's document as the provider wrote it, cleaned by the schema: made before
/// the write, so that the writer's turn holds only the rows.
pub fn clean(body: &Value) -> Result<Map<String, Value>, ProvisioningError> {
    Ok(clean_resource(ResourceKind::Group, super::object(body)?)?)
}

/// `POST /Groups`, with the document `clean` made.
pub fn create(
    conn: &mut DbConnection,
    ctx: &Ctx,
    doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    write(conn, ctx, None, doc)
}

/// `GET /Groups/{id}`.
pub fn get_one(conn: &mut DbConnection, ctx: &Ctx, id: &str) -> Result<Value, ProvisioningError> {
    let row = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    Ok(resource(ctx, &row))
}

/// `PUT /Groups/{id}`, with the document `clean` made.
pub fn replace(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: &str,
    doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    write(conn, ctx, Some(id), doc)
}

/// What a `PATCH /Groups/{id}` starts from (read on a connection, applied without one
/// by `super::patched`, written by `write_patched`).
pub fn seen(conn: &mut DbConnection, id: &str) -> Result<Seen, ProvisioningError> {
    let row = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    Ok(Seen {
        kind: ResourceKind::Group,
        doc: doc_of(&row),
        stamp: row.doc,
    })
}

/// Writes a patched Group, unless it changed since it was `seen` (`None`: read and
/// apply the PATCH again).
pub fn write_patched(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: &str,
    stamp: &str,
    doc: Map<String, Value>,
) -> Result<Option<Value>, ProvisioningError> {
    let row = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    if row.doc != stamp {
        return Ok(None);
    }
    write(conn, ctx, Some(id), doc).map(Some)
}

/// `DELETE /Groups/{id}`: its members' teams follow the groups they are still in.
pub fn delete(conn: &mut DbConnection, ctx: &Ctx, id: &str) -> Result<(), ProvisioningError> {
    let row = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    diesel::delete(scim_groups::table.find(id)).execute(conn)?;
    diesel::delete(scim_group_members::table.filter(scim_group_members::group_id.eq(id)))
        .execute(conn)?;
    teams::follow_groups(conn, ctx, &member_ids(&doc_of(&row)))?;
    Ok(())
}

/// Takes a deleted User out of every group's member list.
pub fn forget_member(conn: &mut DbConnection, ctx: &Ctx, user_id: &str) -> QueryResult<()> {
    let rows: Vec<GroupRow> = scim_groups::table
        .filter(
            scim_groups::id.eq_any(
                scim_group_members::table
                    .filter(scim_group_members::member_id.eq(user_id))
                    .select(scim_group_members::group_id),
            ),
        )
        .select(GroupRow::as_select())
        .load(conn)?;
    for row in rows {
        let mut doc = doc_of(&row);
        if let Some(Value::Array(members)) = doc.get_mut("members") {
            members.retain(|m| m.get("value").and_then(Value::as_str) != Some(user_id));
        }
        diesel::update(scim_groups::table.find(&row.id))
            .set((
                scim_groups::doc.eq(Value::Object(doc).to_string()),
                scim_groups::updated_at.eq(ctx.now),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// `GET /Groups` and `POST /Groups/.search`: the Groups the filter may match, which
/// `super::filtered_page` holds it against once the connection is given back.
pub fn list(
    conn: &mut DbConnection,
    ctx: &Ctx,
    q: &ListQuery,
) -> Result<Listed, ProvisioningError> {
    let mut query = scim_groups::table
        .select(GroupRow::as_select())
        .order((scim_groups::created_at, scim_groups::id))
        .into_boxed();
    if q.filter.is_none() {
        let total: i64 = scim_groups::table.count().get_result(conn)?;
        let page: Vec<GroupRow> = query
            .offset(q.start_index as i64 - 1)
            .limit(q.count as i64)
            .load(conn)?;
        let page = page.iter().map(|g| resource(ctx, g)).collect();
        return Ok(Listed::Page(at_page(total as usize, q, page)));
    }
    if let Some((attr, v)) = q
        .filter
        .as_ref()
        .and_then(|f| demanded(f, &["externalId", "id"]))
    {
        query = match attr {
            "externalId" => query.filter(scim_groups::external_id.eq(v)),
            _ => query.filter(scim_groups::id.eq(v)),
        };
    }
    let found: Vec<GroupRow> = query.limit(MAX_CANDIDATES as i64 + 1).load(conn)?;
    if found.len() > MAX_CANDIDATES {
        return Err(too_many("Groups").into());
    }
    Ok(Listed::Candidates(
        found.iter().map(|g| resource(ctx, g)).collect(),
    ))
}
