//! Small helpers shared by the parsers.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::{Deserialize, Deserializer};
use sha2::{Digest, Sha256};

use crate::domain::event::parse_time;
use crate::domain::FailureEvent;
use crate::json::JsonError;

/// Longest text kept in a title (characters); senders sometimes put whole logs there.
const MAX_TITLE: usize = 500;

/// Longest description kept (bytes); the raw payload keeps the rest.
const MAX_DESCRIPTION: usize = 65_536;

/// Longest dedup key stored as it is (bytes); longer ones are stored as their hash,
/// because the key is part of an index and indexes have a size limit.
const MAX_KEY: usize = 512;

/// A string that is present and says something: not empty, not Grafana's `<no value>`.
pub fn meaningful(value: Option<&String>) -> Option<String> {
    value
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && *s != "<no value>")
        .map(str::to_owned)
}

/// First meaningful value among `keys` in `map`.
pub fn first_of(map: &BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| meaningful(map.get(*k)))
}

/// A stable key from a label set, for senders that give no fingerprint.
pub fn hash_labels(labels: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (k, v) in labels {
        hasher.update(k.as_bytes());
        hasher.update([0]);
        hasher.update(v.as_bytes());
        hasher.update([0]);
    }
    hex::encode(&hasher.finalize()[..8])
}

/// Parses a required time field, naming it on error.
pub fn required_time(raw: &str, field: &str) -> Result<NaiveDateTime, JsonError> {
    match parse_time(raw) {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(JsonError::field(
            field,
            format!("must be a real time (got {raw:?})"),
        )),
        Err(problem) => Err(JsonError::field(field, problem)),
    }
}

/// Parses an optional time field; the zero time means "not set".
pub fn optional_time(raw: Option<&str>, field: &str) -> Result<Option<NaiveDateTime>, JsonError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(raw) => parse_time(raw).map_err(|problem| JsonError::field(field, problem)),
    }
}

/// An id that senders write as a number or as a string; numbers keep every digit.
pub fn id_string(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `null` in the payload reads as the type's default (an empty map, say).
pub fn null_as_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// Makes an event safe to store: no NUL characters (PostgreSQL refuses them in text),
/// a title of bounded length and never empty.
pub fn sanitize(mut event: FailureEvent) -> FailureEvent {
    let clean = |s: &mut String| {
        if s.contains('\0') {
            *s = s.replace('\0', "\u{fffd}");
        }
    };
    clean(&mut event.source);
    clean(&mut event.dedup_key);
    clean(&mut event.group_key);
    clean(&mut event.occurrence_key);
    clean(&mut event.title);
    if let Some(s) = event.service.as_mut() {
        clean(s);
    }
    if let Some(s) = event.description.as_mut() {
        clean(s);
    }
    event.links.iter_mut().for_each(clean);
    let clean_map = |m: BTreeMap<String, String>| {
        m.into_iter()
            .map(|(mut k, mut v)| {
                clean(&mut k);
                clean(&mut v);
                (k, v)
            })
            .collect()
    };
    event.labels = clean_map(std::mem::take(&mut event.labels));
    event.annotations = clean_map(std::mem::take(&mut event.annotations));
    // Keys longer than an index takes are stored as their hash (the same key hashes
    // the same, so grouping and deduplication still hold).
    for key in [
        &mut event.dedup_key,
        &mut event.group_key,
        &mut event.occurrence_key,
    ] {
        if key.len() > MAX_KEY {
            *key = format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())));
        }
    }
    if let Some(service) = event.service.as_mut() {
        if service.len() > crate::domain::coe::MAX_SERVICE_BYTES {
            let mut end = crate::domain::coe::MAX_SERVICE_BYTES;
            while !service.is_char_boundary(end) {
                end -= 1;
            }
            service.truncate(end);
        }
    }
    if let Some(description) = event.description.as_mut() {
        if description.len() > MAX_DESCRIPTION {
            let mut end = MAX_DESCRIPTION;
            while !description.is_char_boundary(end) {
                end -= 1;
            }
            description.truncate(end);
            description.push('…');
        }
    }
    event.title = event.title.trim().to_owned();
    if event.title.chars().count() > MAX_TITLE {
        event.title = event.title.chars().take(MAX_TITLE - 1).collect::<String>() + "…";
    }
    if event.title.is_empty() {
        event.title = format!("{} alert {}", event.source, event.dedup_key);
    }
    event
}
