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
use crate::error::ApiError;
use crate::http::state::{with_conn, AppState};
use crate::services::access::Acting;
use crate::services::coe::actions::{self, NewAction};
use crate::services::from_chat::moves::plain;
use crate::services::from_chat::{self, Made, Move, MoveError, Platform};
use crate::services::intake::report::FailureReport;

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
        let asked = Move::Verify { action: id };
        let done = with_conn(state, move |conn, state| {
            Ok(from_chat::make(
                conn,
                state.env(),
                Platform::Slack,
                &key,
                &by,
                &asked,
            ))
        })
        .await;
        return Ok(match outcome(done) {
            Outcome::Made(made) => {
                count("done");
                refresh(
                    state,
                    &acting,
                    press.response_url,
                    format!(
                        "✓ *{}* verified by {}.",
                        escape(made.title()),
                        escape(&acting.actor)
                    ),
                )
                .await?;
                nothing()
            }
            Outcome::Repeated => {
                count("repeated");
                nothing()
            }
            Outcome::Refused(e) => {
                count("refused");
                tell_later(
                    press.response_url,
                    blocks::said(&format!("{} Nothing was changed.", e.words())),
                    false,
                );
                nothing()
            }
            Outcome::Failed(said) => {
                count("failed");
                tell_later(
                    press.response_url,
                    blocks::said(&format!("{said} Nothing was changed.")),
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

/// How a move ended, as Slack is told.
enum Outcome {
    Made(Made),
    Repeated,
    Refused(MoveError),
    /// The database (or the pool) failed: said in words, counted as failed.
    Failed(String),
}

fn outcome(asked: Result<Result<Option<Made>, MoveError>, ApiError>) -> Outcome {
    match asked {
        Ok(Ok(Some(made))) => Outcome::Made(made),
        Ok(Ok(None)) => Outcome::Repeated,
        Ok(Err(MoveError::Database(e))) => Outcome::Failed(words_of(&ApiError::from(e))),
        Ok(Err(refused)) => Outcome::Refused(refused),
        Err(e) => Outcome::Failed(words_of(&e)),
    }
}

/// An error of the request, in words for the person.
fn words_of(e: &ApiError) -> String {
    format!("{}.", plain(&e.to_string()))
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
fn refused(callback: &str, e: &MoveError) -> Value {
    let blocks_here = blocks_of(callback);
    let problems = e.problems();
    if problems.is_empty() {
        return blocks::finished("Not done", &format!("{} Nothing was changed.", e.words()));
    }
    let mut errors: BTreeMap<String, String> = BTreeMap::new();
    for (field, problem) in problems {
        let block = blocks_here
            .iter()
            .find(|b| **b == field)
            .unwrap_or(&blocks_here[0]);
        let problem = plain(problem);
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
    let meta = &form.private_metadata;
    let action = meta["action"].as_str().unwrap_or_default().to_owned();
    let asked = match what {
        "report" => Move::Report {
            input: FailureReport {
                title: form.input("title").unwrap_or_default(),
                service: form.input("service"),
                severity: form
                    .input("severity")
                    .and_then(|s| crate::domain::Severity::try_from(s).ok()),
                started_at: at(form.input("started_at")),
                detected_at: None,
                resolved_at: None,
                customers_saw: form.input("customers_saw"),
            },
            channel: meta["channel"].as_str().map(str::to_owned),
        },
        "follow_up" => Move::FollowUp {
            coe: meta["coe"].as_str().unwrap_or_default().to_owned(),
            input: NewAction {
                title: form.input("title"),
                owner: owner_email,
                due_date: form.input("due_date"),
                priority: form.input("priority"),
                kind: form.input("kind"),
                success_criteria: form.input("success_criteria"),
                ..NewAction::default()
            },
        },
        "done" => Move::Done {
            action,
            note: form.input("note"),
            evidence: form.input("evidence_url"),
        },
        "move_due" => Move::MoveDue {
            action,
            due: form
                .input("due_date")
                .and_then(|d| d.parse::<NaiveDate>().ok()),
            reason: form.input("reason"),
        },
        _ => Move::SendBack {
            action,
            reason: form.input("reason"),
        },
    };
    let key = format!("view:{}", form.view_id);
    let by = acting.clone();
    let done = with_conn(state, move |conn, state| {
        Ok(from_chat::make(
            conn,
            state.env(),
            Platform::Slack,
            &key,
            &by,
            &asked,
        ))
    })
    .await;
    let done = match outcome(done) {
        Outcome::Made(done) => done,
        Outcome::Repeated => {
            count("repeated");
            return Ok(HttpResponse::Ok().json(blocks::finished("Done", "This was done already.")));
        }
        Outcome::Refused(e) => {
            count("refused");
            return Ok(HttpResponse::Ok().json(refused(&form.callback_id, &e)));
        }
        Outcome::Failed(said) => {
            count("failed");
            return Ok(HttpResponse::Ok().json(blocks::finished(
                "Not done",
                &format!("{said} Nothing was changed."),
            )));
        }
    };
    count("done");
    let base = state.settings.public_url.trim_end_matches('/').to_owned();
    let by = escape(&acting.actor);
    let response_url = form.private_metadata["response_url"]
        .as_str()
        .map(str::to_owned);
    let answer = match &done {
        Made::Reported {
            incident,
            coe,
            title,
        } => {
            let title = escape(title);
            let (link, words) = match coe {
                Some(coe) => (format!("{base}/coes/{coe}"), "the COE's draft"),
                None => (
                    format!("{base}/incidents/{incident}"),
                    "the incident (below the severity that asks for a COE)",
                ),
            };
            if coe.is_some() {
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
        Made::Added {
            action,
            title,
            owner,
            due,
        } => blocks::finished(
            "Follow-up added",
            &format!(
                "Added *{}*, owned by {}, due {}. <{base}/actions/{action}|Open it in coe>.",
                escape(title),
                escape(owner.as_deref().unwrap_or_default()),
                due.as_deref().unwrap_or_default()
            ),
        ),
        Made::Moved { title, due, .. } => {
            let said = match what {
                "done" => format!(
                    "✓ *{}* marked done by {by}: it waits for the reviewer's verification.",
                    escape(title)
                ),
                "move_due" => format!("✓ *{}* now due {due}, moved by {by}.", escape(title)),
                _ => format!("↩ *{}* sent back to its owner by {by}.", escape(title)),
            };
            refresh(state, &acting, response_url, said.clone()).await?;
            blocks::finished("Done", &said)
        }
    };
    Ok(HttpResponse::Ok().json(answer))
}
