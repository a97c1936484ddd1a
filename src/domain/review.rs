//! The review's rules: who may take which review step from which state, and where it
//! leads (a submit checks the writeup is complete; approval needs someone other than
//! the COE's author, and with a bar raiser both approvals).

use super::coe::CoeState;

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
    /// `auth.dotless_domains`: how addresses are compared as people
    /// (`email::same_person`).
    pub dotless_domains: &'a [String],
}

impl ReviewFacts<'_> {
    fn same(&self, a: Option<&str>, b: Option<&str>) -> bool {
        super::email::same_person_opt(a, b, self.dotless_domains)
    }
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
                    "the COE needs an owner before it is submitted: name one in its details"
                        .to_owned(),
                ));
            }
            match facts.reviewer {
                None => missing.push((
                    "reviewer".to_owned(),
                    "the COE needs a reviewer before it is submitted: name one beside Submit (anyone but its owner)"
                        .to_owned(),
                )),
                Some(r) if facts.same(facts.owner, Some(r)) => missing.push((
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
                if facts.same(facts.owner, facts.reviewer) {
                    return Err(reviewer_is_owner());
                }
                // Separation of duties: nobody approves a writeup they put up, under
                // any spelling of their address.
                let refused = if facts.same(facts.owner, Some(by)) {
                    Some("nobody approves a COE they own")
                } else if facts.same(facts.submitted_by, Some(by)) {
                    Some("nobody approves a review round they submitted")
                } else if as_reviewer && facts.same(facts.reviewer_named_by, Some(by)) {
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
                // An approval by whoever owns the COE now (it was handed to them after
                // they approved) is no approval.
                let standing = facts
                    .approved_by
                    .filter(|first| !facts.same(Some(first), facts.owner));
                return match standing {
                    Some(first) if facts.same(Some(first), Some(by)) => {
                        Err(ReviewRefusal::WrongState(format!(
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
                        )))
                    }
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

#[cfg(test)]
mod tests {
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
            dotless_domains: &[],
        }
    }

    #[test]
    fn nobody_approves_their_own_coe_under_a_plus_tag_or_after_it_was_handed_to_them() {
        let puppet = ReviewFacts {
            owner: Some("chen@example.com"),
            reviewer: Some("chen+review@example.com"),
            by: Some("chen+review@example.com"),
            submitted_by: Some("chen@example.com"),
            reviewer_named_by: Some("chen@example.com"),
            ..facts(CoeState::InReview)
        };
        assert!(matches!(
            review(ReviewStep::Approve, &puppet, Vec::new()),
            Err(ReviewRefusal::Invalid(_))
        ));
        let submit = ReviewFacts {
            state: CoeState::Draft,
            ..puppet
        };
        assert!(review(ReviewStep::Submit, &submit, Vec::new()).is_err());
        // The bar raiser approved, then became the owner: the reviewer's approval is
        // the first again.
        let handed = ReviewFacts {
            owner: Some("raiser@example.com"),
            bar_raiser: Some("raiser@example.com"),
            approved_by: Some("raiser@example.com"),
            ..facts(CoeState::InReview)
        };
        assert_eq!(
            review(ReviewStep::Approve, &handed, Vec::new()),
            Ok(CoeState::InReview)
        );
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
}
