//! What the services need of the running service besides a connection.

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::template::Template;
use crate::email::EmailTemplates;
use crate::services::connections::{Connections, LiveConnections};

/// The settings, the COE template new COEs are made from, the email templates and
/// the chat channels and trackers in use (the settings file's and those kept in coe):
/// the one way they reach a service (`http::state::AppState::env`, the command line,
/// the ingest writer and the demo each build one). Passed by value.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub settings: &'a Settings,
    pub template: &'a Template,
    pub emails: &'a EmailTemplates,
    /// Read `connections.channels` and `connections.trackers`, never the settings
    /// file's lists: those kept in coe are there too.
    pub connections: &'a Connections,
}

/// The owned form of [`Env`], kept by what outlives one request — the jobs of
/// `coe serve`, the ingest writer, a command — which lends `env()` to each call.
#[derive(Clone)]
pub struct Runtime {
    pub settings: Arc<Settings>,
    pub template: Arc<Template>,
    pub emails: Arc<EmailTemplates>,
    pub connections: LiveConnections,
}

impl Runtime {
    /// Reads the COE template and the email templates `settings` name; errors name
    /// the file and the problem. The connections are the settings file's until
    /// `connections` is replaced (`with_kept_connections`).
    pub fn load(settings: Settings) -> Result<Runtime, RuntimeError> {
        let template = settings.template()?;
        let emails = EmailTemplates::load(
            settings.email.templates_dir.as_deref(),
            &settings.public_url,
        )?;
        Ok(Runtime {
            connections: LiveConnections::of_file(&settings),
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
            connections: self.connections.current(),
        }
    }

    /// This, with the connections kept in `conn`'s database too (a command that posts
    /// or syncs): the secret key is read as `coe serve` reads it.
    pub fn with_kept_connections(
        mut self,
        conn: &mut crate::db::DbConnection,
    ) -> Result<Runtime, RuntimeError> {
        let keyring = crate::secrets::Keyring::load(&self.settings)?;
        self.connections = LiveConnections::open(&self.settings, keyring, conn)?;
        Ok(self)
    }
}

/// Why [`Runtime::load`] could not read what the settings name.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Emails(#[from] crate::email::TemplateError),
    #[error(transparent)]
    Key(#[from] crate::secrets::KeyError),
    #[error(transparent)]
    Connections(#[from] crate::services::connections::ConnectionsError),
}
