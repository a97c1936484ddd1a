//! What every handler can reach: the app's state, built once by `startup` and shared
//! by all workers.

use std::sync::Arc;

use crate::config::Settings;
use crate::db::DbPool;
use crate::domain::template::Template;
use crate::email::EmailTemplates;
use crate::http::metrics::Metrics;
use crate::services::coes;
use crate::services::sns::SubscriptionConfirmer;

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
}

impl AppState {
    /// What the COE services need.
    pub fn coe_context(&self) -> coes::Context<'_> {
        coes::Context {
            settings: &self.settings,
            template: &self.template,
            emails: &self.emails,
        }
    }
}
