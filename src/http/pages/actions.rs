//! One corrective action: what, why (its COE), by when; its owner moves it on with
//! the note each step needs, or moves its due date with a reason.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::{json, Value};

use super::coes::safe_href;
use super::{as_person, render, PageError};
use crate::domain::action::{self, ActionState, Transition};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::access;
use crate::services::actions::{self, ActionDetail, ActionError, ActionPatch, TransitionInput};

fn verb_of(name: &str) -> Option<Transition> {
    [
        Transition::Start,
        Transition::Complete,
        Transition::WontDo,
        Transition::Reopen,
    ]
    .into_iter()
    .find(|t| t.name() == name)
}

/// What each step's form asks for.
fn step(t: Transition) -> Value {
    let (button, note_label) = match t {
        Transition::Start => ("Start it", None),
        Transition::Complete => ("Mark it done", Some("What was done")),
        Transition::WontDo => ("It will not be done", Some("Why it will not be done")),
        Transition::Reopen => ("Reopen it", Some("Why it reopens")),
    };
    json!({
        "verb": t.name(),
        "button": button,
        "note_label": note_label,
        "evidence": t == Transition::Complete,
    })
}

async fn load(
    state: &web::Data<AppState>,
    id: &str,
    who: &SignedIn,
) -> Result<(ActionDetail, bool), PageError> {
    let key = id.to_owned();
    as_person(state, who, move |conn, state, editor| {
        let detail = match actions::get(conn, &key, state.settings.clock()) {
            Ok(d) => d,
            Err(ActionError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let may_change = access::action(conn, &key, editor).is_ok();
        Ok(Some((detail, may_change)))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no corrective action {id}")))
}

fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    (detail, may_change): (ActionDetail, bool),
    problems: Vec<String>,
    notice: Option<String>,
) -> Result<HttpResponse, PageError> {
    let a = &detail.action;
    let transitions: Vec<Value> = action::allowed(a.state).iter().map(|t| step(*t)).collect();
    let open = matches!(a.state, ActionState::Open | ActionState::InProgress);
    let data = json!({
        "state": a.state.as_str().replace('_', " "),
        "ticket": safe_href(a.external_url.as_deref()),
        "evidence": safe_href(a.evidence_url.as_deref()),
        "may_change": may_change,
        "transitions": transitions,
        "open": open,
        "history": detail.due_date_history,
        "problems": problems,
        "notice": notice,
        "action": a,
    });
    render(state, Some(who), status, "action", data)
}

/// `GET /actions/{id}`: where the emails' links land.
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let loaded = load(&state, &path, &who).await?;
    page(&state, &who, StatusCode::OK, loaded, Vec::new(), None)
}

#[derive(Debug, Deserialize)]
pub struct StepForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    evidence_url: Option<String>,
}

/// The outcome of a change: back to the page, or the page again with the problems.
async fn after(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    result: Result<(), ActionError>,
) -> Result<HttpResponse, PageError> {
    let (status, problems) = match result {
        Ok(()) => {
            return Ok(HttpResponse::SeeOther()
                .insert_header(("location", format!("/actions/{id}")))
                .finish());
        }
        Err(ActionError::Invalid(problems)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            problems
                .into_iter()
                .map(|(f, p)| format!("{f}: {p}"))
                .collect(),
        ),
        Err(ActionError::Transition(e)) => (StatusCode::CONFLICT, vec![e.to_string()]),
        Err(ActionError::NotFound(_)) => {
            return Err(PageError::NotFound(format!(
                "there is no corrective action {id}"
            )));
        }
        Err(ActionError::Forbidden(m)) => return Err(PageError::Forbidden(m)),
        Err(e) => return Err(crate::error::ApiError::from(e).into()),
    };
    let loaded = load(state, id, who).await?;
    page(state, who, status, loaded, problems, None)
}

/// `POST /actions/{id}/{verb}`: start, complete, wont-do, reopen.
pub async fn transition(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: web::Form<StepForm>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    who.check_csrf(&form.csrf)?;
    let (id, verb) = path.into_inner();
    let verb = verb_of(&verb).ok_or_else(|| PageError::NotFound(format!("no step {verb:?}")))?;
    let form = form.into_inner();
    let input = TransitionInput {
        note: form.note.filter(|n| !n.trim().is_empty()),
        evidence_url: form.evidence_url.filter(|u| !u.trim().is_empty()),
    };
    let key = id.clone();
    let result = as_person(&state, &who, move |conn, _, editor| {
        Ok(actions::transition(conn, &key, verb, &input, editor))
    })
    .await?;
    after(&state, &who, &id, result).await
}

#[derive(Debug, Deserialize)]
pub struct DueDateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    due_date: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /actions/{id}/due-date`: a new due date with the reason for it.
pub async fn move_due_date(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<DueDateForm>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    who.check_csrf(&form.csrf)?;
    let id = path.into_inner();
    let form = form.into_inner();
    let Ok(due) = form.due_date.trim().parse::<NaiveDate>() else {
        let result = Err(ActionError::Invalid(vec![(
            "due_date".into(),
            format!(
                "must be a date such as 2026-12-24 (got {:?})",
                form.due_date
            ),
        )]));
        return after(&state, &who, &id, result).await;
    };
    let patch = ActionPatch {
        due_date: Some(due),
        reason: form.reason.filter(|r| !r.trim().is_empty()),
        ..ActionPatch::default()
    };
    let key = id.clone();
    let result = as_person(&state, &who, move |conn, state, editor| {
        Ok(actions::patch(
            conn,
            &key,
            &patch,
            editor,
            state.settings.clock(),
            state.mailer(),
        ))
    })
    .await?;
    after(&state, &who, &id, result).await
}
