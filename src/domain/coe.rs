//! The COE's life cycle and its timeline vocabulary.

use std::fmt;

use serde::{Deserialize, Serialize};

/// draft → in review → approved → closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CoeState {
    Draft,
    InReview,
    Approved,
    Closed,
}

impl CoeState {
    pub const ALL: [CoeState; 4] = [
        CoeState::Draft,
        CoeState::InReview,
        CoeState::Approved,
        CoeState::Closed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CoeState::Draft => "draft",
            CoeState::InReview => "in_review",
            CoeState::Approved => "approved",
            CoeState::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<CoeState> {
        CoeState::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether people may still change the writeup's content.
    pub fn is_editable(self) -> bool {
        matches!(self, CoeState::Draft | CoeState::InReview)
    }
}

impl fmt::Display for CoeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a timeline entry marks. Entries made from events carry the event's kind
/// (`fired`, `acknowledged`, `updated`, `resolved`); people add the milestones.
pub const TIMELINE_KINDS: &[&str] = &[
    "started",
    "detected",
    "diagnosed",
    "mitigated",
    "resolved",
    "fired",
    "acknowledged",
    "updated",
    "note",
];

/// Checks a timeline kind given by a person.
pub fn timeline_kind(kind: &str) -> Result<&'static str, String> {
    TIMELINE_KINDS
        .iter()
        .find(|k| **k == kind)
        .copied()
        .ok_or_else(|| {
            format!(
                "must be one of {} (got {kind:?})",
                TIMELINE_KINDS.join(", ")
            )
        })
}

/// The kinds of related items.
pub const RELATED_KINDS: &[&str] = &["link", "ticket", "runbook", "change", "coe"];
