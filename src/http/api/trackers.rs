//! Issue trackers: an action's ticket made or linked (`POST
//! /api/v1/actions/{id}/ticket`), the trackers' webhooks (`POST
//! /api/v1/trackers/{name}/webhook`, signed), and their health for admins.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::{ids, read_body, OptionalJson, PathId};
use crate::http::state::{with_conn, AppState};
use crate::services::coe::trackers::{self, Asked, Received, Taken, TicketRequest};
use crate::services::outbound::tickets::TicketView;
use crate::trackers::webhook::{self, Refused};

/// Largest webhook body taken: an issue with its changelog, well under a megabyte.
const MAX_WEBHOOK_BYTES: usize = 1 << 20;

/// Makes the action's ticket in its tracker (queued: `ticket.key` comes once the
/// tracker made it), or links an existing one by `key` (read from the tracker
/// first). A ticket belongs to one action.
#[utoipa::path(operation_id = "action_ticket", post, path = "/api/v1/actions/{id}/ticket", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    request_body(content = TicketRequest, description = "Empty to make it in the tracker that takes the action"),
    responses(
        (status = 202, description = "The ticket, being made or linked", body = TicketView),
        (status = 403, description = "Not the action's owner, the COE's owner or an admin", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 409, description = "It has a ticket already, the ticket is another action's, no tracker is set up, or the tracker refused coe's credentials or did not answer (said in words; the tracker's answer is logged and shown to admins only)", body = ErrorBody),
        (status = 422, description = "No such tracker, no tracker takes it, a `key` that is not one of the tracker's (refused before any request; the shape expected is named), or the tracker has no such ticket", body = ErrorBody),
    ))]
pub async fn ticket(
    Member(caller): Member,
    id: PathId<ids::Action>,
    body: OptionalJson<TicketRequest>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, ask, acting) = (id.into_inner(), body.0.unwrap_or_default(), caller.acting());
    // Checked (and the key read by the tracker's grammar) on one connection, the
    // tracker asked with none held, what it said written on another.
    let (action, who) = (id.clone(), acting.clone());
    let asked = with_conn(&state, move |conn, state| {
        Ok(trackers::request(
            conn,
            state.env(),
            &action,
            &ask,
            &who.editor(),
        )?)
    })
    .await?;
    if let Asked::Link { tracker, key } = asked {
        let (asked_tracker, asked_key) = (tracker.clone(), key.clone());
        let read = web::block(move || trackers::read(&asked_tracker, &asked_key)).await?;
        let action = id.clone();
        with_conn(&state, move |conn, _| {
            Ok(trackers::link(
                conn,
                &tracker,
                &action,
                &key,
                read,
                &acting.editor(),
            )?)
        })
        .await?;
    }
    let view = with_conn(&state, move |conn, state| {
        Ok(crate::services::outbound::ticket_of(
            conn,
            &state.env().connections.trackers,
            &id,
        )?)
    })
    .await?;
    Ok(HttpResponse::Accepted().json(view))
}

/// A tracker's webhook: Jira's, Linear's or GitHub's delivery as the tracker sends
/// it, signed with the tracker's `webhook_secret`. Each delivery is taken once: by its
/// delivery id, and by its body (a signed body replayed under a new delivery id is a
/// duplicate, for as long as delivery ids are kept: a week). Only a ticket's status is
/// read, from the tracker itself.
#[utoipa::path(operation_id = "tracker_webhook", post, path = "/api/v1/trackers/{name}/webhook", tag = "trackers",
    params(("name" = String, Path, description = "The tracker's name in the settings")),
    request_body(content = Object, description = "The tracker's own payload", content_type = "application/json"),
    responses(
        (status = 200, description = "Taken (or a duplicate, said so)", body = Object),
        (status = 400, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "JSON, but lacking what this tracker always sends (the field is named)", body = ErrorBody),
        (status = 401, description = "Unsigned, wrongly signed or too old; nothing changed", body = ErrorBody),
        (status = 404, description = "No tracker of that name", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
    ))]
pub async fn webhook(
    req: HttpRequest,
    name: web::Path<String>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    let Some(tracker) = state
        .env()
        .connections
        .trackers
        .iter()
        .find(|t| t.name == name)
    else {
        return Err(ApiError::NotFound(format!(
            "no tracker is named `{}`",
            name.escape_default()
        )));
    };
    let tracker = tracker.clone();
    let body = read_body(payload, MAX_WEBHOOK_BYTES, "1 MiB for a tracker's webhook").await?;
    let headers = req.headers().clone();
    let header = move |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let delivery = web::block(move || {
        webhook::read(&tracker, &header, &body, crate::domain::clock::now()).map(|d| (d, tracker))
    })
    .await?;
    let (delivery, tracker) = delivery.map_err(|e| match e {
        Refused::Signature(why) => ApiError::Unauthorized(why),
        Refused::Malformed {
            field: "body",
            problem,
        } => ApiError::BadRequest(format!("the body is {problem}")),
        Refused::Malformed { field, problem } => ApiError::field(field, problem),
    })?;
    // Taken on one connection, the ticket read from the tracker with none held, what
    // it said applied on another.
    let checked = tracker.clone();
    let taken = with_conn(&state, move |conn, _| {
        Ok(trackers::take(conn, &checked, &delivery)?)
    })
    .await?;
    let received = match taken {
        Taken::Answered(received) => received,
        Taken::Read { action_id, key } => {
            let (read, tracker) =
                web::block(move || (trackers::read(&tracker, &key), tracker)).await?;
            with_conn(&state, move |conn, state| {
                Ok(trackers::settle(
                    conn,
                    state.env(),
                    &tracker,
                    &action_id,
                    read,
                )?)
            })
            .await?
        }
    };
    let (duplicate, changed) = match received {
        Received::Duplicate => (true, None),
        Received::Nothing => (false, None),
        Received::Changed(what) => (false, Some(what)),
    };
    Ok(HttpResponse::Ok().json(json!({"duplicate": duplicate, "changed": changed})))
}

/// Each tracker's health: the last delivery out and in, the last error, statuses coe
/// could not map, what waits, and the webhook URL to register. Admin only.
#[utoipa::path(operation_id = "list_trackers", get, path = "/api/v1/trackers", tag = "trackers", security(("bearer" = [])),
    responses(
        (status = 200, description = "The trackers", body = Object),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn list(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let statuses = with_conn(&state, |conn, state| {
        Ok(trackers::state::statuses(conn, state.env())?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(json!({"trackers": statuses})))
}
