//! Enums stored as TEXT (or INTEGER) columns, read back with an error instead of a
//! silent default: a corrupt `coes.state` is a failed query (500, logged with the
//! column and value), never an editable draft. The same for both backends, since the
//! columns are plain TEXT and INTEGER on both.

use diesel::result::Error;

use crate::domain::action::{ActionKind, ActionState, Priority};
use crate::domain::coe::{CoeState, RelatedKind, TimelineKind};
use crate::domain::incident::IncidentState;
use crate::domain::{EventKind, EventStatus, Severity};

/// A stored value that is not one the code writes.
#[derive(Debug, thiserror::Error)]
#[error("column {column} holds {value:?}, which is not a known value")]
pub struct CorruptValue {
    pub column: &'static str,
    pub value: String,
}

fn corrupt(column: &'static str, value: impl ToString) -> Error {
    tracing::error!(column, value = %value.to_string(), "a stored value is not a known one");
    Error::DeserializationError(Box::new(CorruptValue {
        column,
        value: value.to_string(),
    }))
}

/// Reads a TEXT column holding one of a fixed set of words.
pub trait StoredText: Sized {
    fn from_stored(text: &str) -> Option<Self>;
}

/// Reads a stored enum; `column` names it in the error (`coes.state`).
pub fn read<T: StoredText>(column: &'static str, text: &str) -> Result<T, Error> {
    T::from_stored(text).ok_or_else(|| corrupt(column, text))
}

/// Reads a stored severity rank (1–5).
pub fn severity(column: &'static str, rank: i32) -> Result<Severity, Error> {
    Severity::from_rank(rank).ok_or_else(|| corrupt(column, rank))
}

impl StoredText for CoeState {
    fn from_stored(text: &str) -> Option<Self> {
        CoeState::parse(text)
    }
}

impl StoredText for ActionState {
    fn from_stored(text: &str) -> Option<Self> {
        ActionState::parse(text)
    }
}

impl StoredText for TimelineKind {
    fn from_stored(text: &str) -> Option<Self> {
        TimelineKind::parse(text)
    }
}

impl StoredText for RelatedKind {
    fn from_stored(text: &str) -> Option<Self> {
        RelatedKind::parse(text)
    }
}

impl StoredText for Priority {
    fn from_stored(text: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::from(text)).ok()
    }
}

impl StoredText for ActionKind {
    fn from_stored(text: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::from(text)).ok()
    }
}

impl StoredText for EventKind {
    fn from_stored(text: &str) -> Option<Self> {
        EventKind::parse(text)
    }
}

impl StoredText for EventStatus {
    fn from_stored(text: &str) -> Option<Self> {
        EventStatus::parse(text).ok()
    }
}

impl StoredText for IncidentState {
    fn from_stored(text: &str) -> Option<Self> {
        IncidentState::parse(text)
    }
}

/// The word an enum is stored as (its serde name).
pub fn word<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_read_back_and_unknown_ones_are_errors() {
        assert_eq!(
            read::<CoeState>("coes.state", "in_review").unwrap(),
            CoeState::InReview
        );
        assert_eq!(
            read::<Priority>("p", &word(Priority::High)).unwrap(),
            Priority::High
        );
        assert_eq!(
            read::<ActionKind>("k", &word(ActionKind::Detect)).unwrap(),
            ActionKind::Detect
        );
        let err = read::<CoeState>("coes.state", "drfat").unwrap_err();
        assert!(err.to_string().contains("coes.state"), "{err}");
        assert!(severity("coes.severity", 9).is_err());
        assert_eq!(severity("coes.severity", 2).unwrap(), Severity::Sev2);
    }
}
