//! Saving and removing the chat channels and trackers kept in coe (Admin → Chat,
//! Admin → Trackers, `PUT`/`DELETE /api/v1/connections/{kind}/{name}`): checked with
//! every other connection as the settings file is checked, every secret sealed, in
//! the history (never a secret), and seen at once by this process and within
//! seconds by the other replicas (`services::connections`).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{Map, Value};

use crate::config::{ChannelSettings, TrackerSettings};
use crate::db::schema::connections;
use crate::db::DbConnection;
use crate::services::connections::{
    self as live, ConnectionsError, Kept, Kind, LiveConnections, StoredRow,
};
use crate::services::outbound::spine::{self, Fact};

/// Why a connection was not saved or removed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// A field and what is wrong with it.
    #[error("{0}: {1}")]
    Invalid(String, String),
    /// It changed since it was read, or the settings file declares it.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    NotFound(String),
    /// coe has no key to seal secrets with.
    #[error("{0}")]
    NoKey(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// A connection as a save would make it, checked with every other one, not saved:
/// what "Check the connection" tries (`services::outbound::connections::try_out`).
#[derive(Debug, Clone)]
pub enum Candidate {
    Channel(ChannelSettings),
    Tracker(TrackerSettings),
}

/// What a save of one connection would write, checked with the others.
struct Prepared {
    before: Option<StoredRow>,
    before_clear: Option<Value>,
    version: i64,
    text: String,
    after_masked: Value,
    input: Map<String, Value>,
    merged: live::Connections,
}

/// The keyring, `input` as an object naming `name`, and `name` not the settings
/// file's: what a save and a check both ask first.
fn given<'a>(
    connections: &'a LiveConnections,
    kind: Kind,
    name: &str,
    input: Value,
) -> Result<(&'a crate::secrets::Keyring, Map<String, Value>), SaveError> {
    let keyring = connections.keyring().ok_or_else(|| {
        SaveError::NoKey(
            "coe has no secret key to seal this connection's secrets with: set secret_key \
             (COE_SECRET_KEY), the same on every replica, and start coe again"
                .into(),
        )
    })?;
    let mut input = object(input)?;
    match input.get("name") {
        Some(Value::String(given)) if given != name => {
            return Err(SaveError::Invalid(
                "name".into(),
                format!("the address names {name:?}, the body {given:?}"),
            ))
        }
        _ => {
            input.insert("name".into(), Value::String(name.to_owned()));
        }
    }
    if connections.current().in_file(kind, name) {
        return Err(from_file(kind, name));
    }
    Ok((keyring, input))
}

/// Connection `name` of `kind` as `input` would make it (secrets left out kept from
/// the saved one), checked with every other connection and against the version the
/// form was made from (`based_on`, as a save is); nothing is written.
pub fn candidate(
    conn: &mut DbConnection,
    connections: &LiveConnections,
    kind: Kind,
    name: &str,
    input: Value,
    based_on: Option<i64>,
) -> Result<Candidate, SaveError> {
    let (keyring, input) = given(connections, kind, name, input)?;
    let now = crate::db::now();
    let prepared = prepare(
        conn,
        connections,
        keyring,
        kind,
        name,
        input,
        based_on,
        "",
        now,
    )?;
    let merged = prepared.merged;
    let found = match kind {
        Kind::Chat => merged.channel(name).cloned().map(Candidate::Channel),
        Kind::Tracker => merged.tracker(name).cloned().map(Candidate::Tracker),
    };
    found.ok_or_else(|| SaveError::NotFound(format!("no {} named {name}", kind.noun())))
}

