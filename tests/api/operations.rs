//! What an operator does to a running `coe`: health checks beside an outside backup,
//! `coe backup` and `coe restore`, upgrades (`migrate --status`, `--no-migrate`, a
//! database a newer version migrated), signals, metrics and request logs. Each test
//! runs the real binary: SQLite's file locks belong to a process, and a test in the
//! suite's own process would share them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::{Connection, RunQueryDsl};

use crate::cli::{coe, http_get, serve, serve_with, sigterm, stderr, stdout, wait_exit, Served};
use crate::eventually::{eventually, try_until};
use crate::helpers::{on_postgres, TestDatabase};

/// The SQLite file of a test database (`None` on PostgreSQL).
fn sqlite_path(db: &TestDatabase) -> Option<PathBuf> {
    db.url.strip_prefix("sqlite://").map(PathBuf::from)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The files of `path` (its `-wal` and `-shm` included) that process `pid` holds open
/// although they were deleted: what it writes there is lost.
fn deleted_files_held(pid: u32, path: &Path) -> Vec<String> {
    let name = path.file_name().expect("a file name").to_string_lossy();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|t| t.contains(name.as_ref()) && t.ends_with("(deleted)"))
        .collect()
}

/// The POSIX locks `pid` holds (lines of /proc/locks).
fn locks_of(pid: u32) -> usize {
    std::fs::read_to_string("/proc/locks")
        .expect("/proc/locks")
        .lines()
        .filter(|l| l.split_whitespace().nth(4) == Some(pid.to_string().as_str()))
        .count()
}

