//! Shared test set-up: a fresh database per test, the app on a free port, a client.

use std::path::PathBuf;

use coe::config::Settings;
use coe::db::DbPool;
use coe::domain::{Role, TokenName};
use coe::services::directory::tokens;
use coe::startup::Application;
use diesel::{Connection, RunQueryDsl};
use std::sync::{Arc, Mutex};

use coe::services::intake::sns::SubscriptionConfirmer;
use serde_json::Value;

/// A fresh, empty database for one test. On SQLite the file lives in a temporary
/// folder removed on drop; on PostgreSQL it is a new database in the test cluster
/// (the cluster itself is thrown away by `scripts/test`).
pub struct TestDatabase {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    /// On PostgreSQL, the database's name, dropped with it.
    pg_name: Option<String>,
}

/// A loopback port nothing listened on a moment ago: bound, read and let go. Another
/// process may take it meanwhile, so use it only where that cannot matter or is
/// retried (a port that must stay closed, a server started again on another).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn postgres_admin_url() -> Option<String> {
    std::env::var("TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
}

pub fn on_postgres() -> bool {
    postgres_admin_url().is_some()
}

impl TestDatabase {
    pub fn new() -> TestDatabase {
        match postgres_admin_url() {
            Some(admin) => {
                let name = format!("coe_test_{}", uuid::Uuid::now_v7().simple());
                let mut conn = diesel::PgConnection::establish(&admin)
                    .unwrap_or_else(|e| panic!("cannot reach TEST_POSTGRES_URL: {e}"));
                diesel::sql_query(format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .expect("create the test database");
                TestDatabase {
                    url: with_database_name(&admin, &name),
                    _dir: None,
                    pg_name: Some(name),
                }
            }
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path: PathBuf = dir.path().join("coe.db");
                TestDatabase {
                    url: format!("sqlite://{}", path.display()),
                    _dir: Some(dir),
                    pg_name: None,
                }
            }
        }
    }
}

impl Drop for TestDatabase {
    /// Drops a PostgreSQL test database (the connections a server still holds are
    /// ended), so that a run leaves the server as it found it.
    fn drop(&mut self) {
        let (Some(name), Some(admin)) = (&self.pg_name, postgres_admin_url()) else {
            return;
        };
        let dropped = diesel::PgConnection::establish(&admin).and_then(|mut conn| {
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .map_err(diesel::ConnectionError::CouldntSetupConfiguration)
        });
        if let Err(e) = dropped {
            eprintln!("the test database {name} was not dropped: {e}");
        }
    }
}

/// `postgres://u@h:p/admin?x` → `postgres://u@h:p/NAME?x`
fn with_database_name(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    format!("{}/{}{}", &base[..host_end], name, query)
}

pub struct TestApp {
    pub address: String,
    pub pool: DbPool,
    pub client: reqwest::Client,
    /// What the app's services use (its live connections among them).
    pub runtime: coe::services::Runtime,
    /// What `/metrics` serves (for a job a test runs by hand to count in).
    pub metrics: std::sync::Arc<coe::http::metrics::Metrics>,
    /// Kept so that the database lives as long as the app.
    _db: TestDatabase,
    handle: actix_web::dev::ServerHandle,
}

/// Settings for a test app on `db`: port 0, one worker, quiet.
pub fn test_settings(db: &TestDatabase) -> Settings {
    let mut settings = Settings {
        listen: "127.0.0.1:0".into(),
        ..Settings::default()
    };
    settings.database.url = db.url.clone();
    settings.database.pool_size = 4;
    settings.server.workers = 1;
    settings.server.shutdown_timeout_secs = 1;
    settings
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_app_with_sns(configure, Arc::new(RecordingConfirmer::default())).await
}

/// An SNS confirmer that records the URLs it was asked to visit, and fetches nothing.
#[derive(Default)]
pub struct RecordingConfirmer {
    pub urls: Mutex<Vec<String>>,
}

impl SubscriptionConfirmer for RecordingConfirmer {
    fn confirm(&self, url: &str) -> Result<(), String> {
        self.urls.lock().expect("lock").push(url.to_owned());
        Ok(())
    }
}

