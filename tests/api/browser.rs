//! Journeys in a real browser (headless Chromium through chromedriver), with
//! screenshots saved in `target/test-artifacts/browser/` to look at.

use coe::db::schema::{corrective_actions, outbox_emails};
use diesel::prelude::*;
use serde_json::json;

use crate::helpers::{json, spawn_app, TestApp};
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

    let body = newest_email(&app, "sign_in", "ana@example.com");
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
    crate::html::assert_accessible_now(&browser).await;
    browser.set_size(390, 844).await;
    browser.screenshot("my-work-phone").await;
    crate::html::assert_accessible_now(&browser).await;

    browser.set_size(1280, 900).await;

    // From the action's row to its COE: the document with what it still lacks.
    browser.click("tr.overdue td:nth-child(2) a").await;
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

/// How many sign-in emails went to `to`.
fn sign_in_emails(app: &TestApp, to: &str) -> i64 {
    let mut conn = app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq("sign_in"))
        .filter(outbox_emails::recipient.eq(to))
        .count()
        .get_result(&mut conn)
        .expect("count")
}

/// The newest email of `kind` to `to`, as text, as its recipient reads it. (A sign-in
/// email is made after the page answered: it is waited for, up to 10 s.)
fn newest_email(app: &TestApp, kind: &str, to: &str) -> String {
    let (body, link) = crate::eventually::eventually(
        std::time::Duration::from_secs(10),
        &format!("a {kind} email to {to}"),
        || {
            let mut conn = app.pool.get().expect("conn");
            outbox_emails::table
                .filter(outbox_emails::kind.eq(kind))
                .filter(outbox_emails::recipient.eq(to))
                .order(outbox_emails::created_at.desc())
                .select((outbox_emails::body_text, outbox_emails::private_link))
                .first::<(String, Option<String>)>(&mut conn)
        },
    );
    match link {
        // A sign-in link is kept apart from the text until it is sent: put back as the
        // delivery worker does.
        Some(link) => body.replace(coe::services::outbound::outbox::PRIVATE_LINK, &link),
        None => body,
    }
}

/// The first link in `text` that contains `part`, as a path on the test app (the
/// emails name the public URL; the test app listens on its own port).
fn link_in(text: &str, part: &str) -> String {
    let link = text
        .split_whitespace()
        .find(|w| w.contains(part))
        .unwrap_or_else(|| panic!("a link with {part} in {text}"));
    let start = link.find(part).expect("part");
    link[start..].trim_end_matches(['.', ')', '>']).to_owned()
}

/// Follows `path` (an email's link) not signed in: sign-in, the emailed link, and back
/// to `path`.
pub(crate) async fn sign_in_to(browser: &Browser, app: &TestApp, email: &str, path: &str) {
    let before = sign_in_emails(app, email);
    browser.goto(&app.url(path)).await;
    browser.wait_for_url("/sign-in").await;
    browser.type_into("#email", email).await;
    browser.click_to_load("button[type=submit]").await;
    browser.wait_for_heading("Check your email").await;
    // The link is made after the page answered: wait for this request's.
    crate::eventually::eventually_async(
        std::time::Duration::from_secs(10),
        "a new sign-in email",
        || async { sign_in_emails(app, email) != before },
    )
    .await;
    let link = link_in(
        &newest_email(app, "sign_in", email),
        "/sign-in/confirm?token=",
    );
    browser.goto(&app.url(&link)).await;
    browser.click_to_load("main button[type=submit]").await;
    browser.wait_for_url(path).await;
}

pub(crate) async fn sign_out(browser: &Browser) {
    browser.click_to_load(".signout button").await;
    browser.wait_for_url("/sign-in").await;
}

/// Opens a `<details>` by its summary and fills a form in it.
async fn open(browser: &Browser, summary_css: &str) {
    browser.click(summary_css).await;
}

