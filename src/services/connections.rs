//! The chat channels and trackers coe talks to: those the settings file declares
//! and those admins keep in coe (Admin → Chat, Admin → Trackers; the `connections`
//! table, every secret in it sealed with the secret key), merged into one
//! [`Connections`] that every part reads through `Env::connections`.
//!
//! A save is seen at once by the process that made it ([`LiveConnections::refresh`]
//! after its commit) and within [`WATCH_EVERY`] by the other replicas, which watch
//! the `connections_revision` mark. Each merged set is kept for the process's life
//! (a few KiB a save; saves are an admin's), so that a request or a job pass reads one
//! consistent set, borrowed, however long it runs.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{self, ChannelSettings, Settings, TrackerSettings};
use crate::db::schema::{connections, database_marks};
use crate::db::DbConnection;
use crate::secrets::{KeyError, Keyring};

/// How often a replica looks whether another saved a connection.
pub const WATCH_EVERY: Duration = Duration::from_secs(2);

/// The mark a save moves (`database_marks`).
const REVISION: &str = "connections_revision";

/// What a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A chat channel or a place summaries are published (`[[chat.channels]]`).
    Chat,
    /// An issue tracker (`[[trackers]]`).
    Tracker,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::Tracker => "tracker",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Chat, Kind::Tracker]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// How people call one.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Chat => "channel",
            Kind::Tracker => "tracker",
        }
    }
}

/// A connection kept in coe: its last save.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub kind: Kind,
    pub name: String,
    /// How many times it was saved.
    pub version: i64,
    pub updated_by: String,
    pub updated_at: NaiveDateTime,
}

/// A connection kept in coe that waits for its secrets (`coe backup` leaves them out
/// unless asked).
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub kept: Kept,
    /// Its platform, as the settings write it (`slack`, `jira`, …).
    pub platform: String,
    /// Its settings but for the secrets left out.
    pub settings: Map<String, Value>,
    /// The secrets to give again, by field.
    pub secrets: Vec<String>,
}

/// Every connection, the settings file's first.
#[derive(Debug, Default)]
pub struct Connections {
    pub channels: Vec<ChannelSettings>,
    pub trackers: Vec<TrackerSettings>,
    /// Those kept in coe (every other one is the settings file's).
    pub kept: Vec<Kept>,
    /// Those kept in coe whose secrets were left out of the backup they were restored
    /// from: not in use until an admin gives their secrets again.
    pub waiting: Vec<Waiting>,
    /// The `connections_revision` mark these were read at.
    revision: String,
}

impl Connections {
    /// The settings file's alone.
    pub fn of_file(settings: &Settings) -> Connections {
        Connections {
            channels: settings.chat.channels.clone(),
            trackers: settings.trackers.clone(),
            kept: Vec::new(),
            waiting: Vec::new(),
            revision: String::new(),
        }
    }

    /// Connection `name` of `kind` if it is kept in coe (names compared without case).
    pub fn kept(&self, kind: Kind, name: &str) -> Option<&Kept> {
        self.kept
            .iter()
            .find(|k| k.kind == kind && k.name.eq_ignore_ascii_case(name))
    }

    /// Whether a connection `name` of `kind` is declared in the settings file.
    pub fn in_file(&self, kind: Kind, name: &str) -> bool {
        let named = |n: &String| n.eq_ignore_ascii_case(name);
        self.kept(kind, name).is_none()
            && match kind {
                Kind::Chat => self.channels.iter().any(|c| named(&c.name)),
                Kind::Tracker => self.trackers.iter().any(|t| named(&t.name)),
            }
    }

    pub fn channel(&self, name: &str) -> Option<&ChannelSettings> {
        self.channels.iter().find(|c| c.name == name)
    }

    pub fn tracker(&self, name: &str) -> Option<&TrackerSettings> {
        self.trackers.iter().find(|t| t.name == name)
    }
}

