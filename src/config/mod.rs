//! Typed settings, loaded once at start-up from defaults, an optional TOML file,
//! `COE_*` environment variables and command-line flags (in that order, later wins),
//! then validated. The result is passed into the app; nothing reads settings globally.
//!
//! This file holds the product's settings (sign-in, the policy, reminders, COEs,
//! ownership, webhooks) and their defaults; `runtime` how the process runs (mode,
//! database, server, logs, SMTP, email files); `load` layers the sources,
//! `validate` checks what types alone cannot, `database` parses the database URL and
//! `secret` keeps secrets out of output.

mod actions;
mod addresses;
mod chat;
pub mod database;
mod intake;
mod load;
mod org;
mod people;
mod runtime;
pub mod secret;
mod templates;
mod trackers;
mod validate;
mod validate_chat;
mod validate_sign_in;

pub use addresses::points_at_loopback;
pub(crate) use addresses::{https_or_loopback, listens_on_loopback, parse_proxy};

pub use runtime::{
    DatabaseSettings, EmailSettings, LogFormat, LogSettings, Mode, ServerSettings, SmtpSettings,
    SMTP_TIMEOUT,
};

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use self::actions::ActionSettings;
pub use self::chat::{ChannelSettings, ChatEvent, ChatKind, ChatSettings};
use self::database::DatabaseUrl;
pub use self::intake::{EventSettings, IncidentSettings, PolicySettings, WebhookSettings};
pub use self::org::{OrgSettings, MAX_LOGO_BYTES};
pub use self::people::ScimSettings;
use self::secret::Secret;
pub use self::templates::{TemplateFacts, TemplateRule};
pub use self::trackers::{
    destination, validate as validate_trackers, CreateWhen, Destination, Meaning, TrackerKind,
    TrackerRoute, TrackerSettings,
};
pub use self::validate_chat::validate_channels;
use crate::domain::assessment::DEFAULT_INTENTION_PHRASES;
use crate::domain::incident::IncidentPolicy;
use crate::domain::template::{Template, TemplateError};
use crate::domain::SeverityMap;

/// Every setting of the service. `docs/configuration.md` documents each key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Address the HTTP server binds, `HOST:PORT`.
    pub listen: String,
    /// `development` (the default) or `production`, which refuses unsafe shortcuts.
    pub mode: Mode,
    /// The address people use to reach the service; links in emails start with it.
    pub public_url: String,
    /// The key that seals the secrets coe keeps in its database (32 bytes, base64;
    /// `COE_SECRET_KEY`), the same on every replica (`crate::secrets`).
    pub secret_key: Option<Secret>,
    /// A file holding that key (default for SQLite: `coe-secret.key` beside the
    /// database file, made on first start).
    pub secret_key_file: Option<std::path::PathBuf>,
    /// Keys used before `secret_key`: they still open what they sealed until it is
    /// saved again, sealed with the current key.
    pub previous_secret_keys: Vec<Secret>,
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub log: LogSettings,
    pub smtp: SmtpSettings,
    pub email: EmailSettings,
    pub policy: PolicySettings,
    pub incidents: IncidentSettings,
    pub webhooks: WebhookSettings,
    pub events: EventSettings,
    /// How each source's severity words map to `sev1`…`sev5`.
    pub severity: SeverityMap,
    pub coe: CoeSettings,
    /// Corrective actions' targets (`[[actions.targets]]`).
    pub actions: ActionSettings,
    pub ownership: OwnershipSettings,
    pub org: OrgSettings,
    pub reminders: ReminderSettings,
    pub digest: DigestSettings,
    pub metrics: MetricsSettings,
    pub auth: AuthSettings,
    pub chat: ChatSettings,
    pub scim: ScimSettings,
    /// Issue trackers corrective actions are kept in step with (`[[trackers]]`).
    pub trackers: Vec<TrackerSettings>,
}

