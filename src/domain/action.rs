//! Corrective actions: their life cycle, and the one definition of "overdue".

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// open → in progress → done | won't do; done and won't do can be reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    Open,
    InProgress,
    Done,
    WontDo,
}

impl ActionState {
    pub const ALL: [ActionState; 4] = [
        ActionState::Open,
        ActionState::InProgress,
        ActionState::Done,
        ActionState::WontDo,
    ];

    /// Still to be done. The one definition: `is_active` in Rust, and in SQL
    /// `db::rules::action_is_active` (which filters on `ACTIVE_NAMES`).
    pub const ACTIVE: [ActionState; 2] = [ActionState::Open, ActionState::InProgress];

    /// `ACTIVE` as the database stores the states.
    pub const ACTIVE_NAMES: [&'static str; 2] = [
        ActionState::ACTIVE[0].as_str(),
        ActionState::ACTIVE[1].as_str(),
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ActionState::Open => "open",
            ActionState::InProgress => "in_progress",
            ActionState::Done => "done",
            ActionState::WontDo => "wont_do",
        }
    }

    pub fn parse(s: &str) -> Option<ActionState> {
        ActionState::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// Still to be done: open or in progress (`ACTIVE`).
    pub fn is_active(self) -> bool {
        ActionState::ACTIVE.contains(&self)
    }
}

impl fmt::Display for ActionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a person asks an action to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Start,
    Complete,
    WontDo,
    Reopen,
}

impl Transition {
    pub fn name(self) -> &'static str {
        match self {
            Transition::Start => "start",
            Transition::Complete => "complete",
            Transition::WontDo => "wont-do",
            Transition::Reopen => "reopen",
        }
    }

    /// Whether this transition needs a note (resolution, reason, or why it reopens).
    pub fn needs_note(self) -> bool {
        !matches!(self, Transition::Start)
    }
}

/// A transition that the current state does not allow, with those it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {verb} an action that is {current}; from {current} it can: {allowed}")]
pub struct InvalidTransition {
    pub verb: &'static str,
    pub current: ActionState,
    pub allowed: String,
}

/// The transitions allowed from a state.
pub fn allowed(from: ActionState) -> &'static [Transition] {
    match from {
        ActionState::Open => &[Transition::Start, Transition::Complete, Transition::WontDo],
        ActionState::InProgress => &[Transition::Complete, Transition::WontDo],
        ActionState::Done | ActionState::WontDo => &[Transition::Reopen],
    }
}

