//! A button pressed on one of coe's messages, or one of its modals submitted. Each move
//! is the pages' own service call as the person, made once (`from_chat::once`: a
//! retried delivery does nothing twice) and said in the history as made from Slack; a
//! refusal keeps the modal open with each problem under its field, or is said to the
//! person alone, and changes nothing.

use std::collections::BTreeMap;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::NaiveDate;
use serde_json::{json, Value};

use super::intake::{email_of, nothing, signed, tell_later, who, Known, SlackApp, IN_REQUEST};
use super::words;
use crate::chat::slack::blocks::{self, escape};
use crate::chat::slack::{Interaction, Submitted};
use crate::domain::action::Transition;
use crate::error::ApiError;
use crate::http::state::{with_conn, AppState};
use crate::services::access::Acting;
use crate::services::coe::actions::{self, ActionPatch, NewAction, TransitionInput, VerifyInput};
use crate::services::from_chat::{self, Platform};
use crate::services::intake::report::{self, FailureReport};

/// `POST /chat/slack/interactions`.
pub async fn interactions(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (app, body) = signed(&req, payload, &state, "interaction").await?;
    match Interaction::read(&body).map_err(ApiError::BadRequest)? {
        Interaction::Button {
            user,
            action_id,
            value,
            action_ts,
            trigger_id,
            response_url,
        } => {
            let press = Press {
                user,
                action_id,
                value,
                action_ts,
                trigger_id,
                response_url,
            };
            pressed(&state, &app, press).await
        }
        Interaction::Submitted(submitted) => submitted_form(&state, &app, submitted).await,
        Interaction::Other(_) => Ok(nothing()),
    }
}

struct Press {
    user: String,
    action_id: String,
    value: String,
    action_ts: String,
    trigger_id: String,
    response_url: Option<String>,
}

/// The person Slack user `user` is, or what to tell them (counted as `what`'s outcome).
async fn person(
    state: &web::Data<AppState>,
    app: &SlackApp,
    user: &str,
    what: &str,
) -> Result<Result<Acting, String>, ApiError> {
    Ok(match who(state, app, user).await? {
        Known::Person(acting) => Ok(acting),
        Known::Nobody { outcome, said } => {
            state
                .metrics
                .chat_move(Platform::Slack.as_str(), what, outcome);
            Err(said)
        }
    })
}

/// What the history and `/metrics` call each button's move.
fn move_of(action_id: &str) -> Option<&'static str> {
    Some(match action_id {
        blocks::DONE => "done",
        blocks::MOVE_DUE => "move_due",
        blocks::VERIFY => "verify",
        blocks::SEND_BACK => "send_back",
        _ => return None,
    })
}