/// Saves connection `name` of `kind` as `input` says: the settings as the file
/// writes them (JSON); a secret left out or empty keeps the one saved before.
/// `based_on`: the version the change was made from (none: whatever is there).
#[allow(clippy::too_many_arguments)]
pub fn save(
    conn: &mut DbConnection,
    connections: &LiveConnections,
    kind: Kind,
    name: &str,
    input: Value,
    based_on: Option<i64>,
    by: &str,
    now: NaiveDateTime,
) -> Result<Kept, SaveError> {
    let (keyring, input) = given(connections, kind, name, input)?;
    let saved = crate::db::write_transaction(conn, |conn| {
        // The mark moves first: on PostgreSQL its row stays locked until this commits,
        // so that two saves never both pass the checks against the same rows.
        live::moved(conn)?;
        let Prepared {
            before,
            before_clear,
            version,
            text,
            after_masked,
            input,
            merged: _,
        } = prepare(
            conn,
            connections,
            keyring,
            kind,
            name,
            input,
            based_on,
            by,
            now,
        )?;
        let written = match &before {
            Some(_) => diesel::update(
                connections::table
                    .filter(connections::kind.eq(kind.as_str()))
                    .filter(connections::name.eq(name))
                    .filter(connections::version.eq(version)),
            )
            .set((
                connections::settings.eq(&text),
                connections::version.eq(version + 1),
                connections::updated_by.eq(by),
                connections::updated_at.eq(now),
            ))
            .execute(conn)?,
            None => diesel::insert_into(connections::table)
                .values((
                    connections::kind.eq(kind.as_str()),
                    connections::name.eq(name),
                    connections::settings.eq(&text),
                    connections::version.eq(1_i64),
                    connections::updated_by.eq(by),
                    connections::updated_at.eq(now),
                ))
                .execute(conn)
                .or_else(|e| match e {
                    diesel::result::Error::DatabaseError(
                        diesel::result::DatabaseErrorKind::UniqueViolation,
                        _,
                    ) => Ok(0),
                    e => Err(e),
                })?,
        };
        if written != 1 {
            return Err(SaveError::Conflict(format!(
                "someone saved the {} {name} at the same moment: read it again and save again",
                kind.noun()
            )));
        }
        let old = match &before_clear {
            Some(Value::Object(old)) => Some(old),
            _ => None,
        };
        let changed = secrets_changed(&after_masked, old, &input);
        // Masked by its type (one whose secrets were left out of a backup cannot be
        // read as settings: shown as nothing).
        let before_masked = before_clear
            .map(|old| sealed(kind, keyring, old).map_or(Value::Null, |(_, masked)| masked));
        let mut after = after_masked;
        after["secrets_changed"] = Value::from(changed);
        spine::noted(
            conn,
            by,
            Fact::ConnectionChanged {
                kind: kind.as_str(),
                name,
                before: before_masked,
                after: Some(after),
            },
            now,
        )?;
        Ok(Kept {
            kind,
            name: name.to_owned(),
            version: version + 1,
            updated_by: by.to_owned(),
            updated_at: now,
        })
    })?;
    seen(conn, connections);
    tracing::info!(
        kind = kind.as_str(),
        name,
        version = saved.version,
        by,
        "a connection was saved"
    );
    Ok(saved)
}