/// The state a transition leads to, or why it is refused.
pub fn transition(from: ActionState, verb: Transition) -> Result<ActionState, InvalidTransition> {
    if !allowed(from).contains(&verb) {
        return Err(InvalidTransition {
            verb: verb.name(),
            current: from,
            allowed: allowed(from)
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(match verb {
        Transition::Start => ActionState::InProgress,
        Transition::Complete => ActionState::Done,
        Transition::WontDo => ActionState::WontDo,
        Transition::Reopen => ActionState::Open,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    Detect,
    Diagnose,
    Mitigate,
    Prevent,
    Process,
}

impl Priority {
    /// Every priority, the most urgent first (as forms offer them).
    pub const ALL: [Priority; 3] = [Priority::High, Priority::Medium, Priority::Low];

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

impl ActionKind {
    /// Every kind, in the order an incident goes (as forms offer them).
    pub const ALL: [ActionKind; 5] = [
        ActionKind::Detect,
        ActionKind::Diagnose,
        ActionKind::Mitigate,
        ActionKind::Prevent,
        ActionKind::Process,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ActionKind::Detect => "detect",
            ActionKind::Diagnose => "diagnose",
            ActionKind::Mitigate => "mitigate",
            ActionKind::Prevent => "prevent",
            ActionKind::Process => "process",
        }
    }
}

impl ActionKind {
    /// The kinds meant to keep an outage from coming back, or to catch or soften it
    /// when it does: a recurrence judges them.
    pub const JUDGED_BY_RECURRENCE: [ActionKind; 3] = [
        ActionKind::Prevent,
        ActionKind::Detect,
        ActionKind::Mitigate,
    ];

    pub fn is_judged_by_recurrence(self) -> bool {
        Self::JUDGED_BY_RECURRENCE.contains(&self)
    }
}

/// Whether an outage that came back at `recurred_at` judges an action: one of the
/// kinds meant to prevent, detect or mitigate it, done before the outage started
/// again (an action done after it started did not fail to prevent it).
pub fn recurred_after_done(
    kind: ActionKind,
    state: ActionState,
    closed_at: Option<chrono::NaiveDateTime>,
    recurred_at: chrono::NaiveDateTime,
) -> bool {
    kind.is_judged_by_recurrence()
        && state == ActionState::Done
        && closed_at.is_some_and(|closed| closed <= recurred_at)
}

/// Fewest words a completion note needs to count as evidence on its own: a sentence
/// saying how the action was verified, not "done" or "deployed".
pub const EVIDENCE_NOTE_MIN_WORDS: usize = 6;

/// Why completing an action of `kind` with `note` and `evidence_url` is refused, if
/// it is: an action meant to prevent, detect or mitigate an outage needs evidence
/// against its success criteria — a link, or a note of at least a sentence saying how
/// it was verified. Other kinds need only their note.
pub fn missing_evidence(
    kind: ActionKind,
    note: Option<&str>,
    evidence_url: Option<&str>,
) -> Option<String> {
    if !kind.is_judged_by_recurrence() || evidence_url.is_some_and(|u| !u.trim().is_empty()) {
        return None;
    }
    let words = note.map_or(0, |n| n.split_whitespace().count());
    (words < EVIDENCE_NOTE_MIN_WORDS).then(|| {
        format!(
            "an action to {} needs evidence against its success criteria to be done: a link \
             (evidence_url, http or https) or a note of at least a sentence \
             ({EVIDENCE_NOTE_MIN_WORDS} words or more) saying how it was verified",
            kind.as_str()
        )
    })
}

/// Whether a closed action closed on time: done on or before its due date (in the
/// organisation's calendar). `None` for an action decided not to be done: it is
/// neither on time nor late, and is counted apart. The one rule for the stats, the
/// inspection digest and the dashboard.
pub fn closed_on_time(state: ActionState, due: NaiveDate, closed_day: NaiveDate) -> Option<bool> {
    match state {
        ActionState::Done => Some(closed_day <= due),
        _ => None,
    }
}

/// A closing target (`[[actions.targets]]`): an action of `priority`, on a COE at
/// or above `severity` when one is named, is to close within `days` of being added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub priority: Priority,
    #[serde(default)]
    pub severity: Option<super::Severity>,
    pub days: u32,
}

/// The most days a target may give (ten years).
pub const MAX_TARGET_DAYS: u32 = 3650;

/// The days an action of `priority` on a COE of `severity` has to close: the
/// tightest target that applies (one naming no severity applies to every COE; one
/// naming a severity to COEs at or above it). `None` when no target applies.
pub fn target_days(
    targets: &[Target],
    priority: Priority,
    severity: super::Severity,
) -> Option<u32> {
    targets
        .iter()
        .filter(|t| t.priority == priority)
        .filter(|t| t.severity.is_none_or(|s| severity.at_or_above(s)))
        .map(|t| t.days)
        .min()
}

/// The day an action of `priority` added on `added` to a COE of `severity` is to
/// close by, when a target applies.
pub fn target_date(
    targets: &[Target],
    priority: Priority,
    severity: super::Severity,
    added: NaiveDate,
) -> Option<NaiveDate> {
    target_days(targets, priority, severity).map(|days| added + chrono::Days::new(u64::from(days)))
}

/// Whether a due date lies past the action's target (a target is a day it may close on).
pub fn past_target(due: NaiveDate, target: Option<NaiveDate>) -> bool {
    target.is_some_and(|t| due > t)
}

/// Whether a risk accepted until `until` gives an action due on `due` more time: a
/// day before or on its due date asks for nothing (until then it is not late).
pub fn extends_due_date(until: NaiveDate, due: NaiveDate) -> bool {
    until > due
}

/// Whether an action done on `closed_day` closed within its target: `None` when it
/// has no target or was decided not to be done.
pub fn closed_within_target(
    state: ActionState,
    target: Option<NaiveDate>,
    closed_day: NaiveDate,
) -> Option<bool> {
    match (state, target) {
        (ActionState::Done, Some(target)) => Some(closed_day <= target),
        _ => None,
    }
}

/// The organisation's calendar date at `now`.
pub fn today(now: DateTime<Utc>, tz: Tz) -> NaiveDate {
    now.with_timezone(&tz).date_naive()
}

/// Dates people write lie in years 1970 to 9999. Outside them a date is a mistake or
/// an attack (on SQLite, dates compare as text: `+262142-12-31` sorts before 2026).
pub fn check_date(date: NaiveDate) -> Result<(), String> {
    if (1970..=9999).contains(&date.year()) {
        Ok(())
    } else {
        Err(format!(
            "must be a date between 1970-01-01 and 9999-12-31 (got {date})"
        ))
    }
}

/// A due date must be in the future when it is set: after today in the
/// organisation's time zone.
pub fn check_new_due_date(due: NaiveDate, now: DateTime<Utc>, tz: Tz) -> Result<(), String> {
    check_date(due)?;
    let today = today(now, tz);
    if due > today {
        Ok(())
    } else {
        Err(format!(
            "must be a date in the future (got {due}; today is {today} in {tz})"
        ))
    }
}

/// The one definition of overdue: the action is still open or in progress and its
/// due date has ended in the organisation's time zone. The API, the board, the
/// stats and the reminders all ask this function.
pub fn is_overdue(state: ActionState, due: NaiveDate, now: DateTime<Utc>, tz: Tz) -> bool {
    state.is_active() && past_due(due, today(now, tz))
}

/// The date half of `is_overdue`: on `day`, an action due on `due` is past its due
/// date (its due date ended before `day` began). For lists already narrowed to
/// actions still to be done, and for a past day's figures. Its SQL twin is
/// `db::rules::action_is_overdue` (and `action_is_overdue_sql`).
pub fn past_due(due: NaiveDate, day: NaiveDate) -> bool {
    due < day
}

/// Whole days past the due date (0 when not overdue).
pub fn days_overdue(state: ActionState, due: NaiveDate, now: DateTime<Utc>, tz: Tz) -> i64 {
    if is_overdue(state, due, now, tz) {
        (today(now, tz) - due).num_days()
    } else {
        0
    }
}

/// Whether `by`, the COE's reviewer, may verify an action owned by `owner` and
/// completed by `completed_by`: nobody verifies their own work, under any spelling of
/// their address (`email::same_person`). The rule broken, in words, when not.
pub fn may_verify(
    by: &str,
    owner: &str,
    completed_by: Option<&str>,
    dotless: &[String],
) -> Result<(), &'static str> {
    use super::email::{same_person, same_person_opt};
    if same_person(by, owner, dotless) {
        return Err("nobody verifies an action they own");
    }
    if same_person_opt(Some(by), completed_by, dotless) {
        return Err("nobody verifies an action they completed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_tightest_target_that_applies_sets_the_date() {
        use crate::domain::Severity;
        let t = |priority, severity, days| Target {
            priority,
            severity,
            days,
        };
        let targets = [
            t(Priority::High, None, 28),
            t(Priority::Medium, None, 56),
            t(Priority::High, Some(Severity::Sev1), 14),
            t(Priority::High, Some(Severity::Sev2), 21),
        ];
        assert_eq!(
            target_days(&targets, Priority::High, Severity::Sev1),
            Some(14)
        );
        assert_eq!(
            target_days(&targets, Priority::High, Severity::Sev2),
            Some(21)
        );
        assert_eq!(
            target_days(&targets, Priority::High, Severity::Sev3),
            Some(28)
        );
        assert_eq!(
            target_days(&targets, Priority::Medium, Severity::Sev1),
            Some(56)
        );
        assert_eq!(target_days(&targets, Priority::Low, Severity::Sev1), None);
        let added = NaiveDate::from_ymd_opt(2027, 1, 30).expect("a date");
        assert_eq!(
            target_date(&targets, Priority::High, Severity::Sev2, added),
            NaiveDate::from_ymd_opt(2027, 2, 20)
        );
        let target = NaiveDate::from_ymd_opt(2027, 2, 20);
        assert!(!past_target(
            NaiveDate::from_ymd_opt(2027, 2, 20).expect("a date"),
            target
        ));
        assert!(past_target(
            NaiveDate::from_ymd_opt(2027, 2, 21).expect("a date"),
            target
        ));
        assert!(!past_target(
            NaiveDate::from_ymd_opt(2099, 1, 1).expect("a date"),
            None
        ));
        let day = NaiveDate::from_ymd_opt(2027, 2, 21).expect("a date");
        assert_eq!(
            closed_within_target(ActionState::Done, target, day),
            Some(false)
        );
        assert_eq!(
            closed_within_target(ActionState::Done, target, added),
            Some(true)
        );
        assert_eq!(
            closed_within_target(ActionState::WontDo, target, added),
            None
        );
        assert_eq!(closed_within_target(ActionState::Done, None, added), None);
    }

    #[test]
    fn done_needs_evidence_where_an_outage_is_to_be_prevented() {
        let sentence = Some("Failed over twice in a game day, both within a minute.");
        for kind in ActionKind::ALL {
            let judged = kind.is_judged_by_recurrence();
            assert_eq!(
                missing_evidence(kind, Some("Deployed."), None).is_some(),
                judged,
                "{kind:?}"
            );
            assert_eq!(
                missing_evidence(kind, None, None).is_some(),
                judged,
                "{kind:?}"
            );
            assert!(missing_evidence(kind, sentence, None).is_none(), "{kind:?}");
            assert!(
                missing_evidence(kind, Some("done"), Some("https://grafana.example.com/d/1"))
                    .is_none(),
                "{kind:?}"
            );
        }
        assert!(
            missing_evidence(ActionKind::Prevent, Some("one two three four five"), None).is_some()
        );
        assert!(missing_evidence(
            ActionKind::Prevent,
            Some("one two three four five six"),
            None
        )
        .is_none());
        assert!(missing_evidence(ActionKind::Prevent, Some("x"), Some("  ")).is_some());
    }

    #[test]
    fn a_recurrence_judges_preventive_actions_done_before_it_started() {
        let at = |h: u32| {
            NaiveDate::from_ymd_opt(2026, 11, 30)
                .and_then(|d| d.and_hms_opt(h, 0, 0))
                .expect("a time")
        };
        let recurred = at(12);
        for kind in ActionKind::ALL {
            let judged = recurred_after_done(kind, ActionState::Done, Some(at(9)), recurred);
            assert_eq!(
                judged,
                matches!(
                    kind,
                    ActionKind::Prevent | ActionKind::Detect | ActionKind::Mitigate
                ),
                "{kind:?}"
            );
        }
        // Done as it started again: judged; done after: not; not done: not.
        assert!(recurred_after_done(
            ActionKind::Prevent,
            ActionState::Done,
            Some(recurred),
            recurred
        ));
        assert!(!recurred_after_done(
            ActionKind::Prevent,
            ActionState::Done,
            Some(at(13)),
            recurred
        ));
        for state in [
            ActionState::Open,
            ActionState::InProgress,
            ActionState::WontDo,
        ] {
            assert!(!recurred_after_done(
                ActionKind::Prevent,
                state,
                Some(at(9)),
                recurred
            ));
        }
        assert!(!recurred_after_done(
            ActionKind::Prevent,
            ActionState::Done,
            None,
            recurred
        ));
    }

    #[test]
    fn priorities_and_kinds_are_named_as_serde_names_them() {
        for p in Priority::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        for k in ActionKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }

    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, min, 0)
            .single()
            .expect("valid time")
    }

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
    }

    #[test]
    fn every_transition_allowed_and_refused() {
        use ActionState::*;
        use Transition::*;
        let table = [
            (Open, Start, Some(InProgress)),
            (Open, Complete, Some(Done)),
            (Open, Transition::WontDo, Some(ActionState::WontDo)),
            (Open, Reopen, None),
            (InProgress, Start, None),
            (InProgress, Complete, Some(Done)),
            (InProgress, Transition::WontDo, Some(ActionState::WontDo)),
            (InProgress, Reopen, None),
            (Done, Start, None),
            (Done, Complete, None),
            (Done, Transition::WontDo, None),
            (Done, Reopen, Some(Open)),
            (ActionState::WontDo, Start, None),
            (ActionState::WontDo, Complete, None),
            (ActionState::WontDo, Reopen, Some(Open)),
        ];
        for (from, verb, to) in table {
            assert_eq!(transition(from, verb).ok(), to, "{from} {}", verb.name());
        }
        let err = transition(Done, Start).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot start an action that is done; from done it can: reopen"
        );
    }

    #[test]
    fn due_today_in_utc_minus_8_is_not_overdue_at_23_00_there() {
        let la: Tz = "America/Los_Angeles".parse().expect("tz");
        // 23:00 on 29 November in Los Angeles is 07:00 on 30 November in UTC.
        let now = utc(2026, 11, 30, 7, 0);
        assert!(!is_overdue(ActionState::Open, date(2026, 11, 29), now, la));
        assert!(is_overdue(
            ActionState::Open,
            date(2026, 11, 29),
            now,
            Tz::UTC
        ));
        // One hour later it is the 30th in Los Angeles too.
        let later = utc(2026, 11, 30, 8, 0);
        assert!(is_overdue(
            ActionState::InProgress,
            date(2026, 11, 29),
            later,
            la
        ));
        assert_eq!(
            days_overdue(ActionState::Open, date(2026, 11, 22), later, la),
            8
        );
    }

    #[test]
    fn dates_outside_years_1970_to_9999_are_refused() {
        let now = utc(2026, 11, 29, 12, 0);
        let far: NaiveDate = "+262142-12-31".parse().unwrap();
        assert!(check_new_due_date(far, now, Tz::UTC).is_err());
        assert!(check_new_due_date(date(9999, 12, 31), now, Tz::UTC).is_ok());
        assert!(check_date(date(1969, 12, 31)).is_err());
    }

    #[test]
    fn closed_actions_are_never_overdue() {
        let now = utc(2026, 12, 31, 12, 0);
        assert!(!is_overdue(
            ActionState::Done,
            date(2026, 1, 1),
            now,
            Tz::UTC
        ));
        assert!(!is_overdue(
            ActionState::WontDo,
            date(2026, 1, 1),
            now,
            Tz::UTC
        ));
        assert_eq!(
            days_overdue(ActionState::Done, date(2026, 1, 1), now, Tz::UTC),
            0
        );
    }

    #[test]
    fn a_due_date_must_be_after_today_in_the_organisation() {
        let tokyo: Tz = "Asia/Tokyo".parse().expect("tz");
        // 20:00 UTC on the 29th is already the 30th in Tokyo.
        let now = utc(2026, 11, 29, 20, 0);
        assert!(check_new_due_date(date(2026, 11, 30), now, Tz::UTC).is_ok());
        assert!(check_new_due_date(date(2026, 11, 30), now, tokyo)
            .unwrap_err()
            .contains("today is 2026-11-30"));
        assert!(check_new_due_date(date(2026, 12, 1), now, tokyo).is_ok());
    }
}