/// How people sign in to the web pages (the API keeps its bearer tokens).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMode {
    /// People enter their email and receive a one-time sign-in link.
    EmailLink,
    /// An authenticating proxy in front names the person in a header.
    Proxy,
    /// The organisation's OpenID Provider (Okta, Entra ID, Google, Keycloak …)
    /// vouches for the person (`auth.oidc`).
    Oidc,
}

/// Signing in through an OpenID Provider (`auth.mode = "oidc"`): the
/// authorization-code flow with PKCE, the provider found by discovery.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OidcSettings {
    /// The provider's issuer, exactly as its discovery document names it
    /// (`<issuer>/.well-known/openid-configuration`).
    pub issuer: String,
    pub client_id: String,
    /// The client's secret (`client_secret_basic`); empty for a public client,
    /// which PKCE alone protects.
    pub client_secret: Secret,
    /// The scopes asked for; `openid` is required.
    pub scopes: Vec<String>,
    /// The ID-token claim that lists the person's groups.
    pub groups_claim: String,
    /// Members of these groups are admins, checked at each sign-in; empty leaves
    /// admin to the directory.
    pub admin_groups: Vec<String>,
    /// Whether people outside the provider may still sign in with an emailed link.
    pub email_link_fallback: bool,
    /// Whether the ID token must say `email_verified = true`. Off trusts the email
    /// claim of a provider that never sends `email_verified` (Entra ID); `false` is
    /// refused either way.
    pub require_verified_email: bool,
    /// The provider's name on the sign-in button: "Sign in with <name>".
    pub name: String,
}

impl Default for OidcSettings {
    fn default() -> Self {
        OidcSettings {
            issuer: String::new(),
            client_id: String::new(),
            client_secret: Secret::from(""),
            scopes: vec!["openid".into(), "email".into(), "profile".into()],
            groups_claim: "groups".into(),
            admin_groups: Vec::new(),
            email_link_fallback: false,
            require_verified_email: true,
            name: "single sign-on".into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    pub mode: AuthMode,
    /// Addresses of these domains may sign in besides the people in the directory.
    pub allowed_domains: Vec<String>,
    /// Domains whose mail ignores dots in an address's local part (`j.doe@` and
    /// `jdoe@` are one mailbox): separation of duties treats them as one person, as
    /// it does `+tag` addresses everywhere.
    pub dotless_domains: Vec<String>,
    /// Proxies (addresses or CIDR ranges) whose `proxy_header` and `X-Forwarded-For`
    /// are believed; from anywhere else they are refused.
    pub trusted_proxies: Vec<String>,
    /// The header an authenticating proxy sets to the person's email.
    pub proxy_header: String,
    /// A session unused this long ends.
    pub session_idle_secs: u64,
    /// Every session ends this long after sign-in.
    pub session_max_secs: u64,
    /// Sign-in requests allowed per email address per 15 minutes.
    pub sign_in_per_address: u32,
    /// Sign-in requests allowed per client address per 15 minutes.
    pub sign_in_per_client: u32,
    /// Unknown or revoked API tokens a client address may present per minute; then
    /// its requests get 429 until the minute is over (counted per replica).
    pub failed_tokens_per_client: u32,
    /// The OpenID Provider, for `mode = "oidc"`.
    pub oidc: OidcSettings,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            mode: AuthMode::EmailLink,
            allowed_domains: Vec::new(),
            dotless_domains: vec!["gmail.com".into(), "googlemail.com".into()],
            trusted_proxies: Vec::new(),
            proxy_header: "X-Forwarded-Email".into(),
            session_idle_secs: 7 * 24 * 3600,
            session_max_secs: 30 * 24 * 3600,
            sign_in_per_address: 5,
            sign_in_per_client: 20,
            failed_tokens_per_client: 30,
            oidc: OidcSettings::default(),
        }
    }
}

impl AuthSettings {
    /// Whether people may ask for an emailed sign-in link: in `email-link` mode, and
    /// in `oidc` mode with `auth.oidc.email_link_fallback`.
    pub fn email_links(&self) -> bool {
        match self.mode {
            AuthMode::EmailLink => true,
            AuthMode::Oidc => self.oidc.email_link_fallback,
            AuthMode::Proxy => false,
        }
    }

