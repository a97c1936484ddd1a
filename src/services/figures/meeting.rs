//! The weekly operations review's agenda (`/review-meeting`): the COEs approved since
//! the last meeting, the oldest overdue actions, the outages that came back after
//! their actions were done, the verifications refused, and one approved COE picked at
//! random for the room to read together.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::db::schema::{action_recurrences, audit_log, coes, corrective_actions};
use crate::db::{types, DbConnection};
use crate::domain::{Clock, Severity};
use crate::services::coe::actions::{self, ActionFilter, ActionSort, ActionView};

/// How many overdue actions the agenda lists (the oldest).
pub const OVERDUE_LISTED: i64 = 10;

/// A service whose outages this quarter burned more than `policy.error_budget_share`
/// of its error budgets, all told: an item of the agenda.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetItem {
    /// `(no service)` for incidents that named none.
    pub service: String,
    /// The shares its incidents burned, added up (0.45: 45%).
    pub burned: f64,
    pub incidents: usize,
    pub slos: Vec<String>,
    /// The contributing factors its COEs' 5-whys chains end in, and how often.
    pub factors: std::collections::BTreeMap<String, i64>,
}

/// An incident's id, service, share burned and SLO.
type BurnedIncident = (String, Option<String>, Option<f64>, Option<String>);

/// This quarter's services past the share, the most burned first.
fn budget_items(conn: &mut DbConnection, clock: Clock, share: f64) -> QueryResult<Vec<BudgetItem>> {
    use crate::db::schema::{coe_incidents, incidents, why_chains};
    let since = clock.midnight(crate::domain::coverage::quarter_start(clock.today(), 0));
    let burned: Vec<BurnedIncident> = incidents::table
        .filter(incidents::budget_burned.is_not_null())
        .filter(incidents::started_at.ge(since))
        .select((
            incidents::id,
            incidents::service,
            incidents::budget_burned,
            incidents::slo,
        ))
        .load(conn)?;
    let mut by_service: std::collections::BTreeMap<String, (f64, Vec<String>, Vec<String>)> =
        Default::default();
    for (id, service, share_burned, slo) in burned {
        let entry = by_service
            .entry(service.unwrap_or_else(|| "(no service)".to_owned()))
            .or_default();
        entry.0 += share_burned.unwrap_or(0.0);
        entry.1.push(id);
        if let Some(slo) = slo.filter(|s| !entry.2.contains(s)) {
            entry.2.push(slo);
        }
    }
    let mut items = Vec::new();
    for (service, (burned, ids, slos)) in by_service {
        if burned <= share {
            continue;
        }
        let mut coe_ids: Vec<String> = coes::table
            .filter(coes::incident_id.eq_any(&ids))
            .select(coes::id)
            .load(conn)?;
        coe_ids.extend(
            coe_incidents::table
                .filter(coe_incidents::incident_id.eq_any(&ids))
                .select(coe_incidents::coe_id)
                .load::<String>(conn)?,
        );
        let mut factors = std::collections::BTreeMap::new();
        for factor in why_chains::table
            .filter(why_chains::coe_id.eq_any(&coe_ids))
            .select(why_chains::factor)
            .load::<Option<String>>(conn)?
        {
            *factors
                .entry(factor.unwrap_or_else(|| "(not tagged)".to_owned()))
                .or_default() += 1;
        }
        items.push(BudgetItem {
            service,
            burned: (burned * 1000.0).round() / 1000.0,
            incidents: ids.len(),
            slos,
            factors,
        });
    }
    items.sort_by(|a, b| b.burned.total_cmp(&a.burned));
    Ok(items)
}

/// How far ahead the agenda looks for risk acceptances ending.
pub const RISK_ENDING_DAYS: u64 = 14;

/// A COE on the agenda.
#[derive(Debug, Clone, Serialize)]
pub struct AgendaCoe {
    pub id: String,
    pub title: String,
    pub severity: Severity,
    pub service: Option<String>,
    pub owner: Option<String>,
    pub state: String,
    /// When it was approved (the last time, if it was sent back and approved again).
    #[serde(serialize_with = "crate::json::utc_option")]
    pub approved_at: Option<NaiveDateTime>,
}

