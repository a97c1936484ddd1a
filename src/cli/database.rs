//! The commands that look after the database itself: `migrate [--status]`, `backup`
//! and `restore`.

use std::path::Path;

use super::{open, Failure};
use crate::config::Settings;
use crate::db::{self, backup::CopyError};
use crate::services::outbox;

/// `coe migrate`: applies pending migrations; `--status` lists them and applies none.
pub(super) fn migrate(settings: &Settings, status_only: bool) -> Result<(), Failure> {
    if status_only {
        return status(settings);
    }
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

/// `coe migrate --status`: applied, pending and unknown migrations, by name. Exits 2
/// when the database holds migrations this version does not know.
fn status(settings: &Settings) -> Result<(), Failure> {
    let mut database = settings.database.clone();
    database.pool_size = 1;
    let url = settings.database_url();
    let pool = db::connect(&database).map_err(|e| Failure::runtime(e.explained(&url)))?;
    let mut conn = pool.get().map_err(Failure::runtime)?;
    let status = db::migration_status(&mut conn).map_err(Failure::runtime)?;
    for name in &status.applied {
        println!("applied  {name}");
    }
    for name in &status.pending {
        println!("pending  {name}");
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
pub(super) fn backup(settings: &Settings, path: &Path) -> Result<(), Failure> {
    let copied = db::backup::backup(
        &settings.database_url(),
        path,
        settings.database.busy_timeout_ms,
    )
    .map_err(failure)?;
    println!(
        "backed up to {} ({} bytes, {} migrations, integrity ok) in {} ms",
        copied.path.display(),
        copied.bytes,
        copied.migrations.applied.len(),
        copied.took.as_millis()
    );
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
