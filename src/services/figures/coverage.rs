//! The coverage audit: for a period and per team, whether every incident that met
//! the COE policy got its COE written and approved, how long that took, whether
//! actions closed on time, and which approved COEs a leader should read again (no
//! action that prevents or detects; warnings of the checks left standing). Rules in
//! `domain::coverage`; an incident's team is its COE owner's, else its service's.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::db::schema::{
    audit_log, coe_incidents, coes, corrective_actions, incidents, people, why_chains,
};
use crate::db::{types, DbConnection};
use crate::domain::action::{closed_on_time, ActionKind, ActionState};
use crate::domain::bar_raiser;
use crate::domain::coe::CoeState;
use crate::domain::coverage::{self, Covered};
use crate::services::coe::coes::{self as coe_service, CoeError};
use crate::services::Env;

/// An approved COE's title, owner, service, resolution, incident, severity and bar
/// raiser.
type ApprovedFacts = (
    String,
    Option<String>,
    Option<String>,
    Option<NaiveDateTime>,
    Option<String>,
    i32,
    Option<String>,
);

/// The team of people and services no team claims.
pub const NO_TEAM: &str = "(none)";

/// An incident that met the policy, and where its COE stands.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoveredIncident {
    pub incident_id: String,
    pub title: String,
    pub coe_id: Option<String>,
    /// `none`, `draft`, `draft_past_deadline`, `in_review` or `approved`.
    #[schema(value_type = String)]
    pub covered: Covered,
}

/// A COE approved in the period.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApprovedCoe {
    pub coe_id: String,
    pub title: String,
    /// Days from the outage's resolution to the approval (none when it never resolved).
    pub days_to_approval: Option<f64>,
    /// None of its actions is of kind prevent or detect.
    pub lacks_prevention: bool,
    /// Warnings of the checks it was approved with: intentions instead of mechanisms,
    /// 5-whys chains ending in human error.
    pub warnings: usize,
    /// Its severity needed a bar raiser (`coe.bar_raiser_from`), yet it was approved
    /// by its reviewer alone: nobody was marked bar raiser, or none fitted.
    pub without_bar_raiser: bool,
    /// Its bar raiser, when it had one.
    pub bar_raiser: Option<String>,
}

/// Days from resolution to approval over the COEs approved in the period.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct DaysToApproval {
    pub median: Option<f64>,
    pub worst: Option<f64>,
}

/// Actions closed in the period.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct ClosedActions {
    pub on_time: i64,
    pub late: i64,
    pub wont_do: i64,
    /// Of the actions done that had a target (`[[actions.targets]]`): done on or
    /// before it, whatever their due date said…
    #[serde(default)]
    pub within_target: i64,
    /// …and done after it.
    #[serde(default)]
    pub past_target: i64,
}

impl ClosedActions {
    /// Adds another's counts to these.
    pub fn add(&mut self, other: &ClosedActions) {
        self.on_time += other.on_time;
        self.late += other.late;
        self.wont_do += other.wont_do;
        self.within_target += other.within_target;
        self.past_target += other.past_target;
    }
}

/// The audit's figures for one team (or everyone), each with its list.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct CoverageFigures {
    /// Incidents of the period that met the COE policy.
    pub incidents_at_policy: i64,
    /// Of those, how many stand where (`none`, `draft`, `draft_past_deadline`,
    /// `in_review`, `approved`).
    pub incidents_by_coe_state: BTreeMap<String, i64>,
    pub incidents: Vec<CoveredIncident>,
    pub days_to_approval: DaysToApproval,
    pub actions_closed: ClosedActions,
    /// COEs approved in the period.
    pub approved: Vec<ApprovedCoe>,
    /// How many of them have no action of kind prevent or detect.
    pub approved_without_prevention: i64,
    /// How many of them carry warnings of the checks.
    pub approved_with_warnings: i64,
    /// How many of them needed a bar raiser and were approved without one.
    pub approved_without_bar_raiser: i64,
}

/// The coverage audit of a period: overall (or the team asked for) and by team.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Coverage {
    /// The first and the last day of the period (in the organisation's time zone).
    #[schema(value_type = String, format = Date)]
    pub from: NaiveDate,
    #[schema(value_type = String, format = Date)]
    pub to: NaiveDate,
    pub overall: CoverageFigures,
    pub by_team: BTreeMap<String, CoverageFigures>,
}

