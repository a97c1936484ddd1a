//! Builds the actix application from `Settings` and binds it, on any port (0 in tests).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::{from_fn, ErrorHandlers};
use actix_web::{web, App, HttpServer};

use crate::config::Settings;
use crate::db::{self, DbPool};
use crate::email::{EmailTemplates, TemplateError};
use crate::error::{render_foreign_error, ApiError};
use crate::http::{self, extract::BodyLimit, metrics::Metrics, state::AppState};
use crate::services::coe::actions::totals_cache::TotalsCache;
use crate::services::intake::sns::{HttpsConfirmer, SubscriptionConfirmer};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    EmailTemplates(#[from] TemplateError),
    #[error("{0}")]
    Pages(String),
    #[error("auth.oidc: {0}")]
    Oidc(String),
    #[error("the key that seals coe's secrets: {0}")]
    Secrets(#[from] crate::secrets::KeyError),
    #[error(transparent)]
    Connections(#[from] crate::services::connections::ConnectionsError),
    #[error("cannot start the ingest writer: {0}")]
    Writer(std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

/// What `Application::build` does about the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrations {
    /// Apply pending migrations (refusing a database a newer version migrated).
    Apply,
    /// Apply none; refuse to start unless the schema is exactly this version's
    /// (`serve --no-migrate`, for operators who migrate as a step of its own).
    RequireCurrent,
}

/// A bound, not yet running, HTTP server.
pub struct Application {
    port: u16,
    server: Server,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    pool: DbPool,
    settings: Arc<Settings>,
    runtime: crate::services::Runtime,
    metrics: Arc<Metrics>,
    delivery_waker: crate::services::outbound::outbox::DeliveryWaker,
    group_commit: Arc<crate::services::intake::ingest::writer::GroupCommit>,
    /// `metrics.listen`'s own server (`/metrics`, `/healthz`, `/readyz` only) and the
    /// port it bound.
    metrics_server: Option<(u16, Server)>,
}

/// Binds `metrics.listen`: a second, small server that answers `/metrics`, `/healthz`
/// and `/readyz` only (everything else 404), so that Prometheus on another host can
/// scrape every replica while `listen` stays on loopback behind the proxy.
fn metrics_listener(
    address: &str,
    state: web::Data<AppState>,
    shutdown: u64,
) -> Result<(u16, Server), StartupError> {
    let bind_error = |source| StartupError::Bind {
        addr: format!("{address} (metrics.listen)"),
        source,
    };
    let listener = TcpListener::bind(address).map_err(bind_error)?;
    let port = listener.local_addr().map_err(bind_error)?.port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .configure(http::routes::configure_metrics_listener)
            .default_service(web::to(|| async {
                actix_web::HttpResponse::NotFound()
                    .content_type("text/plain; charset=utf-8")
                    .body("metrics.listen answers /metrics, /healthz and /readyz only\n")
            }))
    })
    .workers(1)
    .disable_signals()
    .shutdown_timeout(shutdown)
    .listen(listener)
    .map_err(bind_error)?
    .run();
    Ok((port, server))
}

impl Application {
    /// Opens the database, applies pending migrations (or, with
    /// `Migrations::RequireCurrent`, checks there are none), starts SQLite's integrity
    /// check in the background and binds `settings.listen`.
    pub async fn build(
        settings: Settings,
        migrations: Migrations,
    ) -> Result<Application, StartupError> {
        let database = settings.database.clone();
        let url = settings.database_url();
        let pool = web::block(move || -> Result<DbPool, db::DbError> {
            // Migrated on a connection of its own before the pool opens any: on a new
            // SQLite file the pool's would open while the migration holds the write
            // lock, wait for it, and be logged as an outage.
            let mut conn = db::open_one(&database)?;
            match migrations {
                Migrations::Apply => {
                    let applied = db::migrate(&mut conn)?;
                    if !applied.is_empty() {
                        tracing::info!(migrations = ?applied, "applied migrations");
                    }
                }
                Migrations::RequireCurrent => db::require_current(&mut conn)?,
            }
            if !db::size::can_give_back(&mut conn).unwrap_or(true) {
                tracing::info!(
                    "this SQLite database was made before it could shrink: the space events \
                     dropped after events.keep_days leave is reused, not given back; run \
                     `coe vacuum` once with coe stopped to make it shrink from then on"
                );
            }
            drop(conn);
            db::connect(&database)
        })
        .await
        .map_err(|e| db::DbError::Connect(e.to_string()))?
        .map_err(|e| e.explained(&url))?;
        Self::with_pool(settings, pool)
    }

    /// Binds `settings.listen` over an already migrated pool.
    pub fn with_pool(settings: Settings, pool: DbPool) -> Result<Application, StartupError> {
        Self::with_parts(settings, pool, Arc::new(HttpsConfirmer))
    }

    /// Binds `settings.listen` with the given outside dependencies.
    pub fn with_parts(
        settings: Settings,
        pool: DbPool,
        sns: Arc<dyn SubscriptionConfirmer>,
    ) -> Result<Application, StartupError> {
        let listener =
            TcpListener::bind(&settings.listen).map_err(|source| StartupError::Bind {
                addr: settings.listen.clone(),
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| StartupError::Bind {
                addr: settings.listen.clone(),
                source,
            })?
            .port();
        let template = Arc::new(settings.template()?);
        // The key is read (for a SQLite file, made) at start, so that a malformed one
        // stops coe here, by name, not when a secret is first sealed. A key file that
        // cannot be made (the database's folder is missing or read-only) does not stop
        // it: /readyz reports the database, and sealing refuses until the file can be.
        let keyring = match crate::secrets::Keyring::load(&settings) {
            Ok(keyring) => {
                tracing::debug!(key = ?keyring, "secret key");
                keyring
            }
            Err(e @ crate::secrets::KeyError::NotMade { .. }) => {
                tracing::warn!(error = %e, "no key to seal secrets with");
                None
            }
            Err(e) => return Err(e.into()),
        };
        // The connections kept in coe are read, their secrets opened and all checked
        // with the settings file's: a name in both, or a secret sealed with a key coe was
        // not given, stops coe here, by name.
        let connections = match db::checkout(&pool) {
            Ok(mut conn) => {
                crate::services::connections::LiveConnections::open(&settings, keyring, &mut conn)?
            }
            Err(e) => {
                // The database is down: coe starts (`/readyz` says why) with the settings
                // file's connections, and its watch reads the others once it answers.
                tracing::warn!(error = %e, "the connections kept in coe are read once the database answers");
                crate::services::connections::LiveConnections::unread(&settings, keyring)
            }
        };
        let emails = Arc::new(EmailTemplates::load(
            settings.email.templates_dir.as_deref(),
            &settings.public_url,
        )?);
        let workers = settings.server.workers;
        let shutdown = settings.server.shutdown_timeout_secs;
        let limit = settings.server.max_body_bytes;
        let header_timeout = std::time::Duration::from_secs(settings.server.header_timeout_secs);
        let body_timeout = std::time::Duration::from_secs(settings.server.body_timeout_secs);
        let settings = Arc::new(settings);
        let runtime = crate::services::Runtime {
            settings: settings.clone(),
            template: template.clone(),
            emails: emails.clone(),
            connections: connections.clone(),
        };
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let delivery_waker = crate::services::outbound::outbox::DeliveryWaker::default();
        let group_commit = Arc::new(
            crate::services::intake::ingest::writer::GroupCommit::start(
                &settings.database,
                pool.clone(),
                runtime.clone(),
                delivery_waker.clone(),
            )
            .map_err(StartupError::Writer)?,
        );
        let metrics = Arc::new(Metrics::new(settings.database_url().backend()));
        metrics.with_registry(|registry| {
            registry.register(
                "ingest_batch_deliveries",
                "Deliveries written per transaction (group commit)",
                group_commit.batch_sizes(),
            )
        });
        let state = web::Data::new(AppState {
            settings: settings.clone(),
            pool: pool.clone(),
            metrics: metrics.clone(),
            sns,
            template: template.clone(),
            emails: emails.clone(),
            connections,
            pages: http::pages::templates::PageTemplates::load().map_err(StartupError::Pages)?,
            proxies: Arc::new(settings.auth.proxies()),
            oidc: crate::oidc::Provider::from_settings(&settings)
                .map_err(StartupError::Oidc)?
                .map(Arc::new),
            group_commit: group_commit.clone(),
            board_totals: TotalsCache::new(256),
            action_counts: TotalsCache::new(1_024),
            live_figures: TotalsCache::new(4),
            token_failures: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(std::time::Duration::from_secs(60))
                .build(),
            known_tokens: http::known_tokens::KnownTokens::new(),
            delivery_waker: delivery_waker.clone(),
            searches: Arc::new(tokio::sync::Semaphore::new(
                settings.server.searches_at_once,
            )),
            scim_turns: Arc::new(tokio::sync::Semaphore::new(settings.scim.requests_at_once)),
            stopping: stopping.clone(),
        });
        let metrics_server = match &settings.metrics.listen {
            Some(address) => Some(metrics_listener(address, state.clone(), shutdown)?),
            None => None,
        };
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(BodyLimit(limit))
                .app_data(http::deadline::BodyTimeout(body_timeout))
                .app_data(web::PayloadConfig::new(limit))
                .app_data(web::FormConfig::default().limit(limit))
                .app_data(web::PathConfig::default().error_handler(http::path_error))
                .app_data(web::QueryConfig::default().error_handler(http::page_query_error))
                .configure(http::routes::configure)
                .configure(http::pages::configure)
                .default_service(web::to(not_found))
                .wrap(from_fn(http::bearer::authenticate_first))
                .wrap(from_fn(http::deadline::body_deadline))
                .wrap(ErrorHandlers::new().default_handler(render_foreign_error))
                // Pages and JSON gzipped for a client that accepts it: a COE page is
                // tens of kilobytes of repeated markup.
                .wrap(actix_web::middleware::Compress::default())
                .wrap(from_fn(http::observe::observe_requests))
        })
        .client_request_timeout(header_timeout)
        .disable_signals()
        .shutdown_timeout(shutdown);
        if workers > 0 {
            server = server.workers(workers);
        }
        let server = server
            .listen(listener)
            .map_err(|source| StartupError::Bind {
                addr: format!("port {port}"),
                source,
            })?
            .run();
        Ok(Application {
            port,
            server,
            metrics_server,
            stopping,
            pool,
            settings,
            runtime,
            metrics,
            delivery_waker,
            group_commit,
        })
    }

    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    /// The settings, the COE template and the email templates the app runs with.
    pub fn runtime(&self) -> &crate::services::Runtime {
        &self.runtime
    }

    /// The bell the delivery job answers (`jobs::serve` connects it).
    pub fn delivery_waker(&self) -> &crate::services::outbound::outbox::DeliveryWaker {
        &self.delivery_waker
    }

    /// The metrics `/metrics` serves, for other parts of the process to add theirs.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port `metrics.listen` bound, when set.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics_server.as_ref().map(|(port, _)| *port)
    }

    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    /// A handle to stop the server (gracefully: in-flight requests finish).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Set at SIGTERM, while the server drains (`stop_on_signals`).
    pub fn stopping(&self) -> &Arc<std::sync::atomic::AtomicBool> {
        &self.stopping
    }

    /// Serves until stopped; then the ingest writers write what is queued and stop.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        // The metrics listener serves as long as the main server and stops with it.
        let metrics = self.metrics_server.map(|(_, server)| {
            let handle = server.handle();
            (handle, actix_web::rt::spawn(server))
        });
        let served = self.server.await;
        if let Some((handle, task)) = metrics {
            handle.stop(true).await;
            if let Ok(Err(e)) = task.await {
                tracing::warn!(error = %e, "the metrics listener stopped with an error");
            }
        }
        let writer = self.group_commit.clone();
        if let Err(e) = actix_web::rt::task::spawn_blocking(move || writer.stop()).await {
            tracing::error!(error = %e, "stopping the ingest writers failed");
        }
        served
    }
}

