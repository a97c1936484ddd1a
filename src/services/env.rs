//! What the services need of the running service besides a connection.

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::template::Template;
use crate::email::EmailTemplates;

/// The settings, the COE template new COEs are made from, and the email templates:
/// the one way they reach a service (`http::state::AppState::env`, the command line,
/// the ingest writer and the demo each build one). Passed by value.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub settings: &'a Settings,
    pub template: &'a Template,
    pub emails: &'a EmailTemplates,
}

/// The owned form of [`Env`], kept by what outlives one request — the jobs of
/// `coe serve`, the ingest writer, a command — which lends `env()` to each call.
#[derive(Clone)]
pub struct Runtime {
    pub settings: Arc<Settings>,
    pub template: Arc<Template>,
    pub emails: Arc<EmailTemplates>,
}

impl Runtime {
    /// Reads the COE template and the email templates `settings` name; errors name
    /// the file and the problem.
    pub fn load(settings: Settings) -> Result<Runtime, RuntimeError> {
        let template = settings.template()?;
        let emails = EmailTemplates::load(
            settings.email.templates_dir.as_deref(),
            &settings.public_url,
        )?;
        Ok(Runtime {
            settings: Arc::new(settings),
            template: Arc::new(template),
            emails: Arc::new(emails),
        })
    }

    pub fn env(&self) -> Env<'_> {
        Env {
            settings: &self.settings,
            template: &self.template,
            emails: &self.emails,
        }
    }
}

/// Why [`Runtime::load`] could not read what the settings name.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Emails(#[from] crate::email::TemplateError),
}
