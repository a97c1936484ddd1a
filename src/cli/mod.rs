//! The command line: `coe serve | migrate | check-config | token …`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::{LogFormat, Overrides, Settings};
use crate::db;
use crate::email::{EmailTemplates, Transport};
use crate::services::outbound::outbox;
use crate::services::{directory::tokens, reminders, sweep_settings};
use crate::startup::{self, Application};
use crate::telemetry;

mod access;
mod database;

/// coe: the Correction of Errors service.
///
/// Takes failure events from alerting systems, opens a structured root-cause writeup
/// (a COE) for each significant incident, tracks every corrective action to closure,
/// and emails owners, then their managers, when actions go overdue.
///
/// Settings come from a TOML file (--config or COE_CONFIG), then COE_* environment
/// variables, then these flags. With none of them, `coe serve` runs on a SQLite file
/// `coe.db` in the working directory and writes emails to ./outbox/.
#[derive(Debug, Parser)]
#[command(name = "coe", version, about, long_about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Settings file (TOML). Environment variables and flags override it.
    #[arg(long, global = true, env = "COE_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Database: sqlite://PATH, a file path, or postgres://USER:PASS@HOST/DB
    /// [env: COE_DATABASE_URL] [default: sqlite://coe.db]
    #[arg(long, global = true, value_name = "URL")]
    pub database_url: Option<String>,
    /// Log format on stderr: text for people, json for log collectors [env: COE_LOG_FORMAT]
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service (applies pending migrations first).
    Serve {
        /// Address to listen on [env: COE_LISTEN] [default: 127.0.0.1:8080]
        #[arg(long, value_name = "HOST:PORT")]
        listen: Option<String>,
        /// On an empty database, first fill it with the demo organisation (see `coe demo`);
        /// a database that holds data is served as it is.
        #[arg(long)]
        demo: bool,
        /// Apply no migration: refuse to start unless the schema is exactly the one this
        /// version needs (for operators who run `coe migrate` as a step of its own).
        #[arg(long, conflicts_with = "demo")]
        no_migrate: bool,
    },
    /// Fill an empty database with a demo organisation: people and managers, a month of
    /// incidents, COEs in every state, actions on time, due soon and overdue. Refused on a
    /// database that holds data.
    Demo,
    /// Apply pending database migrations and exit. Refuses (exit 2) a database that
    /// holds migrations this version does not know (a newer coe migrated it).
    Migrate {
        /// List the applied and pending migrations by name (marking those that need every
        /// replica stopped first); apply nothing.
        #[arg(long, conflicts_with = "unattended")]
        status: bool,
        /// For the package's upgrade and other automation: apply nothing when a pending
        /// migration needs every replica stopped first (say which, exit 3); else, on
        /// SQLite, back the database up before migrating it.
        #[arg(long)]
        unattended: bool,
        /// Where --unattended puts the backup [default: backups/ beside the database]
        #[arg(long, value_name = "DIR", requires = "unattended")]
        backup_dir: Option<PathBuf>,
    },
    /// Copy the SQLite database into a new file while the service runs (a consistent
    /// snapshot, checked with SQLite's integrity check). On PostgreSQL: says how to use
    /// pg_dump.
    Backup {
        /// The new file to write (never overwritten)
        path: PathBuf,
        /// Keep the secrets of the chat channels and trackers kept in coe, sealed with
        /// the secret key (left out by default: restored, those wait for an admin to
        /// give them again)
        #[arg(long)]
        with_secrets: bool,
    },
    /// Put a backup in place of the SQLite database. Refuses while a coe process holds
    /// the database; checks the copy first; keeps the replaced database beside it as
    /// `<name>.replaced-<time>`. On PostgreSQL: says how to use pg_restore.
    Restore {
        /// The backup to restore (made by `coe backup`)
        path: PathBuf,
        /// Replace a database SQLite cannot read (corrupt), whose holders cannot be
        /// checked: only once every coe process using it is stopped.
        #[arg(long)]
        force: bool,
    },
    /// SQLite: rewrite the database compact and let it shrink by itself from then on
    /// (auto_vacuum = INCREMENTAL, which a database made before version 0.1's
    /// retention lacks). Run once with every coe process stopped.
    Vacuum,
    /// Validate the settings and print the effective configuration, secrets masked.
    CheckConfig,
    /// Create, list and revoke API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Make a one-time sign-in link for a person of the directory and print it once (on
    /// stdout), without email: the way in while the SMTP server holds the emailed links.
    /// Refused for one who left or is not in the directory. Audited; it expires as an
    /// emailed link does, and only its hash is stored.
    SignInLink {
        /// The person's email address, as the directory has it
        email: String,
    },
    /// The outbox by hand.
    #[command(subcommand)]
    Outbox(OutboxCommand),
    /// Print the OpenAPI 3 document of the HTTP API (as served at /api/openapi.json).
    Openapi,
    /// Run one reminder sweep and one delivery pass, then exit (for cron and tests).
    Sweep {
        /// Print the emails that would be queued; queue and send nothing.
        #[arg(long)]
        dry_run: bool,
        /// Evaluate the reminder policy as if it were this time (RFC 3339), e.g. to
        /// preview next week's reminders.
        #[arg(long, value_name = "RFC3339", value_parser = parse_rfc3339)]
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
}