/// 404: a page for a browser outside the API, the API's JSON error otherwise.
async fn not_found(req: actix_web::HttpRequest) -> Result<actix_web::HttpResponse, ApiError> {
    let browser = req
        .headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if browser && !req.path().starts_with("/api/") {
        use actix_web::ResponseError;
        return Ok(http::pages::error::PageError::NotFound(format!(
            "there is no page at {}",
            req.path()
        ))
        .error_response());
    }
    Err(ApiError::NotFound(format!(
        "no such resource: {} {}",
        req.method(),
        req.path()
    )))
}

/// Stops the server gracefully on SIGTERM or SIGINT (Ctrl-C): first it drains for
/// `drain` (`/readyz` answers 503, `stopping` set, everything else served as before;
/// a second signal ends the wait), then it closes its listener and gives requests in
/// flight `grace` to finish. (SIGHUP — a closed terminal, or an operator expecting a
/// reload — is logged and ignored from the start of `serve`: `ignore_hangups`.)
pub fn stop_on_signals(
    handle: ServerHandle,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    drain: Duration,
    grace: Duration,
) {
    actix_web::rt::spawn(async move {
        next_signal().await;
        stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        if !drain.is_zero() {
            let again = next_signal();
            tracing::info!(
                drain_secs = drain.as_secs(),
                "stopping: /readyz answers 503 while requests are still served; then the \
                 listener closes"
            );
            tokio::select! {
                _ = actix_web::rt::time::sleep(drain) => {}
                _ = again => tracing::info!("a second signal: no more draining"),
            }
        }
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: finishing in-flight requests"
        );
        handle.stop(true).await;
    });
}

#[cfg(unix)]
fn next_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    // Listened for from now, not from the first poll: a signal that comes in between
    // is not missed.
    let term = signal(SignalKind::terminate())
        .map_err(|e| tracing::warn!(error = %e, "cannot listen for SIGTERM"))
        .ok();
    async move {
        match term {
            Some(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// Replaces SIGHUP's default action (terminate) with a log line. Called first thing
/// in `serve` (inside the runtime), so that a hang-up during start-up (migrations)
/// does not end the process either.
#[cfg(unix)]
pub fn ignore_hangups() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(mut hangups) => {
            actix_web::rt::spawn(async move {
                while hangups.recv().await.is_some() {
                    tracing::info!(
                        "SIGHUP ignored: settings are read at start only; restart coe to apply \
                         new ones (SIGTERM drains requests in flight first)"
                    );
                }
            });
        }
        Err(e) => tracing::warn!(error = %e, "cannot listen for SIGHUP"),
    }
}

/// SIGHUP exists on Unix only.
#[cfg(not(unix))]
pub fn ignore_hangups() {}

#[cfg(not(unix))]
fn next_signal() -> impl std::future::Future<Output = ()> {
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
