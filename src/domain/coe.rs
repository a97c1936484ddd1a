//! The COE's life cycle and its timeline vocabulary.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest review comment (a request for changes, a comment on a section, an
/// answer), in bytes.
pub const MAX_COMMENT_BYTES: usize = 20_000;

/// draft → in review → approved → closed; a draft may instead be merged into another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CoeState {
    Draft,
    InReview,
    Approved,
    Closed,
    /// Folded into another COE of the same outage (`merged_into`): it is no longer
    /// written, reviewed or reminded of.
    Merged,
}

impl CoeState {
    pub const ALL: [CoeState; 5] = [
        CoeState::Draft,
        CoeState::InReview,
        CoeState::Approved,
        CoeState::Closed,
        CoeState::Merged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CoeState::Draft => "draft",
            CoeState::InReview => "in_review",
            CoeState::Approved => "approved",
            CoeState::Closed => "closed",
            CoeState::Merged => "merged",
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

/// Longest COE title, in bytes (like an action's title).
pub const MAX_TITLE_BYTES: usize = 500;
/// Longest service name, in bytes.
pub const MAX_SERVICE_BYTES: usize = 200;

/// A COE's title as given: trimmed, not empty, at most `MAX_TITLE_BYTES`.
pub fn check_title(title: &str) -> Result<&str, String> {
    let title = title.trim();
    if title.is_empty() {
        Err("must not be empty".into())
    } else if title.len() > MAX_TITLE_BYTES {
        Err(format!(
            "must be at most {MAX_TITLE_BYTES} bytes (got {})",
            title.len()
        ))
    } else {
        check_one_line(title)?;
        Ok(title)
    }
}

/// A title is one line of text: no control characters (a bare carriage return once
/// reached the calendar feed raw and split its lines).
pub fn check_one_line(text: &str) -> Result<(), String> {
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "must be one line of text, without control characters (it holds U+{:04X})",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// A service name as given: trimmed, at most `MAX_SERVICE_BYTES`.
pub fn check_service(service: &str) -> Result<&str, String> {
    let service = service.trim();
    if service.len() > MAX_SERVICE_BYTES {
        Err(format!(
            "must be at most {MAX_SERVICE_BYTES} bytes (got {})",
            service.len()
        ))
    } else {
        Ok(service)
    }
}

/// What a timeline entry marks. Entries made from events carry the event's kind
/// (`fired`, `acknowledged`, `updated`, `resolved`); people add the milestones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    Started,
    Detected,
    Diagnosed,
    Mitigated,
    Resolved,
    Fired,
    Acknowledged,
    Updated,
    Note,
}

impl TimelineKind {
    pub const ALL: [TimelineKind; 9] = [
        TimelineKind::Started,
        TimelineKind::Detected,
        TimelineKind::Diagnosed,
        TimelineKind::Mitigated,
        TimelineKind::Resolved,
        TimelineKind::Fired,
        TimelineKind::Acknowledged,
        TimelineKind::Updated,
        TimelineKind::Note,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TimelineKind::Started => "started",
            TimelineKind::Detected => "detected",
            TimelineKind::Diagnosed => "diagnosed",
            TimelineKind::Mitigated => "mitigated",
            TimelineKind::Resolved => "resolved",
            TimelineKind::Fired => "fired",
            TimelineKind::Acknowledged => "acknowledged",
            TimelineKind::Updated => "updated",
            TimelineKind::Note => "note",
        }
    }

    pub fn parse(s: &str) -> Option<TimelineKind> {
        TimelineKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Checks a timeline kind given by a person; the error lists the kinds.
    pub fn from_input(s: &str) -> Result<TimelineKind, String> {
        TimelineKind::parse(s).ok_or_else(|| {
            format!(
                "must be one of {} (got {s:?})",
                TimelineKind::ALL.map(TimelineKind::as_str).join(", ")
            )
        })
    }

    /// Whether entries of this kind set one of the COE's own times (started,
    /// detected, mitigated, resolved).
    /// In the order a form offers them: a note first (what a new entry is unless the
    /// person picks otherwise), the milestones, which set the COE's own times, last.
    pub const OFFERED: [TimelineKind; 9] = [
        TimelineKind::Note,
        TimelineKind::Fired,
        TimelineKind::Acknowledged,
        TimelineKind::Updated,
        TimelineKind::Diagnosed,
        TimelineKind::Started,
        TimelineKind::Detected,
        TimelineKind::Mitigated,
        TimelineKind::Resolved,
    ];

    /// What the kind says, in words for the pages.
    pub fn words(self) -> &'static str {
        match self {
            TimelineKind::Note => "A note",
            TimelineKind::Fired => "An alert fired",
            TimelineKind::Acknowledged => "Someone took the alert",
            TimelineKind::Updated => "An update",
            TimelineKind::Diagnosed => "The cause was found",
            TimelineKind::Started => "The outage started",
            TimelineKind::Detected => "The outage was noticed",
            TimelineKind::Mitigated => "The impact was mitigated",
            TimelineKind::Resolved => "The outage was resolved",
        }
    }

    pub fn is_milestone(self) -> bool {
        matches!(
            self,
            TimelineKind::Started
                | TimelineKind::Detected
                | TimelineKind::Mitigated
                | TimelineKind::Resolved
        )
    }
}

impl fmt::Display for TimelineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds of related items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RelatedKind {
    Link,
    Ticket,
    Runbook,
    Change,
    Coe,
}

impl RelatedKind {
    pub const ALL: [RelatedKind; 5] = [
        RelatedKind::Link,
        RelatedKind::Ticket,
        RelatedKind::Runbook,
        RelatedKind::Change,
        RelatedKind::Coe,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RelatedKind::Link => "link",
            RelatedKind::Ticket => "ticket",
            RelatedKind::Runbook => "runbook",
            RelatedKind::Change => "change",
            RelatedKind::Coe => "coe",
        }
    }