fn parse_rfc3339(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("expected an RFC 3339 time such as 2026-12-07T09:30:00+01:00 ({e})"))
}

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// After a restore coe cannot tell (PostgreSQL restored into the same tables, e.g.
    /// `pg_restore --data-only`), run before `coe serve`: does what a detected restore
    /// does — expires sign-in links, drops their emails and notices older than a day,
    /// and holds every other email waiting or being sent for an admin. Audited.
    HoldPending,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret once (on stdout; notes go to stderr).
    Create {
        /// A name to list and revoke it by: letters, digits, '-', '_', '.'
        #[arg(long)]
        name: String,
        /// admin: everything; member: read and write COEs and actions; ingest: post events only;
        /// scim: the identity provider's provisioning at /scim/v2 only
        #[arg(long, value_parser = ["admin", "member", "ingest", "scim"])]
        role: String,
        /// The person the token acts for (recorded as the actor of changes)
        #[arg(long, value_name = "PERSON")]
        email: Option<String>,
    },
    /// List tokens (never their secrets).
    List {
        /// Include revoked tokens.
        #[arg(long)]
        all: bool,
    },
    /// Revoke the active token with this name; requests with it get 401 from then on.
    Revoke {
        /// The token's name
        name: String,
    },
}

/// A failure of a command, with the exit code it maps to.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn settings(message: impl ToString) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
    /// An operator must act first (exit 3): e.g. stop every replica before a migration.
    fn operator(message: impl ToString) -> Self {
        Failure {
            code: 3,
            message: message.to_string(),
        }
    }
    fn runtime(message: impl ToString) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
    /// A database error: exit 2 when the schema is not one this version may run on.
    fn database(error: db::DbError) -> Self {
        match error {
            db::DbError::UnknownMigrations(_) | db::DbError::PendingMigrations(_) => {
                Failure::settings(error)
            }
            _ => Failure::runtime(error),
        }
    }
}

