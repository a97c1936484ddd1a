//! Migrations: the same names for both backends; up, down and up again; replicas
//! migrating at once.

use std::collections::BTreeSet;
use std::path::Path;

use diesel::connection::SimpleConnection;
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

/// Reverts migrations, newest first, up to and including `version` (its digits:
/// diesel names `2026-12-15-000038_x` "20261215000038").
pub(crate) fn revert_to_before(conn: &mut DbConnection, version: &str) {
    use diesel_migrations::MigrationHarness;
    for _ in 0..100 {
        let reverted = match conn {
            DbConnection::Sqlite(c) => c.revert_last_migration(db::SQLITE_MIGRATIONS),
            DbConnection::Pg(c) => c.revert_last_migration(db::POSTGRES_MIGRATIONS),
        }
        .expect("revert a migration")
        .to_string();
        if reverted.starts_with(version) {
            return;
        }
    }
    panic!("{version} was never reverted");
}

#[test]
fn the_incident_groups_migration_names_every_group_and_goes_back() {
    use coe::db::schema::{incident_groups, incidents};
    let test_db = TestDatabase::new();
    let pool = db::connect(&test_settings(&test_db).database).expect("connect");
    let mut conn = pool.get().expect("conn");
    db::migrate(&mut conn).expect("migrate");
    revert_to_before(&mut conn, "20261215000038");

    // Incidents as the schema before held them: group "a" twice (the first resolved,
    // the second open), group "b" once.
    let now = coe::db::now();
    let mut ids = Vec::new();
    for (group, state) in [("a", "resolved"), ("b", "resolved"), ("a", "open")] {
        let id = db::new_id();
        diesel::insert_into(incidents::table)
            .values((
                incidents::id.eq(&id),
                incidents::group_key.eq(group),
                incidents::group_hash.eq(group.repeat(32).into_bytes()),
                incidents::source.eq("generic"),
                incidents::title.eq(format!("group {group}")),
                incidents::severity.eq(3),
                incidents::state.eq(state),
                incidents::started_at.eq(now),
                incidents::detected_at.eq(now),
                incidents::created_at.eq(now),
                incidents::updated_at.eq(now),
            ))
            .execute(&mut conn)
            .expect("an incident of the schema before");
        ids.push(id);
    }

    db::migrate(&mut conn).expect("migrate again");
    let mut groups: Vec<(Vec<u8>, String)> = incident_groups::table
        .select((incident_groups::group_hash, incident_groups::group_id))
        .order(incident_groups::group_id.asc())
        .load(&mut conn)
        .expect("groups");
    groups.sort();
    assert_eq!(
        groups,
        vec![
            ("a".repeat(32).into_bytes(), ids[0].clone()),
            ("b".repeat(32).into_bytes(), ids[1].clone()),
        ],
        "each group named by its first incident"
    );
    let mut named: Vec<(String, String)> = incidents::table
        .select((incidents::id, incidents::group_id))
        .load(&mut conn)
        .expect("incidents");
    named.sort();
    let mut expected = vec![
        (ids[0].clone(), ids[0].clone()),
        (ids[1].clone(), ids[1].clone()),
        (ids[2].clone(), ids[0].clone()),
    ];
    expected.sort();
    assert_eq!(named, expected, "each incident in its group");
    // An incident without its group's name (as a version from before would write it)
    // is refused, not stored where no look-up finds it.
    let unnamed = diesel::insert_into(incidents::table)
        .values((
            incidents::id.eq(db::new_id()),
            incidents::group_key.eq("c"),
            incidents::group_hash.eq("c".repeat(32).into_bytes()),
            incidents::source.eq("generic"),
            incidents::title.eq("group c"),
            incidents::severity.eq(3),
            incidents::state.eq("open"),
            incidents::started_at.eq(now),
            incidents::detected_at.eq(now),
            incidents::created_at.eq(now),
            incidents::updated_at.eq(now),
        ))
        .execute(&mut conn);
    assert!(
        unnamed.is_err(),
        "an incident without a group name was stored"
    );
    // One open incident per group still holds, now on the group's name.
    let second_open = diesel::update(incidents::table.find(&ids[0]))
        .set(incidents::state.eq("open"))
        .execute(&mut conn);
    assert!(second_open.is_err(), "a second open incident in group a");

    revert_to_before(&mut conn, "20261215000038");
    let objects = objects(&mut conn);
    assert!(!objects.contains("incident_groups"), "{objects:?}");
    assert!(objects.contains("incidents_one_open_per_group"));
    let kept: i64 = incidents::table
        .filter(incidents::group_hash.eq("a".repeat(32).into_bytes()))
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(kept, 2, "the incidents are kept going back");
    db::migrate(&mut conn).expect("and forth again");
}

