//! Templates chosen by rule (`[[coe.templates]]`): a new COE gets the template its
//! severity, service, team and incident labels call for; a draft's owner switches
//! it, the text under the sections both templates have staying, the rest kept apart.

use std::collections::BTreeMap;

use coe::config::{Settings, TemplateRule};
use coe::domain::{Role, Severity};
use serde_json::{json, Value};

use crate::helpers::{json as body_json, spawn_app_with, TestApp};

fn rule(builtin: &str) -> TemplateRule {
    TemplateRule {
        file: None,
        builtin: Some(builtin.into()),
        severities: Vec::new(),
        services: Vec::new(),
        teams: Vec::new(),
        labels: BTreeMap::new(),
    }
}

/// Security incidents (label `kind=security`) and the payments database's worst
/// outages get the shipped templates; the rest the default.
pub(crate) fn with_rules(s: &mut Settings) {
    let mut security = rule("security");
    security.labels.insert("kind".into(), "security".into());
    let mut data = rule("data-loss");
    data.services = vec!["payments-db".into()];
    data.severities = vec![Severity::Sev1, Severity::Sev2];
    s.coe.templates = vec![security, data];
}

async fn send(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    version: Option<i64>,
    body: Value,
) -> (u16, Value) {
    let mut req = app
        .client
        .request(method.parse().expect("method"), app.url(path))
        .bearer_auth(token)
        .json(&body);
    if let Some(v) = version {
        req = req.header("if-match", format!("\"{v}\""));
    }
    let res = req.send().await.expect("sent");
    let status = res.status().as_u16();
    let text = res.text().await.expect("text");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn section<'a>(doc: &'a Value, key: &str) -> Option<&'a Value> {
    doc["sections"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["key"] == key))
}

#[tokio::test]
async fn the_rules_pick_the_template_and_a_draft_switches_keeping_its_text() {
    let app = spawn_app_with(with_rules).await;
    let admin = app.admin_token();
    let ingest = app.token("ingest", Role::Ingest);

    // By service and severity.
    let (status, doc) = send(&app, &admin, "POST", "/api/v1/coes", None,
        json!({"title": "Ledger rows lost", "service": "payments-db", "severity": "sev2", "owner": "ana@example.com"})).await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(doc["template"]["name"], "data-loss", "{doc}");
    assert!(section(&doc, "data_affected").is_some());
    // The same service, a lesser outage: the default.
    let (_, minor) = send(
        &app,
        &admin,
        "POST",
        "/api/v1/coes",
        None,
        json!({"title": "Slow ledger reads", "service": "payments-db", "severity": "sev4"}),
    )
    .await;
    assert_eq!(minor["template"]["name"], "default", "{minor}");
    // By the incident's labels: an alert of kind security opens its draft with the
    // security template.
    let alert = json!({
        "version": "4", "status": "firing", "groupKey": "{}:{alertname=\"LeakedKey\"}",
        "alerts": [{
            "status": "firing", "fingerprint": "5ec",
            "labels": {"alertname": "LeakedKey", "severity": "error", "service": "auth", "kind": "security"},
            "annotations": {"summary": "An API key was pushed to a public repository"},
            "startsAt": "2026-11-29T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z"
        }]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    let list = app.get_json("/api/v1/coes?service=auth", &admin).await;
    let id = list["coes"][0]["id"].as_str().expect("a draft").to_owned();
    let security = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(security["template"]["name"], "security", "{security}");
    assert!(section(&security, "exposure").is_some_and(|s| s["required"] == true));

    // The data-loss draft is written in part, then switched to the security template.
    let coe = doc["id"].as_str().expect("id").to_owned();
    let mut v = doc["version"].as_i64().expect("version");
    for (key, body) in [
        (
            "summary",
            "The nightly compaction deleted 1,200 ledger rows.",
        ),
        (
            "data_affected",
            "1,200 ledger rows of 14 merchants, 3 to 5 November.",
        ),
    ] {
        let (status, after) = send(
            &app,
            &admin,
            "PUT",
            &format!("/api/v1/coes/{coe}/sections/{key}"),
            Some(v),
            json!({"body": body}),
        )
        .await;
        assert_eq!(status, 200, "{after}");
        v = after["version"].as_i64().expect("version");
    }
    let (status, switched) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/coes/{coe}"),
        Some(v),
        json!({"template": "security"}),
    )
    .await;
    assert_eq!(status, 200, "{switched}");
    assert_eq!(switched["template"]["name"], "security");
    assert_eq!(
        section(&switched, "summary").expect("kept")["body"],
        "The nightly compaction deleted 1,200 ledger rows."
    );
    assert!(section(&switched, "data_affected").is_none());
    assert_eq!(section(&switched, "exposure").expect("new")["body"], "");
    assert_eq!(
        switched["from_previous_template"],
        json!([{"key": "data_affected", "body": "1,200 ledger rows of 14 merchants, 3 to 5 November."}])
    );
    let history = app
        .get_json(&format!("/api/v1/coes/{coe}/history"), &admin)
        .await;
    assert!(history.to_string().contains("\"data-loss\""), "{history}");
    // And back: the text is in its section again.
    let v = switched["version"].as_i64().expect("version");
    let (status, back) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/coes/{coe}"),
        Some(v),
        json!({"template": "data-loss"}),
    )
    .await;
    assert_eq!(status, 200, "{back}");
    assert_eq!(
        section(&back, "data_affected").expect("back")["body"],
        "1,200 ledger rows of 14 merchants, 3 to 5 November."
    );
    assert_eq!(back["from_previous_template"], json!([]));

    // An unknown name, a stale version.
    let v = back["version"].as_i64().expect("version");
    let (status, body) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/coes/{coe}"),
        Some(v),
        json!({"template": "poetry"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("template"), "{body}");
    let (status, _) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/coes/{coe}"),
        Some(v - 1),
        json!({"template": "security"}),
    )
    .await;
    assert_eq!(status, 412);
    let (status, _) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/coes/{coe}"),
        Some(v),
        json!({"template": 7}),
    )
    .await;
    assert!(status == 400 || status == 422);
    let still = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert_eq!(still["template"]["name"], "data-loss", "nothing changed");
}

