//! Request metrics and request logs, recorded by one middleware; `/metrics` serves
//! them in the Prometheus (OpenMetrics) text format.

use std::sync::Mutex;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutageLabels {
    measure: String,
    severity: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChatMoveLabels {
    platform: String,
    r#move: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    source: String,
    reason: String,
}

/// What an operator pages on (`services::figures::stats::operator`), read at every scrape.
#[derive(Default)]
struct OperatorGauges {
    email_oldest_waiting: Gauge,
    chat_oldest_waiting: Gauge,
    email_last_sent: Gauge,
    database_bytes: Gauge,
    disk_free_bytes: Gauge,
    database_up: Gauge,
    /// What `/readyz` answers (`http::health::readiness`), asked at each scrape.
    ready: Gauge,
    not_ready: Family<ReasonLabels, Gauge>,
}

/// The inspection figures as gauges, refreshed at each scrape.
struct InspectionGauges {
    actions_open: Gauge,
    actions_overdue: Gauge,
    actions_past_target: Gauge,
    actions_overdue_by_team: Family<TeamLabels, Gauge>,
    coes: Family<StateLabels, Gauge>,
    coes_waiting_for_review: Gauge,
    drafts_past_deadline: Gauge,
    emails: Family<StateLabels, Gauge>,
    /// The last four quarters' drill re-checks by how they stand.
    drill_rechecks: Family<StateLabels, Gauge>,
    /// How long the last four quarters' outages took, observed again at each refresh.
    outage_seconds: Family<OutageLabels, Histogram>,
}

/// The buckets of `coe_outage_duration_seconds`: a minute to 30 days.
const OUTAGE_BUCKETS: [f64; 13] = [
    60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 172800.0, 604800.0,
    1209600.0, 2592000.0,
];

impl Default for InspectionGauges {
    fn default() -> Self {
        InspectionGauges {
            actions_open: Gauge::default(),
            actions_overdue: Gauge::default(),
            actions_past_target: Gauge::default(),
            drill_rechecks: Family::default(),
            actions_overdue_by_team: Family::default(),
            coes: Family::default(),
            coes_waiting_for_review: Gauge::default(),
            drafts_past_deadline: Gauge::default(),
            emails: Family::default(),
            outage_seconds: Family::new_with_constructor(|| Histogram::new(OUTAGE_BUCKETS)),
        }
    }
}

/// Every `reason` of `coe_not_ready` (what `/readyz` says, `http::health`), each
/// exported: 1 for the current one, else 0.
pub const NOT_READY_REASONS: [&str; 7] = [
    "stopping",
    "unavailable",
    "pool_exhausted",
    "database_read_only",
    "disk_full",
    "database_locked",
    "database_corrupt",
];

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
    events_ingested: Family<SourceLabels, Counter>,
    events_refused: Family<RefusalLabels, Counter>,
    chat_moves: Family<ChatMoveLabels, Counter>,
    operator: OperatorGauges,
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
            "actions_past_target",
            "Corrective actions open or in progress past their priority's target",
            inspection.actions_past_target.clone(),
        );
        registry.register(
            "outage_duration_seconds",
            "How long the last four quarters' outages took, by measure (detect, mitigate and resolve from the start; approve from the resolution) and severity; refreshed whole at each inspection",
            inspection.outage_seconds.clone(),
        );
        registry.register(
            "actions_overdue_by_team",
            "Overdue corrective actions by the owners' team",
            inspection.actions_overdue_by_team.clone(),
        );
        registry.register("coes", "COEs by state", inspection.coes.clone());
        registry.register(
            "drill_rechecks",
            "Drill re-checks of fixes opened in the last four quarters, by state (waiting, proven, missed, confirmed, reopened, withdrawn)",
            inspection.drill_rechecks.clone(),
        );
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
            "Emails in the outbox by state (pending, sending, sent, failed, held, dropped)",
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
        let events_ingested = Family::<SourceLabels, Counter>::default();
        registry.register(
            "events_ingested",
            "Failure events this process stored, by source (api, alertmanager, grafana, …); \
             a re-delivery stores nothing",
            events_ingested.clone(),
        );
        let chat_moves = Family::<ChatMoveLabels, Counter>::default();
        registry.register(
            "chat_moves",
            "Moves people made from chat, by platform, move (report, follow_up, mine, done, \
             move_due, verify, send_back, link) and outcome (done, refused, repeated, \
             not_in_directory, failed)",
            chat_moves.clone(),
        );
        let events_refused = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "events_refused",
            "Event posts and webhooks this process refused, by source and reason (the error \
             code: unauthorized, malformed_json, invalid, payload_too_large, unavailable, \
             database_read_only, disk_full, database_locked, …)",
            events_refused.clone(),
        );
        let operator = OperatorGauges::default();
        registry.register(
            "email_oldest_waiting_seconds",
            "Age of the oldest email waiting to be sent (pending or being sent); 0 when none waits",
            operator.email_oldest_waiting.clone(),
        );
        registry.register(
            "chat_oldest_waiting_seconds",
            "Age of the oldest chat message waiting to be sent; 0 when none waits",
            operator.chat_oldest_waiting.clone(),
        );
        registry.register(
            "email_last_sent_timestamp_seconds",
            "When the last email was sent, by any replica (Unix time; 0 when none was)",
            operator.email_last_sent.clone(),
        );
        registry.register(
            "database_size_bytes",
            "The database's size (SQLite: its pages; PostgreSQL: pg_database_size)",
            operator.database_bytes.clone(),
        );
        if database == crate::config::database::Backend::Sqlite {
            registry.register(
                "database_disk_free_bytes",
                "Room left on the file system of the SQLite database",
                operator.disk_free_bytes.clone(),
            );
        }
        registry.register(
            "database_up",
            "1 when the last scrape could read the database, 0 when it could not",
            operator.database_up.clone(),
        );
        registry.register(
            "ready",
            "1 when this replica is ready (/readyz answers 200) at the scrape, 0 when not",
            operator.ready.clone(),
        );
        registry.register(
            "not_ready",
            "Why this replica is not ready at the scrape: 1 for the reason /readyz answers 503 \
             for (stopping, unavailable, pool_exhausted, database_read_only, disk_full, \
             database_locked, database_corrupt), 0 for the others",
            operator.not_ready.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            events_ingested,
            events_refused,
            chat_moves,
            operator,
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

    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
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
    pub fn set_inspection(&self, stats: &crate::services::figures::stats::Stats) {
        *self.inspected_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let g = &self.inspection;
        g.actions_open.set(stats.actions.open);
        g.actions_overdue.set(stats.actions.overdue);
        g.actions_past_target.set(stats.actions_past_target);
        g.outage_seconds.clear();
        for (measure, severity, minutes) in &stats.outage_times.samples {
            g.outage_seconds
                .get_or_create(&OutageLabels {
                    measure: (*measure).to_owned(),
                    severity: severity.clone(),
                })
                .observe(minutes * 60.0);
        }
        g.drill_rechecks.clear();
        for state in crate::domain::drill::RecheckState::ALL {
            let n = stats
                .drills
                .by_state
                .get(state.as_str())
                .copied()
                .unwrap_or(0);
            g.drill_rechecks
                .get_or_create(&StateLabels {
                    state: state.as_str().to_owned(),
                })
                .set(n);
        }
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

    /// Counts `n` events stored from `source`.
    pub fn ingested(&self, source: &str, n: usize) {
        self.events_ingested
            .get_or_create(&SourceLabels {
                source: source.to_owned(),
            })
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// Counts a move made from chat (`platform`, `what`) and how it ended.
    pub fn chat_move(&self, platform: &str, what: &str, outcome: &str) {
        self.chat_moves
            .get_or_create(&ChatMoveLabels {
                platform: platform.to_owned(),
                r#move: what.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// Counts a post from `source` refused for `reason` (the error's code).
    pub fn refused(&self, source: &str, reason: &str) {
        self.events_refused
            .get_or_create(&RefusalLabels {
                source: source.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Sets the operator's gauges; `None`: the database could not be read.
    pub fn set_operator(
        &self,
        figures: Option<&crate::services::figures::stats::operator::OperatorFigures>,
    ) {
        let g = &self.operator;
        let Some(f) = figures else {
            g.database_up.set(0);
            return;
        };
        let now = crate::domain::clock::now().naive_utc();
        let age =
            |t: Option<chrono::NaiveDateTime>| t.map_or(0, |t| (now - t).num_seconds().max(0));
        g.email_oldest_waiting.set(age(f.email_oldest_waiting));
        g.chat_oldest_waiting.set(age(f.chat_oldest_waiting));
        g.email_last_sent
            .set(f.email_last_sent.map_or(0, |t| t.and_utc().timestamp()));
        g.database_bytes.set(f.database_bytes);
        if let Some(free) = f.disk_free_bytes {
            g.disk_free_bytes
                .set(i64::try_from(free).unwrap_or(i64::MAX));
        }
        g.database_up.set(1);
    }

    /// Sets `coe_ready` and `coe_not_ready` from `reason` (one of
    /// `NOT_READY_REASONS`; `None`: ready).
    pub fn set_readiness(&self, reason: Option<&str>) {
        let g = &self.operator;
        g.ready.set(i64::from(reason.is_none()));
        for known in NOT_READY_REASONS {
            g.not_ready
                .get_or_create(&ReasonLabels {
                    reason: known.to_owned(),
                })
                .set(i64::from(reason == Some(known)));
        }
    }

    /// Requests begun and not yet answered (`observe::observe_requests` counts them).
    pub fn in_flight(&self) -> &Gauge {
        &self.in_flight
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
