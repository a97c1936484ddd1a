//! The `coe` binary as a user runs it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::eventually::{eventually, try_until};
use crate::helpers::{on_postgres, TestDatabase};

/// `coe ARGS` with a clean environment plus `env`.
pub(crate) fn coe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coe"));
    cmd.args(args).env_clear().current_dir(dir.path());
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("coe runs")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_and_help_speak_to_a_stranger() {
    let out = coe(&["--version"], &[]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("coe "), "{}", stdout(&out));

    let out = coe(&["--help"], &[]);
    let help = stdout(&out);
    for word in [
        "serve",
        "migrate",
        "check-config",
        "token",
        "--database-url",
        "COE_CONFIG",
    ] {
        assert!(
            help.contains(word),
            "--help does not mention {word}:\n{help}"
        );
    }
    let out = coe(&["token", "create", "--help"], &[]);
    let help = stdout(&out);
    for word in ["--name", "--role", "--email", "ingest"] {
        assert!(
            help.contains(word),
            "token create --help lacks {word}:\n{help}"
        );
    }
    let out = coe(&["serve", "--help"], &[]);
    assert!(stdout(&out).contains("--listen"));
}

#[test]
fn an_unsupported_database_scheme_is_refused_by_name() {
    let out = coe(
        &["--database-url", "mysql://root@localhost/coe", "migrate"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("`mysql`") && err.contains("database.url"),
        "{err}"
    );

    let out = coe(
        &["serve"],
        &[("COE_DATABASE_URL", "mysql://root@localhost/coe")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("COE_"),
        "names where it came from: {}",
        stderr(&out)
    );
}

#[test]
fn a_value_of_the_wrong_type_names_key_value_and_expectation() {
    let out = coe(&["check-config"], &[("COE_SERVER_MAX_BODY_BYTES", "lots")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("server.max_body_bytes"), "{err}");
    assert!(err.contains("lots"), "{err}");
    assert!(err.contains("expected"), "{err}");

    let out = coe(
        &["check-config"],
        &[("COE_ORG_TIMEZONE", "Mars/Olympus_Mons")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("org.timezone") && err.contains("Mars/Olympus_Mons"),
        "{err}"
    );

    let out = coe(&["check-config"], &[("COE_LISTEN", "nowhere")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("`listen`") && err.contains("nowhere") && err.contains("HOST:PORT"),
        "{err}"
    );
}

#[test]
fn an_unknown_key_in_the_file_stops_start_up() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("coe.toml");
    std::fs::write(
        &path,
        "listen = \"127.0.0.1:9000\"\n[database]\nurll = \"x\"\n",
    )
    .expect("write");
    let out = coe(
        &["check-config", "--config", path.to_str().expect("path")],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("urll") && err.contains("coe.toml"), "{err}");

    let out = coe(
        &["check-config"],
        &[("COE_CONFIG", "/nonexistent/coe.toml")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/coe.toml"));
}

#[test]
fn a_broken_coe_template_stops_start_up_naming_the_section() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("template.toml");
    std::fs::write(
        &path,
        "name='x'\nversion=1\n[[sections]]\nkey='summary'\ntitle='S'\nkind='text'\n[[sections]]\nkey='summary'\ntitle='T'\nkind='text'\n",
    )
    .expect("write");
    let out = coe(
        &["check-config"],
        &[("COE_COE_TEMPLATE", path.to_str().expect("path"))],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("coe.template") && err.contains("section 2 (`summary`)"),
        "{err}"
    );
    assert!(err.contains("used by an earlier section"), "{err}");
}

#[test]
fn check_config_prints_effective_settings_with_secrets_masked() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("coe.toml");
    std::fs::write(
        &path,
        "listen = \"127.0.0.1:9000\"\n[log]\nformat = \"json\"\n",
    )
    .expect("write");
    let out = coe(
        &["check-config", "--config", path.to_str().expect("path")],
        &[
            ("COE_DATABASE_URL", "postgres://coe:hunter2@db.internal/coe"),
            ("COE_SMTP_URL", "smtp://mailer:s3cret@smtp.internal:587"),
            ("COE_LISTEN", "127.0.0.1:9100"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("hunter2") && !text.contains("s3cret"),
        "{text}"
    );
    assert!(
        text.contains("postgres://coe:***@db.internal/coe"),
        "{text}"
    );
    assert!(
        text.contains("smtp://mailer:***@smtp.internal:587"),
        "{text}"
    );
    // The environment overrides the file; untouched file values survive.
    assert!(text.contains("listen = \"127.0.0.1:9100\""), "{text}");
    assert!(text.contains("format = \"json\""), "{text}");
    // Issue 62, item 5: an unset replica name is shown as the one this replica uses.
    assert!(
        text.contains("server.replica_name is unset: this replica claims work as \""),
        "{text}"
    );
    assert!(!text.contains("as \"\""), "{text}");
}

/// Issue 62, item 5: `serve --no-migrate` on a path where there is no database made an
/// empty one and served it. It is refused, naming the path, and nothing is made.
#[test]
fn serve_no_migrate_on_a_missing_file_makes_no_database() {
    let dir = tempfile::tempdir().expect("dir");
    let missing = dir.path().join("typo.db");
    let url = format!("sqlite://{}", missing.display());
    let out = coe(
        &["serve", "--no-migrate"],
        &[("COE_DATABASE_URL", url.as_str())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!missing.exists(), "no empty database was made");
}

/// Issue 62, item 5: `token create --help` named three roles of four.
#[test]
fn token_create_help_names_every_role() {
    let out = coe(&["token", "create", "--help"], &[]);
    let text = stdout(&out);
    for role in ["admin", "member", "ingest", "scim"] {
        assert!(text.contains(&format!("{role}:")), "{role}: {text}");
    }
}

#[test]
fn tokens_are_created_listed_and_revoked_from_the_command_line() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let out = coe(
        &["token", "create", "--name", "grafana", "--role", "ingest"],
        &env,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let secret = stdout(&out).trim().to_owned();
    assert!(secret.starts_with("coe_") && secret.len() == 68, "{secret}");
    assert!(stderr(&out).contains("cannot be shown again"));

    let out = coe(
        &["token", "create", "--name", "grafana", "--role", "ingest"],
        &env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"));

    let out = coe(
        &["token", "create", "--name", "bad name", "--role", "member"],
        &env,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--name"));

    let out = coe(&["token", "list"], &env);
    let list = stdout(&out);
    assert!(
        list.contains("grafana") && list.contains("ingest"),
        "{list}"
    );
    assert!(!list.contains(&secret));
    // The columns line up under their headings.
    let lines: Vec<&str> = list.lines().collect();
    let row = lines
        .iter()
        .find(|l| l.starts_with("grafana"))
        .expect("grafana's row");
    assert_eq!(lines[0].find("ROLE"), row.find("ingest"), "{list}");
    assert_eq!(lines[0].find("STATE"), row.find("active"), "{list}");

    let out = coe(&["token", "revoke", "grafana"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&coe(&["token", "list"], &env)).contains("grafana"));
    assert!(stdout(&coe(&["token", "list", "--all"], &env)).contains("revoked"));

    let out = coe(&["token", "revoke", "grafana"], &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no active token named `grafana`"));
}

#[test]
fn migrate_applies_then_reports_up_to_date() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let out = coe(&["migrate"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("applied"), "{}", stdout(&out));
    let out = coe(&["migrate"], &env);
    assert!(stdout(&out).contains("up to date"), "{}", stdout(&out));
}

/// A running `coe serve`, killed on drop.
pub(crate) struct Served {
    pub(crate) child: std::process::Child,
    pub(crate) port: u16,
    pub(crate) stdout: std::sync::mpsc::Receiver<String>,
    /// Every line it wrote to stderr so far (JSON log lines).
    pub(crate) logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Served {
    /// The admin token it printed on its first start.
    pub(crate) fn admin_token(&self) -> String {
        loop {
            let line = self
                .stdout
                .recv_timeout(Duration::from_secs(10))
                .expect("the token block");
            if line.trim().starts_with("coe_") {
                return line.trim().to_owned();
            }
        }
    }

    /// The log lines so far whose message is `message`.
    pub(crate) fn logged(&self, message: &str) -> Vec<serde_json::Value> {
        self.logs
            .lock()
            .expect("logs")
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["message"] == message)
            .collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(db_url: &str, extra: &[(&str, &str)]) -> Served {
    serve_with(db_url, &[], extra)
}

/// `coe serve ARGS` (besides `--listen`) with the settings `extra`.
pub(crate) fn serve_with(db_url: &str, args: &[&str], extra: &[(&str, &str)]) -> Served {
    let dir = tempfile::tempdir().expect("dir").keep();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coe"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env_clear()
        .env("COE_DATABASE_URL", db_url)
        .env("COE_LOG_FORMAT", "json")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn coe serve");
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = out_tx.send(line);
        }
    });
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = logs.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            kept.lock().expect("logs").push(line.clone());
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if v["message"] == "listening" {
                    let address = v["address"].as_str().unwrap_or_default().to_owned();
                    let port = address
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse::<u16>().ok());
                    let _ = port_tx.send(port);
                }
            } else {
                assert!(line.is_empty(), "stderr line is not JSON: {line}");
            }
        }
    });
    let port = port_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("coe serve said where it listens")
        .expect("a port");
    Served {
        child,
        port,
        stdout: out_rx,
        logs,
    }
}

impl Served {
    /// Waits until a request besides the scrape's own is in flight: the server read
    /// its head and waits for the rest (up to 30 s).
    pub(crate) fn until_a_request_is_in_flight(&self) {
        eventually(Duration::from_secs(30), "a request in flight", || {
            let metrics = http_get(self.port, "/metrics", None);
            let in_flight = metrics
                .lines()
                .find_map(|l| l.strip_prefix("coe_http_requests_in_flight "))
                .and_then(|n| n.trim().parse::<i64>().ok())
                .unwrap_or(0);
            if in_flight >= 2 {
                Ok(())
            } else {
                Err(format!("no request in flight:\n{metrics}"))
            }
        });
    }

    /// Waits until it logged a line containing `text` (up to 30 s).
    pub(crate) fn until_logged(&self, text: &str) {
        eventually(Duration::from_secs(30), &format!("logged {text:?}"), || {
            self.logs
                .lock()
                .expect("logs")
                .iter()
                .any(|l| l.contains(text))
        });
    }
}

pub(crate) fn sigterm(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

pub(crate) fn wait_exit(
    child: &mut std::process::Child,
    within: Duration,
) -> std::process::ExitStatus {
    eventually(within, "coe serve exits", || {
        child.try_wait().expect("try_wait")
    })
}

/// With `COE_LOG_FORMAT=json` a fatal start-up error is one JSON line in the log's
/// shape (for a collector that reads JSON only), not plain text; without it, text.
#[test]
fn a_fatal_start_up_error_is_a_json_line_when_the_log_is_json() {
    let out = coe(
        &["serve"],
        &[
            ("COE_LOG_FORMAT", "json"),
            ("COE_SERVER_DRAIN_SECS", "9999"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    let line: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("not one JSON line ({e}): {text}"));
    assert_eq!(line["level"], "ERROR", "{line}");
    assert_eq!(line["exit_code"], 2, "{line}");
    assert!(
        line["message"]
            .as_str()
            .is_some_and(|m| m.contains("server.drain_secs")),
        "{line}"
    );
    let out = coe(&["serve"], &[("COE_SERVER_DRAIN_SECS", "9999")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

#[test]
fn serve_prints_a_first_admin_token_once_then_never_again() {
    let db = TestDatabase::new();
    let mut first = serve(&db.url, &[]);
    let mut block = Vec::new();
    while let Ok(line) = first.stdout.recv_timeout(Duration::from_secs(10)) {
        block.push(line);
        if block.iter().filter(|l| l.starts_with("=====")).count() == 2 {
            break;
        }
    }
    let text = block.join("\n");
    assert!(text.contains("coe admin token"), "{text}");
    let secret = block
        .iter()
        .map(|l| l.trim())
        .find(|l| l.starts_with("coe_"))
        .expect("the token is printed")
        .to_owned();

    let res = http_get(first.port, "/api/v1/me", Some(&secret));
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    assert!(res.contains("\"role\":\"admin\""), "{res}");

    sigterm(first.child.id());
    assert!(wait_exit(&mut first.child, Duration::from_secs(30)).success());
    drop(first);

    // A second start finds the admin token and prints nothing.
    let mut second = serve(&db.url, &[]);
    let res = http_get(second.port, "/healthz", None);
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    sigterm(second.child.id());
    assert!(wait_exit(&mut second.child, Duration::from_secs(30)).success());
    // Once it exited, all it wrote has been read: nothing.
    assert_eq!(
        second.stdout.recv_timeout(Duration::from_secs(10)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
        "nothing printed on standard output"
    );
}

/// On SIGTERM a server drains first (`server.drain_secs`): `/readyz` answers 503 at
/// once, so that a load balancer stops sending requests here, while every other request
/// is still served; a second signal ends the wait, and it exits 0.
#[test]
fn sigterm_drains_with_readyz_unready_while_requests_are_still_served() {
    let db = TestDatabase::new();
    let mut served = serve(&db.url, &[("COE_SERVER_DRAIN_SECS", "60")]);
    let ready = http_get(served.port, "/readyz", None);
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    sigterm(served.child.id());
    served.until_logged("stopping: /readyz answers 503 while requests are still served");
    let ready = http_get(served.port, "/readyz", None);
    assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
    assert!(ready.contains("this replica is stopping"), "{ready}");
    let health = http_get(served.port, "/healthz", None);
    assert!(health.starts_with("HTTP/1.1 200"), "still served: {health}");
    let page = http_get(served.port, "/sign-in", None);
    assert!(page.starts_with("HTTP/1.1 200"), "still served: {page}");
    // The drain would last a minute: a second signal ends it.
    sigterm(served.child.id());
    assert!(wait_exit(&mut served.child, Duration::from_secs(30)).success());
    served.until_logged("a second signal: no more draining");
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    let db = TestDatabase::new();
    let mut served = serve(&db.url, &[]);
    let secret = loop {
        let line = served
            .stdout
            .recv_timeout(Duration::from_secs(10))
            .expect("token block");
        if line.trim().starts_with("coe_") {
            break line.trim().to_owned();
        }
    };
    // Start a request, send half its body, then SIGTERM, then the rest.
    let body = r#"{"name":"late","role":"member"}"#;
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        &body[..10]
    )
    .expect("write head");
    stream.flush().expect("flush");
    served.until_a_request_is_in_flight();
    sigterm(served.child.id());
    served.until_logged("shutting down: finishing in-flight requests");
    stream
        .write_all(&body.as_bytes()[10..])
        .expect("write rest");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    assert!(wait_exit(&mut served.child, Duration::from_secs(30)).success());
    if !on_postgres() {
        // Nothing half-written: the token exists once.
        let out = coe(&["token", "list"], &[("COE_DATABASE_URL", &db.url)]);
        assert_eq!(stdout(&out).matches("late").count(), 1);
    }
}

/// A plain HTTP/1.1 GET, returning the whole response.
pub(crate) fn http_get(port: u16, path: &str, token: Option<&str>) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// A plain HTTP/1.1 POST of an empty JSON object, returning the whole response.
pub(crate) fn http_post(port: u16, path: &str, token: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

#[test]
fn production_mode_refuses_to_start_without_an_smtp_server() {
    let out = coe(&["check-config"], &[("COE_MODE", "production")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("smtp.url"), "{err}");
    assert!(err.contains("production"), "{err}");

    let out = coe(
        &["check-config"],
        &[
            ("COE_MODE", "production"),
            (
                "COE_SMTP_URL",
                "smtp://coe:s3cret@mail.example.com:587?tls=required",
            ),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("smtp://coe:***@mail.example.com"));
    assert!(!stdout(&out).contains("s3cret"));
}

#[test]
fn bad_reminder_settings_are_named() {
    for (key, value, named) in [
        ("COE_REMINDERS_SEND_HOUR", "24", "reminders.send_hour"),
        ("COE_DIGEST_WEEKDAY", "someday", "digest.weekday"),
        ("COE_EMAIL_FROM", "not an address", "email.from"),
        (
            "COE_DIGEST_RECIPIENTS",
            r#"["nobody"]"#,
            "digest.recipients",
        ),
    ] {
        let out = coe(&["check-config"], &[(key, value)]);
        assert_eq!(out.status.code(), Some(2), "{key}");
        assert!(stderr(&out).contains(named), "{key}: {}", stderr(&out));
    }
}

#[test]
fn a_reopen_window_beyond_30_days_is_refused_by_name() {
    let out = coe(
        &["check-config"],
        &[("COE_INCIDENTS_REOPEN_WINDOW_SECS", "99999999999999")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("incidents.reopen_window_secs") && err.contains("99999999999999"),
        "{err}"
    );
    assert!(err.contains("COE_"), "names where it came from: {err}");
    assert!(err.contains("30 days"), "{err}");
}

#[test]
fn logs_carry_no_colour_codes_when_stderr_is_not_a_terminal() {
    let db = TestDatabase::new();
    let out = coe(
        &["sweep", "--dry-run"],
        &[
            ("COE_DATABASE_URL", db.url.as_str()),
            ("COE_LOG_LEVEL", "debug"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("DEBUG"), "the sweep logs something: {err}");
    assert!(
        !err.contains('\u{1b}'),
        "no escape codes in piped logs: {err:?}"
    );
}

#[test]
fn coe_sweep_warns_when_the_servers_sweep_with_other_settings() {
    let db = TestDatabase::new();
    let server_env = [
        ("COE_PUBLIC_URL", "https://coe.example.com"),
        ("COE_ORG_TIMEZONE", "Europe/Berlin"),
    ];
    let _served = serve(&db.url, &server_env);
    let sweep = |public_url: &str, timezone: &str| {
        coe(
            &["sweep", "--dry-run"],
            &[
                ("COE_DATABASE_URL", db.url.as_str()),
                ("COE_PUBLIC_URL", public_url),
                ("COE_ORG_TIMEZONE", timezone),
            ],
        )
    };
    // The server's first sweep runs as it starts: wait until it has recorded itself.
    let mut last = None;
    try_until(Duration::from_secs(30), || {
        let out = sweep("http://localhost:8080", "UTC");
        let warned = stderr(&out).contains("warning");
        last = Some(out);
        warned
    });
    let out = last.expect("a sweep ran");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "public_url = \"https://coe.example.com\", this run uses \"http://localhost:8080\""
        ),
        "{err}"
    );
    assert!(
        err.contains("org.timezone = \"Europe/Berlin\", this run uses \"UTC\""),
        "{err}"
    );
    // With the servers' settings: no warning.
    let same = sweep("https://coe.example.com", "Europe/Berlin");
    assert!(!stderr(&same).contains("warning"), "{}", stderr(&same));
}

/// The body of a raw HTTP response, as JSON.
fn body_json(response: &str) -> serde_json::Value {
    let (_, body) = response.split_once("\r\n\r\n").expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn demo_fills_an_empty_database_with_an_organisation_to_look_at_and_refuses_one_with_data() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    let out = coe(&["demo"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let token = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("Authorization: Bearer "))
        .unwrap_or_else(|| panic!("no token in:\n{printed}"))
        .to_owned();
    let calendar = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("calendar feed: "))
        .unwrap_or_else(|| panic!("no calendar feed in:\n{printed}"))
        .to_owned();

    let served = serve(&db.url, &[]);
    let stats = body_json(&http_get(served.port, "/api/v1/stats", Some(&token)));
    for state in ["draft", "in_review", "approved", "closed"] {
        assert!(
            stats["coes_by_state"][state].as_i64().unwrap_or(0) > 0,
            "no {state} COE: {stats}"
        );
    }
    assert!(
        stats["actions"]["overdue"].as_i64().unwrap_or(0) >= 2,
        "{stats}"
    );
    assert!(stats["median_days_to_close"].is_number(), "{stats}");
    assert!(
        stats["actions_by_team"]["payments"]["overdue"]
            .as_i64()
            .unwrap_or(0)
            >= 1,
        "{stats}"
    );

    let overdue = body_json(&http_get(
        served.port,
        "/api/v1/actions?overdue=true&limit=100",
        Some(&token),
    ));
    let days: Vec<i64> = overdue["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["days_overdue"].as_i64().expect("days"))
        .collect();
    assert!(days.iter().any(|d| *d < 7), "overdue by days: {days:?}");
    assert!(days.iter().any(|d| *d >= 14), "overdue by weeks: {days:?}");
    let due_soon = body_json(&http_get(
        served.port,
        "/api/v1/actions?status=in_progress&limit=100",
        Some(&token),
    ));
    assert!(due_soon["total"].as_i64().unwrap_or(0) >= 2, "{due_soon}");

    // The storm's COE reads as a handful of counted entries, not 400 lines.
    let coes = body_json(&http_get(
        served.port,
        "/api/v1/coes?limit=100",
        Some(&token),
    ));
    let storm = coes["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .find(|c| c["title"].as_str().unwrap_or("").contains("out of memory"))
        .unwrap_or_else(|| panic!("no storm COE: {coes}"));
    let doc = body_json(&http_get(
        served.port,
        &format!("/api/v1/coes/{}", storm["id"].as_str().expect("id")),
        Some(&token),
    ));
    let timeline = doc["timeline"].as_array().expect("timeline");
    assert!(timeline.len() <= 3, "{timeline:?}");
    assert!(
        timeline[0]["text"]
            .as_str()
            .unwrap_or("")
            .contains(" on 40 hosts"),
        "{timeline:?}"
    );

    let path = calendar
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(_, path)| format!("/{path}"))
        .expect("a path");
    let feed = http_get(served.port, &path, None);
    assert!(feed.starts_with("HTTP/1.1 200"), "{feed}");
    assert!(
        feed.contains("BEGIN:VCALENDAR") && feed.contains("VEVENT"),
        "{feed}"
    );

    // Bar raisers are marked, so the demo's sev1 was approved by its reviewer and a
    // bar raiser from another team, not by its reviewer alone.
    let sev1 = coes["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .find(|c| c["severity"] == "sev1" && c["state"] == "approved")
        .unwrap_or_else(|| panic!("no approved sev1: {coes}"));
    let doc = body_json(&http_get(
        served.port,
        &format!("/api/v1/coes/{}", sev1["id"].as_str().expect("id")),
        Some(&token),
    ));
    assert_eq!(doc["bar_raiser"], "lee@example.com", "{doc}");
    assert_eq!(
        stats["coverage"]["overall"]["approved_without_bar_raiser"], 0,
        "{stats}"
    );

    let dana = body_json(&http_get(served.port, "/api/v1/me", Some(&token)));
    assert_eq!(dana["email"], "dana@example.com", "{dana}");
    drop(served);
    {
        use diesel::prelude::*;
        let pool = coe::db::connect(&coe::config::DatabaseSettings {
            url: db.url.clone(),
            ..coe::config::DatabaseSettings::default()
        })
        .expect("connect");
        let admin: bool = coe::db::schema::people::table
            .find("dana@example.com")
            .select(coe::db::schema::people::is_admin)
            .first(&mut pool.get().expect("conn"))
            .expect("dana");
        assert!(admin, "the demo's leader is an admin of the pages");
    }

    let again = coe(&["demo"], &env);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("already holds data"),
        "{}",
        stderr(&again)
    );
}

/// A plain HTTP/1.1 POST of the sign-in confirmation form (`token=…`), as a browser
/// sends it from coe's own page; the whole response.
fn post_sign_in(port: u16, token: &str) -> String {
    let body = format!("token={token}");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST /sign-in/confirm HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// Issue 62, item 4: during an SMTP outage nobody could sign in by emailed link (the
/// link is itself a pending email) to see where `CoeEmailStuck` points. On the host,
/// `coe sign-in-link EMAIL` prints a one-time link: it signs in once, a second use is
/// refused; only its hash is stored; an audit record says whom it was for and that it
/// came from the host's command line; nobody outside the directory, or who left, gets one.
#[test]
fn during_an_smtp_outage_an_admin_signs_in_once_with_a_link_made_on_the_host() {
    use coe::db::schema::{audit_log, people, sign_in_links};
    use diesel::prelude::*;
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    assert!(coe(&["migrate"], &env).status.success());
    let pool = coe::db::connect(&coe::config::DatabaseSettings {
        url: db.url.clone(),
        ..coe::config::DatabaseSettings::default()
    })
    .expect("connect");
    {
        let mut conn = pool.get().expect("conn");
        for who in ["ana@example.com", "gone@example.com"] {
            coe::services::directory::people::ensure(&mut conn, who, coe::db::now())
                .expect("a person");
        }
        diesel::update(people::table.find("gone@example.com"))
            .set(people::active.eq(false))
            .execute(&mut conn)
            .expect("left");
    }

    let refused = coe(&["sign-in-link", "nobody@example.com"], &env);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stdout(&refused).is_empty(), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("nobody@example.com is not in the directory"),
        "{}",
        stderr(&refused)
    );
    let left = coe(&["sign-in-link", "gone@example.com"], &env);
    assert_eq!(left.status.code(), Some(2), "{}", stderr(&left));
    assert!(
        stderr(&left).contains("gone@example.com has left the organisation"),
        "{}",
        stderr(&left)
    );

    let made = coe(&["sign-in-link", "Ana@Example.com"], &env);
    assert!(made.status.success(), "{}", stderr(&made));
    let printed = stdout(&made);
    assert_eq!(printed.lines().count(), 1, "the link alone: {printed}");
    let link = printed.trim();
    let token = link
        .split_once("/sign-in/confirm?token=")
        .map(|(_, t)| t.to_owned())
        .expect("a sign-in link");
    {
        let mut conn = pool.get().expect("conn");
        let stored: Vec<(String, String)> = sign_in_links::table
            .select((sign_in_links::email, sign_in_links::token_hash))
            .load(&mut conn)
            .expect("links");
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].0, "ana@example.com");
        assert!(!stored[0].1.contains(&token), "only its hash is stored");
        let audited: Vec<(String, String, String, Option<String>)> = audit_log::table
            .filter(audit_log::action.eq("sign_in_link:host"))
            .select((
                audit_log::actor,
                audit_log::entity,
                audit_log::entity_id,
                audit_log::after,
            ))
            .load(&mut conn)
            .expect("audit");
        assert_eq!(audited.len(), 1, "{audited:?}");
        assert_eq!(audited[0].0, "host:command-line");
        assert_eq!(
            (audited[0].1.as_str(), audited[0].2.as_str()),
            ("person", "ana@example.com")
        );
        let after = audited[0].3.clone().unwrap_or_default();
        assert!(after.contains("command line"), "{after}");
        assert!(
            !after.contains(&token),
            "the audit holds no secret: {after}"
        );
    }
    drop(pool);

    let served = serve(&db.url, &[]);
    let first = post_sign_in(served.port, &token);
    assert!(first.starts_with("HTTP/1.1 303"), "{first}");
    assert!(
        first.to_ascii_lowercase().contains("set-cookie:"),
        "a session: {first}"
    );
    let again = post_sign_in(served.port, &token);
    assert!(again.starts_with("HTTP/1.1 400"), "{again}");
    assert!(
        again.contains("this sign-in link was used already or has expired"),
        "{again}"
    );
    drop(served);

    // The way in when nothing else works: broken email templates (which a link does
    // not use) do not stand in its way; the command says what it used instead.
    let broken = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(broken.path().join("coe_opened")).expect("folder");
    std::fs::write(broken.path().join("coe_opened/subject.hbs"), "{{#if}").expect("write");
    let dir = broken.path().display().to_string();
    let env = [
        ("COE_DATABASE_URL", db.url.as_str()),
        ("COE_EMAIL_TEMPLATES_DIR", dir.as_str()),
    ];
    let made = coe(&["sign-in-link", "ana@example.com"], &env);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(
        stdout(&made).contains("/sign-in/confirm?token="),
        "{}",
        stdout(&made)
    );
    assert!(
        stderr(&made).contains("the link is made with coe's built-in templates"),
        "{}",
        stderr(&made)
    );
}

/// Issue 62, item 2: a restore coe cannot tell (PostgreSQL restored into the same
/// tables, a snapshot) would send what waited; `coe outbox hold-pending`, run before
/// `coe serve`, holds it as a detected restore does, and is audited.
#[test]
fn a_restore_coe_cannot_tell_is_held_by_coe_outbox_hold_pending() {
    use coe::db::schema::{audit_log, outbox_emails};
    use diesel::prelude::*;
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    assert!(coe(&["migrate"], &env).status.success());
    let pool = coe::db::connect(&coe::config::DatabaseSettings {
        url: db.url.clone(),
        ..coe::config::DatabaseSettings::default()
    })
    .expect("connect");
    let now = coe::db::now();
    for (kind, key) in [
        (coe::email::Kind::Escalation, "escalation"),
        (coe::email::Kind::SignIn, "signin"),
    ] {
        let email = coe::services::outbound::outbox::NewEmail {
            kind,
            dedup_key: key.into(),
            recipient: format!("{key}@example.com"),
            recipient_name: None,
            subject: key.into(),
            text: "text".into(),
            html: "<p>html</p>".into(),
            data: serde_json::Value::Null,
            calendar: None,
        };
        coe::services::outbound::outbox::enqueue(&mut pool.get().expect("conn"), &email, now)
            .expect("queue");
    }
    let out = coe(&["outbox", "hold-pending"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("0 email(s) were being sent and 1 waiting")
            && said.contains("1 sign-in email(s) dropped"),
        "{said}"
    );
    let mut conn = pool.get().expect("conn");
    let states: Vec<(String, String)> = outbox_emails::table
        .order(outbox_emails::dedup_key.asc())
        .select((outbox_emails::dedup_key, outbox_emails::state))
        .load(&mut conn)
        .expect("states");
    assert_eq!(
        states,
        [
            ("escalation".to_owned(), "held".to_owned()),
            ("signin".to_owned(), "dropped".to_owned())
        ]
    );
    let audited: i64 = audit_log::table
        .filter(audit_log::action.eq("outbox:hold_pending"))
        .filter(audit_log::actor.eq("host:command-line"))
        .count()
        .get_result(&mut conn)
        .expect("audit");
    assert_eq!(audited, 1);
}
