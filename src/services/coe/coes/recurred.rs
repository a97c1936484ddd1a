//! A recurrence judges the actions meant to prevent it. When a new COE's incident
//! matches an earlier COE (the recurrence link: the same service and alert or
//! group), each of the earlier COE's actions of kind prevent, detect or mitigate
//! that was done before the outage started again records the recurrence
//! (`action_recurrences`, once per incident); the new draft lists them first ("meant
//! to prevent this"), the earlier COE and the action's page show "recurred after
//! done", and the earlier COE's owner and reviewer are emailed once per recurrence.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::models::CoeRow;
use crate::db::schema::{action_recurrences, coe_recurrences, coes, corrective_actions};
use crate::db::{types, DbConnection};
use crate::domain::action::{recurred_after_done, ActionKind, ActionState};
use crate::services::outbound::{self, ActionEvent, DoneAction};
use crate::services::Env;

/// An action done before its outage came back.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecurredAction {
    pub action_id: String,
    pub title: String,
    pub kind: ActionKind,
    pub owner: String,
    /// When it was done.
    #[serde(serialize_with = "crate::json::utc_option")]
    pub done_at: Option<NaiveDateTime>,
    /// The COE the action belongs to.
    pub action_coe_id: String,
    pub action_coe_title: String,
    /// The incident the outage came back as, and its COE.
    pub incident_id: String,
    pub coe_id: String,
    pub coe_title: String,
    /// When the outage started again.
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

/// Judges the actions of the COEs that COE `coe_id` (just opened for incident
/// `incident_id`, started at `started_at`) recurs. Call it in the transaction that
/// opened the draft, after its recurrences were linked.
pub fn judge(
    conn: &mut DbConnection,
    coe_id: &str,
    incident_id: &str,
    started_at: NaiveDateTime,
    env: &Env<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let earlier: Vec<String> = coe_recurrences::table
        .filter(coe_recurrences::coe_id.eq(coe_id))
        .select(coe_recurrences::earlier_coe_id)
        .load(conn)?;
    if earlier.is_empty() {
        return Ok(());
    }
    let kinds: Vec<&str> = ActionKind::JUDGED_BY_RECURRENCE
        .iter()
        .map(|k| k.as_str())
        .collect();
    type Candidate = (String, String, String, String, Option<NaiveDateTime>);
    let candidates: Vec<Candidate> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq_any(&earlier))
        .filter(corrective_actions::kind.eq_any(&kinds))
        .filter(corrective_actions::state.eq(ActionState::Done.as_str()))
        .select((
            corrective_actions::id,
            corrective_actions::coe_id,
            corrective_actions::kind,
            corrective_actions::state,
            corrective_actions::closed_at,
        ))
        .load(conn)?;
    let mut judged: BTreeMap<String, usize> = BTreeMap::new();
    for (action_id, action_coe, kind, state, closed_at) in candidates {
        let kind: ActionKind = types::read("corrective_actions.kind", &kind)?;
        let state: ActionState = types::read("corrective_actions.state", &state)?;
        if !recurred_after_done(kind, state, closed_at, started_at) {
            continue;
        }
        let inserted = crate::insert_or_ignore!(
            conn,
            diesel::insert_into(action_recurrences::table).values((
                action_recurrences::action_id.eq(&action_id),
                action_recurrences::incident_id.eq(incident_id),
                action_recurrences::coe_id.eq(coe_id),
                action_recurrences::at.eq(started_at),
                action_recurrences::created_at.eq(now),
            )),
            (
                action_recurrences::action_id,
                action_recurrences::incident_id
            )
        )?;
        *judged.entry(action_coe).or_default() += inserted;
    }
    // The earlier COEs' owners and reviewers, once per recurrence.
    for (earlier_id, count) in judged {
        if count == 0 {
            continue;
        }
        let earlier: CoeRow = coes::table
            .find(&earlier_id)
            .select(CoeRow::as_select())
            .first(conn)?;
        let actions = of_earlier_coe(conn, &earlier_id)?
            .into_iter()
            .filter(|a| a.incident_id == incident_id)
            .collect::<Vec<_>>();
        let title: String = coes::table.find(coe_id).select(coes::title).first(conn)?;
        let done: Vec<DoneAction<'_>> = actions
            .iter()
            .map(|a| DoneAction {
                id: &a.action_id,
                title: &a.title,
                kind: a.kind.as_str(),
                owner: &a.owner,
                done_at: a.done_at,
            })
            .collect();
        let recurred = ActionEvent::Recurred {
            earlier: &earlier,
            recurrence: (coe_id, &title),
            incident_id,
            started: started_at,
            done: &done,
        };
        outbound::happened(conn, *env, super::SYSTEM_ACTOR, recurred, now)?;
        tracing::info!(coe = %earlier_id, recurrence = %coe_id, incident = %incident_id,
            actions = actions.len(), "an outage came back after its actions were done");
    }
    Ok(())
}

type Row = (
    String,
    String,
    String,
    String,
    Option<NaiveDateTime>,
    String,
    String,
    String,
    NaiveDateTime,
);

/// The recurrences of the actions that match `filter`, oldest first, with the
/// titles of both COEs.
fn load(
    conn: &mut DbConnection,
    by_recurrence: Option<&str>,
    by_action_coe: Option<&str>,
) -> QueryResult<Vec<RecurredAction>> {
    let mut query = action_recurrences::table
        .inner_join(corrective_actions::table)
        .select((
            corrective_actions::id,
            corrective_actions::title,
            corrective_actions::kind,
            corrective_actions::owner_email,
            corrective_actions::closed_at,
            corrective_actions::coe_id,
            action_recurrences::incident_id,
            action_recurrences::coe_id,
            action_recurrences::at,
        ))
        .order((action_recurrences::at.asc(), corrective_actions::id.asc()))
        .into_boxed();
    if let Some(coe) = by_recurrence {
        query = query.filter(action_recurrences::coe_id.eq(coe.to_owned()));
    }
    if let Some(coe) = by_action_coe {
        query = query.filter(corrective_actions::coe_id.eq(coe.to_owned()));
    }
    let rows: Vec<Row> = query.limit(500).load(conn)?;
    let mut ids: Vec<&String> = rows.iter().flat_map(|r| [&r.5, &r.7]).collect();
    ids.sort();
    ids.dedup();
    let titles: BTreeMap<String, String> = coes::table
        .filter(coes::id.eq_any(ids))
        .select((coes::id, coes::title))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect();
    rows.into_iter()
        .map(
            |(action_id, title, kind, owner, done_at, action_coe_id, incident_id, coe_id, at)| {
                Ok(RecurredAction {
                    kind: types::read("corrective_actions.kind", &kind)?,
                    action_coe_title: titles.get(&action_coe_id).cloned().unwrap_or_default(),
                    coe_title: titles.get(&coe_id).cloned().unwrap_or_default(),
                    action_id,
                    title,
                    owner,
                    done_at,
                    action_coe_id,
                    incident_id,
                    coe_id,
                    at,
                })
            },
        )
        .collect()
}

/// The actions of earlier COEs meant to prevent the outage COE `id` is about, done
/// before it came back.
pub fn meant_to_prevent(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<RecurredAction>> {
    load(conn, Some(id), None)
}

/// The actions of COE `id` whose outage came back after they were done.
pub fn of_earlier_coe(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<RecurredAction>> {
    load(conn, None, Some(id))
}
