//! `/review-meeting`: the agenda of the weekly operations review (`services::figures::meeting`),
//! printable. The meeting is held weekly: "since" defaults to a week ago and may be
//! set in the URL; the COE read together is picked at random, and "Pick another"
//! is a link with a new pick.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::{Duration, NaiveDate};
use serde::Deserialize;
use serde_json::json;

use super::error::PageError;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::http::session::SignedIn;
use crate::services::figures::meeting;

#[derive(Debug, Deserialize)]
pub struct MeetingQuery {
    /// The last meeting's day (YYYY-MM-DD); a week ago when absent.
    pub since: Option<String>,
    /// Which approved COE to read together (any number; a new one picks another).
    pub pick: Option<String>,
}

/// `GET /review-meeting`.
pub async fn review_meeting(who: SignedIn, query: web::Query<MeetingQuery>, state: State) -> Page {
    let query = query.into_inner();
    let clock = state.settings.clock();
    let since = match super::query::filled(&query.since) {
        None => clock.today() - Duration::days(7),
        Some(day) => NaiveDate::parse_from_str(&day, "%Y-%m-%d")
            .ok()
            .filter(|d| crate::domain::action::check_date(*d).is_ok())
            .ok_or_else(|| {
                PageError::BadRequest(format!(
                    "since: {day:?} is not a date between 1970 and 9999 (YYYY-MM-DD, the last \
                     meeting's day)"
                ))
            })?,
    };
    let seed = match super::query::filled(&query.pick) {
        None => rand::random::<u32>().into(),
        Some(p) => p
            .parse::<u64>()
            .map_err(|_| PageError::BadRequest(format!("pick: {p:?} is not a number")))?,
    };
    let share = state.settings.incident_policy().budget_share;
    let (agenda, names) = as_service(&state, move |conn, state| {
        let dotless = &state.settings.auth.dotless_domains;
        let agenda = meeting::agenda(conn, clock, since, seed, (share, dotless))?;
        let shown: Vec<String> = agenda
            .approved
            .iter()
            .chain(&agenda.pick)
            .filter_map(|c| c.owner.clone())
            .chain(agenda.overdue.iter().map(|a| a.owner.clone()))
            .chain(agenda.past_target.iter().map(|a| a.owner.clone()))
            .chain(agenda.risk_ending.iter().map(|a| a.owner.clone()))
            .chain(agenda.recurrences.iter().map(|r| r.owner.clone()))
            .chain(
                agenda
                    .refusals
                    .iter()
                    .flat_map(|r| [r.owner.clone(), r.by.clone()]),
            )
            .collect();
        let names = crate::services::directory::people::names_of(conn, &shown)?;
        Ok((agenda, names))
    })
    .await?;
    let names = super::kit::names_data(&names);
    // Another pick: a new number, never the same one (the same list, a new COE when
    // there is more than one).
    let another = (seed + 1 + u64::from(rand::random::<u16>())) % 1_000_000;
    let another = if agenda.approved_total > 1
        && another % agenda.approved_total as u64 == seed % agenda.approved_total as u64
    {
        another + 1
    } else {
        another
    };
    let data = json!({
        "names": names,
        "agenda": agenda,
        "since": since.to_string(),
        "since_words": since.format("%A %-d %B %Y").to_string(),
        "today": clock.today().to_string(),
        "seed": seed,
        "another": another,
        "budget_share_percent": crate::domain::distribution::percent(share),
        "budget_rows": agenda
            .budget
            .iter()
            .map(|b| {
                let mut factors: Vec<(&String, &i64)> = b.factors.iter().collect();
                factors.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
                json!({
                    "service": b.service,
                    "incidents": b.incidents,
                    "slos": b.slos,
                    "percent": crate::domain::distribution::percent(b.burned),
                    "factors_words": factors
                        .iter()
                        .map(|(f, n)| format!("{f} ({n})"))
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            })
            .collect::<Vec<_>>(),
        "targets_set": !state.settings.actions.targets.is_empty(),
        "closed_rows": agenda
            .closed
            .iter()
            .map(|(team, c)| {
                let mut row = json!(c);
                row["team"] = json!(team);
                row
            })
            .collect::<Vec<_>>(),
        "overdue_more": (agenda.overdue_total - agenda.overdue.len() as i64).max(0),
    });
    render(&state, Some(&who), StatusCode::OK, "review_meeting", data)
}