async fn pressed(
    state: &web::Data<AppState>,
    app: &SlackApp,
    press: Press,
) -> Result<HttpResponse, ApiError> {
    // "Open in coe" is a link: Slack tells coe it was pressed, and that is all.
    let Some(what) = move_of(&press.action_id) else {
        return Ok(nothing());
    };
    let count = |outcome: &str| {
        state
            .metrics
            .chat_move(Platform::Slack.as_str(), what, outcome)
    };
    let acting = match person(state, app, &press.user, what).await? {
        Ok(acting) => acting,
        Err(said) => {
            tell_later(press.response_url, blocks::said(&said), false);
            return Ok(nothing());
        }
    };
    let id = press.value.clone();
    if what == "verify" {
        let key = format!("press:{}:{}:{id}", press.user, press.action_ts);
        let by = acting.clone();
        let done = with_conn(state, move |conn, state| {
            let editor = by.editor();
            let input = VerifyInput {
                verified: Some(true),
                reason: None,
            };
            from_chat::once(conn, Platform::Slack, &key, |conn| {
                actions::verify(conn, &id, &input, &editor, state.env())?;
                Ok::<_, ApiError>(())
            })
        })
        .await;
        return Ok(match done {
            Ok(Some(())) => {
                count("done");
                let title = action_title(state, &press.value).await?;
                refresh(
                    state,
                    &acting,
                    press.response_url,
                    format!(
                        "✓ *{}* verified by {}.",
                        escape(&title),
                        escape(&acting.actor)
                    ),
                )
                .await?;
                nothing()
            }
            Ok(None) => {
                count("repeated");
                nothing()
            }
            Err(e) => {
                count("refused");
                tell_later(
                    press.response_url,
                    blocks::said(&format!("{} Nothing was changed.", words_of(&e))),
                    false,
                );
                nothing()
            }
        });
    }
    // The others open a modal: what was done, the new date, why it goes back.
    let (by, action) = (acting.clone(), id.clone());
    let found = with_conn(state, move |conn, state| {
        let detail = actions::get(conn, &action, state.settings.clock(), &[])?;
        let may = match what {
            "send_back" => Ok(()),
            _ => crate::services::access::action(conn, &action, &by.editor()),
        };
        Ok((detail, may.map_err(|e| e.to_string())))
    })
    .await;
    let detail = match found {
        Ok((detail, Ok(()))) => detail,
        Ok((_, Err(why))) => {
            count("refused");
            tell_later(
                press.response_url,
                blocks::said(&format!("You may not: {why}. Nothing was changed.")),
                false,
            );
            return Ok(nothing());
        }
        Err(e) => {
            count("refused");
            tell_later(
                press.response_url,
                blocks::said(&format!("{} Nothing was changed.", words_of(&e))),
                false,
            );
            return Ok(nothing());
        }
    };
    let a = &detail.action;
    let meta = json!({"action": a.id, "response_url": press.response_url});
    let view = match what {
        "done" => blocks::done_modal(&a.title, a.kind.is_judged_by_recurrence(), &meta),
        "move_due" => blocks::move_due_modal(&a.title, a.due_date, &meta),
        _ => blocks::send_back_modal(&a.title, &meta),
    };
    let (app, trigger) = (app.clone(), press.trigger_id.clone());
    let opened = web::block(move || app.api(IN_REQUEST).open_view(&trigger, &view)).await?;
    if let Err(e) = opened {
        count("failed");
        let said = match e {
            crate::chat::slack::web::Failed::Refused(r) if r == "expired_trigger_id" => {
                "Slack took too long to open the form: press the button again.".to_owned()
            }
            other => format!(
                "coe could not open the form ({other}): press the button again in a minute."
            ),
        };
        tell_later(press.response_url, blocks::said(&said), false);
    }
    Ok(nothing())
}

/// An action's title, for what a message says after a move.
async fn action_title(state: &web::Data<AppState>, id: &str) -> Result<String, ApiError> {
    let id = id.to_owned();
    with_conn(state, move |conn, state| {
        Ok(actions::get(conn, &id, state.settings.clock(), &[])?
            .action
            .title)
    })
    .await
}

/// The message a button was on, shown again as it now stands, with what happened first.
async fn refresh(
    state: &web::Data<AppState>,
    acting: &Acting,
    response_url: Option<String>,
    said: String,
) -> Result<(), ApiError> {
    if response_url.is_none() {
        return Ok(());
    }
    let email = acting.actor.clone();
    let mine = with_conn(state, move |conn, state| {
        Ok(from_chat::mine(conn, state.env(), &email)?)
    })
    .await?;
    tell_later(
        response_url,
        words::mine(&state.settings.public_url, &mine, Some(&said)),
        true,
    );
    Ok(())
}

/// What each field is called in the modals, for what the services say about them.
const LABELS: [(&str, &str); 8] = [
    ("evidence_url", "the evidence link"),
    ("due_date", "the due date"),
    ("success_criteria", "done when"),
    ("started_at", "the start"),
    ("customers_saw", "what customers saw"),
    ("note", "what was done"),
    ("reason", "why"),
    ("owner", "the owner"),
];

/// A service's words with its field names said as the modals say them.
fn plain(text: &str) -> String {
    let mut text = text.to_owned();
    for (field, label) in LABELS {
        if field.contains('_') {
            text = text.replace(field, label);
        }
    }
    text
}

/// An error in words for the person (the field's problem, or the refusal).
fn words_of(e: &ApiError) -> String {
    let label = |field: &str| {
        LABELS
            .iter()
            .find(|(f, _)| *f == field)
            .map_or_else(|| field.replace('_', " "), |(_, l)| (*l).to_owned())
    };
    match e {
        ApiError::Validation(problems) => problems
            .iter()
            .map(|p| format!("{}: {}.", label(&p.field), plain(&p.problem)))
            .collect::<Vec<_>>()
            .join(" "),
        ApiError::Conflict { message, .. } => format!("{}.", plain(message)),
        other => format!("{}.", plain(&other.to_string())),
    }
}