/// One thing "Check the connection" tried, in words.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Tried {
    pub ok: bool,
    pub said: String,
}

impl Tried {
    pub fn worked(said: String) -> Tried {
        Tried { ok: true, said }
    }

    pub fn failed(said: String) -> Tried {
        Tried { ok: false, said }
    }
}

/// Why the connections kept in coe cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionsError {
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
    #[error("the {} {name:?} kept in coe: {source}", kind.noun())]
    Sealed {
        kind: Kind,
        name: String,
        source: KeyError,
    },
    #[error("the {} {name:?} kept in coe cannot be read: {problem}", kind.noun())]
    Unreadable {
        kind: Kind,
        name: String,
        problem: String,
    },
    #[error(
        "the {} {name:?} is declared in the settings file and kept in coe: remove it from one \
         of them (Admin → {} in the pages, or the settings file)",
        kind.noun(),
        match kind { Kind::Chat => "Chat", Kind::Tracker => "Trackers" }
    )]
    Twice { kind: Kind, name: String },
    #[error("the connections kept in coe: {0}")]
    Invalid(config::ConfigError),
}

/// The connections in use, swapped whole when one is saved.
#[derive(Clone)]
pub struct LiveConnections(Arc<Live>);

struct Live {
    current: RwLock<&'static Connections>,
    file: Connections,
    keyring: Option<Keyring>,
    /// One reload at a time: the later one reads the later rows, so an older set
    /// is never put back over a newer one.
    reloading: std::sync::Mutex<()>,
    /// `server.connections_on_loopback`.
    loopback: bool,
}

impl std::fmt::Debug for LiveConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let now = self.current();
        write!(
            f,
            "LiveConnections {{ channels: {}, trackers: {}, kept: {} }}",
            now.channels.len(),
            now.trackers.len(),
            now.kept.len()
        )
    }
}

impl LiveConnections {
    /// The settings file's alone: for what never reads the database's (unit tests, a
    /// command that posts nothing).
    pub fn of_file(settings: &Settings) -> LiveConnections {
        LiveConnections::unread(settings, None)
    }

