//! Request metrics and request logs, recorded by one middleware; `/metrics` serves
//! them in the Prometheus (OpenMetrics) text format.

use std::sync::Mutex;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::http::state::{with_conn, AppState};

/// Label set of one request. `route` is the matched pattern (`/api/v1/tokens/{name}`),
/// never the raw path, so that ids do not multiply the series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    database: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TeamLabels {
    team: String,
}

/// The inspection figures as gauges, refreshed at each scrape.
#[derive(Default)]
struct InspectionGauges {
    actions_open: Gauge,
    actions_overdue: Gauge,
    actions_overdue_by_team: Family<TeamLabels, Gauge>,
    coes: Family<StateLabels, Gauge>,
    coes_waiting_for_review: Gauge,
    drafts_past_deadline: Gauge,
    emails: Family<StateLabels, Gauge>,
}

/// The service's metrics registry.
pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RequestLabels, Histogram>,
    inspection: InspectionGauges,
    /// The pool's connections by state (`in_use`, `idle`), read at each scrape.
    connections: Family<StateLabels, Gauge>,
    /// Requests begun and not yet answered (what a graceful stop waits for).
    in_flight: Gauge,
    /// When the inspection gauges were last computed; they are costly on big databases,
    /// so scrapes within `INSPECTION_MAX_AGE` reuse them.
    inspected_at: Mutex<Option<Instant>>,
}

/// How long the inspection gauges are reused between scrapes.
const INSPECTION_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30);

impl Metrics {
    /// The registry with every metric of the service, for a process on `database`.
    pub fn new(database: crate::config::database::Backend) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            // 1 ms … ~16 s
            Histogram::new(exponential_buckets(0.001, 2.0, 15))
        });
        let mut registry = Registry::with_prefix("coe");
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer HTTP requests, by method, route and status",
            latency.clone(),
        );
        let inspection = InspectionGauges::default();
        registry.register(
            "actions_open",
            "Corrective actions open or in progress",
            inspection.actions_open.clone(),
        );
        registry.register(
            "actions_overdue",
            "Corrective actions overdue",
            inspection.actions_overdue.clone(),
        );
        registry.register(
            "actions_overdue_by_team",
            "Overdue corrective actions by the owners' team",
            inspection.actions_overdue_by_team.clone(),
        );
        registry.register("coes", "COEs by state", inspection.coes.clone());
        registry.register(
            "coes_waiting_for_review",
            "COEs in review",
            inspection.coes_waiting_for_review.clone(),
        );
        registry.register(
            "coes_drafts_past_deadline",
            "COE drafts past their writeup deadline",
            inspection.drafts_past_deadline.clone(),
        );
        registry.register(
            "emails",
            "Emails in the outbox by state (pending, sending, sent, failed)",
            inspection.emails.clone(),
        );
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                database: database.to_string(),
            })
            .set(1);
        registry.register(
            "build_info",
            "The running version of coe and its database (always 1)",
            build,
        );
        let connections = Family::<StateLabels, Gauge>::default();
        registry.register(
            "db_connections",
            "This process's database connections by state (in_use, idle)",
            connections.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "http_requests_in_flight",
            "HTTP requests this process has begun and not yet answered",
            in_flight.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
            latency,
            inspection,
            connections,
            in_flight,
            inspected_at: Mutex::new(None),
        }
    }

    /// Sets the pool's gauges from its state now.
    pub fn set_pool(&self, state: diesel::r2d2::State) {
        let idle = i64::from(state.idle_connections);
        let open = i64::from(state.connections);
        for (name, n) in [("in_use", open - idle), ("idle", idle)] {
            self.connections
                .get_or_create(&StateLabels {
                    state: name.to_owned(),
                })
                .set(n);
        }
    }
    /// A registry other modules can add their metrics to.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut registry)
    }

    fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let labels = RequestLabels {
            method: method.to_owned(),
            route: route.to_owned(),
            status,
        };
        self.requests.get_or_create(&labels).inc();
        self.latency.get_or_create(&labels).observe(seconds);
    }

    /// Whether the inspection gauges are due for a refresh.
    pub fn inspection_is_stale(&self) -> bool {
        let at = self.inspected_at.lock().unwrap_or_else(|p| p.into_inner());
        at.is_none_or(|t| t.elapsed() >= INSPECTION_MAX_AGE)
    }

    /// Sets the inspection gauges from fresh figures.
    pub fn set_inspection(&self, stats: &crate::services::stats::Stats) {
        *self.inspected_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let g = &self.inspection;
        g.actions_open.set(stats.actions.open);
        g.actions_overdue.set(stats.actions.overdue);
        g.actions_overdue_by_team.clear();
        for (team, figures) in &stats.actions_by_team {
            g.actions_overdue_by_team
                .get_or_create(&TeamLabels { team: team.clone() })
                .set(figures.overdue);
        }
        for (state, n) in &stats.coes_by_state {
            g.coes
                .get_or_create(&StateLabels {
                    state: state.clone(),
                })
                .set(*n);
        }
        g.coes_waiting_for_review
            .set(i64::try_from(stats.waiting_for_review.len()).unwrap_or(i64::MAX));
        g.drafts_past_deadline
            .set(i64::try_from(stats.drafts_past_deadline.len()).unwrap_or(i64::MAX));
        for (state, n) in &stats.emails_by_state {
            g.emails
                .get_or_create(&StateLabels {
                    state: state.clone(),
                })
                .set(*n);
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        out
    }
}

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
        .map(|s| InFlight::begin(&s.metrics.in_flight));
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

/// `GET /metrics`: request metrics, and the inspection figures refreshed from the
/// database (left as they were when it cannot be reached). With `metrics.token`, only
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
    if state.metrics.inspection_is_stale() {
        match with_conn(&state, |conn, state| {
            Ok(crate::services::stats::inspect::current(
                conn,
                &state.settings,
                &state.live_figures,
            )?)
        })
        .await
        {
            Ok(stats) => state.metrics.set_inspection(&stats),
            Err(e) => tracing::warn!(error = %e, "cannot refresh the inspection gauges"),
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
