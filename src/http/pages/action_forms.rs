//! The forms of a corrective action's page: its owner moves it on with the note each
//! step needs, moves its due date with a reason, changes or reassigns it, asks to
//! accept its risk; the COE's reviewer verifies it; the owner's manager or the COE's
//! bar raiser decides on the risk. Each answers with the page (`actions::answer`).

use actix_web::web;
use chrono::NaiveDate;
use serde_json::{json, Value};

use super::actions::{action_now, answer};
use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::{Page, State};
use super::outcome::{change, write_as_person, Outcome};
use crate::domain::action::Transition;
use crate::http::state::AppState;
use crate::services::coe::actions::{self, ActionError, ActionPatch, TransitionInput};

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

/// `POST /actions/{id}/delete`: deletes an action added by mistake (the COE's owner,
/// while it is a draft); back to the COE.
pub async fn delete(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let key = id.clone();
    let deleted = write_as_person(
        &state,
        &who,
        move |conn, state, editor| match actions::delete(conn, &key, editor, state.env()) {
            Ok(coe_id) => Ok(Ok(coe_id)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        },
    )
    .await?;
    match deleted {
        Ok(coe_id) => Ok(super::outcome::see_other(&format!(
            "/coes/{coe_id}#part-actions"
        ))),
        Err(outcome) => answer(&state, &who, &id, outcome, &fields, "delete").await,
    }
}

/// `POST /actions/{id}/verify`: the COE's reviewer verifies a done action, or sends
/// it back with the reason.
pub async fn verify(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    // `verified`: `true`, or `false` (back to in progress, with the reason).
    let mine = fields.part("verify");
    let input = actions::VerifyInput {
        verified: mine.filled("verified").map(|v| v == "true"),
        reason: mine.filled("reason"),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::verify(conn, &key, &input, editor, state.env())
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "verify").await
}

/// `POST /actions/{id}/risk`: ask to accept the action's risk until a day.
pub async fn ask_risk(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("risk");
    let input = actions::risk::RiskRequest {
        until: mine.filled("until"),
        interim_control: mine.filled("interim_control"),
        remaining_risk: mine.filled("remaining_risk"),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::risk::ask(
            conn,
            &key,
            &input,
            editor,
            state.settings.clock(),
            state.env(),
        )
        .map(drop)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "risk").await
}

/// `POST /actions/{id}/risk-decision`: the owner's manager or the COE's bar raiser
/// accepts (`decision = accept`) or refuses the request waiting, with a note.
pub async fn decide_risk(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("decide");
    let accept = mine.filled("decision").as_deref() == Some("accept");
    let input = actions::risk::RiskDecision {
        note: mine.filled("note"),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::risk::decide(
            conn,
            &key,
            accept,
            &input,
            editor,
            state.settings.clock(),
            state.env(),
        )
        .map(drop)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "decide").await
}

/// `POST /actions/{id}/drill`: names (or, empty, forgets) the alert that proves the
/// action in a drill, as `name=value` lines.
pub async fn set_drill(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let text = fields.part("drill").filled("labels").unwrap_or_default();
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        let labels = if text.trim().is_empty() {
            None
        } else {
            Some(
                crate::domain::drill::parse_labels(&text)
                    .map_err(|p| ActionError::Invalid(vec![("labels".into(), p)]))?,
            )
        };
        let input = actions::drill::AlarmInput { labels };
        actions::drill::set_alarm(conn, &key, &input, editor, state.env()).map(drop)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "drill").await
}

/// `POST /actions/{id}/drill-recheck`: asks for a drill to prove the done action now.
pub async fn request_recheck(
    form: CsrfForm<Fields>,
    path: web::Path<String>,
    state: State,
) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::drill::request(conn, &key, editor, state.settings.clock(), state.env()).map(drop)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "recheck").await
}

/// `POST /actions/{id}/drill-decision`: the COE's reviewer confirms the fix of a
/// missed re-check (`decision = confirm`) or reopens the action, with why.
pub async fn decide_recheck(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("recheck");
    let confirm = match mine.filled("decision").as_deref() {
        Some("confirm") => Some(true),
        Some("reopen") => Some(false),
        _ => None,
    };
    let input = actions::drill::RecheckDecision {
        note: mine.filled("note"),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        let Some(confirm) = confirm else {
            return Err(ActionError::Invalid(vec![(
                "decision".into(),
                "choose: the fix stands, or reopen the action".into(),
            )]));
        };
        actions::drill::decide(conn, &key, confirm, &input, editor, state.env()).map(drop)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "recheck").await
}

