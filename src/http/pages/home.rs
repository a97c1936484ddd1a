//! "My work": first every move that waits on the signed-in person (`services::figures::work`:
//! reviews, bar-raiser reviews, actions to verify, COEs sent back, actions sent
//! back), each with since when; then their open corrective actions, overdue first,
//! with days overdue and due-date moves; and the COEs they own or review with what
//! each still needs.

use actix_web::http::StatusCode;
use serde_json::{json, Value};

use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::domain::coe::CoeState;
use crate::http::session::SignedIn;
use crate::services::coe::actions::{self, ActionFilter, ActionView};
use crate::services::coe::coes::{self, CoeFilter, CoeSummary};

/// At most this many actions and COEs are listed.
const SHOWN: i64 = 200;

/// How many open COEs get "what it still needs" (each is a document to load).
const ASSESSED: usize = 25;

fn action_line(a: ActionView) -> Value {
    json!({
        "id": a.id,
        "title": a.title,
        "coe_id": a.coe_id,
        "coe_title": a.coe_title,
        "due_date": a.due_date,
        "overdue": a.overdue,
        "days_overdue": a.days_overdue,
        "state": a.state.as_str().replace('_', " "),
        "due_date_change_count": a.due_date_changes,
    })
}

/// What `GET /` may carry: a move just made elsewhere, to confirm here.
#[derive(serde::Deserialize)]
pub struct HomeQuery {
    /// `changes-asked`: the reviewer just sent COE `coe` back to its owner.
    did: Option<String>,
    coe: Option<String>,
}

