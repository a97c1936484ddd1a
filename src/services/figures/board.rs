//! The overdue board: what is overdue and due soon, by team and by owner, with each
//! action's days overdue, its COE and how often and why its due date moved. The
//! filters are the action list's (`actions::filtered`), so the board and
//! `/api/v1/actions` agree on what "overdue" selects.

use std::collections::{BTreeMap, HashMap};

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;

use crate::db::schema::{corrective_actions, due_date_changes, people};
use crate::db::DbConnection;
use crate::domain::action::{self, ActionState};
use crate::domain::Clock;
use crate::services::coe::actions::{self, tally, ActionFilter, ActionSort, ActionView};

/// One owner's line on the board.
#[derive(Debug, Clone, Serialize)]
pub struct OwnerLine {
    pub owner: String,
    pub name: Option<String>,
    pub team: String,
    pub overdue: i64,
    pub due_soon: i64,
    /// Days overdue of their oldest overdue action.
    pub most_days_overdue: i64,
    /// The day they left the organisation, when they have: their actions wait for
    /// someone to take them over.
    pub left_on: Option<String>,
}

/// One team's line on the board.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TeamLine {
    pub team: String,
    pub overdue: i64,
    pub due_soon: i64,
    pub owners: i64,
}

/// The board's totals for a filter: overdue and due soon, by team and by owner
/// (most overdue first).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub overdue: i64,
    pub due_soon: i64,
    pub by_team: Vec<TeamLine>,
    pub by_owner: Vec<OwnerLine>,
}

/// The team of owners without one in the directory.
pub const NO_TEAM: &str = "(no team)";

/// Counts what `base` selects (its `overdue` and due window are set here), by owner.
pub fn totals(
    conn: &mut DbConnection,
    base: &ActionFilter,
    clock: Clock,
    due_soon_days: i64,
) -> QueryResult<Totals> {
    let today = clock.today();
    let looked_up = actions::look_up(conn, base)?;
    let overdue = ActionFilter {
        overdue: Some(true),
        due_from_today: false,
        due_before: None,
        ..base.clone()
    };
    // Each owner's count and oldest due date: kept per owner by the database when the
    // filter names at most an owner and a team, else counted.
    let mut overdue_by_owner: BTreeMap<String, (i64, NaiveDate)> = BTreeMap::new();
    if by_owner_only(base) {
        let mut only: Option<Vec<String>> = looked_up.team_members().map(<[String]>::to_vec);
        if let Some(owner) = &base.owner {
            let owner = owner.trim().to_lowercase();
            only = Some(match only {
                Some(members) => members.into_iter().filter(|m| *m == owner).collect(),
                None => vec![owner],
            });
        }
        for t in tally::owners(conn, today, only.as_deref())? {
            if t.overdue > 0 {
                overdue_by_owner.insert(t.owner, (t.overdue, t.oldest_due.unwrap_or(today)));
            }
        }
    } else {
        // (Diesel cannot group a query built at run time, so the rows' two columns are
        // read and counted here.)
        let rows: Vec<(String, NaiveDate)> = actions::filtered(&overdue, &looked_up, today)
            .select((
                corrective_actions::owner_email,
                corrective_actions::due_date,
            ))
            .load(conn)?;
        for (owner, due) in rows {
            let entry = overdue_by_owner.entry(owner).or_insert((0, due));
            entry.0 += 1;
            entry.1 = entry.1.min(due);
        }
    }
    let soon = ActionFilter {
        overdue: None,
        due_from_today: true,
        due_before: Some(today + Duration::days(due_soon_days)),
        ..base.clone()
    };
    let mut soon_by_owner: BTreeMap<String, i64> = BTreeMap::new();
    let rows: Vec<String> = actions::filtered(&soon, &looked_up, today)
        .select(corrective_actions::owner_email)
        .load(conn)?;
    for owner in rows {
        *soon_by_owner.entry(owner).or_default() += 1;
    }

    let mut lines = owner_lines(overdue_by_owner, soon_by_owner, clock);
    name_owners(conn, &mut lines)?;
    Ok(add_up(lines))
}

/// Each owner's line: their overdue and due-soon counts and the days overdue of
/// their oldest, not yet named (`name_owners`), in no team.
fn owner_lines(
    overdue_by_owner: BTreeMap<String, (i64, NaiveDate)>,
    soon_by_owner: BTreeMap<String, i64>,
    clock: Clock,
) -> BTreeMap<String, OwnerLine> {
    let mut lines: BTreeMap<String, OwnerLine> = BTreeMap::new();
    let blank = |owner: &str| OwnerLine {
        owner: owner.to_owned(),
        name: None,
        team: NO_TEAM.to_owned(),
        overdue: 0,
        due_soon: 0,
        most_days_overdue: 0,
        left_on: None,
    };
    for (owner, (n, oldest)) in overdue_by_owner {
        let line = lines.entry(owner.clone()).or_insert_with(|| blank(&owner));
        line.overdue = n;
        line.most_days_overdue =
            action::days_overdue(ActionState::Open, oldest, clock.now, clock.tz);
    }
    for (owner, n) in soon_by_owner {
        lines
            .entry(owner.clone())
            .or_insert_with(|| blank(&owner))
            .due_soon = n;
    }
    lines
}