/// Marks the action on the page done, with a note.
async fn complete(browser: &Browser) {
    browser
        .type_into("#note-complete", "Live since today; tested by a game day.")
        .await;
    browser
        .click_to_load("button[formaction$='/complete']")
        .await;
    assert!(browser.text(".facts").await.contains("done"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_becomes_a_coe_written_reviewed_and_closed_in_the_browser() {
    let app = spawn_app().await;
    let ingest = app.token("alertmanager", coe::domain::Role::Ingest);
    let alert = json!({
        "version": "4", "status": "firing", "receiver": "coe",
        "groupKey": "{}:{alertname=\"CheckoutErrors\"}",
        "groupLabels": {"alertname": "CheckoutErrors"},
        "commonLabels": {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical"},
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "CheckoutErrors", "service": "checkout", "severity": "critical",
                       "instance": "checkout-1"},
            "annotations": {"summary": "Checkout error rate above 5%"},
            "startsAt": (chrono::Utc::now() - chrono::Duration::hours(2)).to_rfc3339(),
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "c1"
        }]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    // The directory: Ana in checkout, Rev (her reviewer) in platform; Bo, of search,
    // raises the bar of the worst outages.
    let admin = app.admin_token();
    for (email, body) in [
        ("ana@example.com", json!({"team": "checkout"})),
        ("rev@example.com", json!({"team": "platform"})),
        (
            "bo@example.com",
            json!({"team": "search", "bar_raiser": true}),
        ),
    ] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200);
    }

    // The on-call engineer signs in, finds the incident and the COE it opened.
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", "/incidents").await;
    browser.click_to_load("main table a").await;
    browser.wait_for_url("/incidents/").await;
    browser.click_to_load("a[href^='/coes/']").await;
    let coe_url = browser.wait_for_url("/coes/").await;
    let coe_path = coe_url[coe_url.find("/coes/").expect("path")..]
        .split('#')
        .next()
        .expect("path")
        .to_owned();

    // She takes it, names the reviewer, and writes every required section.
    open(&browser, "#details summary").await;
    browser.type_into("#d-owner", "ana@example.com").await;
    browser.type_into("#d-reviewer", "rev@example.com").await;
    browser.click_to_load("#details button[type=submit]").await;
    browser.wait_for_url("#details").await;
    for (key, text) in [
        (
            "summary",
            "Checkout returned **errors** for 40 minutes after deploy 42.",
        ),
        ("impact", "About 1,200 checkouts failed; 3 support tickets."),
        (
            "detection",
            "The CheckoutErrors alert paged after 4 minutes.",
        ),
        ("diagnosis", "Logs showed the database pool exhausted."),
        ("mitigation", "Rolled deploy 42 back."),
        (
            "prevention",
            "A CI check compares pool sizes with production.",
        ),
        ("lessons", "Canaries would have caught it in minutes."),
    ] {
        browser.type_into(&format!("#body-{key}"), text).await;
        browser
            .click_to_load(&format!("#{key} button[type=submit]"))
            .await;
        browser.wait_for_url(&format!("#{key}")).await;
    }
    let mitigated = (chrono::Utc::now() - chrono::Duration::minutes(80))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    open(&browser, "#part-timeline > details.box summary").await;
    browser.set_value("#tl-at", &mitigated).await;
    browser.click("#tl-kind option[value=mitigated]").await;
    browser.type_into("#tl-text", "Deploy 42 rolled back").await;
    browser
        .click_to_load("#part-timeline > details.box button[type=submit]")
        .await;
    browser.wait_for_url("#tl-").await;
    open(&browser, "#part-five_whys > details.box summary").await;
    for (i, (why, because)) in [
        ("did checkout fail", "the database pool was exhausted"),
        ("was the pool exhausted", "deploy 42 halved its size"),
        (
            "did deploy 42 halve it",
            "no check compares pool sizes with production",
        ),
    ]
    .iter()
    .enumerate()
    {
        browser.type_into(&format!("#nw-{}", i + 1), why).await;
        browser.type_into(&format!("#nb-{}", i + 1), because).await;
    }
    // What kind of thing the chain ends in: the dashboard counts them.
    browser.click("#nf option[value=deployment]").await;
    browser
        .click_to_load("#part-five_whys > details.box button[type=submit]")
        .await;
    browser.wait_for_url("#chain-").await;
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(14)).to_string();
    for (title, owner, kind) in [
        ("Check pool sizes in CI", "ana@example.com", "prevent"),
        ("Canary checkout deploys", "cy@example.com", "detect"),
    ] {
        open(&browser, "#part-actions > details.box summary").await;
        browser.type_into("#a-title", title).await;
        browser.type_into("#a-owner", owner).await;
        browser.set_value("#a-due", &due).await;
        browser.click("#a-priority option[value=high]").await;
        browser
            .click(&format!("#a-kind option[value={kind}]"))
            .await;
        browser
            .type_into("#a-criteria", "It fails the build on a smaller pool")
            .await;
        browser
            .click_to_load("#part-actions button[type=submit]")
            .await;
        browser.wait_for_url("#action-").await;
    }
    let actions = browser.text("#part-actions table").await;
    assert!(
        actions.contains("Check pool sizes in CI") && actions.contains("Canary checkout deploys"),
        "{actions}"
    );
    assert!(
        browser.find_all(".findings").await.is_empty(),
        "nothing is missing any more"
    );
    browser.goto(&app.url(&coe_path)).await;
    browser.set_size(1280, 4000).await;
    browser.screenshot("coe-editor").await;
    browser.set_size(390, 844).await;
    browser.screenshot("coe-editor-phone").await;
    browser.set_size(1280, 900).await;

    // Submitted for review.
    browser.click_to_load("#review button[type=submit]").await;
    browser.wait_for_url("#review").await;
    assert!(browser.text(".facts").await.contains("in review"));
    // Confirmed with what comes next (issue 63 item 5).
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Submitted. It now waits for") && notice.contains("to approve it"),
        "{notice}"
    );
    sign_out(&browser).await;

    // The reviewer follows the email's link: the COE reads as a document with the
    // review panel on top. A comment on Impact, then sent back on it.
    let requested = newest_email(&app, "review_requested", "rev@example.com");
    sign_in_to(
        &browser,
        &app,
        "rev@example.com",
        &link_in(&requested, &coe_path),
    )
    .await;
    assert!(browser.find_all("textarea[name^='text:']").await.is_empty());
    browser.set_size(1280, 4000).await;
    browser.screenshot("review-reading-mode").await;
    browser.set_size(1280, 900).await;
    browser.click("#impact details.add-comment summary").await;
    browser
        .type_into("#c-impact", "Say how many customers retried.")
        .await;
    browser
        .click_to_load("#impact button[formaction$='/comments']")
        .await;
    browser.wait_for_url("#impact").await;
    assert!(browser
        .text("#impact .thread")
        .await
        .contains("Say how many customers retried."));
    browser
        .click_to_load("#review button[formaction$='/request-changes']")
        .await;
    // Nothing more to do on it: the reviewer lands on their own work, told whose
    // move it is now (issue 63 item 7).
    browser.wait_for_url("did=changes-asked").await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Changes asked on") && notice.contains("it is back with"),
        "{notice}"
    );
    browser.screenshot("changes-asked-lands-on-my-work").await;
    browser.goto(&app.url(&coe_path)).await;
    assert!(browser.text(".facts").await.contains("draft"));
    sign_out(&browser).await;

    // The owner's page opens with the request; they answer, change Impact, submit.
    sign_in_to(&browser, &app, "ana@example.com", &coe_path).await;
    let banner = browser.text(".banner").await;
    assert!(
        banner.contains("Changes requested by")
            && banner.contains("Say how many customers retried."),
        "{banner}"
    );
    browser.screenshot("coe-sent-back").await;
    crate::html::assert_accessible_now(&browser).await;
    browser
        .type_into(
            "#impact textarea[name$='.answer']",
            "Added to Impact: 300 retried, 900 gave up.",
        )
        .await;
    browser
        .click_to_load("#impact button[formaction*='/answer']")
        .await;
    browser.wait_for_url("#impact").await;
    browser
        .type_into("#body-impact", " 300 customers retried; 900 gave up.")
        .await;
    browser.click_to_load("#impact button[type=submit]").await;
    browser.wait_for_url("#impact").await;
    browser.click_to_load("#review button[type=submit]").await;
    browser.wait_for_url("#review").await;
    assert!(browser.text(".facts").await.contains("in review"));
    sign_out(&browser).await;

    // The reviewer sees the words that changed, reads the printable view, approves.
    sign_in_to(&browser, &app, "rev@example.com", &coe_path).await;
    let added = browser.text(".changes .diff ins").await;
    assert!(added.contains("900 gave up."), "{added}");
    browser.set_size(1280, 1400).await;
    browser.screenshot("review-changed-since").await;
    browser.goto(&app.url(&format!("{coe_path}/print"))).await;
    browser
        .wait_for_heading("Checkout error rate above 5%")
        .await;
    browser.set_size(1280, 4000).await;
    browser.screenshot("review-view").await;
    browser.set_size(1280, 900).await;
    browser.goto(&app.url(&coe_path)).await;
    // The alert still fires: approving a sev1 before its outage ends takes the
    // reviewer's word that she knows.
    let open = browser.text("#open-incidents").await;
    assert!(
        open.contains("Its incident is still open: “Checkout error rate above 5%”"),
        "{open}"
    );
    browser.click("#review .approve summary").await;
    browser.click_to_load("#review .approve button").await;
    browser.wait_for_url("#review").await;
    let refused = browser.text("#review .findings").await;
    assert!(
        refused.contains("Not approved: its incident “Checkout error rate above 5%” is still open"),
        "{refused}"
    );
    assert!(browser.text(".facts").await.contains("in review"));
    browser.set_size(1280, 1400).await;
    browser.screenshot("review-open-incident").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.set_size(1280, 900).await;
    browser.click("#open-incidents input[type=checkbox]").await;
    browser.click("#review .approve summary").await;
    browser.click_to_load("#review .approve button").await;
    browser.wait_for_url("#review").await;
    // A sev1: the bar raiser approves too.
    let facts = browser.text(".facts").await;
    assert!(
        facts.contains("in review") && facts.contains("bo@example.com"),
        "{facts}"
    );
    sign_out(&browser).await;

    // Bo, from outside the team, follows his email: the panel says he is the bar
    // raiser and that the reviewer approved; he approves.
    let asked = newest_email(&app, "review_requested", "bo@example.com");
    sign_in_to(
        &browser,
        &app,
        "bo@example.com",
        &link_in(&asked, &coe_path),
    )
    .await;
    let panel = browser.text("#review").await;
    assert!(
        panel.contains("Your review as bar raiser")
            && panel.contains("it waits for your approval")
            && panel.contains("approved it already: approving ends the review"),
        "{panel}"
    );
    browser.set_size(1280, 1400).await;
    browser.screenshot("review-bar-raiser").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.set_size(1280, 900).await;
    browser.click("#open-incidents input[type=checkbox]").await;
    browser.click("#review .approve summary").await;
    browser.click_to_load("#review .approve button").await;
    browser.wait_for_url("#review").await;
    assert!(browser.text(".facts").await.contains("approved"));
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Approved: the review is over. It closes once"),
        "{notice}"
    );
    sign_out(&browser).await;

    // Each action's owner completes it: Cy from the email that assigned it to him,
    // Ana (who assigned it to herself, and so got no email) from her work page.
    let assigned = newest_email(&app, "action_assigned", "cy@example.com");
    sign_in_to(
        &browser,
        &app,
        "cy@example.com",
        &link_in(&assigned, "/actions/"),
    )
    .await;
    browser.wait_for_heading("Canary checkout deploys").await;
    browser.screenshot("action").await;
    complete(&browser).await;
    sign_out(&browser).await;
    sign_in_to(&browser, &app, "ana@example.com", "/").await;
    browser.click_to_load("a[href^='/actions/']").await;
    browser.wait_for_heading("Check pool sizes in CI").await;
    complete(&browser).await;
    sign_out(&browser).await;

    // A sev1 COE waits for its reviewer to verify each done action; then it closes.
    sign_in_to(&browser, &app, "rev@example.com", &coe_path).await;
    assert!(
        browser.text(".facts").await.contains("approved"),
        "{}",
        browser.text(".facts").await
    );
    let coe_id = coe_path.trim_start_matches("/coes/");
    let list = app
        .get_json(&format!("/api/v1/actions?coe={coe_id}"), &admin)
        .await;
    let ids: Vec<String> = list["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|a| a["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{list}");
    for (n, id) in ids.iter().enumerate() {
        browser.goto(&app.url(&format!("/actions/{id}"))).await;
        if n == 0 {
            browser.screenshot("action-verify").await;
            crate::html::assert_accessible_now(&browser).await;
        }
        browser.click_to_load("#verification .inline button").await;
        assert!(
            browser
                .text("#verification")
                .await
                .contains("Verified against"),
            "{}",
            browser.text("#verification").await
        );
    }
    browser.goto(&app.url(&coe_path)).await;
    assert!(
        browser.text(".facts").await.contains("closed"),
        "{}",
        browser.text(".facts").await
    );

    // The weekly operations review: the COE approved this week, and the one to read.
    browser.goto(&app.url("/review-meeting")).await;
    browser.wait_for_heading("Weekly operations review").await;
    assert!(browser
        .text("#approved")
        .await
        .contains("Checkout error rate above 5%"));
    assert!(browser
        .text("#pick")
        .await
        .contains("Checkout error rate above 5%"));
    browser.set_size(1280, 1600).await;
    browser.screenshot("review-meeting").await;
    // The dashboard's coverage: the outage, approved; its chain's factor counted.
    browser.goto(&app.url("/dashboard")).await;
    assert!(browser.text("#coverage").await.contains("checkout"));
    assert!(browser.text("#factors").await.contains("deployment"));
    browser.set_size(1280, 5000).await;
    browser.screenshot("dashboard-coverage").await;
    crate::html::assert_accessible_now(&browser).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_inspects_the_board_and_an_owner_moves_a_due_date_that_it_then_shows() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    for (email, team) in [
        ("ana@example.com", "payments"),
        ("cy@example.com", "payments"),
        ("bo@example.com", "search"),
    ] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"team": team}))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200);
    }
    let coe = json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout 502s after deploy 42", "owner": "lead@example.com",
                    "service": "checkout", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("coe");
    let mut ids = Vec::new();
    for (title, owner, days_late) in [
        ("Check pool sizes in CI", "ana@example.com", 12),
        ("Canary checkout deploys", "cy@example.com", 4),
        ("Warm the search index", "bo@example.com", 6),
    ] {
        let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(10)).to_string();
        let action = json(
            app.post_json(
                &format!("/api/v1/coes/{coe_id}/actions"),
                Some(&admin),
                &json!({"title": title, "owner": owner, "due_date": due, "priority": "high", "kind": "prevent"}),
            )
            .await,
        )
        .await;
        let id = action["id"].as_str().expect("action").to_owned();
        let mut conn = app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&id))
            .set(
                corrective_actions::due_date
                    .eq(chrono::Utc::now().date_naive() - chrono::Duration::days(days_late)),
            )
            .execute(&mut conn)
            .expect("backdate");
        ids.push(id);
    }

    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "lead@example.com", "/").await;
    browser.set_size(1280, 1000).await;
    browser.screenshot("home").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.click_to_load("a[href='/board']").await;
    browser.wait_for_heading("Overdue board").await;
    browser.screenshot("board").await;
    // The board filtered to one team, from its line in "By team".
    browser
        .click_to_load("a[href='/board?team=payments']")
        .await;
    assert!(browser.url().await.ends_with("/board?team=payments"));
    let rows = browser.text("table.board").await;
    assert!(
        rows.contains("Check pool sizes in CI") && !rows.contains("Warm the search index"),
        "{rows}"
    );
    assert!(rows.contains("12 days overdue"), "{rows}");
    browser.screenshot("board-payments").await;
    // One click to the action.
    browser
        .click_to_load(&format!("table.board a[href='/actions/{}']", ids[0]))
        .await;
    browser.wait_for_heading("Check pool sizes in CI").await;
    sign_out(&browser).await;

    // The owner moves its due date with a reason.
    sign_in_to(
        &browser,
        &app,
        "ana@example.com",
        &format!("/actions/{}", ids[0]),
    )
    .await;
    let soon = (chrono::Utc::now().date_naive() + chrono::Duration::days(2)).to_string();
    browser.set_value("#due", &soon).await;
    browser
        .type_into("#reason", "CI runners arrive this week")
        .await;
    browser
        .click_to_load("button[formaction$='/due-date']")
        .await;
    assert!(browser
        .text("main")
        .await
        .contains("CI runners arrive this week"));
    sign_out(&browser).await;

    // The board shows it: one fewer overdue, and among the actions due soon with its
    // move and the reason.
    // The team typed as people write it: "Payments" finds payments.
    sign_in_to(&browser, &app, "lead@example.com", "/board?team=Payments").await;
    let tabs = browser.text(".tabs").await;
    assert!(
        tabs.contains("Overdue: 1") && tabs.contains("Due soon: 1"),
        "{tabs}"
    );
    let rows = browser.text("table.board").await;
    assert!(!rows.contains("Check pool sizes in CI"), "{rows}");
    browser
        .click_to_load(".tabs a[href$='show=due-soon']")
        .await;
    let rows = browser.text("table.board").await;
    assert!(
        rows.contains("Check pool sizes in CI") && rows.contains("1×: CI runners arrive this week"),
        "{rows}"
    );
    browser.screenshot("board-due-soon").await;
    browser.goto(&app.url("/dashboard")).await;
    browser
        .wait_for_heading("Are outages fixed for good?")
        .await;
    browser.set_size(1280, 2200).await;
    browser.screenshot("dashboard").await;
    // The leader picks a team and a period: both land in the address.
    browser.type_into("#f-team", "Payments").await;
    browser.click("#f-weeks option[value='26']").await;
    browser.click_to_load(".filters button[type=submit]").await;
    let url = browser.wait_for_url("team=Payments").await;
    assert!(url.contains("weeks=26"), "{url}");
    assert_eq!(browser.find_all("#chart-overdue rect").await.len(), 26);
    // Over 26 weeks a figure stands over the labelled weeks only, and no label runs
    // off the chart's right edge.
    assert!(browser.find_all("#chart-overdue text.value").await.len() <= 13);
    let overflow = browser
        .eval(
            "const svg = document.querySelector('#chart-overdue svg').getBoundingClientRect();\
             return Math.max(...[...document.querySelectorAll('#chart-overdue text.label')]\
             .map(t => t.getBoundingClientRect().right - svg.right));",
        )
        .await;
    assert!(
        overflow.as_f64().is_some_and(|o| o <= 0.5),
        "{overflow} px past the edge"
    );
    browser.screenshot("dashboard-team").await;
    // Every COE, the worst first; then a search by a word form.
    browser.goto(&app.url("/coes?sort=severity")).await;
    browser.wait_for_heading("COEs").await;
    assert!(browser
        .text("table")
        .await
        .contains("Checkout 502s after deploy 42"));
    browser.set_size(1280, 900).await;
    browser.screenshot("coes-list").await;
    browser.goto(&app.url("/search?q=deploys")).await;
    let marked = browser.text(".hit mark").await;
    assert_eq!(marked, "deploy", "the word form is found and marked");
    browser.screenshot("search-word-forms").await;
    // A typo finds nothing, says so, and offers the word meant; following it finds
    // the COE, the whole word marked.
    browser.goto(&app.url("/search?q=chekout")).await;
    let said = browser.text("#no-match").await;
    assert_eq!(
        said, "No COE matches “chekout”. Did you mean checkout?",
        "{said}"
    );
    browser.screenshot("search-did-you-mean").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.click_to_load("#no-match a").await;
    let marked = browser.text(".hit h2 mark").await;
    assert_eq!(marked, "Checkout", "the whole word, as written");
    assert!(browser
        .text(".hit h2")
        .await
        .contains("Checkout 502s after deploy 42"));
    browser.set_size(390, 844).await;
    browser.goto(&app.url("/board")).await;
    browser.screenshot("board-phone").await;
    crate::html::assert_accessible_now(&browser).await;
    // Nothing scrolls sideways; the filters fold away, so the first screen reaches
    // the overdue actions; every link of the header is in its menu.
    let wide = browser
        .eval("return document.documentElement.scrollWidth - window.innerWidth")
        .await;
    assert!(
        wide.as_f64().is_some_and(|w| w <= 0.0),
        "{wide} px sideways"
    );
    let top = browser
        .eval("return document.querySelector('table.board').getBoundingClientRect().top")
        .await;
    assert!(
        top.as_f64().is_some_and(|t| t < 844.0),
        "the list starts at {top} px"
    );
    browser.click(".menu summary").await;
    browser.screenshot("board-phone-menu").await;
    browser.click_to_load(".menu a[href='/report']").await;
    browser.wait_for_heading("Report a failure").await;
    browser.goto(&app.url("/board")).await;
    // On a phone the header takes one line, and the stacked rows keep their labels.
    // (One line is about 45px; desktop Chromium adds a 15px scrollbar under the links,
    // where a phone's overlays.)
    let header = browser.height(".top").await;
    assert!(header < 80.0, "the header is {header}px high");
    browser.set_size(390, 2400).await;
    // (WebDriver's text leaves out the labels drawn before each cell: the screenshot
    // shows them.)
    assert!(!browser
        .find_all("table.board td[data-label='Owner']")
        .await
        .is_empty());
    browser.screenshot("board-phone-rows").await;
}