/// `GET /`.
pub async fn home(who: SignedIn, query: actix_web::web::Query<HomeQuery>, state: State) -> Page {
    let email = who.person.email.clone();
    let is_admin = who.person.is_admin;
    let HomeQuery { did, coe } = query.into_inner();
    let notice = match (did.as_deref(), coe) {
        (Some("changes-asked"), Some(id)) => changes_asked(&state, id).await?,
        _ => None,
    };
    let (actions, coes, unowned, (moves, waiting), names, (leader, setup)) =
        as_service(&state, move |conn, state| {
            let clock = state.settings.clock();
            let verify_from = state.settings.coe.verify_actions_from;
            let dotless = &state.settings.auth.dotless_domains;
            let moves = crate::services::figures::work::moves(conn, &email, verify_from, dotless)?;
            let waiting = crate::services::figures::work::waiting_on_others(
                conn,
                &email,
                verify_from,
                dotless,
            )?;
            // Open or in progress: the overdue ones, then the rest by due date.
            let open = crate::services::figures::work::open_actions(conn, &email, SHOWN, clock)?;
            let mut mine: Vec<CoeSummary> = Vec::new();
            for filter in [
                CoeFilter {
                    owner: Some(email.clone()),
                    ..CoeFilter::default()
                },
                CoeFilter {
                    reviewer: Some(email.clone()),
                    ..CoeFilter::default()
                },
            ] {
                for c in coes::list(conn, &filter, SHOWN, 0)?.0 {
                    // A merged draft is written, reviewed and reminded of in the COE
                    // it went into: no work of anyone's.
                    if c.state == CoeState::Merged {
                        continue;
                    }
                    if !mine.iter().any(|m| m.id == c.id) {
                        mine.push(c);
                    }
                }
            }
            // Open ones first (drafts, then in review), newest first within.
            mine.sort_by_key(|c| (c.state == CoeState::Closed, c.state != CoeState::Draft));
            let mut lines = Vec::with_capacity(mine.len());
            for (i, c) in mine.into_iter().enumerate() {
                let needs: Vec<String> = if c.state != CoeState::Closed && i < ASSESSED {
                    let doc = coes::load(conn, &c.id, state.env())?;
                    doc.completeness
                        .missing
                        .iter()
                        .map(|f| {
                            let section = f.at.split(['[', '.']).next().unwrap_or(&f.at);
                            doc.sections
                                .iter()
                                .find(|s| s.key == section)
                                .map_or_else(|| f.at.replace('_', " "), |s| s.title.clone())
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                lines.push((c, needs));
            }
            // An admin's work starts with the COEs nobody owns.
            let unowned = if is_admin {
                coes::unowned(conn, SHOWN)?
            } else {
                Vec::new()
            };
            // The names of the people the page names: owners, who waits, who asked.
            let named: Vec<String> = lines
                .iter()
                .filter_map(|(c, _)| c.owner.clone())
                .chain(moves.iter().chain(&waiting).filter_map(|m| m.by.clone()))
                .collect();
            // A leader (an admin, or anyone's manager) sees the organisation's figures.
            let leader =
                if is_admin || crate::services::directory::people::manages_anyone(conn, &email)? {
                    Some(organisation(conn, state)?)
                } else {
                    None
                };
            let listed = leader.iter().flat_map(|l| {
                ["first_late_drafts", "first_reviews"]
                    .iter()
                    .flat_map(move |list| l[*list].as_array().into_iter().flatten())
                    .flat_map(|c| [c["owner"].as_str(), c["reviewer"].as_str()])
                    .flatten()
                    .map(str::to_owned)
            });
            let named: Vec<String> = named.into_iter().chain(listed).collect();
            let names = crate::services::directory::people::names_of(conn, &named)?;
            // An admin's first-run checklist, until what matters is set up.
            let setup = match is_admin {
                true => Some(crate::services::figures::setup::setup(conn, state.env())?)
                    .filter(|s| !s.done),
                false => None,
            };
            Ok((
                open,
                lines,
                unowned,
                (moves, waiting),
                names,
                (leader, setup),
            ))
        })
        .await?;
    let now = crate::domain::clock::now().naive_utc();
    let lines = |moves: Vec<crate::services::figures::work::Move>| -> Vec<Value> {
        moves
            .into_iter()
            .map(|m| {
                let days = (now - m.since).num_days();
                let mut line = json!(m);
                line["waiting"] = json!(super::templates::waited_words(days));
                line
            })
            .collect()
    };
    let (moves, waiting) = (lines(moves), lines(waiting));
    let names = super::kit::names_data(&names);
    let unowned: Vec<Value> = unowned.iter().map(unowned_line).collect();
    let me = who.person.email.as_str();
    let coes: Vec<Value> = coes
        .into_iter()
        .map(|(c, mut needs)| {
            needs.dedup();
            json!({
                "id": c.id,
                "title": c.title,
                "state": c.state.as_str().replace('_', " "),
                "severity": c.severity,
                "reviewing": c.reviewer.as_deref() == Some(me),
                "needs": needs,
            })
        })
        .collect();
    let actions: Vec<Value> = actions.into_iter().map(action_line).collect();
    // Nothing on the page yet (a first visit): a word on what coe is.
    let empty = actions.is_empty()
        && coes.is_empty()
        && moves.is_empty()
        && waiting.is_empty()
        && unowned.is_empty();
    let setup = setup.as_ref().map(super::checklist::steps);
    render(
        &state,
        Some(&who),
        StatusCode::OK,
        "home",
        json!({"actions": actions, "coes": coes, "moves": moves, "waiting": waiting, "unowned": unowned,
               "notice": notice, "empty": empty, "setup": setup,
               "names": names, "leader": leader}),
    )
}

/// The confirmation of changes asked on COE `id`: whose move it is now.
async fn changes_asked(
    state: &State,
    id: String,
) -> Result<Option<String>, super::error::PageError> {
    as_service(state, move |conn, state| {
        let Ok(doc) = coes::load(conn, &id, state.env()) else {
            return Ok(None);
        };
        let owner = match &doc.owner {
            Some(owner) => {
                crate::services::directory::people::names_of(conn, std::slice::from_ref(owner))?
                    .into_iter()
                    .find_map(|(_, name)| name)
                    .unwrap_or_else(|| owner.clone())
            }
            None => "its owner".to_owned(),
        };
        Ok(Some(format!(
            "Changes asked on “{}”: it is back with {owner}, and comes back to you when they \
             submit it again.",
            doc.title
        )))
    })
    .await
}

/// How many of each a leader's home lists (the rest are on the board and the dashboard).
const LEADER_SHOWN: usize = 5;

/// What waits across the organisation: overdue actions, drafts past their writeup
/// deadline, COEs waiting for review (the longest waiting first).
fn organisation(
    conn: &mut crate::db::DbConnection,
    state: &crate::http::state::AppState,
) -> Result<Value, crate::error::ApiError> {
    let clock = state.settings.clock();
    let overdue = actions::count(
        conn,
        &ActionFilter {
            overdue: Some(true),
            ..ActionFilter::default()
        },
        clock,
    )?;
    let waiting = crate::services::figures::stats::waiting(
        conn,
        clock,
        state.settings.coe.writeup_days,
        &crate::services::figures::stats::Scope::default(),
    )?;
    let first = |all: &[crate::services::figures::stats::WaitingCoe]| {
        json!(all.iter().take(LEADER_SHOWN).collect::<Vec<_>>())
    };
    Ok(json!({
        "overdue": overdue,
        "late_drafts": waiting.drafts_past_deadline.len(),
        "first_late_drafts": first(&waiting.drafts_past_deadline),
        "reviews": waiting.for_review.len(),
        "first_reviews": first(&waiting.for_review),
    }))
}

/// A COE nobody owns, as the pages list it for someone to take.
pub(super) fn unowned_line(c: &CoeSummary) -> Value {
    json!({"id": c.id, "title": c.title, "severity": c.severity, "service": c.service,
           "state": c.state.as_str().replace('_', " "),
           "opened": crate::json::format_utc(&c.created_at)})
}
