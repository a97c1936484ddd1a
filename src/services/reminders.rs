//! The reminder policy: which emails are due, decided from the data at a moment.
//!
//! A sweep looks at the actions and COEs as of `at` and queues, through the outbox,
//! the daily overdue digest of each owner, the weekly escalations, the daily
//! writeup-overdue reminders and the weekly inspection digest. Each email's
//! deduplication key is (kind, period, recipient), so any number of sweeps, on any
//! number of replicas, queue each email once. Event emails (a COE opened, review
//! steps) are queued by `coe_opened` and `review_step`, in the transaction of the event.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use diesel::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use crate::config::Settings;
use crate::db::schema::{coes, corrective_actions, people};
use crate::db::{self, DbConnection};
use crate::domain::action::ActionState;
use crate::email::content::{
    ActionLine, CoeLine, CoeOpened, Escalation, InspectionDigest, Links, OverdueDigest,
    ReviewEmail, TeamLine, WriteupOverdue,
};
use crate::email::{EmailTemplates, Kind};
use crate::services::actions::Clock;
use crate::services::outbox::{self, NewEmail};
use crate::services::stats;

/// Emails rendered and queued per transaction.
const CHUNK: usize = 200;
/// Longest-overdue actions listed in the inspection digest.
const DIGEST_TOP: usize = 20;

/// An email a sweep queued (or, in a dry run, would queue).
#[derive(Debug, Clone, Serialize)]
pub struct Planned {
    pub kind: &'static str,
    pub recipient: String,
    pub subject: String,
    pub dedup_key: String,
}

/// What a sweep decided.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub at: DateTime<Utc>,
    /// `at` in the organisation's time zone.
    pub local_time: String,
    /// True when it is earlier than `reminders.send_hour` there: nothing is due yet.
    pub before_send_hour: bool,
    pub queued: Vec<Planned>,
    /// Emails due but queued already (by an earlier sweep or another replica).
    pub already_queued: usize,
    /// Sent emails older than `reminders.keep_sent_days`, deleted by this sweep.
    pub purged: usize,
}

/// One decision to send: the email's kind, key, recipient and what it says. Lists
/// of actions are kept as indexes into the sweep's actions and turned into the
/// template's data only when the email is rendered, so a sweep whose emails are
/// already queued builds none of it.
struct Decision {
    kind: Kind,
    key: String,
    recipient: String,
    payload: Payload,
}

enum Payload {
    Digest {
        overdue: Vec<usize>,
        due_soon: Vec<usize>,
    },
    Escalation {
        threshold_days: i64,
        reports: Vec<usize>,
        unmanaged: Vec<usize>,
    },
    Ready(Value),
}

/// What rendering a decision's action lists needs.
struct Lines<'a> {
    actions: &'a [DueAction],
    today: NaiveDate,
    directory: &'a HashMap<String, Person>,
    links: &'a Links,
}

impl Lines<'_> {
    fn lines(&self, indexes: &[usize]) -> Vec<ActionLine> {
        indexes
            .iter()
            .filter_map(|&i| self.actions.get(i))
            .map(|a| line(a, self.today, self.directory, self.links))
            .collect()
    }

    /// The template data of `d`.
    fn data(&self, d: &Decision) -> Value {
        let value = match &d.payload {
            Payload::Digest { overdue, due_soon } => serde_json::to_value(OverdueDigest {
                recipient_name: String::new(),
                overdue: self.lines(overdue),
                due_soon: self.lines(due_soon),
                actions_link: self.links.actions_of(&d.recipient),
            }),
            Payload::Escalation {
                threshold_days,
                reports,
                unmanaged,
            } => serde_json::to_value(Escalation {
                recipient_name: String::new(),
                threshold_days: *threshold_days,
                total: reports.len() + unmanaged.len(),
                reports: self.lines(reports),
                unmanaged: self.lines(unmanaged),
            }),
            Payload::Ready(value) => Ok(value.clone()),
        };
        value.unwrap_or_default()
    }
}