    /// The trusted proxies, parsed (`validate` has refused any that do not parse).
    pub fn proxies(&self) -> Vec<ipnet::IpNet> {
        self.trusted_proxies
            .iter()
            .filter_map(|p| parse_proxy(p))
            .collect()
    }

    /// The trusted proxies that are whole address families (`0.0.0.0/0`, `::/0`):
    /// every client could then name itself in `X-Forwarded-For` (escaping the sign-in
    /// rate limits) or, in proxy mode, name any person in `auth.proxy_header`.
    pub fn proxies_trusting_everyone(&self) -> Vec<ipnet::IpNet> {
        self.proxies()
            .into_iter()
            .filter(|n| n.prefix_len() == 0)
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReminderSettings {
    /// Whether `coe serve` runs the reminder jobs (sweeps, email and chat delivery). Turn it off
    /// when an outside cron runs `coe sweep` instead.
    pub enabled: bool,
    /// Seconds between two sweeps of `coe serve`.
    pub interval_secs: u64,
    /// Seconds between two delivery passes of `coe serve` (event emails wait at most this).
    pub delivery_interval_secs: u64,
    /// Hour of the day (0–23, organisation time zone) from which the daily and weekly
    /// emails of that day are sent.
    pub send_hour: u32,
    /// Actions due within this many days are listed in the owner's digest.
    pub due_soon_days: i64,
    /// An action this many days overdue is escalated to the owner's manager.
    pub escalate_after_days: i64,
    /// An owner gets at most one overdue digest per this many days (periods of this
    /// length, counted from a Monday).
    pub digest_every_days: i64,
    /// A recipient gets at most one escalation per this many days (7: once a week,
    /// Monday to Sunday).
    pub escalation_every_days: i64,
    /// A COE owner gets at most one writeup reminder per this many days.
    pub writeup_every_days: i64,
    /// Sent emails are deleted from the outbox this many days after they were sent
    /// (failed and pending ones stay). At least the longest period above.
    pub keep_sent_days: i64,
    /// Sending attempts of an email before it is marked failed.
    pub max_attempts: i32,
    /// First retry delay in seconds; it doubles at each attempt.
    pub retry_base_secs: u64,
    /// Longest retry delay in seconds.
    pub retry_max_secs: u64,
    /// Seconds a worker owns a claimed email; after it, another worker may send it.
    pub lease_secs: u64,
    /// Emails claimed by one delivery pass at most.
    pub batch_size: i64,
}

impl Default for ReminderSettings {
    fn default() -> Self {
        ReminderSettings {
            enabled: true,
            interval_secs: 300,
            delivery_interval_secs: 10,
            send_hour: 9,
            due_soon_days: 3,
            escalate_after_days: 7,
            digest_every_days: 1,
            escalation_every_days: 7,
            writeup_every_days: 1,
            keep_sent_days: 90,
            max_attempts: 10,
            retry_base_secs: 60,
            retry_max_secs: 6 * 3600,
            lease_secs: 900,
            batch_size: 100,
        }
    }
}

/// Who may read `/metrics`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSettings {
    /// When set, `/metrics` answers only `Authorization: Bearer <token>` (Prometheus'
    /// `authorization` or `bearer_token_file`); unset, anyone who reaches it may read.
    pub token: Option<Secret>,
    /// A second address that serves `/metrics`, `/healthz` and `/readyz` only (e.g. a
    /// private interface, `10.0.0.5:9464`), for Prometheus to scrape every replica
    /// while `listen` stays on loopback behind the proxy. Unset: `/metrics` is served
    /// on `listen` only (as it is then too).
    pub listen: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DigestSettings {
    /// Who receives the weekly inspection digest (none: it is not sent).
    pub recipients: Vec<String>,
    /// The day of the week it goes out, e.g. `monday`.
    pub weekday: String,
}

impl Default for DigestSettings {
    fn default() -> Self {
        DigestSettings {
            recipients: Vec::new(),
            weekday: "monday".into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoeSettings {
    /// An organisation's own COE template (TOML); unset means the built-in default.
    pub template: Option<PathBuf>,
    /// Templates chosen by rule (`[[coe.templates]]`): the first that matches a new
    /// COE's severity, service, team and labels, else `template`.
    pub templates: Vec<TemplateRule>,
    /// Phrases that state an intention rather than a mechanism; flagged as warnings.
    pub intention_phrases: Vec<String>,
    /// Largest section body, in bytes.
    pub max_section_bytes: usize,
    /// Days after its incident resolved by which a COE should leave draft.
    pub writeup_days: i64,
    /// COEs at or above this severity close only when their reviewer verified every
    /// done action (or it will not be done).
    pub verify_actions_from: crate::domain::Severity,
    /// COEs at or above this severity get a bar raiser on submit (when the directory
    /// has any), and are approved only when both the reviewer and it approve.
    pub bar_raiser_from: crate::domain::Severity,
    /// Patterns (regular expressions, any case) of what must not reach customers: the
    /// organisation's internal host names and addresses. The section written for
    /// customers is refused while it matches one (or names a person).
    pub internal_patterns: Vec<String>,
    /// The organisation's weekly review slot ("thursday 15:00", in `org.timezone`):
    /// offered when a COE's review meeting is set; none offers only a time chosen.
    pub review_slot: Option<String>,
    /// How long a review meeting is, in minutes (15 to 480).
    pub review_minutes: u32,
}

/// Internal hosts, by default: private IPv4 addresses and names under the usual
/// internal domains.
pub const DEFAULT_INTERNAL_PATTERNS: [&str; 4] = [
    r"\b10\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
    r"\b192\.168\.\d{1,3}\.\d{1,3}\b",
    r"\b172\.(1[6-9]|2\d|3[01])\.\d{1,3}\.\d{1,3}\b",
    r"\b[a-z0-9-]+(\.[a-z0-9-]+)*\.(internal|local|lan|corp|intranet)\b",
];

impl Default for CoeSettings {
    fn default() -> Self {
        CoeSettings {
            template: None,
            templates: Vec::new(),
            intention_phrases: DEFAULT_INTENTION_PHRASES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            max_section_bytes: 100 * 1024,
            writeup_days: 7,
            verify_actions_from: crate::domain::Severity::Sev1,
            bar_raiser_from: crate::domain::Severity::Sev1,
            internal_patterns: DEFAULT_INTERNAL_PATTERNS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            review_slot: None,
            review_minutes: 60,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct OwnershipSettings {
    /// Service name → the email of who owns COEs for it.
    pub services: std::collections::BTreeMap<String, String>,
    /// Owner of COEs for services not in the map.
    pub default_owner: Option<String>,
}

/// The URL people reach a server listening on `listen` (`HOST:PORT`) by: a wildcard
/// address (`0.0.0.0`, `[::]`) becomes `localhost`.
pub fn public_url_for(listen: &str) -> String {
    let (host, port) = listen.rsplit_once(':').unwrap_or((listen, "8080"));
    let host = match host.trim_matches(|c| c == '[' || c == ']') {
        "" | "0.0.0.0" | "::" => "localhost",
        _ => host,
    };
    format!("http://{host}:{port}")
}

impl Settings {
    /// The incident rules as the domain layer takes them.
    pub fn incident_policy(&self) -> IncidentPolicy {
        IncidentPolicy {
            // Validation bounds the setting; the arithmetic is checked anyway, so that
            // no value can panic on the ingest path.
            reopen_window: i64::try_from(self.incidents.reopen_window_secs)
                .ok()
                .and_then(chrono::Duration::try_seconds)
                .unwrap_or(chrono::Duration::MAX),
            coe_at_or_above: self.policy.coe_at_or_above,
            budget_share: self.policy.error_budget_share,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: "127.0.0.1:8080".into(),
            mode: Mode::Development,
            public_url: "http://127.0.0.1:8080".into(),
            secret_key: None,
            secret_key_file: None,
            previous_secret_keys: Vec::new(),
            database: DatabaseSettings::default(),
            server: ServerSettings::default(),
            log: LogSettings::default(),
            smtp: SmtpSettings::default(),
            email: EmailSettings::default(),
            policy: PolicySettings::default(),
            incidents: IncidentSettings::default(),
            webhooks: WebhookSettings::default(),
            events: EventSettings::default(),
            severity: SeverityMap::default(),
            coe: CoeSettings::default(),
            actions: ActionSettings::default(),
            ownership: OwnershipSettings::default(),
            org: OrgSettings::default(),
            reminders: ReminderSettings::default(),
            digest: DigestSettings::default(),
            metrics: MetricsSettings::default(),
            scim: ScimSettings::default(),
            auth: AuthSettings::default(),
            chat: ChatSettings::default(),
            trackers: Vec::new(),
        }
    }
}

/// Values given on the command line; they override the file and the environment.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
}

/// A setting that cannot be used, named for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the settings file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid settings: {0}")]
    Parse(String),
    #[error("setting `coe.template` ({path}): {source}")]
    Template {
        path: PathBuf,
        source: TemplateError,
    },
    #[error("setting `{key}`{origin}: got {value:?}, expected {expected}")]
    Invalid {
        key: &'static str,
        origin: String,
        value: String,
        expected: String,
    },
    /// One entry of a list (a chat channel, a tracker) is wrong in one field.
    #[error("setting `{key}`: [{index}] ({name}) {field} = {value:?}, expected {expected}")]
    Entry {
        key: &'static str,
        index: usize,
        name: String,
        field: String,
        value: String,
        expected: String,
    },
}

impl Settings {
    /// The weekday of the inspection digest; `validate` has accepted it.
    pub fn digest_weekday(&self) -> chrono::Weekday {
        self.digest.weekday.parse().unwrap_or(chrono::Weekday::Mon)
    }

    /// The COE template: the file at `coe.template`, else the built-in default.
    /// Validated at start-up; errors name the section and the problem.
    pub fn template(&self) -> Result<Template, ConfigError> {
        match &self.coe.template {
            None => Ok(Template::default_template()),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    source: e,
                })?;
                Template::parse(&text).map_err(|source| ConfigError::Template {
                    path: path.clone(),
                    source,
                })
            }
        }
    }

    /// The organisation's time zone; `validate` has accepted it.
    pub fn org_timezone(&self) -> chrono_tz::Tz {
        self.org.timezone.parse().unwrap_or(chrono_tz::Tz::UTC)
    }

    /// Whether this is a local trial, where the development sign-in (anyone may sign
    /// in; links written to the log) is harmless: `mode = "development"`, listening on
    /// loopback addresses alone, reached under a loopback `public_url`, no SMTP server,
    /// sign-in by emailed link and no trusted proxy (a proxy in front means people
    /// reach it from a network). Anything else signs in as in
    /// production, whatever `mode` says: an install reachable from a network, or one
    /// that mails real people, lets in only the directory and `auth.allowed_domains`.
    pub fn local_trial(&self) -> bool {
        self.mode == Mode::Development && self.beyond_a_local_trial().is_empty()
    }

    /// What makes this install more than a local trial, in words (empty: nothing), for
    /// the start-up warning of a development install that signs in as in production.
    pub fn beyond_a_local_trial(&self) -> Vec<&'static str> {
        let public_host = url::Url::parse(&self.public_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        [
            (self.smtp.url.is_some(), "it has an SMTP server"),
            (
                self.auth.mode != AuthMode::EmailLink,
                "people sign in through an OpenID Provider or a proxy",
            ),
            (
                !self.auth.trusted_proxies.is_empty(),
                "it trusts a reverse proxy",
            ),
            (
                !listens_on_loopback(&self.listen),
                "it listens beyond loopback",
            ),
            (
                !listens_on_loopback(&format!("{public_host}:0")),
                "its public_url is not a loopback address",
            ),
        ]
        .into_iter()
        .filter_map(|(so, why)| so.then_some(why))
        .collect()
    }

    /// Whether anyone may sign in (and so be named an owner or a reviewer): on a local
    /// trial that names no allowed domain, so that a new user signs in with no set-up.
    /// Everywhere else only the directory and `auth.allowed_domains` may.
    pub fn anyone_may_sign_in(&self) -> bool {
        self.local_trial() && self.auth.allowed_domains.is_empty()
    }

    /// The real now, in the organisation's time zone.
    pub fn clock(&self) -> crate::domain::Clock {
        crate::domain::Clock::now_in(self.org_timezone())
    }

    /// The name this process claims what it sends under (`server.replica_name`): the
    /// setting, else the host's name and the address it listens on. A server on port
    /// 0 (a test's) adds its process id: no later process shares that name.
    pub fn replica_name(&self) -> String {
        let set = self.server.replica_name.trim();
        if !set.is_empty() {
            return set.to_owned();
        }
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        if self.listen.ends_with(":0") {
            return format!("{host}/{}/{}", self.listen, std::process::id());
        }
        format!("{host}/{}", self.listen)
    }

    /// The parsed database URL; `validate` has already accepted it.
    pub fn database_url(&self) -> DatabaseUrl {
        DatabaseUrl::parse(&self.database.url).unwrap_or(DatabaseUrl::Sqlite("coe.db".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_url_follows_the_listen_address() {
        assert_eq!(public_url_for("127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(public_url_for("0.0.0.0:9000"), "http://localhost:9000");
        assert_eq!(public_url_for("[::]:9001"), "http://localhost:9001");
        assert_eq!(public_url_for("coe.internal:80"), "http://coe.internal:80");
        let flags = Overrides {
            listen: Some("127.0.0.1:9123".into()),
            ..Default::default()
        };
        let settings = Settings::load(None, &flags).expect("settings");
        assert_eq!(settings.public_url, "http://127.0.0.1:9123");
    }

    #[test]
    fn only_a_loopback_install_without_smtp_is_a_local_trial() {
        for listen in [
            "127.0.0.1:8080",
            "[::1]:8080",
            "localhost:8080",
            "127.0.0.2:1",
        ] {
            assert!(listens_on_loopback(listen), "{listen}");
        }
        for listen in [
            "0.0.0.0:8080",
            "[::]:8080",
            "10.0.0.5:80",
            "coe.internal:80",
            "",
        ] {
            assert!(!listens_on_loopback(listen), "{listen}");
        }
        let mut settings = Settings::default();
        assert!(settings.local_trial(), "the defaults are a local trial");
        settings.listen = "0.0.0.0:8080".into();
        assert!(!settings.local_trial(), "reachable from a network");
        settings.listen = "127.0.0.1:8080".into();
        settings.smtp.url = Some("smtp://mail.example.com:25".into());
        assert!(!settings.local_trial(), "mails real people");
        settings.smtp.url = None;
        settings.auth.trusted_proxies = vec!["127.0.0.1".into()];
        assert!(!settings.local_trial(), "behind a reverse proxy");
        settings.auth.trusted_proxies = Vec::new();
        settings.public_url = "https://coe.example.com".into();
        assert!(!settings.local_trial(), "reached under a public name");
        settings.public_url = "http://127.0.0.1:8080".into();
        settings.auth.mode = AuthMode::Proxy;
        assert!(!settings.local_trial(), "proxy sign-in");
        settings.auth.mode = AuthMode::EmailLink;
        assert!(settings.local_trial());
        settings.mode = Mode::Production;
        assert!(!settings.local_trial());
    }

    #[test]
    fn the_reopen_window_is_given_to_the_domain_in_seconds() {
        let mut settings = Settings::default();
        settings.incidents.reopen_window_secs = 90;
        assert_eq!(
            settings.incident_policy().reopen_window,
            chrono::Duration::seconds(90)
        );
    }

    #[test]
    fn an_out_of_range_reopen_window_does_not_panic_before_validation() {
        let mut settings = Settings::default();
        for secs in [99_999_999_999_999_999, u64::MAX] {
            settings.incidents.reopen_window_secs = secs;
            assert_eq!(
                settings.incident_policy().reopen_window,
                chrono::Duration::MAX
            );
        }
    }
}
