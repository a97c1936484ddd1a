//! One corrective action: what, why (its COE), by when; its owner moves it on with
//! the note each step needs, or moves its due date with a reason.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::{json, Value};

use super::coes::safe_href;
use super::{
    as_person, change, keep_form, kept_form, render, write_as_person, CsrfForm, Outcome, Page,
    PageError, State,
};
use crate::domain::action::{self, Transition};
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
        Transition::WontDo => (
            "Confirm: it will not be done",
            Some("Why it will not be done (the COE's owner and reviewer read this)"),
        ),
        Transition::Reopen => ("Reopen it", Some("Why it reopens")),
    };
    json!({
        "verb": t.name(),
        "button": button,
        "note_label": note_label,
        "evidence": t == Transition::Complete,
        // Giving up is a step apart, opened on purpose and confirmed.
        "secondary": t == Transition::WontDo,
        // What was typed into it when it did not go through (`page` fills them).
        "typed_note": "",
        "typed_evidence": "",
    })
}

async fn load(state: &web::Data<AppState>, id: &str, who: &SignedIn) -> Result<Loaded, PageError> {
    let key = id.to_owned();
    as_person(state, who, move |conn, state, editor| {
        let detail = match actions::get(conn, &key, state.settings.clock()) {
            Ok(d) => d,
            Err(ActionError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let may_change = access::action(conn, &key, editor).is_ok();
        let may_delete = actions::may_delete(conn, &key, editor)?;
        // The names of the people the page shows: the owner, and who moved it on.
        let shown: Vec<String> = std::iter::once(detail.action.owner.clone())
            .chain(detail.steps.iter().map(|s| s.by.clone()))
            .chain(detail.coe_reviewer.clone())
            .chain(detail.action.verified_by.clone())
            .collect();
        let names = crate::services::people::names_of(conn, &shown)?;
        Ok(Some((detail, (may_change, may_delete), names)))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no corrective action {id}")))
}

/// The action, whether the person may change it, and the directory's names.
type Loaded = (ActionDetail, (bool, bool), Vec<(String, Option<String>)>);

fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    (detail, (may_change, may_delete), directory): Loaded,
    problems: Vec<String>,
    typed: Option<Value>,
    notice: Option<String>,
) -> Page {
    let a = &detail.action;
    let steps: Vec<Value> = detail
        .steps
        .iter()
        .map(|s| {
            let what = match s.step.as_str() {
                "create" => "added it",
                "start" => "started it",
                "complete" => "marked it done",
                "wont_do" => "said it will not be done",
                "reopen" => "reopened it",
                "verify" => "verified it",
                "refuse" => "sent it back: not done yet",
                _ => "changed it",
            };
            json!({"by": s.by, "what": what, "at": crate::json::format_utc(&s.at), "note": s.note})
        })
        .collect();
    let (_, names) = super::coes::directory_data(&directory);
    // A step that did not go through shows again what was typed into it.
    let transitions: Vec<Value> = action::allowed(a.state)
        .iter()
        .map(|t| {
            let mut form = step(*t);
            if let Some(typed) = typed.as_ref().filter(|k| k["verb"] == t.name()) {
                form["typed_note"] = typed["note"].clone();
                form["typed_evidence"] = typed["evidence_url"].clone();
            }
            form
        })
        .collect();
    let open = a.state.is_active();
    let needs_verification = crate::domain::coe::needs_verification(
        a.coe_severity,
        state.settings.coe.verify_actions_from,
    );
    let me = who.person.email.as_str();
    let completed_by = detail
        .steps
        .iter()
        .rev()
        .find(|s| s.step == "complete")
        .map(|s| s.by.as_str());
    let may_verify = a.state == crate::domain::action::ActionState::Done
        && a.verified_at.is_none()
        && detail.coe_reviewer.as_deref() == Some(me)
        && crate::domain::action::may_verify(
            me,
            &a.owner,
            completed_by,
            &state.settings.auth.dotless_domains,
        )
        .is_ok();
    let data = json!({
        "state": a.state.as_str().replace('_', " "),
        "ticket": safe_href(a.external_url.as_deref()),
        "evidence": safe_href(a.evidence_url.as_deref()),
        "may_change": may_change,
        "may_delete": may_delete,
        "transitions": transitions,
        "open": open,
        "history": detail.due_date_history,
        "steps": steps,
        "recurrences": detail.recurrences,
        "needs_evidence": a.kind.is_judged_by_recurrence(),
        "needs_verification": needs_verification,
        "may_verify": may_verify,
        "coe_reviewer": detail.coe_reviewer,
        "verified_at": a.verified_at.map(|t| crate::json::format_utc(&t)),
        "names": names,
        "problems": problems,
        "notice": notice,
        "action": a,
    });
    render(state, Some(who), status, "action", data)
}

/// What `GET /actions/{id}` may carry: a form that did not go through, kept.
#[derive(Debug, Deserialize)]
pub struct ShowQuery {
    kept: Option<String>,
}

/// `GET /actions/{id}`: where the emails' links land; with `?kept=…`, the problems of
/// a form that did not go through (answered with the status it came to).
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<ShowQuery>,
    state: State,
) -> Page {
    let kept = kept_form(
        &state,
        &who,
        &format!("/actions/{path}"),
        query.into_inner().kept,
    )
    .await?;
    let (status, problems, typed) =
        kept.map_or((StatusCode::OK, Vec::new(), None), |(status, body)| {
            let problems = serde_json::from_value(body["problems"].clone()).unwrap_or_default();
            let typed = Some(body["typed"].clone()).filter(|t| t.is_object());
            (status, problems, typed)
        });
    let loaded = load(&state, &path, &who).await?;
    page(&state, &who, status, loaded, problems, typed, None)
}

#[derive(Debug, Deserialize)]
pub struct StepForm {
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    evidence_url: Option<String>,
}

/// The answer to a change: back to the page; when it did not go through, back to it
/// too (303), showing the problems kept for the person.
async fn answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    outcome: Outcome,
    typed: Option<Value>,
) -> Page {
    let path = format!("/actions/{id}");
    outcome
        .answer(&path, |again| {
            let path = &path;
            async move {
                let body = json!({"problems": again.problems, "typed": typed});
                let kept = keep_form(state, who, path, again.status, body).await?;
                Ok(super::see_other(&format!("{path}?kept={kept}#state-h")))
            }
        })
        .await
}

/// `POST /actions/{id}/delete`: deletes an action added by mistake (the COE's owner,
/// while it is a draft); back to the COE.
pub async fn delete(form: CsrfForm<StepForm>, path: web::Path<String>, state: State) -> Page {
    let who = form.who;
    let id = path.into_inner();
    let key = id.clone();
    let deleted = write_as_person(&state, &who, move |conn, _, editor| {
        match actions::delete(conn, &key, editor) {
            Ok(coe_id) => Ok(Ok(coe_id)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        }
    })
    .await?;
    match deleted {
        Ok(coe_id) => Ok(super::see_other(&format!("/coes/{coe_id}#part-actions"))),
        Err(outcome) => answer(&state, &who, &id, outcome, None).await,
    }
}

#[derive(Debug, Deserialize)]
pub struct VerifyForm {
    /// `true` (verified) or `false` (not: back to in progress, with the reason).
    #[serde(default)]
    verified: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /actions/{id}/verify`: the COE's reviewer verifies a done action, or sends
/// it back with the reason.
pub async fn verify(form: CsrfForm<VerifyForm>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields: form } = form;
    let id = path.into_inner();
    let input = actions::VerifyInput {
        verified: form.verified.as_deref().map(|v| v == "true"),
        reason: form.reason.filter(|r| !r.trim().is_empty()),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::verify(conn, &key, &input, editor, state.env())
    })
    .await?;
    answer(&state, &who, &id, outcome, None).await
}

/// `POST /actions/{id}/{verb}`: start, complete, wont-do, reopen.
pub async fn transition(
    form: CsrfForm<StepForm>,
    path: web::Path<(String, String)>,
    state: State,
) -> Page {
    let CsrfForm { who, fields: form } = form;
    let (id, verb) = path.into_inner();
    let verb = verb_of(&verb).ok_or_else(|| PageError::NotFound(format!("no step {verb:?}")))?;
    // Kept to show again when the step does not go through (a note too short to be
    // evidence, say): nothing typed is lost.
    let typed = json!({"verb": verb.name(), "note": form.note.clone().unwrap_or_default(),
                       "evidence_url": form.evidence_url.clone().unwrap_or_default()});
    let input = TransitionInput {
        note: form.note.filter(|n| !n.trim().is_empty()),
        evidence_url: form.evidence_url.filter(|u| !u.trim().is_empty()),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::transition(conn, &key, verb, &input, editor, state.env())
    })
    .await?;
    answer(&state, &who, &id, outcome, Some(typed)).await
}

#[derive(Debug, Deserialize)]
pub struct DueDateForm {
    #[serde(default)]
    due_date: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /actions/{id}/due-date`: a new due date with the reason for it.
pub async fn move_due_date(
    form: CsrfForm<DueDateForm>,
    path: web::Path<String>,
    state: State,
) -> Page {
    let CsrfForm { who, fields: form } = form;
    let id = path.into_inner();
    let Ok(due) = form.due_date.trim().parse::<NaiveDate>() else {
        let problem = format!(
            "must be a date such as 2026-12-24 (got {:?})",
            form.due_date
        );
        return answer(
            &state,
            &who,
            &id,
            Outcome::Invalid(vec![("due_date".into(), problem)]),
            None,
        )
        .await;
    };
    let patch = ActionPatch {
        due_date: Some(due),
        reason: form.reason.filter(|r| !r.trim().is_empty()),
        ..ActionPatch::default()
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::patch(
            conn,
            &key,
            &patch,
            editor,
            state.settings.clock(),
            state.env(),
        )
    })
    .await?;
    answer(&state, &who, &id, outcome, None).await
}