/// An active action due by the horizon, with its COE.
struct DueAction {
    id: String,
    title: String,
    owner: String,
    due: NaiveDate,
    coe_id: String,
    coe_title: String,
    coe_owner: Option<String>,
    coe_reviewer: Option<String>,
}

/// A person of the directory: name and manager.
struct Person {
    name: Option<String>,
    manager: Option<String>,
}

/// Decides the emails due at `at` and queues them (unless `dry_run`).
pub fn sweep(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    at: DateTime<Utc>,
    dry_run: bool,
) -> QueryResult<SweepReport> {
    let tz = settings.org_timezone();
    let local = at.with_timezone(&tz);
    let mut report = SweepReport {
        at,
        local_time: local.to_rfc3339(),
        before_send_hour: local.hour() < settings.reminders.send_hour,
        queued: Vec::new(),
        already_queued: 0,
        purged: 0,
    };
    if !dry_run {
        // Counted from the real now, not `at`: a sweep evaluated in the future must not
        // delete keys that today's sweeps still need.
        let keep = Duration::days(settings.reminders.keep_sent_days);
        report.purged = outbox::purge_sent(conn, db::now() - keep)?;
    }
    if report.before_send_hour {
        return Ok(report);
    }
    let today = local.date_naive();
    let links = Links::new(&settings.public_url);
    let r = &settings.reminders;
    let actions = due_actions(conn, today + Duration::days(r.due_soon_days))?;
    let directory = directory(conn)?;

    let mut decisions = overdue_digests(&actions, today, r.digest_every_days);
    decisions.extend(escalations(
        &actions,
        today,
        r.escalate_after_days,
        r.escalation_every_days,
        &directory,
    ));
    decisions.extend(writeups_overdue(conn, settings, at, tz, &links)?);
    if today.weekday() == settings.digest_weekday() && !settings.digest.recipients.is_empty() {
        decisions.extend(inspection_digests(
            conn, settings, at, tz, &actions, &directory, &links,
        )?);
    }

    let existing = existing_keys(conn, &decisions)?;
    let before = decisions.len();
    decisions.retain(|d| !existing.contains(&d.key));
    report.already_queued = before - decisions.len();

    let lines = Lines {
        actions: &actions,
        today,
        directory: &directory,
        links: &links,
    };
    let now = db::now();
    for chunk in decisions.chunks(CHUNK) {
        if dry_run {
            for d in chunk {
                if let Some(email) = compose(templates, d, &lines) {
                    report.queued.push(planned(&email));
                }
            }
            continue;
        }
        let (queued, duplicates) = db::write_transaction(conn, |conn| {
            let mut queued = Vec::new();
            let mut duplicates = 0;
            for d in chunk {
                let Some(email) = compose(templates, d, &lines) else {
                    continue;
                };
                if outbox::enqueue(conn, &email, now)? {
                    queued.push(planned(&email));
                } else {
                    duplicates += 1;
                }
            }
            Ok::<_, diesel::result::Error>((queued, duplicates))
        })?;
        report.queued.extend(queued);
        report.already_queued += duplicates;
    }
    Ok(report)
}

fn planned(email: &NewEmail) -> Planned {
    Planned {
        kind: email.kind.name(),
        recipient: email.recipient.clone(),
        subject: email.subject.clone(),
        dedup_key: email.dedup_key.clone(),
    }
}

/// Renders a decision, greeting the recipient by their name in the directory the
/// sweep loaded; a template that fails is logged and the email skipped, so one
/// broken email does not stop every other reminder.
fn compose(templates: &EmailTemplates, d: &Decision, lines: &Lines<'_>) -> Option<NewEmail> {
    let name = lines
        .directory
        .get(&d.recipient)
        .and_then(|p| p.name.as_deref());
    match outbox::compose(
        templates,
        d.kind,
        d.key.clone(),
        &d.recipient,
        name,
        lines.data(d),
    ) {
        Ok(email) => Some(email),
        Err(e) => {
            tracing::error!(error = %e, key = %d.key, "cannot render a reminder; it is skipped");
            None
        }
    }
}

