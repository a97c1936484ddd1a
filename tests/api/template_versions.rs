//! Templates an admin keeps in coe (Admin → Templates): each save a new version; COEs
//! opened after it get it, those opened before keep theirs; bad templates refused,
//! naming the section.

use coe::domain::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

async fn post(app: &TestApp, token: &str, path: &str, body: String) -> (u16, Value) {
    let res = app
        .client
        .post(app.url(path))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("sent");
    let status = res.status().as_u16();
    let text = res.text().await.expect("text");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The default template with a required "Customer communication" section after the
/// impact, as an admin saves it.
fn with_customer_section(default: &Value) -> Value {
    let mut sections = default["sections"].as_array().expect("sections").clone();
    sections.insert(
        2,
        json!({"key": "customer_communication", "title": "Customer communication", "kind": "text",
               "required": true, "guidance": "What customers were told, when, and by whom."}),
    );
    json!({"contributing_factors": default["contributing_factors"], "sections": sections})
}

fn listing<'a>(all: &'a Value, name: &str) -> &'a Value {
    all["templates"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["template"]["name"] == name))
        .unwrap_or_else(|| panic!("no template {name} in {all}"))
}

#[tokio::test]
async fn a_new_version_changes_only_the_coes_opened_after_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let member = app.token("member", Role::Member);
    let (status, before) = post(
        &app,
        &admin,
        "/api/v1/coes",
        json!({"title": "Checkout errors", "severity": "sev2"}).to_string(),
    )
    .await;
    assert_eq!(status, 201, "{before}");
    // The shipped default's version (the file's own number).
    let v1 = before["template"]["version"].as_u64().expect("version");
    let v2 = v1 + 1;

    let all = app.get_json("/api/v1/templates", &member).await;
    let default = listing(&all, "default");
    assert_eq!(default["source"]["kind"], "shipped", "{default}");
    assert_eq!(default["coes"], json!([{"version": v1, "coes": 1}]));
    for shipped in ["security", "data-loss"] {
        listing(&all, shipped);
    }
    let draft = with_customer_section(&default["template"]);

    // Only an admin saves; what is not a template is refused, naming the section.
    let (status, _) = post(
        &app,
        &member,
        "/api/v1/templates/default",
        draft.to_string(),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = post(
        &app,
        &admin,
        "/api/v1/templates/default",
        "{\"sections\": [".into(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(
        &app,
        &admin,
        "/api/v1/templates/default",
        json!({"sections": "none"}).to_string(),
    )
    .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    let mut twice = draft.clone();
    twice["sections"][3]["key"] = json!("summary");
    let (status, body) = post(&app, &admin, "/api/v1/templates/default", twice.to_string()).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "sections[3]", "{body}");
    assert!(
        body.to_string().contains("used by an earlier section"),
        "{body}"
    );
    let (status, body) = post(
        &app,
        &admin,
        "/api/v1/templates/Not%20A%20Name",
        draft.to_string(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "name", "{body}");
    let (status, body) = post(
        &app,
        &admin,
        "/api/v1/templates/default",
        json!({"contributing_factors": [], "sections": [], "colour": "red"}).to_string(),
    )
    .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    let all = app.get_json("/api/v1/templates", &admin).await;
    assert_eq!(
        listing(&all, "default")["template"]["version"],
        v1,
        "nothing saved"
    );

    // Based on a version that is no longer the newest: refused.
    let mut stale = draft.clone();
    stale["based_on"] = json!(v1 - 1);
    let (status, body) = post(&app, &admin, "/api/v1/templates/default", stale.to_string()).await;
    assert_eq!(status, 409, "{body}");
    let mut fresh = draft.clone();
    fresh["based_on"] = json!(v1);
    let draft = fresh;
    // Saved: version 2.
    let (status, saved) = post(&app, &admin, "/api/v1/templates/default", draft.to_string()).await;
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["version"], v2);
    assert_eq!(saved["name"], "default");

    // The COE opened before keeps its version; one opened now gets the new one.
    let id = before["id"].as_str().expect("id");
    let kept = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(kept["template"]["version"], v1, "{kept}");
    assert!(
        !kept.to_string().contains("customer_communication"),
        "{kept}"
    );
    assert_eq!(kept["sections"], before["sections"]);
    let (_, after) = post(
        &app,
        &admin,
        "/api/v1/coes",
        json!({"title": "Search slow", "severity": "sev3"}).to_string(),
    )
    .await;
    assert_eq!(after["template"]["version"], v2, "{after}");
    let keys: Vec<&str> = after["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .filter_map(|s| s["key"].as_str())
        .collect();
    assert_eq!(
        &keys[..4],
        ["summary", "impact", "customer_communication", "timeline"]
    );
    // Its completeness asks for the new required section.
    assert!(after.to_string().contains("customer_communication"));

    // A new name starts at version 1, and drafts may switch to it.
    let mut lite = draft.clone();
    lite["based_on"] = json!(0); // a new name
    lite["sections"] = json!(draft["sections"]
        .as_array()
        .expect("s")
        .iter()
        .filter(|s| s["key"] != "metrics")
        .cloned()
        .collect::<Vec<_>>());
    let (status, made) = post(&app, &admin, "/api/v1/templates/lite", lite.to_string()).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["version"], 1);
    let v = after["version"].as_i64().expect("version");
    let res = app
        .client
        .patch(app.url(&format!(
            "/api/v1/coes/{}",
            after["id"].as_str().expect("id")
        )))
        .bearer_auth(&admin)
        .header("if-match", format!("\"{v}\""))
        .json(&json!({"template": "lite"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let all = app.get_json("/api/v1/templates", &admin).await;
    let default = listing(&all, "default");
    assert_eq!(default["template"]["version"], v2);
    assert_eq!(default["source"]["kind"], "saved");
    assert_eq!(default["saved"][0]["by"], "token:test-admin", "{default}");
    assert_eq!(
        default["coes"],
        json!([{"version": v1, "coes": 1}]),
        "{default}"
    );
    assert_eq!(
        listing(&all, "lite")["coes"],
        json!([{"version": 1, "coes": 1}])
    );
}

/// In Chromium: an admin adds a section to the default template, previews a COE
/// written with it, saves version 2 (screenshots `admin-templates`,
/// `admin-template-preview`, `admin-template-saved`).
#[tokio::test]
async fn an_admin_changes_a_template_on_its_page() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    crate::leaving::set_admin(&app, &admin, "admin@example.com", true).await;
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "admin@example.com", "/admin/templates").await;
    browser.wait_for_heading("COE templates").await;
    let list = browser.text("main table").await;
    assert!(
        list.contains("default") && list.contains("security") && list.contains("data-loss"),
        "{list}"
    );
    browser.screenshot("admin-templates").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.click_to_load("#template-default a").await;
    browser.wait_for_heading("Template default").await;
    // The blank row adds a section; it goes after the impact.
    let rows = browser.find_all("fieldset.template-section").await.len();
    let new = rows - 1;
    browser
        .set_value(&format!("#s{new}-title"), "Customer communication")
        .await;
    browser
        .set_value(
            &format!("#s{new}-guidance"),
            "What customers were told, when, and by whom.",
        )
        .await;
    browser.set_value(&format!("#s{new}-order"), "25").await;
    browser
        .click(&format!("#section-{new} input[name=\"s{new}.required\"]"))
        .await;
    browser.click_to_load("button[value=preview]").await;
    browser.wait_for_heading("Template default").await;
    let preview = browser.text("#template-preview").await;
    let at = |what: &str| {
        preview
            .find(what)
            .unwrap_or_else(|| panic!("{what} in {preview}"))
    };
    assert!(
        at("business impact") < at("Customer communication")
            && at("Customer communication") < at("Timeline"),
        "{preview}"
    );
    assert!(
        preview.contains("Customer communication (required, Written text)"),
        "{preview}"
    );
    browser
        .eval("document.getElementById('template-preview').scrollIntoView(); return 1")
        .await;
    browser.screenshot("admin-template-preview").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.click_to_load("button[value=save]").await;
    browser.wait_for_heading("Template default").await;
    let saved = browser.text("#template-saved").await;
    assert!(saved.contains("Saved as version 3"), "{saved}");
    let facts = browser.text("#template-facts").await;
    assert!(
        facts.contains("Version 3") && facts.contains("admin@example.com"),
        "{facts}"
    );
    browser.screenshot("admin-template-saved").await;

    let all = app.get_json("/api/v1/templates", &admin).await;
    let default = listing(&all, "default");
    let keys: Vec<&str> = default["template"]["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .filter_map(|s| s["key"].as_str())
        .collect();
    assert_eq!(&keys[..3], ["summary", "impact", "customer_communication"]);
    assert_eq!(default["template"]["sections"][2]["required"], true);
}