/// `input` as the row a save would write, with the settings before it, checked with
/// every other connection (`merged`).
#[allow(clippy::too_many_arguments)]
fn prepare(
    conn: &mut DbConnection,
    connections: &LiveConnections,
    keyring: &crate::secrets::Keyring,
    kind: Kind,
    name: &str,
    mut input: Map<String, Value>,
    based_on: Option<i64>,
    by: &str,
    now: NaiveDateTime,
) -> Result<Prepared, SaveError> {
    let rows = live::stored(conn)?;
    let (mine, others): (Vec<StoredRow>, Vec<StoredRow>) = rows
        .into_iter()
        .partition(|r| r.kind == kind.as_str() && r.name == name);
    let before = mine.into_iter().next();
    let version = before.as_ref().map_or(0, |b| b.version);
    if let Some(base) = based_on.filter(|b| *b != version) {
        return Err(SaveError::Conflict(format!(
            "the {} {name} is at version {version} now, not {base} as when it was read: \
             read it again and make the change there",
            kind.noun()
        )));
    }
    let mut before_clear =
        match &before {
            Some(row) => Some(live::open(Some(keyring), &row.settings).map_err(|e| {
                SaveError::Conflict(format!("the saved {} {name}: {e}", kind.noun()))
            })?),
            None => None,
        };
    if let Some(Value::Object(old)) = &mut before_clear {
        // A secret left out of a backup is given again, never kept.
        live::withheld_in(old);
        keep_secrets(kind, old, &mut input)?;
    }
    let (text, after_masked) = sealed(kind, keyring, Value::Object(input.clone()))?;
    if !connections.loopback_allowed() {
        if let Some(field) = ["url", "api_url", "homeserver", "base_url"]
            .into_iter()
            .find(|f| {
                input
                    .get(*f)
                    .and_then(Value::as_str)
                    .is_some_and(crate::config::points_at_loopback)
            })
        {
            return Err(SaveError::Invalid(
                field.into(),
                "an address on coe's own host: only the settings file may name one \
                 (server.connections_on_loopback allows it here)"
                    .into(),
            ));
        }
    }
    let candidate = StoredRow {
        kind: kind.as_str().to_owned(),
        name: name.to_owned(),
        settings: text.clone(),
        version: version + 1,
        updated_by: by.to_owned(),
        updated_at: now,
    };
    let mut all = others;
    all.push(candidate);
    let merged = connections.with_rows(all).map_err(refused)?;
    Ok(Prepared {
        before,
        before_clear,
        version,
        text,
        after_masked,
        input,
        merged,
    })
}

/// Removes connection `name` of `kind` kept in coe; what waits to be sent to it is
/// refused when its turn comes (the channel or tracker is gone).
pub fn remove(
    conn: &mut DbConnection,
    connections: &LiveConnections,
    kind: Kind,
    name: &str,
    by: &str,
    now: NaiveDateTime,
) -> Result<(), SaveError> {
    if connections.current().in_file(kind, name) {
        return Err(from_file(kind, name));
    }
    crate::db::write_transaction(conn, |conn| {
        live::moved(conn)?;
        let row: Option<StoredRow> = connections::table
            .filter(connections::kind.eq(kind.as_str()))
            .filter(connections::name.eq(name))
            .first(conn)
            .optional()?;
        let Some(row) = row else {
            return Err(SaveError::NotFound(format!(
                "no {} named {name} is kept in coe",
                kind.noun()
            )));
        };
        diesel::delete(
            connections::table
                .filter(connections::kind.eq(kind.as_str()))
                .filter(connections::name.eq(name)),
        )
        .execute(conn)?;
        // Masked by its type (a secret coe cannot open any more is left out).
        let before = connections
            .keyring()
            .and_then(|k| live::open(Some(k), &row.settings).ok())
            .and_then(|clear| sealed(kind, connections.keyring()?, clear).ok())
            .map(|(_, masked)| masked);
        spine::noted(
            conn,
            by,
            Fact::ConnectionChanged {
                kind: kind.as_str(),
                name,
                before: Some(before.unwrap_or(Value::Null)),
                after: None,
            },
            now,
        )?;
        Ok(())
    })?;
    seen(conn, connections);
    tracing::info!(kind = kind.as_str(), name, by, "a connection was removed");
    Ok(())
}

/// This process reads the connections again at once (the others within seconds).
fn seen(conn: &mut DbConnection, connections: &LiveConnections) {
    if let Err(e) = connections.refresh(conn) {
        tracing::error!(error = %e, "the connections saved could not be read back");
    }
}

fn from_file(kind: Kind, name: &str) -> SaveError {
    SaveError::Conflict(format!(
        "the {} {name} is declared in the settings file: change or remove it there",
        kind.noun()
    ))
}

/// `input` as an object whose values are given, not referred to: a secret kept in coe
/// is its text, never `{ file = … }` or `{ env = … }` (which would read the server's
/// files or environment and send them wherever the connection points).
fn object(input: Value) -> Result<Map<String, Value>, SaveError> {
    let Value::Object(map) = input else {
        return Err(SaveError::Invalid(
            "settings".into(),
            "expected a JSON object of the connection's settings, as the settings file \
             writes them"
                .into(),
        ));
    };
    if let Some(key) = live::reference_in(&map) {
        return Err(SaveError::Invalid(
            key.to_owned(),
            "expected a value, not a reference: a secret kept in coe is given as it is".into(),
        ));
    }
    Ok(map)
}

