//! What every handler can reach: the app's state, built once by `startup` and shared
//! by all workers.

use std::sync::Arc;

use actix_web::web;

use crate::config::Settings;
use crate::db::{DbConnection, DbPool};
use crate::domain::template::Template;
use crate::email::EmailTemplates;
use crate::error::ApiError;
use crate::http::metrics::Metrics;
use crate::services::coe::actions::totals_cache::TotalsCache;
use crate::services::intake::sns::SubscriptionConfirmer;

/// What every handler can reach.
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: DbPool,
    pub metrics: Arc<Metrics>,
    /// Confirms AWS SNS subscriptions (a fake in tests).
    pub sns: Arc<dyn SubscriptionConfirmer>,
    /// The COE template new COEs are created with.
    pub template: Arc<Template>,
    /// The email templates, compiled and checked at start-up.
    pub emails: Arc<EmailTemplates>,
    /// The chat channels and trackers in use: the settings file's and those kept in
    /// coe (`env().connections` reads them; a save refreshes them).
    pub connections: crate::services::connections::LiveConnections,
    /// The web pages' templates, compiled at start-up.
    pub pages: Arc<crate::http::pages::templates::PageTemplates>,
    /// The OpenID Provider people sign in through (`auth.mode = "oidc"`).
    pub oidc: Option<Arc<crate::oidc::Provider>>,
    /// `auth.trusted_proxies`, parsed.
    pub proxies: Arc<Vec<ipnet::IpNet>>,
    /// Writes deliveries with group commit (`services::intake::ingest::writer`).
    pub group_commit: Arc<crate::services::intake::ingest::writer::GroupCommit>,
    /// The overdue board's totals by filter, for views between two changes.
    pub board_totals: TotalsCache<Arc<crate::services::figures::board::Totals>>,
    /// Everyone's open and overdue figures (the dashboard, `/api/v1/stats`, `/metrics`).
    pub live_figures: crate::services::figures::stats::inspect::LiveCache,
    /// `/api/v1/actions` totals by filter.
    pub action_counts: TotalsCache<i64>,
    /// The hashes of the different unknown or revoked tokens each client address
    /// presented in the current minute (`auth.failed_tokens_per_client`).
    pub token_failures:
        moka::sync::Cache<String, Arc<std::sync::Mutex<std::collections::HashSet<String>>>>,
    /// Tokens looked up in the last second (`known_tokens::KNOWN_FOR`).
    pub known_tokens: crate::http::known_tokens::KnownTokens,
    /// Wakes the delivery worker when a request queued an email.
    pub delivery_waker: crate::services::outbound::outbox::DeliveryWaker,
    /// One permit per search that may run at once (`server.searches_at_once`).
    pub searches: Arc<tokio::sync::Semaphore>,
    /// One permit per SCIM request that may use the database at once
    /// (`scim.requests_at_once`).
    pub scim_turns: Arc<tokio::sync::Semaphore>,
    /// Set at SIGTERM: `/readyz` answers 503 while the server drains
    /// (`server.drain_secs`) before it closes its listener.
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl AppState {
    /// What the services need of the running service (`services::Env`).
    pub fn env(&self) -> crate::services::Env<'_> {
        crate::services::Env {
            settings: &self.settings,
            template: &self.template,
            emails: &self.emails,
            connections: self.connections.current(),
        }
    }

    /// `env` as owned parts, for work moved off the request's thread (`web::block`).
    pub fn runtime(&self) -> crate::services::Runtime {
        crate::services::Runtime {
            settings: self.settings.clone(),
            template: self.template.clone(),
            emails: self.emails.clone(),
            connections: self.connections.clone(),
        }
    }
}

/// A turn to search (`server.searches_at_once`), waited for as long as a search may
/// take; `503` when none came, so that searches never hold every pooled connection.
pub async fn search_turn(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    let wait = std::time::Duration::from_millis(state.settings.server.search_timeout_ms);
    match actix_web::rt::time::timeout(wait, state.searches.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(ApiError::Unavailable(
            "too many searches are running at once; search again in a moment".into(),
        )),
    }
}

/// Runs `work` on a pooled connection in actix's blocking pool: diesel blocks, and an
/// actix worker is a single-threaded runtime that must not. `work` gets the state too,
/// for settings and templates.
pub async fn with_conn<T: Send + 'static>(
    state: &web::Data<AppState>,
    work: impl FnOnce(&mut DbConnection, &AppState) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let state = state.clone();
    // The request's span (its id) on what the work logs, on the blocking thread.
    let span = tracing::Span::current();
    web::block(move || {
        let _request = span.enter();
        let mut conn = crate::db::checkout(&state.pool)?;
        let done = work(&mut conn, &state);
        state.delivery_waker.wake_if_queued();
        done
    })
    .await?
}

/// Runs `work`, which writes, where writes are cheapest: on SQLite in the writer's
/// next batch (`GroupCommit::submit`: one commit for every write that waited with
/// it, `work` in a savepoint of its own so that an error rolls back its writes
/// alone), answered once committed; on PostgreSQL, whose commits run side by side, in
/// a transaction of its own on a connection of the pool. Either way `work` runs in a
/// transaction and need not open one.
pub async fn with_write<T: Send + 'static>(
    state: &web::Data<AppState>,
    work: impl FnOnce(&mut DbConnection, &AppState) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if !state.group_commit.takes_work() {
        return with_conn(state, move |conn, state| {
            crate::db::write_transaction(conn, |conn| work(conn, state))
        })
        .await;
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let shared = state.clone();
    let span = tracing::Span::current();
    let job: crate::services::intake::ingest::writer::OrdinaryWrite = Box::new(move |conn| {
        let _request = span.enter();
        let done = crate::db::write_transaction(conn, |conn| work(conn, &shared));
        Box::new(move |failed| {
            let _ = reply.send(match failed {
                None => done,
                Some(error) => Err(error.into()),
            });
        })
    });
    if let Err((_, error)) = state.group_commit.submit(job) {
        return Err(error.into());
    }
    answer.await.map_err(|_| {
        ApiError::Unavailable(
            "the write was not finished (the service is stopping); try again".into(),
        )
    })?
}
