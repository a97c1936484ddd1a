//! What each event says in chat, and to which channels: a COE opened or a review
//! step (`coe_notice`), the daily overdue summary, the day's escalations and the
//! weekly inspection. Each builds a `Notice` and queues it with `super::notify` or
//! `super::enqueue`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{enqueue, notify, Route};
use crate::chat::{self, Notice};
use crate::config::{ChannelSettings, ChatEvent};
use crate::db::schema::chat_messages;
use crate::db::DbConnection;
use crate::domain::coe::CoeFacts;
use crate::services::Env;

/// A COE's notice (opened, a review step) to the channels of its team and service,
/// and to its own (`linked`).
/// `what` heads it ("COE opened"); `key` makes it once per channel.
#[allow(clippy::too_many_arguments)]
pub fn coe_notice(
    conn: &mut DbConnection,
    env: Env<'_>,
    event: ChatEvent,
    coe: &CoeFacts<'_>,
    what: &str,
    by: Option<&str>,
    key: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let settings = env.settings;
    if env.connections.channels.is_empty() {
        return Ok(0);
    }
    let team = crate::services::directory::ownership::team_of_coe(conn, coe.owner, coe.service)?;
    let mut facts = vec![
        ("Severity".to_owned(), coe.severity.to_owned()),
        (
            "Service".to_owned(),
            coe.service.unwrap_or("(none named)").to_owned(),
        ),
        (
            "Owner".to_owned(),
            coe.owner
                .map_or_else(|| "nobody yet — take it".to_owned(), str::to_owned),
        ),
    ];
    if let Some(reviewer) = coe.reviewer {
        facts.push(("Reviewer".into(), reviewer.to_owned()));
    }
    if let Some(by) = by {
        facts.push(("By".into(), by.to_owned()));
    }
    let notice = Notice {
        headline: format!("{what}: {}", coe.title),
        facts,
        items: Vec::new(),
        total_items: 0,
        link_label: "Open the COE".into(),
        link_url: format!(
            "{}/coes/{}",
            settings.public_url.trim_end_matches('/'),
            coe.id
        ),
    };
    let route = Route {
        team: team.as_deref(),
        service: coe.service,
    };
    let queued = notify(conn, env, event, route, key, &notice, now)?;
    // And the COE's own channels (where it was reported from chat, or linked).
    Ok(queued + super::linked::queue(conn, env, coe.id, route, event, key, &notice, now)?)
}

/// Once a day (the sweep after `reminders.send_hour`): each channel that hears
/// `overdue_daily` gets one summary of its overdue actions — how many, the ten
/// oldest with owner and days overdue, a link to the board (filtered to its team
/// when it has one). A channel with nothing overdue hears nothing. Keyed by the day:
/// once per channel whichever replica sweeps.
pub fn overdue_daily(
    conn: &mut DbConnection,
    env: Env<'_>,
    today: chrono::NaiveDate,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let settings = env.settings;
    use crate::db::schema::{coes, corrective_actions, people};
    let channels: Vec<&ChannelSettings> = env
        .connections
        .channels
        .iter()
        .filter(|c| c.events.contains(&ChatEvent::OverdueDaily))
        .collect();
    if channels.is_empty() {
        return Ok(0);
    }
    type Overdue = (
        String,
        String,
        chrono::NaiveDate,
        Option<String>,
        Option<String>,
    );
    let overdue: Vec<Overdue> = corrective_actions::table
        .inner_join(coes::table.on(coes::id.eq(corrective_actions::coe_id)))
        .left_join(people::table.on(people::email.eq(corrective_actions::owner_email)))
        .filter(crate::db::rules::action_is_overdue(today))
        .order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        ))
        .select((
            corrective_actions::title,
            corrective_actions::owner_email,
            corrective_actions::due_date,
            people::team.nullable(),
            coes::service,
        ))
        .load(conn)?;
    let base = settings.public_url.trim_end_matches('/');
    let mut queued = 0;
    for channel in channels {
        let mine: Vec<&Overdue> = overdue
            .iter()
            .filter(|(_, _, _, team, service)| {
                channel.wants(ChatEvent::OverdueDaily, team.as_deref(), service.as_deref())
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let items = mine
            .iter()
            .take(chat::format::MAX_ITEMS)
            .map(|(title, owner, due, _, _)| {
                let days = (today - *due).num_days();
                format!(
                    "{title} — {owner}, {days} day{} overdue",
                    if days == 1 { "" } else { "s" }
                )
            })
            .collect();
        let board = match channel.teams.as_slice() {
            [team] => format!(
                "{base}/board?team={}",
                form_urlencoded::byte_serialize(team.as_bytes()).collect::<String>()
            ),
            _ => format!("{base}/board"),
        };
        let notice = Notice {
            headline: format!(
                "{} overdue corrective action{}",
                mine.len(),
                if mine.len() == 1 { "" } else { "s" }
            ),
            facts: vec![("Day".into(), today.to_string())],
            items,
            total_items: mine.len(),
            link_label: "Open the overdue board".into(),
            link_url: board,
        };
        queued += enqueue(
            conn,
            channel,
            ChatEvent::OverdueDaily,
            &format!("overdue_daily:{today}"),
            &notice,
            now,
        )?;
    }
    Ok(queued)
}

/// An action escalated today, as a channel reads it.
pub struct Escalated<'a> {
    pub action: &'a crate::domain::reminder::DueAction,
    /// Whom it went to (a manager, or the COE's owner or reviewer).
    pub to: &'a str,
}

