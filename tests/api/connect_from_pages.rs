//! Issue 65's journey: a new admin, with no settings file for chat or trackers,
//! connects a Slack-shaped channel, a Jira double and a Matrix room (a real
//! Synapse) from the pages, checks each before saving, sees the first notice and
//! the first ticket go out, adds a template rule and sees the next incident's draft
//! use it — no restart.

use std::sync::atomic::AtomicBool;

use serde_json::{json, Value};

use crate::chat::{deliver_with, receiver, Synapse};
use crate::helpers::spawn_app_with;
use crate::template_rules::draft_of_alert;
use crate::tracker_double::{self, JIRA_TOKEN, JIRA_USER};
use crate::webdriver::Browser;

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// An address on loopback where nothing listens (a port bound, then let go).
fn nobody_at() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    format!("http://127.0.0.1:{port}")
}

/// Presses "Check the connection" and gives what the form then says.
async fn check(browser: &Browser) -> String {
    browser.click_to_load("#check-connection").await;
    browser.text("#checked").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_admin_connects_slack_jira_and_matrix_from_the_pages_and_the_work_flows() {
    let (chat_base, inbox) = receiver().await;
    let (jira_base, jira) = tracker_double::start().await;
    let synapse = Synapse::start();
    let app = spawn_app_with(|s| {
        s.secret_key = Some(KEY.into());
        s.server.connections_on_loopback = true;
    })
    .await;
    crate::ownership::person(&app, "root@example.com", true).await;
    let browser = Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "root@example.com", "/admin/chat").await;
    let mut pages = Vec::new();
    let html = |b: Value| format!("<!DOCTYPE html>\n{}", b.as_str().unwrap_or_default());
    let outer = "return document.documentElement.outerHTML";

    // Slack: a wrong address first — said, nothing saved — then the right one.
    browser
        .goto(&app.url("/admin/chat/new?platform=slack"))
        .await;
    // The Slack app in one paste: its manifest, with a Copy button.
    let manifest: Value =
        serde_json::from_str(&browser.text("#slack-manifest").await).expect("JSON");
    let scopes = manifest["oauth_config"]["scopes"]["bot"].to_string();
    for scope in [
        "incoming-webhook",
        "users:read",
        "channels:history",
        "groups:history",
    ] {
        assert!(scopes.contains(scope), "{scopes}");
    }
    let about = manifest["display_information"]["long_description"]
        .as_str()
        .unwrap_or_default();
    assert!(about.contains(&app.runtime.settings.public_url), "{about}");
    assert!(about.len() >= 175, "Slack asks 175 characters or more");
    assert!(!browser
        .find_all("#slack-manifest + button")
        .await
        .is_empty());
    browser.type_into("#f-name", "ops").await;
    browser
        .type_into("#f-url", &format!("{}/slack/ops-room", nobody_at()))
        .await;
    let said = check(&browser).await;
    assert!(said.contains("Something to fix"), "{said}");
    assert!(said.contains("did not get through"), "{said}");
    assert!(app.runtime.env().connections.channels.is_empty());
    browser.clear("#f-url").await;
    browser
        .type_into("#f-url", &format!("{chat_base}/slack/ops-room"))
        .await;
    let said = check(&browser).await;
    assert!(said.contains("The connection works"), "{said}");
    assert!(
        said.contains("A test message reached the channel"),
        "{said}"
    );
    assert_eq!(inbox.got("/slack/ops-room").len(), 1);
    assert!(
        app.runtime.env().connections.channels.is_empty(),
        "a check saves nothing"
    );
    browser.screenshot("connect-slack-checked").await;
    crate::html::save(
        &mut pages,
        "connect-slack-checked",
        &html(browser.eval(outer).await),
    );
    // What was checked is what is saved: the address typed is kept on the form.
    browser
        .click_to_load("#connection-form button[value=save]")
        .await;
    browser.wait_for_url("/admin/chat?saved=ops").await;

    // Matrix: a real homeserver, the bot in the room; checked by posting and reading.
    browser
        .goto(&app.url("/admin/chat/new?platform=matrix"))
        .await;
    browser.type_into("#f-name", "incident-room").await;
    browser.type_into("#f-homeserver", &synapse.base).await;
    browser.type_into("#f-room_id", &synapse.room_id).await;
    browser
        .type_into("#f-access_token", &synapse.bot_token)
        .await;
    // People work from its rooms as the people of example.com.
    browser.type_into("#f-people_domain", "example.com").await;
    browser.screenshot("connect-matrix-people").await;
    let said = check(&browser).await;
    assert!(
        said.contains("A test message reached the channel"),
        "{said}"
    );
    assert!(
        said.contains(&format!("coe can read {} back", synapse.room_id)),
        "{said}"
    );
    browser
        .click_to_load("#connection-form button[value=save]")
        .await;
    browser
        .wait_for_url("/admin/chat?saved=incident-room")
        .await;
    assert_eq!(synapse.messages().await.len(), 1, "the check's message");
    let kept = app
        .runtime
        .env()
        .connections
        .channels
        .iter()
        .find(|c| c.name == "incident-room")
        .and_then(|c| c.people_domain.clone());
    assert_eq!(kept.as_deref(), Some("example.com"), "saved with the room");

    // Teams: the bot people work from, beside the channel's webhook, explained.
    browser
        .goto(&app.url("/admin/chat/new?platform=teams"))
        .await;
    let form = browser.text("#connection-form").await;
    for asked in [
        "Microsoft App ID",
        "client secret",
        "tenant",
        "/chat/teams/messages",
    ] {
        assert!(
            form.contains(asked) || browser.eval(outer).await.to_string().contains(asked),
            "{asked} in {form}"
        );
    }
    browser.screenshot("connect-teams-bot").await;

    // Checked again from its saved form, the token left empty: the saved one is used
    // and never put in the page; for another homeserver it must be given again.
    browser
        .goto(&app.url("/admin/chat/incident-room/edit"))
        .await;
    let said = check(&browser).await;
    assert!(said.contains("The connection works"), "{said}");
    let page = browser.eval(outer).await.to_string();
    assert!(
        !page.contains(&synapse.bot_token),
        "a saved secret is never shown"
    );
    browser.clear("#f-homeserver").await;
    browser.type_into("#f-homeserver", &nobody_at()).await;
    browser.click_to_load("#check-connection").await;
    let problem = browser.text("#f-access_token-problem").await;
    assert!(problem.contains("homeserver"), "{problem}");
    assert_eq!(
        synapse.messages().await.len(),
        2,
        "the edit's check, nothing else"
    );

    // Jira: the project and its statuses read before saving; a status coe cannot
    // read is named, mapped, checked again.
    browser
        .goto(&app.url("/admin/trackers/new?platform=jira"))
        .await;
    assert!(!browser.find_all("#webhook-url").await.is_empty());
    browser.type_into("#f-name", "jira").await;
    browser.type_into("#f-base_url", &jira_base).await;
    browser.type_into("#f-user", JIRA_USER).await;
    browser.type_into("#f-token", JIRA_TOKEN).await;
    browser
        .type_into("#f-webhook_secret", "jira-webhook-secret")
        .await;
    browser.type_into("#f-place", "OPS").await;
    let said = check(&browser).await;
    assert!(
        said.contains("coe can read OPS and its statuses: To Do = open"),
        "{said}"
    );
    assert!(
        said.contains("OPS's status Limbo means nothing to coe yet"),
        "{said}"
    );
    browser.screenshot("connect-jira-checked").await;
    crate::html::save(
        &mut pages,
        "connect-jira-checked",
        &html(browser.eval(outer).await),
    );
    crate::html::assert_accessible_now(&browser).await;
    // Typed secrets are kept after a check (nothing saved yet): only the statuses
    // are added before checking again.
    browser.type_into("#f-statuses", "Limbo = ignore").await;
    let said = check(&browser).await;
    assert!(said.contains("The connection works"), "{said}");
    assert!(said.contains("Limbo = left alone"), "{said}");
    browser
        .click_to_load("#connection-form button[value=save]")
        .await;
    browser.wait_for_url("/admin/trackers?saved=jira").await;
    let listed = browser.text("#tracker-jira").await;
    assert!(listed.contains("/api/v1/trackers/jira/webhook"), "{listed}");
    assert!(
        !browser
            .find_all("#tracker-jira code[data-copy] + button")
            .await
            .is_empty(),
        "the webhook address has a Copy button"
    );

    // A rule: checkout's incidents get the data-loss template.
    browser.goto(&app.url("/admin/templates")).await;
    browser.set_value("#rule-template", "data-loss").await;
    browser.type_into("#rule-services", "checkout").await;
    browser
        .click_to_load("#rule-form button[type=submit]")
        .await;
    browser.wait_for_url("rules_saved=1").await;

    // The next incident: its draft uses the rule, its notice reaches both rooms, and
    // its first action becomes a Jira ticket — with no restart.
    let admin = app.admin_token();
    let draft = draft_of_alert(&app, &admin, "checkout", json!({})).await;
    assert_eq!(draft["template"]["name"], "data-loss", "{draft}");
    let report = deliver_with(&app, app.runtime.env());
    assert_eq!(report.sent, 2, "{report:?}");
    assert_eq!(inbox.got("/slack/ops-room").len(), 2);
    let room = synapse.messages().await;
    assert_eq!(room.len(), 3, "two checks and the notice: {room:?}");
    let id = draft["id"].as_str().expect("an id");
    crate::ownership::person(&app, "ana@example.com", false).await;
    let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{id}/actions"),
            Some(&admin),
            &json!({"title": "Keep a copy of the ledger before compaction", "owner": "ana@example.com",
                    "due_date": due, "priority": "high", "kind": "prevent"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let sent = coe::services::coe::trackers::deliver(
        &app.pool,
        app.runtime.env(),
        "test",
        &AtomicBool::new(false),
    )
    .expect("a tracker pass");
    assert_eq!(sent.sent, 1, "{sent:?}");
    let issues = jira.issues("jira");
    assert_eq!(issues.len(), 1);
    assert_eq!(
        issues[0].title,
        "Keep a copy of the ledger before compaction"
    );
    crate::html::assert_valid(&crate::html::vnu_jar(), &pages);
}
