//! The dashboard: the figures of `/api/v1/stats` (one function computes both), its
//! charts drawn as SVG on the server (`dashboard_charts`), and its tables: the
//! coverage audit, how long outages took, what contributed, what waits on whom.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::dashboard_charts::charts;
use super::error::PageError;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::http::session::SignedIn;
use crate::services::figures::stats::{self, Scope, WaitingCoe};

/// How many COEs each list shows.
const LISTED: usize = 20;

/// The dashboard's filters, in its address: a team (by the directory's teams, any
/// case) and how many weeks the weekly charts cover.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct DashboardQuery {
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    weeks: Option<String>,
    /// The coverage audit's first and last days (YYYY-MM-DD); the period's by default.
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

/// The periods offered, in weeks.
const PERIODS: [(usize, &str); 4] = [
    (4, "4 weeks"),
    (12, "12 weeks"),
    (26, "26 weeks"),
    (52, "year"),
];

/// `GET /dashboard`.
pub async fn dashboard(who: SignedIn, query: web::Query<DashboardQuery>, state: State) -> Page {
    let query = query.into_inner();
    let team = super::query::filled(&query.team);
    let weeks = match super::query::filled(&query.weeks) {
        None => stats::WEEKS,
        Some(w) => w
            .parse::<usize>()
            .ok()
            .filter(|w| (1..=stats::MAX_WEEKS).contains(w))
            .ok_or_else(|| {
                PageError::BadRequest(format!(
                    "weeks: {w:?} is not a number of weeks from 1 to {}",
                    stats::MAX_WEEKS
                ))
            })?,
    };
    let today = state.settings.clock().today();
    let audit_period = stats::inspect::period(query.from.as_deref(), query.to.as_deref(), today)
        .map_err(|(field, problem)| PageError::BadRequest(format!("{field}: {problem}")))?;
    let asked = team.clone();
    let (figures, unowned, teams) = as_service(&state, move |conn, state| {
        let scope = Scope::asked(conn, asked.as_deref(), weeks, audit_period)?;
        let unowned =
            crate::services::coe::coes::unowned(conn, i64::try_from(LISTED).unwrap_or(20))?;
        let teams = crate::services::directory::people::teams(conn)?;
        let figures = stats::inspect::audited(conn, state.env(), &state.live_figures, &scope)?;
        let clock = state.settings.clock();
        let past_target = crate::services::coe::actions::list(
            conn,
            &crate::services::coe::actions::ActionFilter {
                past_target: true,
                team: asked.clone(),
                ..Default::default()
            },
            crate::services::coe::actions::ActionSort::Target,
            i64::try_from(LISTED).unwrap_or(20),
            0,
            clock,
        )?;
        // The names of the people the lists show (their first `LISTED`).
        let shown: Vec<String> = figures
            .drafts_past_deadline
            .iter()
            .take(LISTED)
            .chain(figures.waiting_for_review.iter().take(LISTED))
            .flat_map(|w| [w.owner.clone(), w.reviewer.clone()])
            .flatten()
            .chain(past_target.0.iter().map(|a| a.owner.clone()))
            .collect();
        let names = crate::services::directory::people::names_of(conn, &shown)?;
        Ok((figures, unowned, (teams, names, past_target)))
    })
    .await?;
    let (teams, names, (past_target, past_target_total)) = teams;
    let names = super::kit::names_data(&names);
    let unowned: Vec<Value> = unowned.iter().map(super::home::unowned_line).collect();
    // The lists show their longest waiting; the rest are a search away. (The figures
    // by owner stay in the API: the board shows them.)
    let first = |list: &[WaitingCoe]| {
        json!({
            "first": &list[..list.len().min(LISTED)],
            "more": list.len().saturating_sub(LISTED),
        })
    };
    let (on_time, late) = figures.weeks.iter().fold((0, 0), |(a, b), w| {
        (a + w.closed_on_time, b + w.closed_late)
    });
    let periods: Vec<Value> = PERIODS
        .iter()
        .map(|(w, words)| json!({"weeks": w, "label": words, "selected": *w == weeks}))
        .collect();
    let period = PERIODS.iter().find(|(w, _)| *w == weeks).map_or_else(
        || format!("{weeks} weeks"),
        |(_, words)| (*words).to_owned(),
    );
    let mut data = json!({
        // Nobody's COE belongs to a team: the unowned list is the whole organisation's.
        "unowned": if team.is_none() { unowned } else { Vec::new() },
        "team": team,
        "teams": teams,
        "names": names,
        "periods": periods,
        "period": period,
        "charts": charts(&figures),
        "actions": figures.actions,
        "done_in_period": {"on_time": on_time, "late": late},
        "past_as_of": figures.past_counted_at.map(|at| {
            use chrono::TimeZone;
            let clock = state.settings.clock();
            clock.tz.from_utc_datetime(&at).format("%H:%M").to_string()
        }),
        "drafts_past_deadline": first(&figures.drafts_past_deadline),
        "waiting_for_review": first(&figures.waiting_for_review),
        "past_target": {
            "first": past_target,
            "more": (past_target_total - past_target.len() as i64).max(0),
            "total": past_target_total,
        },
    });
    if let Value::Object(data) = &mut data {
        data.insert(
            "coverage".into(),
            coverage_view(&figures.coverage, team.as_deref(), weeks),
        );
        data.insert("coverage_weeks".into(), json!(weeks));
        data.insert("times".into(), times_view(&figures.outage_times));
        data.insert("drills".into(), drills_view(&figures.drills));
        data.insert(
            "factors".into(),
            json!(figures
                .contributing_factors
                .iter()
                .map(factors_view)
                .collect::<Vec<_>>()),
        );
    }
    render(&state, Some(&who), StatusCode::OK, "dashboard", data)
}

