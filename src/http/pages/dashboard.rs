//! The dashboard: the figures of `/api/v1/stats` (one function computes both) drawn
//! as SVG on the server: overdue actions at the end of each of the last 12 weeks,
//! actions closed on time and late per week, median days to close, COEs by state,
//! recurrence, and the drafts past their writeup deadline. The geometry is computed
//! here; the template draws it, escaped like every page, and each chart has its
//! figures as a table beside it.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::PageError;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::http::session::SignedIn;
use crate::services::figures::stats::{self, Scope, Stats, WaitingCoe};

/// How many COEs each list shows.
const LISTED: usize = 20;

const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 220.0;
/// Room for the axis labels below and the values above the bars.
const BOTTOM: f64 = 28.0;
const TOP: f64 = 18.0;

/// One bar (or one part of a stacked bar).
#[derive(Debug, Serialize)]
struct Bar {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    /// `a` or `b`: which series, for its colour.
    series: &'static str,
    value: String,
    /// What the bar is, for its tooltip.
    title: String,
}

#[derive(Debug, Serialize)]
struct Label {
    x: f64,
    y: f64,
    text: String,
    /// `middle`; `start` or `end` at the chart's edges, so that no label is cut off.
    anchor: &'static str,
}

/// How close (in the chart's units) to an edge a label's middle may be before it is
/// drawn from that edge inwards.
const EDGE: f64 = 24.0;

/// A bar chart ready to draw: its bars, its labels, and its figures as rows.
#[derive(Debug, Serialize)]
struct Chart {
    id: &'static str,
    title: &'static str,
    summary: String,
    width: f64,
    height: f64,
    baseline: f64,
    bars: Vec<Bar>,
    labels: Vec<Label>,
    values: Vec<Label>,
    /// The figures as a table: a heading row and the rows.
    head: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

/// A rounded-up scale maximum so the tallest bar does not touch the top.
fn scale_max(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|s| s * magnitude)
        .find(|s| *s >= max / 4.0)
        .unwrap_or(magnitude * 10.0);
    (max / step).ceil() * step
}

