//! The dashboard's charts, drawn as SVG on the server: overdue actions at the end of
//! each of the last 12 weeks, actions closed on time and late per week, median days to
//! close, COEs by state, recurrence, and the drafts past their writeup deadline. The
//! geometry is computed here; the template draws it, escaped like every page, and each
//! chart has its figures as a table beside it.

use serde::Serialize;

use crate::services::figures::stats::Stats;

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
pub(super) struct Chart {
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

pub(super) fn charts(s: &Stats) -> Vec<Chart> {
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