/// The actions escalated for the first time today, to each channel that hears
/// `escalation` about them (the owner's team, the COE's service): one notice a day
/// per channel, listing them.
pub fn escalations(
    conn: &mut DbConnection,
    env: Env<'_>,
    today: chrono::NaiveDate,
    escalated: &[Escalated<'_>],
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let settings = env.settings;
    use crate::db::schema::{coes, people};
    let channels: Vec<&ChannelSettings> = env
        .connections
        .channels
        .iter()
        .filter(|c| c.events.contains(&ChatEvent::Escalation))
        .collect();
    if channels.is_empty() || escalated.is_empty() {
        return Ok(0);
    }
    let owners: Vec<&str> = escalated.iter().map(|e| e.action.owner.as_str()).collect();
    let teams: std::collections::HashMap<String, Option<String>> = people::table
        .filter(people::email.eq_any(&owners))
        .select((people::email, people::team))
        .load::<(String, Option<String>)>(conn)?
        .into_iter()
        .collect();
    let coe_ids: Vec<&str> = escalated.iter().map(|e| e.action.coe_id.as_str()).collect();
    let services: std::collections::HashMap<String, Option<String>> = coes::table
        .filter(coes::id.eq_any(&coe_ids))
        .select((coes::id, coes::service))
        .load::<(String, Option<String>)>(conn)?
        .into_iter()
        .collect();
    let base = settings.public_url.trim_end_matches('/');
    let mut queued = 0;
    for channel in channels {
        let mine: Vec<&Escalated<'_>> = escalated
            .iter()
            .filter(|e| {
                let team = teams.get(&e.action.owner).cloned().flatten();
                let service = services.get(&e.action.coe_id).cloned().flatten();
                channel.wants(ChatEvent::Escalation, team.as_deref(), service.as_deref())
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let items = mine
            .iter()
            .take(chat::format::MAX_ITEMS)
            .map(|e| {
                let days = (today - e.action.due).num_days();
                format!(
                    "{} — {}, {days} day{} overdue, escalated to {}",
                    e.action.title,
                    e.action.owner,
                    if days == 1 { "" } else { "s" },
                    e.to
                )
            })
            .collect();
        let notice = Notice {
            headline: format!(
                "{} overdue action{} escalated to managers today",
                mine.len(),
                if mine.len() == 1 { "" } else { "s" }
            ),
            facts: vec![(
                "Threshold".into(),
                format!("{} days overdue", settings.reminders.escalate_after_days),
            )],
            items,
            total_items: mine.len(),
            link_label: "Open the overdue board".into(),
            link_url: format!("{base}/board"),
        };
        queued += enqueue(
            conn,
            channel,
            ChatEvent::Escalation,
            &format!("escalation:{today}"),
            &notice,
            now,
        )?;
    }
    Ok(queued)
}

/// The weekly inspection in each channel that hears `inspection_weekly` (on the
/// digest's weekday, once a week): its team's open and overdue actions (the
/// organisation's, for an organisation-wide channel), the actions closed in the last
/// 30 days on time and late, the COEs waiting for review and the drafts past their
/// deadline, and a link to the dashboard.
/// What the weekly inspection tells the channels (the statistics module's, which the
/// reminder sweep computes: chat does not reach into the statistics).
#[derive(Debug, Clone, Default)]
pub struct WeeklyFigures {
    /// Open and overdue actions, in all and by the owners' team.
    pub open: i64,
    pub overdue: i64,
    pub by_team: std::collections::BTreeMap<String, (i64, i64)>,
    /// Actions closed in the last 30 days: on time, late, won't do.
    pub closed: (i64, i64, i64),
    /// Titles of the drafts past their deadline, and of the COEs waiting for review.
    pub drafts_past_deadline: Vec<String>,
    pub waiting_for_review: Vec<String>,
}

pub fn inspection_weekly(
    conn: &mut DbConnection,
    env: Env<'_>,
    figures: &WeeklyFigures,
    week: chrono::NaiveDate,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    let settings = env.settings;
    let base = settings.public_url.trim_end_matches('/');
    let mut queued = 0;
    for channel in env
        .connections
        .channels
        .iter()
        .filter(|c| c.events.contains(&ChatEvent::InspectionWeekly))
    {
        let (open, overdue) = if channel.teams.is_empty() {
            (figures.open, figures.overdue)
        } else {
            channel
                .teams
                .iter()
                .filter_map(|t| figures.by_team.get(t))
                .fold((0, 0), |(o, d), (open, overdue)| (o + open, d + overdue))
        };
        let scope = if channel.teams.is_empty() {
            "the organisation".to_owned()
        } else {
            channel.teams.join(", ")
        };
        let (on_time, late, wont_do) = figures.closed;
        let items = figures
            .drafts_past_deadline
            .iter()
            .map(|title| format!("Draft past its deadline: {title}"))
            .chain(
                figures
                    .waiting_for_review
                    .iter()
                    .map(|title| format!("Waiting for review: {title}")),
            )
            .collect::<Vec<_>>();
        let total = items.len();
        let notice = Notice {
            headline: format!("The week's inspection for {scope}"),
            facts: vec![
                ("Open actions".into(), open.to_string()),
                ("Overdue".into(), overdue.to_string()),
                (
                    "Closed in 30 days".into(),
                    format!("{on_time} on time, {late} late, {wont_do} won't do"),
                ),
            ],
            items: items.into_iter().take(chat::format::MAX_ITEMS).collect(),
            total_items: total,
            link_label: "Open the dashboard".into(),
            link_url: format!("{base}/dashboard"),
        };
        queued += enqueue(
            conn,
            channel,
            ChatEvent::InspectionWeekly,
            &format!("inspection_weekly:{week}"),
            &notice,
            now,
        )?;
    }
    Ok(queued)
}

/// Whether a channel that hears `inspection_weekly` has not had this week's yet
/// (the figures are worth computing).
pub fn inspection_due(
    conn: &mut DbConnection,
    env: Env<'_>,
    week: chrono::NaiveDate,
) -> QueryResult<bool> {
    let keys: Vec<String> = env
        .connections
        .channels
        .iter()
        .filter(|c| c.events.contains(&ChatEvent::InspectionWeekly))
        .map(|c| format!("{}:inspection_weekly:{week}", c.name))
        .collect();
    if keys.is_empty() {
        return Ok(false);
    }
    let sent: i64 = chat_messages::table
        .filter(chat_messages::dedup_key.eq_any(&keys))
        .count()
        .get_result(conn)?;
    Ok(usize::try_from(sent).unwrap_or(0) < keys.len())
}