/// The keys among `decisions` that are in the outbox already.
fn existing_keys(conn: &mut DbConnection, decisions: &[Decision]) -> QueryResult<HashSet<String>> {
    let keys: Vec<&str> = decisions.iter().map(|d| d.key.as_str()).collect();
    outbox::existing_keys(conn, &keys)
}

/// Active actions due on or before `horizon`, soonest first, with their COE.
fn due_actions(conn: &mut DbConnection, horizon: NaiveDate) -> QueryResult<Vec<DueAction>> {
    type Row = (
        String,
        String,
        String,
        NaiveDate,
        String,
        String,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = corrective_actions::table
        .inner_join(coes::table)
        .filter(
            corrective_actions::state
                .eq_any([ActionState::Open.as_str(), ActionState::InProgress.as_str()]),
        )
        .filter(corrective_actions::due_date.le(horizon))
        .order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        ))
        .select((
            corrective_actions::id,
            corrective_actions::title,
            corrective_actions::owner_email,
            corrective_actions::due_date,
            coes::id,
            coes::title,
            coes::owner_email,
            coes::reviewer_email,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(
            |(id, title, owner, due, coe_id, coe_title, coe_owner, coe_reviewer)| DueAction {
                id,
                title,
                owner,
                due,
                coe_id,
                coe_title,
                coe_owner,
                coe_reviewer,
            },
        )
        .collect())
}

fn directory(conn: &mut DbConnection) -> QueryResult<HashMap<String, Person>> {
    Ok(people::table
        .select((people::email, people::name, people::manager_email))
        .load::<(String, Option<String>, Option<String>)>(conn)?
        .into_iter()
        .map(|(email, name, manager)| {
            (
                email,
                Person {
                    name: name.filter(|n| !n.trim().is_empty()),
                    manager: manager.filter(|m| !m.trim().is_empty()),
                },
            )
        })
        .collect())
}

fn line(
    a: &DueAction,
    today: NaiveDate,
    directory: &HashMap<String, Person>,
    links: &Links,
) -> ActionLine {
    let days_until_due = (a.due - today).num_days();
    ActionLine {
        action_id: a.id.clone(),
        title: a.title.clone(),
        coe_id: a.coe_id.clone(),
        coe_title: a.coe_title.clone(),
        owner: a.owner.clone(),
        owner_name: directory
            .get(&a.owner)
            .and_then(|p| p.name.clone())
            .unwrap_or_else(|| a.owner.clone()),
        due_date: a.due.to_string(),
        days_overdue: (-days_until_due).max(0),
        days_until_due,
        link: links.action(&a.id),
    }
}

/// The first day of the period of `every_days` days that holds `day`: periods are
/// counted from Monday 1970-01-05, so a 7-day period is a Monday-to-Sunday week and a
/// 1-day period is the day itself. Deduplication keys name periods by this date.
fn period_start(day: NaiveDate, every_days: i64) -> NaiveDate {
    let origin = NaiveDate::from_ymd_opt(1970, 1, 5).unwrap_or_default();
    let every = every_days.max(1);
    let n = (day - origin).num_days().div_euclid(every);
    origin + Duration::days(n * every)
}

/// "2026-W48": the ISO week of `day`, as the inspection digest names it.
fn iso_week(day: NaiveDate) -> String {
    let w = day.iso_week();
    format!("{}-W{:02}", w.year(), w.week())
}

/// One digest per owner with an overdue action or one due soon, per period of
/// `every_days` (a day by default).
fn overdue_digests(actions: &[DueAction], today: NaiveDate, every_days: i64) -> Vec<Decision> {
    let period = period_start(today, every_days);
    let mut by_owner: BTreeMap<&str, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, a) in actions.iter().enumerate() {
        let entry = by_owner.entry(&a.owner).or_default();
        if a.due < today {
            entry.0.push(i);
        } else {
            entry.1.push(i);
        }
    }
    by_owner
        .into_iter()
        .map(|(owner, (overdue, due_soon))| Decision {
            kind: Kind::OverdueDigest,
            key: format!("{}:{period}:{owner}", Kind::OverdueDigest.name()),
            recipient: owner.to_owned(),
            payload: Payload::Digest { overdue, due_soon },
        })
        .collect()
}

