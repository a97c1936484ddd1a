//! Never lose a word (issue 51 item 1): on a COE's page every button sends what was
//! typed anywhere on it, and what its own change does not use comes back kept — with
//! script and without, in a real browser.

use serde_json::{json, Value};

use crate::actions::World;
use crate::browser::sign_in_to;
use crate::webdriver::Browser;

/// A COE sent back to its owner (owner@) with a comment on Impact waiting for an answer.
async fn sent_back(w: &World) -> String {
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let post = |token: &str, path: String, body: Option<Value>| {
        let token = token.to_owned();
        async move { w.send(&token, "POST", &path, None, body).await }
    };
    let (status, doc) = post(&w.owner, format!("/api/v1/coes/{id}/submit"), None).await;
    assert_eq!(status, 200, "{doc}");
    let (status, doc) = post(
        &w.reviewer,
        format!("/api/v1/coes/{id}/comments"),
        Some(json!({"section": "impact", "body": "How many customers retried?"})),
    )
    .await;
    assert_eq!(status, 201, "{doc}");
    let (status, doc) = post(
        &w.reviewer,
        format!("/api/v1/coes/{id}/request-changes"),
        Some(json!({"comment": "Answer the comment on Impact."})),
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    id
}

/// Section `key` of the COE as stored.
async fn stored(w: &World, id: &str, key: &str) -> String {
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{id}"), &w.owner)
        .await;
    doc["sections"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["key"] == key))
        .and_then(|s| s["body"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// What Impact and Detection hold on the page now.
async fn typed(browser: &Browser) -> (String, String) {
    (
        browser.value("#body-impact").await,
        browser.value("#body-detection").await,
    )
}

/// The owner of a COE sent back, signed in on its page in `browser`, who edits Impact
/// as the reviewer asked and Detection, saving neither: the world, the COE's id, and
/// what the two sections hold on the page.
async fn owner_has_typed(browser: &Browser) -> (World, String, (String, String)) {
    let w = World::new().await;
    let id = sent_back(&w).await;
    sign_in_to(browser, &w.app, "owner@example.com", &format!("/coes/{id}")).await;
    browser
        .type_into("#body-impact", " 300 customers retried; 900 gave up.")
        .await;
    browser
        .type_into("#body-detection", " The pager fired at 10:02.")
        .await;
    let before = typed(browser).await;
    assert!(before.0.ends_with("900 gave up."), "{before:?}");
    (w, id, before)
}

/// Answers the reviewer's comment on Impact; the answer is recorded.
async fn answer_the_comment(browser: &Browser) {
    browser
        .type_into("#impact textarea[name$='.answer']", "Added to Impact.")
        .await;
    browser
        .click_to_load("#impact button[formaction*='/answer']")
        .await;
    browser.wait_for_url("?kept=").await;
    let thread = browser.text("#impact .thread").await;
    assert!(thread.contains("Added to Impact."), "{thread}");
}

/// Links the runbook as a related item; the link is made.
async fn link_the_runbook(browser: &Browser) {
    browser.click("#part-related > details.box summary").await;
    browser
        .type_into("#r-target", "https://runbooks.example.com/payments")
        .await;
    browser
        .click_to_load("#part-related button[formaction$='/related']")
        .await;
    let related = browser.text("#part-related").await;
    assert!(related.contains("runbooks.example.com"), "{related}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_button_on_the_coe_page_loses_the_sections_typed() {
    let browser = Browser::start().await;
    let (w, id, before) = owner_has_typed(&browser).await;
    let unchanged = stored(&w, &id, "impact").await;
    // The editor offers a jump list of its sections.
    browser.click(".jump summary").await;
    browser.click(".jump a[href='#lessons']").await;
    browser.wait_for_url("#lessons").await;

    // She answers the comment: the answer is recorded, both edits are still there.
    answer_the_comment(&browser).await;
    assert_eq!(typed(&browser).await, before, "the edits survive an answer");
    assert!(browser.text("#impact").await.contains("Not saved yet"));
    assert_eq!(
        stored(&w, &id, "impact").await,
        unchanged,
        "kept, not saved"
    );
    browser.screenshot("kept-after-answer").await;
    crate::html::assert_accessible_now(&browser).await;

    // A timeline entry.
    browser.click("#part-timeline > details.box summary").await;
    browser.set_value("#tl-at", "2026-11-29T10:02").await;
    browser.type_into("#tl-text", "Pager fired").await;
    browser
        .click_to_load("#part-timeline button[formaction$='/timeline']")
        .await;
    assert!(browser
        .text("#part-timeline table")
        .await
        .contains("Pager fired"));
    assert_eq!(
        typed(&browser).await,
        before,
        "the edits survive a timeline entry"
    );

    // An action refused (no owner, no date): everything typed stays, the action's title too.
    browser.click("#part-actions > details.box summary").await;
    browser
        .type_into("#a-title", "Retry budget per client")
        .await;
    browser
        .click_to_load("#part-actions button[formaction$='/actions']")
        .await;
    browser.wait_for_url("#problem-actions").await;
    let refused = browser.text("#problem-actions").await;
    assert!(
        refused.contains("Owner: is required"),
        "{} {refused}",
        browser.url().await
    );
    assert_eq!(browser.value("#a-title").await, "Retry budget per client");
    assert_eq!(typed(&browser).await, before, "the edits survive a refusal");
    browser.screenshot("kept-after-refused-action").await;

    // A related link, a 5-whys chain, the details, an unknown incident, a preview.
    link_the_runbook(&browser).await;
    assert_eq!(typed(&browser).await, before, "the edits survive a link");
    browser.click("#part-five_whys > details.box summary").await;
    browser.type_into("#nw-1", "Why did payments fail?").await;
    browser.type_into("#nb-1", "the config was invalid").await;
    browser
        .click_to_load("#part-five_whys button[formaction$='/whys']")
        .await;
    assert_eq!(typed(&browser).await, before, "the edits survive a chain");
    assert!(
        browser.find_all("#details[open]").await.is_empty(),
        "{}",
        browser.url().await
    );
    browser.click("#details summary").await;
    browser.type_into("#d-service", "payments-api").await;
    browser
        .click_to_load("#details button[formaction$='/details']")
        .await;
    assert_eq!(
        typed(&browser).await,
        before,
        "the edits survive the details"
    );
    browser.click("dd details.add-comment summary").await;
    browser
        .type_into("#attach-incident", "no-such-incident")
        .await;
    browser
        .click_to_load("button[formaction$='/incidents']")
        .await;
    assert_eq!(browser.value("#attach-incident").await, "no-such-incident");
    assert_eq!(
        typed(&browser).await,
        before,
        "the edits survive a refused attach"
    );
    browser
        .click_to_load("#detection button[name=preview]")
        .await;
    assert!(browser.text("#detection .preview").await.contains("10:02"));
    assert_eq!(typed(&browser).await, before, "the edits survive a preview");

    // Submitting with the new chain's factor missing is refused: nothing is saved,
    // everything typed stays. She names the factor in that chain's own form.
    browser
        .click_to_load("#review button[formaction$='/review/submit']")
        .await;
    assert!(browser
        .text("#review")
        .await
        .contains("contributing factor"));
    assert_eq!(
        typed(&browser).await,
        before,
        "the edits survive a refused submit"
    );
    assert_eq!(stored(&w, &id, "impact").await, unchanged, "nothing saved");
    browser
        .click("#part-five_whys .chain:nth-of-type(2) details summary")
        .await;
    let chain = browser.find_all("#part-five_whys .chain select").await;
    assert_eq!(chain.len(), 2, "one factor per chain");
    browser
        .set_value(
            "#part-five_whys .chain:nth-of-type(2) select",
            "configuration",
        )
        .await;
    browser
        .click_to_load("#part-five_whys .chain:nth-of-type(2) button[formaction*='/whys/']")
        .await;
    assert_eq!(
        typed(&browser).await,
        before,
        "the edits survive a chain's change"
    );

    // Submitting takes what was typed along: the COE goes to review as she sees it.
    browser
        .click_to_load("#review button[formaction$='/review/submit']")
        .await;
    browser.wait_for_url("#review").await;
    let facts = browser.text(".facts").await;
    assert!(
        facts.contains("in review"),
        "{facts} {}",
        browser.text("#review").await
    );
    assert_eq!(stored(&w, &id, "impact").await, before.0);
    assert_eq!(stored(&w, &id, "detection").await, before.1);
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{id}"), &w.owner)
        .await;
    assert_eq!(doc["service"], "payments-api", "{doc}");
    assert_eq!(doc["five_whys"].as_array().map(Vec::len), Some(2), "{doc}");
    browser.screenshot("kept-then-submitted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_script_the_typed_sections_survive_every_other_button() {
    let browser = Browser::start_without_script().await;
    let (w, id, before) = owner_has_typed(&browser).await;

    // The answer, then a link: each goes through, the sections stay as typed.
    answer_the_comment(&browser).await;
    assert_eq!(typed(&browser).await, before);
    link_the_runbook(&browser).await;
    assert_eq!(typed(&browser).await, before);
    browser.screenshot("kept-without-script").await;

    // Save: both sections saved at once.
    browser.click_to_load("#impact button[name=save]").await;
    assert_eq!(stored(&w, &id, "impact").await, before.0);
    assert_eq!(stored(&w, &id, "detection").await, before.1);
}

/// Item 2: a pasted log too long for its section no longer blocks every other section;
/// the refusal sits at that section, speaks of KB and what to do, the page lands on it,
/// and what was typed there is kept. An action's due date field says its earliest day.
#[tokio::test]
async fn one_section_too_long_is_refused_at_itself_and_the_others_are_saved() {
    use crate::pages::{get_page, landed, post_sections, sign_in};
    use reqwest::header::LOCATION;
    let app = crate::helpers::spawn_app_with(|s| s.coe.max_section_bytes = 2048).await;
    let admin = app.admin_token();
    let doc = crate::helpers::json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Search down", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let path = format!("/coes/{id}");
    let ana = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, &path, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let today = chrono::Utc::now().date_naive().to_string();
    assert!(
        html.contains(&format!(
            "name=\"actions.due_date\" type=\"date\" min=\"{today}\""
        )),
        "the due date's earliest day"
    );
    let log = "ERROR upstream timed out\n".repeat(160);
    let res = post_sections(
        &app,
        &ana,
        &path,
        &html,
        &[
            ("impact", "Searches failed for 9 minutes."),
            ("detection", &log),
            ("mitigation", "Restarted the indexer."),
        ],
        &[("save", "mitigation")],
    )
    .await;
    assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER);
    let location = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(
        location.ends_with("#detection"),
        "lands on the refusal: {location}"
    );
    let page = landed(&app, &ana, res).await;
    assert_eq!(page.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
    let html = page.text().await.expect("html");
    let at = html
        .find("id=\"problem-detection\"")
        .expect("the problem at Detection");
    let problem = &html[at..at + 400];
    assert!(
        problem.contains("is 4 KB and a section holds at most 2 KB") && problem.contains("link"),
        "{problem}"
    );
    assert!(!html.contains("max_section_bytes"), "no setting's name");
    assert!(
        html.contains("ERROR upstream timed out"),
        "the log kept as typed"
    );
    let stored = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let body = |key: &str| {
        stored["sections"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["key"] == key))
            .and_then(|s| s["body"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(body("impact"), "Searches failed for 9 minutes.");
    assert_eq!(body("mitigation"), "Restarted the indexer.");
    assert_eq!(body("detection"), "", "the refused section is not saved");
}

/// On an action's page too: a note typed for "Mark it done" survives moving the due
/// date, and a refused step keeps the new due date typed beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_button_on_the_action_page_loses_the_note_typed() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let action = w
        .action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let action_id = action["id"].as_str().expect("id").to_owned();
    let page = format!("/actions/{action_id}");
    let browser = Browser::start().await;
    sign_in_to(&browser, &w.app, "dev@example.com", &page).await;

    browser
        .type_into("#note-complete", "The CI job rejects a bad config.")
        .await;
    let soon = (chrono::Utc::now() + chrono::Duration::days(20))
        .date_naive()
        .to_string();
    browser.set_value("#due", &soon).await;
    browser
        .type_into("#reason", "The CI runners arrive later")
        .await;
    browser
        .click_to_load("button[formaction$='/due-date']")
        .await;
    browser.wait_for_url("?kept=").await;
    assert_eq!(
        browser.value("#note-complete").await,
        "The CI job rejects a bad config."
    );
    let stored = w
        .app
        .get_json(&format!("/api/v1/actions/{action_id}"), &w.owner)
        .await;
    assert_eq!(stored["due_date"], soon.as_str(), "{stored}");
    browser.screenshot("action-kept-after-due-date").await;

    // "Mark it done" with its note emptied is refused: the due date and the reason
    // typed meanwhile stay on the page, and so does the refusal's reason.
    let later = (chrono::Utc::now() + chrono::Duration::days(30))
        .date_naive()
        .to_string();
    browser.set_value("#note-complete", "").await;
    browser.set_value("#due", &later).await;
    browser.type_into("#reason", "Moved again").await;
    browser
        .click_to_load("button[formaction$='/complete']")
        .await;
    assert!(browser.text(".error").await.contains("note is required"));
    assert_eq!(browser.value("#reason").await, "Moved again");
    assert_eq!(browser.value("#due").await, later);
    let stored = w
        .app
        .get_json(&format!("/api/v1/actions/{action_id}"), &w.owner)
        .await;
    assert_ne!(stored["state"], "done", "{stored}");
    assert_eq!(stored["due_date"], soon.as_str(), "{stored}");
    browser.screenshot("action-kept-after-refusal").await;
    crate::html::assert_accessible_now(&browser).await;
}

/// Item 8: the reviewer who sent a COE back sees whose move it is, not the owner's
/// controls: no "Answer" under her own comment, no "Submit for review", no banner
/// telling her to answer; the owner sees all three.
#[tokio::test]
async fn the_reviewer_sees_that_the_owner_moves_next() {
    use crate::pages::{get_page, sign_in};
    let w = World::new().await;
    let id = sent_back(&w).await;
    let page = format!("/coes/{id}");
    let html = |who: String| {
        let (app, page) = (&w.app, page.clone());
        async move {
            get_page(app, &page, Some(&who))
                .await
                .text()
                .await
                .expect("html")
        }
    };
    let reviewer = html(sign_in(&w.app, "reviewer@example.com").await).await;
    assert!(
        reviewer.contains("Waiting for")
            && reviewer.contains("to answer 1 comment, change what you asked and submit it again"),
        "{reviewer}"
    );
    assert!(
        !reviewer.contains("/answer\""),
        "no Answer under her own comment"
    );
    assert!(
        !reviewer.contains("/review/submit\""),
        "no Submit for review"
    );
    assert!(
        !reviewer.contains("Answer each comment at its section"),
        "no owner's banner"
    );
    let owner = html(sign_in(&w.app, "owner@example.com").await).await;
    assert!(owner.contains("/answer\"") && owner.contains("/review/submit\""));
    assert!(owner.contains("Answer each comment at its section"));
    assert!(!owner.contains("id=\"whose-move\""));
}
