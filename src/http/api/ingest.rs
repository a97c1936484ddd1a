//! Failure events in: `POST /api/v1/events` and `POST /api/v1/webhooks/{source}`.

use actix_web::http::header::{self, HeaderMap};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::secret::Secret;
use crate::db;
use crate::domain::Role;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::{authenticate, Ingest};
use crate::http::extract::read_body;
use crate::http::state::AppState;
use crate::ingest::cloudwatch::is_sns_url;
use crate::ingest::generic::{self, EventInput};
use crate::ingest::signature::{self, SignatureError};
use crate::ingest::{self, Source};
use crate::services::intake::ingest::{Delivery, StoredEvent};

/// The answer to a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct IngestResponse {
    /// The stored delivery; absent when nothing in it was new.
    pub delivery_id: Option<String>,
    /// True when every event had been stored before: nothing new was written.
    pub duplicate: bool,
    /// One entry per event in the delivery, in order.
    pub events: Vec<StoredEvent>,
    /// Why the delivery was deliberately ignored (an event type not about failures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    /// True when an SNS subscription was confirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_confirmed: Option<bool>,
}

impl IngestResponse {
    fn nothing(ignored: Option<String>, confirmed: Option<bool>) -> Self {
        IngestResponse {
            delivery_id: None,
            duplicate: false,
            events: Vec::new(),
            ignored,
            subscription_confirmed: confirmed,
        }
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The sender's delivery id, when it sends one.
fn delivery_key(headers: &HeaderMap) -> Option<String> {
    header_str(headers, "x-webhook-id")
        .or_else(|| header_str(headers, "x-amz-sns-message-id"))
        .map(str::to_owned)
}

/// Bodies up to this size are parsed on the async worker that received them (tens of
/// microseconds); larger ones on the blocking pool, so that a body of up to
/// `webhooks.max_body_bytes` never holds up the requests a worker answers.
const PARSE_INLINE_BYTES: usize = 64 * 1024;

/// Runs `parse` (of a body of `len` bytes) where `PARSE_INLINE_BYTES` says.
async fn parse_off_the_workers<T: Send + 'static>(
    len: usize,
    parse: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    if len <= PARSE_INLINE_BYTES {
        Ok(parse())
    } else {
        Ok(web::block(parse).await?)
    }
}

fn respond(outcome: IngestResponse) -> HttpResponse {
    let status = if outcome.duplicate || outcome.events.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    HttpResponse::build(status).json(outcome)
}

/// Posts failure events in `coe`'s own shape: one object or an array of up to 1,000.
/// Needs an `ingest` (or `admin`) token. Re-posting an event stores nothing new.
#[utoipa::path(operation_id = "post_events", post, path = "/api/v1/events", tag = "events", security(("bearer" = [])),
    request_body(content = Vec<EventInput>, description = "One event object, or an array of 1 to 1,000"),
    responses(
        (status = 202, description = "Stored; ids of the events and their incidents", body = IngestResponse),
        (status = 200, description = "Every event had been stored before; nothing new", body = IngestResponse),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "The token may not post events", body = ErrorBody),
        (status = 413, description = "Body over webhooks.max_body_bytes", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
pub async fn post_events(
    caller: Result<Ingest, ApiError>,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let answered = async {
        caller?;
        store_events(req, payload, &state).await
    }
    .await;
    counted(&state, "api", answered)
}

/// Counts what a post stored, or why it was refused, in `/metrics`.
fn counted(
    state: &AppState,
    source: &str,
    answered: Result<(HttpResponse, usize), ApiError>,
) -> Result<HttpResponse, ApiError> {
    match answered {
        Ok((response, stored)) => {
            state.metrics.ingested(source, stored);
            Ok(response)
        }
        Err(e) => {
            state.metrics.refused(source, e.code());
            Err(e)
        }
    }
}

async fn store_events(
    req: HttpRequest,
    payload: web::Payload,
    state: &web::Data<AppState>,
) -> Result<(HttpResponse, usize), ApiError> {
    let body = read_body(
        payload,
        state.settings.webhooks.max_body_bytes,
        "webhooks.max_body_bytes",
    )
    .await?;
    let content_type = header_str(req.headers(), header::CONTENT_TYPE.as_str()).map(str::to_owned);
    let key = delivery_key(req.headers());
    let severities = state.settings.severity.clone();
    let (events, body) = parse_off_the_workers(body.len(), move || -> Result<_, ApiError> {
        Ok((generic::parse(&body, &severities, db::now())?, body))
    })
    .await??;
    let delivery = Delivery {
        source: "api",
        key: key.as_deref(),
        content_type: content_type.as_deref(),
        body: &body,
    };
    let outcome = state.group_commit.write(delivery, events).await?;
    let stored = if outcome.duplicate {
        0
    } else {
        outcome.events.len()
    };
    Ok((
        respond(IngestResponse {
            delivery_id: outcome.delivery_id,
            duplicate: outcome.duplicate,
            events: outcome.events,
            ignored: None,
            subscription_confirmed: None,
        }),
        stored,
    ))
}

/// Receives a webhook exactly as the sender sends it. Sources: `alertmanager`,
/// `grafana`, `pagerduty`, `opsgenie`, `cloudwatch` (AWS SNS), `sentry`.
/// Authentication: the source's signature when a signing secret is configured for it,
/// otherwise an `ingest` token as bearer token or basic-auth password.
#[utoipa::path(operation_id = "receive_webhook", post, path = "/api/v1/webhooks/{source}", tag = "events", security(("bearer" = [])),
    params(("source" = String, Path, description = "alertmanager, grafana, pagerduty, opsgenie, cloudwatch or sentry")),
    request_body(content = Object, description = "The sender's own payload", content_type = "application/json"),
    responses(
        (status = 202, description = "Stored; ids of the events and their incidents", body = IngestResponse),
        (status = 200, description = "Nothing new: a re-delivery, an ignored event type, or an SNS handshake", body = IngestResponse),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or wrong token or signature; nothing stored", body = ErrorBody),
        (status = 403, description = "The token may not post events", body = ErrorBody),
        (status = 404, description = "Unknown source; the message lists the known ones", body = ErrorBody),
        (status = 413, description = "Body over webhooks.max_body_bytes", body = ErrorBody),
        (status = 422, description = "The payload lacks what this sender always sends", body = ErrorBody),
        (status = 502, description = "The SNS subscription could not be confirmed", body = ErrorBody),
    ))]