/// One part of a column: its series (`a` or `b`), its value, and what it is.
type Part = (&'static str, f64, String);

/// A column: its label and its parts, stacked.
type Column = (String, Vec<Part>);

/// A column of one part: its label, its part's class, value and words.
fn one(label: &str, class: &'static str, value: f64, words: String) -> Column {
    (label.to_owned(), vec![(class, value, words)])
}

/// A chart of columns of stacked parts.
fn bars(
    id: &'static str,
    title: &'static str,
    summary: String,
    columns: &[Column],
    head: Vec<&'static str>,
    rows: Vec<Vec<String>>,
) -> Chart {
    let plot = HEIGHT - BOTTOM - TOP;
    let max = columns
        .iter()
        .map(|(_, parts)| parts.iter().map(|(_, v, _)| *v).sum::<f64>())
        .fold(0.0, f64::max);
    let max = scale_max(max);
    let slot = WIDTH / columns.len().max(1) as f64;
    let w = (slot * 0.7).min(60.0);
    let baseline = HEIGHT - BOTTOM;
    let mut chart = Chart {
        id,
        title,
        summary,
        width: WIDTH,
        height: HEIGHT,
        baseline,
        bars: Vec::new(),
        labels: Vec::new(),
        values: Vec::new(),
        head,
        rows,
    };
    for (i, (label, parts)) in columns.iter().enumerate() {
        let x = slot * i as f64 + (slot - w) / 2.0;
        let mut top = baseline;
        let mut total = 0.0;
        for (series, value, what) in parts {
            let h = (value / max * plot).max(0.0);
            top -= h;
            total += value;
            chart.bars.push(Bar {
                x: round(x),
                y: round(top),
                w: round(w),
                h: round(h),
                series,
                value: figure(*value),
                title: what.clone(),
            });
        }
        let middle = x + w / 2.0;
        let (at, anchor) = if middle > WIDTH - EDGE {
            (x + w, "end")
        } else if middle < EDGE {
            (x, "start")
        } else {
            (middle, "middle")
        };
        chart.labels.push(Label {
            x: round(at),
            y: HEIGHT - 8.0,
            text: label.clone(),
            anchor,
        });
        // Beyond 13 columns a figure stands over the labelled ones only (the table
        // under the chart holds them all): 52 figures side by side are unreadable.
        if columns.len() <= 13 || !label.is_empty() {
            chart.values.push(Label {
                x: round(middle),
                y: round(top - 4.0),
                text: figure(total),
                anchor: "middle",
            });
        }
    }
    chart
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A figure as people read it: whole numbers without a decimal.
fn figure(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn charts(s: &Stats) -> Vec<Chart> {
    // A label under every week up to 13 of them; else under about 12, the last always.
    let count = s.weeks.len();
    let step = count.div_ceil(12).max(1);
    let label_of: std::collections::BTreeMap<chrono::NaiveDate, String> = s
        .weeks
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let shown = count <= 13 || (count - 1 - i) % step == 0;
            let text = if shown {
                w.starts.format("%d %b").to_string()
            } else {
                String::new()
            };
            (w.starts, text)
        })
        .collect();
    let week = |starts: chrono::NaiveDate| label_of.get(&starts).cloned().unwrap_or_default();
    let overdue: Vec<_> = s
        .weeks
        .iter()
        .map(|w| {
            (
                week(w.starts),
                vec![(
                    "a",
                    w.overdue_at_end as f64,
                    format!(
                        "week of {}: {} overdue at its end",
                        w.starts, w.overdue_at_end
                    ),
                )],
            )
        })
        .collect();
    let last = s.weeks.last();
    let first = s.weeks.first();
    let overdue_chart = bars(
        "overdue",
        "Overdue actions at the end of each week",
        format!(
            "{} overdue now; {} at the end of the week of {}",
            last.map_or(0, |w| w.overdue_at_end),
            first.map_or(0, |w| w.overdue_at_end),
            first.map_or_else(String::new, |w| w.starts.to_string()),
        ),
        &overdue,
        vec!["Week of", "Overdue at its end"],
        s.weeks
            .iter()
            .map(|w| vec![w.starts.to_string(), w.overdue_at_end.to_string()])
            .collect(),
    );
    let closed: Vec<_> = s
        .weeks
        .iter()
        .map(|w| {
            (
                week(w.starts),
                vec![
                    (
                        "a",
                        w.closed_on_time as f64,
                        format!("week of {}: {} on time", w.starts, w.closed_on_time),
                    ),
                    (
                        "b",
                        w.closed_late as f64,
                        format!("week of {}: {} late", w.starts, w.closed_late),
                    ),
                ],
            )
        })
        .collect();
    let (on_time, late) = s.weeks.iter().fold((0, 0), |(a, b), w| {
        (a + w.closed_on_time, b + w.closed_late)
    });
    let closed_chart = bars(
        "closed",
        "Actions done per week: on time and late",
        format!("{on_time} done on time and {late} late in {count} weeks"),
        &closed,
        vec!["Week of", "On time", "Late"],
        s.weeks
            .iter()
            .map(|w| {
                vec![
                    w.starts.to_string(),
                    w.closed_on_time.to_string(),
                    w.closed_late.to_string(),
                ]
            })
            .collect(),
    );
    let median: Vec<_> = s
        .weeks
        .iter()
        .map(|w| {
            let v = w.median_days_to_close.unwrap_or(0.0);
            (
                week(w.starts),
                vec![(
                    "a",
                    v,
                    format!("week of {}: median {} days", w.starts, figure(v)),
                )],
            )
        })
        .collect();
    let median_chart = bars(
        "median",
        "Median days from creation to done, per week",
        match s.median_days_to_close {
            Some(d) => format!("{} days over the last 90 days", figure(d)),
            None => "no action done in the last 90 days".to_owned(),
        },
        &median,
        vec!["Week of", "Median days"],
        s.weeks
            .iter()
            .map(|w| {
                vec![
                    w.starts.to_string(),
                    w.median_days_to_close
                        .map_or_else(|| "—".to_owned(), figure),
                ]
            })
            .collect(),
    );
    let states: Vec<_> = s
        .coes_by_state
        .iter()
        .map(|(state, n)| {
            (
                state.replace('_', " "),
                vec![("a", *n as f64, format!("{n} {}", state.replace('_', " ")))],
            )
        })
        .collect();
    let total: i64 = s.coes_by_state.values().sum();
    let states_chart = bars(
        "states",
        "COEs by state",
        format!("{total} COE{}", if total == 1 { "" } else { "s" }),
        &states,
        vec!["State", "COEs"],
        s.coes_by_state
            .iter()
            .map(|(k, v)| vec![k.replace('_', " "), v.to_string()])
            .collect(),
    );
    let r = &s.recurrence;
    let recurrence_chart = bars(
        "recurrence",
        "COEs that happened before",
        format!(
            "{} of {} COEs link to an earlier COE of the same service and alert",
            r.recurring_coes, r.all_coes
        ),
        &[
            one(
                "happened before",
                "b",
                r.recurring_coes as f64,
                format!("{} recurring", r.recurring_coes),
            ),
            one(
                "first time",
                "a",
                (r.all_coes - r.recurring_coes) as f64,
                format!("{} first time", r.all_coes - r.recurring_coes),
            ),
        ],
        vec!["", "COEs"],
        vec![
            vec!["happened before".into(), r.recurring_coes.to_string()],
            vec![
                "first time".into(),
                (r.all_coes - r.recurring_coes).to_string(),
            ],
        ],
    );
    let after = &s.recurrence_after_approval;
    let held_chart = bars(
        "held",
        "Did the actions hold?",
        format!(
            "In the period: {} done action{} of kind prevent, detect or mitigate saw the outage come back; \
             {} of {} COEs approved came back within 90 days{}",
            s.actions_recurred_after_done,
            if s.actions_recurred_after_done == 1 { "" } else { "s" },
            after.recurred,
            after.approved,
            after
                .rate
                .map(|r| format!(" ({:.0}%)", r * 100.0))
                .unwrap_or_default()
        ),
        &[
            one("actions recurred after done", "b", s.actions_recurred_after_done as f64, format!("{} actions", s.actions_recurred_after_done)),
            one("approved, came back in 90 days", "b", after.recurred as f64, format!("{} COEs", after.recurred)),
            one("approved, held", "a", (after.approved - after.recurred) as f64, format!("{} COEs", after.approved - after.recurred)),
        ],
        vec!["", "Count"],
        vec![
            vec![
                "actions recurred after done".into(),
                s.actions_recurred_after_done.to_string(),
            ],
            vec![
                "approved COEs that came back within 90 days".into(),
                after.recurred.to_string(),
            ],
            vec!["approved COEs".into(), after.approved.to_string()],
        ],
    );
    vec![
        overdue_chart,
        closed_chart,
        median_chart,
        states_chart,
        recurrence_chart,
        held_chart,
    ]
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_round_up_and_bars_are_as_tall_as_their_share() {
        assert_eq!(scale_max(0.0), 1.0);
        assert_eq!(scale_max(7.0), 8.0);
        assert_eq!(scale_max(93.0), 100.0);
        let chart = bars(
            "t",
            "t",
            String::new(),
            &[
                ("a".into(), vec![("a", 4.0, String::new())]),
                (
                    "b".into(),
                    vec![("a", 2.0, String::new()), ("b", 2.0, String::new())],
                ),
            ],
            vec![],
            vec![],
        );
        let plot = HEIGHT - BOTTOM - TOP;
        assert_eq!(chart.bars[0].h, round(plot));
        assert_eq!(chart.bars[1].h + chart.bars[2].h, round(plot));
        assert_eq!(chart.values[1].text, "4");
    }
}
