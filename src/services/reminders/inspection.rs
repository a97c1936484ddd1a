//! The sweep's emails about COEs and the inspection: writeups past their deadline
//! (daily, to each owner) and the weekly inspection digest (to subscribers).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use diesel::prelude::*;

use super::{line, Decision, Payload, DIGEST_TOP};
use crate::db::schema::corrective_actions;
use crate::db::{types, DbConnection};
use crate::domain::action::{self, closed_on_time, ActionState};
use crate::domain::clock::{local_date, Clock};
use crate::domain::reminder::{iso_week, period_start, writeup_deadline, DueAction, Person};
use crate::email::content::{
    coes_named, CoeLine, InspectionDigest, Links, TeamLine, WriteupOverdue,
};
use crate::email::Kind;
use crate::services::Env;
use crate::services::{figures::coverage, figures::stats};

/// Drafts past their writeup deadline: one reminder a day to each owner.
pub(super) fn writeups_overdue(
    conn: &mut DbConnection,
    env: Env<'_>,
    at: DateTime<Utc>,
    tz: Tz,
    links: &Links,
) -> QueryResult<Vec<Decision>> {
    let settings = env.settings;
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
                    coes_named: coes_named(coes.iter().map(|c| c.title.as_str())),
                    coes,
                })
                .unwrap_or_default(),
            ),
            recipient: owner,
        })
        .collect())
}

/// The weekly inspection digest, one per subscriber.
pub(super) fn inspection_digests(
    conn: &mut DbConnection,
    env: Env<'_>,
    at: DateTime<Utc>,
    tz: Tz,
    actions: &[DueAction],
    directory: &HashMap<String, Person>,
    links: &Links,
) -> QueryResult<Vec<Decision>> {
    let settings = env.settings;
    let clock = Clock { now: at, tz };
    let today = clock.today();
    let figures = stats::stats(conn, clock, settings.coe.writeup_days)?;
    // Coverage over four weeks: a COE has a week to be written, and more to be reviewed.
    let coverage_from = clock.today() - chrono::Duration::days(27);
    let audit = coverage::audit(conn, env, None, coverage_from, clock.today())?;
    let (on_time, late) = closed_last_week(conn, clock)?;
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
            .filter(|a| action::past_due(a.due, today))
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
        review_meeting_link: links.review_meeting(),
        coverage_from: coverage_from.to_string(),
        coverage: coverage_lines(&audit),
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

/// How many actions closed last week (Monday 00:00 to Monday 00:00, organisation
/// time) by their due date, and how many after it.
fn closed_last_week(conn: &mut DbConnection, clock: Clock) -> QueryResult<(i64, i64)> {
    let (today, tz) = (clock.today(), clock.tz);
    let this_monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let last_monday = this_monday - Duration::days(7);
    let start_of = |d: NaiveDate| -> NaiveDateTime {
        tz.from_local_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
            .earliest()
            .map(|t| t.naive_utc())
            .unwrap_or_else(|| d.and_hms_opt(0, 0, 0).unwrap_or_default())
    };
    let closed: Vec<(String, NaiveDate, Option<NaiveDateTime>)> = corrective_actions::table
        .filter(corrective_actions::closed_at.ge(start_of(last_monday)))
        .filter(corrective_actions::closed_at.lt(start_of(this_monday)))
        .select((
            corrective_actions::state,
            corrective_actions::due_date,
            corrective_actions::closed_at,
        ))
        .load(conn)?;
    let (mut on_time, mut late) = (0, 0);
    for (state, due, closed_at) in closed {
        let Some(closed_at) = closed_at else { continue };
        let state: ActionState = types::read("corrective_actions.state", &state)?;
        match closed_on_time(state, due, local_date(closed_at, tz)) {
            Some(true) => on_time += 1,
            Some(false) => late += 1,
            None => {}
        }
    }
    Ok((on_time, late))
}

/// The coverage audit as the inspection email lists it: everyone, then each team.
fn coverage_lines(audit: &coverage::Coverage) -> Vec<crate::email::content::CoverageLine> {
    let line = |team: &str, f: &coverage::CoverageFigures| {
        let state = |s: &str| f.incidents_by_coe_state.get(s).copied().unwrap_or(0);
        crate::email::content::CoverageLine {
            team: team.to_owned(),
            incidents: f.incidents_at_policy,
            none: state("none"),
            draft_past_deadline: state("draft_past_deadline"),
            in_review: state("in_review"),
            approved: state("approved"),
            without_prevention: f.approved_without_prevention,
            with_warnings: f.approved_with_warnings,
            without_bar_raiser: f.approved_without_bar_raiser,
        }
    };
    std::iter::once(line("Everyone", &audit.overall))
        .chain(audit.by_team.iter().map(|(t, f)| line(t, f)))
        .collect()
}
