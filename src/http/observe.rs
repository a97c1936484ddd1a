//! Every request observed: its id (`X-Request-Id`), its log line, its count and time in
//! the metrics (`Metrics`); and `GET /metrics`, where they are read.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use prometheus_client::metrics::gauge::Gauge;

use crate::http::state::{with_conn, AppState};

/// A request method as a metric label: the standard ones by name, any extension
/// method as `other`, so a client cannot make up labels without end.
fn method_label(method: &actix_web::http::Method) -> String {
    use actix_web::http::Method;
    let known = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::TRACE,
        Method::CONNECT,
    ];
    if known.contains(method) {
        method.as_str().to_owned()
    } else {
        "other".to_owned()
    }
}

/// The header that carries a request's id: taken from a trusted proxy (so that its
/// log and ours name the same request), otherwise made here; always answered.
pub const REQUEST_ID: &str = "x-request-id";

/// A request id from a trusted proxy, if it is one we may log and echo as it is: 1–64
/// letters, digits, `-`, `_`, `.` or `:`.
fn forwarded_request_id(req: &actix_web::HttpRequest, trusted: bool) -> Option<String> {
    if !trusted {
        return None;
    }
    let id = req.headers().get(REQUEST_ID)?.to_str().ok()?;
    let ok = (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    ok.then(|| id.to_owned())
}

/// Warns, once per process, that a request carried `X-Forwarded-For` from an address
/// `auth.trusted_proxies` does not name: behind a proxy that is not listed, every
/// client has the proxy's address, and they share the sign-in rate limits.
fn warn_untrusted_forwarding(req: &actix_web::HttpRequest, trusted: bool) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if trusted || !req.headers().contains_key("x-forwarded-for") {
        return;
    }
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            peer = %req.peer_addr().map_or_else(|| "unknown".to_owned(), |a| a.ip().to_string()),
            "a request carries X-Forwarded-For from an address auth.trusted_proxies does not \
             name: its header is ignored, so behind a reverse proxy every client has the proxy's \
             address (and all share the sign-in rate limits); add the proxy's address to \
             auth.trusted_proxies (docs/operations.md, Reverse proxy). Said once."
        );
    }
}

/// Middleware: gives each request an id (`X-Request-Id`, answered on the response and
/// on every log line of the request's span), counts and times it, and logs it
/// (method, route, status, latency, client address; never the query string or
/// headers, which may carry secrets).
pub async fn observe_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    use tracing::Instrument;
    let start = Instant::now();
    let method = method_label(req.method());
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let proxies = state
        .as_ref()
        .map(|s| s.proxies.clone())
        .unwrap_or_default();
    let trusted = req
        .peer_addr()
        .is_some_and(|a| proxies.iter().any(|n| n.contains(&a.ip())));
    warn_untrusted_forwarding(req.request(), trusted);
    let client = crate::http::session::client_ip(req.request(), &proxies);
    let id = forwarded_request_id(req.request(), trusted)
        .unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string());
    let span = tracing::info_span!("request", id = %id);
    // Counted while it runs, and no longer once answered or dropped (a client gone).
    let _in_flight = state
        .as_ref()
        .map(|s| InFlight::begin(s.metrics.in_flight()));
    let mut result = next.call(req).instrument(span.clone()).await;
    let elapsed = start.elapsed();
    let (status, route) = match &mut result {
        Ok(res) => {
            if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&id) {
                res.headers_mut().insert(
                    actix_web::http::header::HeaderName::from_static(REQUEST_ID),
                    value,
                );
            }
            (
                res.status().as_u16(),
                res.request()
                    .match_pattern()
                    .unwrap_or_else(|| "unmatched".to_owned()),
            )
        }
        Err(e) => (
            e.as_response_error().status_code().as_u16(),
            "unmatched".to_owned(),
        ),
    };
    if let Some(state) = state {
        state
            .metrics
            .observe(&method, &route, status, elapsed.as_secs_f64());
    }
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    let _entered = span.enter();
    if status >= 500 {
        tracing::error!(%method, %route, status, latency_ms, %client, "request");
    } else {
        tracing::info!(%method, %route, status, latency_ms, %client, "request");
    }
    result
}

/// One request counted in `http_requests_in_flight` until dropped.
struct InFlight(Gauge);

impl InFlight {
    fn begin(gauge: &Gauge) -> InFlight {
        gauge.inc();
        InFlight(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// `GET /metrics`: request metrics, readiness as `/readyz` decides it, and the
/// inspection figures refreshed from the database (left as they were when it cannot be
/// reached). With `metrics.token`, only
/// for `Authorization: Bearer <token>` (compared in constant time).
pub async fn metrics(req: actix_web::HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(token) = &state.settings.metrics.token {
        use subtle::ConstantTimeEq;
        let presented = req
            .headers()
            .get(actix_web::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        let ok: bool = presented.as_bytes().ct_eq(token.expose().as_bytes()).into();
        if !ok {
            return actix_web::ResponseError::error_response(
                &crate::error::ApiError::Unauthorized(
                    "/metrics needs `Authorization: Bearer` with metrics.token".into(),
                ),
            );
        }
    }
    // Readiness first, as `/readyz` decides it. With every connection in use, the
    // database's figures are not read (each would wait for a connection as long again):
    // they stay as the last scrape left them.
    let shared = state.clone();
    let not_ready = web::block(move || crate::http::health::readiness(&shared).err())
        .await
        .unwrap_or(Some(crate::http::health::NotReady::Unreachable));
    state
        .metrics
        .set_readiness(not_ready.map(crate::http::health::NotReady::reason));
    let exhausted = not_ready == Some(crate::http::health::NotReady::PoolExhausted);
    if !exhausted && state.metrics.inspection_is_stale() {
        match with_conn(&state, |conn, state| {
            Ok(crate::services::figures::stats::inspect::current(
                conn,
                state.env(),
                &state.live_figures,
            )?)
        })
        .await
        {
            Ok(stats) => state.metrics.set_inspection(&stats),
            Err(e) => tracing::warn!(error = %e, "cannot refresh the inspection gauges"),
        }
    }
    // Cheap (four indexed queries): read at every scrape, as an alert wants them.
    if !exhausted {
        match with_conn(&state, |conn, state| {
            Ok(crate::services::figures::stats::operator::figures(
                conn,
                state.env(),
            )?)
        })
        .await
        {
            Ok(figures) => state.metrics.set_operator(Some(&figures)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the database for /metrics");
                state.metrics.set_operator(None);
            }
        }
    }
    state.metrics.set_pool(state.pool.state());
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(state.metrics.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_methods_share_one_label() {
        use actix_web::http::Method;
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let made_up = Method::from_bytes(b"BREW-4711").expect("a method");
        assert_eq!(method_label(&made_up), "other");
    }
}