#[tokio::test]
async fn a_coe_past_draft_keeps_its_template() {
    let (w, _) = crate::attacks::review_world_with(with_rules).await;
    let (id, doc) = crate::mechanism::submitted_sev1(&w).await;
    assert_eq!(doc["state"], "in_review");
    let v = doc["version"].as_i64().expect("version");
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"template": "security"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("while it is a draft"), "{body}");
    let after = body_json(
        w.app
            .get(&format!("/api/v1/coes/{id}"), Some(&w.owner))
            .await,
    )
    .await;
    assert_eq!(after["template"]["name"], "default");
}

/// In Chromium: a draft's owner switches its template on the COE page; the text of a
/// section the new template lacks shows apart (screenshots `coe-template-choose`,
/// `coe-template-switched`).
#[tokio::test]
async fn a_draft_s_owner_switches_its_template_in_a_browser() {
    let app = spawn_app_with(with_rules).await;
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/ana@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"name": "Ana Lima", "team": "payments"}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success());
    let (_, doc) = send(&app, &admin, "POST", "/api/v1/coes", None,
        json!({"title": "Ledger rows lost", "service": "payments-db", "severity": "sev2", "owner": "ana@example.com"})).await;
    let coe = doc["id"].as_str().expect("id").to_owned();
    let v = doc["version"].as_i64().expect("version");
    let (status, _) = send(
        &app,
        &admin,
        "PUT",
        &format!("/api/v1/coes/{coe}/sections/data_affected"),
        Some(v),
        json!({"body": "1,200 ledger rows of 14 merchants."}),
    )
    .await;
    assert_eq!(status, 200);

    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "ana@example.com", &format!("/coes/{coe}")).await;
    browser.wait_for_heading("sev2 Ledger rows lost").await;
    browser.click("#template summary").await;
    browser.set_value("#template-name", "security").await;
    browser.screenshot("coe-template-choose").await;
    browser.click_to_load("#template button[type=submit]").await;
    browser.wait_for_heading("sev2 Ledger rows lost").await;
    let summary = browser.text("#template summary").await;
    assert!(summary.contains("“security”"), "{summary}");
    let kept = browser.text("#from-previous-template").await;
    assert!(
        kept.contains("1,200 ledger rows of 14 merchants."),
        "{kept}"
    );
    assert!(
        !browser.find_all("#exposure").await.is_empty(),
        "the security template's sections"
    );
    let notice = browser.text("#kept-text").await;
    assert!(notice.contains("data affected"), "{notice}");
    browser.screenshot("coe-template-switched").await;
    browser
        .eval("document.getElementById('from-previous-template').scrollIntoView(); return 1")
        .await;
    browser.screenshot("coe-template-kept-text").await;
    // Its history says what happened, in words.
    browser
        .goto(&app.url(&format!("/coes/{coe}/history")))
        .await;
    let history = browser.text("main").await;
    assert!(history.contains("switched its template"), "{history}");
    crate::html::assert_accessible_now(&browser).await;
}
