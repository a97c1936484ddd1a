//! `/coe`: `report` opens "Report a failure" (and, in a channel, links it to the COE
//! opened), `follow-up` opens "Add a follow-up" for the COE the channel is linked to,
//! `link <COE>` links the channel to a COE, and `mine` (or nothing) shows the person's
//! moves to them alone.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::intake::{nothing, privately, signed, who, Known, IN_REQUEST};
use super::words;
use crate::chat::slack::{blocks, web::Failed, Command};
use crate::error::ApiError;
use crate::http::state::{with_conn, AppState};
use crate::services::from_chat::{self, Platform};

const USAGE: &str = "*What /coe does*\n\
    • `/coe report`: report a failure no alert caught (in an incident channel, the channel is linked to its COE)\n\
    • `/coe follow-up`: add a corrective action to the COE this channel is linked to\n\
    • `/coe link <COE address>`: link this channel to a COE\n\
    • `/coe mine`: what waits on you, with buttons to mark done, move a due date or verify";

/// `POST /chat/slack/commands`.
pub async fn commands(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (app, body) = signed(&req, payload, &state, "command").await?;
    let command = Command::read(&body).map_err(ApiError::BadRequest)?;
    let (verb, rest) = command.verb();
    let what = match verb.as_str() {
        "" | "mine" => "mine",
        "report" => "report",
        "follow-up" | "followup" | "follow_up" => "follow_up",
        "link" => "link",
        _ => "help",
    };
    let count = |outcome: &str| {
        state
            .metrics
            .chat_move(Platform::Slack.as_str(), what, outcome)
    };
    if what == "help" {
        return Ok(privately(blocks::said(USAGE)));
    }
    let acting = match who(&state, &app, &command.user_id).await? {
        Known::Person(acting) => acting,
        Known::Nobody { outcome, said } => {
            count(outcome);
            return Ok(privately(blocks::said(&said)));
        }
    };
    let channel = (!command.in_direct_message()).then(|| command.channel_id.clone());
    let public_url = state.settings.public_url.clone();
    match what {
        "mine" => {
            let email = acting.actor.clone();
            let mine = with_conn(&state, move |conn, state| {
                Ok(from_chat::mine(conn, state.env(), &email)?)
            })
            .await?;
            count("done");
            Ok(privately(words::mine(&public_url, &mine, None)))
        }
        "report" => {
            let meta = json!({"channel": channel,
                              "response_url": channel.as_ref().map(|_| &command.response_url)});
            let view = blocks::report_modal(&meta);
            Ok(opened(&app, &command.trigger_id, view, &count).await?)
        }
        "follow_up" => {
            let Some(channel) = channel else {
                count("refused");
                return Ok(privately(blocks::said(
                    "Add a follow-up from the COE's incident channel: `/coe follow-up` there adds \
                     to the COE the channel is linked to.",
                )));
            };
            let at = channel.clone();
            let linked = with_conn(&state, move |conn, _| {
                Ok(from_chat::linked(conn, Platform::Slack, &at)?)
            })
            .await?;
            let Some((coe_id, coe_title)) = linked else {
                count("refused");
                return Ok(privately(blocks::said(
                    "This channel is not linked to a COE yet: `/coe report` here reports a failure \
                     and links it, or `/coe link <COE address>` links it to one. Nothing was changed.",
                )));
            };
            let due = state.settings.clock().today() + chrono::Duration::days(28);
            let meta = json!({"coe": coe_id, "channel": channel});
            let view = blocks::follow_up_modal(&coe_title, due, &meta);
            Ok(opened(&app, &command.trigger_id, view, &count).await?)
        }
        _ => {
            let Some(channel) = channel else {
                count("refused");
                return Ok(privately(blocks::said(
                    "Link a channel from that channel: `/coe link <COE address>` there.",
                )));
            };
            let id = from_chat::coe_id_of(rest);
            let linked = with_conn(&state, move |conn, _| {
                Ok(from_chat::name_channel(
                    conn,
                    Platform::Slack,
                    &channel,
                    &id,
                    &acting.editor(),
                )?)
            })
            .await?;
            match linked {
                Ok(title) => {
                    count("done");
                    Ok(HttpResponse::Ok().json(json!({"response_type": "in_channel",
                        "text": format!("This channel is now linked to the COE *{}*: `/coe follow-up` here adds to it.",
                                        blocks::escape(&title))})))
                }
                Err(said) => {
                    count("refused");
                    Ok(privately(blocks::said(&format!(
                        "{said} Nothing was changed."
                    ))))
                }
            }
        }
    }
}

/// Opens `view` with the command's trigger (three seconds to use it); a failure is
/// said to the person.
async fn opened(
    app: &super::intake::SlackApp,
    trigger_id: &str,
    view: serde_json::Value,
    count: &impl Fn(&str),
) -> Result<HttpResponse, ApiError> {
    let (app, trigger) = (app.clone(), trigger_id.to_owned());
    let opened = web::block(move || app.api(IN_REQUEST).open_view(&trigger, &view)).await?;
    match opened {
        Ok(()) => Ok(nothing()),
        Err(Failed::Refused(e)) if e == "expired_trigger_id" => {
            count("failed");
            Ok(privately(blocks::said(
                "Slack took too long to open the form: run the command again.",
            )))
        }
        Err(e) => {
            count("failed");
            Ok(privately(blocks::said(&format!(
                "coe could not open the form ({e}): run the command again in a minute."
            ))))
        }
    }
}