/// Runs the parsed command line; the exit code says how it went.
pub fn run(cli: Cli) -> ExitCode {
    let listen = match &cli.command {
        Command::Serve { listen, .. } => listen.clone(),
        _ => None,
    };
    let overrides = Overrides {
        listen,
        database_url: cli.global.database_url.clone(),
        log_format: cli.global.log_format,
    };
    // How a fatal error is written: as the log is, once the settings say; before that
    // (unusable settings), as the flag or COE_LOG_FORMAT asks.
    let log_format = std::cell::Cell::new(cli.global.log_format.or_else(|| {
        std::env::var("COE_LOG_FORMAT")
            .ok()
            .filter(|v| v.trim().eq_ignore_ascii_case("json"))
            .map(|_| LogFormat::Json)
    }));
    let result = Settings::load(cli.global.config.as_deref(), &overrides)
        .map_err(Failure::settings)
        .and_then(|settings| {
            log_format.set(Some(settings.log.format));
            if !matches!(cli.command, Command::CheckConfig | Command::Openapi) {
                telemetry::init(&settings.log);
            }
            match cli.command {
                Command::Serve {
                    demo, no_migrate, ..
                } => {
                    if demo {
                        demo_on_empty(&settings)?;
                    }
                    let migrations = if no_migrate {
                        // Opening a SQLite file that is not there makes an empty one: a
                        // mistyped path would serve an empty database, not the operator's.
                        if let Ok(crate::config::database::DatabaseUrl::Sqlite(path)) =
                            crate::config::database::DatabaseUrl::parse(&settings.database.url)
                        {
                            if !path.exists() {
                                return Err(Failure::settings(format!(
                                    "database.url: {} does not exist, and --no-migrate makes no \
                                     database (run `coe migrate` first, or check the path)",
                                    path.display()
                                )));
                            }
                        }
                        startup::Migrations::RequireCurrent
                    } else {
                        startup::Migrations::Apply
                    };
                    serve(settings, migrations)
                }
                Command::Demo => fill_demo(&settings),
                Command::Migrate { status: true, .. } => database::status(&settings),
                Command::Migrate {
                    unattended: true,
                    backup_dir,
                    ..
                } => database::migrate_unattended(&settings, backup_dir.as_deref()),
                Command::Migrate { .. } => database::migrate(&settings),
                Command::Backup { path, with_secrets } => {
                    database::backup(&settings, &path, with_secrets)
                }
                Command::Restore { path, force } => database::restore(&settings, &path, force),
                Command::Vacuum => database::vacuum(&settings),
                Command::CheckConfig => check_config(&settings),
                Command::Token(command) => access::token(&settings, command),
                Command::SignInLink { email } => access::sign_in_link(&settings, &email),
                Command::Outbox(OutboxCommand::HoldPending) => database::hold_pending(&settings),
                Command::Sweep { dry_run, at } => sweep(&settings, dry_run, at),
                Command::Openapi => {
                    use utoipa::OpenApi;
                    let doc = crate::http::openapi::ApiDoc::openapi();
                    println!("{}", doc.to_pretty_json().map_err(Failure::runtime)?);
                    Ok(())
                }
            }
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if log_format.get() == Some(LogFormat::Json) {
                // One line in the log's own shape, for a collector that reads JSON only.
                let line = serde_json::json!({
                    "timestamp": crate::domain::clock::now()
                        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                    "level": "ERROR",
                    "message": failure.message,
                    "exit_code": failure.code,
                    "target": "coe::cli",
                });
                eprintln!("{line}");
            } else {
                eprintln!("error: {}", failure.message);
            }
            ExitCode::from(failure.code)
        }
    }
}