    /// The settings file's and those kept in `conn`'s database, opened with `keyring`:
    /// at start, where any error stops coe (a name in both, a secret sealed with a key
    /// coe was not given).
    pub fn open(
        settings: &Settings,
        keyring: Option<Keyring>,
        conn: &mut DbConnection,
    ) -> Result<LiveConnections, ConnectionsError> {
        let live = LiveConnections::unread(settings, keyring);
        live.reload(conn)?;
        // Every secret the previous key sealed is sealed again with the current one:
        // once one replica has started with the new key, the old may go.
        if let Some(keyring) = live.keyring() {
            match reseal(conn, keyring) {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    connections = n,
                    key = keyring.key_id(),
                    "secrets sealed with a previous key sealed again with the current one"
                ),
                Err(e) => tracing::warn!(error = %e, "secrets sealed with a previous key stay so"),
            }
        }
        Ok(live)
    }

    /// The settings file's until the database's are read (`refresh`): a coe that
    /// starts while its database cannot be reached (`/readyz` says so).
    pub fn unread(settings: &Settings, keyring: Option<Keyring>) -> LiveConnections {
        let file = Connections::of_file(settings);
        let current = Box::leak(Box::new(Connections::of_file(settings)));
        LiveConnections(Arc::new(Live {
            current: RwLock::new(current),
            file,
            keyring,
            reloading: std::sync::Mutex::new(()),
            loopback: settings.server.connections_on_loopback,
        }))
    }

    /// The connections now: one set, kept as long as the process.
    pub fn current(&self) -> &'static Connections {
        *self.0.current.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The key secrets are sealed with; none where coe has no key.
    pub fn keyring(&self) -> Option<&Keyring> {
        self.0.keyring.as_ref()
    }

    /// Whether those kept in coe may point at this host (`server.connections_on_loopback`).
    pub fn loopback_allowed(&self) -> bool {
        self.0.loopback
    }

    /// Reads the database's connections again if one was saved since they were read;
    /// returns whether they changed. On an error those in use stay.
    pub fn refresh(&self, conn: &mut DbConnection) -> Result<bool, ConnectionsError> {
        if revision(conn)? == self.current().revision {
            return Ok(false);
        }
        self.reload(conn)
    }

    fn reload(&self, conn: &mut DbConnection) -> Result<bool, ConnectionsError> {
        let _one = self.0.reloading.lock().unwrap_or_else(|e| e.into_inner());
        // The mark first: a save that lands between the two reads is read again on the
        // next look.
        let revision = revision(conn)?;
        if revision == self.current().revision {
            return Ok(false);
        }
        let rows = stored(conn)?;
        let merged = self.merged(rows, revision)?;
        let mut current = self.0.current.write().unwrap_or_else(|e| e.into_inner());
        *current = Box::leak(Box::new(merged));
        Ok(true)
    }

    /// What the connections would be with the database's `rows` (a save checks its
    /// candidate with the others so).
    pub fn with_rows(&self, rows: Vec<StoredRow>) -> Result<Connections, ConnectionsError> {
        self.merged(rows, String::new())
    }

    /// The settings file's connections and `rows`, checked as the file is checked.
    fn merged(
        &self,
        rows: Vec<StoredRow>,
        revision: String,
    ) -> Result<Connections, ConnectionsError> {
        let file = &self.0.file;
        let mut merged = Connections {
            channels: file.channels.clone(),
            trackers: file.trackers.clone(),
            kept: Vec::new(),
            waiting: Vec::new(),
            revision,
        };
        for row in rows {
            let kind = Kind::parse(&row.kind).ok_or_else(|| ConnectionsError::Unreadable {
                kind: Kind::Chat,
                name: row.name.clone(),
                problem: format!("unknown kind {:?}", row.kind),
            })?;
            if file.in_file(kind, &row.name) {
                return Err(ConnectionsError::Twice {
                    kind,
                    name: row.name,
                });
            }
            let value =
                open(self.keyring(), &row.settings).map_err(|source| ConnectionsError::Sealed {
                    kind,
                    name: row.name.clone(),
                    source,
                })?;
            let kept = Kept {
                kind,
                name: row.name.clone(),
                version: row.version,
                updated_by: row.updated_by.clone(),
                updated_at: row.updated_at,
            };
            if let Value::Object(mut settings) = value.clone() {
                let secrets = withheld_in(&mut settings);
                if !secrets.is_empty() {
                    let platform = settings.get("kind").and_then(Value::as_str);
                    merged.waiting.push(Waiting {
                        platform: platform.unwrap_or_default().to_owned(),
                        kept,
                        settings,
                        secrets,
                    });
                    continue;
                }
            }
            // What the database holds is given, never a reference to a file or a
            // variable of this host (a row written past coe's checks).
            if let Some(key) = value.as_object().and_then(reference_in) {
                return Err(ConnectionsError::Unreadable {
                    kind,
                    name: row.name,
                    problem: format!("{key} is a reference, not a value"),
                });
            }
            let unreadable = |e: serde_json::Error| ConnectionsError::Unreadable {
                kind,
                name: row.name.clone(),
                problem: e.to_string(),
            };
            match kind {
                Kind::Chat => merged
                    .channels
                    .push(serde_json::from_value(value).map_err(unreadable)?),
                Kind::Tracker => merged
                    .trackers
                    .push(serde_json::from_value(value).map_err(unreadable)?),
            }
            merged.kept.push(kept);
        }
        config::validate_channels(&merged.channels).map_err(ConnectionsError::Invalid)?;
        config::validate_trackers(&merged.trackers).map_err(ConnectionsError::Invalid)?;
        Ok(merged)
    }
}

