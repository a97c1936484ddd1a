//! Scraping every replica: `metrics.listen`, a second listener that serves `/metrics`,
//! `/healthz` and `/readyz` only, and secrets read by reference (`{ file = … }`).

use crate::cli::{coe, http_get, serve, stderr};
use crate::helpers::TestDatabase;

/// With `metrics.listen`, Prometheus reaches `/metrics` (with `metrics.token`, read
/// here from a file as a secret store mounts it), `/healthz` and `/readyz` on an
/// address of their own, which serves nothing else; `listen` serves them as before.
#[test]
fn a_metrics_listener_serves_the_scrape_and_nothing_else() {
    let db = TestDatabase::new();
    let dir = tempfile::tempdir().expect("a folder");
    let token = "a-scrape-token-of-32-characters!";
    let token_file = dir.path().join("metrics-token");
    std::fs::write(&token_file, format!("{token}\n")).expect("write the token");
    let config = dir.path().join("coe.toml");
    std::fs::write(
        &config,
        format!(
            "[metrics]\nlisten = \"127.0.0.1:0\"\ntoken = {{ file = \"{}\" }}\n",
            token_file.display()
        ),
    )
    .expect("write the settings");
    let config = config.to_string_lossy().into_owned();
    let served = serve(&db.url, &[("COE_CONFIG", config.as_str())]);
    let said = served.logged("metrics listening");
    let address = said
        .first()
        .and_then(|line| line["address"].as_str())
        .expect("it says where the metrics listener is");
    let port: u16 = address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    assert_ne!(port, served.port);

    let scrape = http_get(port, "/metrics", Some(token));
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
    assert!(scrape.contains("\ncoe_ready 1\n"), "{scrape}");
    let refused = http_get(port, "/metrics", Some("not-the-token-at-all-nope"));
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    for path in ["/healthz", "/readyz"] {
        let res = http_get(port, path, None);
        assert!(res.starts_with("HTTP/1.1 200"), "{path}: {res}");
    }
    for path in ["/api/v1/me", "/sign-in", "/", "/scim/v2/Users"] {
        let res = http_get(port, path, Some(token));
        assert!(res.starts_with("HTTP/1.1 404"), "{path}: {res}");
        assert!(
            res.contains("answers /metrics, /healthz and /readyz only"),
            "{res}"
        );
    }
    // `listen` serves the scrape too, with the same token.
    let scrape = http_get(served.port, "/metrics", Some(token));
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
}

/// `metrics.listen` is checked at start: an address, not `listen` itself, and beyond
/// loopback only with a token; a secret's file that cannot be read stops start-up
/// naming the file, not the secret.
#[test]
fn a_metrics_listener_is_refused_where_it_would_leak_or_cannot_bind() {
    for (env, says) in [
        (
            vec![("COE_METRICS_LISTEN", "nowhere")],
            "an IP address and port",
        ),
        (
            vec![("COE_METRICS_LISTEN", "0.0.0.0:9464")],
            "metrics.token as well",
        ),
        (
            vec![
                ("COE_METRICS_LISTEN", "127.0.0.1:8080"),
                ("COE_LISTEN", "127.0.0.1:8080"),
            ],
            "an address other than `listen`",
        ),
    ] {
        let out = coe(&["check-config"], &env);
        assert_eq!(out.status.code(), Some(2), "{env:?}");
        let err = stderr(&out);
        assert!(
            err.contains("metrics.listen") && err.contains(says),
            "{env:?}: {err}"
        );
    }
    // A token of digits from the environment is the token as written.
    let out = coe(
        &["check-config"],
        &[("COE_METRICS_TOKEN", "1234567890123456")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = tempfile::tempdir().expect("a folder");
    let config = dir.path().join("coe.toml");
    std::fs::write(
        &config,
        "[[trackers]]\nname = \"jira\"\nkind = \"jira\"\n\
         token = { file = \"/nonexistent/jira-token\" }\n",
    )
    .expect("write");
    let config = config.to_string_lossy().into_owned();
    let out = coe(&["check-config"], &[("COE_CONFIG", config.as_str())]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("/nonexistent/jira-token") && err.contains("trackers"),
        "{err}"
    );
}
