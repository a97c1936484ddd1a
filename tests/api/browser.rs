//! Journeys in a real browser (headless Chromium through chromedriver), with
//! screenshots saved in `target/test-artifacts/browser/` to look at.

use coe::db::schema::{corrective_actions, outbox_emails};
use diesel::prelude::*;
use serde_json::json;

use crate::helpers::{json, spawn_app};
use crate::webdriver::Browser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_owner_signs_in_with_the_emailed_link_and_sees_their_overdue_action() {
    let app = spawn_app().await;
    // Ana owns an action of a COE, three days overdue.
    let member = app.admin_token();
    let coe = json(
        app.post_json(
            "/api/v1/coes",
            Some(&member),
            &json!({"title": "Checkout <b>errors</b> after the deploy", "owner": "ana@example.com",
                    "service": "checkout", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("coe id");
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(10)).to_string();
    let action = json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&member),
            &json!({"title": "Alert on the checkout error rate per provider", "owner": "ana@example.com",
                    "due_date": due, "priority": "high", "kind": "detect",
                    "success_criteria": "A page within 5 minutes of the rate passing 2%"}),
        )
        .await,
    )
    .await;
    let action_id = action["id"].as_str().unwrap_or_else(|| panic!("{action}"));
    {
        let mut conn = app.pool.get().expect("conn");
        let past = chrono::Utc::now().date_naive() - chrono::Duration::days(3);
        diesel::update(corrective_actions::table.find(action_id))
            .set(corrective_actions::due_date.eq(past))
            .execute(&mut conn)
            .expect("backdate");
    }

    let browser = Browser::start().await;
    browser.goto(&app.url("/")).await;
    assert!(
        browser.url().await.contains("/sign-in?next=%2F"),
        "{}",
        browser.url().await
    );
    browser.screenshot("sign-in").await;
    browser.type_into("#email", "ana@example.com").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_heading("Check your email").await;

    let body: String = {
        let mut conn = app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::kind.eq("sign_in"))
            .select(outbox_emails::body_text)
            .first(&mut conn)
            .expect("the sign-in email")
    };
    let link = body
        .split_whitespace()
        .find(|w| w.contains("/sign-in/confirm?token="))
        .expect("a link");
    // The test app listens on its own port; the link names the public URL.
    let path = &link[link.find("/sign-in/").expect("path")..];
    browser.goto(&app.url(path)).await;
    browser.click("button[type=submit]").await;
    browser.wait_for_heading("My work").await;
    assert!(
        browser.url().await.ends_with('/'),
        "{}",
        browser.url().await
    );
    let row = browser.text("tr.overdue").await;
    assert!(
        row.contains("Alert on the checkout error rate per provider"),
        "{row}"
    );
    assert!(row.contains("3 days overdue"), "{row}");
    assert!(
        row.contains("Checkout <b>errors</b> after the deploy"),
        "shown as text: {row}"
    );
    let coes = browser.text("#coes-h + ul").await;
    assert!(
        coes.contains("Checkout <b>errors</b> after the deploy"),
        "{coes}"
    );
    browser.screenshot("my-work").await;
    browser.set_size(390, 844).await;
    browser.screenshot("my-work-phone").await;

    browser.set_size(1280, 900).await;

    // From the action to its COE: the document with what it still lacks.
    browser.click("tr.overdue td a").await;
    browser.wait_for_url("/coes/").await;
    browser
        .wait_for_heading("sev2 Checkout <b>errors</b> after the deploy")
        .await;
    let missing = browser.text(".findings").await;
    assert!(
        missing.contains("Customer and business impact"),
        "{missing}"
    );

    // The owner writes the impact where its guidance is, and saves it.
    browser
        .type_into(
            "#body-impact",
            "About 1,200 checkouts failed over 40 minutes; 3 support tickets.",
        )
        .await;
    browser.click("#impact button[type=submit]").await;
    browser.wait_for_url("#impact").await;
    let missing = browser.text(".findings").await;
    assert!(
        !missing.contains("Customer and business impact"),
        "{missing}"
    );
    let impact = browser.value("#body-impact").await;
    assert_eq!(
        impact,
        "About 1,200 checkouts failed over 40 minutes; 3 support tickets."
    );
    browser.screenshot("coe").await;

    browser.click(".signout button").await;
    browser.wait_for_url("/sign-in").await;
    browser.goto(&app.url("/")).await;
    assert!(browser.url().await.contains("/sign-in"), "signed out");
}
