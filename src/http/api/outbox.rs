//! `/api/v1/outbox`: what emails were queued, sent and failed, and a retry for the failed.

use std::collections::BTreeMap;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Admin;
use crate::http::extract::{ids, ApiQuery, PathId};
use crate::http::pagination;
use crate::http::state::{with_conn, AppState};
use crate::services::outbound::outbox::{self, OutboxEmail, RetryError};
use crate::services::outbound::queue::{self, Waiting};

impl From<RetryError> for ApiError {
    fn from(e: RetryError) -> Self {
        match e {
            RetryError::NotFound(id) => ApiError::NotFound(format!("no email with id `{id}`")),
            e @ (RetryError::NotFailed(_)
            | RetryError::NotHeld(_)
            | RetryError::BeingSent { .. }) => ApiError::Conflict {
                message: e.to_string(),
                fields: Vec::new(),
            },
            RetryError::Db(e) => e.into(),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OutboxQuery {
    /// Only emails in this state: pending, sending, sent, failed, held or dropped.
    pub state: Option<String>,
    /// Only emails to this address.
    pub recipient: Option<String>,
    /// The `next_before` of the previous page.
    pub before: Option<String>,
    /// 1 to 500; 50 by default.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OutboxPage {
    /// Newest first.
    pub emails: Vec<OutboxEmail>,
    /// All emails by state (not only this page).
    pub counts: BTreeMap<String, i64>,
    /// Pass as `before` for the next page; absent on the last one.
    pub next_before: Option<String>,
}

/// Lists queued, sent and failed emails, newest first, with the last error of each. Admin only.
#[utoipa::path(operation_id = "list_outbox", get, path = "/api/v1/outbox", tag = "outbox", security(("bearer" = [])),
    params(OutboxQuery),
    responses(
        (status = 200, description = "A page of emails", body = OutboxPage),
        (status = 400, description = "A query parameter is malformed", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 422, description = "A query parameter is invalid", body = ErrorBody),
    ))]
pub async fn list(
    _: Admin,
    query: ApiQuery<OutboxQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = query.0;
    if let Some(s) = &q.state {
        if !outbox::STATES.contains(&s.as_str()) {
            return Err(ApiError::field(
                "state",
                format!("must be one of {} (got {s:?})", outbox::STATES.join(", ")),
            ));
        }
    }
    let (limit, _) = pagination::limits(q.limit, None)?;
    let page = with_conn(&state, move |conn, _| {
        let emails = outbox::list(
            conn,
            q.state.as_deref(),
            q.recipient
                .as_deref()
                .map(str::trim)
                .map(str::to_ascii_lowercase)
                .as_deref(),
            q.before.as_deref(),
            limit,
        )?;
        let counts = outbox::counts(conn)?;
        let next_before = if i64::try_from(emails.len()).unwrap_or(0) == limit {
            emails.last().map(|e| e.id.clone())
        } else {
            None
        };
        Ok(OutboxPage {
            emails,
            counts,
            next_before,
        })
    })
    .await?;
    Ok(HttpResponse::Ok().json(page))
}

/// Queues a failed email again with a fresh count of attempts (a pending one is
/// brought forward; a held one is sent after all). Admin only.
#[utoipa::path(operation_id = "retry_outbox_email", post, path = "/api/v1/outbox/{id}/retry", tag = "outbox", security(("bearer" = [])),
    params(("id" = String, Path, description = "The email's id")),
    responses(
        (status = 200, description = "Queued again", body = OutboxEmail),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such email", body = ErrorBody),
        (status = 409, description = "The email is sent or being sent", body = ErrorBody),
    ))]
pub async fn retry(
    Admin(caller): Admin,
    id: PathId<ids::Email>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let email = with_conn(&state, move |conn, _| Ok(outbox::retry(conn, &id)?)).await?;
    tracing::info!(email = %email.id, by = %caller.actor(), "email queued again");
    Ok(HttpResponse::Ok().json(email))
}

/// Drops an email waiting to be sent: a held one (waiting or being sent when the
/// backup a restore put back was taken), a pending or a failed one. It is not sent;
/// the drop is audited. Admin only.
#[utoipa::path(operation_id = "drop_outbox_email", post, path = "/api/v1/outbox/{id}/drop", tag = "outbox", security(("bearer" = [])),
    params(("id" = String, Path, description = "The email's id")),
    responses(
        (status = 200, description = "Dropped", body = OutboxEmail),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such email", body = ErrorBody),
        (status = 409, description = "The email is being sent, sent or dropped", body = ErrorBody),
    ))]
pub async fn drop_held(
    Admin(caller): Admin,
    id: PathId<ids::Email>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let actor = caller.actor();
    let email = with_conn(&state, move |conn, _| {
        Ok(outbox::restored::drop_email(conn, &id, &actor)?)
    })
    .await?;
    tracing::info!(email = %email.id, by = %caller.actor(), "email dropped");
    Ok(HttpResponse::Ok().json(email))
}

/// How many held emails a bulk change moved.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldChange {
    /// `send` (queued to be sent now) or `drop`.
    pub change: &'static str,
    pub emails: usize,
}

/// Sends every held email after all (a restore held them: they may have gone out
/// already). Audited. Admin only.
#[utoipa::path(operation_id = "send_held_emails", post, path = "/api/v1/outbox/send-held", tag = "outbox", security(("bearer" = [])),
    responses(
        (status = 200, description = "Queued to be sent now", body = HeldChange),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn send_held(
    Admin(caller): Admin,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    let emails = with_conn(&state, move |conn, _| {
        Ok(outbox::restored::release_held(conn, &actor)?)
    })
    .await?;
    tracing::info!(emails, by = %caller.actor(), "held emails queued to be sent");
    Ok(HttpResponse::Ok().json(HeldChange {
        change: "send",
        emails,
    }))
}

/// Drops every held email. Audited. Admin only.
#[utoipa::path(operation_id = "drop_held_emails", post, path = "/api/v1/outbox/drop-held", tag = "outbox", security(("bearer" = [])),
    responses(
        (status = 200, description = "Dropped", body = HeldChange),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn drop_all_held(
    Admin(caller): Admin,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    let emails = with_conn(&state, move |conn, _| {
        Ok(outbox::restored::drop_all_held(conn, &actor)?)
    })
    .await?;
    tracing::info!(emails, by = %caller.actor(), "held emails dropped");
    Ok(HttpResponse::Ok().json(HeldChange {
        change: "drop",
        emails,
    }))
}

/// What waits to leave coe, in each table of the one delivery queue: emails, chat
/// notices and tracker jobs, by state, with the oldest still to be sent. Admin only.
#[utoipa::path(operation_id = "queue_waiting", get, path = "/api/v1/queue", tag = "outbox", security(("bearer" = [])),
    responses(
        (status = 200, description = "Emails, chat notices and tracker jobs, in that order", body = [Waiting]),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn waiting(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let figures = with_conn(&state, |conn, _| Ok(queue::waiting(conn)?)).await?;
    Ok(HttpResponse::Ok().json(figures))
}