/// The chains of one quarter's COEs by contributing factor: overall and by team.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct FactorQuarter {
    /// `2026-Q4`.
    pub quarter: String,
    /// 5-whys chains of the quarter's COEs (by when their outage started).
    pub chains: i64,
    /// Chains by factor; `(not tagged)` for chains not tagged yet.
    pub overall: BTreeMap<String, i64>,
    pub by_team: BTreeMap<String, BTreeMap<String, i64>>,
}

/// A chain's COE owner, service, start and opening, and its factor.
type ChainFacts = (
    Option<String>,
    Option<String>,
    Option<NaiveDateTime>,
    NaiveDateTime,
    Option<String>,
);

/// What an untagged chain counts as.
pub const NOT_TAGGED: &str = "(not tagged)";

/// The contributing factors of the last `quarters` quarters (this one first), of
/// `team`'s COEs (any case) or everyone's. A COE counts in the quarter its outage
/// started (else it was opened); merged drafts count in the COE they went into.
pub fn factors(
    conn: &mut DbConnection,
    env: Env<'_>,
    team: Option<&str>,
    quarters: u32,
) -> QueryResult<Vec<FactorQuarter>> {
    let settings = env.settings;
    let clock = settings.clock();
    let today = clock.today();
    let first = coverage::quarter_start(today, quarters.saturating_sub(1));
    let since = clock.midnight(first);
    let teams = crate::services::directory::ownership::Teams::load(conn)?;
    let rows: Vec<ChainFacts> = why_chains::table
        .inner_join(coes::table)
        .filter(coes::state.ne(CoeState::Merged.as_str()))
        .filter(
            coes::started_at
                .ge(since)
                .or(coes::started_at.is_null().and(coes::created_at.ge(since))),
        )
        .select((
            coes::owner_email,
            coes::service,
            coes::started_at,
            coes::created_at,
            why_chains::factor,
        ))
        .load(conn)?;
    let mut out: Vec<FactorQuarter> = (0..quarters)
        .map(|back| FactorQuarter {
            quarter: coverage::quarter_of(coverage::quarter_start(today, back)),
            ..FactorQuarter::default()
        })
        .collect();
    for (owner, service, started, created, factor) in rows {
        let team_name = teams
            .of_at(
                owner.as_deref(),
                service.as_deref(),
                started.unwrap_or(created),
            )
            .unwrap_or_else(|| NO_TEAM.to_owned());
        if team.is_some_and(|w| !w.trim().eq_ignore_ascii_case(&team_name)) {
            continue;
        }
        let quarter = coverage::quarter_of(clock.local_date(started.unwrap_or(created)));
        let Some(q) = out.iter_mut().find(|q| q.quarter == quarter) else {
            continue;
        };
        let factor = factor.unwrap_or_else(|| NOT_TAGGED.to_owned());
        q.chains += 1;
        *q.overall.entry(factor.clone()).or_default() += 1;
        *q.by_team
            .entry(team_name)
            .or_default()
            .entry(factor)
            .or_default() += 1;
    }
    Ok(out)
}

/// The COEs whose review ended in an approval from `from` on (and before `until`),
/// the latest approval of each, newest first. A COE that settles back to approved
/// when an action reopens is not approved again.
pub fn approvals(
    conn: &mut DbConnection,
    from: NaiveDateTime,
    until: Option<NaiveDateTime>,
) -> QueryResult<Vec<(String, NaiveDateTime)>> {
    let mut query = audit_log::table
        .filter(audit_log::entity.eq("coe"))
        .filter(audit_log::action.eq("state:approved"))
        .filter(audit_log::at.ge(from))
        .into_boxed();
    if let Some(until) = until {
        query = query.filter(audit_log::at.lt(until));
    }
    let rows: Vec<(String, Option<String>, NaiveDateTime)> = query
        .order(audit_log::at.desc())
        .select((audit_log::entity_id, audit_log::before, audit_log::at))
        .load(conn)?;
    let mut out: Vec<(String, NaiveDateTime)> = Vec::new();
    for (id, before, at) in rows {
        let from_review = before
            .as_deref()
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
            .is_some_and(|b| b["state"] == "in_review");
        if from_review && !out.iter().any(|(seen, _)| *seen == id) {
            out.push((id, at));
        }
    }
    Ok(out)
}

