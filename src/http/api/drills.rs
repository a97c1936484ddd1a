//! A drill that proves an action's fix: `/api/v1/actions/{id}/drill…`
//! (`services::coe::actions::drill`).

use actix_web::{web, HttpResponse};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiJson, OptionalJson, PathId};
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::coe::actions::drill::{
    self, AlarmInput, DrillView, RecheckDecision, RecheckView,
};

/// The alert that proves an action in a drill, and its re-checks.
#[utoipa::path(operation_id = "get_drill", get, path = "/api/v1/actions/{id}/drill", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    responses(
        (status = 200, description = "Its alarm and re-checks", body = DrillView),
        (status = 404, description = "No such action", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    id: PathId<ids::Action>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let view = with_conn(&state, move |conn, _| Ok(drill::of_action(conn, &id)?)).await?;
    Ok(HttpResponse::Ok().json(view))
}

/// Names the alert that proves an action to detect or mitigate: the labels an event
/// must carry (`{"labels": {"coe_action": "<id>"}}`); empty or null forgets it. Some
/// days after the action is verified (`actions.drill_after_days`) coe opens a re-check
/// that the alert, fired in a drill, closes by itself.
#[utoipa::path(operation_id = "set_drill", put, path = "/api/v1/actions/{id}/drill", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    request_body = AlarmInput,
    responses(
        (status = 200, description = "Named (or forgotten)", body = DrillView),
        (status = 403, description = "Not someone who may change the action", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 422, description = "Labels that are no labels, or an action not to detect or mitigate", body = ErrorBody),
    ))]
pub async fn set(
    Member(caller): Member,
    id: PathId<ids::Action>,
    body: ApiJson<AlarmInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, input, acting) = (id.into_inner(), body.0, caller.acting());
    let view = with_write(&state, move |conn, state| {
        Ok(drill::set_alarm(
            conn,
            &id,
            &input,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(view))
}

/// Opens a re-check of a done action now: its owner is asked to run the drill within
/// `actions.drill_window_days`.
#[utoipa::path(operation_id = "request_recheck", post, path = "/api/v1/actions/{id}/drill/recheck", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    responses(
        (status = 201, description = "Opened: waits for the alarm", body = RecheckView),
        (status = 403, description = "Not someone who may change the action", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 409, description = "No alert named, the action not done, or a re-check open already", body = ErrorBody),
    ))]
pub async fn recheck(
    Member(caller): Member,
    id: PathId<ids::Action>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, acting) = (id.into_inner(), caller.acting());
    let opened = with_write(&state, move |conn, state| {
        Ok(drill::request(
            conn,
            &id,
            &acting.editor(),
            state.settings.clock(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Created().json(opened))
}

/// The COE's reviewer decides on a missed re-check: `confirm` (the fix stands, with
/// why) or `reopen` (the action is open again, with why).
#[utoipa::path(operation_id = "decide_recheck", post, path = "/api/v1/actions/{id}/drill/{decision}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id"),
           ("decision" = String, Path, description = "confirm or reopen")),
    request_body = RecheckDecision,
    responses(
        (status = 200, description = "Decided", body = RecheckView),
        (status = 403, description = "Not the COE's reviewer, or its owner or completer", body = ErrorBody),
        (status = 404, description = "No such action or decision", body = ErrorBody),
        (status = 409, description = "No missed re-check waits", body = ErrorBody),
        (status = 422, description = "The note missing", body = ErrorBody),
    ))]
pub async fn decide(
    Member(caller): Member,
    id: PathId<ids::Action>,
    path: web::Path<(String, String)>,
    body: OptionalJson<RecheckDecision>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (_, decision) = path.into_inner();
    let confirm = match decision.as_str() {
        "confirm" => true,
        "reopen" => false,
        other => {
            return Err(ApiError::NotFound(format!(
                "no decision `{}`: confirm or reopen",
                other.escape_default()
            )))
        }
    };
    let (id, input, acting) = (id.into_inner(), body.0.unwrap_or_default(), caller.acting());
    let decided = with_write(&state, move |conn, state| {
        Ok(drill::decide(
            conn,
            &id,
            confirm,
            &input,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(decided))
}
