//! "Import from chat" on a draft: pick a channel coe may read and a window (the
//! incident's start to its resolution by default); its messages come in as proposed
//! timeline entries, and only those the owner ticks are added.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::{render, Page, State};
use super::outcome::{as_person, see_other};
use crate::chat::read::Said;
use crate::domain::coe::CoeState;
use crate::http::session::SignedIn;
use crate::services::chat::import;
use crate::services::coes::{self, ChosenMessage};

#[derive(Debug, Default, Deserialize)]
pub struct ImportQuery {
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    conversation: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

const FIELD_TIME: &str = "%Y-%m-%dT%H:%M:%S";

fn field_time(t: NaiveDateTime) -> String {
    t.format(FIELD_TIME).to_string()
}

fn parse_field(raw: Option<&str>) -> Option<NaiveDateTime> {
    let raw = raw?.trim();
    NaiveDateTime::parse_from_str(raw, FIELD_TIME)
        .or_else(|_| NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M"))
        .ok()
}

/// The COE's title and state, and its default window, for someone who may change it.
async fn coe_facts(
    state: &State,
    who: &SignedIn,
    id: &str,
    elsewhere: bool,
) -> Result<(String, CoeState, (NaiveDateTime, Option<NaiveDateTime>)), PageError> {
    let key = id.to_owned();
    as_person(state, who, move |conn, state, editor| {
        crate::services::access::read_chat(conn, &key, editor, elsewhere)
            .map_err(coes::CoeError::from)?;
        let doc = coes::load(conn, &key, &state.settings)?;
        let window = import::window(conn, &key)?.unwrap_or((doc.created_at, None));
        Ok((doc.title, doc.state, window))
    })
    .await
}

#[allow(clippy::too_many_arguments)]
fn show(
    state: &State,
    who: &SignedIn,
    status: StatusCode,
    id: &str,
    (title, coe_state): (&str, CoeState),
    asked: &ImportQuery,
    (from, to): (NaiveDateTime, Option<NaiveDateTime>),
    messages: Option<&[Said]>,
    problem: Option<String>,
) -> Page {
    let channels: Vec<Value> = import::channels(&state.settings)
        .iter()
        .map(|c| json!({"name": c.name, "kind": c.kind.as_str(), "selected": asked.channel.as_deref() == Some(c.name.as_str())}))
        .collect();
    let messages = messages.map(|m| {
        m.iter()
            .enumerate()
            .map(|(i, s)| json!({"i": i, "author": s.author, "at": crate::json::format_utc(&s.at), "text": s.text}))
            .collect::<Vec<_>>()
    });
    render(
        state,
        Some(who),
        status,
        "chat_import",
        json!({
            "id": id,
            "title": title,
            "draft": coe_state == CoeState::Draft,
            "channels": channels,
            "channel": asked.channel,
            "conversation": asked.conversation,
            "from": field_time(from),
            "to": to.map(field_time),
            "messages": messages,
            "problem": problem,
        }),
    )
}

/// `GET /coes/{id}/import`: the form, and the messages proposed once a channel is
/// picked.
pub async fn form(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<ImportQuery>,
    state: State,
) -> Page {
    let id = path.into_inner();
    let asked = query.into_inner();
    let elsewhere = asked
        .conversation
        .as_deref()
        .is_some_and(|c| !c.trim().is_empty());
    let (title, coe_state, window) = coe_facts(&state, &who, &id, elsewhere).await?;
    let from = parse_field(asked.from.as_deref()).unwrap_or(window.0);
    let to = parse_field(asked.to.as_deref()).or(window.1);
    let Some(channel) = asked
        .channel
        .clone()
        .filter(|_| coe_state == CoeState::Draft)
    else {
        return show(
            &state,
            &who,
            StatusCode::OK,
            &id,
            (&title, coe_state),
            &asked,
            (from, to),
            None,
            None,
        );
    };
    let (settings, conversation) = (state.settings.clone(), asked.conversation.clone());
    let proposed = web::block(move || {
        let until = to.unwrap_or_else(crate::db::now);
        import::propose(&settings, &channel, conversation.as_deref(), from, until)
    })
    .await
    .map_err(|e| PageError::Internal(e.to_string()))?;
    match proposed {
        Ok(said) => show(
            &state,
            &who,
            StatusCode::OK,
            &id,
            (&title, coe_state),
            &asked,
            (from, to),
            Some(&said),
            None,
        ),
        Err(e) => {
            let status = match e {
                import::ImportError::Invalid(..) => StatusCode::UNPROCESSABLE_ENTITY,
                import::ImportError::Platform(_) => StatusCode::BAD_GATEWAY,
            };
            show(
                &state,
                &who,
                status,
                &id,
                (&title, coe_state),
                &asked,
                (from, to),
                None,
                Some(e.to_string()),
            )
        }
    }
}

/// The messages the form carried back (`at{i}`, `author{i}`, `text{i}`), and those
/// ticked (`keep`).
fn carried(fields: &Fields) -> (Vec<Said>, Vec<ChosenMessage>) {
    let mut all = Vec::new();
    let mut kept = Vec::new();
    let ticked: Vec<&str> = fields.all("keep").collect();
    for i in 0..crate::chat::read::MAX_MESSAGES {
        let Some(at) = fields.filled(&format!("at{i}")) else {
            break;
        };
        let Ok(Some(at)) = crate::domain::event::parse_time(&at) else {
            continue;
        };
        let said = Said {
            author: fields.text(&format!("author{i}")),
            at,
            text: fields.text(&format!("text{i}")),
        };
        if ticked.contains(&i.to_string().as_str()) {
            kept.push(ChosenMessage {
                at,
                author: said.author.clone(),
                text: said.text.clone(),
            });
        }
        all.push(said);
    }
    (all, kept)
}

/// `POST /coes/{id}/import`: adds the ticked messages to the timeline.
pub async fn import(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let (who, fields) = (form.who, form.fields);
    let source = fields.text("channel");
    let (all, chosen) = carried(&fields);
    let (key, from) = (id.clone(), source.clone());
    let added = as_person(
        &state,
        &who,
        move |conn, state, editor| match coes::import_timeline(
            conn,
            &key,
            &chosen,
            &from,
            editor,
            state.env(),
        ) {
            Ok(n) => Ok(Ok(n)),
            Err(coes::CoeError::Invalid(problems)) => Ok(Err(problems
                .into_iter()
                .map(|(_, p)| p)
                .collect::<Vec<_>>()
                .join("; "))),
            Err(e) => Err(e.into()),
        },
    )
    .await?;
    match added {
        Ok(_) => Ok(see_other(&format!("/coes/{id}#timeline"))),
        Err(problem) => {
            let (title, coe_state, window) = coe_facts(&state, &who, &id, false).await?;
            let asked = ImportQuery {
                channel: Some(source),
                conversation: fields.filled("conversation"),
                from: fields.filled("from"),
                to: fields.filled("to"),
            };
            let from = parse_field(asked.from.as_deref()).unwrap_or(window.0);
            let to = parse_field(asked.to.as_deref()).or(window.1);
            show(
                &state,
                &who,
                StatusCode::UNPROCESSABLE_ENTITY,
                &id,
                (&title, coe_state),
                &asked,
                (from, to),
                Some(&all),
                Some(problem),
            )
        }
    }
}
