//! Typed settings, loaded once at start-up from defaults, an optional TOML file,
//! `COE_*` environment variables and command-line flags (in that order, later wins),
//! then validated. The result is passed into the app; nothing reads settings globally.

use std::fmt;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

use crate::db::DatabaseUrl;
use crate::domain::incident::IncidentPolicy;
use crate::domain::rules::DEFAULT_INTENTION_PHRASES;
use crate::domain::template::{Template, TemplateError};
use crate::domain::{EmailAddress, Severity, SeverityMap};

/// Sections of the settings file. An environment variable `COE_<SECTION>_<KEY>` maps to
/// `<section>.<key>`; any other `COE_<KEY>` maps to a top-level key.
const SECTIONS: &[&str] = &[
    "database",
    "server",
    "log",
    "smtp",
    "email",
    "policy",
    "incidents",
    "webhooks",
    "severity",
    "coe",
    "ownership",
    "org",
    "reminders",
    "digest",
];

/// Environment variables with the `COE_` prefix that are not settings.
const NOT_SETTINGS: &[&str] = &["config"];

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
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub log: LogSettings,
    pub smtp: SmtpSettings,
    pub email: EmailSettings,
    pub policy: PolicySettings,
    pub incidents: IncidentSettings,
    pub webhooks: WebhookSettings,
    /// How each source's severity words map to `sev1`…`sev5`.
    pub severity: SeverityMap,
    pub coe: CoeSettings,
    pub ownership: OwnershipSettings,
    pub org: OrgSettings,
    pub reminders: ReminderSettings,
    pub digest: DigestSettings,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReminderSettings {
    /// Whether `coe serve` runs the scheduler (sweeps and deliveries). Turn it off
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
pub struct OrgSettings {
    /// The organisation's time zone (IANA name): due dates end at midnight there.
    pub timezone: String,
}

impl Default for OrgSettings {
    fn default() -> Self {
        OrgSettings {
            timezone: "UTC".into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoeSettings {
    /// An organisation's own COE template (TOML); unset means the built-in default.
    pub template: Option<PathBuf>,
    /// Phrases that state an intention rather than a mechanism; flagged as warnings.
    pub intention_phrases: Vec<String>,
    /// Largest section body, in bytes.
    pub max_section_bytes: usize,
    /// Days after its incident resolved by which a COE should leave draft.
    pub writeup_days: i64,
}

impl Default for CoeSettings {
    fn default() -> Self {
        CoeSettings {
            template: None,
            intention_phrases: DEFAULT_INTENTION_PHRASES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            max_section_bytes: 100 * 1024,
            writeup_days: 7,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PolicySettings {
    /// Incidents at or above this severity need a COE.
    pub coe_at_or_above: Severity,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            coe_at_or_above: Severity::Sev2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IncidentSettings {
    /// The same alert firing again within this many seconds of its incident resolving
    /// reopens the incident; later, it opens a new one.
    pub reopen_window_secs: u64,
}

impl Default for IncidentSettings {
    fn default() -> Self {
        IncidentSettings {
            reopen_window_secs: 3600,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Largest accepted webhook or event-API body, in bytes. Generous on purpose: a 413
    /// makes Alertmanager retry the same group forever.
    pub max_body_bytes: usize,
    /// PagerDuty signing secret; when set, `X-PagerDuty-Signature` is required and checked.
    pub pagerduty_secret: Option<String>,
    /// Grafana HMAC secret; when set, `X-Grafana-Alerting-Signature` is required and checked.
    pub grafana_secret: Option<String>,
    /// The header Grafana is configured to put its signature timestamp in.
    pub grafana_timestamp_header: String,
    /// Sentry client secret; when set, `Sentry-Hook-Signature` is required and checked.
    pub sentry_secret: Option<String>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            max_body_bytes: 10 * 1024 * 1024,
            pagerduty_secret: None,
            grafana_secret: None,
            grafana_timestamp_header: "X-Grafana-Alerting-Signature-Timestamp".into(),
            sentry_secret: None,
        }
    }
}

impl Settings {
    /// The incident rules as the domain layer takes them.
    pub fn incident_policy(&self) -> IncidentPolicy {
        IncidentPolicy {
            reopen_window: chrono::Duration::seconds(
                i64::try_from(self.incidents.reopen_window_secs).unwrap_or(i64::MAX / 1000),
            ),
            coe_at_or_above: self.policy.coe_at_or_above,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Development,
    Production,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// `sqlite://PATH`, a plain file path, or `postgres://…` / `postgresql://…`.
    pub url: String,
    /// Maximum connections in the pool.
    pub pool_size: u32,
    /// Seconds to wait for a free connection (or a new one) before giving up.
    pub connect_timeout_secs: u64,
    /// SQLite only: milliseconds a writer waits for a lock before failing.
    pub busy_timeout_ms: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// HTTP worker threads; 0 means one per CPU core.
    pub workers: usize,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    pub shutdown_timeout_secs: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    /// `text` for people, `json` for log collectors.
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `info,coe=debug`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpSettings {
    /// `smtp://user:pass@host:port` or `smtps://…`; unset means emails are written to files.
    pub url: Option<String>,
    /// A PEM file of certificate authorities to trust, besides the public ones, for a
    /// relay whose certificate a private CA signed. Needs TLS (`smtps://` or `?tls=…`).
    pub ca_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmailSettings {
    /// The `From:` of every email.
    pub from: String,
    /// Where `.eml` files go when no SMTP server is configured.
    pub file_dir: PathBuf,
    /// A folder of email templates overriding the built-in ones, laid out like
    /// `templates/email/` (`<name>/subject.hbs`, `partials/header.html.hbs`, …).
    pub templates_dir: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: "127.0.0.1:8080".into(),
            mode: Mode::Development,
            public_url: "http://127.0.0.1:8080".into(),
            database: DatabaseSettings::default(),
            server: ServerSettings::default(),
            log: LogSettings::default(),
            smtp: SmtpSettings::default(),
            email: EmailSettings::default(),
            policy: PolicySettings::default(),
            incidents: IncidentSettings::default(),
            webhooks: WebhookSettings::default(),
            severity: SeverityMap::default(),
            coe: CoeSettings::default(),
            ownership: OwnershipSettings::default(),
            org: OrgSettings::default(),
            reminders: ReminderSettings::default(),
            digest: DigestSettings::default(),
        }
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            url: "sqlite://coe.db".into(),
            pool_size: 8,
            connect_timeout_secs: 5,
            busy_timeout_ms: 5_000,
        }
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_body_bytes: 2 * 1024 * 1024,
            workers: 0,
            shutdown_timeout_secs: 30,
        }
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

impl Default for EmailSettings {
    fn default() -> Self {
        EmailSettings {
            from: "coe <coe@localhost>".into(),
            file_dir: PathBuf::from("outbox"),
            templates_dir: None,
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
}

impl Settings {
    /// Loads the settings: defaults, then the file at `path` (if any), then `COE_*`
    /// environment variables, then `overrides`. Validates the result.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Settings, ConfigError> {
        let figment = Self::figment(path, overrides)?;
        let settings: Settings = figment.extract().map_err(|e| describe_figment_error(&e))?;
        settings
            .validate()
            .map_err(|e| e.with_origin(|key| origin_of(&figment, key)))?;
        Ok(settings)
    }

    fn figment(path: Option<&Path>, overrides: &Overrides) -> Result<Figment, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = path {
            // Read it ourselves: figment silently ignores a missing file, a typo'd path must not.
            std::fs::File::open(path).map_err(|source| ConfigError::File {
                path: path.to_owned(),
                source,
            })?;
            figment = figment.merge(Toml::file_exact(path));
        }
        figment = figment.merge(
            Env::prefixed("COE_")
                .ignore(NOT_SETTINGS)
                .map(|key| env_key_to_setting(&key.as_str().to_ascii_lowercase()).into()),
        );
        let mut cli = serde_json::Map::new();
        if let Some(listen) = &overrides.listen {
            cli.insert("listen".into(), listen.clone().into());
        }
        if let Some(url) = &overrides.database_url {
            cli.insert("database".into(), serde_json::json!({ "url": url }));
        }
        if let Some(format) = overrides.log_format {
            cli.insert("log".into(), serde_json::json!({ "format": format }));
        }
        if !cli.is_empty() {
            figment = figment.merge(Serialized::defaults(cli).profile(figment::Profile::Default));
        }
        Ok(figment)
    }

    /// Checks what types alone cannot: addresses, URLs, ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let resolves = self
            .listen
            .to_socket_addrs()
            .is_ok_and(|mut addrs| addrs.next().is_some());
        if !resolves {
            return Err(invalid(
                "listen",
                &self.listen,
                "HOST:PORT, e.g. 127.0.0.1:8080",
            ));
        }
        if !(self.public_url.starts_with("http://") || self.public_url.starts_with("https://")) {
            return Err(invalid(
                "public_url",
                &self.public_url,
                "an http:// or https:// URL",
            ));
        }
        if let Err(e) = DatabaseUrl::parse(&self.database.url) {
            return Err(ConfigError::Invalid {
                key: "database.url",
                origin: String::new(),
                value: mask_url_password(&self.database.url),
                expected: e.to_string(),
            });
        }
        if self.database.pool_size == 0 {
            return Err(invalid("database.pool_size", "0", "at least 1"));
        }
        if self.server.max_body_bytes < 1024 {
            return Err(invalid(
                "server.max_body_bytes",
                &self.server.max_body_bytes.to_string(),
                "at least 1024",
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return Err(ConfigError::Invalid {
                key: "log.level",
                origin: String::new(),
                value: self.log.level.clone(),
                expected: format!("a tracing filter such as `info` ({e})"),
            });
        }
        if self.webhooks.max_body_bytes < 1024 {
            return Err(invalid(
                "webhooks.max_body_bytes",
                &self.webhooks.max_body_bytes.to_string(),
                "at least 1024",
            ));
        }
        if actix_web::http::header::HeaderName::from_bytes(
            self.webhooks.grafana_timestamp_header.as_bytes(),
        )
        .is_err()
        {
            return Err(invalid(
                "webhooks.grafana_timestamp_header",
                &self.webhooks.grafana_timestamp_header,
                "an HTTP header name",
            ));
        }
        if self.coe.max_section_bytes < 1024 {
            return Err(invalid(
                "coe.max_section_bytes",
                &self.coe.max_section_bytes.to_string(),
                "at least 1024",
            ));
        }
        for (service, owner) in &self.ownership.services {
            if EmailAddress::parse(owner).is_err() {
                return Err(ConfigError::Invalid {
                    key: "ownership.services",
                    origin: String::new(),
                    value: format!("{service} = {owner}"),
                    expected: "an email address for each service".into(),
                });
            }
        }
        if let Some(owner) = &self.ownership.default_owner {
            if EmailAddress::parse(owner).is_err() {
                return Err(invalid(
                    "ownership.default_owner",
                    owner,
                    "an email address",
                ));
            }
        }
        if self.org.timezone.parse::<chrono_tz::Tz>().is_err() {
            return Err(invalid(
                "org.timezone",
                &self.org.timezone,
                "an IANA time zone name such as UTC or Europe/Berlin",
            ));
        }
        self.template()?;
        if let Some(url) = &self.smtp.url {
            let parsed = url::Url::parse(url).ok();
            let tls = parsed.as_ref().and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "tls")
                    .map(|(_, v)| v.into_owned())
            });
            let usable = matches!(
                (parsed.as_ref().map(|u| u.scheme()), tls.as_deref()),
                (Some("smtps"), None) | (Some("smtp"), None | Some("required" | "opportunistic"))
            );
            if !usable || parsed.as_ref().and_then(|u| u.host_str()).is_none() {
                return Err(ConfigError::Invalid {
                    key: "smtp.url",
                    origin: String::new(),
                    value: mask_url_password(url),
                    expected: "smtp://[USER:PASS@]HOST[:PORT][?tls=required|opportunistic] or smtps://[USER:PASS@]HOST[:PORT]".into(),
                });
            }
            if self.smtp.ca_file.is_some() && !url.starts_with("smtps://") && tls.is_none() {
                return Err(ConfigError::Invalid {
                    key: "smtp.ca_file",
                    origin: String::new(),
                    value: mask_url_password(url),
                    expected: "an smtp.url with TLS (smtps:// or ?tls=required) for a CA to matter"
                        .into(),
                });
            }
        }
        if let Some(ca) = &self.smtp.ca_file {
            if !ca.is_file() {
                return Err(ConfigError::Invalid {
                    key: "smtp.ca_file",
                    origin: String::new(),
                    value: ca.display().to_string(),
                    expected: "a readable PEM file".into(),
                });
            }
        }
        self.validate_email()
    }

    fn validate_email(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        if self.mode == Mode::Production && self.smtp.url.is_none() {
            return Err(invalid(
                "smtp.url",
                "(unset)",
                "an smtp:// or smtps:// URL: in production mode emails must go to an SMTP server, not to files",
            ));
        }
        if let Err(e) = self.email.from.parse::<lettre::message::Mailbox>() {
            return Err(invalid(
                "email.from",
                &self.email.from,
                &format!("an address such as `coe <coe@example.com>` ({e})"),
            ));
        }
        let r = &self.reminders;
        if r.interval_secs == 0 {
            return Err(invalid("reminders.interval_secs", "0", "at least 1"));
        }
        if r.delivery_interval_secs == 0 {
            return Err(invalid(
                "reminders.delivery_interval_secs",
                "0",
                "at least 1",
            ));
        }
        if r.send_hour > 23 {
            return Err(invalid(
                "reminders.send_hour",
                &r.send_hour.to_string(),
                "an hour from 0 to 23",
            ));
        }
        for (key, value) in [
            ("reminders.due_soon_days", r.due_soon_days),
            ("reminders.escalate_after_days", r.escalate_after_days),
        ] {
            if !(0..=365).contains(&value) {
                return Err(invalid(key, &value.to_string(), "0 to 365 days"));
            }
        }
        for (key, value) in [
            ("reminders.digest_every_days", r.digest_every_days),
            ("reminders.escalation_every_days", r.escalation_every_days),
            ("reminders.writeup_every_days", r.writeup_every_days),
        ] {
            if !(1..=365).contains(&value) {
                return Err(invalid(key, &value.to_string(), "1 to 365 days"));
            }
        }
        let longest = r
            .digest_every_days
            .max(r.escalation_every_days)
            .max(r.writeup_every_days)
            .max(7);
        if !(longest..=3650).contains(&r.keep_sent_days) {
            return Err(invalid(
                "reminders.keep_sent_days",
                &r.keep_sent_days.to_string(),
                &format!(
                    "{longest} to 3650 days (not less than the longest reminder period, so that a kept key stops a resend)"
                ),
            ));
        }
        if r.max_attempts < 1 {
            return Err(invalid(
                "reminders.max_attempts",
                &r.max_attempts.to_string(),
                "at least 1",
            ));
        }
        if r.retry_base_secs == 0 || r.retry_max_secs < r.retry_base_secs {
            return Err(invalid(
                "reminders.retry_base_secs",
                &r.retry_base_secs.to_string(),
                "at least 1 and not above reminders.retry_max_secs",
            ));
        }
        if r.retry_max_secs > 30 * 86_400 {
            return Err(invalid(
                "reminders.retry_max_secs",
                &r.retry_max_secs.to_string(),
                "at most 2592000 (30 days)",
            ));
        }
        if !(1..=365).contains(&self.coe.writeup_days) {
            return Err(invalid(
                "coe.writeup_days",
                &self.coe.writeup_days.to_string(),
                "1 to 365 days",
            ));
        }
        if r.interval_secs > 86_400 || r.delivery_interval_secs > 86_400 {
            return Err(invalid(
                "reminders.interval_secs",
                &r.interval_secs.max(r.delivery_interval_secs).to_string(),
                "at most 86400 (a day), for both intervals",
            ));
        }
        if r.lease_secs > 86_400 {
            return Err(invalid(
                "reminders.lease_secs",
                &r.lease_secs.to_string(),
                "at most 86400 (a day)",
            ));
        }
        let slowest_send = 15 * crate::email::transport::SMTP_TIMEOUT.as_secs();
        if r.lease_secs < slowest_send {
            return Err(invalid(
                "reminders.lease_secs",
                &r.lease_secs.to_string(),
                &format!("at least {slowest_send} (longer than the slowest SMTP conversation)"),
            ));
        }
        if !(1..=10_000).contains(&r.batch_size) {
            return Err(invalid(
                "reminders.batch_size",
                &r.batch_size.to_string(),
                "1 to 10000",
            ));
        }
        for recipient in &self.digest.recipients {
            if EmailAddress::parse(recipient).is_err() {
                return Err(invalid(
                    "digest.recipients",
                    recipient,
                    "a list of email addresses",
                ));
            }
        }
        if self.digest.weekday.parse::<chrono::Weekday>().is_err() {
            return Err(invalid(
                "digest.weekday",
                &self.digest.weekday,
                "a day of the week such as monday",
            ));
        }
        if let Some(dir) = &self.email.templates_dir {
            if !dir.is_dir() {
                return Err(invalid(
                    "email.templates_dir",
                    &dir.display().to_string(),
                    "an existing folder of email templates",
                ));
            }
        }
        Ok(())
    }

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

    /// The real now, in the organisation's time zone.
    pub fn clock(&self) -> crate::domain::Clock {
        crate::domain::Clock::now_in(self.org_timezone())
    }

    /// The owner of COEs for `service`, from `ownership`.
    pub fn owner_for(&self, service: Option<&str>) -> Option<String> {
        service
            .and_then(|s| self.ownership.services.get(s))
            .or(self.ownership.default_owner.as_ref())
            .and_then(|e| EmailAddress::parse(e).ok())
            .map(String::from)
    }

    /// The effective settings as TOML, with passwords in URLs masked.
    pub fn to_masked_toml(&self) -> String {
        let mut masked = self.clone();
        masked.database.url = mask_url_password(&masked.database.url);
        masked.smtp.url = masked.smtp.url.as_deref().map(mask_url_password);
        let hide = |s: &mut Option<String>| {
            if s.is_some() {
                *s = Some("***".into());
            }
        };
        hide(&mut masked.webhooks.pagerduty_secret);
        hide(&mut masked.webhooks.grafana_secret);
        hide(&mut masked.webhooks.sentry_secret);
        toml::to_string_pretty(&masked).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    /// The parsed database URL; `validate` has already accepted it.
    pub fn database_url(&self) -> DatabaseUrl {
        DatabaseUrl::parse(&self.database.url).unwrap_or(DatabaseUrl::Sqlite("coe.db".into()))
    }
}

impl ConfigError {
    fn with_origin(self, origin_of: impl Fn(&str) -> String) -> Self {
        match self {
            ConfigError::Invalid {
                key,
                value,
                expected,
                ..
            } => ConfigError::Invalid {
                key,
                origin: origin_of(key),
                value,
                expected,
            },
            other => other,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Development => "development",
            Mode::Production => "production",
        })
    }
}

/// `database_url` → `database.url`; `listen` → `listen`.
fn env_key_to_setting(key: &str) -> String {
    for section in SECTIONS {
        if let Some(rest) = key.strip_prefix(section).and_then(|r| r.strip_prefix('_')) {
            return format!("{section}.{rest}");
        }
    }
    key.to_owned()
}

fn origin_of(figment: &Figment, key: &str) -> String {
    figment
        .find_metadata(key)
        .map(describe_origin)
        .unwrap_or_default()
}

/// " (from TOML file /etc/coe.toml)", " (from `COE_` environment variable(s))", or
/// nothing for defaults and flags.
fn describe_origin(meta: &figment::Metadata) -> String {
    match &meta.source {
        Some(figment::Source::File(path)) => format!(" (from {} {})", meta.name, path.display()),
        _ if meta.name.contains("Env") || meta.name.contains("environment") => {
            format!(" (from {})", meta.name)
        }
        _ => String::new(),
    }
}

fn describe_figment_error(error: &figment::Error) -> ConfigError {
    let mut messages = Vec::new();
    for e in error.clone() {
        let key = e.path.join(".");
        let origin = e.metadata.as_ref().map(describe_origin).unwrap_or_default();
        let what = e.kind.to_string();
        messages.push(if key.is_empty() {
            format!("{what}{origin}")
        } else {
            format!("setting `{key}`{origin}: {what}")
        });
    }
    ConfigError::Parse(messages.join("; "))
}

/// Replaces the password of `scheme://user:password@host` with `***`.
pub fn mask_url_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end + 3],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_keys_map_to_sections() {
        assert_eq!(env_key_to_setting("database_url"), "database.url");
        assert_eq!(
            env_key_to_setting("server_max_body_bytes"),
            "server.max_body_bytes"
        );
        assert_eq!(env_key_to_setting("listen"), "listen");
        assert_eq!(env_key_to_setting("public_url"), "public_url");
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_url_password("postgres://coe:s3cret@db:5432/coe"),
            "postgres://coe:***@db:5432/coe"
        );
        assert_eq!(
            mask_url_password("smtp://u:p@h:25?tls=required"),
            "smtp://u:***@h:25?tls=required"
        );
        assert_eq!(mask_url_password("sqlite://coe.db"), "sqlite://coe.db");
        assert_eq!(
            mask_url_password("postgres://coe@db/coe"),
            "postgres://coe@db/coe"
        );
    }

    #[test]
    fn defaults_are_valid() {
        Settings::default().validate().expect("defaults validate");
    }
}
