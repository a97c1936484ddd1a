//! SCIM Users: people provisioned by the identity provider. A User is a row of the
//! directory (`people`) that carries the SCIM id; its address is the primary email
//! (else the work one, else the first, else a userName that is an address). A User
//! written with the address of someone already in the directory takes that person
//! over; a new address moves everything of theirs to it (`people::rename`).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Map, Value};

use super::ProvisioningError;
use super::{at_page, resource_meta, too_many, Ctx, Listed, Seen, MAX_CANDIDATES};
use crate::db::schema::{people, scim_group_members};
use crate::db::{self, DbConnection};
use crate::domain::EmailAddress;
use crate::scim::filter::demanded;
use crate::scim::{clean_resource, ListQuery, ResourceKind, ScimError, ENTERPRISE, USER};
use crate::services::directory::people as directory;

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = people)]
struct Provisioned {
    email: String,
    name: Option<String>,
    timezone: Option<String>,
    scim_id: Option<String>,
    scim_doc: Option<String>,
    scim_manager_ref: Option<String>,
    active: bool,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn resource(ctx: &Ctx, p: &Provisioned) -> Value {
    let mut doc: Map<String, Value> = p
        .scim_doc
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    let id = p.scim_id.clone().unwrap_or_default();
    let mut schemas = vec![USER];
    if doc.contains_key(ENTERPRISE) {
        schemas.push(ENTERPRISE);
    }
    doc.insert("schemas".into(), json!(schemas));
    // An absent `active` means active (RFC 7643 leaves it to the provider); a person
    // who left says so whatever the provider wrote.
    if doc.contains_key("active") || !p.active {
        doc.insert("active".into(), json!(p.active));
    }
    doc.insert(
        "meta".into(),
        resource_meta(ctx, "User", &id, p.created_at, p.updated_at),
    );
    doc.insert("id".into(), json!(id));
    Value::Object(doc)
}

fn by_id(conn: &mut DbConnection, id: &str) -> QueryResult<Option<Provisioned>> {
    people::table
        .filter(people::scim_id.eq(id))
        .select(Provisioned::as_select())
        .first(conn)
        .optional()
}

fn not_found(id: &str) -> ProvisioningError {
    ScimError::not_found(format!("no User has the id {id:?}")).into()
}

/// What coe takes from a User.
struct Derived {
    address: String,
    user_name: String,
    external_id: Option<String>,
    name: Option<String>,
    timezone: Option<String>,
    manager_ref: Option<String>,
    active: bool,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// At most one primary email (RFC 7643 2.4): the last one marked keeps it (a PATCH
/// `add` of a primary address appends it after the old one).
fn one_primary(doc: &mut Map<String, Value>) {
    if let Some(Value::Array(emails)) = doc.get_mut("emails") {
        let last = emails
            .iter()
            .rposition(|e| e.get("primary") == Some(&json!(true)));
        for (i, e) in emails.iter_mut().enumerate() {
            if let (Some(obj), Some(last)) = (e.as_object_mut(), last) {
                if i != last && obj.get("primary") == Some(&json!(true)) {
                    obj.insert("primary".into(), json!(false));
                }
            }
        }
    }
}

fn derive(doc: &Map<String, Value>) -> Result<Derived, ScimError> {
    let user_name = text(doc.get("userName")).unwrap_or_default();
    let emails: Vec<&Value> = doc
        .get("emails")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let chosen = emails
        .iter()
        .find(|e| e.get("primary") == Some(&json!(true)))
        .or_else(|| {
            emails
                .iter()
                .find(|e| e.get("type") == Some(&json!("work")))
        })
        .or_else(|| emails.first())
        .and_then(|e| text(e.get("value")));
    let address = match chosen {
        Some(a) => EmailAddress::parse(&a).map_err(|p| {
            ScimError::bad(
                "invalidValue",
                format!("emails: {a:?} is not an email address: {p}"),
            )
        })?,
        None => EmailAddress::parse(&user_name).map_err(|_| {
            ScimError::bad(
                "invalidValue",
                "emails is required: a person in coe is known by their email address \
                 (send emails, or a userName that is an address)",
            )
        })?,
    };
    let name = text(doc.get("displayName"))
        .or_else(|| doc.get("name").and_then(|n| text(n.get("formatted"))))
        .or_else(|| {
            let n = doc.get("name")?;
            let both = [text(n.get("givenName")), text(n.get("familyName"))]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            (!both.is_empty()).then_some(both)
        });
    let manager_ref = doc
        .get(ENTERPRISE)
        .and_then(|e| e.get("manager"))
        .and_then(|m| text(m.get("value")));
    Ok(Derived {
        address: address.as_str().to_owned(),
        user_name: user_name.to_lowercase(),
        external_id: text(doc.get("externalId")),
        name,
        timezone: text(doc.get("timezone")),
        manager_ref,
        active: doc.get("active") != Some(&json!(false)),
    })
}

/// The person of the directory a manager reference names: a User's id, an
/// externalId, or the address of someone in the directory. A reference to anyone else
/// names nobody: escalations and a leaver's work then go up the chain as if no manager
/// were given (the reference is kept, and the person's admin page says it is unknown).
fn manager_address(conn: &mut DbConnection, reference: &str) -> QueryResult<Option<String>> {
    let address = EmailAddress::parse(reference)
        .ok()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    people::table
        .filter(
            people::scim_id
                .eq(reference)
                .or(people::scim_external_id.eq(reference))
                .or(people::email.eq(&address)),
        )
        .select(people::email)
        .first(conn)
        .optional()
}

/// Writes a User: a new one (`id` None) or the one with that id.
fn write(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: Option<&str>,
    mut doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    one_primary(&mut doc);
    let d = derive(&doc)?;
    let existing = match id {
        Some(id) => Some(by_id(conn, id)?.ok_or_else(|| not_found(id))?),
        None => None,
    };
    let own_id = existing.as_ref().and_then(|e| e.scim_id.clone());
    check_user_name(conn, &d, own_id.as_deref())?;
    let now = ctx.now;
    let scim_id = take_address(conn, &d, existing.as_ref(), now)?;
    let manager = match &d.manager_ref {
        Some(r) => Some(manager_address(conn, r)?),
        None if existing
            .as_ref()
            .is_some_and(|e| e.scim_manager_ref.is_some()) =>
        {
            Some(None)
        }
        None => None,
    };
    let was = existing
        .as_ref()
        .map(|e| (e.name.clone(), e.timezone.clone()));
    let (old_name, old_zone) = was.unwrap_or_default();
    diesel::update(people::table.find(&d.address))
        .set((
            people::scim_id.eq(&scim_id),
            people::scim_user_name.eq(&d.user_name),
            people::scim_external_id.eq(&d.external_id),
            people::scim_doc.eq(Value::Object(doc).to_string()),
            people::scim_manager_ref.eq(&d.manager_ref),
            people::name.eq(d.name.clone().or(old_name)),
            people::timezone.eq(d.timezone.clone().or(old_zone)),
            people::updated_at.eq(now),
        ))
        .execute(conn)
        .map_err(|e| match e {
            // Another request took the userName between our check and this write
            // (PostgreSQL, two at once): the same answer as the check's.
            diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _,
            ) => ProvisioningError::from(ScimError::conflict(format!(
                "userName {:?} is another User's",
                d.user_name
            ))),
            other => other.into(),
        })?;
    if let Some(manager) = manager {
        diesel::update(people::table.find(&d.address))
            .set(people::manager_email.eq(manager))
            .execute(conn)?;
    }
    // People provisioned before their manager: their reference resolves now.
    let refs: Vec<String> = [Some(scim_id.clone()), d.external_id.clone()]
        .into_iter()
        .flatten()
        .collect();
    diesel::update(people::table.filter(people::scim_manager_ref.eq_any(&refs)))
        .set(people::manager_email.eq(Some(&d.address)))
        .execute(conn)?;
    if d.active {
        crate::services::accounts::leaving::rejoin(conn, &d.address, now)?;
    } else {
        if crate::services::accounts::leaving::leave(conn, ctx.env, &d.address, now, super::BY)?
            .is_some()
        {
            ctx.someone_left.set(true);
        }
    }
    // A User's teams come from its groups, which a User's own write does not change.
    let written = by_id(conn, &scim_id)?.ok_or_else(|| not_found(&scim_id))?;
    Ok(resource(ctx, &written))
}

/// Refuses a userName another User has (userNames are unique, any case); `own_id`
/// is the id of the User written, whose own name it may keep.
fn check_user_name(
    conn: &mut DbConnection,
    d: &Derived,
    own_id: Option<&str>,
) -> Result<(), ProvisioningError> {
    let taken: i64 = people::table
        .filter(people::scim_user_name.eq(&d.user_name))
        .filter(people::scim_id.ne(own_id.unwrap_or_default()))
        .count()
        .get_result(conn)?;
    if taken > 0 {
        return Err(
            ScimError::conflict(format!("userName {:?} is another User's", d.user_name)).into(),
        );
    }
    Ok(())
}

/// Gives the User written (`existing`, or a new one) the person at its address and
/// says its SCIM id: a new User takes over someone the provider did not provision
/// (never an admin) or a new person; a User's new address takes everything of theirs
/// along. Refused when the address is someone else's.
fn take_address(
    conn: &mut DbConnection,
    d: &Derived,
    existing: Option<&Provisioned>,
    now: NaiveDateTime,
) -> Result<String, ProvisioningError> {
    let at_address: Option<(String, Option<String>, bool)> = people::table
        .find(&d.address)
        .select((people::email, people::scim_id, people::is_admin))
        .first(conn)
        .optional()?;
    let scim_id = match (existing, &at_address) {
        (None, Some((_, Some(_), _))) => {
            return Err(ScimError::conflict(format!(
                "emails: {} is already another User's",
                d.address
            ))
            .into())
        }
        // An admin the provider did not provision is not the provider's to change,
        // deactivate or end the tokens of: a token with the `scim` role must not be a
        // way to take the service from its admins.
        (None, Some((_, None, true))) => {
            return Err(ScimError {
                status: 403,
                scim_type: None,
                detail: format!(
                    "emails: {} is an admin of coe that the identity provider did not \
                     provision; SCIM may not change or deactivate them (an admin of coe \
                     takes the admin role away first if the provider is to manage them)",
                    d.address
                ),
            }
            .into())
        }
        (None, Some((_, None, false))) => db::new_id(),
        (None, None) => {
            directory::ensure(conn, &d.address, now)?;
            db::new_id()
        }
        (Some(e), at) => {
            if e.email != d.address {
                if at.is_some() {
                    return Err(ScimError::conflict(format!(
                        "emails: {} is already someone else's in coe; the two cannot be merged",
                        d.address
                    ))
                    .into());
                }
                directory::rename(conn, &e.email, &d.address)?;
                // The admin flag does not follow an address the provider changes: a
                // provider (or its token) must not make an admin of whoever holds the
                // new address. Another admin gives it back.
                let dropped = diesel::update(
                    people::table
                        .find(&d.address)
                        .filter(people::is_admin.eq(true)),
                )
                .set(people::is_admin.eq(false))
                .execute(conn)?;
                if dropped > 0 {
                    tracing::warn!(
                        from = %e.email, to = %d.address,
                        "an admin's address changed by SCIM: the admin flag was not carried over"
                    );
                }
            }
            e.scim_id.clone().unwrap_or_default()
        }
    };
    Ok(scim_id)
}

/// A User's document as the provider wrote it, cleaned by the schema: made before
/// the write, so that the writer's turn holds only the rows.
pub fn clean(body: &Value) -> Result<Map<String, Value>, ProvisioningError> {
    Ok(clean_resource(ResourceKind::User, super::object(body)?)?)
}

/// `POST /Users`, with the document `clean` made.
pub fn create(
    conn: &mut DbConnection,
    ctx: &Ctx,
    doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    write(conn, ctx, None, doc)
}

/// `GET /Users/{id}`.
pub fn get_one(conn: &mut DbConnection, ctx: &Ctx, id: &str) -> Result<Value, ProvisioningError> {
    let p = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    Ok(resource(ctx, &p))
}

/// `PUT /Users/{id}`, with the document `clean` made.
pub fn replace(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: &str,
    doc: Map<String, Value>,
) -> Result<Value, ProvisioningError> {
    write(conn, ctx, Some(id), doc)
}

fn stamp_of(p: &Provisioned) -> String {
    format!("{}|{}", p.active, p.scim_doc.as_deref().unwrap_or_default())
}

/// What a `PATCH /Users/{id}` starts from (read on a connection, applied without one
/// by `super::patched`, written by `write_patched`).
pub fn seen(conn: &mut DbConnection, id: &str) -> Result<Seen, ProvisioningError> {
    let p = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    let mut doc: Map<String, Value> = p
        .scim_doc
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    if !p.active {
        doc.insert("active".into(), json!(false));
    }
    Ok(Seen {
        kind: ResourceKind::User,
        stamp: stamp_of(&p),
        doc,
    })
}

/// Writes a patched User, unless it changed since it was `seen` (`None`: read and
/// apply the PATCH again).
pub fn write_patched(
    conn: &mut DbConnection,
    ctx: &Ctx,
    id: &str,
    stamp: &str,
    doc: Map<String, Value>,
) -> Result<Option<Value>, ProvisioningError> {
    let p = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    if stamp_of(&p) != stamp {
        return Ok(None);
    }
    write(conn, ctx, Some(id), doc).map(Some)
}

/// `DELETE /Users/{id}`: the person has left; they stay in the directory (their name
/// on what they wrote) but are no longer the provider's.
pub fn delete(conn: &mut DbConnection, ctx: &Ctx, id: &str) -> Result<(), ProvisioningError> {
    let p = by_id(conn, id)?.ok_or_else(|| not_found(id))?;
    if crate::services::accounts::leaving::leave(conn, ctx.env, &p.email, ctx.now, super::BY)?
        .is_some()
    {
        ctx.someone_left.set(true);
    }
    diesel::update(people::table.find(&p.email))
        .set((
            people::scim_id.eq(None::<String>),
            people::scim_user_name.eq(None::<String>),
            people::scim_external_id.eq(None::<String>),
            people::scim_doc.eq(None::<String>),
            people::scim_manager_ref.eq(None::<String>),
            people::updated_at.eq(ctx.now),
        ))
        .execute(conn)?;
    super::groups::forget_member(conn, ctx, id)?;
    diesel::delete(scim_group_members::table.filter(scim_group_members::member_id.eq(id)))
        .execute(conn)?;
    Ok(())
}

/// `GET /Users` and `POST /Users/.search`: a page from the database, or (with a
/// filter) the Users it may match, which `super::filtered_page` holds the filter
/// against once the connection is given back.
pub fn list(
    conn: &mut DbConnection,
    ctx: &Ctx,
    q: &ListQuery,
) -> Result<Listed, ProvisioningError> {
    let mut query = people::table
        .filter(people::scim_id.is_not_null())
        .select(Provisioned::as_select())
        .order((people::created_at, people::email))
        .into_boxed();
    let Some(filter) = &q.filter else {
        let total: i64 = people::table
            .filter(people::scim_id.is_not_null())
            .count()
            .get_result(conn)?;
        let page: Vec<Provisioned> = query
            .offset(q.start_index as i64 - 1)
            .limit(q.count as i64)
            .load(conn)?;
        let page = page.iter().map(|p| resource(ctx, p)).collect();
        return Ok(Listed::Page(at_page(total as usize, q, page)));
    };
    // `emails.value` is not looked up by the address kept: a secondary one matches too.
    let names = ["userName", "externalId", "id"];
    if let Some((attr, v)) = demanded(filter, &names) {
        query = match attr {
            "userName" => query.filter(people::scim_user_name.eq(v.to_lowercase())),
            "externalId" => query.filter(people::scim_external_id.eq(v)),
            _ => query.filter(people::scim_id.eq(v)),
        };
    }
    let found: Vec<Provisioned> = query.limit(MAX_CANDIDATES as i64 + 1).load(conn)?;
    if found.len() > MAX_CANDIDATES {
        return Err(too_many("Users").into());
    }
    Ok(Listed::Candidates(
        found.iter().map(|p| resource(ctx, p)).collect(),
    ))
}
