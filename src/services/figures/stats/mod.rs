//! Figures for the inspection: what is open and overdue, what closed on time, which
//! COEs wait for review or are past their writeup deadline.

use std::collections::BTreeMap;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::schema::{coe_recurrences, coes, corrective_actions, people, review_comments};
use crate::db::DbConnection;
use crate::domain::coe::CoeState;
use crate::domain::Clock;
use diesel::dsl::AsExprOf;
use diesel::sql_types::Bool;

mod history;
pub mod inspect;
pub mod operator;
pub mod snapshot;
pub use history::{history, History};

#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct OpenAndOverdue {
    pub open: i64,
    pub overdue: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OnTimeAndLate {
    /// Done on or before the due date.
    pub on_time: i64,
    /// Done after it.
    pub late: i64,
    /// Decided not to be done: neither on time nor late.
    pub wont_do: i64,
}

impl OnTimeAndLate {
    /// `n` actions closed counted (taken away when negative): on time
    /// (`Some(true)`), late, or won't do (`None`).
    fn add(&mut self, on_time: Option<bool>, n: i64) {
        match on_time {
            Some(true) => self.on_time += n,
            Some(false) => self.late += n,
            None => self.wont_do += n,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WaitingCoe {
    pub coe_id: String,
    pub title: String,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    /// Since when it waits (submitted for review, or the incident resolved).
    #[serde(serialize_with = "crate::json::utc")]
    pub since: NaiveDateTime,
    pub days: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Stats {
    /// Open (open or in progress) and overdue actions in all.
    pub actions: OpenAndOverdue,
    /// Open or in progress past the day their priority's target set
    /// (`[[actions.targets]]`), whatever their due date says.
    pub actions_past_target: i64,
    /// By the owners' team (`(none)` for owners without a team in the directory).
    pub actions_by_team: BTreeMap<String, OpenAndOverdue>,
    pub actions_by_owner: BTreeMap<String, OpenAndOverdue>,
    /// Actions closed in the last 30 days: done on or before their due date, done after
    /// it, and decided not to be done.
    pub closed_last_30_days: OnTimeAndLate,
    pub closed_last_90_days: OnTimeAndLate,
    /// Median days from creation to done, over actions done in the last 90 days, to one
    /// decimal.
    pub median_days_to_close: Option<f64>,
    /// When the figures about the past (actions closed, the median, the weeks, the
    /// coverage audit's actions closed) were counted by the figures job
    /// (`server.figures_every_secs`); none when counted for this answer. Open and
    /// overdue are always as of now.
    #[serde(serialize_with = "crate::json::utc_option")]
    pub past_counted_at: Option<NaiveDateTime>,
    pub coes_by_state: BTreeMap<String, i64>,
    /// COEs in review, longest waiting first.
    pub waiting_for_review: Vec<WaitingCoe>,
    /// Drafts resolved more than `coe.writeup_days` ago.
    pub drafts_past_deadline: Vec<WaitingCoe>,
    /// Emails in the outbox by state; `failed` ones need a person (see `/api/v1/outbox`).
    pub emails_by_state: BTreeMap<String, i64>,
    /// COEs that link to an earlier COE (the same service and alert or group
    /// happened before), and all COEs.
    pub recurrence: Recurrence,
    /// Actions of kind prevent, detect or mitigate whose outage came back, in the
    /// period, after they were done.
    pub actions_recurred_after_done: i64,
    /// COEs approved in the period whose outage came back within 90 days.
    pub recurrence_after_approval: RecurrenceAfterApproval,
    /// The last 12 weeks (Monday to Sunday in the organisation's time zone), oldest
    /// first; the last one is this week, so far.
    pub weeks: Vec<Week>,
    /// The coverage audit of the period (`from`, `to`; by default the weeks above):
    /// incidents that met the policy and where their COEs stand, days to approval,
    /// actions closed on time, approved COEs to read again; overall and by team.
    pub coverage: crate::services::figures::coverage::Coverage,
    /// How long the last four quarters' outages took to detect, mitigate and
    /// resolve, and from resolution to approval: distributions (median, 90th
    /// percentile, count and missing), by severity, team and quarter.
    pub outage_times: crate::services::figures::times::OutageTimes,
    /// How the last four quarters' drill re-checks went: fixes proven in a drill.
    pub drills: crate::services::figures::drills::DrillSummary,
    /// The 5-whys chains of the last four quarters' COEs by contributing factor (this
    /// quarter first), overall and by team.
    pub contributing_factors: Vec<crate::services::figures::coverage::FactorQuarter>,
}

/// COEs approved in the period, and those whose outage came back within 90 days of
/// the approval.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct RecurrenceAfterApproval {
    pub approved: i64,
    pub recurred: i64,
    /// `recurred / approved` (0 to 1, to three decimals); none when nothing was approved.
    pub rate: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Recurrence {
    pub recurring_coes: i64,
    pub all_coes: i64,
}

/// One week's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Week {
    /// The Monday the week starts on.
    #[schema(value_type = String, format = Date)]
    pub starts: NaiveDate,
    /// Actions overdue at the end of the week (now, for this week), by their due
    /// dates as they stand.
    pub overdue_at_end: i64,
    /// Actions done that week on or before their due date.
    pub closed_on_time: i64,
    /// Actions done that week after their due date.
    pub closed_late: i64,
    /// Median days from creation to done of the actions done that week, to one decimal.
    pub median_days_to_close: Option<f64>,
}

/// How many weeks the weekly figures cover, unless a scope says otherwise.
pub const WEEKS: usize = 12;

/// The most weeks a scope may cover (a year).
pub const MAX_WEEKS: usize = 52;

/// Whose figures, over how long: everyone's by default, or those of the people of
/// one team (the actions they own and the COEs they own, by the directory's teams).
#[derive(Debug, Clone)]
pub struct Scope {
    /// The owners counted; `None` for everyone.
    pub owners: Option<Vec<String>>,
    /// How many weeks the weekly figures cover (1 to `MAX_WEEKS`).
    pub weeks: usize,
    /// The team asked for (the coverage audit counts its incidents, COEs and actions).
    pub team: Option<String>,
    /// The coverage audit's first and last day; the weekly figures' when unset.
    pub period: Option<(NaiveDate, NaiveDate)>,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            owners: None,
            weeks: WEEKS,
            team: None,
            period: None,
        }
    }
}

impl Scope {
    /// The people of `team` (any case) over `weeks` weeks.
    pub fn team(conn: &mut DbConnection, team: &str, weeks: usize) -> QueryResult<Scope> {
        let owners = people::table
            .filter(crate::db::lower(people::team).eq(team.to_lowercase()))
            .select(people::email)
            .load(conn)?;
        Ok(Scope {
            owners: Some(owners),
            weeks: weeks.clamp(1, MAX_WEEKS),
            team: Some(team.trim().to_owned()),
            period: None,
        })
    }

