//! The reminder policy: which emails are due, decided from the data at a moment.
//!
//! A sweep looks at the actions and COEs as of `at` and queues, through the outbox,
//! the daily overdue digest of each owner, the weekly escalations, the daily
//! writeup-overdue reminders and the weekly inspection digest. Each email's
//! deduplication key is (kind, period, recipient), so any number of sweeps, on any
//! number of replicas, queue each email once. Event emails (a COE opened, review
//! steps) are queued by `coe_opened` and `review_step`, in the transaction of the event.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Datelike, Duration, NaiveDate, Timelike, Utc};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::db::schema::{coes, corrective_actions, people};
use crate::db::{self, DbConnection};
use crate::domain::reminder::{self, DueAction, Person};
use crate::email::content::{
    coes_named, ActionLine, Escalation, Links, OverdueDigest, VerificationsWaiting,
};
use crate::email::{EmailTemplates, Kind};
use crate::services::directory::notifications;
use crate::services::outbound;
use crate::services::outbound::outbox::{self, NewEmail};
use crate::services::Env;

mod chat;
mod inspection;
mod tidy;

use inspection::{inspection_digests, writeups_overdue};

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
    /// Emails due that their recipients' notification settings hold (a pause, digests
    /// only, only what needs them).
    pub held: usize,
    /// Sent emails older than `reminders.keep_sent_days`, deleted by this sweep.
    pub purged: usize,
    /// Raw webhook bodies older than `webhooks.keep_raw_days`, emptied by this sweep.
    pub raw_bodies_purged: usize,
    /// Events past `events.keep_days` dropped by this sweep (`services::incidents::retention`).
    pub pruned: crate::services::incidents::retention::Pruned,
    /// SQLite pages given back to the file system after pruning.
    pub pages_given_back: i64,
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
        /// The actions escalated for the first time.
        new: BTreeSet<usize>,
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

    /// The COEs of the actions at `indexes`, named for a subject.
    fn coes_named<'i>(&self, indexes: impl Iterator<Item = &'i usize>) -> String {
        coes_named(
            indexes
                .filter_map(|&i| self.actions.get(i))
                .map(|a| a.coe_title.as_str()),
        )
    }

    /// The template data of `d`.
    fn data(&self, d: &Decision) -> Value {
        let value = match &d.payload {
            Payload::Digest { overdue, due_soon } => serde_json::to_value(OverdueDigest {
                recipient_name: String::new(),
                coes_named: self.coes_named(overdue.iter().chain(due_soon)),
                overdue: self.lines(overdue),
                due_soon: self.lines(due_soon),
                actions_link: self.links.my_work(),
            }),
            Payload::Escalation {
                threshold_days,
                reports,
                unmanaged,
                new,
            } => {
                let flagged = |indexes: &[usize]| {
                    let mut lines = self.lines(indexes);
                    for (line, i) in lines.iter_mut().zip(indexes) {
                        line.newly_escalated = new.contains(i);
                    }
                    lines
                };
                serde_json::to_value(Escalation {
                    recipient_name: String::new(),
                    coes_named: self.coes_named(reports.iter().chain(unmanaged)),
                    threshold_days: *threshold_days,
                    total: reports.len() + unmanaged.len(),
                    newly_escalated: new.len(),
                    reports: flagged(reports),
                    unmanaged: flagged(unmanaged),
                })
            }
            Payload::Ready(value) => Ok(value.clone()),
        };
        value.unwrap_or_default()
    }
}

