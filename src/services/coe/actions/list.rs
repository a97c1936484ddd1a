//! Lists of corrective actions, filtered, with the one definition of overdue.

use chrono::NaiveDate;
use diesel::prelude::*;

use super::{coe_title_and_severity, view, ActionView};
use crate::db::models::ActionRow;
use crate::db::schema::{coes, corrective_actions, people};
use crate::db::types::{self, word};
use crate::db::{DbConnection, MultiBackend};
use crate::domain::action::{ActionKind, ActionState, Priority};
use crate::domain::{Clock, Severity};

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
    /// Actions of COEs of this service.
    pub service: Option<String>,
    /// Actions of COEs of this severity.
    pub severity: Option<Severity>,
    /// Open or in progress, due today or later but before `due_before` (with it:
    /// "due soon").
    pub due_from_today: bool,
    /// Open or in progress past the day its priority's target set (whatever its due
    /// date says: a moved date does not move the target).
    pub past_target: bool,
    /// Open or in progress with their risk accepted until today or later, and at
    /// the latest this day.
    pub risk_accepted_by: Option<NaiveDate>,
}

/// How the list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ActionSort {
    /// Soonest due first.
    #[default]
    DueDate,
    /// Most days overdue first (the same order, for overdue actions, as the oldest due date).
    DaysOverdue,
    /// By owner, then soonest due.
    Owner,
    /// The earliest target first (the longest past it, for actions past their target).
    Target,
}

type Filtered<'a> = corrective_actions::BoxedQuery<'a, MultiBackend>;

/// The actions `filter` selects, as one query to count, group or page. "Overdue" in
/// SQL is the domain's definition: active, and the due date is before today in the
/// organisation's time zone.
pub(crate) fn filtered<'a>(
    filter: &ActionFilter,
    looked_up: &LookedUp,
    today: NaiveDate,
) -> Filtered<'a> {
    let mut q = corrective_actions::table.into_boxed();
    if let Some(owner) = &filter.owner {
        // Addresses are stored in lower case: "Ana@Example.com" finds ana's.
        q = q.filter(corrective_actions::owner_email.eq(owner.trim().to_lowercase()));
    }
    if let Some(members) = &looked_up.team_members {
        q = q.filter(corrective_actions::owner_email.eq_any(members.clone()));
    }
    if let Some(coes) = &looked_up.coes {
        q = q.filter(corrective_actions::coe_id.eq_any(coes.clone()));
    }
    if let Some(coe) = &filter.coe {
        q = q.filter(corrective_actions::coe_id.eq(coe.clone()));
    }
    if let Some(state) = filter.state {
        q = q.filter(corrective_actions::state.eq(state.as_str()));
    }
    match filter.overdue {
        Some(true) => q = q.filter(crate::db::rules::action_is_overdue(today)),
        Some(false) => q = q.filter(crate::db::rules::action_is_not_overdue(today)),
        None => {}
    }
    if filter.due_from_today {
        q = q
            .filter(crate::db::rules::action_is_active())
            .filter(crate::db::rules::not_past_due(today));
    }
    if filter.past_target {
        q = q
            .filter(crate::db::rules::action_is_active())
            .filter(corrective_actions::target_date.lt(today));
    }
    if let Some(by) = filter.risk_accepted_by {
        q = q
            .filter(crate::db::rules::action_is_active())
            .filter(corrective_actions::risk_accepted_until.ge(today))
            .filter(corrective_actions::risk_accepted_until.le(by));
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
}

/// What a filter needs looked up before its query: the owners of its team, the COEs
/// of its service or severity.
#[derive(Debug, Default)]
pub(crate) struct LookedUp {
    team_members: Option<Vec<String>>,
    coes: Option<Vec<String>>,
}

impl LookedUp {
    /// The owners of the filter's team, when it names one.
    pub(crate) fn team_members(&self) -> Option<&[String]> {
        self.team_members.as_deref()
    }
}

