//! Issue 65, item 4: the rules that pick a new COE's template kept in coe (Admin →
//! Templates, `/api/v1/template-rules`), read after the settings file's; a rule may
//! name a template made on the admin page; "which template would this incident
//! get?" answers with the rule that picks it.

use coe::domain::Role;
use serde_json::{json, Value};

use crate::helpers::{error_of, json as body_json, spawn_app_with, TestApp};
use crate::templates_by_rule::with_rules;

async fn put_rules(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.client
        .put(app.url("/api/v1/template-rules"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("sent")
}

async fn ask(app: &TestApp, token: &str, question: Value) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/template-rules/check"))
        .bearer_auth(token)
        .json(&question)
        .send()
        .await
        .expect("sent")
}

async fn new_coe(app: &TestApp, token: &str, body: Value) -> Value {
    let res = app
        .client
        .post(app.url("/api/v1/coes"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 201);
    body_json(res).await
}

/// An alert of `service` with `labels` besides; the draft it opens, read back.
pub(crate) async fn draft_of_alert(
    app: &TestApp,
    admin: &str,
    service: &str,
    extra: Value,
) -> Value {
    let ingest = app.token(&format!("ingest-{service}"), Role::Ingest);
    let mut labels =
        json!({"alertname": format!("{service}Down"), "severity": "critical", "service": service});
    if let (Some(labels), Some(extra)) = (labels.as_object_mut(), extra.as_object()) {
        labels.extend(extra.clone());
    }
    let alert = json!({
        "version": "4", "status": "firing", "groupKey": format!("{{}}:{{alertname=\"{service}Down\"}}"),
        "alerts": [{
            "status": "firing", "fingerprint": format!("fp-{service}"),
            "labels": labels,
            "annotations": {"summary": format!("{service} is down")},
            "startsAt": "2026-12-01T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z"
        }]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    let list = app
        .get_json(&format!("/api/v1/coes?service={service}"), admin)
        .await;
    let id = list["coes"][0]["id"].as_str().expect("a draft").to_owned();
    app.get_json(&format!("/api/v1/coes/{id}"), admin).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_kept_in_coe_pick_the_template_after_the_settings_file_s_and_say_why() {
    let app = spawn_app_with(with_rules).await;
    let admin = app.admin_token();
    let listed = app.get_json("/api/v1/template-rules", &admin).await;
    assert_eq!(listed["settings_file"].as_array().map(Vec::len), Some(2));
    assert_eq!(listed["kept"]["version"], 0, "{listed}");

    // A template made on the admin page (here by the API), named by a rule.
    let default =
        app.get_json("/api/v1/templates", &admin).await["templates"][0]["template"].clone();
    let made = app
        .client
        .post(app.url("/api/v1/templates/payments-coe"))
        .bearer_auth(&admin)
        .json(&json!({"contributing_factors": default["contributing_factors"], "sections": default["sections"]}))
        .send()
        .await
        .expect("sent");
    assert_eq!(made.status(), 201);
    let rules = json!({"version": 0, "rules": [
        {"template": "payments-coe", "teams": ["payments"]},
        {"template": "data-loss", "services": [" checkout "], "severities": ["sev1"]},
    ]});
    let saved = put_rules(&app, &admin, &rules).await;
    assert_eq!(saved.status(), 200);
    let saved = body_json(saved).await;
    assert_eq!(saved["version"], 1);
    assert_eq!(
        saved["rules"][1]["services"],
        json!(["checkout"]),
        "trimmed"
    );

    // Refused by name, nothing written.
    let (_, _, fields) = error_of(put_rules(&app, &admin, &rules).await, 409).await;
    assert!(fields.is_empty());
    for (body, field) in [
        (
            json!({"version": 1, "rules": [{"template": "nope", "teams": ["x"]}]}),
            "rules[0].template",
        ),
        (
            json!({"version": 1, "rules": [{"template": "security", "services": [" "]}]}),
            "rules[0].template",
        ),
        (
            json!({"version": 1, "rules": [{"template": "security", "labels": {"kind": ""}}]}),
            "rules[0].labels",
        ),
    ] {
        let (_, _, fields) = error_of(put_rules(&app, &admin, &body).await, 422).await;
        assert_eq!(fields[0].0, field, "{body}: {fields:?}");
    }
    // The wrong shape: a 422 naming the field by its path.
    for (body, field) in [
        (
            json!({"version": 1, "rules": [{"template": "security", "severities": ["sev9"]}]}),
            "rules[0].severities",
        ),
        (
            json!({"version": 1, "rules": [{"template": "security", "teams": ["x"], "when": 1}]}),
            "rules[0]",
        ),
        (json!({"version": "1", "rules": []}), "version"),
        (json!({"rules": []}), "version"),
    ] {
        let (_, _, fields) = error_of(put_rules(&app, &admin, &body).await, 422).await;
        assert!(fields[0].0.starts_with(field), "{body}: {fields:?}");
    }
    let member = app.token("reader", Role::Member);
    let (_, _, _) = error_of(put_rules(&app, &member, &rules).await, 403).await;
    assert_eq!(
        app.get_json("/api/v1/template-rules", &admin).await["kept"]["version"],
        1
    );

    // The next COEs: the kept rule picks for checkout's worst outage, not for a
    // lesser one; the settings file's rule is read first.
    let worst = new_coe(
        &app,
        &admin,
        json!({"title": "Checkout down", "service": "checkout", "severity": "sev1"}),
    )
    .await;
    assert_eq!(worst["template"]["name"], "data-loss", "{worst}");
    let lesser = new_coe(
        &app,
        &admin,
        json!({"title": "Checkout slow", "service": "checkout", "severity": "sev3"}),
    )
    .await;
    assert_eq!(lesser["template"]["name"], "default");
    let security = draft_of_alert(&app, &admin, "checkout-api", json!({"kind": "security"})).await;
    assert_eq!(security["template"]["name"], "security");

    // Two saves from the same version at once: one is saved, the other refused.
    let next = json!({"version": 1, "rules": [{"template": "security", "teams": ["sre"]}]});
    let (a, b) = tokio::join!(
        put_rules(&app, &admin, &next),
        put_rules(&app, &admin, &next)
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    assert_eq!(
        put_rules(
            &app,
            &admin,
            &json!({"version": 2, "rules": rules["rules"]})
        )
        .await
        .status(),
        200
    );

    // Which template would it get, and why.
    let answer = body_json(
        ask(
            &app,
            &member,
            json!({"service": "checkout", "severity": "sev1"}),
        )
        .await,
    )
    .await;
    assert_eq!(answer["template"], "data-loss", "{answer}");
    assert_eq!(answer["why"], json!({"by": "kept", "index": 1}));
    let answer = body_json(ask(&app, &member, json!({"team": "payments"})).await).await;
    assert_eq!(answer["template"], "payments-coe", "{answer}");
    assert_eq!(answer["version"], 1);
    let answer = body_json(
        ask(
            &app,
            &member,
            json!({"service": "checkout", "severity": "sev1", "labels": {"kind": "security"}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        answer["why"],
        json!({"by": "settings_file", "index": 0}),
        "{answer}"
    );
    let incident = security["incident_id"]
        .as_str()
        .expect("an incident")
        .to_owned();
    let answer = body_json(ask(&app, &member, json!({"incident_id": incident})).await).await;
    assert_eq!(answer["template"], "security", "{answer}");
    assert_eq!(answer["why"], json!({"by": "settings_file", "index": 0}));
    let answer = body_json(ask(&app, &member, json!({})).await).await;
    assert_eq!(answer["why"], json!({"by": "organisation"}), "{answer}");
    error_of(
        ask(&app, &member, json!({"incident_id": "no-such"})).await,
        404,
    )
    .await;
    let (_, _, fields) = error_of(ask(&app, &member, json!({"severity": 3})).await, 422).await;
    assert_eq!(fields[0].0, "severity", "{fields:?}");

    // A rule whose template coe no longer has (as when a settings file template goes)
    // is passed over for the next that matches, and the others stay changeable.
    {
        use coe::db::schema::template_rules;
        use diesel::prelude::*;
        let gone = json!([
            {"template": "gone", "services": ["checkout"]},
            {"template": "data-loss", "services": ["checkout"]},
        ]);
        diesel::insert_into(template_rules::table)
            .values((
                template_rules::version.eq(4_i64),
                template_rules::rules.eq(gone.to_string()),
                template_rules::saved_by.eq("root@example.com"),
                template_rules::saved_at.eq(coe::db::now()),
            ))
            .execute(&mut app.pool.get().expect("conn"))
            .expect("written");
    }
    let answer = body_json(ask(&app, &member, json!({"service": "checkout"})).await).await;
    assert_eq!(answer["template"], "data-loss", "{answer}");
    assert_eq!(answer["why"], json!({"by": "kept", "index": 1}));
    let kept = app.get_json("/api/v1/template-rules", &admin).await["kept"].clone();
    let mut rules = kept["rules"].clone();
    rules[1]["services"] = json!(["checkout", "cart"]);
    let res = put_rules(&app, &admin, &json!({"version": 4, "rules": rules})).await;
    assert_eq!(res.status(), 200, "a rule kept as it was is not refused");
    rules[0]["teams"] = json!(["sre"]);
    let (_, _, fields) = error_of(
        put_rules(&app, &admin, &json!({"version": 5, "rules": rules})).await,
        422,
    )
    .await;
    assert_eq!(fields[0].0, "rules[0].template", "a changed one is");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_an_admin_adds_checks_changes_and_removes_a_rule_and_the_next_draft_uses_it() {
    let app = spawn_app_with(with_rules).await;
    crate::ownership::person(&app, "root@example.com", true).await;
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "root@example.com", "/admin/templates").await;
    assert!(browser.text("#no-kept-rules").await.contains("No rule"));
    let file = browser.text("#file-rules").await;
    assert!(
        file.contains("COEs whose alerts say kind = security get security"),
        "{file}"
    );

    // A label written wrong: said beside the form, what was typed kept.
    browser.set_value("#rule-template", "security").await;
    browser.type_into("#rule-labels", "kind security").await;
    browser
        .click_to_load("#rule-form button[type=submit]")
        .await;
    let problem = browser.text("#rule-problem").await;
    assert!(problem.contains("name = value"), "{problem}");
    assert_eq!(browser.value("#rule-labels").await, "kind security");
    browser.screenshot("template-rule-problem").await;
    let mut pages = Vec::new();
    let html = |b: Value| format!("<!DOCTYPE html>\n{}", b.as_str().unwrap_or_default());
    let outer = "return document.documentElement.outerHTML";
    crate::html::save(
        &mut pages,
        "template-rule-problem",
        &html(browser.eval(outer).await),
    );

    browser.clear("#rule-labels").await;
    browser.type_into("#rule-labels", "kind = security").await;
    browser
        .click_to_load("#rule-form button[type=submit]")
        .await;
    browser.wait_for_url("rules_saved=1").await;
    let kept = browser.text("#kept-rules").await;
    assert!(
        kept.contains("whose alerts say kind = security get security"),
        "{kept}"
    );

    // A second rule: checkout's worst outages get data-loss.
    browser.set_value("#rule-template", "data-loss").await;
    browser.click("#rule-form input[value=sev1]").await;
    browser.type_into("#rule-services", "checkout").await;
    browser
        .click_to_load("#rule-form button[type=submit]")
        .await;
    browser.wait_for_url("rules_saved=1").await;

    browser.screenshot("template-rules-kept").await;

    // Asked: an incident of checkout at sev1 would get data-loss, by rule 4 (the
    // settings file's two are read first).
    browser.set_value("#check-severity", "sev1").await;
    browser.type_into("#check-service", "checkout").await;
    browser.click_to_load("#check-form button").await;
    let answer = browser.text("#check-answer").await;
    assert!(
        answer.contains("It would get data-loss (version ")
            && answer.contains("): rule 4 picks it."),
        "{answer}"
    );
    browser.screenshot("template-rules").await;
    crate::html::save(
        &mut pages,
        "template-rules",
        &html(browser.eval(outer).await),
    );
    crate::html::assert_accessible_now(&browser).await;

    // The next incident's draft uses it.
    let admin = app.admin_token();
    let draft = draft_of_alert(&app, &admin, "checkout", json!({})).await;
    assert_eq!(draft["severity"], "sev1", "an alert marked critical");
    assert_eq!(draft["template"]["name"], "data-loss", "{draft}");

    // Changed: it now picks for sev2 as well; moved up; the first removed.
    browser
        .goto(&app.url("/admin/templates?change=1#rule-form"))
        .await;
    assert_eq!(browser.value("#rule-services").await, "checkout");
    browser.click("#rule-form input[value=sev2]").await;
    browser
        .click_to_load("#rule-form button[type=submit]")
        .await;
    browser.wait_for_url("rules_saved=1").await;
    assert!(browser
        .text("#rule-1")
        .await
        .contains("of severity sev1 or sev2"));
    browser.click_to_load("#rule-1 button[value=up]").await;
    browser.wait_for_url("rules_saved=1").await;
    assert!(browser.text("#rule-0").await.contains("data-loss"));
    browser.click_to_load("#rule-1 button[value=remove]").await;
    browser.wait_for_url("rules_saved=1").await;
    assert!(browser.find_all("#rule-1").await.is_empty());
    let kept = app.get_json("/api/v1/template-rules", &admin).await["kept"].clone();
    assert_eq!(kept["version"], 5, "{kept}");
    assert_eq!(kept["rules"][0]["severities"], json!(["sev1", "sev2"]));
    assert_eq!(kept["saved_by"], "root@example.com");
    crate::html::assert_valid(&crate::html::vnu_jar(), &pages);
}