/// An action whose outage came back after it was done.
#[derive(Debug, Clone, Serialize)]
pub struct AgendaRecurrence {
    pub action_id: String,
    pub action_title: String,
    pub owner: String,
    /// The COE the action belongs to (the earlier outage).
    pub coe_id: String,
    pub coe_title: String,
    /// The COE of the outage that came back.
    pub again_coe_id: String,
    pub again_coe_title: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

/// A done action its reviewer sent back: not verified.
#[derive(Debug, Clone, Serialize)]
pub struct AgendaRefusal {
    pub action_id: String,
    pub action_title: String,
    pub owner: String,
    pub coe_id: String,
    pub by: String,
    pub reason: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

/// The agenda of one meeting.
#[derive(Debug, Clone, Serialize)]
pub struct Agenda {
    /// The last meeting's day: everything "since" counts from its start.
    pub since: NaiveDate,
    pub approved: Vec<AgendaCoe>,
    /// The oldest overdue actions (at most `OVERDUE_LISTED`), and how many there are.
    pub overdue: Vec<ActionView>,
    pub overdue_total: i64,
    /// The actions longest past their priority's target (at most `OVERDUE_LISTED`),
    /// and how many there are.
    pub past_target: Vec<ActionView>,
    pub past_target_total: i64,
    /// Actions whose risk is accepted until a day in the next two weeks: they are
    /// overdue after it, soonest first.
    pub risk_ending: Vec<ActionView>,
    /// Services whose outages this quarter burned more than the share of their
    /// error budgets that requires a COE.
    pub budget: Vec<BudgetItem>,
    /// Actions closed since the last meeting, by their owner's team (`(none)`: no
    /// team): within their target or after it, on time or late.
    pub closed:
        std::collections::BTreeMap<String, crate::services::figures::coverage::ClosedActions>,
    pub recurrences: Vec<AgendaRecurrence>,
    pub refusals: Vec<AgendaRefusal>,
    /// Fixes proven in a drill since the last meeting, re-checks missed that wait for
    /// their reviewer, and those waiting for their drill.
    pub drills: crate::services::figures::drills::DrillAgenda,
    /// One approved (or closed) COE to read together, and how many there are to pick from.
    pub pick: Option<AgendaCoe>,
    pub approved_total: i64,
}

/// The agenda for a meeting whose last one was on `since`; `seed` picks the COE to
/// read (the same seed, the same COE, while the list is the same).
pub fn agenda(
    conn: &mut DbConnection,
    clock: Clock,
    since: NaiveDate,
    seed: u64,
    (budget_share, dotless): (f64, &[String]),
) -> QueryResult<Agenda> {
    let from = clock.midnight(since);
    let approved_ids = crate::services::figures::coverage::approvals(conn, from, None)?;
    let mut approved = Vec::new();
    for (id, at) in approved_ids {
        if let Some(mut coe) = agenda_coe(conn, &id)? {
            coe.approved_at = Some(at);
            approved.push(coe);
        }
    }

    let overdue_filter = ActionFilter {
        overdue: Some(true),
        ..ActionFilter::default()
    };
    let (overdue, overdue_total) = actions::list(
        conn,
        &overdue_filter,
        ActionSort::DaysOverdue,
        OVERDUE_LISTED,
        0,
        clock,
    )?;

    let past_target_filter = ActionFilter {
        past_target: true,
        ..ActionFilter::default()
    };
    let (past_target, past_target_total) = actions::list(
        conn,
        &past_target_filter,
        ActionSort::Target,
        OVERDUE_LISTED,
        0,
        clock,
    )?;

    let ending = ActionFilter {
        risk_accepted_by: Some(clock.today() + chrono::Days::new(RISK_ENDING_DAYS)),
        ..ActionFilter::default()
    };
    let risk_ending = actions::page(conn, &ending, ActionSort::DueDate, 100, 0, clock)?;
    let budget = budget_items(conn, clock, budget_share)?;
    let closed =
        crate::services::figures::coverage::closed_by_team(conn, clock, since, clock.today())?
            .into_iter()
            .map(|(team, counts)| {
                let team =
                    team.unwrap_or_else(|| crate::services::figures::coverage::NO_TEAM.to_owned());
                (team, counts)
            })
            .collect();
    let recurrences = recurrences_since(conn, from)?;
    let refusals = refusals_since(conn, from)?;
    let drills = crate::services::figures::drills::agenda(conn, from, dotless)?;

    let readable = coes::table.filter(coes::state.eq_any(["approved", "closed"]));
    let approved_total: i64 = readable.clone().count().get_result(conn)?;
    let pick = if approved_total == 0 {
        None
    } else {
        let offset = (seed % approved_total as u64) as i64;
        let id: String = readable
            .order(coes::id.asc())
            .select(coes::id)
            .offset(offset)
            .first(conn)?;
        agenda_coe(conn, &id)?
    };
    Ok(Agenda {
        since,
        approved,
        overdue,
        overdue_total,
        past_target,
        past_target_total,
        risk_ending,
        budget,
        closed,
        recurrences,
        refusals,
        drills,
        pick,
        approved_total,
    })
}

/// id, title, severity, service, owner, state.
type CoeFacts = (String, String, i32, Option<String>, Option<String>, String);

/// action id, COE id, by, after (JSON), at.
type RefusalRow = (
    String,
    Option<String>,
    String,
    Option<String>,
    NaiveDateTime,
);

fn agenda_coe(conn: &mut DbConnection, id: &str) -> QueryResult<Option<AgendaCoe>> {
    let row: Option<CoeFacts> = coes::table
        .find(id)
        .select((
            coes::id,
            coes::title,
            coes::severity,
            coes::service,
            coes::owner_email,
            coes::state,
        ))
        .first(conn)
        .optional()?;
    row.map(|(id, title, severity, service, owner, state)| {
        Ok(AgendaCoe {
            id,
            title,
            severity: types::severity("coes.severity", severity)?,
            service,
            owner,
            state,
            approved_at: None,
        })
    })
    .transpose()
}

fn recurrences_since(
    conn: &mut DbConnection,
    from: NaiveDateTime,
) -> QueryResult<Vec<AgendaRecurrence>> {
    let rows: Vec<(String, String, NaiveDateTime, String, String, String)> =
        action_recurrences::table
            .inner_join(corrective_actions::table)
            .filter(action_recurrences::created_at.ge(from))
            .order(action_recurrences::at.desc())
            .select((
                action_recurrences::action_id,
                action_recurrences::coe_id,
                action_recurrences::at,
                corrective_actions::title,
                corrective_actions::owner_email,
                corrective_actions::coe_id,
            ))
            .load(conn)?;
    let title_of = |conn: &mut DbConnection, id: &str| -> QueryResult<String> {
        coes::table.find(id).select(coes::title).first(conn)
    };
    let mut out = Vec::new();
    for (action_id, again_coe_id, at, action_title, owner, coe_id) in rows {
        out.push(AgendaRecurrence {
            coe_title: title_of(conn, &coe_id)?,
            again_coe_title: title_of(conn, &again_coe_id)?,
            action_id,
            action_title,
            owner,
            coe_id,
            again_coe_id,
            at,
        });
    }
    Ok(out)
}

fn refusals_since(conn: &mut DbConnection, from: NaiveDateTime) -> QueryResult<Vec<AgendaRefusal>> {
    let rows: Vec<RefusalRow> = audit_log::table
        .filter(audit_log::entity.eq("action"))
        .filter(audit_log::action.eq("action:refuse"))
        .filter(audit_log::at.ge(from))
        .order(audit_log::at.desc())
        .select((
            audit_log::entity_id,
            audit_log::coe_id,
            audit_log::actor,
            audit_log::after,
            audit_log::at,
        ))
        .load(conn)?;
    let mut out = Vec::new();
    for (action_id, coe_id, by, after, at) in rows {
        let Some((title, owner)) = corrective_actions::table
            .find(&action_id)
            .select((corrective_actions::title, corrective_actions::owner_email))
            .first::<(String, String)>(conn)
            .optional()?
        else {
            continue;
        };
        let reason = after
            .as_deref()
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .and_then(|a| a["reason"].as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push(AgendaRefusal {
            action_id,
            action_title: title,
            owner,
            coe_id: coe_id.unwrap_or_default(),
            by,
            reason,
            at,
        });
    }
    Ok(out)
}
