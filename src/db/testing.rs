//! A throwaway database for unit tests: a SQLite file in a temporary folder,
//! migrated, dropped with the folder.

use super::{connect, migrate, DbPool};

/// A migrated SQLite database in a folder of its own; keep the folder while the
/// pool is used.
pub fn database() -> (tempfile::TempDir, DbPool) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let settings = crate::config::DatabaseSettings {
        url: format!("sqlite://{}", dir.path().join("t.db").display()),
        ..Default::default()
    };
    let pool = connect(&settings).expect("connect");
    migrate(&mut pool.get().expect("a connection")).expect("migrate");
    (dir, pool)
}
