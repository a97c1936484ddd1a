//! "Import from chat" for API callers: the messages of an incident channel proposed
//! for a COE's timeline (`GET /api/v1/coes/{id}/chat-messages`). Nothing is added:
//! the caller adds what it keeps as timeline entries.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use crate::chat::read::Said;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiQuery, PathId};
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::outbound::chat::import;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChatQuery {
    /// A chat channel of the settings that coe may read.
    pub channel: String,
    /// Another room or channel of the same platform (its id); the channel's own when
    /// left out.
    #[serde(default)]
    pub conversation: Option<String>,
    /// RFC 3339; the COE's start by default.
    #[serde(default)]
    pub from: Option<String>,
    /// RFC 3339; its resolution (else now) by default.
    #[serde(default)]
    pub to: Option<String>,
}

fn time(field: &'static str, raw: Option<&str>) -> Result<Option<chrono::NaiveDateTime>, ApiError> {
    match raw {
        None => Ok(None),
        Some(raw) => crate::domain::event::parse_time(raw)
            .map_err(|p| ApiError::field(field, p))?
            .ok_or_else(|| ApiError::field(field, "must be a real time"))
            .map(Some),
    }
}

/// The messages people wrote in the channel during the window, oldest first, for
/// the COE's owner or reviewer (a channel of the COE's team or service, or of the
/// whole organisation; a window within a day of its incidents) or an admin (any
/// readable channel, any window). Each read is written in the COE's history.
#[utoipa::path(operation_id = "chat_messages", get, path = "/api/v1/coes/{id}/chat-messages", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ChatQuery),
    responses(
        (status = 200, description = "`{channel, conversation, from, to, messages: [{author, at, text}]}`", body = Object),
        (status = 403, description = "Not the COE's owner, reviewer or an admin; or a channel limited to other teams or services (admins only)", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 422, description = "No such readable channel, or a bad window: longer than 14 days, or (but for an admin) beyond a day either side of the COE's incidents (the field is named, with the span allowed)", body = ErrorBody),
        (status = 502, description = "The platform refused or did not answer (its words)", body = ErrorBody),
    ))]
pub async fn messages(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    query: ApiQuery<ChatQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, q, acting) = (id.into_inner(), query.0, caller.acting());
    let ask = import::Ask {
        channel: q.channel.clone(),
        conversation: q.conversation.clone(),
        from: time("from", q.from.as_deref())?,
        to: time("to", q.to.as_deref())?,
    };
    let elsewhere = ask
        .conversation
        .as_deref()
        .is_some_and(|c| !c.trim().is_empty());
    let (key, who) = (id.clone(), acting.clone());
    let reading = with_conn(&state, move |conn, state| {
        let scope = import::open(conn, &key, &who.editor(), elsewhere)
            .map_err(crate::services::coe::coes::CoeError::from)?;
        Ok(import::plan(
            state.env(),
            &scope,
            &who.editor(),
            &ask,
            crate::db::now(),
        )?)
    })
    .await?;
    // The platform answers with no pooled connection held.
    let (runtime, planned) = (state.runtime(), reading.clone());
    let said: Vec<Said> = web::block(move || import::read(runtime.env(), &planned)).await??;
    let (count, done) = (said.len(), reading.clone());
    with_write(&state, move |conn, _| {
        Ok(import::record(
            conn,
            &id,
            &acting.actor,
            &done,
            count,
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(json!({
        "channel": reading.channel,
        "conversation": reading.conversation,
        "from": crate::json::format_utc(&reading.from),
        "to": crate::json::format_utc(&reading.to),
        "messages": said,
    })))
}
