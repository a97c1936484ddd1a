//! Lists of corrective actions, filtered, with the one definition of overdue.

use chrono::NaiveDate;
use diesel::prelude::*;

use super::{coe_title_and_severity, view, ActionView};
use crate::db::models::ActionRow;
use crate::db::schema::{coes, corrective_actions, people};
use crate::db::types::{self, word};
use crate::db::DbConnection;
use crate::domain::action::{ActionKind, ActionState, Priority};
use crate::domain::Clock;

/// Filters of the action list.
#[derive(Debug, Clone, Default)]
pub struct ActionFilter {
    pub owner: Option<String>,
    pub team: Option<String>,
    pub coe: Option<String>,
    pub state: Option<ActionState>,
    pub overdue: Option<bool>,
    pub due_before: Option<NaiveDate>,
    pub priority: Option<Priority>,
    pub kind: Option<ActionKind>,
}

/// How the list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ActionSort {
    /// Soonest due first.
    #[default]
    DueDate,
    /// Most days overdue first (the same order, for overdue actions, as the oldest due date).
    DaysOverdue,
}

/// A page of actions and how many match in all.
pub fn list(
    conn: &mut DbConnection,
    filter: &ActionFilter,
    sort: ActionSort,
    limit: i64,
    offset: i64,
    clock: Clock,
) -> QueryResult<(Vec<ActionView>, i64)> {
    // "Overdue" in SQL is the domain's definition: active, and the due date is before
    // today in the organisation's time zone.
    let today = clock.today();
    let active = [ActionState::Open.as_str(), ActionState::InProgress.as_str()];
    let team_members: Option<Vec<String>> = match &filter.team {
        Some(team) => Some(
            people::table
                .filter(people::team.eq(team))
                .select(people::email)
                .load(conn)?,
        ),
        None => None,
    };
    let filtered = || {
        let mut q = corrective_actions::table.into_boxed();
        if let Some(owner) = &filter.owner {
            q = q.filter(corrective_actions::owner_email.eq(owner.clone()));
        }
        if let Some(members) = &team_members {
            q = q.filter(corrective_actions::owner_email.eq_any(members.clone()));
        }
        if let Some(coe) = &filter.coe {
            q = q.filter(corrective_actions::coe_id.eq(coe.clone()));
        }
        if let Some(state) = filter.state {
            q = q.filter(corrective_actions::state.eq(state.as_str()));
        }
        match filter.overdue {
            Some(true) => {
                q = q
                    .filter(corrective_actions::state.eq_any(active))
                    .filter(corrective_actions::due_date.lt(today));
            }
            Some(false) => {
                q = q.filter(
                    corrective_actions::state
                        .ne_all(active)
                        .or(corrective_actions::due_date.ge(today)),
                );
            }
            None => {}
        }
        if let Some(before) = filter.due_before {
            q = q.filter(corrective_actions::due_date.lt(before));
        }
        if let Some(priority) = filter.priority {
            q = q.filter(corrective_actions::priority.eq(word(priority)));
        }
        if let Some(kind) = filter.kind {
            q = q.filter(corrective_actions::kind.eq(word(kind)));
        }
        q
    };
    let total: i64 = filtered().count().get_result(conn)?;
    let ordered = match sort {
        ActionSort::DueDate => filtered().order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        )),
        // The longest overdue is the oldest due date.
        ActionSort::DaysOverdue => filtered().order((
            corrective_actions::due_date.asc(),
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        )),
    };
    let rows: Vec<ActionRow> = ordered
        .limit(limit)
        .offset(offset)
        .select(ActionRow::as_select())
        .load(conn)?;
    let coe_ids: Vec<String> = rows.iter().map(|r| r.coe_id.clone()).collect();
    let coe_info: std::collections::HashMap<String, (String, i32)> = coes::table
        .filter(coes::id.eq_any(coe_ids))
        .select((coes::id, coes::title, coes::severity))
        .load::<(String, String, i32)>(conn)?
        .into_iter()
        .map(|(id, t, s)| (id, (t, s)))
        .collect();
    let views = rows
        .into_iter()
        .map(|r| {
            let (title, rank) = coe_info.get(&r.coe_id).cloned().unwrap_or_default();
            view(r, title, types::severity("coes.severity", rank)?, clock)
        })
        .collect::<QueryResult<_>>()?;
    Ok((views, total))
}

/// The actions of one COE, oldest first.
pub fn for_coe(
    conn: &mut DbConnection,
    coe_id: &str,
    clock: Clock,
) -> QueryResult<Vec<ActionView>> {
    let (title, severity) = coe_title_and_severity(conn, coe_id)?;
    let rows: Vec<ActionRow> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(coe_id))
        .order((
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        ))
        .select(ActionRow::as_select())
        .load(conn)?;
    rows.into_iter()
        .map(|r| view(r, title.clone(), severity, clock))
        .collect()
}