/// A row of `connections`.
#[derive(Debug, Queryable)]
pub struct StoredRow {
    pub kind: String,
    pub name: String,
    pub settings: String,
    pub version: i64,
    pub updated_by: String,
    pub updated_at: NaiveDateTime,
}

/// Every connection kept in coe, in the order they were first saved by name.
pub fn stored(conn: &mut DbConnection) -> QueryResult<Vec<StoredRow>> {
    connections::table
        .order((connections::kind, connections::name))
        .load(conn)
}

/// The `connections_revision` mark.
pub fn revision(conn: &mut DbConnection) -> QueryResult<String> {
    database_marks::table
        .find(REVISION)
        .select(database_marks::value)
        .first(conn)
        .optional()
        .map(Option::unwrap_or_default)
}

/// Moves the mark: every replica reads the connections again.
pub fn moved(conn: &mut DbConnection) -> QueryResult<()> {
    diesel::update(database_marks::table.find(REVISION))
        .set(database_marks::value.eq(uuid::Uuid::now_v7().to_string()))
        .execute(conn)
        .map(drop)
}

/// The first top-level field of `settings` that is an object but for `statuses` (the
/// one map a connection has): a secret written as `{ file = … }` or `{ env = … }`.
pub fn reference_in(settings: &Map<String, Value>) -> Option<&str> {
    settings
        .iter()
        .find(|(key, value)| value.is_object() && key.as_str() != "statuses")
        .map(|(key, _)| key.as_str())
}

/// What a sealed secret is written as: a key no setting has.
const SEALED: &str = "$sealed";

/// What a secret left out of a backup is written as.
const WITHHELD: &str = "$withheld";

/// The fields of `settings` left out of a backup, taken out of it.
pub fn withheld_in(settings: &mut Map<String, Value>) -> Vec<String> {
    let fields: Vec<String> = settings
        .iter()
        .filter(|(_, v)| v.as_object().is_some_and(|o| o.contains_key(WITHHELD)))
        .map(|(k, _)| k.clone())
        .collect();
    for field in &fields {
        settings.remove(field);
    }
    fields
}

/// In a copy of the database (`coe backup`), every sealed secret replaced by
/// `{"$withheld": …}`: restored, those connections wait for an admin to give their
/// secrets again. Returns how many connections had one.
pub fn withhold_secrets(conn: &mut DbConnection) -> QueryResult<usize> {
    let mut changed = 0;
    for row in stored(conn)? {
        let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(&row.settings) else {
            continue;
        };
        let mut any = false;
        for field in map.values_mut() {
            if field.as_object().is_some_and(|o| o.contains_key(SEALED)) {
                *field = serde_json::json!({ WITHHELD: "left out of the backup" });
                any = true;
            }
        }
        if any {
            changed += diesel::update(
                connections::table
                    .filter(connections::kind.eq(&row.kind))
                    .filter(connections::name.eq(&row.name)),
            )
            .set(connections::settings.eq(Value::Object(map).to_string()))
            .execute(conn)?;
        }
    }
    Ok(changed)
}

/// `value` as the JSON text kept in the database: every secret in it (found by its
/// type, `config::secret::to_masked_json`) sealed as `{"$sealed": "v1:…"}`.
pub fn seal(keyring: &Keyring, value: &impl Serialize) -> serde_json::Result<String> {
    let mut clear = serde_json::to_value(value)?;
    let masked = config::secret::to_masked_json(value)?;
    // A connection's secrets are its own fields (none is inside a list or a map).
    if let (Value::Object(clear), Value::Object(masked)) = (&mut clear, &masked) {
        for (key, value) in clear.iter_mut() {
            if masked.get(key).is_some_and(|m| m == "***") {
                let plain = value.as_str().unwrap_or_default();
                *value = serde_json::json!({ SEALED: keyring.seal(plain) });
            }
        }
    }
    serde_json::to_string(&clear)
}