/// `POST /actions/{id}/{verb}`: start, complete, wont-do, reopen.
pub async fn transition(
    form: CsrfForm<Fields>,
    path: web::Path<(String, String)>,
    state: State,
) -> Page {
    let CsrfForm { who, fields } = form;
    let (id, verb) = path.into_inner();
    let verb = verb_of(&verb).ok_or_else(|| PageError::NotFound(format!("no step {verb:?}")))?;
    let mine = fields.part(verb.name());
    let input = TransitionInput {
        note: mine.filled("note"),
        evidence_url: mine.filled("evidence_url"),
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::transition(conn, &key, verb, &input, editor, state.env())
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, verb.name()).await
}

/// `POST /actions/{id}/due-date`: a new due date with the reason for it.
pub async fn move_due_date(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("due");
    let typed_due = mine.text("due_date");
    let Ok(due) = typed_due.trim().parse::<NaiveDate>() else {
        let problem = format!("must be a date such as 2026-12-24 (got {typed_due:?})");
        let refused = Outcome::Invalid(vec![("due_date".into(), problem)]);
        return answer(&state, &who, &id, refused, &fields, "due").await;
    };
    let patch = ActionPatch {
        due_date: Some(due),
        reason: mine.filled("reason"),
        ..ActionPatch::default()
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        save(conn, state, editor, &key, &patch)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "due").await
}

/// The fields of the change form, with the names `ActionPatch` reads.
const EDITABLE: [&str; 6] = [
    "title",
    "success_criteria",
    "description",
    "priority",
    "kind",
    "external_url",
];

/// `POST /actions/{id}/edit`: what the action is (its title, what done means, the
/// description, priority, kind and its ticket's link). Only what differs from the
/// action as it is now is saved, so a verified action is verified again only when
/// what it is changed.
pub async fn edit(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("edit");
    let typed: Vec<(&'static str, String)> = EDITABLE
        .iter()
        .map(|f| (*f, mine.text(f).trim().to_owned()))
        .collect();
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        let now = action_now(conn, state, &key)?;
        let current = serde_json::to_value(&now.action).unwrap_or_default();
        let mut changed = serde_json::Map::new();
        for (field, value) in &typed {
            let was = current[*field].as_str().unwrap_or_default();
            if value != was {
                changed.insert((*field).to_owned(), json!(value));
            }
        }
        if changed.is_empty() {
            return Err(ActionError::Invalid(vec![(
                String::new(),
                "Nothing was changed: change a field, then save.".into(),
            )]));
        }
        let patch: ActionPatch = serde_json::from_value(Value::Object(changed)).map_err(|e| {
            ActionError::Invalid(vec![(String::new(), format!("That cannot be saved: {e}"))])
        })?;
        save(conn, state, editor, &key, &patch)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "edit").await
}

/// `POST /actions/{id}/reassign`: gives the action to another owner, with the reason
/// (in its history, read by the COE's reviewer and the new owner, who is told).
pub async fn reassign(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let mine = fields.part("reassign");
    let owner = mine.text("owner").trim().to_owned();
    let reason = mine.filled("reason");
    let mut problems = Vec::new();
    let email = match crate::domain::EmailAddress::parse(&owner) {
        Ok(email) => Some(email),
        Err(_) if owner.is_empty() => {
            problems.push((
                "owner".to_owned(),
                "is needed: who takes it over".to_owned(),
            ));
            None
        }
        Err(e) => {
            problems.push(("owner".to_owned(), e.to_string()));
            None
        }
    };
    if reason.is_none() {
        problems.push((
            "reason".to_owned(),
            "is needed: say why it changes hands (its reviewer and the new owner read it)"
                .to_owned(),
        ));
    }
    let (Some(email), true) = (email, problems.is_empty()) else {
        return answer(
            &state,
            &who,
            &id,
            Outcome::Invalid(problems),
            &fields,
            "reassign",
        )
        .await;
    };
    let key = id.clone();
    let outcome = change(&state, &who, move |conn, state, editor| {
        let now = action_now(conn, state, &key)?;
        if now.action.owner == email.as_str() {
            return Err(ActionError::Invalid(vec![(
                "owner".into(),
                format!("{} owns it already", email.as_str()),
            )]));
        }
        let patch = ActionPatch {
            owner: Some(email),
            reason,
            ..ActionPatch::default()
        };
        save(conn, state, editor, &key, &patch)
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "reassign").await
}

/// Saves `patch` to action `id` as the signed-in person, on the service's terms.
fn save(
    conn: &mut crate::db::DbConnection,
    state: &AppState,
    editor: &crate::services::access::Editor<'_>,
    id: &str,
    patch: &ActionPatch,
) -> Result<(), ActionError> {
    actions::patch(conn, id, patch, editor, state.settings.clock(), state.env())
}