    pub fn parse(s: &str) -> Option<RelatedKind> {
        RelatedKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Checks a kind given by a person; the error lists the kinds.
    pub fn from_input(s: &str) -> Result<RelatedKind, String> {
        RelatedKind::parse(s).ok_or_else(|| {
            format!(
                "must be one of {} (got {s:?})",
                RelatedKind::ALL.map(RelatedKind::as_str).join(", ")
            )
        })
    }
}

impl fmt::Display for RelatedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The closing rule, after any change to a COE's actions or its approval: an approved
/// COE with no active action closes by itself; a closed COE with an active action
/// (one was reopened) goes back to approved. `None`: the state stays.
pub fn settle(state: CoeState, active_actions: usize) -> Option<CoeState> {
    match (state, active_actions) {
        (CoeState::Approved, 0) => Some(CoeState::Closed),
        (CoeState::Closed, n) if n > 0 => Some(CoeState::Approved),
        _ => None,
    }
}

/// Whether a COE of `severity` needs its reviewer to verify each done action before
/// it closes (`coe.verify_actions_from`).
pub fn needs_verification(
    severity: crate::domain::Severity,
    from: crate::domain::Severity,
) -> bool {
    severity.at_or_above(from)
}

/// What keeps a COE from closing: its active actions, and, when it needs
/// verification, its done actions not yet verified.
pub fn still_to_close(active: usize, unverified_done: usize, needs_verification: bool) -> usize {
    active
        + if needs_verification {
            unverified_done
        } else {
            0
        }
}

/// Whether an outage that came back at `recurred_at` counts against a COE approved
/// at `approved_at`: it came back after the approval, within `days`.
pub fn recurred_after_approval(
    approved_at: chrono::NaiveDateTime,
    recurred_at: chrono::NaiveDateTime,
    days: i64,
) -> bool {
    recurred_at >= approved_at && recurred_at - approved_at <= chrono::Duration::days(days)
}

/// A COE as its notices name it, in email and in chat (`services::outbound::notify`,
/// `services::outbound::chat`).
#[derive(Debug, Clone, Copy)]
pub struct CoeFacts<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub owner: Option<&'a str>,
    pub reviewer: Option<&'a str>,
    pub severity: &'a str,
    pub service: Option<&'a str>,
    /// When its outage was resolved: the writeup's deadline counts from it.
    pub resolved_at: Option<chrono::NaiveDateTime>,
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_sev1_coe_waits_for_its_verified_actions_and_a_sev3_does_not() {
        use crate::domain::Severity;
        assert!(needs_verification(Severity::Sev1, Severity::Sev1));
        assert!(!needs_verification(Severity::Sev2, Severity::Sev1));
        assert!(needs_verification(Severity::Sev2, Severity::Sev2));
        assert_eq!(still_to_close(0, 2, true), 2);
        assert_eq!(still_to_close(0, 2, false), 0);
        assert_eq!(still_to_close(1, 0, true), 1);
        assert_eq!(settle(CoeState::Approved, still_to_close(0, 1, true)), None);
        assert_eq!(
            settle(CoeState::Approved, still_to_close(0, 0, true)),
            Some(CoeState::Closed)
        );
    }

    #[test]
    fn an_outage_back_within_90_days_of_the_approval_counts_against_the_coe() {
        let approved = chrono::NaiveDate::from_ymd_opt(2026, 9, 1)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .expect("a time");
        let days = |n: i64| approved + chrono::Duration::days(n);
        assert!(recurred_after_approval(approved, days(0), 90));
        assert!(recurred_after_approval(approved, days(90), 90));
        assert!(!recurred_after_approval(approved, days(91), 90));
        assert!(
            !recurred_after_approval(approved, days(-1), 90),
            "before it was approved"
        );
    }

    use super::*;

    #[test]
    fn an_approved_coe_closes_with_its_last_action_and_reopens_with_one() {
        assert_eq!(settle(CoeState::Approved, 0), Some(CoeState::Closed));
        assert_eq!(settle(CoeState::Approved, 2), None);
        assert_eq!(settle(CoeState::Closed, 1), Some(CoeState::Approved));
        assert_eq!(settle(CoeState::Closed, 0), None);
        assert_eq!(settle(CoeState::Draft, 0), None);
        assert_eq!(settle(CoeState::InReview, 0), None);
    }

    #[test]
    fn timeline_and_related_kinds_round_trip() {
        for k in TimelineKind::ALL {
            assert_eq!(TimelineKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for k in RelatedKind::ALL {
            assert_eq!(RelatedKind::parse(k.as_str()), Some(k));
        }
        assert!(TimelineKind::from_input("boom")
            .unwrap_err()
            .contains("started, detected"));
        assert!(TimelineKind::Resolved.is_milestone());
        assert!(!TimelineKind::Diagnosed.is_milestone());
    }
}