/// Actions overdue by `after_days` or more go, once a week, to their owner's manager,
/// or, when none is known, to their COE's owner and reviewer.
fn escalations(
    actions: &[DueAction],
    today: NaiveDate,
    after_days: i64,
    every_days: i64,
    directory: &HashMap<String, Person>,
) -> Vec<Decision> {
    // recipient → (actions of their reports, actions of their COEs with no manager known)
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
    if nobody > 0 {
        tracing::warn!(
            actions = nobody,
            "overdue actions have nobody to escalate to: their owners have no manager in the directory and their COEs no owner or reviewer"
        );
    }
    let period = period_start(today, every_days);
    by_recipient
        .into_iter()
        .map(|(recipient, (reports, unmanaged))| Decision {
            kind: Kind::Escalation,
            key: format!("{}:{period}:{recipient}", Kind::Escalation.name()),
            payload: Payload::Escalation {
                threshold_days: after_days,
                reports,
                unmanaged,
            },
            recipient,
        })
        .collect()
}

/// The writeup deadline of a COE whose incident resolved at `resolved_at`.
fn writeup_deadline(resolved_at: NaiveDateTime, writeup_days: i64) -> NaiveDateTime {
    resolved_at + Duration::days(writeup_days)
}

fn local_date(t: NaiveDateTime, tz: Tz) -> NaiveDate {
    t.and_utc().with_timezone(&tz).date_naive()
}

/// Drafts past their writeup deadline: one reminder a day to each owner.
fn writeups_overdue(
    conn: &mut DbConnection,
    settings: &Settings,
    at: DateTime<Utc>,
    tz: Tz,
    links: &Links,
) -> QueryResult<Vec<Decision>> {
    let days = settings.coe.writeup_days;
    let cutoff = at.naive_utc() - Duration::days(days);
    let rows = stats::late_drafts(conn, cutoff)?;
    let today = at.with_timezone(&tz).date_naive();
    let period = period_start(today, settings.reminders.writeup_every_days);
    let mut by_owner: BTreeMap<String, Vec<CoeLine>> = BTreeMap::new();
    for (id, title, owner, reviewer, resolved) in rows {
        let (Some(owner), Some(resolved)) = (owner, resolved) else {
            continue;
        };
        let deadline = writeup_deadline(resolved, days);
        by_owner.entry(owner.clone()).or_default().push(CoeLine {
            link: links.coe(&id),
            coe_id: id,
            title,
            owner,
            reviewer: reviewer.unwrap_or_default(),
            deadline: local_date(deadline, tz).to_string(),
            days: (at.naive_utc() - deadline).num_days().max(1),
        });
    }
    Ok(by_owner
        .into_iter()
        .map(|(owner, coes)| Decision {
            kind: Kind::WriteupOverdue,
            key: format!("{}:{period}:{owner}", Kind::WriteupOverdue.name()),
            payload: Payload::Ready(
                serde_json::to_value(WriteupOverdue {
                    recipient_name: String::new(),
                    coes,
                })
                .unwrap_or_default(),
            ),
            recipient: owner,
        })
        .collect())
}

