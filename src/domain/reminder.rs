//! The reminder policy as pure functions over plain data: which overdue digests and
//! escalations are due on a day, and the periods that deduplicate them. The sweep
//! (`services::reminders`) loads the data, calls these, and turns each decision into
//! an email; nothing here knows about the database or the templates.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};

/// An active action due by the sweep's horizon, with its COE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueAction {
    pub id: String,
    pub title: String,
    pub owner: String,
    pub due: NaiveDate,
    pub coe_id: String,
    pub coe_title: String,
    pub coe_owner: Option<String>,
    pub coe_reviewer: Option<String>,
}

/// A person of the directory, as the policy sees them: name and manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Person {
    pub name: Option<String>,
    pub manager: Option<String>,
}

/// The first day of the period of `every_days` days that holds `day`: periods are
/// counted from Monday 1970-01-05, so a 7-day period is a Monday-to-Sunday week and a
/// 1-day period is the day itself. Deduplication keys name periods by this date.
pub fn period_start(day: NaiveDate, every_days: i64) -> NaiveDate {
    let origin = NaiveDate::from_ymd_opt(1970, 1, 5).unwrap_or_default();
    let every = every_days.max(1);
    let n = (day - origin).num_days().div_euclid(every);
    origin + Duration::days(n * every)
}

/// "2026-W48": the ISO week of `day`, as the inspection digest names it.
pub fn iso_week(day: NaiveDate) -> String {
    let w = day.iso_week();
    format!("{}-W{:02}", w.year(), w.week())
}

/// The writeup deadline of a COE whose incident resolved at `resolved_at`.
pub fn writeup_deadline(resolved_at: NaiveDateTime, writeup_days: i64) -> NaiveDateTime {
    resolved_at
        .checked_add_signed(Duration::days(writeup_days))
        .unwrap_or(NaiveDateTime::MAX)
}

/// The day of the last email of one kind to each recipient, as the outbox remembers
/// it (from the deduplication keys, which name their day).
pub type LastSent = HashMap<String, NaiveDate>;

/// Whether a recipient is due a repeated email: never had one, or `every_days` have
/// passed since the last.
fn period_passed(last: Option<NaiveDate>, today: NaiveDate, every_days: i64) -> bool {
    last.is_none_or(|l| (today - l).num_days() >= every_days.max(1))
}

/// One owner's digest due today: indexes into the sweep's actions, overdue ones and
/// ones due soon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestDue {
    pub owner: String,
    pub overdue: Vec<usize>,
    pub due_soon: Vec<usize>,
}

/// The digests due today: one per owner with an overdue action or one due soon, at
/// most once per `every_days` (a day by default), except that an action that became
/// overdue since the owner's last digest never waits for the period to end.
/// `actions` are those due by the horizon.
pub fn overdue_digests(
    actions: &[DueAction],
    today: NaiveDate,
    every_days: i64,
    last_sent: &LastSent,
) -> Vec<DigestDue> {
    let mut by_owner: BTreeMap<&str, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, a) in actions.iter().enumerate() {
        let entry = by_owner.entry(&a.owner).or_default();
        if crate::domain::action::past_due(a.due, today) {
            entry.0.push(i);
        } else {
            entry.1.push(i);
        }
    }
    by_owner
        .into_iter()
        .filter(|(owner, (overdue, _))| {
            let last = last_sent.get(*owner).copied();
            // Overdue from the day after its due date: new since the last digest
            // when that day came after it.
            let newly_overdue = overdue.iter().any(|&i| {
                last.is_some_and(|l| !crate::domain::action::past_due(actions[i].due, l))
            });
            period_passed(last, today, every_days) || newly_overdue
        })
        .map(|(owner, (overdue, due_soon))| DigestDue {
            owner: owner.to_owned(),
            overdue,
            due_soon,
        })
        .collect()
}

/// One escalation email due today: actions of the recipient's reports, and actions
/// of their COEs whose owners have no manager known; in each list the actions that
/// crossed the threshold since the recipient's last escalation come first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationDue {
    pub recipient: String,
    pub reports: Vec<usize>,
    pub unmanaged: Vec<usize>,
    /// Which of the listed actions are newly escalated.
    pub new: BTreeSet<usize>,
}

/// The day an action is first `after_days` overdue.
pub fn crossing_day(due: NaiveDate, after_days: i64) -> NaiveDate {
    due.checked_add_signed(Duration::days(after_days))
        .unwrap_or(NaiveDate::MAX)
}

