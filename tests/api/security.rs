//! Every protected operation of the OpenAPI document refuses a request without a
//! token, with an unknown token and with a token of a role below the one it needs;
//! guessing tokens is cut short per client.

use coe::domain::Role;
use serde_json::Value;

use crate::helpers::{json, spawn_app, spawn_app_with};

/// The role an operation needs, by its path and method (what the handlers' role
/// extractors say).
fn needs(method: &str, path: &str) -> Role {
    let admin = path.starts_with("/api/v1/tokens")
        || path.starts_with("/api/v1/outbox")
        || path.ends_with("/admin")
        || path.ends_with("/sessions");
    if admin {
        Role::Admin
    } else if (method == "post" && path == "/api/v1/events")
        || path.starts_with("/api/v1/webhooks")
        || path == "/api/v1/me"
    {
        // Ingest tokens, or any token for `me`.
        Role::Ingest
    } else {
        Role::Member
    }
}

/// Every operation that asks for a bearer token: method, path with its parameters
/// filled in.
fn protected_operations(doc: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                let concrete = path
                    .replace("{source}", "alertmanager")
                    .split('/')
                    .map(|part| if part.starts_with('{') { "x" } else { part })
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((method.clone(), path.clone(), concrete));
            }
        }
    }
    out
}

#[tokio::test]
async fn every_protected_operation_refuses_no_token_an_unknown_one_and_a_lower_role() {
    // This test presents many unknown tokens on purpose.
    let app = spawn_app_with(|s| s.auth.failed_tokens_per_client = 100_000).await;
    let doc = json(app.get("/api/openapi.json", None).await).await;
    let ingest = app.token("ingest", Role::Ingest);
    let member = app.token("member", Role::Member);
    let operations = protected_operations(&doc);
    assert!(operations.len() > 30, "{} operations", operations.len());
    let mut refused_for_role = 0;
    for (method, path, concrete) in operations {
        let send = |token: Option<&str>| {
            let mut req = app.client.request(
                method.to_uppercase().parse().expect("method"),
                app.url(&concrete),
            );
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            req.header("content-type", "application/json")
                .body("{}")
                .send()
        };
        let res = send(None).await.expect("sent");
        // Webhooks also take a signature instead of a token; none is configured here.
        assert_eq!(res.status(), 401, "{method} {path} without a token");
        let res = send(Some("coe_unknown-token-0000")).await.expect("sent");
        assert_eq!(res.status(), 401, "{method} {path} with an unknown token");
        let lower = match needs(&method, &path) {
            Role::Admin => Some(&member),
            Role::Member => Some(&ingest),
            Role::Ingest | Role::Scim => None,
        };
        if let Some(lower) = lower {
            let res = send(Some(lower)).await.expect("sent");
            assert_eq!(res.status(), 403, "{method} {path} with a lower role");
            let body = json(res).await;
            assert_eq!(
                body["error"]["code"], "forbidden",
                "{method} {path}: {body}"
            );
            refused_for_role += 1;
        }
    }
    assert!(refused_for_role > 25, "{refused_for_role}");
}

/// A sender with one wrong token (a mistyped setting) sends it again and again: each
/// is refused, and the other senders of its address are never locked out.
#[tokio::test]
async fn one_wrong_token_sent_again_and_again_locks_nobody_out() {
    let app = spawn_app().await;
    let member = app.token("member", Role::Member);
    for i in 0..45 {
        let res = app
            .get("/api/v1/me", Some("coe_mistyped-in-a-sender"))
            .await;
        assert_eq!(res.status(), 401, "attempt {i}");
    }
    assert_eq!(app.get("/api/v1/me", Some(&member)).await.status(), 200);
    // Guessing (different tokens) is still bounded: 29 more different ones, then 429.
    for i in 0..29 {
        let res = app.get("/api/v1/me", Some(&format!("coe_guess-{i}"))).await;
        assert_eq!(res.status(), 401, "guess {i}");
    }
    let res = app.get("/api/v1/me", Some("coe_guess-29")).await;
    assert_eq!(res.status(), 429);
    // The mistyped one is still told it is unknown (it was counted already).
    let res = app
        .get("/api/v1/me", Some("coe_mistyped-in-a-sender"))
        .await;
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn a_client_guessing_tokens_is_told_to_wait_and_others_are_not() {
    let app = spawn_app().await;
    let member = app.token("member", Role::Member);
    for i in 0..30 {
        let res = app.get("/api/v1/me", Some(&format!("coe_guess-{i}"))).await;
        assert_eq!(res.status(), 401, "guess {i}");
    }
    // The 31st different unknown token from this address, and even a good one, wait a
    // minute.
    let res = app.get("/api/v1/me", Some("coe_guess-30")).await;
    assert_eq!(res.status(), 429);
    assert_eq!(
        res.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("60")
    );
    let body = json(res).await;
    assert_eq!(body["error"]["code"], "too_many_requests", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("auth.failed_tokens_per_client"),
        "{body}"
    );
    assert_eq!(app.get("/api/v1/me", Some(&member)).await.status(), 429);
    // Public endpoints do not ask for a token and stay open.
    assert_eq!(app.get("/healthz", None).await.status(), 200);
}