/// Runs SQL on the test database outside coe (as an operator's tool would).
fn execute(db_url: &str, sql: &str) {
    if on_postgres() {
        let mut conn = diesel::PgConnection::establish(db_url).expect("connect");
        conn.batch_execute(sql).expect(sql);
    } else {
        let path = db_url.strip_prefix("sqlite://").expect("a sqlite URL");
        let mut conn = diesel::SqliteConnection::establish(path).expect("open");
        conn.batch_execute(sql).expect(sql);
    }
}

/// What the package runs on an upgrade (`coe migrate --unattended`): a new database is
/// migrated; one behind by an ordinary migration is backed up (SQLite) and migrated;
/// one behind a migration that needs every replica stopped is left as it is, exit 3,
/// naming it, and `migrate --status` marks it.
#[test]
fn an_unattended_migration_backs_up_first_and_never_passes_a_stop_every_replica_migration() {
    use crate::cli::{coe, stderr, stdout};
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let backups = tempfile::tempdir().expect("a folder for backups");
    let backup_dir = backups.path().to_string_lossy().into_owned();
    let unattended = ["migrate", "--unattended", "--backup-dir", &backup_dir];
    let backups_made = || std::fs::read_dir(backups.path()).expect("read").count();

    // A database never migrated: every migration applies, nothing to back up.
    let out = coe(&unattended, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("applied"), "{}", stdout(&out));
    assert_eq!(backups_made(), 0);

    // Behind by the last migration (an ordinary one): backed up on SQLite, then migrated.
    execute(
        &db.url,
        "ALTER TABLE outbox_emails DROP COLUMN private_link; \
         DELETE FROM __diesel_schema_migrations WHERE version = '20270102000056'",
    );
    let out = coe(&["migrate", "--status"], &env);
    assert!(
        stdout(&out).contains("pending  2027-01-02-000056_outbox_private_links\n"),
        "{}",
        stdout(&out)
    );
    let out = coe(&unattended, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("20270102000056"), "{}", stdout(&out));
    if on_postgres() {
        assert_eq!(
            backups_made(),
            0,
            "PostgreSQL is backed up with its own tools"
        );
    } else {
        assert_eq!(backups_made(), 1);
        let backup = std::fs::read_dir(backups.path())
            .expect("read")
            .next()
            .expect("one")
            .expect("entry")
            .path();
        let name = backup
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("coe-before-migrating-"), "{name}");
        // The backup is the database before the migration.
        let copy = format!("sqlite://{}", backup.display());
        let out = coe(
            &["migrate", "--status"],
            &[("COE_DATABASE_URL", copy.as_str())],
        );
        assert!(stdout(&out).contains("1 pending"), "{}", stdout(&out));
    }
    assert!(stdout(&coe(&["migrate", "--status"], &env)).contains("0 pending"));

    // Behind a migration that needs every replica stopped: nothing applied, exit 3.
    execute(
        &db.url,
        "DELETE FROM __diesel_schema_migrations WHERE version = '20261215000038'",
    );
    let out = coe(&["migrate", "--status"], &env);
    assert!(
        stdout(&out).contains(
            "pending  2026-12-15-000038_incident_groups  (stop every replica before it runs)"
        ),
        "{}",
        stdout(&out)
    );
    let before = backups_made();
    let out = coe(&unattended, &env);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("2026-12-15-000038_incident_groups") && said.contains("stopped"),
        "{said}"
    );
    assert_eq!(
        backups_made(),
        before,
        "nothing to back up when nothing is applied"
    );
    assert!(stdout(&coe(&["migrate", "--status"], &env)).contains("1 pending"));
}

/// A new database's first start logs no error: the pool opens its connections after
/// the migration, not while it holds SQLite's write lock (which once logged "database
/// unreachable … database is locked" on one start in three).
#[test]
fn a_new_database_starts_without_an_error() {
    use crate::cli::{http_get, serve};
    for _ in 0..3 {
        let db = TestDatabase::new();
        let served = serve(&db.url, &[]);
        assert!(http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200"));
        let logs = served.logs.lock().expect("logs").clone();
        let errors: Vec<&String> = logs.iter().filter(|l| l.contains("\"ERROR\"")).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}