/// The actions closed in a period, by their owner's team as the directory names it
/// (`None`: no team): on time, late, won't do.
pub type ClosedByTeam = BTreeMap<Option<String>, ClosedActions>;

/// The actions closed from `from` to `to` (both included, the organisation's days),
/// by their owner's team. It reads every action closed in the period: the figures job
/// counts the default period's ahead of the views (`stats::snapshot`).
pub fn closed_by_team(
    conn: &mut DbConnection,
    clock: crate::domain::Clock,
    from: NaiveDate,
    to: NaiveDate,
) -> QueryResult<ClosedByTeam> {
    let (start, end) = (clock.midnight(from), clock.midnight(to + Duration::days(1)));
    let teams: BTreeMap<String, String> = people::table
        .filter(people::team.is_not_null())
        .select((people::email, people::team.assume_not_null()))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect();
    // A team change moves nothing done before it.
    let history = crate::services::directory::ownership::TeamHistory::load(conn)?;
    #[allow(clippy::type_complexity)]
    let closed: Vec<(String, String, NaiveDate, NaiveDateTime, Option<NaiveDate>)> =
        corrective_actions::table
            .filter(corrective_actions::closed_at.ge(start))
            .filter(corrective_actions::closed_at.lt(end))
            .select((
                corrective_actions::owner_email,
                corrective_actions::state,
                corrective_actions::due_date,
                corrective_actions::closed_at.assume_not_null(),
                corrective_actions::target_date,
            ))
            .load(conn)?;
    let mut out = ClosedByTeam::new();
    for (owner, state, due, closed_at, target) in closed {
        let state: ActionState = types::read("corrective_actions.state", &state)?;
        let team = history.at(&owner, closed_at, teams.get(&owner).map(String::as_str));
        let counts = out.entry(team).or_default();
        let day = clock.local_date(closed_at);
        count_closed(counts, state, due, day);
        match crate::domain::action::closed_within_target(state, target, day) {
            Some(true) => counts.within_target += 1,
            Some(false) => counts.past_target += 1,
            None => {}
        }
    }
    // A team only with something counted.
    out.retain(|_, counts| *counts != ClosedActions::default());
    Ok(out)
}

/// An action closed on `day` counted: on time, late or won't do.
fn count_closed(counts: &mut ClosedActions, state: ActionState, due: NaiveDate, day: NaiveDate) {
    match closed_on_time(state, due, day) {
        Some(true) => counts.on_time += 1,
        Some(false) => counts.late += 1,
        None if state == ActionState::WontDo => counts.wont_do += 1,
        None => {}
    }
}

/// The audit of the days `from` to `to` (both included); only `team`'s (any case)
/// when given.
pub fn audit(
    conn: &mut DbConnection,
    env: Env<'_>,
    team: Option<&str>,
    from: NaiveDate,
    to: NaiveDate,
) -> QueryResult<Coverage> {
    let settings = env.settings;
    let closed = closed_by_team(conn, settings.clock(), from, to)?;
    audit_with(conn, env, team, from, to, &closed)
}

/// `audit`, with the actions closed in the period given (`closed_by_team` of the
/// same days).
pub fn audit_with(
    conn: &mut DbConnection,
    env: Env<'_>,
    team: Option<&str>,
    from: NaiveDate,
    to: NaiveDate,
    closed: &ClosedByTeam,
) -> QueryResult<Coverage> {
    let settings = env.settings;
    let clock = settings.clock();
    let now = clock.now.naive_utc();
    let (start, end) = (clock.midnight(from), clock.midnight(to + Duration::days(1)));
    let teams = crate::services::directory::ownership::Teams::load(conn)?;
    let mut audit = Audit {
        env,
        teams,
        team,
        start,
        end,
        now,
        by_team: BTreeMap::new(),
    };
    audit.incidents_at_policy(conn)?;
    // COEs approved in the period.
    audit.approved(conn)?;
    // Actions closed in the period, by their owner's team.
    audit.actions_closed(closed);
    let mut by_team = audit.by_team;
    let overall = add_up(&mut by_team);
    Ok(Coverage {
        from,
        to,
        overall,
        by_team,
    })
}

