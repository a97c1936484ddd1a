//! Fixes proven in a drill (`services::coe::actions::drill`), as leaders read them:
//! how the re-checks of the last four quarters went, the median time the alarms took,
//! and for the review meeting those proven since the last one, those missed that wait
//! for their reviewer, and those waiting for their drill.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::schema::{coes, corrective_actions, drill_rechecks};
use crate::db::DbConnection;
use crate::domain::distribution::Distribution;
use crate::domain::drill::{self, RecheckState};
use crate::domain::Clock;

/// How the re-checks opened in a period went.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct DrillSummary {
    /// Re-checks opened in the period, by how they stand: `waiting`, `proven`, `missed`
    /// (the reviewer is asked), `confirmed`, `reopened`.
    pub by_state: BTreeMap<String, i64>,
    /// Re-checks opened in the period, those withdrawn left out (their action changed:
    /// nothing was left to prove).
    pub total: i64,
    /// Proven by their alarm.
    pub proven: i64,
    /// Median minutes from the drill's start to the alarm, over those proven that said
    /// when they started.
    pub median_detected_minutes: Option<f64>,
    /// Proven, with no start said (no delay measured).
    pub unmeasured: i64,
}

/// The re-checks opened since `from`, of the actions `owners` own (everyone's: none).
pub fn summary(
    conn: &mut DbConnection,
    from: NaiveDateTime,
    owners: Option<&[String]>,
) -> QueryResult<DrillSummary> {
    let mut query = drill_rechecks::table
        .inner_join(corrective_actions::table)
        .filter(drill_rechecks::opened_at.ge(from))
        .select((drill_rechecks::state, drill_rechecks::detected_seconds))
        .into_boxed();
    if let Some(owners) = owners {
        query = query.filter(corrective_actions::owner_email.eq_any(owners.to_vec()));
    }
    let rows: Vec<(String, Option<i64>)> = query.load(conn)?;
    let mut summary = DrillSummary::default();
    let mut delays = Vec::new();
    for (state, detected) in rows {
        *summary.by_state.entry(state.clone()).or_default() += 1;
        if state == RecheckState::Withdrawn.as_str() {
            continue;
        }
        summary.total += 1;
        if state == RecheckState::Proven.as_str() {
            summary.proven += 1;
            match detected {
                Some(s) => delays.push(s as f64 / 60.0),
                None => summary.unmeasured += 1,
            }
        }
    }
    summary.median_detected_minutes = Distribution::of(delays.into_iter().map(Some)).median;
    Ok(summary)
}

/// The last four quarters' re-checks (as the dashboard's time figures count them), of
/// the actions `owners` own (everyone's: none).
pub fn last_four_quarters(
    conn: &mut DbConnection,
    clock: Clock,
    owners: Option<&[String]>,
) -> QueryResult<DrillSummary> {
    let from = crate::domain::coverage::quarter_start(
        clock.today(),
        crate::services::figures::times::QUARTERS - 1,
    );
    summary(conn, clock.midnight(from), owners)
}

/// One re-check as the agenda lists it.
#[derive(Debug, Clone, Serialize)]
pub struct DrillItem {
    pub action_id: String,
    pub action_title: String,
    pub owner: String,
    pub coe_id: String,
    pub coe_title: String,
    pub reviewer: Option<String>,
    /// Who decides on it when missed: the reviewer when they may, else none (an
    /// admin: `services::access::drill_deciders`).
    pub decider: Option<String>,
    pub state: String,
    pub last_day: NaiveDate,
    pub labels: String,
    /// When the alarm fired, in words (proven ones).
    pub fired: Option<String>,
    /// How long it took, in words, when the drill said when it started.
    pub detected: Option<String>,
}

/// The review meeting's drills: proven since `from` (when the alert came), missed and waiting for their
/// reviewer, waiting for their drill (soonest day first).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DrillAgenda {
    pub proven: Vec<DrillItem>,
    pub missed: Vec<DrillItem>,
    pub waiting: Vec<DrillItem>,
}

type Row = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    NaiveDate,
    String,
    Option<NaiveDateTime>,
    Option<i64>,
);

/// The agenda's drills; `dotless` is `auth.dotless_domains`.
pub fn agenda(
    conn: &mut DbConnection,
    from: NaiveDateTime,
    dotless: &[String],
) -> QueryResult<DrillAgenda> {
    let open = [
        RecheckState::Waiting.as_str(),
        RecheckState::Missed.as_str(),
    ];
    let proven = RecheckState::Proven.as_str();
    let rows: Vec<Row> = drill_rechecks::table
        .inner_join(corrective_actions::table.inner_join(coes::table))
        .filter(
            drill_rechecks::state.eq_any(open).or(drill_rechecks::state
                .eq(proven)
                .and(drill_rechecks::decided_at.ge(from))),
        )
        .order((drill_rechecks::last_day.asc(), drill_rechecks::id.asc()))
        .select((
            corrective_actions::id,
            corrective_actions::title,
            corrective_actions::owner_email,
            coes::id,
            coes::title,
            coes::reviewer_email,
            drill_rechecks::state,
            drill_rechecks::last_day,
            drill_rechecks::labels,
            drill_rechecks::fired_at,
            drill_rechecks::detected_seconds,
        ))
        .limit(300)
        .load(conn)?;
    let mut agenda = DrillAgenda::default();
    for (
        action_id,
        action_title,
        owner,
        coe_id,
        coe_title,
        reviewer,
        state,
        due,
        labels,
        fired,
        detected,
    ) in rows
    {
        let labels: BTreeMap<String, String> = serde_json::from_str(&labels).unwrap_or_default();
        let decider = if state == RecheckState::Missed.as_str() {
            let completed_by = crate::services::coe::actions::completed_by(conn, &action_id)?;
            crate::services::access::drill_deciders(
                reviewer.as_deref(),
                &[],
                &owner,
                completed_by.as_deref(),
                dotless,
            )
            .pop()
        } else {
            None
        };
        let item = DrillItem {
            decider,
            action_id,
            action_title,
            owner,
            coe_id,
            coe_title,
            reviewer,
            last_day: due,
            labels: drill::labels_words(&labels),
            fired: fired.map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string()),
            detected: detected.map(drill::span_words),
            state: state.clone(),
        };
        match RecheckState::parse(&state) {
            Some(RecheckState::Proven) => agenda.proven.push(item),
            Some(RecheckState::Missed) => agenda.missed.push(item),
            _ => agenda.waiting.push(item),
        }
    }
    Ok(agenda)
}