/// An API token created through the running server (so it is a row written through
/// its connections, in its write-ahead log).
fn create_token(served: &Served, admin: &str, name: &str) {
    let body = format!(r#"{{"name":"{name}","role":"member"}}"#);
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {admin}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
}

fn token_names(db_url: &str) -> String {
    stdout(&coe(&["token", "list"], &[("COE_DATABASE_URL", db_url)]))
}

/// After `/readyz` (and the other health paths), the server still holds SQLite's
/// locks: another process that opens and closes the database, or backs it up, does
/// not take itself for the last user and delete the server's live write-ahead log.
#[test]
fn health_checks_leave_sqlite_its_locks_and_an_outside_backup_its_wal() {
    let db = TestDatabase::new();
    let Some(path) = sqlite_path(&db) else {
        return; // SQLite's files only.
    };
    let served = serve(&db.url, &[]);
    let pid = served.child.id();
    let admin = served.admin_token();
    create_token(&served, &admin, "before-checks");
    let held = locks_of(pid);
    assert!(held > 0, "the server holds SQLite's locks");
    for _ in 0..3 {
        for probe in ["/readyz", "/healthz", "/metrics"] {
            let res = http_get(served.port, probe, None);
            assert!(res.starts_with("HTTP/1.1 200"), "{probe}: {res}");
        }
    }
    // (How many varies with what the server is doing at the moment; closing a
    // descriptor of the file, as /readyz once did, drops them all.)
    let after = locks_of(pid);
    assert!(
        after > 0,
        "the health checks dropped the server's locks ({after} left of {held})"
    );

    // Another process reads the database and closes it; then `coe backup` (another
    // process again) copies it.
    let mut outside =
        diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("outside open");
    diesel::sql_query("SELECT count(*) FROM api_tokens")
        .execute(&mut outside)
        .expect("outside read");
    drop(outside);
    let copy = path.with_file_name("copy.db");
    let out = coe(
        &["backup", &copy.to_string_lossy()],
        &[("COE_DATABASE_URL", &db.url)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("integrity ok"), "{}", stdout(&out));

    assert!(
        with_suffix(&path, "-wal").exists(),
        "the WAL is still there"
    );
    assert!(
        deleted_files_held(pid, &path).is_empty(),
        "the server writes into deleted files: {:?}",
        deleted_files_held(pid, &path)
    );
    // What it acknowledges now is in the file, even after a kill -9.
    create_token(&served, &admin, "after-checks");
    drop(served); // SIGKILL
    let names = token_names(&db.url);
    assert!(
        names.contains("before-checks") && names.contains("after-checks"),
        "{names}"
    );
}

/// Issue 62, item 5: `sudo coe restore` left `coe.db` owned by root, and the service's
/// next start as its own user looped. The restored database keeps the owner and mode
/// of the one it replaces.
#[test]
fn a_restore_as_root_keeps_the_database_s_owner_and_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let Some(path) = sqlite_path(&db) else {
        return; // PostgreSQL: restored with pg_restore, not by coe.
    };
    let out = coe(&["migrate"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let backup = path.with_file_name("backup.db");
    let out = coe(&["backup", &backup.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    // The service's user (nobody here) owns the database, mode 0600.
    if std::os::unix::fs::chown(&path, Some(65534), Some(65534)).is_err() {
        assert_ne!(
            std::fs::metadata("/proc/self")
                .map(|m| m.uid())
                .unwrap_or(0),
            0,
            "root may give a file any owner"
        );
        return; // Not root: nobody can be made the owner, as in CI (root) it is.
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = coe(&["restore", &backup.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let restored = std::fs::metadata(&path).expect("the restored database");
    assert_eq!((restored.uid(), restored.gid()), (65534, 65534));
    assert_eq!(restored.permissions().mode() & 0o777, 0o600);
}

/// `coe backup` copies the database while the server writes; `coe restore` refuses
/// while a server holds the database, then puts the copy in place once it stopped:
/// the old WAL removed, the replaced database kept beside it.
#[test]
fn backup_while_serving_then_restore_once_stopped() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let Some(path) = sqlite_path(&db) else {
        // PostgreSQL has its own tools: both commands say which, and change nothing.
        coe(&["migrate"], &env);
        for command in ["backup", "restore"] {
            let out = coe(&[command, "/tmp/coe-never-written.dump"], &env);
            assert_eq!(out.status.code(), Some(2), "{command}");
            let tool = if command == "backup" {
                "pg_dump"
            } else {
                "pg_restore"
            };
            assert!(stderr(&out).contains(tool), "{command}: {}", stderr(&out));
        }
        assert!(!Path::new("/tmp/coe-never-written.dump").exists());
        return;
    };
    let mut served = serve(&db.url, &[]);
    let admin = served.admin_token();
    create_token(&served, &admin, "in-the-backup");
    let backup = path.with_file_name("backup.db");
    let out = coe(&["backup", &backup.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    create_token(&served, &admin, "after-the-backup");

    // A backup never overwrites.
    let out = coe(&["backup", &backup.to_string_lossy()], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("exists already"), "{}", stderr(&out));

    // Refused while the server holds the database; nothing changed.
    let out = coe(&["restore", &backup.to_string_lossy()], &env);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("in use"), "{}", stderr(&out));
    assert!(deleted_files_held(served.child.id(), &path).is_empty());
    assert!(token_names(&db.url).contains("after-the-backup"));

    sigterm(served.child.id());
    assert!(wait_exit(&mut served.child, Duration::from_secs(30)).success());
    drop(served);
    let out = coe(&["restore", &backup.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("restored"), "{}", stdout(&out));
    assert!(!with_suffix(&path, "-wal").exists());
    assert!(!with_suffix(&path, "-shm").exists());
    let kept: Vec<_> = std::fs::read_dir(path.parent().expect("folder"))
        .expect("folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("coe.db.replaced-"))
        .collect();
    assert_eq!(kept.len(), 1, "the replaced database is kept: {kept:?}");

    let served = serve(&db.url, &[]);
    assert!(http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200"));
    drop(served);
    let names = token_names(&db.url);
    assert!(names.contains("in-the-backup"), "{names}");
    assert!(!names.contains("after-the-backup"), "{names}");
}

/// Overwrites the root page of `table` with noise (no process holds the file).
fn corrupt_table(path: &Path, table: &str) {
    #[derive(diesel::QueryableByName)]
    struct Root {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        rootpage: i64,
    }
    let mut conn = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("open");
    let root: Root = diesel::sql_query(format!(
        "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = '{table}'"
    ))
    .get_result(&mut conn)
    .expect("the table's root page");
    diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .expect("checkpoint");
    drop(conn);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("the file");
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start((root.rootpage as u64 - 1) * 4096))
        .expect("seek");
    file.write_all(&[0xA5; 4096]).expect("noise");
}

/// A database SQLite calls corrupt: `/readyz` says so (503 `database_corrupt`), and a
/// corrupt copy is refused by `coe restore`, which changes nothing.
#[test]
fn a_corrupt_database_is_reported_by_readyz_and_refused_by_restore() {
    let db = TestDatabase::new();
    let Some(path) = sqlite_path(&db) else {
        return; // SQLite's integrity check.
    };
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let out = coe(&["migrate"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let sound = path.with_file_name("sound.db");
    assert!(coe(&["backup", &sound.to_string_lossy()], &env)
        .status
        .success());
    corrupt_table(&path, "coe_reads");

    let served = serve(&db.url, &[]);
    let mut ready = String::new();
    try_until(Duration::from_secs(20), || {
        ready = http_get(served.port, "/readyz", None);
        ready.starts_with("HTTP/1.1 503")
    });
    assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
    assert!(ready.contains("database_corrupt"), "{ready}");
    // The log line is written as the fault is noted and read from the server's
    // output by a thread of its own: waited for, not raced.
    try_until(Duration::from_secs(20), || {
        !served.logged("database fault").is_empty()
    });
    assert!(!served.logged("database fault").is_empty());
    drop(served);

    // The corrupt file as a backup: refused, and the database in place untouched.
    let broken = path.with_file_name("broken.db");
    std::fs::copy(&path, &broken).expect("copy");
    let out = coe(&["restore", &broken.to_string_lossy()], &env);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("integrity check"), "{}", stderr(&out));
    // The sound copy mends it.
    let out = coe(&["restore", &sound.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let served = serve(&db.url, &[]);
    eventually(
        Duration::from_secs(30),
        "the mended database serves",
        || http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200"),
    );
}

/// Marks the database as migrated by a newer version (a migration this one lacks).
fn add_unknown_migration(db_url: &str) {
    let sql = "INSERT INTO __diesel_schema_migrations (version) VALUES ('29991231000000')";
    if on_postgres() {
        let mut conn = diesel::PgConnection::establish(db_url).expect("connect");
        diesel::sql_query(sql).execute(&mut conn).expect("insert");
    } else {
        let path = db_url.strip_prefix("sqlite://").expect("a sqlite URL");
        let mut conn = diesel::SqliteConnection::establish(path).expect("open");
        diesel::sql_query(sql).execute(&mut conn).expect("insert");
    }
}

/// `migrate --status` lists migrations by name; `serve --no-migrate` refuses a schema
/// behind this version; a database a newer version migrated is refused by `migrate`
/// and `serve` (exit 2, naming the migration) instead of served as if all were well.
#[test]
fn upgrades_are_checked_migrations_listed_and_a_newer_schema_refused() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];

    let out = coe(&["migrate", "--status"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = stdout(&out);
    assert!(
        status.contains("pending  2026-11-29-000001_create_api_tokens"),
        "{status}"
    );
    assert!(status.contains("0 applied"), "{status}");

    let out = coe(&["serve", "--no-migrate"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("coe migrate"), "{}", stderr(&out));

    assert!(coe(&["migrate"], &env).status.success());
    let out = coe(&["migrate", "--status"], &env);
    let status = stdout(&out);
    assert!(
        status.contains("applied  2026-11-29-000001_create_api_tokens"),
        "{status}"
    );
    assert!(status.contains("0 pending, 0 unknown"), "{status}");
    let served = serve_with(&db.url, &["--no-migrate"], &[]);
    assert!(http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200"));
    drop(served);

    add_unknown_migration(&db.url);
    for args in [&["migrate"][..], &["serve"], &["serve", "--no-migrate"]] {
        let out = coe(args, &env);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("29991231000000") && err.contains("newer version of coe"),
            "{args:?}: {err}"
        );
    }
    let out = coe(&["migrate", "--status"], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("unknown  29991231000000"),
        "{}",
        stdout(&out)
    );
    // A backup of it says which version can serve the copy (SQLite: `coe backup`).
    if let Some(path) = sqlite_path(&db) {
        let copy = path.with_file_name("newer.db");
        let out = coe(&["backup", &copy.to_string_lossy()], &env);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("1 migration(s) newer than this coe (29991231000000)"),
            "{}",
            stdout(&out)
        );
    }
}

/// SIGHUP (a closed terminal, an operator expecting a reload) neither kills the
/// server nor cuts a request in flight; it is logged.
#[test]
fn sighup_is_logged_and_ignored() {
    let db = TestDatabase::new();
    let mut served = serve(&db.url, &[]);
    let admin = served.admin_token();
    let body = r#"{"name":"during-hangup","role":"member"}"#;
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {admin}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        &body[..10]
    )
    .expect("write head");
    stream.flush().expect("flush");
    served.until_a_request_is_in_flight();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &served.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    served.until_logged("SIGHUP ignored");
    stream
        .write_all(&body.as_bytes()[10..])
        .expect("write rest");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    assert!(
        served.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    assert!(http_get(served.port, "/healthz", None).starts_with("HTTP/1.1 200"));
    sigterm(served.child.id());
    assert!(wait_exit(&mut served.child, Duration::from_secs(30)).success());
}

/// `/metrics` tells the version, the pool's connections and the last sweep; each
/// request has an id (answered in `X-Request-Id`, a trusted proxy's kept) and a log
/// line with the client's address.
#[test]
fn metrics_and_request_logs_tell_an_operator_what_they_need() {
    let db = TestDatabase::new();
    let served = serve(
        &db.url,
        &[
            ("COE_AUTH_TRUSTED_PROXIES", r#"["127.0.0.1/32"]"#),
            ("COE_REMINDERS_INTERVAL_SECS", "60"),
            ("COE_LOG_LEVEL", "debug"),
        ],
    );
    // The first sweep runs as the scheduler starts (a loaded CI machine once took
    // more than 20 s to end it; the logs say what the server did meanwhile).
    let mut metrics = String::new();
    try_until(Duration::from_secs(90), || {
        metrics = http_get(served.port, "/metrics", None);
        // The sample's own line: the metric's HELP text also begins "… 1 when".
        let ran = |line: &str| metrics.lines().any(|l| l == line);
        ran("coe_sweep_last_success 1") && ran("coe_job_last_success{job=\"figures\"} 1")
    });
    for line in [
        "coe_build_info{",
        &format!("version=\"{}\"", env!("CARGO_PKG_VERSION")),
        "coe_db_connections{state=\"in_use\"}",
        "coe_db_connections{state=\"idle\"}",
        "coe_sweep_last_run_timestamp_seconds ",
        "\ncoe_sweep_last_success 1\n",
        "coe_sweeps_total{outcome=\"ok\"}",
        // The figures job counted at start.
        "\ncoe_job_last_success{job=\"figures\"} 1\n",
        "coe_job_runs_total{job=\"figures\",outcome=\"ok\"} ",
        "coe_job_last_duration_milliseconds{job=\"figures\"} ",
    ] {
        assert!(
            metrics.contains(line),
            "/metrics lacks {line}:\n{metrics}\nthe server's logs:\n{}",
            served
                .logs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .join("\n")
        );
    }

    let res = http_get(served.port, "/healthz", None);
    let id = res
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .expect("an X-Request-Id")
        .trim()
        .to_owned();
    assert_eq!(id.len(), 32, "{id}");

    // From a trusted proxy, its id is kept and logged with the forwarded client.
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: nginx-4711\r\n\
         X-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.contains("x-request-id: nginx-4711"), "{response}");
    // Both requests' log lines (written as each is answered) reach the logs read here.
    try_until(Duration::from_secs(10), || {
        let logged = served.logged("request");
        logged.iter().any(|l| l["span"]["id"] == "nginx-4711")
            && logged.iter().any(|l| l["span"]["id"] == id.as_str())
    });
    let logged = served.logged("request");
    let line = logged
        .iter()
        .find(|l| l["span"]["id"] == "nginx-4711")
        .unwrap_or_else(|| panic!("the request's log line: {logged:?}"));
    assert_eq!(line["client"], "203.0.113.9", "{line}");
    assert_eq!(line["route"], "/healthz", "{line}");
    assert!(
        logged.iter().any(|l| l["span"]["id"] == id.as_str()),
        "{logged:?}"
    );
}

/// Behind a proxy `auth.trusted_proxies` does not name, coe says once that every
/// client has the proxy's address; a trusted range of every address is warned of at
/// start.
#[test]
fn forwarded_headers_from_an_untrusted_proxy_and_a_trust_everyone_range_are_warned_of() {
    let db = TestDatabase::new();
    let served = serve(&db.url, &[]);
    for _ in 0..3 {
        let mut stream = TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
        write!(
            stream,
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.4\r\n\
             Connection: close\r\n\r\n"
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
    }
    // The three requests' log lines are there: what each warned (before its own line)
    // is too.
    try_until(Duration::from_secs(10), || {
        served
            .logged("request")
            .iter()
            .filter(|l| l["route"] == "/healthz")
            .count()
            >= 3
    });
    let warned = served
        .logs
        .lock()
        .expect("logs")
        .iter()
        .filter(|l| {
            l.contains("X-Forwarded-For from an address auth.trusted_proxies does not name")
        })
        .count();
    assert_eq!(warned, 1, "said once");
    drop(served);

    let db = TestDatabase::new();
    let served = serve(&db.url, &[("COE_AUTH_TRUSTED_PROXIES", r#"["0.0.0.0/0"]"#)]);
    eventually(
        Duration::from_secs(30),
        "the warning that auth.trusted_proxies names every address",
        || {
            served
                .logs
                .lock()
                .expect("logs")
                .iter()
                .any(|l| l.contains("auth.trusted_proxies names every address"))
        },
    );
}

/// A database SQLite cannot read cannot say whether a process holds it: `coe restore`
/// replaces it only with `--force`.
#[test]
fn restore_over_an_unreadable_database_needs_force() {
    let db = TestDatabase::new();
    let Some(path) = sqlite_path(&db) else {
        return; // SQLite's files only.
    };
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    assert!(coe(&["migrate"], &env).status.success());
    let sound = path.with_file_name("sound.db");
    assert!(coe(&["backup", &sound.to_string_lossy()], &env)
        .status
        .success());
    std::fs::write(&path, vec![0x5A; 8192]).expect("garbage over the database");
    let out = coe(&["restore", &sound.to_string_lossy()], &env);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&path).expect("file"),
        vec![0x5A; 8192],
        "untouched"
    );
    let out = coe(&["restore", "--force", &sound.to_string_lossy()], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = coe(&["migrate", "--status"], &env);
    assert!(
        stdout(&out).contains("0 pending, 0 unknown"),
        "{}",
        stdout(&out)
    );
}

/// The metric names `docs/deploy/alerts.yml` uses (Prometheus's own `up` aside).
fn alerted_metrics() -> Vec<String> {
    let rules = include_str!("../../docs/deploy/alerts.yml");
    let mut names: Vec<String> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("coe_"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A POST of `body` to `path` with `token`; the whole response.
fn post(port: u16, path: &str, token: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// The value of the sample `line` starts (a name with its labels), if any.
fn sample(metrics: &str, line: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// Every metric the shipped alerting rules use is served by a real coe, and moves
/// with what it measures: an event stored and one refused for a wrong token, an
/// email waiting while the SMTP server is down, the database's size.
#[test]
fn every_metric_the_alert_rules_use_is_served_and_moves() {
    let db = TestDatabase::new();
    let dead_smtp = crate::helpers::free_port();
    let served = serve(
        &db.url,
        &[
            ("COE_SMTP_URL", &format!("smtp://127.0.0.1:{dead_smtp}")),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "1"),
            ("COE_AUTH_ALLOWED_DOMAINS", r#"["example.com"]"#),
        ],
    );
    let admin = served.admin_token();
    let ingest = {
        let out = coe(
            &["token", "create", "--name", "pager", "--role", "ingest"],
            &[("COE_DATABASE_URL", db.url.as_str())],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .split_whitespace()
            .find(|w| w.starts_with("coe_"))
            .expect("a token")
            .to_owned()
    };
    let event = r#"{"source":"prometheus","dedup_key":"db-down","title":"Database down","severity":"sev2","status":"firing"}"#;
    let stored = post(served.port, "/api/v1/events", &ingest, event);
    assert!(stored.starts_with("HTTP/1.1 202"), "{stored}");
    let refused = post(served.port, "/api/v1/events", "coe_wrong", event);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    // A COE opened for Ana queues an email the dead SMTP server cannot take.
    let opened = post(
        served.port,
        "/api/v1/coes",
        &admin,
        r#"{"title":"Database down","owner":"ana@example.com"}"#,
    );
    assert!(opened.starts_with("HTTP/1.1 201"), "{opened}");

    // Polled: the delivery job tries (and fails) after the email was queued, and the
    // operator's gauges are read at most every 30 s.
    let mut metrics = String::new();
    try_until(Duration::from_secs(90), || {
        metrics = http_get(served.port, "/metrics", None);
        let tried = sample(
            &metrics,
            "coe_email_delivery_failures_total{reason=\"unreachable\"}",
        )
        .is_some_and(|n| n >= 1.0);
        let waiting =
            sample(&metrics, "coe_email_oldest_waiting_seconds").is_some_and(|s| s >= 1.0);
        tried && waiting
    });
    let on_sqlite = db.url.starts_with("sqlite://");
    for name in alerted_metrics() {
        if name == "coe_database_disk_free_bytes" && !on_sqlite {
            continue;
        }
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}{{"))),
            "/metrics lacks {name}, which docs/deploy/alerts.yml uses:\n{metrics}"
        );
    }
    assert_eq!(
        sample(&metrics, "coe_events_ingested_total{source=\"api\"}"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            "coe_events_refused_total{source=\"api\",reason=\"unauthorized\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(sample(&metrics, "coe_database_up"), Some(1.0));
    // Readiness, as /readyz decides it: ready, and no reason not to be.
    assert_eq!(sample(&metrics, "coe_ready"), Some(1.0), "{metrics}");
    for reason in [
        "stopping",
        "unavailable",
        "pool_exhausted",
        "database_read_only",
        "disk_full",
        "database_locked",
        "database_corrupt",
    ] {
        assert_eq!(
            sample(&metrics, &format!("coe_not_ready{{reason=\"{reason}\"}}")),
            Some(0.0),
            "{metrics}"
        );
    }
    assert!(sample(&metrics, "coe_database_size_bytes").is_some_and(|b| b > 100_000.0));
    assert!(
        sample(
            &metrics,
            "coe_email_delivery_failures_total{reason=\"unreachable\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    assert!(
        sample(
            &metrics,
            "coe_deliveries_total{queue=\"email\",outcome=\"deferred\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "the one queue's metrics count the deferred email:\n{metrics}"
    );
    assert!(
        sample(&metrics, "coe_email_oldest_waiting_seconds").is_some_and(|s| s >= 1.0),
        "{metrics}"
    );
    assert_eq!(
        sample(&metrics, "coe_email_last_sent_timestamp_seconds"),
        Some(0.0)
    );
    if on_sqlite {
        assert!(sample(&metrics, "coe_database_disk_free_bytes").is_some_and(|b| b > 0.0));
    }
}

/// A SQLite database made before coe made them able to shrink (`auto_vacuum` off) is
/// named at start; `coe vacuum` refuses while the server holds it, then makes it
/// shrinkable. On PostgreSQL it says what to do instead and changes nothing.
#[test]
fn coe_vacuum_makes_an_older_sqlite_database_shrinkable() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let Some(path) = sqlite_path(&db) else {
        coe(&["migrate"], &env);
        let out = coe(&["vacuum"], &env);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("autovacuum"), "{}", stderr(&out));
        return;
    };
    let auto_vacuum = |path: &Path| -> i64 {
        #[derive(diesel::QueryableByName)]
        struct Mode {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            auto_vacuum: i64,
        }
        let mut conn = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("open");
        diesel::sql_query(
            "SELECT CAST(auto_vacuum AS BIGINT) AS auto_vacuum FROM pragma_auto_vacuum()",
        )
        .get_result::<Mode>(&mut conn)
        .expect("the pragma")
        .auto_vacuum
    };
    {
        // As a database made by an older coe: its first table before any pragma.
        use diesel::connection::SimpleConnection;
        let mut conn =
            diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("create");
        conn.batch_execute("PRAGMA auto_vacuum = NONE; CREATE TABLE made_before (a INTEGER);")
            .expect("an older database");
    }
    assert!(coe(&["migrate"], &env).status.success());
    assert_eq!(auto_vacuum(&path), 0);

    let mut served = serve(&db.url, &[]);
    served.until_logged("run `coe vacuum` once with coe stopped");
    let out = coe(&["vacuum"], &env);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("in use"), "{}", stderr(&out));
    sigterm(served.child.id());
    assert!(wait_exit(&mut served.child, Duration::from_secs(30)).success());
    drop(served);

    let out = coe(&["vacuum"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("vacuumed"), "{}", stdout(&out));
    assert_eq!(auto_vacuum(&path), 2, "incremental from now on");
}

/// A `coe serve` started by `coe_as`, killed on drop.
struct ServedAs(std::process::Child);

impl Drop for ServedAs {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `coe ARGS` on `db_url`, as user `uid` when given (root writes read-only files
/// anyway), its log written to `log`, in `log`'s folder.
fn coe_as(uid: Option<u32>, db_url: &str, args: &[&str], log: &Path) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_coe"));
    cmd.args(args)
        .env_clear()
        .env("COE_DATABASE_URL", db_url)
        .env("COE_LOG_FORMAT", "json")
        .current_dir(log.parent().expect("a folder"))
        .stderr(std::fs::File::create(log).expect("a log file"));
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd
}

/// The SQLite file made read-only under a running coe, as a remount `ro` does (issue 62
/// item 1): reads work, so `coe_database_up` stays 1, but every event is refused 503
/// `database_read_only` and `/metrics` says why it is not ready — `coe_ready` 0 and
/// `coe_not_ready{reason="database_read_only"}` 1, what `CoeDatabaseReadOnly` fires on —
/// until the file is writable again. On PostgreSQL (no file): ready, no reason.
#[test]
fn an_operator_sees_a_read_only_database_in_the_readiness_gauges() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let db = TestDatabase::new();
    let event = r#"{"source":"prometheus","dedup_key":"disk-ro","title":"Disk read-only","severity":"sev2","status":"firing"}"#;
    if sqlite_path(&db).is_none() {
        let served = serve(&db.url, &[]);
        let metrics = http_get(served.port, "/metrics", None);
        assert_eq!(sample(&metrics, "coe_ready"), Some(1.0), "{metrics}");
        assert_eq!(
            sample(&metrics, "coe_not_ready{reason=\"unavailable\"}"),
            Some(0.0),
            "{metrics}"
        );
        return;
    }
    // Root may write a file of mode 0444: the server runs as `nobody` then, in a folder
    // of its own.
    let root = std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
    let uid = root.then_some(65534);
    let dir = tempfile::tempdir().expect("dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    if let Some(uid) = uid {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid)).expect("chown");
    }
    let path = dir.path().join("coe.db");
    let url = format!("sqlite://{}", path.display());
    let log = dir.path().join("coe.log");
    let out = coe_as(uid, &url, &["migrate"], &log)
        .output()
        .expect("coe migrate");
    assert!(
        out.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let out = coe_as(
        uid,
        &url,
        &["token", "create", "--name", "pager", "--role", "ingest"],
        &log,
    )
    .output()
    .expect("coe token create");
    assert!(
        out.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let ingest = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("coe_"))
        .expect("a token")
        .to_owned();
    let port = crate::helpers::free_port();
    let served = ServedAs(
        coe_as(
            uid,
            &url,
            &["serve", "--listen", &format!("127.0.0.1:{port}")],
            &log,
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("coe serve"),
    );
    try_until(Duration::from_secs(60), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
            && http_get(port, "/readyz", None).starts_with("HTTP/1.1 200")
    })
    .unwrap_or_else(|| {
        panic!(
            "coe serve is not ready: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    });
    let stored = post(port, "/api/v1/events", &ingest, event);
    assert!(stored.starts_with("HTTP/1.1 202"), "{stored}");

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let refused = post(port, "/api/v1/events", &ingest, event);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("database_read_only"), "{refused}");
    let ready = http_get(port, "/readyz", None);
    assert!(ready.contains("database_read_only"), "{ready}");
    let metrics = http_get(port, "/metrics", None);
    assert_eq!(sample(&metrics, "coe_database_up"), Some(1.0), "{metrics}");
    assert_eq!(sample(&metrics, "coe_ready"), Some(0.0), "{metrics}");
    assert_eq!(
        sample(&metrics, "coe_not_ready{reason=\"database_read_only\"}"),
        Some(1.0),
        "{metrics}"
    );
    for other in [
        "unavailable",
        "pool_exhausted",
        "disk_full",
        "database_locked",
    ] {
        assert_eq!(
            sample(&metrics, &format!("coe_not_ready{{reason=\"{other}\"}}")),
            Some(0.0),
            "{metrics}"
        );
    }
    assert!(
        sample(
            &metrics,
            "coe_events_refused_total{source=\"api\",reason=\"database_read_only\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );

    // Writable again: ready, by itself.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let metrics = eventually(Duration::from_secs(30), "stored and ready again", || {
        let stored = post(port, "/api/v1/events", &ingest, event);
        let metrics = http_get(port, "/metrics", None);
        if stored.starts_with("HTTP/1.1 202") && sample(&metrics, "coe_ready") == Some(1.0) {
            Ok(metrics)
        } else {
            Err(format!("{stored}\n{metrics}"))
        }
    });
    assert_eq!(
        sample(&metrics, "coe_not_ready{reason=\"database_read_only\"}"),
        Some(0.0),
        "{metrics}"
    );
    drop(served);
}

/// Another process holds the SQLite file's write lock (a `sqlite3` shell left in a
/// transaction): events wait `database.busy_timeout_ms`, then are refused 503
/// `database_locked` — not a 500 — and `/metrics` says why it is not ready
/// (`coe_not_ready{reason="database_locked"}`, what `CoeDatabaseLocked` fires on); once
/// the lock is let go, events are stored and it is ready again.
#[test]
fn an_operator_sees_a_locked_database_in_the_readiness_gauges() {
    let db = TestDatabase::new();
    let Some(path) = sqlite_path(&db) else {
        return; // SQLite's file lock.
    };
    let served = serve(&db.url, &[("COE_DATABASE_BUSY_TIMEOUT_MS", "200")]);
    let _admin = served.admin_token();
    let ingest = {
        let out = coe(
            &["token", "create", "--name", "pager", "--role", "ingest"],
            &[("COE_DATABASE_URL", db.url.as_str())],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .split_whitespace()
            .find(|w| w.starts_with("coe_"))
            .expect("a token")
            .to_owned()
    };
    let event = r#"{"source":"prometheus","dedup_key":"lock","title":"Locked","severity":"sev2","status":"firing"}"#;
    let stored = post(served.port, "/api/v1/events", &ingest, event);
    assert!(stored.starts_with("HTTP/1.1 202"), "{stored}");

    let mut shell = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("open");
    diesel::sql_query("BEGIN IMMEDIATE")
        .execute(&mut shell)
        .expect("the write lock");
    let refused = post(served.port, "/api/v1/events", &ingest, event);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("database_locked"), "{refused}");
    let metrics = http_get(served.port, "/metrics", None);
    assert_eq!(sample(&metrics, "coe_ready"), Some(0.0), "{metrics}");
    assert_eq!(
        sample(&metrics, "coe_not_ready{reason=\"database_locked\"}"),
        Some(1.0),
        "{metrics}"
    );
    assert!(
        sample(
            &metrics,
            "coe_events_refused_total{source=\"api\",reason=\"database_locked\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );

    diesel::sql_query("ROLLBACK")
        .execute(&mut shell)
        .expect("let go");
    drop(shell);
    eventually(Duration::from_secs(30), "stored and ready again", || {
        let stored = post(served.port, "/api/v1/events", &ingest, event);
        let metrics = http_get(served.port, "/metrics", None);
        if stored.starts_with("HTTP/1.1 202") && sample(&metrics, "coe_ready") == Some(1.0) {
            Ok(())
        } else {
            Err(format!("{stored}\n{metrics}"))
        }
    });
}

/// The key that seals coe's secrets (`secret_key`) is read at start: a malformed one
/// stops `coe serve` by its name; with none set, a SQLite file gets its key file
/// beside it on the first start, readable by its owner alone, and keeps it.
#[test]
fn the_secret_key_is_read_at_start_and_a_sqlite_file_gets_its_own() {
    let db = TestDatabase::new();
    let bad = [
        ("COE_DATABASE_URL", db.url.as_str()),
        ("COE_SECRET_KEY", "not a key"),
    ];
    let out = coe(&["serve", "--listen", "127.0.0.1:0"], &bad);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("secret_key: a secret key is 32 bytes written in base64"),
        "{}",
        stderr(&out)
    );
    let Some(path) = sqlite_path(&db) else {
        return; // PostgreSQL: the replicas share a key the operator sets.
    };
    let key_file = path.with_file_name("coe-secret.key");
    let served = serve(&db.url, &[]);
    eventually(Duration::from_secs(20), "coe to be ready", || {
        http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200")
    });
    let key = std::fs::read_to_string(&key_file).expect("the key file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
    }
    drop(served);
    let served = serve(&db.url, &[]);
    eventually(Duration::from_secs(20), "coe to be ready again", || {
        http_get(served.port, "/readyz", None).starts_with("HTTP/1.1 200")
    });
    assert_eq!(
        std::fs::read_to_string(&key_file).expect("again"),
        key,
        "kept"
    );
}
