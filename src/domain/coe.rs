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
        Ok(title)
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

/// What a reviewer or an owner asks of a COE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewStep {
    Submit,
    Approve,
    RequestChanges,
}

impl ReviewStep {
    pub fn name(self) -> &'static str {
        match self {
            ReviewStep::Submit => "submit",
            ReviewStep::Approve => "approve",
            ReviewStep::RequestChanges => "request-changes",
        }
    }

    /// The verdict a review comment records for this step.
    pub fn verdict(self) -> &'static str {
        match self {
            ReviewStep::Submit => "submitted",
            ReviewStep::Approve => "approved",
            ReviewStep::RequestChanges => "changes_requested",
        }
    }
}

/// The facts a review step is decided on.
#[derive(Debug, Clone, Copy)]
pub struct ReviewFacts<'a> {
    pub state: CoeState,
    pub owner: Option<&'a str>,
    pub reviewer: Option<&'a str>,
    /// The email of the person taking the step, when known.
    pub by: Option<&'a str>,
    /// Who submitted the round under way (an email, or `token:NAME`).
    pub submitted_by: Option<&'a str>,
    /// Who named the current reviewer.
    pub reviewer_named_by: Option<&'a str>,
    /// Whether a non-empty comment comes with the step.
    pub has_comment: bool,
    /// The bar raiser, for the worst outages: a second approval is needed.
    pub bar_raiser: Option<&'a str>,
    /// Who approved the round under way already, while the other approval waits.
    pub approved_by: Option<&'a str>,
}

/// Why a review step is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewRefusal {
    /// The state does not allow the step (a conflict).
    WrongState(String),
    /// The person may not take it.
    NotReviewer(String),
    /// Something is missing or invalid: (field, problem) pairs.
    Invalid(Vec<(String, String)>),
}

/// The review steps a state allows.
pub fn allowed_steps(state: CoeState) -> &'static str {
    match state {
        CoeState::Draft => "submit",
        CoeState::InReview => "approve, request-changes",
        CoeState::Approved | CoeState::Closed => "none (the review is over)",
        CoeState::Merged => "none (it was merged into another COE: review that one)",
    }
}