/// An audit under way: what it looks at (the period from `start` to `end`, the team
/// asked for) and the figures of each team so far.
struct Audit<'a> {
    env: Env<'a>,
    teams: crate::services::directory::ownership::Teams,
    team: Option<&'a str>,
    start: NaiveDateTime,
    end: NaiveDateTime,
    now: NaiveDateTime,
    by_team: BTreeMap<String, CoverageFigures>,
}

impl Audit<'_> {
    /// Whether the audit counts team `t`: the team asked for (any case), else every
    /// team.
    fn wanted(&self, t: &str) -> bool {
        self.team.is_none_or(|w| w.trim().eq_ignore_ascii_case(t))
    }

    /// Counts the incidents of the period that met the policy, by where their COE
    /// stands, each in its team.
    fn incidents_at_policy(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
        // Incidents of the period that met the policy, and their COEs, in one statement
        // (one the connection keeps prepared): the COE an incident was attached to, else
        // the COE opened for it.
        let (opened, attached) = diesel::alias!(coes as opened_for, coes as attached_to);
        type Facts = (String, String, Option<String>, Option<NaiveDateTime>);
        #[allow(clippy::type_complexity)]
        let found: Vec<(
            String,
            String,
            Option<String>,
            Option<NaiveDateTime>,
            Option<Facts>,
            Option<Facts>,
        )> = incidents::table
            .left_join(opened.on(opened.field(coes::incident_id).eq(incidents::id.nullable())))
            .left_join(coe_incidents::table.on(coe_incidents::incident_id.eq(incidents::id)))
            .left_join(attached.on(attached.field(coes::id).eq(coe_incidents::coe_id)))
            .filter(incidents::coe_required_at.is_not_null())
            .filter(incidents::started_at.ge(self.start))
            .filter(incidents::started_at.lt(self.end))
            .order(incidents::started_at.asc())
            .select((
                incidents::id,
                incidents::title,
                incidents::service,
                incidents::resolved_at,
                (
                    opened.field(coes::id),
                    opened.field(coes::state),
                    opened.field(coes::owner_email),
                    opened.field(coes::resolved_at),
                )
                    .nullable(),
                (
                    attached.field(coes::id),
                    attached.field(coes::state),
                    attached.field(coes::owner_email),
                    attached.field(coes::resolved_at),
                )
                    .nullable(),
            ))
            .load(conn)?;
        for (incident_id, title, service, resolved_at, opened, attached) in found {
            let facts = attached.or(opened);
            let coe_id = facts.as_ref().map(|(id, _, _, _)| id.clone());
            let state: Option<CoeState> = facts
                .as_ref()
                .map(|(_, s, _, _)| types::read("coes.state", s))
                .transpose()?;
            let owner = facts.as_ref().and_then(|(_, _, o, _)| o.as_deref());
            let resolved = facts.as_ref().and_then(|(_, _, _, r)| *r).or(resolved_at);
            let covered = Covered::of(
                state,
                resolved,
                self.now,
                self.env.settings.coe.writeup_days,
            );
            // The owner's team when the outage was (a later team change moves nothing).
            let team_name = self
                .teams
                .of_at(owner, service.as_deref(), resolved.unwrap_or(self.now))
                .unwrap_or_else(|| NO_TEAM.to_owned());
            if !self.wanted(&team_name) {
                continue;
            }
            let figures = self.by_team.entry(team_name).or_default();
            figures.incidents_at_policy += 1;
            *figures
                .incidents_by_coe_state
                .entry(covered.as_str().to_owned())
                .or_default() += 1;
            figures.incidents.push(CoveredIncident {
                incident_id,
                title,
                coe_id,
                covered,
            });
        }
        Ok(())
    }

    /// Lists the COEs approved in the period, each in its team, with what a leader
    /// reads again: no action that prevents or detects, warnings, no bar raiser.
    fn approved(&mut self, conn: &mut DbConnection) -> QueryResult<()> {
        for (coe_id, approved_at) in approvals(conn, self.start, Some(self.end))? {
            let (title, owner, service, resolved, incident, severity, bar_raiser): ApprovedFacts =
                coes::table
                    .find(&coe_id)
                    .select((
                        coes::title,
                        coes::owner_email,
                        coes::service,
                        coes::resolved_at,
                        coes::incident_id,
                        coes::severity,
                        coes::bar_raiser_email,
                    ))
                    .first(conn)?;
            let severity = types::severity("coes.severity", severity)?;
            let team_name = self
                .teams
                .of_at(owner.as_deref(), service.as_deref(), approved_at)
                .unwrap_or_else(|| NO_TEAM.to_owned());
            if !self.wanted(&team_name) {
                continue;
            }
            let resolved = match (resolved, incident) {
                (Some(r), _) => Some(r),
                (None, Some(incident)) => incidents::table
                    .find(incident)
                    .select(incidents::resolved_at)
                    .first(conn)
                    .optional()?
                    .flatten(),
                (None, None) => None,
            };
            let kinds: Vec<ActionKind> = corrective_actions::table
                .filter(corrective_actions::coe_id.eq(&coe_id))
                .select(corrective_actions::kind)
                .load::<String>(conn)?
                .iter()
                .map(|k| types::read("corrective_actions.kind", k))
                .collect::<Result<_, _>>()?;
            let warnings = match coe_service::assessment(conn, &coe_id, self.env) {
                Ok(assessment) => assessment.warnings.len(),
                Err(CoeError::Database(e)) => return Err(e),
                // Gone since it was approved (no COE is deleted): nothing to warn of.
                Err(_) => 0,
            };
            let figures = self.by_team.entry(team_name).or_default();
            figures.approved.push(ApprovedCoe {
                coe_id,
                title,
                days_to_approval: resolved.map(|r| coverage::days_to_approval(r, approved_at)),
                lacks_prevention: coverage::lacks_prevention(&kinds),
                warnings,
                without_bar_raiser: bar_raiser.is_none()
                    && bar_raiser::needed(severity, self.env.settings.coe.bar_raiser_from),
                bar_raiser,
            });
        }
        Ok(())
    }

    /// Adds the actions closed in the period (`closed_by_team`) to their teams.
    fn actions_closed(&mut self, closed: &ClosedByTeam) {
        for (team_name, counts) in closed {
            let team_name = team_name
                .as_deref()
                .map(|t| self.teams.canonical(t))
                .unwrap_or_else(|| NO_TEAM.to_owned());
            if !self.wanted(&team_name) {
                continue;
            }
            let sum = &mut self.by_team.entry(team_name).or_default().actions_closed;
            sum.add(counts);
        }
    }
}