/// The blocks of each modal, in order: a problem of a field the modal does not show
/// goes under its first.
fn blocks_of(callback: &str) -> &'static [&'static str] {
    match callback {
        "report" => &[
            "title",
            "service",
            "severity",
            "started_at",
            "customers_saw",
        ],
        "follow_up" => &[
            "title",
            "owner",
            "due_date",
            "priority",
            "kind",
            "success_criteria",
        ],
        "done" => &["note", "evidence_url"],
        "move_due" => &["due_date", "reason"],
        _ => &["reason"],
    }
}

/// The modal's answer to a refusal: each problem under its field, or the refusal said
/// in place of the form.
fn refused(callback: &str, e: &ApiError) -> Value {
    let blocks_here = blocks_of(callback);
    match e {
        ApiError::Validation(problems)
        | ApiError::Conflict {
            fields: problems, ..
        } if !problems.is_empty() => {
            let mut errors: BTreeMap<String, String> = BTreeMap::new();
            for p in problems {
                let block = blocks_here
                    .iter()
                    .find(|b| **b == p.field)
                    .unwrap_or(&blocks_here[0]);
                let problem = plain(&p.problem);
                errors
                    .entry((*block).to_owned())
                    .and_modify(|e| {
                        e.push(' ');
                        e.push_str(&problem);
                    })
                    .or_insert(problem);
            }
            blocks::errors(&errors)
        }
        other => blocks::finished(
            "Not done",
            &format!("{} Nothing was changed.", words_of(other)),
        ),
    }
}

fn at(seconds: Option<String>) -> Option<chrono::NaiveDateTime> {
    let s: i64 = seconds?.parse().ok()?;
    chrono::DateTime::from_timestamp(s, 0).map(|t| t.naive_utc())
}

