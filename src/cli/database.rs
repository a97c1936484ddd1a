//! The commands that look after the database itself: `migrate [--status]`, `backup`
//! and `restore`.

use std::path::Path;

use super::{open, Failure};
use crate::config::database::DatabaseUrl;
use crate::config::Settings;
use crate::db::{self, backup::CopyError};
use crate::services::outbound::outbox;

/// `coe migrate`: applies pending migrations.
pub(super) fn migrate(settings: &Settings) -> Result<(), Failure> {
    let (_, applied) = open(settings)?;
    if applied.is_empty() {
        println!("the database schema is up to date");
    } else {
        println!("applied {} migration(s):", applied.len());
        for version in applied {
            println!("  {version}");
        }
    }
    Ok(())
}

/// `coe migrate --unattended`: what the package runs on an upgrade. Applies nothing
/// when a pending migration needs every replica stopped (exit 3, naming it and what to
/// do); otherwise, on SQLite, backs the database up into `backup_dir` (default
/// `backups/` beside it) and migrates.
pub(super) fn migrate_unattended(
    settings: &Settings,
    backup_dir: Option<&Path>,
) -> Result<(), Failure> {
    let status = read_status(settings)?;
    if !status.unknown.is_empty() {
        return Err(Failure::database(db::DbError::UnknownMigrations(
            status.unknown,
        )));
    }
    if status.pending.is_empty() {
        println!("the database schema is up to date: nothing to migrate");
        return Ok(());
    }
    let stopping = status.pending_stopping_every_replica();
    if !stopping.is_empty() {
        return Err(Failure::operator(format!(
            "not migrated: {} pending migration(s) need every coe process (every replica) \
             stopped before they run: {}. Stop coe everywhere, back the database up, run \
             `coe migrate` once, then start every replica on this version \
             (docs/operations.md, \"Migrations\")",
            stopping.len(),
            stopping.join(", ")
        )));
    }
    if let DatabaseUrl::Sqlite(path) = settings.database_url() {
        if !status.applied.is_empty() {
            let dir = match backup_dir {
                Some(dir) => dir.to_path_buf(),
                None => path
                    .parent()
                    .unwrap_or_else(|| Path::new("."))
                    .join("backups"),
            };
            std::fs::create_dir_all(&dir).map_err(|e| {
                Failure::runtime(format!("cannot make {} for the backup: {e}", dir.display()))
            })?;
            let name = format!(
                "coe-before-migrating-{}.db",
                crate::domain::clock::now().format("%Y%m%dT%H%M%SZ")
            );
            // The way back from a migration that goes wrong, beside the database: whole,
            // the sealed secrets too (the database holds them the same way).
            backup(settings, &dir.join(name), true)?;
        }
    }
    migrate(settings)
}

fn read_status(settings: &Settings) -> Result<db::MigrationStatus, Failure> {
    let mut database = settings.database.clone();
    database.pool_size = 1;
    let url = settings.database_url();
    let pool = db::connect(&database).map_err(|e| Failure::runtime(e.explained(&url)))?;
    let mut conn = pool.get().map_err(Failure::runtime)?;
    db::migration_status(&mut conn).map_err(Failure::runtime)
}

/// `coe migrate --status`: applied, pending and unknown migrations, by name, marking
/// the pending ones that need every replica stopped. Exits 2 when the database holds
/// migrations this version does not know.
pub(super) fn status(settings: &Settings) -> Result<(), Failure> {
    let status = read_status(settings)?;
    for name in &status.applied {
        println!("applied  {name}");
    }
    let stopping = status.pending_stopping_every_replica();
    for name in &status.pending {
        if stopping.contains(&name.as_str()) {
            println!("pending  {name}  (stop every replica before it runs)");
        } else {
            println!("pending  {name}");
        }
    }
    for version in &status.unknown {
        println!("unknown  {version} (applied by a newer coe)");
    }
    println!(
        "{} applied, {} pending, {} unknown",
        status.applied.len(),
        status.pending.len(),
        status.unknown.len()
    );
    if status.unknown.is_empty() {
        Ok(())
    } else {
        Err(Failure::database(db::DbError::UnknownMigrations(
            status.unknown,
        )))
    }
}

/// `coe backup PATH`.
pub(super) fn backup(settings: &Settings, path: &Path, with_secrets: bool) -> Result<(), Failure> {
    let (copied, withheld) = db::backup::backup(
        &settings.database_url(),
        path,
        settings.database.busy_timeout_ms,
        |conn| match with_secrets {
            true => Ok(0),
            false => crate::services::connections::withhold_secrets(conn),
        },
    )
    .map_err(failure)?;
    println!(
        "backed up to {} ({} bytes, {} migrations, integrity ok) in {} ms",
        copied.path.display(),
        copied.bytes,
        copied.migrations.applied.len(),
        copied.took.as_millis()
    );
    if withheld > 0 {
        println!(
            "the secrets of {withheld} chat channel(s) and tracker(s) kept in coe are left out: \
             restored, each waits for an admin to give them again (Admin → Chat, Admin → \
             Trackers); `--with-secrets` keeps them, sealed with the secret key"
        );
    }
    if !copied.migrations.unknown.is_empty() {
        println!(
            "the database holds {} migration(s) newer than this coe ({}): it was written by a \
             newer version, and only that version (or a later one) can serve this backup",
            copied.migrations.unknown.len(),
            copied.migrations.unknown.join(", ")
        );
    }
    if !copied.migrations.pending.is_empty() {
        println!(
            "the database lacks {} migration(s) of this coe: `coe migrate` (or `coe serve`) \
             applies them",
            copied.migrations.pending.len()
        );
    }
    Ok(())
}

/// `coe restore PATH`.
pub(super) fn restore(settings: &Settings, path: &Path, force: bool) -> Result<(), Failure> {
    let (copied, outbox) = db::backup::restore(&settings.database_url(), path, force, |conn| {
        outbox::restored::hold_after_restore(conn, db::now())
    })
    .map_err(failure)?;
    println!(
        "restored {} into {} ({} bytes, integrity ok) in {} ms",
        path.display(),
        copied.path.display(),
        copied.bytes,
        copied.took.as_millis()
    );
    if let Some(previous) = &copied.previous {
        println!(
            "the database it replaced is kept as {} (delete it once you no longer need it)",
            previous.display()
        );
    }
    if outbox.changed_anything() {
        println!("{}", outbox.describe());
    }
    if !copied.migrations.pending.is_empty() {
        println!(
            "the backup lacked {} migration(s) of this version: applied",
            copied.migrations.pending.len()
        );
    }
    Ok(())
}

/// `coe vacuum`.
pub(super) fn vacuum(settings: &Settings) -> Result<(), Failure> {
    let done = db::backup::vacuum(&settings.database_url()).map_err(failure)?;
    println!(
        "vacuumed: {} bytes before, {} after, in {} ms; freed pages now go back to the file \
         system at each sweep",
        done.before,
        done.after,
        done.took.as_millis()
    );
    Ok(())
}

fn failure(error: CopyError) -> Failure {
    match error {
        CopyError::Postgres(_) | CopyError::Refused(_) => Failure::settings(error),
        CopyError::InUse(_) | CopyError::Failed(_) => Failure::runtime(error),
    }
}

/// `coe outbox hold-pending`.
pub(super) fn hold_pending(settings: &Settings) -> Result<(), Failure> {
    let (mut conn, _) = open(settings)?;
    let done =
        outbox::restored::hold_by_hand(&mut conn, "host:command-line").map_err(Failure::runtime)?;
    println!("{}", done.describe());
    Ok(())
}