pub async fn spawn_app_with_sns(
    configure: impl FnOnce(&mut Settings),
    sns: Arc<dyn SubscriptionConfirmer>,
) -> TestApp {
    // `TEST_LOG=debug cargo test …` shows the apps' logs.
    if let Ok(level) = std::env::var("TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(level)
            .with_test_writer()
            .try_init();
    }
    let db = TestDatabase::new();
    let mut settings = test_settings(&db);
    configure(&mut settings);
    let pool = coe::db::connect(&settings.database).expect("connect");
    coe::db::migrate(&mut pool.get().expect("conn")).expect("migrate");
    let app = Application::with_parts(settings, pool, sns).expect("the app starts");
    let address = format!("http://127.0.0.1:{}", app.port());
    let pool = app.pool().clone();
    let runtime = app.runtime().clone();
    let metrics = app.metrics().clone();
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        address,
        pool,
        // Idle connections are dropped well before the server's 5 s keep-alive ends, so a
        // request never goes out on a connection the server is closing at that moment.
        client: reqwest::Client::builder()
            .pool_idle_timeout(std::time::Duration::from_secs(1))
            .build()
            .expect("an HTTP client"),
        runtime,
        metrics,
        _db: db,
        handle,
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Stop the server so that its connections close before the database goes.
        let handle = self.handle.clone();
        let _ = tokio::runtime::Handle::try_current().map(|rt| rt.spawn(handle.stop(false)));
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// A new token with this role, made through the service layer.
    pub fn token(&self, name: &str, role: Role) -> String {
        let mut conn = self.pool.get().expect("connection");
        let (_, secret) = tokens::create(
            &mut conn,
            &TokenName::parse(name).expect("valid name"),
            role,
            None,
        )
        .expect("create token");
        secret.expose().to_owned()
    }

    /// The URL of this test's database (for running the `coe` binary on it).
    pub fn database_url(&self) -> &str {
        &self._db.url
    }

    pub fn admin_token(&self) -> String {
        self.token("test-admin", Role::Admin)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request sent")
    }

    /// POSTs `body` as-is with `Content-Type: application/json`.
    pub async fn post_raw(
        &self,
        path: &str,
        token: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request sent")
    }

    /// POSTs a webhook body as-is with extra headers.
    pub async fn webhook(
        &self,
        source: &str,
        token: Option<&str>,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(self.url(&format!("/api/v1/webhooks/{source}")))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request sent")
    }

    /// GETs `path` with a token and returns the JSON body, asserting 200.
    pub async fn get_json(&self, path: &str, token: &str) -> Value {
        let res = self.get(path, Some(token)).await;
        assert_eq!(res.status(), 200, "GET {path}");
        json(res).await
    }

    pub async fn post_json(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> reqwest::Response {
        self.post_raw(path, token, body.to_string()).await
    }
}

/// A fixture payload from `tests/fixtures/webhooks/`, byte for byte.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = format!(
        "{}/tests/fixtures/webhooks/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// Reads the body as JSON, failing the test with the body text otherwise.
pub async fn json(response: reqwest::Response) -> Value {
    let text = response.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Asserts the one error shape and returns `(code, message, fields)`.
pub async fn error_of(
    response: reqwest::Response,
    status: u16,
) -> (String, String, Vec<(String, String)>) {
    assert_eq!(response.status().as_u16(), status, "unexpected status");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "content type {content_type}"
    );
    let body = json(response).await;
    let error = &body["error"];
    let code = error["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.code in {body}"));
    let message = error["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.message in {body}"));
    assert!(!message.is_empty());
    let fields = error["fields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["field"].as_str().unwrap_or_default().to_owned(),
                        f["problem"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (code.to_owned(), message.to_owned(), fields)
}

#[test]
fn postgres_urls_get_the_test_database_name() {
    assert_eq!(
        with_database_name("postgres://postgres@127.0.0.1:5555/postgres", "t1"),
        "postgres://postgres@127.0.0.1:5555/t1"
    );
    assert_eq!(
        with_database_name("postgres://u:p@h:1/db?sslmode=disable", "t2"),
        "postgres://u:p@h:1/t2?sslmode=disable"
    );
    assert_eq!(with_database_name("postgres://h", "t3"), "postgres://h/t3");
}

/// A `coe serve` process on a test's database, listening on a free loopback port;
/// stopped on drop.
pub struct Replica {
    /// The `coe serve` process (stopped when dropped) and its logs.
    pub served: crate::cli::Served,
    pub address: String,
}

impl Replica {
    /// Starts `coe serve` on `database_url` on a port the system gives it, with only
    /// `env` added to the `COE_` settings (the process starts with an empty
    /// environment).
    pub fn start(database_url: &str, env: &[(&str, &str)]) -> Replica {
        let served = crate::cli::serve(database_url, env);
        Replica {
            address: format!("http://127.0.0.1:{}", served.port),
            served,
        }
    }

    /// Waits until `/readyz` answers 200 (at most 10 s).
    pub async fn wait_until_ready(&self, client: &reqwest::Client) {
        crate::eventually::eventually_async(
            std::time::Duration::from_secs(10),
            &format!("the replica at {} becomes ready", self.address),
            || async {
                client
                    .get(format!("{}/readyz", self.address))
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == 200)
            },
        )
        .await;
    }
}