/// The weekly inspection digest, one per subscriber.
fn inspection_digests(
    conn: &mut DbConnection,
    settings: &Settings,
    at: DateTime<Utc>,
    tz: Tz,
    actions: &[DueAction],
    directory: &HashMap<String, Person>,
    links: &Links,
) -> QueryResult<Vec<Decision>> {
    let clock = Clock { now: at, tz };
    let today = clock.today();
    let figures = stats::stats(conn, clock, settings.coe.writeup_days)?;
    // Last week: Monday 00:00 to Monday 00:00, organisation time.
    let this_monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let last_monday = this_monday - Duration::days(7);
    let start_of = |d: NaiveDate| -> NaiveDateTime {
        tz.from_local_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
            .earliest()
            .map(|t| t.naive_utc())
            .unwrap_or_else(|| d.and_hms_opt(0, 0, 0).unwrap_or_default())
    };
    let closed: Vec<(NaiveDate, Option<NaiveDateTime>)> = corrective_actions::table
        .filter(corrective_actions::closed_at.ge(start_of(last_monday)))
        .filter(corrective_actions::closed_at.lt(start_of(this_monday)))
        .select((corrective_actions::due_date, corrective_actions::closed_at))
        .load(conn)?;
    let (mut on_time, mut late) = (0, 0);
    for (due, closed_at) in closed {
        match closed_at {
            Some(t) if local_date(t, tz) <= due => on_time += 1,
            Some(_) => late += 1,
            None => {}
        }
    }
    let coe_line = |w: &stats::WaitingCoe, deadline: String| CoeLine {
        coe_id: w.coe_id.clone(),
        title: w.title.clone(),
        owner: w.owner.clone().unwrap_or_default(),
        reviewer: w.reviewer.clone().unwrap_or_default(),
        deadline,
        days: w.days,
        link: links.coe(&w.coe_id),
    };
    let mut by_owner: Vec<TeamLine> = figures
        .actions_by_owner
        .iter()
        .filter(|(_, f)| f.overdue > 0)
        .map(|(owner, f)| TeamLine {
            team: owner.clone(),
            open: f.open,
            overdue: f.overdue,
        })
        .collect();
    by_owner.sort_by(|a, b| b.overdue.cmp(&a.overdue).then(a.team.cmp(&b.team)));
    let digest = InspectionDigest {
        recipient_name: String::new(),
        week: iso_week(today),
        open_total: figures.actions.open,
        overdue_total: figures.actions.overdue,
        by_team: figures
            .actions_by_team
            .iter()
            .map(|(team, f)| TeamLine {
                team: team.clone(),
                open: f.open,
                overdue: f.overdue,
            })
            .collect(),
        by_owner,
        overdue: actions
            .iter()
            .filter(|a| a.due < today)
            .take(DIGEST_TOP)
            .map(|a| line(a, today, directory, links))
            .collect(),
        waiting_for_review: figures
            .waiting_for_review
            .iter()
            .map(|w| coe_line(w, String::new()))
            .collect(),
        drafts_past_deadline: figures
            .drafts_past_deadline
            .iter()
            .map(|w| {
                let deadline = writeup_deadline(w.since, settings.coe.writeup_days);
                coe_line(w, local_date(deadline, tz).to_string())
            })
            .collect(),
        closed_on_time: on_time,
        closed_late: late,
        stats_link: links.stats(),
    };
    let data = serde_json::to_value(digest).unwrap_or_default();
    let week = period_start(today, 7);
    Ok(settings
        .digest
        .recipients
        .iter()
        .map(|r| r.trim().to_ascii_lowercase())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|recipient| Decision {
            kind: Kind::InspectionDigest,
            key: format!("{}:{week}:{recipient}", Kind::InspectionDigest.name()),
            payload: Payload::Ready(data.clone()),
            recipient,
        })
        .collect())
}

/// What an event email needs to know of its COE.
pub struct CoeFacts<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub owner: Option<&'a str>,
    pub reviewer: Option<&'a str>,
    pub severity: &'a str,
    pub service: Option<&'a str>,
    pub resolved_at: Option<NaiveDateTime>,
}

fn coe_line(settings: &Settings, coe: &CoeFacts<'_>) -> CoeLine {
    CoeLine {
        coe_id: coe.id.to_owned(),
        title: coe.title.to_owned(),
        owner: coe.owner.unwrap_or_default().to_owned(),
        reviewer: coe.reviewer.unwrap_or_default().to_owned(),
        deadline: coe
            .resolved_at
            .map(|t| {
                local_date(
                    writeup_deadline(t, settings.coe.writeup_days),
                    settings.org_timezone(),
                )
                .to_string()
            })
            .unwrap_or_default(),
        days: 0,
        link: Links::new(&settings.public_url).coe(coe.id),
    }
}