/// The coverage audit as the dashboard shows it: a row per team (and everyone),
/// each figure a link to its list; the lists of the team shown (or everyone's).
fn coverage_view(
    coverage: &crate::services::figures::coverage::Coverage,
    team: Option<&str>,
    weeks: usize,
) -> Value {
    use crate::services::figures::coverage::CoverageFigures;
    let (from, to) = (coverage.from.to_string(), coverage.to.to_string());
    let link = |team: Option<&str>, list: &str| {
        let mut url = format!("/dashboard?weeks={weeks}&from={from}&to={to}");
        if let Some(team) = team {
            url.push_str("&team=");
            url.extend(form_urlencoded::byte_serialize(team.as_bytes()));
        }
        format!("{url}#cov-{list}")
    };
    let row = |name: &str, team: Option<&str>, f: &CoverageFigures| {
        let state = |s: &str| f.incidents_by_coe_state.get(s).copied().unwrap_or(0);
        let days = |d: Option<f64>| d.map_or_else(|| "—".to_owned(), |d| format!("{d}"));
        json!({
            "name": name,
            "incidents": f.incidents_at_policy,
            "none": state("none"),
            "draft": state("draft"),
            "draft_past_deadline": state("draft_past_deadline"),
            "in_review": state("in_review"),
            "approved": state("approved"),
            "median": days(f.days_to_approval.median),
            "worst": days(f.days_to_approval.worst),
            "on_time": f.actions_closed.on_time,
            "late": f.actions_closed.late,
            "wont_do": f.actions_closed.wont_do,
            "within_target": f.actions_closed.within_target,
            "with_target": f.actions_closed.within_target + f.actions_closed.past_target,
            "approved_coes": f.approved.len(),
            "without_prevention": f.approved_without_prevention,
            "with_warnings": f.approved_with_warnings,
            "without_bar_raiser": f.approved_without_bar_raiser,
            "links": {
                "incidents": link(team, "incidents"),
                "approved": link(team, "approved"),
                "actions": link(team, "actions"),
            },
        })
    };
    let mut rows = vec![row(team.unwrap_or("Everyone"), team, &coverage.overall)];
    if team.is_none() {
        rows.extend(
            coverage
                .by_team
                .iter()
                .map(|(name, f)| row(name, Some(name), f)),
        );
    }
    let f = &coverage.overall;
    let incidents: Vec<Value> = crate::domain::coverage::Covered::ALL
        .iter()
        .map(|state| {
            json!({
                "state": state.as_str(),
                "label": match state.as_str() {
                    "none" => "No COE",
                    "draft" => "Draft, within its deadline",
                    "draft_past_deadline" => "Draft past its deadline",
                    "in_review" => "In review",
                    _ => "Approved or closed",
                },
                "list": f.incidents.iter().filter(|i| i.covered == *state).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "from": from,
        "to": to,
        "rows": rows,
        "incidents": incidents,
        "approved": f.approved,
        "actions": f.actions_closed,
    })
}

/// How long outages took, as the dashboard shows it: a column per measure, a row per
/// group (everyone, each severity, team and quarter), each cell the median and the
/// 90th percentile in words, with how many were counted and how many lack the times.
/// Fixes proven in a drill, in words.
fn drills_view(d: &crate::services::figures::drills::DrillSummary) -> Value {
    let n = |state: &str| d.by_state.get(state).copied().unwrap_or(0);
    json!({
        "total": d.total,
        "proven": d.proven,
        "waiting": n("waiting"),
        "missed": n("missed"),
        "confirmed": n("confirmed"),
        "reopened": n("reopened"),
        "median": d.median_detected_minutes.map(crate::domain::distribution::minutes_in_words),
        "unmeasured": d.unmeasured,
    })
}

fn times_view(times: &crate::services::figures::times::OutageTimes) -> Value {
    use crate::domain::distribution::{minutes_in_words, Distribution};
    use crate::services::figures::times::MEASURES;
    let cell = |d: Option<&Distribution>| {
        let d = d.cloned().unwrap_or_default();
        json!({
            "median": d.median.map(minutes_in_words),
            "p90": d.p90.map(minutes_in_words),
            "count": d.count,
            "missing": d.missing,
        })
    };
    let mut rows = vec![json!({
        "group": "Everyone",
        "kind": "everyone",
        "cells": times.measures.iter().map(|m| cell(Some(&m.overall))).collect::<Vec<_>>(),
    })];
    let mut groups: Vec<(&str, std::collections::BTreeSet<String>)> = vec![
        ("severity", Default::default()),
        ("team", Default::default()),
        ("quarter", Default::default()),
    ];
    for m in &times.measures {
        groups[0].1.extend(m.by_severity.keys().cloned());
        groups[1].1.extend(m.by_team.keys().cloned());
        groups[2].1.extend(m.by_quarter.keys().cloned());
    }
    for (kind, keys) in &groups {
        for key in keys {
            let cells: Vec<Value> = times
                .measures
                .iter()
                .map(|m| {
                    cell(match *kind {
                        "severity" => m.by_severity.get(key),
                        "team" => m.by_team.get(key),
                        _ => m.by_quarter.get(key),
                    })
                })
                .collect();
            rows.push(json!({"group": key, "kind": kind, "cells": cells}));
        }
    }
    json!({
        "from": times.from.to_string(),
        "coes": times.coes,
        "measures": MEASURES.iter().map(|(_, words)| *words).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// One quarter's contributing factors as the dashboard shows them: a column per
/// factor (the most common first), a row per team (everyone first), each cell the
/// count and its share of the row's chains; a share of half or more stands out.
fn factors_view(q: &crate::services::figures::coverage::FactorQuarter) -> Value {
    let mut columns: Vec<(&String, &i64)> = q.overall.iter().collect();
    columns.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let row = |name: &str, counts: &std::collections::BTreeMap<String, i64>| {
        let total: i64 = counts.values().sum();
        let cells: Vec<Value> = columns
            .iter()
            .map(|(factor, _)| {
                let n = counts.get(*factor).copied().unwrap_or(0);
                let share = if total > 0 { n * 100 / total } else { 0 };
                json!({"n": n, "share": share, "half": total > 1 && n * 2 >= total})
            })
            .collect();
        json!({"name": name, "total": total, "cells": cells})
    };
    let mut rows = vec![row("Everyone", &q.overall)];
    if q.by_team.len() > 1 {
        rows.extend(q.by_team.iter().map(|(team, counts)| row(team, counts)));
    }
    json!({
        "quarter": q.quarter,
        "chains": q.chains,
        "columns": columns.iter().map(|(f, _)| f).collect::<Vec<_>>(),
        "rows": rows,
    })
}