fn serve(settings: Settings, migrations: startup::Migrations) -> Result<(), Failure> {
    let transport = transport(&settings)?;
    let grace = Duration::from_secs(settings.server.shutdown_timeout_secs);
    actix_web::rt::System::new().block_on(async move {
        startup::ignore_hangups();
        let backend = settings.database_url().backend();
        let host = settings
            .listen
            .rsplit_once(':')
            .map(|(h, _)| h.to_owned())
            .unwrap_or_default();
        let app = Application::build(settings, migrations)
            .await
            .map_err(|e| match e {
                startup::StartupError::Database(e) => Failure::database(e),
                e => Failure::runtime(e),
            })?;
        let pool = app.pool().clone();
        let bootstrap = actix_web::web::block(move || -> Result<_, String> {
            let mut conn = pool.get().map_err(|e| e.to_string())?;
            tokens::ensure_admin_token(&mut conn).map_err(|e| e.to_string())
        })
        .await
        .map_err(Failure::runtime)?
        .map_err(Failure::runtime)?;
        if let Some(secret) = bootstrap {
            tracing::warn!(
                token = tokens::BOOTSTRAP_TOKEN_NAME,
                "created an admin token because none existed; its secret is printed once on standard output"
            );
            print_bootstrap_token(secret.expose());
        }
        if let (Some(port), Some(listen)) = (app.metrics_port(), &app.settings().metrics.listen) {
            let host = listen.rsplit_once(':').map_or(listen.as_str(), |(host, _)| host);
            tracing::info!(
                address = %format!("http://{host}:{port}"),
                serves = "/metrics /healthz /readyz",
                "metrics listening"
            );
        }
        tracing::info!(
            address = %format!("http://{host}:{}", app.port()),
            database = %backend,
            "listening"
        );
        let settings = app.settings();
        if settings.mode == crate::config::Mode::Development && !settings.local_trial() {
            tracing::warn!(
                listen = %settings.listen,
                because = %settings.beyond_a_local_trial().join("; "),
                "mode = development, but this is more than a local trial: sign-in is as in \
                 production (only the directory and auth.allowed_domains may sign in; sign-in \
                 links are never logged)"
            );
        }
        for everyone in app.settings().auth.proxies_trusting_everyone() {
            tracing::warn!(
                trusted_proxy = %everyone,
                "auth.trusted_proxies names every address: any client can set X-Forwarded-For \
                 (and, with auth.mode = \"proxy\", the signed-in person); name only the reverse \
                 proxy's addresses"
            );
        }
        startup::stop_on_signals(
            app.handle(),
            app.stopping().clone(),
            Duration::from_secs(app.settings().server.drain_secs),
            grace,
        );
        let jobs = crate::jobs::serve(crate::jobs::Parts {
            runtime: app.runtime().clone(),
            pool: app.pool().clone(),
            transport,
            bell: app.delivery_waker().clone(),
            registry: app.metrics().clone(),
        })
        .map_err(Failure::runtime)?;
        let served = app.run_until_stopped().await;
        jobs.stop();
        served.map_err(Failure::runtime)?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// The email transport the settings name, with a warning when it is not SMTP.
fn transport(settings: &Settings) -> Result<Transport, Failure> {
    if settings.smtp.url.is_none() {
        tracing::warn!(
            dir = %settings.email.file_dir.display(),
            "no SMTP server is configured (smtp.url / COE_SMTP_URL): emails are written as .eml files"
        );
    }
    Transport::from_settings(settings).map_err(Failure::settings)
}

fn sweep(
    settings: &Settings,
    dry_run: bool,
    at: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<(), Failure> {
    let transport = if dry_run {
        None
    } else {
        Some(transport(settings)?)
    };
    let (mut conn, _) = open(settings)?;
    // The sweep posts to the channels kept in coe as well as the settings file's; when
    // those cannot be read here (no key on this host), to the settings file's alone.
    let loaded = crate::services::Runtime::load(settings.clone()).map_err(Failure::settings)?;
    let runtime = match loaded.clone().with_kept_connections(&mut conn) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("warning: {e}; this sweep posts to the settings file's channels alone");
            loaded
        }
    };
    let env = runtime.env();
    for d in sweep_settings::differences(&mut conn, env).map_err(Failure::runtime)? {
        eprintln!(
            "warning: the servers sweeping this database use {} = {:?}, this run uses {:?}: \
             its emails would differ from theirs; run coe sweep with the servers' settings file \
             (--config or COE_CONFIG)",
            d.name, d.server, d.here
        );
    }
    if at.is_some() && !dry_run {
        eprintln!(
            "note: --at without --dry-run queues and sends now the emails due at that time, under \
             that day's (and week's) keys: those emails will not be sent again when that day (and \
             week) comes; the reminders of the days before it are not affected"
        );
    }
    let at = at.unwrap_or_else(chrono::Utc::now);
    let report = reminders::sweep(&mut conn, env, at, dry_run).map_err(Failure::runtime)?;
    println!("sweep at {} ({})", report.local_time, settings.org.timezone);
    if report.before_send_hour {
        println!(
            "before reminders.send_hour ({}:00): no reminders are due yet",
            settings.reminders.send_hour
        );
    }
    let verb = if dry_run { "would queue" } else { "queued" };
    println!(
        "{verb} {} email(s); {} already queued earlier",
        report.queued.len(),
        report.already_queued
    );
    if report.pruned.incidents > 0 || report.pruned.deliveries > 0 {
        println!(
            "dropped the {} event(s) of {} incident(s) past events.keep_days ({}) and {} \
             delivery(ies); {} page(s) given back to the file system",
            report.pruned.events,
            report.pruned.incidents,
            settings.events.keep_days,
            report.pruned.deliveries,
            report.pages_given_back
        );
    }
    if report.held > 0 {
        println!(
            "held {} email(s) their recipients' notification settings pause or leave out",
            report.held
        );
    }
    if report.purged > 0 {
        println!(
            "deleted {} sent email(s) older than reminders.keep_sent_days ({})",
            report.purged, settings.reminders.keep_sent_days
        );
    }
    if report.raw_bodies_purged > 0 {
        println!(
            "emptied {} raw webhook body(ies) older than webhooks.keep_raw_days ({})",
            report.raw_bodies_purged, settings.webhooks.keep_raw_days
        );
    }
    for p in &report.queued {
        println!("  {:<18} {:<32} {}", p.kind, p.recipient, p.subject);
    }
    if let Some(transport) = transport {
        let go = std::sync::atomic::AtomicBool::new(false);
        // A command's claims are its own: no later process gives them back early.
        let claimant = format!("{}/cli/{}", settings.replica_name(), std::process::id());
        crate::jobs::reminders::hold_if_restored(&mut conn).map_err(Failure::runtime)?;
        let delivered = outbox::deliver(&mut conn, &transport, env, &claimant, &go)
            .map_err(Failure::runtime)?;
        println!(
            "delivery via {}: {} sent, {} deferred, {} failed",
            transport.describe(),
            delivered.sent,
            delivered.deferred,
            delivered.failed
        );
        if !env.connections.channels.is_empty() {
            let chat = crate::services::outbound::chat::deliver(&mut conn, env, &claimant, &go)
                .map_err(Failure::runtime)?;
            println!(
                "chat: {} sent, {} deferred, {} failed",
                chat.sent, chat.deferred, chat.failed
            );
        }
    }
    Ok(())
}

/// Shown once, on the terminal, never through the logger.
fn print_bootstrap_token(secret: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\n================================ coe admin token ================================\n\
         No admin token existed, so one was created (name `{}`). It is shown only now:\n\n    {secret}\n\n\
         Use it as `Authorization: Bearer <token>`. Create named tokens with `coe token create`\n\
         and revoke this one with `coe token revoke {}`.\n\
         =================================================================================\n",
        tokens::BOOTSTRAP_TOKEN_NAME,
        tokens::BOOTSTRAP_TOKEN_NAME,
    );
    let _ = out.flush();
}

/// One connection with the schema migrated, for commands that run and exit.
/// Returns it with the versions the migration applied.
fn open(settings: &Settings) -> Result<(db::PooledConnection, Vec<String>), Failure> {
    let mut database = settings.database.clone();
    database.pool_size = 1;
    let url = settings.database_url();
    let pool = db::connect(&database).map_err(|e| Failure::runtime(e.explained(&url)))?;
    let mut conn = pool.get().map_err(Failure::runtime)?;
    let applied = db::migrate(&mut conn).map_err(|e| Failure::database(e.explained(&url)))?;
    Ok((conn, applied))
}

/// `coe demo`: seeds the database and says what to look at.
fn fill_demo(settings: &Settings) -> Result<(), Failure> {
    let (mut conn, _) = open(settings)?;
    let template = settings.template().map_err(Failure::settings)?;
    let emails = EmailTemplates::load(
        settings.email.templates_dir.as_deref(),
        &settings.public_url,
    )
    .map_err(Failure::settings)?;
    let report =
        crate::demo::seed(&mut conn, settings, &template, &emails).map_err(Failure::runtime)?;
    print_demo(settings, &report);
    Ok(())
}

/// `coe serve --demo`: seeds an empty database; leaves one with data as it is.
fn demo_on_empty(settings: &Settings) -> Result<(), Failure> {
    let (mut conn, _) = open(settings)?;
    if !crate::demo::is_empty(&mut conn).map_err(Failure::runtime)? {
        eprintln!("note: the database already holds data; --demo adds nothing to it");
        return Ok(());
    }
    drop(conn);
    fill_demo(settings)
}

fn print_demo(settings: &Settings, r: &crate::demo::DemoReport) {
    let states: Vec<String> = r.coes.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let base = settings.public_url.trim_end_matches('/');
    println!(
        "demo organisation added: {} people in 3 teams, {} incidents from {} alert events, COEs: {}, \
         {} corrective actions ({} overdue)\n\n\
         An admin token acting for {} (shown only now):\n\n    Authorization: Bearer {}\n\n\
         Look around (with `coe serve` running):\n\
         \x20   curl -H 'Authorization: Bearer {}' {base}/api/v1/stats\n\
         \x20   curl -H 'Authorization: Bearer {}' '{base}/api/v1/actions?overdue=true'\n\
         \x20   curl -H 'Authorization: Bearer {}' {base}/api/v1/coes\n\n\
         calendar feed: {}\n\n\
         Reminder and escalation emails go out at the next sweep ({}:00 {}); without an SMTP \
         server they are written as .eml files to {}.",
        r.people,
        r.incidents,
        r.events,
        states.join(", "),
        r.actions,
        r.overdue_actions,
        r.leader,
        r.token,
        r.token,
        r.token,
        r.token,
        r.calendar_url,
        settings.reminders.send_hour,
        settings.org.timezone,
        settings.email.file_dir.display(),
    );
}

fn check_config(settings: &Settings) -> Result<(), Failure> {
    crate::secrets::Keyring::check(settings).map_err(Failure::settings)?;
    println!("# the configuration is valid; effective settings (secrets masked):");
    print!("{}", settings.to_masked_toml());
    if settings.server.replica_name.trim().is_empty() {
        // Unset, it is made from the host's name and the address listened on.
        println!(
            "# server.replica_name is unset: this replica claims work as {:?}",
            settings.replica_name()
        );
    }
    check_provider(settings)
}

/// With `auth.mode = "oidc"`: fetches the provider's discovery document and keys, and
/// says whether people can sign in through it (exit 1 when not).
fn check_provider(settings: &Settings) -> Result<(), Failure> {
    let Some(provider) = crate::oidc::Provider::from_settings(settings)
        .map_err(|e| Failure::settings(format!("auth.oidc: {e}")))?
    else {
        return Ok(());
    };
    println!(
        "# the sign-in provider ({}/.well-known/openid-configuration):",
        provider.issuer().trim_end_matches('/')
    );
    let found = actix_web::rt::System::new()
        .block_on(provider.discover())
        .map_err(|e| Failure::runtime(format!("auth.oidc.issuer: {e}")))?;
    for line in found.describe() {
        println!("#   {line}");
    }
    found
        .usable()
        .map_err(|e| Failure::runtime(format!("auth.oidc.issuer: {e}")))?;
    println!(
        "# usable; register this redirect URI with the provider: {}",
        provider.redirect_uri()
    );
    Ok(())
}
