//! Set-up from the pages (issue 65): the first-run checklist on an admin's My work,
//! the word on what coe is on a first visit, and the services the incidents name.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::email::SmtpServer;
use crate::helpers::spawn_app_with;
use crate::html::text_of;
use crate::pages::{get_page, post_form, sign_in};

async fn my_work(app: &crate::helpers::TestApp, cookie: &str) -> String {
    get_page(app, "/", Some(cookie))
        .await
        .text()
        .await
        .expect("html")
}

/// The text of checklist step `what` (its line starts with it).
fn step(html: &str, what: &str) -> String {
    (0..7)
        .map(|i| text_of(html, &format!("set-up-{i}")))
        .find(|line| line.starts_with(what))
        .unwrap_or_else(|| panic!("no step {what}: {html}"))
}

#[tokio::test]
async fn an_admin_s_checklist_says_what_is_set_up_and_leaves_once_it_all_is() {
    let smtp = SmtpServer::start();
    let url = smtp.url();
    let app = spawn_app_with(move |s| s.smtp.url = Some(url)).await;
    let admin = app.admin_token();
    crate::ownership::person(&app, "root@example.com", true).await;
    let root = sign_in(&app, "root@example.com").await;

    // A first visit: what coe is, and what to set up, each with its state.
    let html = my_work(&app, &root).await;
    assert!(
        text_of(&html, "what-coe-is").starts_with("coe keeps the promises made after an outage")
    );
    let people = step(&html, "People");
    assert!(
        people.contains("to do") && people.contains("Nobody else is in the directory yet"),
        "{people}"
    );
    let alerts = step(&html, "Alerts");
    assert!(
        alerts.contains("to do") && alerts.contains("No alert has arrived yet"),
        "{alerts}"
    );
    assert!(
        html.contains("<a href=\"/admin/tokens\">Make a token</a>"),
        "{html}"
    );
    let chat = step(&html, "Chat");
    assert!(chat.contains("if you want it"), "{chat}");
    let services = step(&html, "Services' owners");
    assert!(
        services.contains("No service has an owner yet"),
        "{services}"
    );
    let template = step(&html, "A template");
    assert!(template.contains("built-in template"), "{template}");
    let sign_in_step = step(&html, "Sign-in");
    assert!(
        sign_in_step.contains("✓ done") && sign_in_step.contains("with a link coe emails them"),
        "{sign_in_step}"
    );
    // A member sees no checklist.
    crate::ownership::person(&app, "olga@example.com", false).await;
    let olga = sign_in(&app, "olga@example.com").await;
    let html = my_work(&app, &olga).await;
    assert!(!html.contains("id=\"set-up\""), "{html}");
    assert!(html.contains("id=\"what-coe-is\""), "{html}");

    // Set up one by one: an alert, the service's owner, a template of our own.
    let ingest = app.token("alerts", coe::domain::Role::Ingest);
    let event = json!({"dedup_key": "c-1", "group_key": "c", "title": "checkout is failing",
        "severity": "sev2", "service": "checkout"});
    let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let html = my_work(&app, &root).await;
    let alerts = step(&html, "Alerts");
    assert!(
        alerts.contains("✓ done") && alerts.contains("Alerts arrive from: api (last"),
        "{alerts}"
    );
    let services = step(&html, "Services' owners");
    assert!(
        services.contains("1 service the incidents name has no owner yet"),
        "{services}"
    );
    // With no chat channel at all, the admin is offered one where it would be used:
    // on the draft the alert opened.
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let draft = coes["coes"][0]["id"]
        .as_str()
        .expect("the draft")
        .to_owned();
    let page = get_page(&app, &format!("/coes/{draft}"), Some(&root))
        .await
        .text()
        .await
        .expect("html");
    let hint = text_of(&page, "import-from-chat-missing");
    assert!(
        hint.contains("no chat channel this COE may read is connected yet"),
        "{hint}"
    );
    assert!(
        page.contains("<a href=\"/admin/chat\">Connect one</a>"),
        "{page}"
    );
    let res = post_form(
        &app,
        &root,
        "/admin/ownership",
        "/admin/ownership/services",
        &[("service", "checkout"), ("owner", "olga@example.com")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = my_work(&app, &root).await;
    let services = step(&html, "Services' owners");
    assert!(
        services.contains("✓ done") && services.contains("1 service in the service map"),
        "{services}"
    );
    let people = step(&html, "People");
    assert!(people.contains("2 people in the directory"), "{people}");
    let all = app.get_json("/api/v1/templates", &admin).await;
    let default: &Value = &all["templates"][0]["template"];
    let res = app
        .post_json(
            "/api/v1/templates/ours",
            Some(&admin),
            &json!({"contributing_factors": default["contributing_factors"],
                    "sections": default["sections"]}),
        )
        .await;
    assert_eq!(res.status(), 201);

    // With every step marked "to do" done, the list leaves My work: chat and a
    // tracker do not hold it open.
    let html = my_work(&app, &root).await;
    assert!(!html.contains("id=\"set-up\""), "{html}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_an_admin_follows_the_checklist_to_give_a_service_an_owner() {
    let app = spawn_app_with(|_| {}).await;
    crate::ownership::person(&app, "root@example.com", true).await;
    let ingest = app.token("alerts", coe::domain::Role::Ingest);
    let event = json!({"dedup_key": "p-1", "group_key": "p", "title": "payments API is failing",
        "severity": "sev2", "service": "payments-api"});
    let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "root@example.com", "/").await;

    let services = browser.text("#set-up-5").await;
    assert!(
        services.contains("1 service the incidents name has no owner yet"),
        "{services}"
    );
    browser.screenshot("set-up-checklist").await;
    browser.click_to_load("#set-up-5 a").await;
    browser.wait_for_url("/admin/ownership").await;
    let seen = browser.text("#seen").await;
    assert!(seen.contains("payments-api"), "{seen}");
    browser.screenshot("ownership-services-seen").await;
    browser.click_to_load("#seen a").await;
    browser.wait_for_url("service=payments-api").await;
    assert_eq!(browser.value("#s-service").await, "payments-api");
    browser.type_into("#s-owner", "root@example.com").await;
    browser.click_to_load("#services button[type=submit]").await;
    let seen = browser.text("#seen").await;
    assert!(
        seen.contains("Each has its owner in the service map"),
        "{seen}"
    );

    // The draft the alert opened offers what only an admin sets up, where it is used.
    let admin = app.admin_token();
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let draft = coes["coes"][0]["id"]
        .as_str()
        .expect("the draft")
        .to_owned();
    browser
        .goto(&app.url(&format!("/coes/{draft}#part-timeline")))
        .await;
    let hint = browser.text("#import-from-chat-missing").await;
    assert!(hint.contains("Connect one"), "{hint}");
    browser.screenshot("draft-chat-missing").await;
}
