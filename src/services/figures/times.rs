//! How long outages took, as distributions (`domain::distribution`): to detect, to
//! mitigate and to resolve (from the outage's start), and from resolution to the
//! COE's approval; by severity, team and quarter over the last four quarters. A COE
//! whose times are missing is counted as missing, never dropped.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::schema::coes;
use crate::db::{types, DbConnection};
use crate::domain::coe::CoeState;
use crate::domain::coverage;
use crate::domain::distribution::Distribution;
use crate::domain::Clock;
use crate::services::figures::coverage::NO_TEAM;

/// How many quarters the figures cover (this one and the three before).
pub const QUARTERS: u32 = 4;

/// What is measured, in the order shown.
pub const MEASURES: [(&str, &str); 4] = [
    ("detect", "to detect"),
    ("mitigate", "to mitigate"),
    ("resolve", "to resolve"),
    ("approve", "from resolution to approval"),
];

/// One measure's distributions.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Measure {
    /// `detect`, `mitigate`, `resolve` or `approve`.
    pub measure: String,
    pub overall: Distribution,
    pub by_severity: BTreeMap<String, Distribution>,
    /// By the COE's team (its owner's, else its service's; `(none)`).
    pub by_team: BTreeMap<String, Distribution>,
    /// By the quarter the outage started (`2026-Q4`).
    pub by_quarter: BTreeMap<String, Distribution>,
}

/// The time figures of the last `QUARTERS` quarters.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct OutageTimes {
    /// The first day counted (the first day of the earliest quarter).
    #[schema(value_type = String, format = Date)]
    pub from: chrono::NaiveDate,
    /// COEs counted (outages started in the period, merged drafts not).
    pub coes: usize,
    pub measures: Vec<Measure>,
    /// Each known span, for `/metrics`: measure, severity, minutes.
    #[serde(skip)]
    pub samples: Vec<(&'static str, String, f64)>,
}

/// One span of one COE: its severity, team, quarter and minutes (none: missing).
type Span = (String, String, String, Option<f64>);

/// One COE's facts: owner, service, severity, started, detected, mitigated,
/// resolved, created.
type Facts = (
    String,
    Option<String>,
    Option<String>,
    i32,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
    NaiveDateTime,
    String,
);

fn minutes(from: Option<NaiveDateTime>, to: Option<NaiveDateTime>) -> Option<f64> {
    Some((to? - from?).num_seconds() as f64 / 60.0)
}

/// The figures at `clock`, of `team`'s COEs (any case) or everyone's.
pub fn outage_times(
    conn: &mut DbConnection,
    clock: Clock,
    team: Option<&str>,
) -> QueryResult<OutageTimes> {
    let first = coverage::quarter_start(clock.today(), QUARTERS - 1);
    let since = clock.midnight(first);
    let teams = crate::services::directory::ownership::Teams::load(conn)?;
    let rows: Vec<Facts> = coes::table
        .filter(coes::state.ne(CoeState::Merged.as_str()))
        .filter(
            coes::started_at
                .ge(since)
                .or(coes::started_at.is_null().and(coes::created_at.ge(since))),
        )
        .select((
            coes::id,
            coes::owner_email,
            coes::service,
            coes::severity,
            coes::started_at,
            coes::detected_at,
            coes::mitigated_at,
            coes::resolved_at,
            coes::created_at,
            coes::state,
        ))
        .load(conn)?;
    let approved: BTreeMap<String, NaiveDateTime> =
        crate::services::figures::coverage::approvals(conn, since, None)?
            .into_iter()
            .collect();
    // measure → (group kind, group) → values
    let mut values: Vec<Vec<Span>> = vec![Vec::new(); 4];
    let mut samples = Vec::new();
    let mut counted = 0;
    for (id, owner, service, rank, started, detected, mitigated, resolved, created, state) in rows {
        let when = started.unwrap_or(created);
        let team_name = teams
            .of_at(owner.as_deref(), service.as_deref(), when)
            .unwrap_or_else(|| NO_TEAM.to_owned());
        if team.is_some_and(|w| !w.trim().eq_ignore_ascii_case(&team_name)) {
            continue;
        }
        counted += 1;
        let severity = types::severity("coes.severity", rank)?.to_string();
        let quarter = coverage::quarter_of(clock.local_date(when));
        let state: CoeState = types::read("coes.state", &state)?;
        let approved_at = approved
            .get(&id)
            .copied()
            .filter(|_| matches!(state, CoeState::Approved | CoeState::Closed));
        let spans = [
            Some(minutes(started, detected)),
            Some(minutes(started, mitigated)),
            Some(minutes(started, resolved)),
            // Only approved COEs are measured to approval; one approved without a
            // resolution counts as missing.
            approved_at.map(|at| minutes(resolved, Some(at))),
        ];
        for (i, span) in spans.into_iter().enumerate() {
            let Some(span) = span else { continue };
            if let Some(m) = span.filter(|m| *m >= 0.0) {
                samples.push((MEASURES[i].0, severity.clone(), m));
            }
            values[i].push((severity.clone(), team_name.clone(), quarter.clone(), span));
        }
    }
    let measures = MEASURES
        .iter()
        .zip(values)
        .map(|((key, _), vals)| {
            let group = |pick: fn(&Span) -> &String| {
                let mut groups: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
                for v in &vals {
                    groups.entry(pick(v).clone()).or_default().push(v.3);
                }
                groups
                    .into_iter()
                    .map(|(k, v)| (k, Distribution::of(v)))
                    .collect()
            };
            Measure {
                measure: (*key).to_owned(),
                overall: Distribution::of(vals.iter().map(|v| v.3)),
                by_severity: group(|v| &v.0),
                by_team: group(|v| &v.1),
                by_quarter: group(|v| &v.2),
            }
        })
        .collect();
    Ok(OutageTimes {
        from: first,
        coes: counted,
        measures,
        samples,
    })
}