    /// What a person asks for (the dashboard, `GET /api/v1/stats`): one team's
    /// figures (any case) or everyone's, over `weeks` weeks, with the coverage audit
    /// of `period` (the last `weeks` weeks when none).
    pub fn asked(
        conn: &mut DbConnection,
        team: Option<&str>,
        weeks: usize,
        period: Option<(chrono::NaiveDate, chrono::NaiveDate)>,
    ) -> QueryResult<Scope> {
        let mut scope = match team {
            Some(team) => Scope::team(conn, team, weeks)?,
            None => Scope {
                weeks: weeks.clamp(1, MAX_WEEKS),
                ..Scope::default()
            },
        };
        scope.period = period;
        Ok(scope)
    }

    /// Whether an owner is counted.
    fn counts(&self, owner: Option<&str>) -> bool {
        match &self.owners {
            None => true,
            Some(owners) => owner.is_some_and(|o| owners.iter().any(|x| x == o)),
        }
    }

    /// The actions counted: a filter (owned by one of the owners, or everyone's).
    fn actions(&self) -> OwnedBy<corrective_actions::owner_email> {
        corrective_actions::owner_email
            .eq_any(self.owners.clone().unwrap_or_default())
            .or(self.owners.is_none().into_sql::<Bool>())
    }

    /// The COEs counted: a filter (owned by one of the owners, or everyone's).
    fn coes(&self) -> OwnedBy<coes::owner_email> {
        coes::owner_email
            .eq_any(self.owners.clone().unwrap_or_default())
            .or(self.owners.is_none().into_sql::<Bool>())
    }
}

/// A filter on an owner column: in a list, or true for everyone.
type OwnedBy<C> = diesel::dsl::Or<diesel::dsl::EqAny<C, Vec<String>>, AsExprOf<bool, Bool>>;

/// The Monday the last `weeks` weeks start on (this week is the last).
pub fn first_day(clock: Clock, weeks: usize) -> NaiveDate {
    let today = clock.today();
    let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    monday - Duration::weeks(weeks as i64 - 1)
}

/// A local midnight as a UTC time (the earliest, across a clock change).
fn local_midnight(clock: Clock, day: NaiveDate) -> NaiveDateTime {
    clock.midnight(day)
}

/// How long after its approval an outage that comes back counts against the COE.
pub const RECURRENCE_AFTER_APPROVAL_DAYS: i64 = 90;

/// The recurrence figures of the period the scope covers: actions whose outage came
/// back after they were done, and approved COEs whose outage came back within
/// `RECURRENCE_AFTER_APPROVAL_DAYS` of the approval.
fn recurrence_figures(
    conn: &mut DbConnection,
    clock: Clock,
    scope: &Scope,
) -> QueryResult<(i64, RecurrenceAfterApproval)> {
    use crate::db::schema::action_recurrences;
    let from = local_midnight(clock, first_day(clock, scope.weeks));
    let recurred: i64 = action_recurrences::table
        .inner_join(corrective_actions::table)
        .filter(scope.actions())
        .filter(action_recurrences::at.ge(from))
        .select(diesel::dsl::count(action_recurrences::action_id).aggregate_distinct())
        .first(conn)?;
    // Each COE approved in the period, at its last approval.
    let approved: Vec<(String, Option<NaiveDateTime>)> = review_comments::table
        .inner_join(coes::table.on(coes::id.eq(review_comments::coe_id)))
        .filter(scope.coes())
        .filter(review_comments::verdict.eq("approved"))
        .group_by(review_comments::coe_id)
        .select((
            review_comments::coe_id,
            diesel::dsl::max(review_comments::created_at),
        ))
        .load(conn)?;
    let approved: BTreeMap<String, NaiveDateTime> = approved
        .into_iter()
        .filter_map(|(id, at)| Some((id, at?)))
        .filter(|(_, at)| *at >= from)
        .collect();
    let mut after = RecurrenceAfterApproval {
        approved: approved.len() as i64,
        ..RecurrenceAfterApproval::default()
    };
    let ids: Vec<&String> = approved.keys().collect();
    let mut came_back: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for chunk in ids.chunks(500) {
        let links: Vec<(String, NaiveDateTime)> = coe_recurrences::table
            .filter(coe_recurrences::earlier_coe_id.eq_any(chunk))
            .select((coe_recurrences::earlier_coe_id, coe_recurrences::created_at))
            .load(conn)?;
        for (earlier, at) in links {
            let Some(approved_at) = approved.get(&earlier) else {
                continue;
            };
            if crate::domain::coe::recurred_after_approval(
                *approved_at,
                at,
                RECURRENCE_AFTER_APPROVAL_DAYS,
            ) {
                came_back.insert(earlier);
            }
        }
    }
    after.recurred = came_back.len() as i64;
    after.rate = (after.approved > 0)
        .then(|| ((after.recurred as f64 / after.approved as f64) * 1000.0).round() / 1000.0);
    Ok((recurred, after))
}

/// id, title, owner, reviewer, and the time it waits since.
pub type WaitRow<T> = (String, String, Option<String>, Option<String>, T);

impl WaitingCoe {
    /// A COE waiting since the row's time, in days at `now`.
    fn since(row: WaitRow<NaiveDateTime>, now: NaiveDateTime) -> WaitingCoe {
        let (coe_id, title, owner, reviewer, since) = row;
        WaitingCoe {
            days: (now - since).num_days(),
            coe_id,
            title,
            owner,
            reviewer,
            since,
        }
    }
}

/// Drafts resolved before `cutoff`, earliest first: id, title, owner, reviewer and
/// resolved time. The COE's own resolved time is copied from its incident, or set by
/// hand for a COE opened without one. The writeup reminders use the same rule.
pub fn late_drafts(
    conn: &mut DbConnection,
    cutoff: NaiveDateTime,
) -> QueryResult<Vec<WaitRow<Option<NaiveDateTime>>>> {
    coes::table
        .filter(coes::state.eq(CoeState::Draft.as_str()))
        .filter(coes::resolved_at.lt(cutoff))
        .order((coes::resolved_at.asc(), coes::id.asc()))
        .select((
            coes::id,
            coes::title,
            coes::owner_email,
            coes::reviewer_email,
            coes::resolved_at,
        ))
        .load(conn)
}

/// The figures about actions: open and overdue (kept per owner by the database), and
/// the past (`History`).
#[derive(Debug, Clone)]
pub struct ActionFigures {
    pub actions: OpenAndOverdue,
    pub by_team: BTreeMap<String, OpenAndOverdue>,
    pub by_owner: BTreeMap<String, OpenAndOverdue>,
    pub history: History,
}

/// All the inspection figures at `clock`.
pub fn stats(conn: &mut DbConnection, clock: Clock, writeup_days: i64) -> QueryResult<Stats> {
    let scope = Scope::default();
    let figures = action_figures(conn, clock, &scope)?;
    with_action_figures(conn, clock, writeup_days, figures, &scope)
}

/// The figures about actions at `clock`.
pub fn action_figures(
    conn: &mut DbConnection,
    clock: Clock,
    scope: &Scope,
) -> QueryResult<ActionFigures> {
    let history = history(conn, clock, scope)?;
    action_figures_with(conn, clock, scope, history)
}

/// Open and overdue actions now, in all, by team and by owner: what the database keeps
/// per owner (`actions::tally`), summed.
#[derive(Debug, Clone)]
pub struct LiveFigures {
    pub actions: OpenAndOverdue,
    pub by_team: BTreeMap<String, OpenAndOverdue>,
    pub by_owner: BTreeMap<String, OpenAndOverdue>,
}

/// The open and overdue actions of `scope` at `clock`.
pub fn live_figures(
    conn: &mut DbConnection,
    clock: Clock,
    scope: &Scope,
) -> QueryResult<LiveFigures> {
    let today = clock.today();
    // Kept per owner by the database (`actions::tally`), not counted here.
    let tallies =
        crate::services::coe::actions::tally::owners(conn, today, scope.owners.as_deref())?;
    let teams: BTreeMap<String, String> = people::table
        .filter(people::team.is_not_null())
        .select((people::email, people::team))
        .load::<(String, Option<String>)>(conn)?
        .into_iter()
        .filter_map(|(e, t)| t.map(|t| (e, t)))
        .collect();
    let mut actions = OpenAndOverdue::default();
    let mut by_owner: BTreeMap<String, OpenAndOverdue> = BTreeMap::new();
    let mut by_team: BTreeMap<String, OpenAndOverdue> = BTreeMap::new();
    for tally in tallies {
        let (owner, open, overdue) = (tally.owner, tally.open, tally.overdue);
        actions.open += open;
        actions.overdue += overdue;
        let team = teams
            .get(&owner)
            .cloned()
            .unwrap_or_else(|| "(none)".into());
        let t = by_team.entry(team).or_default();
        t.open += open;
        t.overdue += overdue;
        by_owner.insert(owner, OpenAndOverdue { open, overdue });
    }
    Ok(LiveFigures {
        actions,
        by_team,
        by_owner,
    })
}

/// The figures about actions at `clock`, with the past given (`history` of the same
/// scope).
pub fn action_figures_with(
    conn: &mut DbConnection,
    clock: Clock,
    scope: &Scope,
    history: History,
) -> QueryResult<ActionFigures> {
    Ok(with_history(live_figures(conn, clock, scope)?, history))
}

/// Live figures and the past together.
pub fn with_history(live: LiveFigures, history: History) -> ActionFigures {
    ActionFigures {
        actions: live.actions,
        by_team: live.by_team,
        by_owner: live.by_owner,
        history,
    }
}

/// The COEs that wait on someone: in review (since submitted), and drafts past their
/// writeup deadline (resolved more than `writeup_days` ago), longest waiting first.
pub struct Waiting {
    pub for_review: Vec<WaitingCoe>,
    pub drafts_past_deadline: Vec<WaitingCoe>,
}

/// The COEs of `scope` that wait on someone at `clock` (the stats' lists, and a
/// leader's home).
pub fn waiting(
    conn: &mut DbConnection,
    clock: Clock,
    writeup_days: i64,
    scope: &Scope,
) -> QueryResult<Waiting> {
    let now = clock.now.naive_utc();
    let in_review: Vec<WaitRow<NaiveDateTime>> = coes::table
        .filter(scope.coes())
        .filter(coes::state.eq(CoeState::InReview.as_str()))
        .select((
            coes::id,
            coes::title,
            coes::owner_email,
            coes::reviewer_email,
            coes::updated_at,
        ))
        .load(conn)?;
    let submitted: BTreeMap<String, Option<NaiveDateTime>> = review_comments::table
        .filter(review_comments::verdict.eq("submitted"))
        .filter(
            review_comments::coe_id.eq_any(
                coes::table
                    .filter(coes::state.eq(CoeState::InReview.as_str()))
                    .select(coes::id),
            ),
        )
        .group_by(review_comments::coe_id)
        .select((
            review_comments::coe_id,
            diesel::dsl::max(review_comments::created_at),
        ))
        .load(conn)?
        .into_iter()
        .collect();
    let mut waiting_for_review: Vec<WaitingCoe> = in_review
        .into_iter()
        .map(|(id, title, owner, reviewer, updated)| {
            let since = submitted.get(&id).copied().flatten().unwrap_or(updated);
            WaitingCoe::since((id, title, owner, reviewer, since), now)
        })
        .collect();
    waiting_for_review.sort_by_key(|w| w.since);

    let deadline = now - Duration::days(writeup_days);
    let late_drafts = late_drafts(conn, deadline)?;
    let mut drafts_past_deadline: Vec<WaitingCoe> = late_drafts
        .into_iter()
        .filter(|(_, _, owner, _, _)| scope.counts(owner.as_deref()))
        .filter_map(|(id, title, owner, reviewer, resolved)| {
            resolved.map(|since| WaitingCoe::since((id, title, owner, reviewer, since), now))
        })
        .collect();
    drafts_past_deadline.sort_by_key(|w| w.since);

    Ok(Waiting {
        for_review: waiting_for_review,
        drafts_past_deadline,
    })
}

/// All the inspection figures at `clock`, with the figures about actions given.
pub fn with_action_figures(
    conn: &mut DbConnection,
    clock: Clock,
    writeup_days: i64,
    figures: ActionFigures,
    scope: &Scope,
) -> QueryResult<Stats> {
    // Outages, not drafts folded into another: a merged draft is counted in the COE
    // it went into.
    let mut coes_by_state: BTreeMap<String, i64> = CoeState::ALL
        .iter()
        .filter(|s| **s != CoeState::Merged)
        .map(|s| (s.as_str().to_owned(), 0))
        .collect();
    for (state, n) in coes::table
        .filter(scope.coes())
        .filter(coes::state.ne(CoeState::Merged.as_str()))
        .group_by(coes::state)
        .select((coes::state, diesel::dsl::count_star()))
        .load::<(String, i64)>(conn)?
    {
        coes_by_state.insert(state, n);
    }

    let Waiting {
        for_review: waiting_for_review,
        drafts_past_deadline,
    } = waiting(conn, clock, writeup_days, scope)?;

    let (actions_recurred_after_done, recurrence_after_approval) =
        recurrence_figures(conn, clock, scope)?;
    let actions_past_target: i64 = corrective_actions::table
        .filter(scope.actions())
        .filter(crate::db::rules::action_is_active())
        .filter(corrective_actions::target_date.lt(clock.today()))
        .count()
        .get_result(conn)?;
    let outage_times =
        crate::services::figures::times::outage_times(conn, clock, scope.team.as_deref())?;
    let drills =
        crate::services::figures::drills::last_four_quarters(conn, clock, scope.owners.as_deref())?;
    Ok(Stats {
        outage_times,
        drills,
        // Filled by the caller, which has the settings a COE's checks need
        // (`services::figures::coverage::audit`).
        coverage: Default::default(),
        contributing_factors: Vec::new(),
        actions_recurred_after_done,
        recurrence_after_approval,
        actions: figures.actions,
        actions_past_target,
        actions_by_team: figures.by_team,
        actions_by_owner: figures.by_owner,
        past_counted_at: None,
        closed_last_30_days: figures.history.closed_last_30_days,
        closed_last_90_days: figures.history.closed_last_90_days,
        median_days_to_close: figures.history.median_days_to_close,
        coes_by_state,
        waiting_for_review,
        drafts_past_deadline,
        emails_by_state: crate::services::outbound::outbox::counts(conn)?,
        recurrence: Recurrence {
            recurring_coes: match scope.owners {
                None => coe_recurrences::table
                    .select(diesel::dsl::count(coe_recurrences::coe_id).aggregate_distinct())
                    .first(conn)?,
                Some(_) => coe_recurrences::table
                    .filter(
                        coe_recurrences::coe_id
                            .eq_any(coes::table.filter(scope.coes()).select(coes::id)),
                    )
                    .select(diesel::dsl::count(coe_recurrences::coe_id).aggregate_distinct())
                    .first(conn)?,
            },
            all_coes: coes::table
                .filter(scope.coes())
                .filter(coes::state.ne(CoeState::Merged.as_str()))
                .count()
                .get_result(conn)?,
        },
        weeks: figures.history.weeks,
    })
}
