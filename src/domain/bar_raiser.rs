//! Bar raisers: for the worst outages (at or above `coe.bar_raiser_from`), a second
//! reviewer from outside the owner's team, who has no stake in the writeup looking
//! good. A COE gets one when it is submitted; it is approved only when both its
//! reviewer and its bar raiser approve, and either may send it back.

use chrono::NaiveDateTime;

use crate::domain::Severity;

/// Whether a COE of `severity` needs a bar raiser (`coe.bar_raiser_from`).
pub fn needed(severity: Severity, from: Severity) -> bool {
    severity.at_or_above(from)
}

/// A person marked bar raiser in the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub email: String,
    pub team: Option<String>,
    /// When they were last made a COE's bar raiser; `None` if never.
    pub last_assigned: Option<NaiveDateTime>,
}

/// The people a COE's bar raiser must not be: its owner, its reviewer, whoever
/// submitted it; and the owner's team.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exclusions<'a> {
    pub owner: Option<&'a str>,
    pub owner_team: Option<&'a str>,
    pub reviewer: Option<&'a str>,
    pub submitted_by: Option<&'a str>,
    /// `auth.dotless_domains`: a `+tag` or dotted spelling of one of them is them.
    pub dotless_domains: &'a [String],
}

/// Why nobody could be chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoBarRaiser {
    /// Nobody in the directory is a bar raiser: the install does not use them.
    NoneInDirectory,
    /// There are bar raisers, but each is in the owner's team or has a part in the COE.
    NoneEligible(String),
}

/// The bar raiser for a COE: eligible (outside the owner's team, not its owner,
/// reviewer or submitter), least recently assigned first (never assigned first of
/// all), ties by address so the choice is the same on every replica.
pub fn choose(candidates: &[Candidate], not: Exclusions<'_>) -> Result<String, NoBarRaiser> {
    if candidates.is_empty() {
        return Err(NoBarRaiser::NoneInDirectory);
    }
    let same_team = |c: &Candidate| match (c.team.as_deref(), not.owner_team) {
        (Some(a), Some(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
        _ => false,
    };
    let has_a_part = |c: &Candidate| {
        [not.owner, not.reviewer, not.submitted_by]
            .into_iter()
            .flatten()
            .any(|p| super::email::same_person(p, &c.email, not.dotless_domains))
    };
    candidates
        .iter()
        .filter(|c| !same_team(c) && !has_a_part(c))
        .min_by(|a, b| {
            a.last_assigned
                .cmp(&b.last_assigned)
                .then_with(|| a.email.cmp(&b.email))
        })
        .map(|c| c.email.clone())
        .ok_or_else(|| {
            NoBarRaiser::NoneEligible(match not.owner_team {
                Some(team) => format!(
                    "every bar raiser in the directory is in the owner's team ({team}) or has \
                     a part in this COE: an admin marks someone of another team bar raiser"
                ),
                None => "every bar raiser in the directory has a part in this COE: an admin \
                         marks another person bar raiser"
                    .to_owned(),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(day: u32) -> Option<NaiveDateTime> {
        chrono::NaiveDate::from_ymd_opt(2026, 11, day).and_then(|d| d.and_hms_opt(9, 0, 0))
    }

    fn candidate(email: &str, team: &str, last: Option<NaiveDateTime>) -> Candidate {
        Candidate {
            email: email.into(),
            team: Some(team.into()),
            last_assigned: last,
        }
    }

    fn payments_coe() -> Exclusions<'static> {
        Exclusions {
            owner: Some("ana@example.com"),
            owner_team: Some("Payments"),
            reviewer: Some("bo@example.com"),
            submitted_by: Some("ana@example.com"),
            dotless_domains: &[],
        }
    }

    #[test]
    fn the_bar_raiser_comes_from_outside_the_owners_team() {
        let people = [
            candidate("cy@example.com", "payments", None),
            candidate("di@example.com", "search", at(20)),
        ];
        assert_eq!(
            choose(&people, payments_coe()),
            Ok("di@example.com".into()),
            "cy is in the owner's team (any case), though never assigned"
        );
    }

    #[test]
    fn the_least_recently_assigned_goes_first_and_never_assigned_before_all() {
        let people = [
            candidate("ed@example.com", "search", at(20)),
            candidate("fa@example.com", "storage", at(3)),
            candidate("gi@example.com", "edge", None),
        ];
        assert_eq!(choose(&people, payments_coe()), Ok("gi@example.com".into()));
        assert_eq!(
            choose(&people[..2], payments_coe()),
            Ok("fa@example.com".into())
        );
        let tie = [
            candidate("zo@example.com", "search", at(3)),
            candidate("al@example.com", "edge", at(3)),
        ];
        assert_eq!(choose(&tie, payments_coe()), Ok("al@example.com".into()));
    }

    #[test]
    fn nobody_with_a_part_in_the_coe_raises_its_bar() {
        let people = [
            candidate("bo@example.com", "search", None),
            candidate("ana@example.com", "edge", None),
        ];
        assert!(matches!(
            choose(&people, payments_coe()),
            Err(NoBarRaiser::NoneEligible(why)) if why.contains("Payments")
        ));
        assert_eq!(
            choose(&[], payments_coe()),
            Err(NoBarRaiser::NoneInDirectory)
        );
    }

    #[test]
    fn only_the_worst_outages_need_one() {
        assert!(needed(Severity::Sev1, Severity::Sev1));
        assert!(!needed(Severity::Sev2, Severity::Sev1));
        assert!(needed(Severity::Sev2, Severity::Sev2));
    }
}