/// Tells a new COE's owner it is theirs. Call it in the transaction that opened it.
pub fn coe_opened(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    coe: &CoeFacts<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let Some(owner) = coe.owner else {
        return Ok(());
    };
    let data = json!(CoeOpened {
        recipient_name: String::new(),
        coe: coe_line(settings, coe),
        severity: coe.severity.to_owned(),
        service: coe.service.unwrap_or_default().to_owned(),
        writeup_days: settings.coe.writeup_days,
    });
    let key = format!("{}:{}:{owner}", Kind::CoeOpened.name(), coe.id);
    outbox::notify(conn, templates, Kind::CoeOpened, key, owner, data, now)
}

/// Tells the reviewer (submitted) or the owner (changes requested, approved) of a
/// review step. `step_id` (the review comment's id) makes each step's email unique.
#[allow(clippy::too_many_arguments)]
pub fn review_step(
    conn: &mut DbConnection,
    settings: &Settings,
    templates: &EmailTemplates,
    kind: Kind,
    coe: &CoeFacts<'_>,
    actor: &str,
    comment: Option<&str>,
    step_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let recipient = match kind {
        Kind::ReviewRequested => coe.reviewer,
        _ => coe.owner,
    };
    let Some(recipient) = recipient else {
        return Ok(());
    };
    if recipient == actor {
        return Ok(());
    }
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: coe_line(settings, coe),
        actor: actor.to_owned(),
        comment: comment.unwrap_or_default().to_owned(),
    });
    let key = format!("{}:{}:{step_id}", kind.name(), coe.id);
    outbox::notify(conn, templates, kind, key, recipient, data, now)
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
        let links = Links::new("https://coe.example.com");
        let directory = HashMap::new();
        let lines = Lines {
            actions: &actions,
            today,
            directory: &directory,
            links: &links,
        };
        let d = overdue_digests(&actions, today, 1);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].key, "overdue_digest:2026-11-29:ana@example.com");
        let ana = lines.data(&d[0]);
        assert_eq!(ana["overdue"].as_array().unwrap().len(), 2);
        assert_eq!(ana["overdue"][0]["days_overdue"], 9);
        assert_eq!(ana["due_soon"].as_array().unwrap().len(), 1);
        assert_eq!(ana["due_soon"][0]["days_until_due"], 2);
        assert_eq!(lines.data(&d[1])["overdue"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn escalation_starts_at_the_threshold_and_prefers_the_manager() {
        let today = day("2026-11-29");
        let links = Links::new("https://coe.example.com");
        let six = vec![action("ana@example.com", day("2026-11-23"))];
        assert!(escalations(&six, today, 7, 7, &HashMap::new()).is_empty());

        let seven = vec![action("ana@example.com", day("2026-11-22"))];
        let to_coe = escalations(&seven, today, 7, 7, &HashMap::new());
        let recipients: Vec<&str> = to_coe.iter().map(|d| d.recipient.as_str()).collect();
        assert_eq!(recipients, ["lead@example.com", "rev@example.com"]);
        // 2026-11-29 is a Sunday: its week began on Monday the 23rd.
        assert_eq!(to_coe[0].key, "escalation:2026-11-23:lead@example.com");

        let mut directory = HashMap::new();
        directory.insert(
            "ana@example.com".to_owned(),
            Person {
                name: Some("Ana".into()),
                manager: Some("boss@example.com".into()),
            },
        );
        let to_manager = escalations(&seven, today, 7, 7, &directory);
        assert_eq!(to_manager.len(), 1);
        assert_eq!(to_manager[0].recipient, "boss@example.com");
        let lines = Lines {
            actions: &seven,
            today,
            directory: &directory,
            links: &links,
        };
        let data = lines.data(&to_manager[0]);
        assert_eq!(data["total"], 1);
        assert_eq!(data["unmanaged"].as_array().unwrap().len(), 0);
        assert_eq!(data["reports"][0]["owner_name"], "Ana");
        assert_eq!(data["reports"][0]["days_overdue"], 7);
    }
}