/// The state a review step leads to, or why it is refused. For a submit, `gaps` are
/// what the writeup itself still lacks (`rules::assess`, by key); the refusal lists
/// every missing piece at once: the owner, the reviewer, and those gaps.
pub fn review(
    step: ReviewStep,
    facts: &ReviewFacts<'_>,
    gaps: Vec<(String, String)>,
) -> Result<CoeState, ReviewRefusal> {
    let from = match step {
        ReviewStep::Submit => CoeState::Draft,
        ReviewStep::Approve | ReviewStep::RequestChanges => CoeState::InReview,
    };
    if facts.state != from {
        return Err(ReviewRefusal::WrongState(format!(
            "cannot {} a COE that is {}; from {} it can: {}",
            step.name(),
            facts.state,
            facts.state,
            allowed_steps(facts.state)
        )));
    }
    let reviewer_is_owner = || {
        ReviewRefusal::Invalid(vec![(
            "reviewer".into(),
            "must not be the COE's owner".into(),
        )])
    };
    match step {
        ReviewStep::Submit => {
            let mut missing = Vec::new();
            if facts.owner.is_none() {
                missing.push((
                    "owner".to_owned(),
                    "the COE needs an owner before it is submitted (PATCH it)".to_owned(),
                ));
            }
            match facts.reviewer {
                None => missing.push((
                    "reviewer".to_owned(),
                    "the COE needs a reviewer before it is submitted (PATCH it)".to_owned(),
                )),
                Some(r) if facts.owner == Some(r) => missing.push((
                    "reviewer".to_owned(),
                    "must not be the COE's owner".to_owned(),
                )),
                Some(_) => {}
            }
            missing.extend(gaps);
            if missing.is_empty() {
                Ok(CoeState::InReview)
            } else {
                Err(ReviewRefusal::Invalid(missing))
            }
        }
        ReviewStep::Approve | ReviewStep::RequestChanges => {
            // The named reviewer or bar raiser, as a person: a token that stands for
            // nobody, or an admin on another's behalf, reviews nothing (an admin may
            // name another reviewer instead).
            let Some(by) = facts
                .by
                .filter(|by| Some(*by) == facts.reviewer || Some(*by) == facts.bar_raiser)
            else {
                let who = match facts.bar_raiser {
                    Some(b) => format!(
                        "reviewer ({}) or bar raiser ({b})",
                        facts.reviewer.unwrap_or("none set")
                    ),
                    None => format!("reviewer ({})", facts.reviewer.unwrap_or("none set")),
                };
                return Err(ReviewRefusal::NotReviewer(format!(
                    "only the COE's {who}, signed in or with a token of their own, may {}",
                    step.name()
                )));
            };
            let as_reviewer = Some(by) == facts.reviewer;
            if step == ReviewStep::Approve {
                if facts.owner.is_some() && facts.owner == facts.reviewer {
                    return Err(reviewer_is_owner());
                }
                // Separation of duties: nobody approves a writeup they put up.
                let refused = if facts.owner == Some(by) {
                    Some("nobody approves a COE they own")
                } else if facts.submitted_by == Some(by) {
                    Some("nobody approves a review round they submitted")
                } else if as_reviewer && facts.reviewer_named_by == Some(by) {
                    Some("nobody approves a COE they named themselves reviewer of")
                } else {
                    None
                };
                if let Some(rule) = refused {
                    return Err(ReviewRefusal::NotReviewer(format!(
                        "{by} may not approve this COE: {rule}; another person must review it"
                    )));
                }
                // With a bar raiser, both approve: the first approval keeps it in review.
                let Some(bar_raiser) = facts.bar_raiser else {
                    return Ok(CoeState::Approved);
                };
                return match facts.approved_by {
                    Some(first) if first == by => Err(ReviewRefusal::WrongState(format!(
                        "{by} approved this round already; it waits for the {}'s approval ({})",
                        if as_reviewer {
                            "bar raiser"
                        } else {
                            "reviewer"
                        },
                        if as_reviewer {
                            bar_raiser
                        } else {
                            facts.reviewer.unwrap_or("none set")
                        }
                    ))),
                    Some(_) => Ok(CoeState::Approved),
                    None => Ok(CoeState::InReview),
                };
            }
            if !facts.has_comment {
                return Err(ReviewRefusal::Invalid(vec![(
                    "comment".into(),
                    "say what needs to change".into(),
                )]));
            }
            Ok(CoeState::Draft)
        }
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

    fn facts(state: CoeState) -> ReviewFacts<'static> {
        ReviewFacts {
            state,
            owner: Some("owner@example.com"),
            reviewer: Some("rev@example.com"),
            by: Some("rev@example.com"),
            submitted_by: Some("owner@example.com"),
            reviewer_named_by: Some("owner@example.com"),
            has_comment: false,
            bar_raiser: None,
            approved_by: None,
        }
    }

    #[test]
    fn with_a_bar_raiser_both_approve_in_either_order_and_either_sends_back() {
        let with_bar_raiser = ReviewFacts {
            bar_raiser: Some("raiser@example.com"),
            ..facts(CoeState::InReview)
        };
        // The reviewer first: it stays in review, waiting for the bar raiser.
        assert_eq!(
            review(ReviewStep::Approve, &with_bar_raiser, vec![]),
            Ok(CoeState::InReview)
        );
        let reviewer_approved = ReviewFacts {
            approved_by: Some("rev@example.com"),
            ..with_bar_raiser
        };
        let Err(ReviewRefusal::WrongState(m)) =
            review(ReviewStep::Approve, &reviewer_approved, vec![])
        else {
            panic!("nobody approves twice");
        };
        assert!(m.contains("waits for the bar raiser's approval"), "{m}");
        let bar_raiser = ReviewFacts {
            by: Some("raiser@example.com"),
            ..reviewer_approved
        };
        assert_eq!(
            review(ReviewStep::Approve, &bar_raiser, vec![]),
            Ok(CoeState::Approved)
        );
        // The bar raiser first, then the reviewer.
        let raiser_first = ReviewFacts {
            by: Some("raiser@example.com"),
            ..with_bar_raiser
        };
        assert_eq!(
            review(ReviewStep::Approve, &raiser_first, vec![]),
            Ok(CoeState::InReview)
        );
        let then_reviewer = ReviewFacts {
            approved_by: Some("raiser@example.com"),
            ..with_bar_raiser
        };
        assert_eq!(
            review(ReviewStep::Approve, &then_reviewer, vec![]),
            Ok(CoeState::Approved)
        );
        // Either sends it back, even after the other approved.
        let sends_back = ReviewFacts {
            has_comment: true,
            ..bar_raiser
        };
        assert_eq!(
            review(ReviewStep::RequestChanges, &sends_back, vec![]),
            Ok(CoeState::Draft)
        );
        // A stranger is told who may.
        let stranger = ReviewFacts {
            by: Some("someone@example.com"),
            ..with_bar_raiser
        };
        let Err(ReviewRefusal::NotReviewer(m)) = review(ReviewStep::Approve, &stranger, vec![])
        else {
            panic!("a stranger decides nothing");
        };
        assert!(m.contains("bar raiser (raiser@example.com)"), "{m}");
    }

    #[test]
    fn a_draft_with_a_reviewer_goes_to_review() {
        assert_eq!(
            review(ReviewStep::Submit, &facts(CoeState::Draft), vec![]),
            Ok(CoeState::InReview)
        );
        let no_reviewer = ReviewFacts {
            reviewer: None,
            ..facts(CoeState::Draft)
        };
        assert!(matches!(
            review(ReviewStep::Submit, &no_reviewer, vec![]),
            Err(ReviewRefusal::Invalid(p)) if p[0].0 == "reviewer"
        ));
        let own_reviewer = ReviewFacts {
            reviewer: Some("owner@example.com"),
            ..facts(CoeState::Draft)
        };
        assert!(matches!(
            review(ReviewStep::Submit, &own_reviewer, vec![]),
            Err(ReviewRefusal::Invalid(_))
        ));
    }

    #[test]
    fn a_refused_submit_lists_every_missing_piece_at_once() {
        let bare = ReviewFacts {
            owner: None,
            reviewer: None,
            ..facts(CoeState::Draft)
        };
        let gaps = vec![
            ("summary".to_owned(), "is empty".to_owned()),
            ("actions".to_owned(), "needs at least one".to_owned()),
        ];
        let Err(ReviewRefusal::Invalid(missing)) = review(ReviewStep::Submit, &bare, gaps) else {
            panic!("an empty draft must be refused");
        };
        let fields: Vec<&str> = missing.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["owner", "reviewer", "summary", "actions"]);
    }

    #[test]
    fn only_the_reviewer_as_a_person_decides() {
        let stranger = ReviewFacts {
            by: Some("owner@example.com"),
            ..facts(CoeState::InReview)
        };
        assert!(matches!(
            review(ReviewStep::Approve, &stranger, vec![]),
            Err(ReviewRefusal::NotReviewer(_))
        ));
        // A token that stands for no person decides nothing, admin or not.
        let nobody = ReviewFacts {
            by: None,
            ..facts(CoeState::InReview)
        };
        for step in [ReviewStep::Approve, ReviewStep::RequestChanges] {
            assert!(matches!(
                review(step, &nobody, vec![]),
                Err(ReviewRefusal::NotReviewer(_))
            ));
        }
        assert_eq!(
            review(ReviewStep::Approve, &facts(CoeState::InReview), vec![]),
            Ok(CoeState::Approved)
        );
    }

    #[test]
    fn nobody_approves_a_round_they_submitted_or_a_coe_they_named_themselves_reviewer_of() {
        let submitted_it = ReviewFacts {
            submitted_by: Some("rev@example.com"),
            ..facts(CoeState::InReview)
        };
        let named_themselves = ReviewFacts {
            reviewer_named_by: Some("rev@example.com"),
            ..facts(CoeState::InReview)
        };
        for (facts, rule) in [
            (submitted_it, "a review round they submitted"),
            (named_themselves, "named themselves reviewer"),
        ] {
            let Err(ReviewRefusal::NotReviewer(m)) = review(ReviewStep::Approve, &facts, vec![])
            else {
                panic!("refused: {rule}");
            };
            assert!(m.contains(rule), "{m}");
        }
    }

    #[test]
    fn sending_back_needs_a_comment() {
        assert!(matches!(
            review(ReviewStep::RequestChanges, &facts(CoeState::InReview), vec![]),
            Err(ReviewRefusal::Invalid(p)) if p[0].0 == "comment"
        ));
        let with_comment = ReviewFacts {
            has_comment: true,
            ..facts(CoeState::InReview)
        };
        assert_eq!(
            review(ReviewStep::RequestChanges, &with_comment, vec![]),
            Ok(CoeState::Draft)
        );
    }

    #[test]
    fn steps_from_the_wrong_state_name_what_is_allowed() {
        let Err(ReviewRefusal::WrongState(m)) =
            review(ReviewStep::Approve, &facts(CoeState::Draft), vec![])
        else {
            panic!("approve from draft must be refused");
        };
        assert!(m.contains("from draft it can: submit"), "{m}");
        assert!(matches!(
            review(ReviewStep::Submit, &facts(CoeState::Closed), vec![]),
            Err(ReviewRefusal::WrongState(_))
        ));
    }

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
