//! The page routes as a table (`coe::http::pages::ROUTES`), walked: every POST page
//! route refuses a form without the session's CSRF token, or with a forged one, and
//! changes nothing; the sign-in forms, which have no session yet, refuse a post from
//! another site.

use coe::domain::Role;
use reqwest::header::COOKIE;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{json as body_json, spawn_app};
use crate::pages::{browser, get_page, sign_in};

/// The fields any of the forms may take, so that a handler that ran would act.
const FIELDS: &[(&str, &str)] = &[
    ("version", "1"),
    ("body", "written without a token"),
    ("title", "renamed without a token"),
    ("is_admin", "true"),
    ("csv", "email,name\nnew@example.com,New"),
    ("name", "made-without-a-token"),
    ("role", "admin"),
    ("at", "2026-11-29T10:00"),
    ("kind", "note"),
    ("text", "added without a token"),
    ("why", "why"),
    ("because", "because"),
    ("target", "https://example.com"),
    ("owner", "ana@example.com"),
    ("due_date", "2099-01-01"),
    ("priority", "high"),
    ("success_criteria", "x"),
    ("note", "x"),
    ("reason", "x"),
];

#[tokio::test]
async fn every_post_page_route_refuses_a_form_without_the_sessions_token() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    for email in ["root@example.com", "bo@example.com"] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"name": email}))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), StatusCode::OK, "{email}");
    }
    let res = app
        .client
        .put(app.url("/api/v1/people/root@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    let root = sign_in(&app, "root@example.com").await;
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout 502s", "owner": "root@example.com", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("id").to_owned();
    let action = body_json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&admin),
            &json!({"title": "Alert on pool saturation", "owner": "root@example.com",
                    "due_date": "2099-01-01", "priority": "high", "kind": "detect",
                    "success_criteria": "an alert fires in the drill"}),
        )
        .await,
    )
    .await;
    let action_id = action["id"].as_str().expect("id").to_owned();
    app.token("kept-token", Role::Member);
    let before = state_of(&app, &admin, &coe_id, &action_id).await;

    let posts: Vec<&str> = coe::http::pages::ROUTES
        .iter()
        .filter(|(method, _)| *method == "POST")
        .map(|(_, path)| *path)
        .collect();
    assert!(posts.len() >= 24, "{posts:?}");
    let mut walked = 0;
    for route in posts {
        let path = route
            .replace("/coes/{id}", &format!("/coes/{coe_id}"))
            .replace("/actions/{id}", &format!("/actions/{action_id}"))
            .replace("{email}", "bo@example.com")
            .replace("{name}", "kept-token")
            .replace("{key}", "impact")
            .replace("{verb}", "start")
            .replace("{step}", "submit")
            .replace("{id}", "0190d2a0-0000-7000-8000-000000000000")
            .replace(['{', '}'], "");
        if route.starts_with("/notifications/") {
            // A link that carries its own secret: one nobody made is unknown.
            let res = browser()
                .post(app.url(&path))
                .header(COOKIE, &root)
                .form(&FIELDS)
                .send()
                .await
                .expect("sent");
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{route}");
            walked += 1;
            continue;
        }
        if route.starts_with("/sign-in") {
            // No session yet: another site's post is refused instead.
            let res = browser()
                .post(app.url(&path))
                .header("origin", "https://attacker.example")
                .form(&[("email", "root@example.com"), ("token", "x")])
                .send()
                .await
                .expect("sent");
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{route}");
            walked += 1;
            continue;
        }
        for token in [None, Some("forged")] {
            let mut form: Vec<(&str, &str)> = FIELDS.to_vec();
            if let Some(token) = token {
                form.push(("csrf", token));
            }
            let res = browser()
                .post(app.url(&path))
                .header(COOKIE, &root)
                .form(&form)
                .send()
                .await
                .expect("sent");
            assert_eq!(
                res.status(),
                StatusCode::BAD_REQUEST,
                "POST {route} with {token:?} as its token"
            );
            let html = res.text().await.expect("html");
            assert!(
                html.contains("this form is out of date or came from another site"),
                "POST {route}: {html}"
            );
        }
        walked += 1;
    }
    assert!(walked >= 24);

    // Nothing changed, and the session still works.
    let after = state_of(&app, &admin, &coe_id, &action_id).await;
    assert_eq!(before, after);
    let res = get_page(&app, "/", Some(&root)).await;
    assert_eq!(res.status(), StatusCode::OK, "still signed in");
}

/// The names of the active tokens (their use is recorded: the list itself changes).
async fn active_tokens(app: &crate::helpers::TestApp, admin: &str) -> String {
    let list = app.get_json("/api/v1/tokens", admin).await;
    let mut names: Vec<String> = list["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .filter(|t| t["revoked_at"].is_null())
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    names.sort();
    names.join(",")
}

/// What a form posted without its token must not change: the COE, the action, the
/// active tokens and the directory.
async fn state_of(
    app: &crate::helpers::TestApp,
    admin: &str,
    coe_id: &str,
    action_id: &str,
) -> [String; 4] {
    [
        app.get_json(&format!("/api/v1/coes/{coe_id}"), admin)
            .await
            .to_string(),
        app.get_json(&format!("/api/v1/actions/{action_id}"), admin)
            .await
            .to_string(),
        active_tokens(app, admin).await,
        app.get_json("/api/v1/people", admin).await.to_string(),
    ]
}