/// The escalations due today. Actions overdue by `after_days` or more go to their
/// owner's manager or, when none is known, to their COE's owner and reviewer. Every
/// action is escalated on the day it crosses the threshold (never waiting for the
/// recipient's period to end), and a recipient hears again at most once per
/// `every_days` while nothing new crosses. Also returns how many such actions have
/// nobody to go to.
pub fn escalations(
    actions: &[DueAction],
    today: NaiveDate,
    after_days: i64,
    every_days: i64,
    directory: &HashMap<String, Person>,
    last_sent: &LastSent,
) -> (Vec<EscalationDue>, usize) {
    let mut by_recipient: BTreeMap<String, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    let mut nobody = 0;
    for (i, a) in actions.iter().enumerate() {
        if (today - a.due).num_days() < after_days {
            continue;
        }
        let manager = directory.get(&a.owner).and_then(|p| p.manager.clone());
        let (recipients, as_manager) = match manager {
            Some(m) => (vec![m], true),
            None => {
                let mut r: Vec<String> = [&a.coe_owner, &a.coe_reviewer]
                    .into_iter()
                    .flatten()
                    .filter(|e| **e != a.owner)
                    .cloned()
                    .collect();
                r.dedup();
                (r, false)
            }
        };
        if recipients.is_empty() {
            nobody += 1;
        }
        for recipient in recipients {
            let entry = by_recipient.entry(recipient).or_default();
            if as_manager {
                entry.0.push(i);
            } else {
                entry.1.push(i);
            }
        }
    }
    let due = by_recipient
        .into_iter()
        .filter_map(|(recipient, (mut reports, mut unmanaged))| {
            let last = last_sent.get(&recipient).copied();
            let is_new =
                |i: &usize| last.is_none_or(|l| crossing_day(actions[*i].due, after_days) > l);
            let new: BTreeSet<usize> = reports
                .iter()
                .chain(&unmanaged)
                .copied()
                .filter(is_new)
                .collect();
            if new.is_empty() && !period_passed(last, today, every_days) {
                return None;
            }
            // Newly crossed first; the sort is stable, so due-date order stays within.
            reports.sort_by_key(|i| !new.contains(i));
            unmanaged.sort_by_key(|i| !new.contains(i));
            Some(EscalationDue {
                recipient,
                reports,
                unmanaged,
                new,
            })
        })
        .collect();
    (due, nobody)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(owner: &str, due: NaiveDate) -> DueAction {
        DueAction {
            id: format!("a-{owner}-{due}"),
            title: "Add a canary".into(),
            owner: owner.into(),
            due,
            coe_id: "c1".into(),
            coe_title: "Outage".into(),
            coe_owner: Some("lead@example.com".into()),
            coe_reviewer: Some("rev@example.com".into()),
        }
    }

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn periods_start_on_mondays_for_weeks_and_on_the_day_for_days() {
        assert_eq!(period_start(day("2026-11-29"), 1), day("2026-11-29"));
        assert_eq!(period_start(day("2026-11-29"), 7), day("2026-11-23"));
        assert_eq!(period_start(day("2026-11-30"), 7), day("2026-11-30"));
        assert_eq!(period_start(day("1969-12-31"), 7), day("1969-12-29"));
        let p = period_start(day("2026-11-29"), 3);
        assert!(p <= day("2026-11-29") && day("2026-11-29") < p + Duration::days(3));
        assert_eq!(iso_week(day("2026-11-29")), "2026-W48");
    }

    #[test]
    fn one_digest_per_owner_lists_overdue_and_due_soon() {
        let today = day("2026-11-29");
        let actions = vec![
            action("ana@example.com", day("2026-11-20")),
            action("ana@example.com", day("2026-11-28")),
            action("ana@example.com", day("2026-12-01")),
            action("bo@example.com", day("2026-12-02")),
        ];
        let d = overdue_digests(&actions, today, 1, &LastSent::new());
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].owner, "ana@example.com");
        assert_eq!(d[0].overdue, [0, 1]);
        assert_eq!(d[0].due_soon, [2]);
        assert_eq!(d[1].overdue, Vec::<usize>::new());
        assert_eq!(d[1].due_soon, [3]);
    }

    #[test]
    fn a_newly_overdue_action_does_not_wait_for_a_weekly_digest() {
        let actions = vec![action("ana@example.com", day("2026-11-20"))];
        let mut last = LastSent::new();
        last.insert("ana@example.com".into(), day("2026-11-23"));
        // Weekly digests: nothing new since Monday's digest, nothing on Wednesday.
        assert!(overdue_digests(&actions, day("2026-11-25"), 7, &last).is_empty());
        // An action due on Tuesday is overdue on Wednesday: a digest at once.
        let more = vec![
            action("ana@example.com", day("2026-11-20")),
            action("ana@example.com", day("2026-11-24")),
        ];
        assert_eq!(overdue_digests(&more, day("2026-11-25"), 7, &last).len(), 1);
        // A week after the last one, again.
        assert_eq!(
            overdue_digests(&actions, day("2026-11-30"), 7, &last).len(),
            1
        );
    }

    #[test]
    fn escalation_starts_at_the_threshold_and_prefers_the_manager() {
        let today = day("2026-11-29");
        let none = LastSent::new();
        let six = vec![action("ana@example.com", day("2026-11-23"))];
        assert!(escalations(&six, today, 7, 7, &HashMap::new(), &none)
            .0
            .is_empty());

        let seven = vec![action("ana@example.com", day("2026-11-22"))];
        let (to_coe, nobody) = escalations(&seven, today, 7, 7, &HashMap::new(), &none);
        assert_eq!(nobody, 0);
        let recipients: Vec<&str> = to_coe.iter().map(|d| d.recipient.as_str()).collect();
        assert_eq!(recipients, ["lead@example.com", "rev@example.com"]);
        assert_eq!(to_coe[0].unmanaged, [0]);
        assert!(to_coe[0].new.contains(&0));

        let mut directory = HashMap::new();
        directory.insert(
            "ana@example.com".to_owned(),
            Person {
                name: Some("Ana".into()),
                manager: Some("boss@example.com".into()),
            },
        );
        let (to_manager, _) = escalations(&seven, today, 7, 7, &directory, &none);
        assert_eq!(to_manager.len(), 1);
        assert_eq!(to_manager[0].recipient, "boss@example.com");
        assert_eq!(to_manager[0].reports, [0]);
        assert!(to_manager[0].unmanaged.is_empty());
    }

    #[test]
    fn a_report_crossing_later_in_the_week_is_escalated_the_same_day_and_listed_first() {
        let mut directory = HashMap::new();
        for owner in ["ana@example.com", "bo@example.com"] {
            directory.insert(
                owner.to_owned(),
                Person {
                    name: None,
                    manager: Some("boss@example.com".into()),
                },
            );
        }
        // Ana's action crossed day 7 on Monday the 23rd and the manager heard that day.
        let actions = vec![
            action("ana@example.com", day("2026-11-16")),
            action("bo@example.com", day("2026-11-19")),
        ];
        let mut last = LastSent::new();
        last.insert("boss@example.com".into(), day("2026-11-23"));
        // Tuesday: nothing new (Bo's crosses on Thursday), no email.
        assert!(
            escalations(&actions, day("2026-11-24"), 7, 7, &directory, &last)
                .0
                .is_empty()
        );
        // Thursday: Bo's crosses, the manager hears that day, Bo's listed first.
        let (due, _) = escalations(&actions, day("2026-11-26"), 7, 7, &directory, &last);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].reports, [1, 0]);
        assert_eq!(due[0].new, BTreeSet::from([1]));
        // After Thursday's email, nothing until a week later.
        last.insert("boss@example.com".into(), day("2026-11-26"));
        assert!(
            escalations(&actions, day("2026-12-02"), 7, 7, &directory, &last)
                .0
                .is_empty()
        );
        let (weekly, _) = escalations(&actions, day("2026-12-03"), 7, 7, &directory, &last);
        assert_eq!(weekly.len(), 1);
        assert!(weekly[0].new.is_empty());
    }

    #[test]
    fn an_action_owned_by_the_coe_owner_without_manager_goes_to_the_reviewer_only() {
        let today = day("2026-11-29");
        let none = LastSent::new();
        let own = vec![action("lead@example.com", day("2026-11-01"))];
        let (due, _) = escalations(&own, today, 7, 7, &HashMap::new(), &none);
        let recipients: Vec<&str> = due.iter().map(|d| d.recipient.as_str()).collect();
        assert_eq!(recipients, ["rev@example.com"]);
        let mut lonely = action("x@example.com", day("2026-11-01"));
        lonely.coe_owner = None;
        lonely.coe_reviewer = None;
        assert_eq!(
            escalations(&[lonely], today, 7, 7, &HashMap::new(), &none).1,
            1
        );
    }

    #[test]
    fn the_writeup_deadline_never_overflows() {
        let t = day("2026-11-29").and_hms_opt(10, 0, 0).unwrap();
        assert_eq!(
            writeup_deadline(t, 7),
            day("2026-12-06").and_hms_opt(10, 0, 0).unwrap()
        );
        assert_eq!(writeup_deadline(NaiveDateTime::MAX, 7), NaiveDateTime::MAX);
    }
}
