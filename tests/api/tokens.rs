//! API tokens: roles, identity, revocation; secrets stored only as hashes.

use diesel::prelude::*;
use serde_json::json;

use coe::db::schema::api_tokens;
use coe::domain::Role;

use crate::helpers::{error_of, json, spawn_app};

#[tokio::test]
async fn a_missing_token_is_401_with_a_bearer_challenge() {
    let app = spawn_app().await;
    let res = app.get("/api/v1/me", None).await;
    assert_eq!(
        res.headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
    let (code, message, _) = error_of(res, 401).await;
    assert_eq!(code, "unauthorized");
    assert!(message.contains("Authorization: Bearer"), "{message}");
}

#[tokio::test]
async fn an_unknown_token_or_scheme_is_401() {
    let app = spawn_app().await;
    let (_, message, _) = error_of(
        app.get("/api/v1/me", Some("coe_not-a-real-token")).await,
        401,
    )
    .await;
    assert!(message.contains("unknown or revoked"), "{message}");
    let res = app
        .client
        .get(app.url("/api/v1/me"))
        .header("authorization", "Basic dXNlcjpwYXNz")
        .send()
        .await
        .expect("sent");
    error_of(res, 401).await;
}

#[tokio::test]
async fn me_names_the_token_role_and_person() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "alice-laptop", "role": "member", "email": "Alice@Example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let created = json(res).await;
    let secret = created["secret"].as_str().expect("secret").to_owned();
    assert_eq!(created["token"]["email"], "alice@example.com");

    let me = json(app.get("/api/v1/me", Some(&secret)).await).await;
    assert_eq!(me["token_name"], "alice-laptop");
    assert_eq!(me["role"], "member");
    assert_eq!(me["email"], "alice@example.com");
}

#[tokio::test]
async fn roles_limit_what_a_token_may_do() {
    let app = spawn_app().await;
    let member = app.token("member-1", Role::Member);
    let ingest = app.token("ingest-1", Role::Ingest);
    for token in [&member, &ingest] {
        let (code, message, _) = error_of(app.get("/api/v1/tokens", Some(token)).await, 403).await;
        assert_eq!(code, "forbidden");
        assert!(message.contains("admin role"), "{message}");
        let res = app
            .post_json(
                "/api/v1/tokens",
                Some(token),
                &json!({"name": "x", "role": "admin"}),
            )
            .await;
        error_of(res, 403).await;
    }
    // Every role may ask who it is.
    assert_eq!(app.get("/api/v1/me", Some(&member)).await.status(), 200);
    assert_eq!(app.get("/api/v1/me", Some(&ingest)).await.status(), 200);
}

#[tokio::test]
async fn only_a_hash_of_the_secret_is_stored() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "ci", "role": "ingest"}),
        )
        .await;
    let secret = json(res).await["secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    let mut conn = app.pool.get().expect("conn");
    let hashes: Vec<String> = api_tokens::table
        .select(api_tokens::token_hash)
        .load(&mut conn)
        .expect("load");
    assert!(hashes.iter().all(|h| !h.contains(&secret) && h.len() == 64));
    // And listing never shows it.
    let list = app
        .get("/api/v1/tokens", Some(&admin))
        .await
        .text()
        .await
        .expect("text");
    assert!(!list.contains(&secret));
    assert!(!list.contains("hash"));
}

#[tokio::test]
async fn a_revoked_token_is_refused_and_its_name_can_be_reused() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "old", "role": "member"}),
        )
        .await;
    let secret = json(res).await["secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    assert_eq!(app.get("/api/v1/me", Some(&secret)).await.status(), 200);

    let res = app
        .client
        .delete(app.url("/api/v1/tokens/old"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    assert!(json(res).await["revoked_at"].is_string());
    error_of(app.get("/api/v1/me", Some(&secret)).await, 401).await;

    // Revoked tokens are listed only when asked for.
    let active = json(app.get("/api/v1/tokens", Some(&admin)).await).await;
    assert!(active["tokens"]
        .as_array()
        .expect("list")
        .iter()
        .all(|t| t["name"] != "old"));
    let all = json(
        app.get("/api/v1/tokens?include_revoked=true", Some(&admin))
            .await,
    )
    .await;
    assert!(all["tokens"]
        .as_array()
        .expect("list")
        .iter()
        .any(|t| t["name"] == "old"));

    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "old", "role": "member"}),
        )
        .await;
    assert_eq!(res.status(), 201);
}

#[tokio::test]
async fn a_duplicate_active_name_is_409_naming_the_field() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let body = json!({"name": "dup", "role": "member"});
    assert_eq!(
        app.post_json("/api/v1/tokens", Some(&admin), &body)
            .await
            .status(),
        201
    );
    let (code, _, fields) = error_of(
        app.post_json("/api/v1/tokens", Some(&admin), &body).await,
        409,
    )
    .await;
    assert_eq!(code, "conflict");
    assert_eq!(fields[0].0, "name");
}

#[tokio::test]
async fn use_of_a_token_is_recorded() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    app.get("/api/v1/me", Some(&admin)).await;
    let list = json(app.get("/api/v1/tokens", Some(&admin)).await).await;
    let me = list["tokens"]
        .as_array()
        .expect("list")
        .iter()
        .find(|t| t["name"] == "test-admin")
        .cloned()
        .expect("admin listed");
    assert!(me["last_used_at"].is_string(), "{me}");
}

#[tokio::test]
async fn the_bootstrap_admin_token_is_made_once_and_only_when_no_admin_exists() {
    let app = spawn_app().await;
    let mut conn = app.pool.get().expect("conn");
    let first = coe::services::directory::tokens::ensure_admin_token(&mut conn).expect("ensure");
    assert!(first.is_some());
    assert!(
        coe::services::directory::tokens::ensure_admin_token(&mut conn)
            .expect("ensure")
            .is_none()
    );
    drop(conn);
    let secret = first.expect("secret");
    let me = json(app.get("/api/v1/me", Some(secret.expose())).await).await;
    assert_eq!(me["role"], "admin");
    assert_eq!(me["token_name"], "bootstrap-admin");
}

/// A token revoked by another replica (or `coe token revoke`), whose revocation this
/// server is not told of, is refused once its lookup expires (`known_tokens::KNOWN_FOR`,
/// one second), not only after a restart.
#[tokio::test]
async fn a_token_revoked_elsewhere_is_refused_within_a_second_or_so() {
    let app = spawn_app().await;
    let secret = app.token("elsewhere", Role::Member);
    assert_eq!(app.get("/api/v1/me", Some(&secret)).await.status(), 200);

    let mut conn = app.pool.get().expect("connection");
    coe::services::directory::tokens::revoke(&mut conn, "elsewhere").expect("revoked");
    drop(conn);
    // One second to live, and a margin for a loaded machine's requests.
    crate::eventually::eventually_async(
        std::time::Duration::from_secs(4),
        "the revoked token stops working",
        || async {
            let status = app.get("/api/v1/me", Some(&secret)).await.status();
            if status != 401 {
                assert_eq!(status, 200);
            }
            status == 401
        },
    )
    .await;
}
