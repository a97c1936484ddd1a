//! What the services need of the running service besides a connection.

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