pub(crate) fn look_up(conn: &mut DbConnection, filter: &ActionFilter) -> QueryResult<LookedUp> {
    let team_members = match &filter.team {
        Some(team) => Some(
            // A team matches whatever its case: "Payments" finds payments.
            people::table
                .filter(crate::db::lower(people::team).eq(team.trim().to_lowercase()))
                .select(people::email)
                .load(conn)?,
        ),
        None => None,
    };
    let coes = if filter.service.is_some() || filter.severity.is_some() {
        let mut of = coes::table.select(coes::id).into_boxed();
        if let Some(service) = &filter.service {
            of = of.filter(coes::service.eq(service.clone()));
        }
        if let Some(severity) = filter.severity {
            of = of.filter(coes::severity.eq(severity.rank()));
        }
        Some(of.load(conn)?)
    } else {
        None
    };
    Ok(LookedUp { team_members, coes })
}

/// How many actions `filter` selects.
pub fn count(conn: &mut DbConnection, filter: &ActionFilter, clock: Clock) -> QueryResult<i64> {
    let looked_up = look_up(conn, filter)?;
    filtered(filter, &looked_up, clock.today())
        .count()
        .get_result(conn)
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
    let total = count(conn, filter, clock)?;
    Ok((page(conn, filter, sort, limit, offset, clock)?, total))
}

/// A page of actions, without counting how many match (for a caller that knows).
pub fn page(
    conn: &mut DbConnection,
    filter: &ActionFilter,
    sort: ActionSort,
    limit: i64,
    offset: i64,
    clock: Clock,
) -> QueryResult<Vec<ActionView>> {
    let today = clock.today();
    let looked_up = look_up(conn, filter)?;
    let active_only =
        filter.state.is_none() && (filter.overdue == Some(true) || filter.due_from_today);
    let rows: Vec<ActionRow> = if active_only {
        // "Open or in progress" as one IN list makes both databases read and sort
        // every match before the limit (100,000 overdue of 1,000,000 actions). One
        // state at a time, the (state, due_date, id) index gives the rows in order: read
        // each state's first `offset + limit` and merge them here.
        let mut merged = Vec::new();
        for state in ActionState::ACTIVE {
            let one = ActionFilter {
                state: Some(state),
                ..filter.clone()
            };
            merged.extend(ordered_rows(
                &one,
                &looked_up,
                today,
                sort,
                offset.saturating_add(limit),
                0,
                conn,
            )?);
        }
        merged.sort_by(|a, b| match sort {
            ActionSort::DueDate => (a.due_date, &a.id).cmp(&(b.due_date, &b.id)),
            ActionSort::DaysOverdue => (a.due_date, &a.id).cmp(&(b.due_date, &b.id)),
            ActionSort::Owner => {
                (&a.owner_email, a.due_date, &a.id).cmp(&(&b.owner_email, b.due_date, &b.id))
            }
            ActionSort::Target => (a.target_date, &a.id).cmp(&(b.target_date, &b.id)),
        });
        merged
            .into_iter()
            .skip(usize::try_from(offset).unwrap_or(0))
            .take(usize::try_from(limit).unwrap_or(0))
            .collect()
    } else {
        ordered_rows(filter, &looked_up, today, sort, limit, offset, conn)?
    };
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
    Ok(views)
}

/// The rows `filter` selects in `sort` order, `limit` of them from `offset`.
fn ordered_rows(
    filter: &ActionFilter,
    looked_up: &LookedUp,
    today: NaiveDate,
    sort: ActionSort,
    limit: i64,
    offset: i64,
    conn: &mut DbConnection,
) -> QueryResult<Vec<ActionRow>> {
    let query = || filtered(filter, looked_up, today);
    let ordered = match sort {
        ActionSort::DueDate => query().order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        )),
        // The longest overdue is the oldest due date; ids are time-ordered (UUIDv7),
        // so ties go oldest first, in the `(state, due_date, id)` index's order.
        ActionSort::DaysOverdue => query().order((
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        )),
        ActionSort::Owner => query().order((
            corrective_actions::owner_email.asc(),
            corrective_actions::due_date.asc(),
            corrective_actions::id.asc(),
        )),
        ActionSort::Target => query().order((
            corrective_actions::target_date.asc(),
            corrective_actions::id.asc(),
        )),
    };
    ordered
        .limit(limit)
        .offset(offset)
        .select(ActionRow::as_select())
        .load(conn)
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