/// Where a connection's secrets are sent: changed, none is kept unless given again.
const DESTINATION: [&str; 5] = ["kind", "url", "base_url", "api_url", "homeserver"];

/// Each secret of `old` that `input` leaves out or leaves empty, kept; one given as
/// `null` is cleared. None is kept for another address (`DESTINATION`): a secret
/// saved for one place is never sent to another an admin names later.
fn keep_secrets(
    kind: Kind,
    old: &Map<String, Value>,
    input: &mut Map<String, Value>,
) -> Result<(), SaveError> {
    let masked = match kind {
        Kind::Chat => serde_json::from_value::<ChannelSettings>(Value::Object(old.clone()))
            .ok()
            .and_then(|c| crate::config::secret::to_masked_json(&c).ok()),
        Kind::Tracker => serde_json::from_value::<TrackerSettings>(Value::Object(old.clone()))
            .ok()
            .and_then(|t| crate::config::secret::to_masked_json(&t).ok()),
    };
    let Some(Value::Object(masked)) = masked else {
        return Ok(());
    };
    // Where the secrets would go now: a field left out is cleared, but `url` (itself a
    // secret), which left out or empty stays as it was.
    let old_of = |key: &str| old.get(key).filter(|v| !v.is_null());
    let now_of = |key: &str| {
        let given = input.get(key).filter(|v| !v.is_null());
        let blank = given.is_none_or(|v| v.as_str().is_some_and(|s| s.trim().is_empty()));
        if key == "url" && blank {
            return old_of(key);
        }
        given
    };
    let moved = DESTINATION
        .into_iter()
        .find(|key| now_of(key) != old_of(key));
    for (key, value) in masked {
        if value != "***" {
            continue;
        }
        let blank = match input.get(&key) {
            // Cleared.
            Some(Value::Null) => {
                input.remove(&key);
                continue;
            }
            None => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        };
        if !blank {
            continue;
        }
        if let Some(changed) = moved {
            return Err(SaveError::Invalid(
                key,
                format!(
                    "give it again (or clear it): {changed} changed, and a secret saved for one \
                     place is not sent to another"
                ),
            ));
        }
        if let Some(old) = old.get(&key) {
            input.insert(key, old.clone());
        }
    }
    Ok(())
}

/// `settings` read as a connection of `kind`, sealed for the database, and masked for
/// the history.
fn sealed(
    kind: Kind,
    keyring: &crate::secrets::Keyring,
    settings: Value,
) -> Result<(String, Value), SaveError> {
    fn both<T: serde::Serialize + serde::de::DeserializeOwned>(
        keyring: &crate::secrets::Keyring,
        settings: Value,
    ) -> Result<(String, Value), SaveError> {
        let typed: T = serde_json::from_value(settings).map_err(unreadable)?;
        let text = live::seal(keyring, &typed).map_err(unreadable)?;
        let masked = crate::config::secret::to_masked_json(&typed).map_err(unreadable)?;
        Ok((text, masked))
    }
    match kind {
        Kind::Chat => both::<ChannelSettings>(keyring, settings),
        Kind::Tracker => both::<TrackerSettings>(keyring, settings),
    }
}

/// A field serde named, else the whole.
fn unreadable(e: serde_json::Error) -> SaveError {
    let text = e.to_string();
    let field = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|lead| text.split_once(lead))
        .and_then(|(_, rest)| rest.split_once('`'))
        .map_or("settings", |(field, _)| field);
    SaveError::Invalid(field.to_owned(), text)
}

