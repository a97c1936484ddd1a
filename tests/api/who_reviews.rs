//! Owner and reviewer are not left to chance (issue 63 item 3): a reporter made owner
//! of another team's outage is told as it is reported, with one click to hand it to
//! that team's lead; the reviewer is on the checklist of what is missing; a reviewer
//! is named beside Submit, the owner's manager suggested. In a real browser, with and
//! without script.

use coe::db::schema::service_owners;
use diesel::prelude::*;
use serde_json::json;

use crate::browser::sign_in_to;
use crate::helpers::{spawn_app, TestApp};
use crate::webdriver::Browser;

/// Ana of checkout; Pia and Pat of payments (Pat leads it, and reports to Val);
/// the payments service is payments' in the service map, with no owner.
async fn organisation(app: &TestApp) -> String {
    let admin = app.admin_token();
    for (email, team, manager) in [
        ("ana@example.com", "checkout", Some("lead@example.com")),
        ("lead@example.com", "checkout", None),
        ("pat@example.com", "payments", Some("val@example.com")),
        ("pia@example.com", "payments", Some("pat@example.com")),
        ("val@example.com", "leadership", None),
    ] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"team": team, "manager_email": manager}))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200, "{email}");
    }
    let mut conn = app.pool.get().expect("conn");
    diesel::insert_into(service_owners::table)
        .values((
            service_owners::service.eq("payments"),
            service_owners::team.eq(Some("payments")),
            service_owners::updated_by.eq("test"),
            service_owners::updated_at.eq(chrono::Utc::now().naive_utc()),
        ))
        .execute(&mut conn)
        .expect("map");
    admin
}

/// Ana reports a failure of payments in the browser; the page it lands on.
async fn report(browser: &Browser, app: &TestApp) -> String {
    sign_in_to(browser, app, "ana@example.com", "/report").await;
    browser.type_into("#r-title", "Refunds fail").await;
    browser.type_into("#r-service", "payments").await;
    browser.click("#r-severity option[value=sev2]").await;
    let started = (chrono::Utc::now() - chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    browser.set_value("#r-started", &started).await;
    browser
        .click_to_load("form[action='/report'] > button:not([hidden])")
        .await;
    browser.wait_for_url("reported=1").await
}

async fn run(browser: Browser, shots: &str) {
    let app = spawn_app().await;
    let admin = organisation(&app).await;
    let landed = report(&browser, &app).await;
    let id = landed
        .split("/coes/")
        .nth(1)
        .and_then(|rest| rest.split(['?', '#']).next())
        .expect("on its COE")
        .to_owned();
    let path = format!("/api/v1/coes/{id}");
    let coe = || app.get_json(&path, &admin);
    assert_eq!(coe().await["owner"], "ana@example.com");

    // Told why she owns it, with payments' lead one click away.
    let told = browser.text("#hand-over").await;
    assert!(
        told.contains("You own this COE because no rule names an owner for the service “payments”"),
        "{told}"
    );
    browser
        .screenshot(&format!("{shots}-reporter-told-she-owns-it"))
        .await;
    browser
        .click_to_load("#hand-over button[value='pat@example.com']")
        .await;
    browser.wait_for_url("did=handover").await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Handed over: it is pat@example.com's now"),
        "{notice}"
    );
    assert_eq!(coe().await["owner"], "pat@example.com");
    assert!(browser.find_all("#hand-over").await.is_empty());

    // Pat's page: the reviewer is the first thing missing, and Val (Pat's manager)
    // is suggested beside Submit.
    let page = format!("/coes/{id}");
    crate::browser::sign_out(&browser).await;
    sign_in_to(&browser, &app, "pat@example.com", &page).await;
    let missing = browser.text("#missing-h + ul").await;
    assert!(
        missing.starts_with("Reviewer: nobody reviews it yet"),
        "{missing}"
    );
    assert_eq!(browser.value("#rv-reviewer").await, "val@example.com");
    assert!(
        browser
            .text("#reviewer-suggested")
            .await
            .contains("val@example.com, the owner's manager"),
        "{}",
        browser.text("#reviewer-suggested").await
    );
    if shots == "who" {
        browser
            .eval("document.getElementById('submit').scrollIntoView()")
            .await;
    }
    browser
        .screenshot(&format!("{shots}-reviewer-beside-submit"))
        .await;
    if shots == "who" {
        crate::html::assert_accessible_now(&browser).await;
    }

    // Submitted to Val in one click: not ready yet, but Val is named, and the
    // checklist no longer asks for a reviewer.
    browser
        .click_to_load("#submit button[value='val@example.com']")
        .await;
    // Not ready: the page again, with what is missing.
    browser.wait_for_url("kept=").await;
    browser
        .screenshot(&format!("{shots}-submitted-not-ready"))
        .await;
    assert_eq!(coe().await["reviewer"], "val@example.com");
    assert_eq!(coe().await["state"], "draft");
    let missing = browser.text("#missing-h + ul").await;
    assert!(!missing.contains("Reviewer:"), "{missing}");
    assert_eq!(browser.value("#rv-reviewer").await, "val@example.com");
    assert!(browser.find_all("#reviewer-suggested").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reporter_hands_another_teams_outage_over_and_a_reviewer_is_named_beside_submit() {
    run(Browser::start().await, "who").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_without_script() {
    run(Browser::start_without_script().await, "who-no-script").await;
}