/// Serves `html` to every request on a free loopback port (another origin than the
/// app's: another port); returns its address.
fn another_site(html: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    address
}

/// Login CSRF in a real browser: a page on another site posts the attacker's own link
/// token to coe's confirm form; coe refuses it and the browser stays signed in as
/// itself. Then the attacker's link opened on coe itself asks before switching.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_site_cannot_sign_a_browser_in_as_someone_else() {
    let app = spawn_app().await;
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", "/").await;

    // Mallory asks for a link to her own account, and hides its token in her page.
    let res = app
        .client
        .post(app.url("/sign-in"))
        .form(&[("email", "mallory@example.com")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let link = link_in(
        &newest_email(&app, "sign_in", "mallory@example.com"),
        "/sign-in/confirm?token=",
    );
    let token = link.split_once("token=").expect("token").1.to_owned();
    let evil = another_site(format!(
        "<!doctype html><title>Win a prize</title><form method=post action=\"{}\">\
         <input type=hidden name=token value=\"{token}\"><button id=claim>Claim your prize</button></form>",
        app.url("/sign-in/confirm")
    ));
    browser.goto(&evil).await;
    browser.click_to_load("#claim").await;
    let refused = browser.text("body").await;
    assert!(refused.contains("sent from another site"), "{refused}");
    browser.screenshot("login-csrf-refused").await;

    // Still Ana, not Mallory.
    browser.goto(&app.url("/")).await;
    let who = browser.text(".who").await;
    assert!(who.contains("ana@example.com"), "{who}");

    // The same link opened on coe: the page says who is signed in and asks.
    browser.goto(&app.url(&link)).await;
    let page = browser.text("main").await;
    assert!(
        page.contains("This browser is signed in as ana@example.com")
            && page.contains("mallory@example.com"),
        "{page}"
    );
    browser.screenshot("sign-in-confirm-switch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_survives_a_save_and_a_conflict_shows_both_texts_in_the_browser() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Payments database failed over", "owner": "ana@example.com",
                    "service": "payments-db", "severity": "sev1"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("coe id").to_owned();
    let coe_path = format!("/coes/{coe_id}");
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", &coe_path).await;

    // Typed in Impact and in Detection, Impact's Save pressed: both saved, "Saved" there.
    browser
        .type_into("#body-impact", "Card payments failed for 12 minutes.")
        .await;
    browser
        .type_into("#body-detection", "The failover alert paged on-call.")
        .await;
    browser.click_to_load("#impact button[name=save]").await;
    browser.wait_for_url("?saved=impact#impact").await;
    assert!(browser.text("#impact .saved").await.contains("Saved"));
    assert_eq!(
        browser.value("#body-detection").await,
        "The failover alert paged on-call."
    );
    browser.screenshot("coe-saved").await;

    // Someone else saves Impact meanwhile; Ana's next change of it is a conflict,
    // shown side by side, and her Mitigation in the same save goes through.
    let doc = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    let revision = doc["sections"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["key"] == "impact"))
        .and_then(|s| s["revision"].as_str())
        .expect("a revision")
        .to_owned();
    let res = app
        .client
        .put(app.url(&format!("/api/v1/coes/{coe_id}/sections/impact")))
        .bearer_auth(&admin)
        .json(&json!({"body": "Card payments failed for 12 minutes; 4,100 orders.", "based_on": revision}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    browser
        .type_into("#body-impact", " About 4,000 orders.")
        .await;
    browser
        .type_into("#body-mitigation", "Failed back to the old primary.")
        .await;
    browser.click_to_load("#mitigation button[name=save]").await;
    browser.wait_for_url("?kept=").await;
    let merge = browser.text("#impact .merge").await;
    assert!(merge.contains("4,100 orders"), "theirs: {merge}");
    assert!(
        browser
            .value("#body-impact")
            .await
            .ends_with("About 4,000 orders."),
        "yours kept"
    );
    browser.screenshot("coe-conflict-merge").await;
    let doc = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    let mitigation = doc["sections"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["key"] == "mitigation"))
        .map(|s| s["body"].clone());
    assert_eq!(mitigation, Some(json!("Failed back to the old primary.")));
}

/// Anyone pulls the cord: a failure no alert caught is reported from the page, and
/// the reporter lands on the draft they now own.
#[tokio::test]
async fn a_person_reports_a_failure_from_the_page_and_lands_on_its_draft() {
    let app = spawn_app().await;
    // Dee lives in Paris: the form takes her times in her own time zone, says so,
    // and stores them in UTC.
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/dee@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"timezone": "Europe/Paris"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "dee@example.com", "/").await;
    browser.click_to_load("nav a[href='/report']").await;
    browser.wait_for_heading("Report a failure").await;
    assert!(browser
        .text("label[for=r-started]")
        .await
        .contains("Europe/Paris time"));
    assert!(browser
        .text("#severity-help")
        .await
        .contains("sev2: a core service is degraded or down for many customers"));
    browser
        .type_into("#r-title", "Paid orders missing from accounts")
        .await;
    browser.type_into("#r-service", "orders").await;
    browser.click("#r-severity option[value=sev2]").await;
    let paris = chrono_tz::Europe::Paris;
    let three_hours_ago = chrono::Utc::now() - chrono::Duration::hours(3);
    let started = three_hours_ago
        .with_timezone(&paris)
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    browser.set_value("#r-started", &started).await;
    // "Now" beside "noticed": the form comes back with it set, nothing else lost.
    browser
        .click_to_load("button[name=now][value=detected_at]")
        .await;
    assert!(!browser.value("#r-detected").await.is_empty());
    assert_eq!(
        browser.value("#r-title").await,
        "Paid orders missing from accounts"
    );
    assert_eq!(browser.value("#r-started").await, started);
    browser
        .type_into(
            "#r-saw",
            "Customers paid, and the order never appeared in their account.",
        )
        .await;
    browser.screenshot("report-a-failure").await;
    browser
        .click_to_load("form[action='/report'] button[type=submit]:not([hidden]):not([name])")
        .await;
    browser.wait_for_url("/coes/").await;
    browser
        .wait_for_heading("sev2 Paid orders missing from accounts")
        .await;
    let facts = browser.text(".facts").await;
    assert!(
        facts.contains("dee@example.com") && facts.contains("draft"),
        "{facts}"
    );
    let notice = browser.text("#notice").await;
    assert!(
        notice.contains("Reported: the incident is open") && notice.contains("Write these first"),
        "{notice}"
    );
    assert!(browser
        .text("#impact")
        .await
        .contains("the order never appeared"));
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let id = coes["coes"][0]["id"].as_str().expect("the draft");
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let stored = doc["started_at"].as_str().expect("started");
    assert_eq!(
        &stored[..16],
        three_hours_ago.format("%Y-%m-%dT%H:%M").to_string(),
        "stored in UTC"
    );
    browser.set_size(1280, 1600).await;
    browser.screenshot("report-landed-on-draft").await;
    crate::html::assert_accessible_now(&browser).await;
}

/// One outage, three drafts: the page names the one probably of the same outage
/// (the same cluster, within minutes) with a one-click merge; the third, a draft
/// nothing relates, is ticked in the merge form.
#[tokio::test]
async fn drafts_of_one_outage_are_merged_from_the_page() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    let admin = app.admin_token();
    for (group, at, labels) in [
        (
            "payments-db",
            "2026-11-30T10:01:00Z",
            json!({"cluster": "eu-1"}),
        ),
        (
            "checkout",
            "2026-11-30T10:00:00Z",
            json!({"cluster": "eu-1"}),
        ),
        ("search", "2026-11-30T10:00:30Z", json!({})),
    ] {
        let event = json!({"dedup_key": format!("{group}-alert"), "group_key": group, "severity": "sev2",
                           "service": group, "title": format!("{group} failing"), "started_at": at,
                           "labels": labels});
        let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
        assert_eq!(res.status(), 202);
    }
    let list = app.get_json("/api/v1/coes?sort=oldest", &admin).await;
    let first = list["coes"][0]["id"].as_str().expect("a draft").to_owned();
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "eve@example.com", &format!("/coes/{first}")).await;
    let suggested = browser.text("#same-outage").await;
    assert!(
        suggested.contains("checkout failing") && suggested.contains("the same cluster: eu-1"),
        "{suggested}"
    );
    assert!(!suggested.contains("search failing"), "{suggested}");
    browser.screenshot("coe-same-outage").await;
    browser
        .click_to_load("#same-outage button[type=submit]")
        .await;
    browser.wait_for_url(&format!("/coes/{first}")).await;
    assert!(
        browser.text(".facts").await.contains("checkout failing"),
        "merged in one click"
    );
    browser.click("#merge summary").await;
    browser.click("#merge input[type=checkbox]").await;
    browser.screenshot("coe-merge-form").await;
    browser.click_to_load("#merge button[type=submit]").await;
    browser.wait_for_url(&format!("/coes/{first}")).await;
    let facts = browser.text(".facts").await;
    assert!(
        ["payments-db failing", "checkout failing", "search failing"]
            .iter()
            .all(|t| facts.contains(t)),
        "all three incidents: {facts}"
    );
    browser.set_size(1280, 1400).await;
    browser.screenshot("coe-merged").await;
    let merged = app.get_json("/api/v1/coes?state=merged", &admin).await;
    let away = merged["coes"][0]["id"]
        .as_str()
        .expect("the merged draft")
        .to_owned();
    browser.goto(&app.url(&format!("/coes/{away}"))).await;
    assert!(browser.text(".notice").await.contains("merged into"));
    browser.screenshot("coe-merged-away").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_reads_what_waits_to_leave_coe_in_one_view() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"name": "Dana Ito"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "dana@example.com", "/admin/outbox").await;
    browser.wait_for_heading("Outbox").await;
    let queue = browser.text("table").await;
    for row in ["Emails", "Chat notices", "Tracker updates", "Given up on"] {
        assert!(queue.contains(row), "{row}: {queue}");
    }
    browser.screenshot("admin-queue").await;
}