/// A check of every connection failed: the field of the one being saved.
fn refused(e: ConnectionsError) -> SaveError {
    match e {
        ConnectionsError::Invalid(crate::config::ConfigError::Entry {
            field, expected, ..
        }) => SaveError::Invalid(field, format!("expected {expected}")),
        ConnectionsError::Database(e) => SaveError::Database(e),
        other => SaveError::Invalid("name".into(), other.to_string()),
    }
}

/// The secrets (set in `masked`, the new settings masked) whose text differs from
/// `before`'s: named in the history, never shown.
fn secrets_changed(
    masked: &Value,
    before: Option<&Map<String, Value>>,
    input: &Map<String, Value>,
) -> Vec<String> {
    let Value::Object(masked) = masked else {
        return Vec::new();
    };
    masked
        .iter()
        .filter(|(_, v)| *v == "***")
        .filter(|(k, _)| before.and_then(|b| b.get(k.as_str())) != input.get(k.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// A connection as admins read it: its settings with each secret shown by its end
/// alone ("set, ends …abcd"), where it is kept, and its last save.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Listed {
    /// `chat` or `tracker`.
    pub kind: &'static str,
    pub name: String,
    /// The platform: `slack`, `matrix`, `jira`, …
    pub platform: String,
    /// `coe` (changed in the pages or the API) or `settings_file` (changed there only).
    pub kept_in: &'static str,
    /// Saves so far (kept in coe only): give it back as `version` to change it.
    pub version: Option<i64>,
    pub updated_by: Option<String>,
    pub updated_at: Option<NaiveDateTime>,
    /// As the settings file writes it, every secret replaced by what may be shown.
    #[schema(value_type = Object)]
    pub settings: Value,
    /// The secrets left out of the backup it was restored from: until they are given
    /// again (a save with them), it is not used.
    pub waiting_for: Vec<String>,
}

/// `GET /api/v1/connections`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ConnectionList {
    pub connections: Vec<Listed>,
}

/// Every connection, the channels first, each kind in the settings file's order then
/// those kept in coe.
pub fn list(connections: &live::Connections) -> Vec<Listed> {
    let chat = connections
        .channels
        .iter()
        .map(|c| listed(connections, Kind::Chat, &c.name, c.kind.as_str(), c));
    let trackers = connections
        .trackers
        .iter()
        .map(|t| listed(connections, Kind::Tracker, &t.name, t.kind.as_str(), t));
    let waiting = connections.waiting.iter().map(|w| {
        let mut settings = w.settings.clone();
        for secret in &w.secrets {
            settings.insert(secret.clone(), Value::from("left out of the backup"));
        }
        Listed {
            kind: w.kept.kind.as_str(),
            name: w.kept.name.clone(),
            platform: w.platform.clone(),
            kept_in: "coe",
            version: Some(w.kept.version),
            updated_by: Some(w.kept.updated_by.clone()),
            updated_at: Some(w.kept.updated_at),
            settings: Value::Object(settings),
            waiting_for: w.secrets.clone(),
        }
    });
    chat.chain(trackers).chain(waiting).collect()
}

fn listed(
    connections: &live::Connections,
    kind: Kind,
    name: &str,
    platform: &'static str,
    settings: &impl serde::Serialize,
) -> Listed {
    let kept = connections.kept(kind, name);
    let clear = serde_json::to_value(settings).unwrap_or_default();
    let mut shown = crate::config::secret::to_masked_json(settings).unwrap_or_default();
    if let (Value::Object(shown), Value::Object(clear)) = (&mut shown, &clear) {
        for (key, value) in shown.iter_mut() {
            if *value == "***" {
                let text = clear.get(key).and_then(Value::as_str).unwrap_or_default();
                *value = Value::from(live::hint(&text.into()));
            }
        }
    }
    Listed {
        kind: kind.as_str(),
        name: name.to_owned(),
        platform: platform.to_owned(),
        kept_in: if kept.is_some() {
            "coe"
        } else {
            "settings_file"
        },
        version: kept.map(|k| k.version),
        updated_by: kept.map(|k| k.updated_by.clone()),
        updated_at: kept.map(|k| k.updated_at),
        settings: shown,
        waiting_for: Vec::new(),
    }
}
