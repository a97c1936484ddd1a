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
    /// When the inspection gauges were last computed; they are costly on big databases,
    /// so scrapes within `INSPECTION_MAX_AGE` reuse them.
    inspected_at: Mutex<Option<Instant>>,
}

/// How long the inspection gauges are reused between scrapes.
const INSPECTION_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for Metrics {
    fn default() -> Self {
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
        Metrics {
            registry: Mutex::new(registry),
            requests,
            latency,
            inspection,
            inspected_at: Mutex::new(None),
        }
    }
}

impl Metrics {
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

/// Middleware: counts and times each request, and logs it (method, route, status,
/// latency; never the query string or headers, which may carry secrets).
pub async fn observe_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let start = Instant::now();
    let method = method_label(req.method());
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let result = next.call(req).await;
    let elapsed = start.elapsed();
    let (status, route) = match &result {
        Ok(res) => (
            res.status().as_u16(),
            res.request()
                .match_pattern()
                .unwrap_or_else(|| "unmatched".to_owned()),
        ),
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
    if status >= 500 {
        tracing::error!(%method, %route, status, latency_ms, "request");
    } else {
        tracing::info!(%method, %route, status, latency_ms, "request");
    }
    result
}

/// `GET /metrics`: request metrics, and the inspection figures refreshed from the
/// database (left as they were when it cannot be reached).
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    if state.metrics.inspection_is_stale() {
        match with_conn(&state, crate::http::api::stats::current).await {
            Ok(stats) => state.metrics.set_inspection(&stats),
            Err(e) => tracing::warn!(error = %e, "cannot refresh the inspection gauges"),
        }
    }
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
