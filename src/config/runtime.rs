//! How the process runs, apart from the product's rules: development or production,
//! the database connection, the HTTP server, logs, the SMTP server and where emails go
//! without one. (`secret` gives the two that hold secrets their masked `Debug`.)

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Development,
    Production,
}

#[derive(Clone, Serialize, Deserialize, PartialEq)]
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
    /// Seconds between SIGTERM and closing the listener, while `/readyz` answers 503 and
    /// every other request is served as before: a load balancer or proxy that checks
    /// readiness stops sending requests here, and one that does not (nginx) still finds
    /// the replica up until its peers have been told. 0: close at once.
    pub drain_secs: u64,
    /// Seconds a client has to send a request's head (line and headers) once
    /// connected; slower ones get `408` and the connection is closed.
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body; slower ones (say, one
    /// that declares more `Content-Length` than it sends) get `408` and the
    /// connection is closed.
    pub body_timeout_secs: u64,
    /// Milliseconds a full-text search may run before it is stopped and answered
    /// `503` (a search is words matched against every COE; a few take far longer
    /// than any page should).
    pub search_timeout_ms: u64,
    /// Searches that may run at once; more wait for one to end (as long as a search
    /// may take), then are answered `503`. Keeps searching from taking the database
    /// connections every other request needs: keep it below `database.pool_size`.
    pub searches_at_once: usize,
    /// How often the figures job counts the figures about the past (actions closed,
    /// the weeks, the coverage audit's closings) ahead of the views, which read that
    /// count with the live counters and say when it was made; 0: no job, every view
    /// counts them itself (always current, and as slow as a count).
    pub figures_every_secs: u64,
    /// The name this process claims the emails and chat messages it sends under, so
    /// that when it starts again after a crash it gives back at once what it was
    /// sending (instead of leaving it to `reminders.lease_secs`). Unique per replica;
    /// empty: the host's name and the address the server listens on.
    pub replica_name: String,
    /// Whether the chat channels and trackers admins keep in coe may point at this
    /// host (`127.0.0.1`, `localhost`, `::1`): off, an admin cannot turn coe into a
    /// client of the services on its own host. The settings file's always may.
    pub connections_on_loopback: bool,
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

/// How long each step of an SMTP conversation (connecting, each command, the reply
/// to the message) may take. Not a setting: a conversation is about a dozen steps,
/// and validation requires `reminders.lease_secs` to be at least 15 times this.
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Serialize, Deserialize, PartialEq, Default)]
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
    /// The `Reply-To:` of every email, when replies should reach people (a team's
    /// list) rather than `from`.
    pub reply_to: Option<String>,
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
            drain_secs: 5,
            header_timeout_secs: 10,
            body_timeout_secs: 60,
            search_timeout_ms: 2_000,
            searches_at_once: 2,
            connections_on_loopback: false,
            figures_every_secs: 300,
            replica_name: String::new(),
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
            reply_to: None,
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