pub async fn receive_webhook(
    req: HttpRequest,
    source: web::Path<String>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let name = source.into_inner();
    let Some(source) = Source::parse(&name) else {
        // Not a source: not counted under a name anybody can choose.
        return Err(ApiError::NotFound(format!(
            "unknown webhook source `{}`; known sources: {}",
            name.escape_default(),
            Source::names()
        )));
    };
    let answered = receive(req, source, payload, &state).await;
    counted(&state, source.as_str(), answered)
}

async fn receive(
    req: HttpRequest,
    source: Source,
    payload: web::Payload,
    state: &web::Data<AppState>,
) -> Result<(HttpResponse, usize), ApiError> {
    let hooks = &state.settings.webhooks;
    let secret = match source {
        Source::Pagerduty => hooks.pagerduty_secret.as_ref().map(Secret::expose),
        Source::Grafana => hooks.grafana_secret.as_ref().map(Secret::expose),
        Source::Sentry => hooks.sentry_secret.as_ref().map(Secret::expose),
        _ => None,
    };
    if secret.is_none() {
        let caller = authenticate(&req, state.clone()).await?;
        caller.require(Role::Ingest)?;
    }
    let body = read_body(payload, hooks.max_body_bytes, "webhooks.max_body_bytes").await?;
    if let Some(secret) = secret {
        // Hashing a body of up to `webhooks.max_body_bytes` is CPU work: it runs on
        // the blocking pool, never on the async workers that answer every request.
        let headers = req.headers();
        let presented = match source {
            Source::Pagerduty => header_str(headers, "x-pagerduty-signature"),
            Source::Grafana => header_str(headers, "x-grafana-alerting-signature"),
            Source::Sentry => header_str(headers, "sentry-hook-signature"),
            _ => None,
        }
        .map(str::to_owned);
        let timestamp = header_str(headers, &hooks.grafana_timestamp_header).map(str::to_owned);
        let (secret, signed) = (secret.to_owned(), body.clone());
        let checked = web::block(move || match source {
            Source::Pagerduty => {
                signature::verify_pagerduty(&secret, &signed, presented.as_deref())
            }
            Source::Grafana => signature::verify_grafana(
                &secret,
                &signed,
                presented.as_deref(),
                timestamp.as_deref(),
                crate::domain::clock::now(),
            ),
            Source::Sentry => signature::verify_sentry(&secret, &signed, presented.as_deref()),
            _ => Ok(()),
        })
        .await?;
        checked.map_err(|e: SignatureError| ApiError::Unauthorized(e.to_string()))?;
    }
    let content_type = header_str(req.headers(), header::CONTENT_TYPE.as_str()).map(str::to_owned);
    let header_key = delivery_key(req.headers());
    let severities = state.settings.severity.clone();
    let (mut parsed, body) = parse_off_the_workers(body.len(), move || -> Result<_, ApiError> {
        Ok((ingest::parse(source, &body, &severities, db::now())?, body))
    })
    .await??;
    if !parsed.events.is_empty() {
        let key = header_key.or_else(|| parsed.delivery_id.clone());
        let delivery = Delivery {
            source: source.as_str(),
            key: key.as_deref(),
            content_type: content_type.as_deref(),
            body: &body,
        };
        let events = std::mem::take(&mut parsed.events);
        let outcome = state.group_commit.write(delivery, events).await?;
        let stored = if outcome.duplicate {
            0
        } else {
            outcome.events.len()
        };
        return Ok((
            respond(IngestResponse {
                delivery_id: outcome.delivery_id,
                duplicate: outcome.duplicate,
                events: outcome.events,
                ignored: None,
                subscription_confirmed: None,
            }),
            stored,
        ));
    }
    if let Some(url) = parsed.confirm_subscription {
        if !is_sns_url(&url) {
            return Err(ApiError::field(
                "SubscribeURL",
                "must be an https://sns.<region>.amazonaws.com/ address; it was not fetched",
            ));
        }
        let confirmer = state.sns.clone();
        web::block(move || confirmer.confirm(&url))
            .await?
            .map_err(|e| {
                ApiError::BadGateway(format!("cannot confirm the SNS subscription: {e}"))
            })?;
        tracing::info!("confirmed an SNS subscription");
        return Ok((respond(IngestResponse::nothing(None, Some(true))), 0));
    }
    Ok((respond(IngestResponse::nothing(parsed.ignored, None)), 0))
}
