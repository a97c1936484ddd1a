//! Risk accepted, with an expiry: instead of moving a due date again and again, an
//! action's owner asks to accept its risk until a day, saying what interim control is
//! in place and what risk remains. The owner's manager or the COE's bar raiser (never
//! the owner or whoever asked; an admin only when there is neither) accepts or
//! refuses. Accepted, the action is due on that day: it is not overdue until then,
//! and overdue and escalated as usual after it (the one definition of overdue stays
//! `domain::action::is_overdue`); the board shows it apart while it lasts.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::change::{clean_text, load_locked, record_due_move, MAX_NOTE_BYTES};
use super::{invalid, view, ActionError};
use crate::db::models::RiskAcceptanceRow;
use crate::db::schema::{coes, corrective_actions, people, risk_acceptances};
use crate::db::{self, types, DbConnection};
use crate::domain::action::{check_new_due_date, ActionState};
use crate::domain::{Clock, Severity};
use crate::services::access::{self, Editor};
use crate::services::outbound::spine::ActionChange;
use crate::services::outbound::{self, ActionEvent};
use crate::services::Env;

/// Longest interim control or remaining risk, in bytes.
const MAX_TEXT_BYTES: usize = 10_000;

/// Input of `POST /api/v1/actions/{id}/risk`: accept the risk until a day.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskRequest {
    /// `YYYY-MM-DD`: after today and after the due date, within
    /// `actions.risk_max_days` of today.
    #[schema(value_type = String, format = Date)]
    pub until: Option<String>,
    /// What keeps the outage from hurting meanwhile (a manual check, a feature
    /// flag, a runbook step).
    pub interim_control: Option<String>,
    /// What can still go wrong until then, and how bad it would be.
    pub remaining_risk: Option<String>,
}

/// Input of `POST /api/v1/actions/{id}/risk/accept` and `…/risk/refuse`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskDecision {
    /// What the decider says: required to refuse.
    pub note: Option<String>,
}

/// A request to accept an action's risk, and its decision.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RiskView {
    pub id: String,
    pub asked_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    #[schema(value_type = String, format = DateTime)]
    pub asked_at: NaiveDateTime,
    #[schema(value_type = String, format = Date)]
    pub until: NaiveDate,
    pub interim_control: String,
    pub remaining_risk: String,
    /// The due date when it was asked.
    #[schema(value_type = String, format = Date)]
    pub due_before: NaiveDate,
    /// `asked` (waits for a decision), `accepted` or `refused`.
    pub state: String,
    pub decided_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub decided_at: Option<NaiveDateTime>,
    pub note: Option<String>,
}

impl From<RiskAcceptanceRow> for RiskView {
    fn from(r: RiskAcceptanceRow) -> Self {
        RiskView {
            id: r.id,
            asked_by: r.asked_by,
            asked_at: r.asked_at,
            until: r.until_date,
            interim_control: r.interim_control,
            remaining_risk: r.remaining_risk,
            due_before: r.due_before,
            state: r.state,
            decided_by: r.decided_by,
            decided_at: r.decided_at,
            note: r.decision_note,
        }
    }
}

