//! Correcting an action in the pages (issue 63 item 2): its title, what done means and
//! the rest changed on its page (only what changed is saved), and **Give it to someone
//! else** with the reason, in its history, the new owner told; a made-up owner refused
//! in production mode. In a real browser.

use coe::db::schema::outbox_emails;
use diesel::prelude::*;
use serde_json::json;

use crate::actions::World;
use crate::browser::sign_in_to;
use crate::webdriver::Browser;

/// A COE owned by owner@ with one action of dev@, and bo@ of the directory.
async fn an_action(w: &World) -> String {
    let admin = w.app.admin_token();
    for email in [
        "bo@example.com",
        "dev@example.com",
        "owner@example.com",
        "reviewer@example.com",
    ] {
        let res = w
            .app
            .client
            .put(w.app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"team": "payments"}))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200);
    }
    let (coe, _) = w.written_coe().await;
    let action = w
        .action(&coe, "Validate the config in CI", "dev@example.com")
        .await;
    action["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_is_corrected_and_given_to_someone_else_on_its_page() {
    let w = World::new().await;
    let id = an_action(&w).await;
    let page = format!("/actions/{id}");
    let browser = Browser::start().await;
    sign_in_to(&browser, &w.app, "owner@example.com", &page).await;

    // What it is: only what changed is saved.
    browser.click("#edit summary").await;
    browser.clear("#e-title").await;
    browser
        .type_into("#e-title", "Validate every config push in CI")
        .await;
    browser.clear("#e-done").await;
    browser
        .type_into("#e-done", "A config with a typo fails the CI run")
        .await;
    browser.click("#e-priority option[value=medium]").await;
    browser.click_to_load("button[formaction$='/edit']").await;
    browser.wait_for_url(&page).await;
    let action = w
        .app
        .get_json(&format!("/api/v1/actions/{id}"), &w.owner)
        .await;
    assert_eq!(
        action["title"], "Validate every config push in CI",
        "{action}"
    );
    assert_eq!(
        action["success_criteria"],
        "A config with a typo fails the CI run"
    );
    assert_eq!(action["priority"], "medium");
    assert_eq!(action["kind"], "prevent", "a field left alone stays");
    let history = browser.text("#steps-h + ul").await;
    assert!(
        history.contains("owner@example.com changed the title, what done means, the priority"),
        "{history}"
    );

    // Given to someone else: the reason is needed; then bo owns it and is told.
    browser.click("#reassign summary").await;
    browser.type_into("#r-owner", "bo@example.com").await;
    browser
        .click_to_load("button[formaction$='/reassign']")
        .await;
    let said = browser.text("main").await;
    assert!(said.contains("Why: is needed"), "{said}");
    browser
        .type_into("#r-reason", "Bo's team owns the CI pipeline now")
        .await;
    browser
        .click_to_load("button[formaction$='/reassign']")
        .await;
    browser.wait_for_url(&page).await;
    let action = w
        .app
        .get_json(&format!("/api/v1/actions/{id}"), &w.owner)
        .await;
    assert_eq!(action["owner"], "bo@example.com", "{action}");
    let step = action["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["step"] == "reassign")
        .cloned()
        .expect("a reassign step");
    assert_eq!(step["note"], "Bo's team owns the CI pipeline now");
    assert_eq!(step["by"], "owner@example.com");
    let told: i64 = outbox_emails::table
        .filter(outbox_emails::recipient.eq("bo@example.com"))
        .count()
        .get_result(&mut w.app.pool.get().expect("conn"))
        .expect("count");
    assert!(told >= 1, "the new owner is emailed");
    let history = browser.text("#steps-h + ul").await;
    assert!(
        history.contains("gave it to another owner: “Bo's team owns the CI pipeline now”"),
        "{history}"
    );
    browser.click("#reassign summary").await;
    browser
        .eval("document.getElementById('change-h').scrollIntoView(); return null;")
        .await;
    browser.screenshot("action-corrected-and-reassigned").await;
}

/// In production mode an owner must be a person of the directory: a made-up address
/// of an allowed domain is refused with the reason, by the API and the page alike.
#[tokio::test]
async fn a_made_up_owner_is_refused_in_production_mode() {
    let w = World::with(|s| {
        s.mode = coe::config::Mode::Production;
        s.auth.allowed_domains = vec!["example.com".into()];
    })
    .await;
    let id = an_action(&w).await;
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{id}"),
            None,
            Some(json!({"owner": "newhire@example.com", "reason": "New hire"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string()
            .contains("newhire@example.com is not in the directory: nobody manages them"),
        "{body}"
    );
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{id}"),
            None,
            Some(json!({"owner": "bo@example.com", "reason": "Bo's team"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// A reason is read only for what it goes with: naming the owner it already has, with
/// a long reason and another title, changes the title (the reason of a reassignment
/// that did not happen is not checked), and no reassignment is in its history.
#[tokio::test]
async fn a_reason_for_a_reassignment_that_did_not_happen_is_not_read() {
    let w = World::new().await;
    let id = an_action(&w).await;
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{id}"),
            None,
            Some(json!({
                "owner": "dev@example.com",
                "title": "Validate the config in CI, every branch",
                "reason": "x".repeat(10_001),
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, action) = w
        .send(
            &w.owner,
            "GET",
            &format!("/api/v1/actions/{id}"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{action}");
    assert_eq!(action["title"], "Validate the config in CI, every branch");
    assert_eq!(action["owner"], "dev@example.com");
    let steps = action["steps"].as_array().expect("steps");
    assert!(
        steps.iter().all(|s| s["step"] != "reassign"),
        "no reassignment: {steps:?}"
    );
}

/// Every move on the action's page is confirmed with what comes next; a done action
/// that needs verifying says whose move it is (issue 63 item 5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marking_an_action_done_says_it_now_waits_for_the_reviewer() {
    let w = World::new().await;
    let id = an_action(&w).await;
    let coe = w
        .app
        .get_json(&format!("/api/v1/actions/{id}"), &w.owner)
        .await["coe_id"]
        .as_str()
        .expect("its COE")
        .to_owned();
    // A sev1: its done actions are verified by the reviewer.
    let doc = w.coe(&coe).await;
    let (status, doc) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{coe}"),
            doc["version"].as_i64(),
            Some(json!({"severity": "sev1"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    let page = format!("/actions/{id}");
    let browser = Browser::start().await;
    sign_in_to(&browser, &w.app, "dev@example.com", &page).await;
    browser.click_to_load("button[formaction$='/start']").await;
    browser.wait_for_url("did=start").await;
    assert!(
        browser.text(".notice").await.starts_with("Started. It is"),
        "{}",
        browser.text(".notice").await
    );
    browser
        .type_into(
            "#note-complete",
            "The CI job fails on a config with a typo.",
        )
        .await;
    browser
        .type_into("#evidence-complete", "https://ci.example.com/runs/42")
        .await;
    browser
        .click_to_load("button[formaction$='/complete']")
        .await;
    browser.wait_for_url("did=complete").await;
    let notice = browser.text(".notice").await;
    assert!(
        notice.contains("Marked done. It now waits for reviewer@example.com to verify it"),
        "{notice}"
    );
    let facts = browser.text(".facts").await;
    assert!(
        facts.contains("waiting for reviewer@example.com to verify it (done "),
        "{facts}"
    );
    browser
        .screenshot("action-done-waits-for-the-reviewer")
        .await;
    // Out of the owner's moves, not out of sight: My work keeps it, with whom it
    // waits for and since when.
    browser.goto(&format!("{}/", w.app.address)).await;
    let waiting = browser.text("#waiting-on-others").await;
    assert!(
        waiting.contains("done, waiting for reviewer@example.com to verify it")
            && waiting.contains("since today"),
        "{waiting}"
    );
    browser.screenshot("my-work-waiting-on-the-reviewer").await;
}
