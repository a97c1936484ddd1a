//! Migrations: the same names for both backends; up, down and up again; replicas
//! migrating at once.

use std::collections::BTreeSet;
use std::path::Path;

use diesel::prelude::*;
use diesel::sql_types::Text;

use coe::db::{self, DbConnection};

use crate::helpers::{on_postgres, test_settings, TestDatabase};

fn migration_names(backend: &str) -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let entry = entry.expect("entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            for file in ["up.sql", "down.sql"] {
                assert!(
                    entry.path().join(file).is_file(),
                    "{backend}/{name} has no {file}"
                );
            }
            name
        })
        .collect()
}

#[test]
fn both_backends_have_the_same_migration_names() {
    let sqlite = migration_names("sqlite");
    let postgres = migration_names("postgres");
    assert!(!sqlite.is_empty());
    assert_eq!(
        sqlite, postgres,
        "migrations/sqlite and migrations/postgres differ"
    );
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// Tables and indexes of ours in the database (not diesel's bookkeeping).
fn objects(conn: &mut DbConnection) -> BTreeSet<String> {
    let sql = match conn {
        DbConnection::Sqlite(_) => {
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'index', 'trigger', 'view') \
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__diesel%'"
        }
        DbConnection::Pg(_) => {
            "SELECT CAST(relname AS TEXT) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'public' AND relname NOT LIKE '__diesel%'"
        }
    };
    diesel::sql_query(sql)
        .load::<Name>(conn)
        .expect("list objects")
        .into_iter()
        .map(|n| n.name)
        .collect()
}

#[test]
fn migrations_run_revert_and_run_again() {
    let test_db = TestDatabase::new();
    let settings = test_settings(&test_db);
    let pool = db::connect(&settings.database).expect("connect");
    let mut conn = pool.get().expect("conn");
    assert_eq!(
        conn.backend().to_string(),
        if on_postgres() { "postgres" } else { "sqlite" }
    );

    let applied = db::migrate(&mut conn).expect("first run");
    assert!(!applied.is_empty());
    let created = objects(&mut conn);
    assert!(created.contains("api_tokens"), "{created:?}");

    db::revert_all(&mut conn).expect("revert");
    assert_eq!(
        objects(&mut conn),
        BTreeSet::new(),
        "down.sql left objects behind"
    );

    let again = db::migrate(&mut conn).expect("second run");
    assert_eq!(again, applied);
    assert_eq!(objects(&mut conn), created);
    assert!(db::migrate(&mut conn).expect("third run").is_empty());
}

#[test]
fn replicas_migrating_at_once_apply_each_migration_once() {
    let test_db = TestDatabase::new();
    let settings = test_settings(&test_db);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let database = settings.database.clone();
            std::thread::spawn(move || {
                let pool = db::connect(&database).expect("connect");
                let mut conn = pool.get().expect("conn");
                db::migrate(&mut conn).expect("migrate")
            })
        })
        .collect();
    let applied: Vec<Vec<String>> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let total: usize = applied.iter().map(Vec::len).sum();
    let expected = migration_names("sqlite").len();
    assert_eq!(
        total, expected,
        "each migration applied exactly once: {applied:?}"
    );
}

#[test]
fn sqlite_runs_in_wal_mode_with_foreign_keys() {
    if on_postgres() {
        return; // SQLite pragmas only.
    }
    #[derive(QueryableByName)]
    struct Mode {
        #[diesel(sql_type = Text)]
        journal_mode: String,
    }
    #[derive(QueryableByName)]
    struct Fk {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        foreign_keys: i32,
    }
    let test_db = TestDatabase::new();
    let pool = db::connect(&test_settings(&test_db).database).expect("connect");
    let mut conn = pool.get().expect("conn");
    let mode = diesel::sql_query("PRAGMA journal_mode")
        .get_result::<Mode>(&mut conn)
        .expect("pragma");
    assert_eq!(mode.journal_mode, "wal");
    let fk = diesel::sql_query("PRAGMA foreign_keys")
        .get_result::<Fk>(&mut conn)
        .expect("pragma");
    assert_eq!(fk.foreign_keys, 1);
    // Migrating journals to a temporary file (see `db::migrate`); the connection
    // keeps its temporary data in memory again afterwards.
    #[derive(QueryableByName)]
    struct TempStore {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        temp_store: i32,
    }
    db::migrate(&mut conn).expect("migrate");
    let temp = diesel::sql_query("PRAGMA temp_store")
        .get_result::<TempStore>(&mut conn)
        .expect("pragma");
    assert_eq!(temp.temp_store, 2, "MEMORY");
}