/// The requests of action `id`, oldest first.
pub fn of_action(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<RiskView>> {
    risk_acceptances::table
        .filter(risk_acceptances::action_id.eq(id))
        .order((risk_acceptances::asked_at.asc(), risk_acceptances::id.asc()))
        .select(RiskAcceptanceRow::as_select())
        .load(conn)
        .map(|rows| rows.into_iter().map(RiskView::from).collect())
}

/// Who decides on accepting the risk of an action owned by `owner` on COE `coe_id`:
/// the owner's manager and the COE's bar raiser (either may be missing).
pub fn deciders(conn: &mut DbConnection, owner: &str, coe_id: &str) -> QueryResult<Vec<String>> {
    let manager: Option<String> = people::table
        .find(owner)
        .select(people::manager_email)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    let bar_raiser: Option<String> = coes::table
        .find(coe_id)
        .select(coes::bar_raiser_email)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    let mut deciders: Vec<String> = manager.into_iter().chain(bar_raiser).collect();
    deciders.dedup();
    Ok(deciders)
}

/// The admins, told of a request nobody else can decide.
fn admins(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    people::table
        .filter(people::is_admin.eq(true))
        .order(people::email.asc())
        .select(people::email)
        .load(conn)
}

/// Asks to accept the risk of action `id` until a day; those who decide are emailed.
pub fn ask(
    conn: &mut DbConnection,
    id: &str,
    input: &RiskRequest,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<RiskView, ActionError> {
    let mut problems = Vec::new();
    let until = match input
        .until
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        None => {
            problems.push((
                "until".to_owned(),
                "is required: the day the risk is accepted until".to_owned(),
            ));
            None
        }
        Some(u) => match u.parse::<NaiveDate>() {
            Err(_) => {
                problems.push((
                    "until".to_owned(),
                    format!("must be a date as YYYY-MM-DD (got {u:?})"),
                ));
                None
            }
            Ok(day) => match check_new_due_date(day, clock.now, clock.tz) {
                Err(p) => {
                    problems.push(("until".to_owned(), p));
                    None
                }
                Ok(()) => {
                    let max = env.settings.actions.risk_max_days;
                    let latest = clock.today() + chrono::Days::new(u64::from(max));
                    if day > latest {
                        problems.push((
                            "until".to_owned(),
                            format!("must be at most {max} days from today (by {latest}): ask again then"),
                        ));
                        None
                    } else {
                        Some(day)
                    }
                }
            },
        },
    };
    let mut text = |field: &str, what: &str| match clean_text(
        field,
        match field {
            "interim_control" => input.interim_control.as_deref(),
            _ => input.remaining_risk.as_deref(),
        },
        MAX_TEXT_BYTES,
    ) {
        Ok(Some(t)) => Some(t),
        Ok(None) => {
            problems.push((field.to_owned(), format!("is required: {what}")));
            None
        }
        Err(ActionError::Invalid(p)) => {
            problems.extend(p);
            None
        }
        Err(_) => None,
    };
    let interim = text(
        "interim_control",
        "what keeps the outage from hurting meanwhile",
    );
    let remaining = text("remaining_risk", "what can still go wrong until then");
    let (Some(until), Some(interim), Some(remaining)) = (until, interim, remaining) else {
        return Err(ActionError::Invalid(problems));
    };
    db::write_transaction(conn, |conn| {
        let row = load_locked(conn, id)?;
        access::action(conn, id, who)?;
        let state: ActionState = types::read("corrective_actions.state", &row.state)?;
        if !state.is_active() {
            return Err(ActionError::Conflict(format!(
                "the action is {}: only an action still to be done has a risk to accept",
                state.as_str().replace('_', " ")
            )));
        }
        if !crate::domain::action::extends_due_date(until, row.due_date) {
            return Err(invalid(
                "until",
                format!(
                    "must be after the due date ({}): until then the action is not late",
                    row.due_date
                ),
            ));
        }
        let waiting: i64 = risk_acceptances::table
            .filter(risk_acceptances::action_id.eq(id))
            .filter(risk_acceptances::state.eq("asked"))
            .count()
            .get_result(conn)?;
        if waiting > 0 {
            return Err(ActionError::Conflict(
                "a request to accept this action's risk already waits for a decision".into(),
            ));
        }
        let now = db::now();
        let acceptance = RiskAcceptanceRow {
            id: db::new_id(),
            action_id: id.to_owned(),
            // Who answers for the request (a token made for someone asks as its maker).
            asked_by: who.principal.to_owned(),
            asked_at: now,
            until_date: until,
            interim_control: interim,
            remaining_risk: remaining,
            due_before: row.due_date,
            state: "asked".to_owned(),
            decided_by: None,
            decided_at: None,
            decision_note: None,
        };
        diesel::insert_into(risk_acceptances::table)
            .values(&acceptance)
            .execute(conn)?;
        let mut tell = access::risk_deciders(
            &deciders(conn, &row.owner_email, &row.coe_id)?,
            &row.owner_email,
            &acceptance.asked_by,
            &env.settings.auth.dotless_domains,
        );
        if tell.is_empty() {
            tell = admins(conn)?;
        }
        let event = ActionEvent::Risk {
            action: &row,
            acceptance: &acceptance,
            tell: &tell,
        };
        outbound::happened(conn, env, who.actor, event, now)?;
        Ok(RiskView::from(acceptance))
    })
}

/// The owner's manager or the COE's bar raiser accepts (`accept`) or refuses the
/// request waiting on action `id`. Accepted, the action is due on the request's day
/// (a due date move whose reason says so) and marked as accepted until then; the
/// owner is emailed either way.
pub fn decide(
    conn: &mut DbConnection,
    id: &str,
    accept: bool,
    input: &RiskDecision,
    who: &Editor<'_>,
    clock: Clock,
    env: Env<'_>,
) -> Result<RiskView, ActionError> {
    let note = clean_text("note", input.note.as_deref(), MAX_NOTE_BYTES)?;
    if !accept && note.is_none() {
        return Err(invalid(
            "note",
            "is required to refuse: say why, the owner reads it",
        ));
    }
    db::write_transaction(conn, |conn| {
        let mut row = load_locked(conn, id)?;
        let mut acceptance: RiskAcceptanceRow = risk_acceptances::table
            .filter(risk_acceptances::action_id.eq(id))
            .filter(risk_acceptances::state.eq("asked"))
            .select(RiskAcceptanceRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(|| {
                ActionError::Conflict(
                    "no request to accept this action's risk waits for a decision".into(),
                )
            })?;
        let deciders = deciders(conn, &row.owner_email, &row.coe_id)?;
        let by = access::decide_risk(
            who,
            &deciders,
            &row.owner_email,
            &acceptance.asked_by,
            &env.settings.auth.dotless_domains,
        )?;
        let state: ActionState = types::read("corrective_actions.state", &row.state)?;
        if accept && !state.is_active() {
            return Err(ActionError::Conflict(format!(
                "the action is {} since it was asked: nothing to accept (refuse the request)",
                state.as_str().replace('_', " ")
            )));
        }
        if accept && !crate::domain::action::extends_due_date(acceptance.until_date, row.due_date) {
            return Err(ActionError::Conflict(format!(
                "the due date moved to {} since it was asked: the day asked for ({}) gives no more \
                 time; refuse it, and the owner asks again",
                row.due_date, acceptance.until_date
            )));
        }
        if accept && acceptance.until_date <= clock.today() {
            return Err(ActionError::Conflict(format!(
                "the day asked for ({}) has passed: refuse it, and the owner asks again",
                acceptance.until_date
            )));
        }
        let now = db::now();
        acceptance.state = if accept { "accepted" } else { "refused" }.to_owned();
        acceptance.decided_by = Some(by.to_owned());
        acceptance.decided_at = Some(now);
        acceptance.decision_note = note;
        diesel::update(risk_acceptances::table.find(&acceptance.id))
            .set((
                risk_acceptances::state.eq(&acceptance.state),
                risk_acceptances::decided_by.eq(&acceptance.decided_by),
                risk_acceptances::decided_at.eq(acceptance.decided_at),
                risk_acceptances::decision_note.eq(&acceptance.decision_note),
            ))
            .execute(conn)?;
        let actor = who.actor;
        if accept {
            let before =
                serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
            let reason = format!(
                "Risk accepted until {} by {by}. Interim control: {}",
                acceptance.until_date, acceptance.interim_control
            );
            let from = row.due_date;
            record_due_move(
                conn,
                &mut row,
                acceptance.until_date,
                reason.clone(),
                actor,
                now,
            )?;
            row.risk_accepted_until = Some(acceptance.until_date);
            row.updated_at = now;
            diesel::update(corrective_actions::table.find(id))
                .set(&row)
                .execute(conn)?;
            let after =
                serde_json::to_value(view(row.clone(), String::new(), Severity::Sev3, clock)?).ok();
            let change = ActionChange {
                action: &row,
                before,
                after,
                words: false,
                due: Some((from, acceptance.until_date, reason.as_str())),
                handed_from: None,
                unverified: false,
            };
            outbound::happened(conn, env, actor, ActionEvent::Changed(change), now)?;
        }
        let tell = [row.owner_email.clone()];
        let event = ActionEvent::Risk {
            action: &row,
            acceptance: &acceptance,
            tell: &tell,
        };
        outbound::happened(conn, env, actor, event, now)?;
        Ok(RiskView::from(acceptance))
    })
}