async fn submitted_form(
    state: &web::Data<AppState>,
    app: &SlackApp,
    form: Submitted,
) -> Result<HttpResponse, ApiError> {
    let what: &'static str = match form.callback_id.as_str() {
        "report" => "report",
        "follow_up" => "follow_up",
        "done" => "done",
        "move_due" => "move_due",
        "send_back" => "send_back",
        _ => return Ok(nothing()),
    };
    let count = |outcome: &str| {
        state
            .metrics
            .chat_move(Platform::Slack.as_str(), what, outcome)
    };
    let acting = match person(state, app, &form.user, what).await? {
        Ok(acting) => acting,
        Err(said) => return Ok(HttpResponse::Ok().json(blocks::finished("Not done", &said))),
    };
    // A follow-up's owner is a Slack user: who they are in coe, asked before any
    // connection is taken.
    let owner_email = match (what, form.input("owner")) {
        ("follow_up", Some(user)) => match email_of(app, &user).await? {
            Ok(Some(email)) => Some(email),
            Ok(None) => {
                count("refused");
                let mut problems = BTreeMap::new();
                problems.insert("owner".to_owned(), "has no email address in Slack that coe can read: pick someone in coe's directory".to_owned());
                return Ok(HttpResponse::Ok().json(blocks::errors(&problems)));
            }
            Err(e) => {
                count("failed");
                return Ok(HttpResponse::Ok().json(blocks::finished(
                        "Not done",
                        &format!("coe could not ask Slack who the owner is ({e}): submit again in a minute. Nothing was changed."),
                    )));
            }
        },
        _ => None,
    };
    let key = format!("view:{}", form.view_id);
    let by = acting.clone();
    let meta = form.private_metadata.clone();
    let action_id = meta["action"].as_str().unwrap_or_default().to_owned();
    let form_in = form.clone();
    let acted_on = action_id.clone();
    let done = with_conn(state, move |conn, state| {
        let editor = by.editor();
        let env = state.env();
        let clock = state.settings.clock();
        let form = form_in;
        from_chat::once(conn, Platform::Slack, &key, |conn| -> Result<Value, ApiError> {
            match what {
                "report" => {
                    let input = FailureReport {
                        title: form.input("title").unwrap_or_default(),
                        service: form.input("service"),
                        severity: form.input("severity").and_then(|s| crate::domain::Severity::try_from(s).ok()),
                        started_at: at(form.input("started_at")),
                        detected_at: None,
                        resolved_at: None,
                        customers_saw: form.input("customers_saw"),
                    };
                    let reported = report::report(conn, &input, &editor, env)?;
                    if let (Some(channel), Some(coe_id)) = (meta["channel"].as_str(), reported.coe_id.as_deref()) {
                        from_chat::link(conn, Platform::Slack, channel, coe_id, &by.actor)?;
                    }
                    Ok(json!({"coe": reported.coe_id, "incident": reported.incident_id, "title": input.title}))
                }
                "follow_up" => {
                    let coe_id = meta["coe"].as_str().unwrap_or_default();
                    let input = NewAction {
                        title: form.input("title"),
                        owner: owner_email.clone(),
                        due_date: form.input("due_date"),
                        priority: form.input("priority"),
                        kind: form.input("kind"),
                        success_criteria: form.input("success_criteria"),
                        ..NewAction::default()
                    };
                    let id = actions::create(conn, coe_id, &input, &editor, clock, env)?;
                    Ok(json!({"action": id, "title": input.title, "owner": owner_email, "due": input.due_date}))
                }
                "done" => {
                    let input = TransitionInput {
                        note: form.input("note"),
                        evidence_url: form.input("evidence_url"),
                    };
                    actions::transition(conn, &acted_on, Transition::Complete, &input, &editor, env)?;
                    Ok(Value::Null)
                }
                "move_due" => {
                    let due = match form.input("due_date").map(|d| d.parse::<NaiveDate>()) {
                        Some(Ok(due)) => due,
                        _ => return Err(ApiError::field("due_date", "pick the new due date")),
                    };
                    let current = actions::get(conn, &acted_on, clock, &[])?.action.due_date;
                    if due == current {
                        return Err(ApiError::field(
                            "due_date",
                            format!("it is due {current} already: pick the new date"),
                        ));
                    }
                    let due = Some(due);
                    let patch = ActionPatch {
                        due_date: due,
                        reason: form.input("reason"),
                        ..ActionPatch::default()
                    };
                    actions::patch(conn, &acted_on, &patch, &editor, clock, env)?;
                    Ok(json!({"due": due}))
                }
                _ => {
                    let input = VerifyInput {
                        verified: Some(false),
                        reason: form.input("reason"),
                    };
                    actions::verify(conn, &acted_on, &input, &editor, env)?;
                    Ok(Value::Null)
                }
            }
        })
    })
    .await;
    let done = match done {
        Ok(Some(done)) => done,
        Ok(None) => {
            count("repeated");
            return Ok(HttpResponse::Ok().json(blocks::finished("Done", "This was done already.")));
        }
        Err(e) => {
            count("refused");
            return Ok(HttpResponse::Ok().json(refused(&form.callback_id, &e)));
        }
    };
    count("done");
    let base = state.settings.public_url.trim_end_matches('/').to_owned();
    let by = escape(&acting.actor);
    let response_url = form.private_metadata["response_url"]
        .as_str()
        .map(str::to_owned);
    let answer = match what {
        "report" => {
            let title = escape(done["title"].as_str().unwrap_or_default());
            let (link, words) = match done["coe"].as_str() {
                Some(coe) => (format!("{base}/coes/{coe}"), "the COE's draft"),
                None => (
                    format!(
                        "{base}/incidents/{}",
                        done["incident"].as_str().unwrap_or_default()
                    ),
                    "the incident (below the severity that asks for a COE)",
                ),
            };
            if done["coe"].is_string() {
                tell_later(
                    response_url,
                    json!({"response_type": "in_channel", "text": format!(
                    "{by} reported a failure: *{title}*. Its COE: <{link}|open it in coe>. This channel is linked to it: `/coe follow-up` here adds a corrective action.")}),
                    false,
                );
            }
            blocks::finished(
                "Reported",
                &format!("Reported: *{title}*. <{link}|Open {words} in coe>."),
            )
        }
        "follow_up" => {
            let id = done["action"].as_str().unwrap_or_default();
            blocks::finished(
                "Follow-up added",
                &format!(
                    "Added *{}*, owned by {}, due {}. <{base}/actions/{id}|Open it in coe>.",
                    escape(done["title"].as_str().unwrap_or_default()),
                    escape(done["owner"].as_str().unwrap_or_default()),
                    done["due"].as_str().unwrap_or_default()
                ),
            )
        }
        _ => {
            let title = action_title(state, &action_id).await?;
            let said = match what {
                "done" => format!(
                    "✓ *{}* marked done by {by}: it waits for the reviewer's verification.",
                    escape(&title)
                ),
                "move_due" => format!(
                    "✓ *{}* now due {}, moved by {by}.",
                    escape(&title),
                    done["due"].as_str().unwrap_or_default()
                ),
                _ => format!("↩ *{}* sent back to its owner by {by}.", escape(&title)),
            };
            refresh(state, &acting, response_url, said.clone()).await?;
            blocks::finished("Done", &said)
        }
    };
    Ok(HttpResponse::Ok().json(answer))
}
