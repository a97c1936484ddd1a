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
use crate::http::state::{with_conn, AppState};
use crate::services::access;
use crate::services::chat::import;

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
/// whoever may change the COE (its owner, its reviewer, an admin).
#[utoipa::path(operation_id = "chat_messages", get, path = "/api/v1/coes/{id}/chat-messages", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ChatQuery),
    responses(
        (status = 200, description = "`{channel, conversation, from, to, messages: [{author, at, text}]}`", body = Object),
        (status = 403, description = "Not one who may change the COE", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 422, description = "No such readable channel, or a bad window (the field is named)", body = ErrorBody),
        (status = 502, description = "The platform refused or did not answer (its words)", body = ErrorBody),
    ))]
pub async fn messages(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    query: ApiQuery<ChatQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, q, acting) = (id.into_inner(), query.0, caller.acting());
    let from = time("from", q.from.as_deref())?;
    let to = time("to", q.to.as_deref())?;
    let elsewhere = q
        .conversation
        .as_deref()
        .is_some_and(|c| !c.trim().is_empty());
    let window = with_conn(&state, move |conn, _| {
        access::read_chat(conn, &id, &acting.editor(), elsewhere)
            .map_err(crate::services::coes::CoeError::from)?;
        Ok(import::window(conn, &id)?)
    })
    .await?
    .ok_or_else(|| ApiError::NotFound("no such COE".into()))?;
    let from = from.unwrap_or(window.0);
    let to = to.or(window.1).unwrap_or_else(crate::db::now);
    let settings = state.settings.clone();
    let (channel, conversation) = (q.channel.clone(), q.conversation.clone());
    let said: Vec<Said> =
        web::block(move || import::propose(&settings, &channel, conversation.as_deref(), from, to))
            .await??;
    Ok(HttpResponse::Ok().json(json!({
        "channel": q.channel,
        "conversation": q.conversation,
        "from": crate::json::format_utc(&from),
        "to": crate::json::format_utc(&to),
        "messages": said,
    })))
}