/// Decides the emails due at `at` and queues them (unless `dry_run`).
pub fn sweep(
    conn: &mut DbConnection,
    env: Env<'_>,
    at: DateTime<Utc>,
    dry_run: bool,
) -> QueryResult<SweepReport> {
    let (settings, templates) = (env.settings, env.emails);
    let tz = settings.org_timezone();
    let local = at.with_timezone(&tz);
    let mut report = SweepReport {
        at,
        local_time: local.to_rfc3339(),
        before_send_hour: local.hour() < settings.reminders.send_hour,
        queued: Vec::new(),
        already_queued: 0,
        held: 0,
        purged: 0,
        raw_bodies_purged: 0,
        pruned: Default::default(),
        pages_given_back: 0,
    };
    if !dry_run {
        tidy::tidy(conn, env, &mut report)?;
    }
    if report.before_send_hour {
        return Ok(report);
    }
    let today = local.date_naive();
    if !dry_run {
        // Each chat channel's summary of the day, next to the owners' digests.
        crate::services::outbound::chat::overdue_daily(conn, env, today, db::now())?;
        // Drills that prove fixes: re-checks opened and missed. A failure there is
        // logged and leaves the reminders to go.
        if let Err(e) =
            crate::services::coe::actions::drill::sweep(conn, env, at.naive_utc(), today)
        {
            tracing::error!(error = %e, "the drills' sweep failed; the next sweep tries again");
        }
    }
    let links = Links::new(&settings.public_url);
    let r = &settings.reminders;
    let actions = due_actions(conn, today + Duration::days(r.due_soon_days))?;
    let directory = directory(conn)?;

    // Keys name the day an email was decided: at most one of each kind a day, and
    // the latest key of a recipient up to `today` tells the policy when they last
    // heard. A sweep run ahead of time (`coe sweep --at` a later day) must not make
    // the days before it think the recipient heard already.
    let last_digests = outbox::last_sent(conn, Kind::OverdueDigest, today)?;
    let last_escalations = outbox::last_sent(conn, Kind::Escalation, today)?;
    let mut decisions: Vec<Decision> =
        reminder::overdue_digests(&actions, today, r.digest_every_days, &last_digests)
            .into_iter()
            .map(|d| Decision {
                kind: Kind::OverdueDigest,
                key: format!("{}:{today}:{}", Kind::OverdueDigest.name(), d.owner),
                recipient: d.owner,
                payload: Payload::Digest {
                    overdue: d.overdue,
                    due_soon: d.due_soon,
                },
            })
            .collect();
    let (escalations, nobody) = reminder::escalations(
        &actions,
        today,
        r.escalate_after_days,
        r.escalation_every_days,
        &directory,
        &last_escalations,
    );
    if nobody > 0 {
        tracing::warn!(
            actions = nobody,
            "overdue actions have nobody to escalate to: their owners have no manager in the directory and their COEs no owner or reviewer"
        );
    }
    if !dry_run {
        let clock = crate::domain::clock::Clock { now: at, tz };
        chat::tell_the_channels(conn, env, clock, &actions, &escalations)?;
    }
    decisions.extend(escalations.into_iter().map(|e| Decision {
        kind: Kind::Escalation,
        key: format!("{}:{today}:{}", Kind::Escalation.name(), e.recipient),
        payload: Payload::Escalation {
            threshold_days: r.escalate_after_days,
            reports: e.reports,
            unmanaged: e.unmanaged,
            new: e.new,
        },
        recipient: e.recipient,
    }));
    decisions.extend(writeups_overdue(conn, env, at, tz, &links)?);
    decisions.extend(verifications_waiting(conn, env, today, &directory, &links)?);
    if today.weekday() == settings.digest_weekday() && !settings.digest.recipients.is_empty() {
        decisions.extend(inspection_digests(
            conn, env, at, tz, &actions, &directory, &links,
        )?);
    }

    leave_out(conn, &mut decisions, at, &mut report)?;

    let lines = Lines {
        actions: &actions,
        today,
        directory: &directory,
        links: &links,
    };
    queue(conn, templates, &decisions, &lines, dry_run, &mut report)?;
    Ok(report)
}

/// Leaves out of `decisions` what an earlier sweep queued already (its key is in the
/// outbox) and what its recipient paused or turned off, as of the sweep's time `at`;
/// counts both in `report`.
fn leave_out(
    conn: &mut DbConnection,
    decisions: &mut Vec<Decision>,
    at: DateTime<Utc>,
    report: &mut SweepReport,
) -> QueryResult<()> {
    let existing = existing_keys(conn, decisions)?;
    let before = decisions.len();
    decisions.retain(|d| !existing.contains(&d.key));
    report.already_queued = before - decisions.len();
    // Whoever paused or left out reminders and digests is held, as of the sweep's time.
    let choices = notifications::choices(conn)?;
    let before = decisions.len();
    decisions.retain(|d| {
        choices
            .get(&d.recipient)
            .is_none_or(|c| c.allows(d.kind.class(), at.naive_utc()))
    });
    report.held = before - decisions.len();
    Ok(())
}

