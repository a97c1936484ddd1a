//! Issue 65, item 1: chat channels and trackers kept in coe — added, changed and
//! removed by an admin (`/api/v1/connections`), their secrets sealed at rest and never
//! shown again, every change in the history, and in use at once by this process and
//! within seconds by another replica, with no restart and no settings file.

use coe::db::schema::{audit_log, connections};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::chat::{deliver_with, person, receiver};
use crate::helpers::{error_of, json as body_json, spawn_app_with, TestApp};

/// A key for the tests (PostgreSQL has no key file beside it).
const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

async fn put(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    app.client
        .put(app.url(path))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("sent")
}

fn rows(app: &TestApp) -> Vec<(String, String, String, i64)> {
    let mut conn = app.pool.get().expect("conn");
    connections::table
        .select((
            connections::kind,
            connections::name,
            connections::settings,
            connections::version,
        ))
        .order(connections::name)
        .load(&mut conn)
        .expect("rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_an_admin_adds_hears_the_next_coe_with_its_secret_sealed_and_never_shown() {
    let (base, inbox) = receiver().await;
    // The platform's double listens on this host.
    let app = spawn_app_with(|s| {
        s.secret_key = Some(KEY.into());
        s.server.connections_on_loopback = true;
    })
    .await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    let webhook = format!("{base}/slack/added-in-the-page");

    let saved = body_json(
        put(
            &app,
            &admin,
            "/api/v1/connections/chat/payments-room",
            &json!({"kind": "slack", "url": webhook, "teams": ["payments"]}),
        )
        .await,
    )
    .await;
    assert_eq!(saved["kept_in"], "coe", "{saved}");
    assert_eq!(saved["version"], 1, "{saved}");
    assert_eq!(saved["settings"]["url"], "set, ends …page", "{saved}");
    assert_eq!(saved["updated_by"], "token:test-admin", "{saved}");

    // At rest: sealed; the listing and the history name it without showing it.
    let stored = rows(&app);
    assert_eq!(stored.len(), 1);
    assert!(
        !stored[0].2.contains("added-in-the-page"),
        "{}",
        stored[0].2
    );
    assert!(stored[0].2.contains("\"$sealed\":\"v1:"), "{}", stored[0].2);
    let listed = app
        .get_json("/api/v1/connections", &admin)
        .await
        .to_string();
    assert!(!listed.contains(&webhook), "{listed}");
    let history: Vec<(String, Option<String>)> = audit_log::table
        .filter(audit_log::entity.eq("connection"))
        .select((audit_log::action, audit_log::after))
        .load(&mut app.pool.get().expect("conn"))
        .expect("history");
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].0, "connection:added");
    let after = history[0].1.clone().unwrap_or_default();
    assert!(!after.contains("added-in-the-page"), "{after}");
    assert!(after.contains("\"secrets_changed\":[\"url\"]"), "{after}");

    // In use at once: the next COE of the payments team is told there.
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Card payments failing", "owner": "ana@example.com",
                    "service": "cards", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    assert!(coe["id"].is_string(), "{coe}");
    assert_eq!(deliver_with(&app, app.runtime.env()).sent, 1);
    assert_eq!(inbox.got("/slack/added-in-the-page").len(), 1);

    // Changed without giving the secret again: the secret stays, the version moves,
    // the history says no secret changed.
    let changed = body_json(
        put(
            &app,
            &admin,
            "/api/v1/connections/chat/payments-room",
            &json!({"kind": "slack", "teams": ["payments", "cards"], "version": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(changed["version"], 2, "{changed}");
    assert_eq!(changed["settings"]["url"], "set, ends …page", "{changed}");
    assert_eq!(changed["settings"]["teams"], json!(["payments", "cards"]));
    let after: Option<String> = audit_log::table
        .filter(audit_log::action.eq("connection:changed"))
        .select(audit_log::after)
        .first(&mut app.pool.get().expect("conn"))
        .expect("the change");
    assert!(after.unwrap_or_default().contains("\"secrets_changed\":[]"));

    // A change made from what another admin has replaced is refused.
    let stale = put(
        &app,
        &admin,
        "/api/v1/connections/chat/payments-room",
        &json!({"kind": "slack", "teams": [], "version": 1}),
    )
    .await;
    let (code, message, _) = error_of(stale, 409).await;
    assert_eq!(code, "conflict", "{message}");
    assert!(message.contains("version 2"), "{message}");

    // Removed: gone from the listing and from what is in use.
    let removed = app
        .client
        .delete(app.url("/api/v1/connections/chat/payments-room"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(removed.status(), 200);
    assert!(rows(&app).is_empty());
    assert!(app.runtime.env().connections.channels.is_empty());
    let actions: Vec<String> = audit_log::table
        .filter(audit_log::entity.eq("connection"))
        .select(audit_log::action)
        .order(audit_log::at)
        .load(&mut app.pool.get().expect("conn"))
        .expect("history");
    assert_eq!(
        actions,
        [
            "connection:added",
            "connection:changed",
            "connection:removed"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_settings_file_would_refuse_is_refused_by_name_and_nothing_is_kept() {
    let app = spawn_app_with(|s| {
        s.secret_key = Some(KEY.into());
        s.chat.channels = vec![serde_json::from_value(json!({
            "name": "from-file", "kind": "mattermost", "url": "http://127.0.0.1:9/hook"
        }))
        .expect("a channel")];
    })
    .await;
    let admin = app.admin_token();
    let member = app.token("reader", coe::domain::Role::Member);
    let path = "/api/v1/connections/chat/ops";
    let cases: Vec<(Value, &str)> = vec![
        (json!({"url": "https://hooks.slack.com/x"}), "kind"),
        (json!({"kind": "slack"}), "url"),
        (
            json!({"kind": "slack", "url": "ftp://example.com/x"}),
            "url",
        ),
        (
            json!({"kind": "slack", "url": "https://hooks.slack.com/x", "events": "review"}),
            "settings",
        ),
        (
            json!({"kind": "slack", "url": "https://hooks.slack.com/x", "colour": "red"}),
            "colour",
        ),
        (
            json!({"kind": "slack", "url": {"file": "/etc/passwd"}}),
            "url",
        ),
        (
            json!({"kind": "slack", "url": "https://hooks.slack.com/x", "name": "other"}),
            "name",
        ),
        (
            json!({"kind": "matrix", "homeserver": "https://m.example.com", "room_id": "x",
                "access_token": "t"}),
            "room_id",
        ),
        (
            json!({"kind": "slack", "url": "https://hooks.slack.com/x", "version": "one"}),
            "version",
        ),
        (json!(["kind", "slack"]), "body"),
        // An admin cannot point coe at the services of its own host.
        (
            json!({"kind": "slack", "url": "http://127.0.0.1:6379/x"}),
            "url",
        ),
        (
            json!({"kind": "mattermost", "url": "https://chat.example.com/hooks/x",
                "api_url": "http://localhost:8080", "read_token": "t"}),
            "api_url",
        ),
        (
            json!({"kind": "slack", "url": "http://[::ffff:127.0.0.1]:80/x"}),
            "url",
        ),
    ];
    for (body, field) in cases {
        let (code, _, fields) = error_of(put(&app, &admin, path, &body).await, 422).await;
        assert_eq!(code, "validation_failed", "{body}");
        assert_eq!(fields[0].0, field, "{body}: {fields:?}");
    }
    // A tracker: Jira needs its account's email.
    let jira = json!({"kind": "jira", "base_url": "https://acme.atlassian.net", "token": "t0k3n",
                      "webhook_secret": "0123456789abcdef0123", "place": "OPS"});
    let (_, _, fields) = error_of(
        put(&app, &admin, "/api/v1/connections/tracker/jira", &jira).await,
        422,
    )
    .await;
    assert_eq!(fields[0].0, "user", "{fields:?}");

    // The settings file's channel is changed there only.
    let (_, message, _) = error_of(
        put(
            &app,
            &admin,
            "/api/v1/connections/chat/from-file",
            &json!({"kind": "slack", "url": "https://hooks.slack.com/x"}),
        )
        .await,
        409,
    )
    .await;
    assert!(message.contains("settings file"), "{message}");
    let malformed = app
        .client
        .put(app.url(path))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body("{\"kind\": ")
        .send()
        .await
        .expect("sent");
    error_of(malformed, 400).await;
    error_of(
        put(
            &app,
            &member,
            path,
            &json!({"kind": "slack", "url": "https://hooks.slack.com/x"}),
        )
        .await,
        403,
    )
    .await;
    error_of(
        put(
            &app,
            &admin,
            "/api/v1/connections/pager/ops",
            &json!({"kind": "slack"}),
        )
        .await,
        404,
    )
    .await;
    let unknown = app
        .client
        .delete(app.url("/api/v1/connections/chat/nobody"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    error_of(unknown, 404).await;
    assert!(rows(&app).is_empty(), "nothing was kept");
    let history: i64 = audit_log::table
        .filter(audit_log::entity.eq("connection"))
        .count()
        .get_result(&mut app.pool.get().expect("conn"))
        .expect("count");
    assert_eq!(history, 0);
    // The listing says where each is kept.
    let listed = app.get_json("/api/v1/connections", &admin).await;
    assert_eq!(
        listed["connections"][0]["kept_in"], "settings_file",
        "{listed}"
    );
    assert_eq!(
        listed["connections"][0]["settings"]["url"],
        "set, ends …hook"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_both_in_the_settings_file_and_kept_in_coe_stops_coe_at_start_by_name() {
    let app = spawn_app_with(|s| s.secret_key = Some(KEY.into())).await;
    let admin = app.admin_token();
    let saved = put(
        &app,
        &admin,
        "/api/v1/connections/chat/ops",
        &json!({"kind": "mattermost", "url": "https://chat.example.com/hooks/abc"}),
    )
    .await;
    assert_eq!(saved.status(), 200);
    let mut settings = (*app.runtime.settings).clone();
    settings.listen = "127.0.0.1:0".into();
    settings.chat.channels = vec![serde_json::from_value(json!({
        "name": "OPS", "kind": "slack", "url": "https://hooks.slack.com/x"
    }))
    .expect("a channel")];
    let twice = coe::startup::Application::with_pool(settings.clone(), app.pool.clone())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        twice.contains("\"ops\"") && twice.contains("settings file"),
        "{twice}"
    );
    // Another key cannot open what was sealed: refused by name, not a garbled token.
    settings.chat.channels.clear();
    settings.secret_key = Some("ZGlmZmVyZW50LWtleS1kaWZmZXJlbnQta2V5LWFiY2Q=".into());
    let wrong_key = coe::startup::Application::with_pool(settings, app.pool.clone())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        wrong_key.contains("\"ops\"") && wrong_key.contains("previous_secret_keys"),
        "{wrong_key}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_replica_uses_a_saved_connection_within_seconds_without_a_restart() {
    let app = spawn_app_with(|s| s.secret_key = Some(KEY.into())).await;
    let env = [("COE_SECRET_KEY", KEY), ("COE_REMINDERS_ENABLED", "false")];
    let (a, b) = (
        crate::helpers::Replica::start(app.database_url(), &env),
        crate::helpers::Replica::start(app.database_url(), &env),
    );
    a.wait_until_ready(&app.client).await;
    b.wait_until_ready(&app.client).await;
    let admin = app.admin_token();
    let saved = app
        .client
        .put(format!("{}/api/v1/connections/tracker/linear", a.address))
        .bearer_auth(&admin)
        .json(
            &json!({"kind": "linear", "token": "lin_api_0123456789abcdef",
                      "webhook_secret": "0123456789abcdef0123", "place": "OPS"}),
        )
        .send()
        .await
        .expect("sent");
    assert_eq!(
        saved.status(),
        200,
        "{}",
        saved.text().await.unwrap_or_default()
    );
    let seen = crate::eventually::eventually_async(
        std::time::Duration::from_secs(20),
        "the other replica lists the tracker saved on the first",
        || async {
            let listed: Value = app
                .client
                .get(format!("{}/api/v1/connections", b.address))
                .bearer_auth(&admin)
                .send()
                .await
                .expect("sent")
                .json()
                .await
                .expect("json");
            let found = listed["connections"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["name"] == "linear")
                .cloned();
            found
        },
    )
    .await;
    assert_eq!(seen["kept_in"], "coe");
    assert_eq!(seen["settings"]["token"], "set, ends …cdef");
    // Its webhook answers there (the address names it): a delivery signed with another
    // secret is refused as unsigned, not as an unknown tracker.
    let hook = app
        .client
        .post(format!("{}/api/v1/trackers/linear/webhook", b.address))
        .header("linear-signature", "00")
        .json(&json!({"type": "Issue"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(hook.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_an_admin_adds_a_slack_channel_and_a_tracker_with_no_settings_file() {
    let (base, inbox) = receiver().await;
    let app = spawn_app_with(|s| {
        s.secret_key = Some(KEY.into());
        s.server.connections_on_loopback = true;
    })
    .await;
    crate::ownership::person(&app, "root@example.com", true).await;
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "root@example.com", "/admin/chat").await;

    // Add a channel: the platform first, then its form with its steps.
    browser.click_to_load("#add-channel").await;
    browser
        .click_to_load("#platforms a[href$='platform=slack']")
        .await;
    let steps = browser.text("#steps").await;
    assert!(steps.contains("Incoming Webhooks"), "{steps}");
    browser.type_into("#f-name", "ops").await;
    browser
        .type_into("#f-url", &format!("{base}/slack/ops-room"))
        .await;
    browser.type_into("#f-teams", "payments, search").await;
    browser.screenshot("connection-slack-form").await;
    let mut pages = Vec::new();
    let html =
        |b: serde_json::Value| format!("<!DOCTYPE html>\n{}", b.as_str().unwrap_or_default());
    let outer = "return document.documentElement.outerHTML";
    crate::html::save(
        &mut pages,
        "connection-slack-form",
        &html(browser.eval(outer).await),
    );
    browser
        .click_to_load("#connection-form button[type=submit]")
        .await;
    browser.wait_for_url("/admin/chat?saved=ops").await;
    let row = browser.text("#chat-ops").await;
    assert!(
        row.contains("kept in coe, saved by root@example.com"),
        "{row}"
    );
    assert!(row.contains("teams: payments, search"), "{row}");
    browser.screenshot("connection-chat-list").await;

    // In use at once: its test message arrives.
    browser.click_to_load("#chat-ops form button").await;
    assert!(browser.text("#chat-tested").await.contains("reached ops"));
    assert_eq!(inbox.got("/slack/ops-room").len(), 1);

    // Changed: the secret is shown by its end and kept when left empty.
    browser.click_to_load("#chat-ops a[href$='/edit']").await;
    let hint = browser.text("#f-url-help").await;
    assert!(hint.contains("set, ends …room"), "{hint}");
    assert_eq!(browser.value("#f-url").await, "");
    browser.clear("#f-teams").await;
    browser.type_into("#f-teams", "payments").await;
    browser
        .click_to_load("#connection-form button[type=submit]")
        .await;
    browser.wait_for_url("/admin/chat?saved=ops").await;
    assert!(!browser.text("#chat-ops").await.contains("search"));
    assert_eq!(
        app.runtime.env().connections.channels[0]
            .url
            .as_ref()
            .map(|u| u.expose().to_owned()),
        Some(format!("{base}/slack/ops-room"))
    );

    // A tracker with a secret too short: the problem beside its field, what was typed
    // kept but the secrets, nothing saved.
    browser
        .goto(&app.url("/admin/trackers/new?platform=linear"))
        .await;
    let webhook = browser.text("#webhook-url").await;
    assert!(
        webhook.contains("/api/v1/trackers/NAME/webhook"),
        "{webhook}"
    );
    browser.type_into("#f-name", "linear").await;
    browser
        .type_into("#f-token", "lin_api_0123456789abcdef")
        .await;
    browser.type_into("#f-webhook_secret", "short").await;
    browser.type_into("#f-place", "ENG").await;
    browser.type_into("#f-statuses", "In Review = ignore").await;
    browser
        .click_to_load("#connection-form button[type=submit]")
        .await;
    let problem = browser.text("#f-webhook_secret-problem").await;
    assert!(problem.contains("16 characters or more"), "{problem}");
    assert_eq!(browser.value("#f-place").await, "ENG");
    assert_eq!(
        browser.value("#f-token").await,
        "",
        "a secret is never sent back"
    );
    browser.screenshot("connection-tracker-problem").await;
    crate::html::save(
        &mut pages,
        "connection-tracker-problem",
        &html(browser.eval(outer).await),
    );
    crate::html::assert_accessible_now(&browser).await;
    assert!(rows(&app).iter().all(|r| r.1 != "linear"));
    browser
        .type_into("#f-token", "lin_api_0123456789abcdef")
        .await;
    browser
        .type_into("#f-webhook_secret", "0123456789abcdef0123")
        .await;
    browser
        .click_to_load("#connection-form button[type=submit]")
        .await;
    browser.wait_for_url("/admin/trackers?saved=linear").await;
    let tracker = browser.text("#tracker-linear").await;
    assert!(
        tracker.contains("in coe, saved by root@example.com"),
        "{tracker}"
    );
    assert!(
        tracker.contains("/api/v1/trackers/linear/webhook"),
        "{tracker}"
    );
    let saved = app.runtime.env().connections.trackers[0].clone();
    assert_eq!(
        saved.statuses.get("In Review"),
        Some(&coe::config::Meaning::Ignore)
    );

    // A setting the form does not show, and an action whose ticket waits for it.
    let admin = app.admin_token();
    let mut linear = app.get_json("/api/v1/connections", &admin).await["connections"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == "linear")
        .cloned()
        .expect("listed")["settings"]
        .clone();
    let map = linear.as_object_mut().expect("an object");
    for secret in ["token", "webhook_secret"] {
        map.remove(secret);
    }
    map.insert("timeout_secs".into(), json!(7));
    let changed = put(&app, &admin, "/api/v1/connections/tracker/linear", &linear).await;
    assert_eq!(changed.status(), 200);
    let (_, action) = crate::leaving::coe_with_action(
        &app,
        &admin,
        ("Search timed out", "root@example.com"),
        ("Cap the query size", "root@example.com"),
    )
    .await;
    let job_state = || -> Vec<String> {
        coe::db::schema::tracker_jobs::table
            .filter(coe::db::schema::tracker_jobs::action_id.eq(&action))
            .select(coe::db::schema::tracker_jobs::state)
            .load(&mut app.pool.get().expect("conn"))
            .expect("jobs")
    };
    assert_eq!(job_state(), vec!["pending".to_owned()]);

    // Restored from a backup that left its secrets out, it waits for them on the list
    // and is given them again from its form.
    {
        let mut conn = app.pool.get().expect("conn");
        coe::services::connections::withhold_secrets(&mut conn).expect("withheld");
        coe::services::connections::moved(&mut conn).expect("moved");
        app.runtime.connections.refresh(&mut conn).expect("read");
    }
    assert!(app.runtime.env().connections.trackers.is_empty());
    // Another tracker in use delivers; the waiting one's ticket waits too, not failed.
    let github = json!({"kind": "github", "base_url": "http://127.0.0.1:9", "token": "ghp_0123456789abcdef",
                        "webhook_secret": "0123456789abcdef0123", "place": "acme/api"});
    let added = put(&app, &admin, "/api/v1/connections/tracker/github", &github).await;
    assert_eq!(added.status(), 200);
    coe::services::coe::trackers::deliver(
        &app.pool,
        app.runtime.env(),
        "test",
        &std::sync::atomic::AtomicBool::new(false),
    )
    .expect("a tracker pass");
    assert_eq!(job_state(), vec!["pending".to_owned()]);
    browser.goto(&app.url("/admin/trackers")).await;
    let waiting = browser.text("#waiting").await;
    assert!(
        waiting.contains("linear: API key, Webhook secret"),
        "{waiting}"
    );
    browser.screenshot("connection-waiting").await;
    crate::html::save(
        &mut pages,
        "connection-waiting",
        &html(browser.eval(outer).await),
    );
    browser.click_to_load("#waiting a").await;
    let told = browser.text("[role=alert]").await;
    assert!(told.contains("left its secrets out"), "{told}");
    browser
        .type_into("#f-token", "lin_api_0123456789abcdef")
        .await;
    browser
        .type_into("#f-webhook_secret", "0123456789abcdef0123")
        .await;
    browser
        .click_to_load("#connection-form button[type=submit]")
        .await;
    browser.wait_for_url("/admin/trackers?saved=linear").await;
    assert!(browser.find_all("#waiting").await.is_empty());
    let back = app.runtime.env().connections.tracker("linear").cloned();
    assert_eq!(
        back.map(|t| t.timeout_secs),
        Some(7),
        "what the form does not show is kept"
    );

    // Removed from its page.
    browser.goto(&app.url("/admin/chat/ops/edit")).await;
    browser.click_to_load("#remove-form button").await;
    browser.wait_for_url("/admin/chat?removed=ops").await;
    assert!(app.runtime.env().connections.channels.is_empty());
    crate::html::save(
        &mut pages,
        "connection-chat-removed",
        &html(browser.eval(outer).await),
    );
    crate::html::assert_accessible_now(&browser).await;
    crate::html::assert_valid(&crate::html::vnu_jar(), &pages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_secret_is_never_sent_to_an_address_an_admin_names_later_and_may_be_cleared() {
    let app = spawn_app_with(|s| s.secret_key = Some(KEY.into())).await;
    let admin = app.admin_token();
    let path = "/api/v1/connections/tracker/jira";
    let jira = json!({"kind": "jira", "base_url": "https://acme.atlassian.net",
        "user": "bot@acme.com", "token": "atlassian-token-0123456789",
        "webhook_secret": "0123456789abcdef0123", "place": "OPS"});
    assert_eq!(put(&app, &admin, path, &jira).await.status(), 200);
    // Elsewhere, the token is asked for again: it is not sent to a new address.
    let mut moved = jira.clone();
    moved["base_url"] = json!("https://attacker.example.com");
    for secret in ["token", "webhook_secret"] {
        moved.as_object_mut().expect("an object").remove(secret);
    }
    let (_, _, fields) = error_of(put(&app, &admin, path, &moved).await, 422).await;
    assert_eq!(fields[0].0, "token", "{fields:?}");
    assert!(fields[0].1.contains("base_url changed"), "{fields:?}");
    assert_eq!(
        app.runtime.env().connections.trackers[0].base_url(),
        "https://acme.atlassian.net"
    );
    // At the same address, left out: kept.
    let mut same = jira.clone();
    for secret in ["token", "webhook_secret"] {
        same.as_object_mut().expect("an object").remove(secret);
    }
    same["place"] = json!("INC");
    let saved = body_json(put(&app, &admin, path, &same).await).await;
    assert_eq!(saved["settings"]["token"], "set, ends …6789", "{saved}");
    assert_eq!(saved["settings"]["place"], "INC", "{saved}");

    // An optional secret given as null is cleared.
    let hook = "/api/v1/connections/chat/status-feed";
    let signed = json!({"kind": "webhook", "url": "https://status.example.com/coe",
                        "access_token": "signing-secret-0123456789"});
    assert_eq!(put(&app, &admin, hook, &signed).await.status(), 200);
    let cleared = body_json(
        put(
            &app,
            &admin,
            hook,
            &json!({"kind": "webhook", "access_token": null}),
        )
        .await,
    )
    .await;
    assert_eq!(
        cleared["settings"]["access_token"],
        Value::Null,
        "{cleared}"
    );
    assert_eq!(cleared["settings"]["url"], "set, ends …/coe", "{cleared}");
    let history: Vec<Option<String>> = audit_log::table
        .filter(audit_log::entity.eq("connection"))
        .filter(audit_log::entity_id.eq("chat:status-feed"))
        .select(audit_log::after)
        .order(audit_log::at)
        .load(&mut app.pool.get().expect("conn"))
        .expect("history");
    let last = history.last().cloned().flatten().unwrap_or_default();
    assert!(last.contains("\"access_token\":null"), "{last}");
    assert!(!last.contains("signing-secret"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_key_rotation_one_start_seals_every_secret_with_the_new_key() {
    let app = spawn_app_with(|s| s.secret_key = Some(KEY.into())).await;
    let admin = app.admin_token();
    let saved = put(
        &app,
        &admin,
        "/api/v1/connections/chat/ops",
        &json!({"kind": "mattermost", "url": "https://chat.example.com/hooks/abc"}),
    )
    .await;
    assert_eq!(saved.status(), 200);
    let id_of = |settings: &coe::config::Settings| {
        coe::secrets::Keyring::load(settings)
            .expect("a key")
            .expect("set")
            .key_id()
            .to_owned()
    };
    let old_id = id_of(&app.runtime.settings);
    assert!(rows(&app)[0].2.contains(&format!("v1:{old_id}:")));

    // The new key, the old one listed as previous: coe starts and seals again.
    let new_key = "ZGlmZmVyZW50LWtleS1kaWZmZXJlbnQta2V5LWFiY2Q=";
    let mut settings = (*app.runtime.settings).clone();
    settings.listen = "127.0.0.1:0".into();
    settings.secret_key = Some(new_key.into());
    settings.previous_secret_keys = vec![KEY.into()];
    let new_id = id_of(&settings);
    let rotated = coe::startup::Application::with_pool(settings.clone(), app.pool.clone())
        .expect("starts with the previous key listed");
    let row = rows(&app)[0].2.clone();
    assert!(row.contains(&format!("v1:{new_id}:")), "{row}");
    assert!(!row.contains(&format!("v1:{old_id}:")), "{row}");
    assert_eq!(
        rows(&app)[0].3,
        1,
        "sealing again is not a change of its settings"
    );
    drop(rotated);

    // The old key may go: the next start needs only the new one.
    settings.previous_secret_keys.clear();
    let started = coe::startup::Application::with_pool(settings, app.pool.clone())
        .expect("starts with the new key alone");
    assert_eq!(
        started.runtime().env().connections.channels[0]
            .url
            .as_ref()
            .map(|u| u.expose().to_owned()),
        Some("https://chat.example.com/hooks/abc".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_is_in_the_database_or_a_backup_and_a_restored_connection_waits_for_its_own() {
    let app = spawn_app_with(|s| s.secret_key = Some(KEY.into())).await;
    let admin = app.admin_token();
    let secrets = [
        "atlassian-token-at-rest-0123",
        "jira-hook-secret-at-rest-0123",
        "https://hooks.slack.com/services/T000/B000/at-rest-xyz",
    ];
    let jira = json!({"kind": "jira", "base_url": "https://acme.atlassian.net",
        "user": "bot@acme.com", "token": secrets[0], "webhook_secret": secrets[1], "place": "OPS"});
    let path = "/api/v1/connections/tracker/jira";
    assert_eq!(put(&app, &admin, path, &jira).await.status(), 200);
    let slack = json!({"kind": "slack", "url": secrets[2]});
    assert_eq!(
        put(&app, &admin, "/api/v1/connections/chat/ops", &slack)
            .await
            .status(),
        200
    );
    // Neither the rows nor the history hold one in the clear (both databases).
    let mut conn = app.pool.get().expect("conn");
    let history: Vec<(Option<String>, Option<String>)> = audit_log::table
        .filter(audit_log::entity.eq("connection"))
        .select((audit_log::before, audit_log::after))
        .load(&mut conn)
        .expect("history");
    drop(conn);
    let stored = format!("{:?} {history:?}", rows(&app));
    for secret in secrets {
        assert!(!stored.contains(secret), "{secret} in {stored}");
    }
    let Some(file) = app.database_url().strip_prefix("sqlite://") else {
        return; // PostgreSQL: backed up by pg_dump, which copies the rows read above.
    };
    // Nor the SQLite file, its write-ahead log included.
    let bytes_of = |path: &str| {
        let mut bytes = std::fs::read(path).unwrap_or_default();
        bytes.extend(std::fs::read(format!("{path}-wal")).unwrap_or_default());
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let on_disk = bytes_of(file);
    assert!(on_disk.contains("$sealed"), "the rows are in the file");
    for secret in secrets {
        assert!(!on_disk.contains(secret), "{secret} on disk");
    }

    // A backup leaves the sealed secrets out; asked, it keeps them sealed.
    let dir = tempfile::tempdir().expect("temp dir");
    let (plain, whole) = (dir.path().join("plain.db"), dir.path().join("whole.db"));
    let env = [
        ("COE_DATABASE_URL", app.database_url()),
        ("COE_SECRET_KEY", KEY),
    ];
    let out = crate::cli::coe(&["backup", &plain.to_string_lossy()], &env);
    let said = crate::cli::stdout(&out);
    assert!(out.status.success(), "{}", crate::cli::stderr(&out));
    assert!(
        said.contains("secrets of 2 chat channel(s) and tracker(s)"),
        "{said}"
    );
    let out = crate::cli::coe(
        &["backup", "--with-secrets", &whole.to_string_lossy()],
        &env,
    );
    assert!(out.status.success(), "{}", crate::cli::stderr(&out));
    assert!(!crate::cli::stdout(&out).contains("left out"));
    let (plain_bytes, whole_bytes) = (
        bytes_of(&plain.to_string_lossy()),
        bytes_of(&whole.to_string_lossy()),
    );
    assert!(
        !plain_bytes.contains("$sealed") && plain_bytes.contains("acme.atlassian.net"),
        "the backup keeps the connections, not their secrets"
    );
    assert!(whole_bytes.contains("$sealed"));
    for secret in secrets {
        assert!(!plain_bytes.contains(secret) && !whole_bytes.contains(secret));
    }

    // Served from the backup, the connections wait for their secrets, named, and are
    // not used; given again, the tracker is used and waits no more.
    let url = format!("sqlite://{}", plain.display());
    let restored = crate::helpers::Replica::start(
        &url,
        &[("COE_SECRET_KEY", KEY), ("COE_REMINDERS_ENABLED", "false")],
    );
    restored.wait_until_ready(&app.client).await;
    let listed: Value = app
        .client
        .get(format!("{}/api/v1/connections", restored.address))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let jira_listed = listed["connections"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == "jira")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        jira_listed["waiting_for"],
        json!(["token", "webhook_secret"]),
        "{listed}"
    );
    assert_eq!(jira_listed["settings"]["place"], "OPS");
    let hook = app
        .client
        .post(format!("{}/api/v1/trackers/jira/webhook", restored.address))
        .json(&json!({"webhookEvent": "jira:issue_updated"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        hook.status(),
        404,
        "a tracker waiting for its secrets is not in use"
    );
    // Left out again, a secret is asked for, not taken from the backup's marker.
    let mut without = jira.clone();
    without.as_object_mut().expect("an object").remove("token");
    let refused = app
        .client
        .put(format!("{}{path}", restored.address))
        .bearer_auth(&admin)
        .json(&without)
        .send()
        .await
        .expect("sent");
    let (_, _, fields) = error_of(refused, 422).await;
    assert_eq!(fields[0].0, "token", "{fields:?}");
    let given = app
        .client
        .put(format!("{}{path}", restored.address))
        .bearer_auth(&admin)
        .json(&jira)
        .send()
        .await
        .expect("sent");
    let given = body_json(given).await;
    assert_eq!(given["waiting_for"], json!([]), "{given}");
    assert_eq!(given["settings"]["token"], "set, ends …0123", "{given}");
    // Nor does the log of the process that took them (read as it writes it: waited
    // for until the save is in it).
    let logs = crate::eventually::eventually_async(
        std::time::Duration::from_secs(20),
        "the restored process logs the save",
        || {
            let logs = restored.served.logs.lock().expect("logs").join("\n");
            async move { logs.contains("a connection was saved").then_some(logs) }
        },
    )
    .await;
    for secret in secrets {
        assert!(!logs.contains(secret), "{secret} in the log");
    }
}