/// Works out each team's figures (`settle`) and adds them up into everyone's.
fn add_up(by_team: &mut BTreeMap<String, CoverageFigures>) -> CoverageFigures {
    let mut overall = CoverageFigures::default();
    for figures in by_team.values_mut() {
        settle(figures);
        overall.incidents_at_policy += figures.incidents_at_policy;
        for (state, n) in &figures.incidents_by_coe_state {
            *overall
                .incidents_by_coe_state
                .entry(state.clone())
                .or_default() += n;
        }
        overall.incidents.extend(figures.incidents.iter().cloned());
        overall.approved.extend(figures.approved.iter().cloned());
        overall.actions_closed.add(&figures.actions_closed);
    }
    settle(&mut overall);
    overall
}

/// Works out the figures drawn from the lists: every state named (zero when none),
/// days to approval, the approved COEs to read again.
fn settle(figures: &mut CoverageFigures) {
    for state in Covered::ALL {
        figures
            .incidents_by_coe_state
            .entry(state.as_str().to_owned())
            .or_default();
    }
    let days: Vec<f64> = figures
        .approved
        .iter()
        .filter_map(|a| a.days_to_approval)
        .collect();
    let (median, worst) = coverage::median_and_worst(days);
    figures.days_to_approval = DaysToApproval { median, worst };
    figures.approved_without_prevention = figures
        .approved
        .iter()
        .filter(|a| a.lacks_prevention)
        .count() as i64;
    figures.approved_with_warnings =
        figures.approved.iter().filter(|a| a.warnings > 0).count() as i64;
    figures.approved_without_bar_raiser = figures
        .approved
        .iter()
        .filter(|a| a.without_bar_raiser)
        .count() as i64;
}
