//! What an organisation has set up, for the first-run checklist admins see on My
//! work: sign-in, people, alert sources, chat, a tracker, services' owners, a
//! template. Facts only; the page says them in words.

use chrono::NaiveDateTime;
use diesel::dsl::count_star;
use diesel::prelude::*;
use serde::Serialize;

use crate::config::AuthMode;
use crate::db::schema::{coe_templates, people, service_owners, webhook_deliveries};
use crate::db::DbConnection;
use crate::services::directory::ownership;
use crate::services::Env;

/// How many of the newest deliveries are read for the sources' last events.
const RECENT_DELIVERIES: i64 = 1000;

/// How people sign in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignIn {
    /// Through the organisation's identity provider (its issuer).
    SingleSignOn(String),
    /// Through the proxy in front of coe.
    Proxy,
    /// With a link by email, through a mail server.
    EmailLinks,
    /// With a link by email, but no mail server is set up: the links are written to
    /// files, as on a trial.
    NoMailServer,
}

/// A source of alerts and when its last delivery arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub source: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub last: NaiveDateTime,
}

/// What is set up.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub sign_in: SignIn,
    /// People in the directory, and how many the identity provider keeps (SCIM).
    pub people: i64,
    pub provisioned: i64,
    /// The sources that delivered lately, newest first.
    pub sources: Vec<Source>,
    pub chat_channels: usize,
    pub trackers: usize,
    /// Services in the service map, and services the incidents name without an owner
    /// there.
    pub services_mapped: i64,
    pub services_unowned: usize,
    /// Templates made in the pages, or picked by the settings.
    pub templates: i64,
    /// Whether every step that holds the list open is done (chat and a tracker do
    /// not: an organisation may do without them).
    pub done: bool,
}

/// What the organisation has set up now.
pub fn setup(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Setup> {
    let settings = env.settings;
    let sign_in = match settings.auth.mode {
        AuthMode::Oidc => SignIn::SingleSignOn(settings.auth.oidc.issuer.clone()),
        AuthMode::Proxy => SignIn::Proxy,
        AuthMode::EmailLink if settings.smtp.url.is_some() => SignIn::EmailLinks,
        AuthMode::EmailLink => SignIn::NoMailServer,
    };
    let people: i64 = people::table
        .filter(people::active.eq(true))
        .select(count_star())
        .first(conn)?;
    let provisioned: i64 = people::table
        .filter(people::active.eq(true))
        .filter(people::scim_id.is_not_null())
        .select(count_star())
        .first(conn)?;
    let recent: Vec<(String, NaiveDateTime)> = webhook_deliveries::table
        .order(webhook_deliveries::received_at.desc())
        .select((webhook_deliveries::source, webhook_deliveries::received_at))
        .limit(RECENT_DELIVERIES)
        .load(conn)?;
    let mut sources: Vec<Source> = Vec::new();
    for (source, last) in recent {
        if !sources.iter().any(|s| s.source == source) {
            sources.push(Source { source, last });
        }
    }
    let in_the_file = i64::try_from(settings.ownership.services.len()).unwrap_or(0);
    let services_mapped: i64 = service_owners::table
        .select(count_star())
        .first::<i64>(conn)?
        + in_the_file;
    let services_unowned = ownership::services_seen(conn, env, 200)?
        .iter()
        .filter(|s| !s.mapped)
        .count();
    let made: i64 = coe_templates::table.select(count_star()).first(conn)?;
    let by_settings = usize::from(settings.coe.template.is_some()) + settings.coe.templates.len();
    let templates = made + i64::try_from(by_settings).unwrap_or(0);
    let done = sign_in != SignIn::NoMailServer
        && people > 1
        && !sources.is_empty()
        && services_mapped > 0
        && services_unowned == 0
        && templates > 0;
    Ok(Setup {
        sign_in,
        people,
        provisioned,
        sources,
        chat_channels: env.connections.channels.len(),
        trackers: env.connections.trackers.len(),
        services_mapped,
        services_unowned,
        templates,
        done,
    })
}
