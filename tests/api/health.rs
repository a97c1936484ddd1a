use crate::helpers::{json, on_postgres, spawn_app};

#[tokio::test]
async fn healthz_answers_without_a_token() {
    let app = spawn_app().await;
    let res = app.get("/healthz", None).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ok");
}

#[tokio::test]
async fn readyz_reports_the_database_backend_in_use() {
    let app = spawn_app().await;
    let res = app.get("/readyz", None).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["status"], "ready");
    let expected = if on_postgres() { "postgres" } else { "sqlite" };
    assert_eq!(body["database"], expected);
}

#[tokio::test]
async fn readyz_is_503_with_the_reason_when_the_database_is_unreachable() {
    // A pool over a database that cannot be reached: a PostgreSQL port nobody listens
    // on, or a SQLite file in a folder that does not exist.
    let url = if on_postgres() {
        "postgres://coe@127.0.0.1:1/coe"
    } else {
        "sqlite:///nonexistent-coe-folder/coe.db"
    };
    let manager = coe::db::ConnectionManager::new(
        coe::config::database::DatabaseUrl::parse(url).expect("url parses"),
        100,
    );
    let pool = coe::db::DbPool::unchecked(
        diesel::r2d2::Pool::builder().connection_timeout(std::time::Duration::from_millis(500)),
        manager,
    );
    let db = crate::helpers::TestDatabase::new();
    let mut settings = crate::helpers::test_settings(&db);
    settings.database.url = url.into();
    let app = coe::startup::Application::with_pool(settings, pool).expect("binds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());

    let res = reqwest::get(format!("{address}/readyz"))
        .await
        .expect("sent");
    let (code, message, _) = crate::helpers::error_of(res, 503).await;
    assert_eq!(code, "unavailable");
    assert!(message.contains("database unreachable"), "{message}");
    // Where the database is stays out of an unauthenticated answer.
    assert!(
        !message.contains("127.0.0.1") && !message.contains("nonexistent-coe-folder"),
        "{message}"
    );
    // /metrics says the same, with the reason: what CoeDatabaseUnreachable fires on.
    let metrics = reqwest::get(format!("{address}/metrics"))
        .await
        .expect("sent")
        .text()
        .await
        .expect("a body");
    assert!(metrics.contains("\ncoe_ready 0\n"), "{metrics}");
    assert!(
        metrics.contains("\ncoe_not_ready{reason=\"unavailable\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\ncoe_not_ready{reason=\"pool_exhausted\"} 0\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\ncoe_database_up 0\n"), "{metrics}");
    // Liveness does not depend on the database.
    let res = reqwest::get(format!("{address}/healthz"))
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    handle.stop(false).await;
}

/// Every connection of the pool held (slow requests): `/readyz` answers 503 and
/// `/metrics` says why — `coe_not_ready{reason="pool_exhausted"}`, what
/// `CoeDatabasePoolExhausted` fires on — not that the database is down; once they are
/// given back, ready again.
#[tokio::test]
async fn an_operator_sees_an_exhausted_pool_in_the_readiness_gauges() {
    let app = crate::helpers::spawn_app_with(|s| s.database.connect_timeout_secs = 1).await;
    let pool = app.pool.clone();
    let held = tokio::task::spawn_blocking(move || {
        let size = pool.max_size();
        (0..size)
            .map(|_| pool.get().expect("a connection"))
            .collect::<Vec<_>>()
    })
    .await
    .expect("held");
    let (code, _, _) = crate::helpers::error_of(app.get("/readyz", None).await, 503).await;
    assert_eq!(code, "unavailable");
    let metrics = app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("a body");
    assert!(metrics.contains("\ncoe_ready 0\n"), "{metrics}");
    assert!(
        metrics.contains("\ncoe_not_ready{reason=\"pool_exhausted\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\ncoe_not_ready{reason=\"unavailable\"} 0\n"),
        "{metrics}"
    );
    drop(held);
    let metrics = app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("a body");
    assert!(metrics.contains("\ncoe_ready 1\n"), "{metrics}");
    assert!(
        metrics.contains("\ncoe_not_ready{reason=\"pool_exhausted\"} 0\n"),
        "{metrics}"
    );
    assert_eq!(app.get("/readyz", None).await.status(), 200);
}

/// Pages and JSON answers are gzipped for a client that accepts it (issue 51 item 13),
/// and the same bytes come back uncompressed; without `Accept-Encoding` they are
/// sent as they are.
#[tokio::test]
async fn answers_are_gzipped_for_a_client_that_accepts_it() {
    use std::io::Read;
    let app = crate::helpers::spawn_app().await;
    let client = reqwest::Client::new();
    for path in ["/sign-in", "/api/openapi.json"] {
        let plain = client.get(app.url(path)).send().await.expect("sent");
        assert!(plain.headers().get("content-encoding").is_none(), "{path}");
        let plain = plain.bytes().await.expect("body");
        let res = client
            .get(app.url(path))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(
            res.headers()
                .get("content-encoding")
                .and_then(|v| v.to_str().ok()),
            Some("gzip"),
            "{path}"
        );
        let zipped = res.bytes().await.expect("body");
        if plain.len() > 10_000 {
            assert!(
                zipped.len() * 4 < plain.len(),
                "{path}: {} of {}",
                zipped.len(),
                plain.len()
            );
        }
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&zipped[..])
            .read_to_end(&mut unzipped)
            .expect("gzip");
        assert_eq!(unzipped, plain.to_vec(), "{path}");
    }
}