/// Seals again with the current key every secret a previous key sealed; returns how
/// many connections changed. A row saved meanwhile is left to its save.
pub fn reseal(conn: &mut DbConnection, keyring: &Keyring) -> Result<usize, ConnectionsError> {
    let mut changed = 0;
    for row in stored(conn)? {
        let mut value: Value = match serde_json::from_str(&row.settings) {
            Ok(value) => value,
            Err(_) => continue,
        };
        let mut stale = false;
        if let Value::Object(map) = &mut value {
            for field in map.values_mut() {
                let Some(sealed) = field
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .and_then(|o| o.get(SEALED))
                    .and_then(Value::as_str)
                    .filter(|s| keyring.is_stale(s))
                else {
                    continue;
                };
                let plain = keyring
                    .open(sealed)
                    .map_err(|source| ConnectionsError::Sealed {
                        kind: Kind::parse(&row.kind).unwrap_or(Kind::Chat),
                        name: row.name.clone(),
                        source,
                    })?;
                *field = serde_json::json!({ SEALED: keyring.seal(&plain) });
                stale = true;
            }
        }
        if !stale {
            continue;
        }
        changed += diesel::update(
            connections::table
                .filter(connections::kind.eq(&row.kind))
                .filter(connections::name.eq(&row.name))
                .filter(connections::settings.eq(&row.settings)),
        )
        .set(connections::settings.eq(value.to_string()))
        .execute(conn)?;
    }
    Ok(changed)
}

/// The JSON `text` kept in the database with every sealed secret opened.
pub fn open(keyring: Option<&Keyring>, text: &str) -> Result<Value, KeyError> {
    let mut value: Value = serde_json::from_str(text).map_err(|_| KeyError::Damaged)?;
    if let Value::Object(map) = &mut value {
        for field in map.values_mut() {
            let sealed = match field {
                Value::Object(o) if o.len() == 1 => o.get(SEALED).and_then(Value::as_str),
                _ => None,
            };
            if let Some(sealed) = sealed {
                let plain = keyring.ok_or(KeyError::NoKey)?.open(sealed)?;
                *field = Value::String(plain);
            }
        }
    }
    Ok(value)
}

/// How a set secret is shown once saved: "set, ends …abcd" (its last four
/// characters; none of a short one).
pub fn hint(secret: &config::secret::Secret) -> String {
    let chars: Vec<char> = secret.expose().chars().collect();
    match chars.len() {
        0 => "not set".to_owned(),
        n if n < 12 => "set".to_owned(),
        n => format!("set, ends …{}", chars[n - 4..].iter().collect::<String>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyring() -> Keyring {
        let settings = Settings {
            secret_key: Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into()),
            ..Settings::default()
        };
        Keyring::load(&settings).unwrap().unwrap()
    }

    #[test]
    fn every_secret_is_sealed_and_opens_back() {
        let tracker: TrackerSettings = serde_json::from_value(serde_json::json!({
            "name": "jira", "kind": "jira", "base_url": "https://acme.atlassian.net",
            "user": "bot@example.com", "token": "jira-token-0123456789",
            "webhook_secret": "hook-secret-0123456789", "place": "OPS",
        }))
        .unwrap();
        let keyring = keyring();
        let text = seal(&keyring, &tracker).unwrap();
        assert!(!text.contains("jira-token-0123456789"), "{text}");
        assert!(!text.contains("hook-secret-0123456789"), "{text}");
        assert!(text.contains("acme.atlassian.net") && text.contains("bot@example.com"));
        let back: TrackerSettings =
            serde_json::from_value(open(Some(&keyring), &text).unwrap()).unwrap();
        assert_eq!(back, tracker);
        assert!(matches!(open(None, &text), Err(KeyError::NoKey)));
    }

    #[test]
    fn a_secret_is_shown_by_its_end_alone() {
        assert_eq!(hint(&"xoxb-1234567890-abcd".into()), "set, ends …abcd");
        assert_eq!(hint(&"short".into()), "set");
        assert_eq!(hint(&"".into()), "not set");
    }
}
