//! "Import from chat" on a draft: pick a channel this COE may use and a window (the
//! incident's start to its resolution by default); its messages come in as proposed
//! timeline entries, and only those the owner ticks are added. The form names the
//! ticked messages by key (`import::key`); adding reads the channel again and adds
//! the platform's messages, never what the form carried.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::{render, Page, State};
use super::outcome::{as_person, see_other, write_as_person};
use crate::chat::read::Said;
use crate::domain::coe::CoeState;
use crate::http::session::SignedIn;
use crate::services::coe::coes;
use crate::services::outbound::chat::import::{self, Ask, ImportError, Reading, Scope};

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

impl ImportQuery {
    fn elsewhere(&self) -> bool {
        self.conversation
            .as_deref()
            .is_some_and(|c| !c.trim().is_empty())
    }

    /// What is asked, once a channel is picked.
    fn ask(&self) -> Option<Ask> {
        let channel = self.channel.as_deref().map(str::trim)?;
        (!channel.is_empty()).then(|| Ask {
            channel: channel.to_owned(),
            conversation: self.conversation.clone(),
            from: parse_field(self.from.as_deref()),
            to: parse_field(self.to.as_deref()),
        })
    }
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

/// The COE as the form shows it, for someone who may read a channel into it.
struct Facts {
    title: String,
    coe_state: CoeState,
    scope: Scope,
    /// The channels offered: (name, kind, whether one of the COE's).
    channels: Vec<(String, &'static str, bool)>,
}

/// The COE's facts (`import::open`: only its owner, reviewer or an admin), and the
/// read planned from `asked` when a channel is picked (`import::plan`).
async fn prepare(
    state: &State,
    who: &SignedIn,
    id: &str,
    asked: &ImportQuery,
) -> Result<(Facts, Option<Result<Reading, ImportError>>), PageError> {
    let (key, elsewhere, ask) = (id.to_owned(), asked.elsewhere(), asked.ask());
    as_person(state, who, move |conn, state, editor| {
        let scope = import::open(conn, &key, editor, elsewhere)
            .map_err(crate::services::coe::coes::CoeError::from)?;
        let doc = coes::load(conn, &key, state.env())?;
        let channels = scope
            .channels(state.env(), editor)
            .into_iter()
            .map(|(c, ours)| (c.name.clone(), c.kind.as_str(), ours))
            .collect();
        let planned =
            ask.map(|ask| import::plan(state.env(), &scope, editor, &ask, crate::db::now()));
        let facts = Facts {
            title: doc.title,
            coe_state: doc.state,
            scope,
            channels,
        };
        Ok((facts, planned))
    })
    .await
}

/// Reads the planned conversation with no pooled connection held.
async fn read(
    state: &State,
    reading: &Reading,
) -> Result<Result<Vec<Said>, ImportError>, PageError> {
    let (runtime, reading) = (state.runtime(), reading.clone());
    web::block(move || import::read(runtime.env(), &reading))
        .await
        .map_err(|e| PageError::Internal(e.to_string()))
}

/// The status and the words of a read that could not be made.
fn refused(e: &ImportError) -> (StatusCode, String) {
    match e {
        ImportError::Invalid(field, problem) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{field}: {problem}"),
        ),
        ImportError::Forbidden(why) => (StatusCode::FORBIDDEN, why.clone()),
        ImportError::Platform(said) => (StatusCode::BAD_GATEWAY, said.clone()),
    }
}

fn show(
    state: &State,
    who: &SignedIn,
    status: StatusCode,
    (id, facts): (&str, &Facts),
    asked: &ImportQuery,
    messages: Option<&[Said]>,
    problem: Option<String>,
) -> Page {
    let from = parse_field(asked.from.as_deref()).unwrap_or(facts.scope.window.0);
    let to = parse_field(asked.to.as_deref()).or(facts.scope.window.1);
    let picked = asked.channel.as_deref().map(str::trim);
    let channels: Vec<Value> = facts
        .channels
        .iter()
        .map(|(name, kind, ours)| {
            json!({"name": name, "kind": kind, "ours": ours,
                   "selected": picked == Some(name.as_str())})
        })
        .collect();
    let messages = messages.map(|m| {
        m.iter()
            .enumerate()
            .map(|(i, s)| {
                json!({"i": i, "key": import::key(s), "author": s.author,
                       "at": crate::json::format_utc(&s.at), "text": s.text})
            })
            .collect::<Vec<_>>()
    });
    render(
        state,
        Some(who),
        status,
        "chat_import",
        json!({
            "id": id,
            "title": facts.title,
            "draft": facts.coe_state == CoeState::Draft,
            "channels": channels,
            "channel": picked,
            "conversation": asked.conversation,
            "from": field_time(from),
            "to": to.map(field_time),
            "margin_hours": import::WINDOW_MARGIN_HOURS,
            "messages": messages,
            "problem": problem,
        }),
    )
}

/// `GET /coes/{id}/import`: the form, and the messages proposed once a channel is
/// picked (the read is written in the COE's history).
pub async fn form(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<ImportQuery>,
    state: State,
) -> Page {
    let id = path.into_inner();
    let asked = query.into_inner();
    let (facts, planned) = prepare(&state, &who, &id, &asked).await?;
    let here = (id.as_str(), &facts);
    let Some(planned) = planned.filter(|_| facts.coe_state == CoeState::Draft) else {
        return show(&state, &who, StatusCode::OK, here, &asked, None, None);
    };
    let reading = match planned {
        Ok(reading) => reading,
        Err(e) => {
            let (status, problem) = refused(&e);
            return show(&state, &who, status, here, &asked, None, Some(problem));
        }
    };
    match read(&state, &reading).await? {
        Ok(said) => {
            record(&state, &who, &id, &reading, said.len()).await?;
            show(
                &state,
                &who,
                StatusCode::OK,
                here,
                &asked,
                Some(&said),
                None,
            )
        }
        Err(e) => {
            let (status, problem) = refused(&e);
            show(&state, &who, status, here, &asked, None, Some(problem))
        }
    }
}

/// Writes the read in the COE's history.
async fn record(
    state: &State,
    who: &SignedIn,
    id: &str,
    reading: &Reading,
    count: usize,
) -> Result<(), PageError> {
    let (key, reading) = (id.to_owned(), reading.clone());
    write_as_person(state, who, move |conn, _, editor| {
        Ok(import::record(
            conn,
            &key,
            editor.actor,
            &reading,
            count,
            crate::db::now(),
        )?)
    })
    .await
}

/// `POST /coes/{id}/import`: reads the channel again (the same checks and window)
/// and adds the platform's messages whose keys were ticked (`keep`) to the timeline.
pub async fn import(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let (who, fields) = (form.who, form.fields);
    let asked = ImportQuery {
        channel: fields.filled("channel"),
        conversation: fields.filled("conversation"),
        from: fields.filled("from"),
        to: fields.filled("to"),
    };
    let keep: Vec<String> = fields.all("keep").map(|k| k.trim().to_owned()).collect();
    let (facts, planned) = prepare(&state, &who, &id, &asked).await?;
    let here = (id.as_str(), &facts);
    if facts.coe_state != CoeState::Draft {
        return show(&state, &who, StatusCode::CONFLICT, here, &asked, None, None);
    }
    let reading = match planned {
        Some(Ok(reading)) => reading,
        Some(Err(e)) => {
            let (status, problem) = refused(&e);
            return show(&state, &who, status, here, &asked, None, Some(problem));
        }
        None => {
            let problem = "channel: pick the channel to read".to_owned();
            return show(
                &state,
                &who,
                StatusCode::UNPROCESSABLE_ENTITY,
                here,
                &asked,
                None,
                Some(problem),
            );
        }
    };
    let said = match read(&state, &reading).await? {
        Ok(said) => said,
        Err(e) => {
            let (status, problem) = refused(&e);
            return show(&state, &who, status, here, &asked, None, Some(problem));
        }
    };
    let chosen = import::kept(&said, &keep);
    let missing = chosen.as_ref().err().copied().unwrap_or(0);
    let (key, done, count) = (id.clone(), reading.clone(), said.len());
    let added = write_as_person(&state, &who, move |conn, state, editor| {
        import::record(conn, &key, editor.actor, &done, count, crate::db::now())?;
        let Ok(chosen) = chosen else {
            return Ok(Err(None));
        };
        match coes::import_timeline(conn, &key, &chosen, &done.channel, editor, state.env()) {
            Ok(n) => Ok(Ok(n)),
            Err(coes::CoeError::Invalid(problems)) => {
                Ok(Err(Some(super::kit::problems_in_words(problems))))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    let problem = match added {
        Ok(_) => return Ok(see_other(&format!("/coes/{id}#timeline"))),
        Err(Some(problem)) => problem,
        Err(None) => format!(
            "{missing} of the ticked messages {} no longer in the channel as it was read \
                 (deleted or edited since): nothing was added. The channel as it is now is \
                 below; tick the messages again.",
            if missing == 1 { "is" } else { "are" }
        ),
    };
    show(
        &state,
        &who,
        StatusCode::UNPROCESSABLE_ENTITY,
        here,
        &asked,
        Some(&said),
        Some(problem),
    )
}

/// What a read in a COE's history says ("read 12 messages of #sec-incidents from
/// 2026-12-01 09:00 UTC to 2026-12-01 12:00 UTC"), from its record
/// (`import::record`); `None` when the record is not one.
pub(super) fn read_words(after: Option<&Value>) -> Option<String> {
    let after = after?;
    let time = |field: &str| {
        after[field]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| import::words(t.naive_utc()))
    };
    let count = after["messages"].as_u64()?;
    let conversation = after["conversation"]
        .as_str()
        .map(|c| format!(" (conversation {c})"))
        .unwrap_or_default();
    let beyond = if after["ours"].as_bool() == Some(false) {
        " (a channel outside its team and service)"
    } else {
        ""
    };
    Some(format!(
        "read {count} message{} of #{}{conversation} from {} to {}{beyond}",
        if count == 1 { "" } else { "s" },
        after["channel"].as_str()?,
        time("from")?,
        time("to")?,
    ))
}