/// Writes each decision's email (`CHUNK` to a transaction, through the spine), or in
/// a dry run only says what it would write; an email another sweep queued meanwhile
/// counts as already queued.
fn queue(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    decisions: &[Decision],
    lines: &Lines<'_>,
    dry_run: bool,
    report: &mut SweepReport,
) -> QueryResult<()> {
    let now = db::now();
    for chunk in decisions.chunks(CHUNK) {
        if dry_run {
            for d in chunk {
                if let Some(email) = compose(templates, d, lines) {
                    report.queued.push(planned(&email));
                }
            }
            continue;
        }
        let (queued, duplicates) = db::write_transaction(conn, |conn| {
            let mut queued = Vec::new();
            let mut duplicates = 0;
            for d in chunk {
                let Some(email) = compose(templates, d, lines) else {
                    continue;
                };
                if outbound::spine::reminded(conn, &email, now)? {
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
    Ok(())
}

/// Most done actions read for the reviewers' daily emails.
const MAX_WAITING_VERIFICATION: i64 = 10_000;

/// One email a day to each reviewer with done actions waiting for their verification
/// (`work::waiting_verification`): nothing waits unseen.
fn verifications_waiting(
    conn: &mut DbConnection,
    env: Env<'_>,
    today: NaiveDate,
    directory: &HashMap<String, Person>,
    links: &Links,
) -> QueryResult<Vec<Decision>> {
    let settings = env.settings;
    let waiting = crate::services::figures::work::waiting_verification(
        conn,
        crate::services::figures::work::Whose::Everyone,
        settings.coe.verify_actions_from,
        &settings.auth.dotless_domains,
        MAX_WAITING_VERIFICATION,
    )?;
    let mut by_reviewer: std::collections::BTreeMap<String, Vec<ActionLine>> =
        std::collections::BTreeMap::new();
    for (reviewer, m) in waiting {
        let id = m.action_id.unwrap_or_default();
        let owner = m.by.unwrap_or_default();
        by_reviewer.entry(reviewer).or_default().push(ActionLine {
            link: links.action(&id),
            action_id: id,
            title: m.action_title.unwrap_or_default(),
            coe_id: m.coe_id,
            coe_title: m.coe_title,
            owner_name: directory
                .get(&owner)
                .and_then(|p| p.name.clone())
                .unwrap_or_default(),
            owner,
            due_date: String::new(),
            days_overdue: 0,
            days_until_due: 0,
            newly_escalated: false,
        });
    }
    let kind = Kind::VerificationsWaiting;
    Ok(by_reviewer
        .into_iter()
        .map(|(reviewer, actions)| Decision {
            kind,
            key: format!("{}:{today}:{reviewer}", kind.name()),
            payload: Payload::Ready(
                serde_json::to_value(VerificationsWaiting {
                    recipient_name: String::new(),
                    coes_named: coes_named(actions.iter().map(|a| a.coe_title.as_str())),
                    actions,
                    actions_link: links.my_work(),
                })
                .unwrap_or_default(),
            ),
            recipient: reviewer,
        })
        .collect())
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
        .filter(crate::db::rules::action_is_active())
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

/// Everyone's name and the manager escalations go to. A manager who left the
/// organisation is passed over for their own manager (who still works here), else
/// nobody: the escalation then goes to the COE's owner and reviewer.
fn directory(conn: &mut DbConnection) -> QueryResult<HashMap<String, Person>> {
    let rows: Vec<(String, Option<String>, Option<String>, bool)> = people::table
        .select((
            people::email,
            people::name,
            people::manager_email,
            people::active,
        ))
        .load(conn)?;
    let known: HashMap<String, (Option<String>, bool)> = rows
        .iter()
        .map(|(email, _, manager, active)| (email.clone(), (manager.clone(), *active)))
        .collect();
    let works_here = |m: &str| known.get(m).is_none_or(|(_, active)| *active);
    Ok(rows
        .into_iter()
        .map(|(email, name, manager, _)| {
            let manager = manager.filter(|m| !m.trim().is_empty()).and_then(|m| {
                if works_here(&m) {
                    return Some(m);
                }
                known
                    .get(&m)
                    .and_then(|(above, _)| above.clone())
                    .filter(|above| works_here(above) && *above != email)
            });
            (
                email,
                Person {
                    name: name.filter(|n| !n.trim().is_empty()),
                    manager,
                },
            )
        })
        .collect())
}

pub(super) fn line(
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
        // Empty for people outside the directory: they are named once, by address.
        owner_name: directory
            .get(&a.owner)
            .and_then(|p| p.name.clone())
            .unwrap_or_default(),
        due_date: a.due.to_string(),
        days_overdue: (-days_until_due).max(0),
        days_until_due,
        link: links.action(&a.id),
        newly_escalated: false,
    }
}

#[cfg(test)]
mod tests;