/// Gives each owner's line their name, team and the day they left, as the
/// directory says.
fn name_owners(
    conn: &mut DbConnection,
    lines: &mut BTreeMap<String, OwnerLine>,
) -> QueryResult<()> {
    let owners: Vec<String> = lines.keys().cloned().collect();
    for chunk in owners.chunks(500) {
        type Found = (
            String,
            Option<String>,
            Option<String>,
            bool,
            Option<NaiveDateTime>,
        );
        let found: Vec<Found> = people::table
            .filter(people::email.eq_any(chunk))
            .select((
                people::email,
                people::name,
                people::team,
                people::active,
                people::left_at,
            ))
            .load(conn)?;
        for (email, name, team, active, left_at) in found {
            if let Some(line) = lines.get_mut(&email) {
                line.name = name;
                if !active {
                    line.left_on =
                        Some(left_at.map_or_else(|| "?".into(), |t| t.date().to_string()));
                }
                if let Some(team) = team {
                    line.team = team;
                }
            }
        }
    }
    Ok(())
}

/// The board's totals from the owners' lines: the sums, each team's line, and the
/// most overdue teams and owners first.
fn add_up(lines: BTreeMap<String, OwnerLine>) -> Totals {
    let mut teams: BTreeMap<String, TeamLine> = BTreeMap::new();
    let mut totals = Totals::default();
    for line in lines.values() {
        totals.overdue += line.overdue;
        totals.due_soon += line.due_soon;
        let team = teams.entry(line.team.clone()).or_insert_with(|| TeamLine {
            team: line.team.clone(),
            ..TeamLine::default()
        });
        team.overdue += line.overdue;
        team.due_soon += line.due_soon;
        team.owners += 1;
    }
    totals.by_team = teams.into_values().collect();
    totals
        .by_team
        .sort_by(|a, b| b.overdue.cmp(&a.overdue).then(a.team.cmp(&b.team)));
    totals.by_owner = lines.into_values().collect();
    totals.by_owner.sort_by(|a, b| {
        b.overdue
            .cmp(&a.overdue)
            .then(b.most_days_overdue.cmp(&a.most_days_overdue))
            .then(a.owner.cmp(&b.owner))
    });
    totals
}

/// Whether a filter selects whole owners' open actions (at most an owner and a team),
/// which `actions::tally` keeps counted. Its overdue flag and due window are the
/// totals' own.
fn by_owner_only(filter: &ActionFilter) -> bool {
    filter.coe.is_none()
        && filter.state.is_none()
        && filter.priority.is_none()
        && filter.kind.is_none()
        && filter.service.is_none()
        && filter.severity.is_none()
}

/// An action on the board: the action, its owner's team, and why its due date last
/// moved.
#[derive(Debug, Clone, Serialize)]
pub struct BoardRow {
    #[serde(flatten)]
    pub action: ActionView,
    pub team: Option<String>,
    pub last_move_reason: Option<String>,
    /// The day the owner left the organisation, when they have and the action is
    /// still theirs (nobody could take it over).
    pub owner_left_on: Option<String>,
}

/// A page of the board's actions (how many match in all is in its `Totals`).
pub fn rows(
    conn: &mut DbConnection,
    filter: &ActionFilter,
    sort: ActionSort,
    limit: i64,
    offset: i64,
    clock: Clock,
) -> QueryResult<Vec<BoardRow>> {
    let page = actions::page(conn, filter, sort, limit, offset, clock)?;
    let ids: Vec<&str> = page.iter().map(|a| a.id.as_str()).collect();
    let mut reasons: HashMap<String, String> = HashMap::new();
    let moves: Vec<(String, String)> = due_date_changes::table
        .filter(due_date_changes::action_id.eq_any(&ids))
        .order(due_date_changes::changed_at.asc())
        .select((due_date_changes::action_id, due_date_changes::reason))
        .load(conn)?;
    for (id, reason) in moves {
        reasons.insert(id, reason);
    }
    let owners: Vec<&str> = page.iter().map(|a| a.owner.as_str()).collect();
    type Owner = (Option<String>, bool, Option<NaiveDateTime>);
    let teams: HashMap<String, Owner> = people::table
        .filter(people::email.eq_any(&owners))
        .select((people::email, people::team, people::active, people::left_at))
        .load::<(String, Option<String>, bool, Option<NaiveDateTime>)>(conn)?
        .into_iter()
        .map(|(email, team, active, left_at)| (email, (team, active, left_at)))
        .collect();
    Ok(page
        .into_iter()
        .map(|a| BoardRow {
            team: teams.get(&a.owner).and_then(|(t, _, _)| t.clone()),
            owner_left_on: teams
                .get(&a.owner)
                .filter(|(_, active, _)| !active)
                .map(|(_, _, at)| at.map_or_else(|| "?".into(), |t| t.date().to_string())),
            last_move_reason: reasons.remove(&a.id),
            action: a,
        })
        .collect())
}
