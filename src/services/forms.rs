//! What the pages keep between a form's POST and the GET after it: a COE page's form
//! that did not go through, or a preview (what was typed, the problems, the status to
//! answer with), so that every form is answered `303 See Other` and Back or reload
//! never resubmits; and the one-time keys of create forms, so that a repeated POST (a
//! retry on a slow link, a double click) creates one record and lands on it.

use chrono::Duration;
use diesel::prelude::*;
use serde_json::Value;

use crate::db::schema::{form_keys, kept_forms};
use crate::db::{self, DbConnection};

/// How long a kept form and a form key last: a day (a page left open overnight and
/// submitted again creates a second record; one left for an hour does not).
const LIFETIME_HOURS: i64 = 24;

/// Keeps what COE `coe_id`'s page shows again for `person` after a form; answers the
/// id the page's address names (`?kept=…`). Forms older than a day go.
pub fn keep(
    conn: &mut DbConnection,
    person: &str,
    coe_id: &str,
    status: u16,
    body: &Value,
) -> QueryResult<String> {
    let now = db::now();
    diesel::delete(kept_forms::table.filter(kept_forms::created_at.lt(now - lifetime())))
        .execute(conn)?;
    let id = db::new_id();
    diesel::insert_into(kept_forms::table)
        .values((
            kept_forms::id.eq(&id),
            kept_forms::person.eq(person),
            kept_forms::coe_id.eq(coe_id),
            kept_forms::status.eq(i32::from(status)),
            kept_forms::body.eq(body.to_string()),
            kept_forms::created_at.eq(now),
        ))
        .execute(conn)?;
    Ok(id)
}

/// What was kept as `id` for `person` on COE `coe_id`'s page: the status and the body;
/// `None` when there is no such form for them (another person's, another COE's, gone).
pub fn kept(
    conn: &mut DbConnection,
    id: &str,
    person: &str,
    coe_id: &str,
) -> QueryResult<Option<(u16, Value)>> {
    let row: Option<(i32, String)> = kept_forms::table
        .find(id)
        .filter(kept_forms::person.eq(person))
        .filter(kept_forms::coe_id.eq(coe_id))
        .filter(kept_forms::created_at.ge(db::now() - lifetime()))
        .select((kept_forms::status, kept_forms::body))
        .first(conn)
        .optional()?;
    Ok(row.and_then(|(status, body)| {
        let status = u16::try_from(status).ok()?;
        Some((status, serde_json::from_str(&body).ok()?))
    }))
}

fn lifetime() -> Duration {
    Duration::hours(LIFETIME_HOURS)
}

/// A create form's one-time key, as it came: at most 64 letters, digits and dashes
/// (a page makes them with [`new_key`]); anything else is no key.
pub fn form_key(raw: Option<String>) -> Option<String> {
    raw.filter(|k| {
        !k.is_empty() && k.len() <= 64 && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// The fingerprint of a form's fields (without its CSRF token and key): a repeat of
/// the same form has the same.
pub fn fingerprint(fields: &Value) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(fields.to_string().as_bytes()))
}

/// A new one-time key for a create form.
pub fn new_key() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// What claiming a form key found.
#[derive(Debug, PartialEq, Eq)]
enum Claim {
    /// The key is new: this POST makes the record (and then [`land`]s the key).
    First,
    /// The same form was sent before: the record it made is at this page address.
    Made(String),
    /// The key was sent before with other fields (a page from before, kept by the
    /// browser and filled in again): not a repeat, and not to be made under this key.
    Reused,
}

/// Claims `key` for `person`, in the transaction that creates the record from fields
/// whose `fingerprint` is given. Of two POSTs with one key, the second waits for the
/// first's transaction (the key's row is written by it) and then finds where it
/// landed.
fn claim(
    conn: &mut DbConnection,
    key: &str,
    person: &str,
    fingerprint: &str,
) -> QueryResult<Claim> {
    let now = db::now();
    diesel::delete(form_keys::table.filter(form_keys::created_at.lt(now - lifetime())))
        .execute(conn)?;
    let inserted = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(form_keys::table).values((
            form_keys::key.eq(key),
            form_keys::person.eq(person),
            form_keys::landed.eq(""),
            form_keys::fingerprint.eq(fingerprint),
            form_keys::created_at.eq(now),
        )),
        form_keys::key
    )?;
    if inserted == 1 {
        return Ok(Claim::First);
    }
    let first: Option<(String, String)> = form_keys::table
        .find(key)
        .filter(form_keys::person.eq(person))
        .select((form_keys::landed, form_keys::fingerprint))
        .first(conn)
        .optional()?;
    Ok(match first {
        Some((landed, sent)) if sent == fingerprint => Claim::Made(landed),
        // Another person's key (never made for them), or other fields.
        _ => Claim::Reused,
    })
}

/// Notes where the record made under `key` is.
fn land(conn: &mut DbConnection, key: &str, landed: &str) -> QueryResult<()> {
    diesel::update(form_keys::table.find(key))
        .set(form_keys::landed.eq(landed))
        .execute(conn)?;
    Ok(())
}

/// What making a record under a form's key came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Once {
    /// Made now, or by an earlier POST of the same form: the record's page address.
    Made(String),
    /// The key came before with other fields: nothing made.
    Reused,
}

/// Runs `make` (which makes a record and answers its page address) under the form's
/// one-time `key`, in one transaction with the key's claim: a repeat of the same form
/// (`fingerprint`) by `person` lands where the first did and makes nothing. Without a
/// key, `make` just runs.
pub fn once<E: From<diesel::result::Error>>(
    conn: &mut DbConnection,
    key: Option<&str>,
    person: &str,
    fingerprint: &str,
    make: impl FnOnce(&mut DbConnection) -> Result<String, E>,
) -> Result<Once, E> {
    db::write_transaction(conn, |conn| {
        if let Some(key) = key {
            match claim(conn, key, person, fingerprint)? {
                Claim::First => {}
                Claim::Made(path) => return Ok(Once::Made(path)),
                Claim::Reused => return Ok(Once::Reused),
            }
        }
        let landed = make(conn)?;
        if let Some(key) = key {
            land(conn, key, &landed)?;
        }
        Ok(Once::Made(landed))
    })
}
