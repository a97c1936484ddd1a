//! Typed text is saved as it is typed (issue 63 item 4): a draft's section is saved a
//! few seconds after typing stops, against the revision it started from (another
//! person's save meanwhile is not overwritten: the page says so); while it is typed
//! and not saved, the checklist says "typed, not saved yet", not "is empty". Without
//! script, the Save buttons save as before and a page kept after another button says
//! the same. In a real browser.

use serde_json::json;

use crate::browser::sign_in_to;
use crate::helpers::spawn_app;
use crate::outage_times::outage;
use crate::webdriver::Browser;

fn section<'a>(doc: &'a serde_json::Value, key: &str) -> &'a str {
    doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["key"] == key)
        .and_then(|s| s["body"].as_str())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drafts_sections_are_saved_as_they_are_typed_and_never_over_anothers() {
    let app = spawn_app().await;
    let (id, admin) = outage(&app).await;
    let page = format!("/coes/{id}");
    let api = format!("/api/v1/coes/{id}");
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", &page).await;
    assert_eq!(
        browser
            .text("#missing li[data-section=impact] .problem")
            .await,
        "is empty"
    );

    // Typed, not saved yet: the checklist says so at once, then it is saved.
    browser
        .type_into("#body-impact", "About 1200 carts failed over 40 minutes.")
        .await;
    assert_eq!(
        browser
            .text("#missing li[data-section=impact] .problem")
            .await,
        "typed, not saved yet"
    );
    assert_eq!(
        browser.text("#impact .section-problems").await,
        "typed, not saved yet"
    );
    browser.wait_for_text("#autosaved-impact", "Saved at").await;
    assert!(
        !browser
            .text("#impact .section-problems")
            .await
            .contains("empty"),
        "{}",
        browser.text("#impact .section-problems").await
    );
    let doc = app.get_json(&api, &admin).await;
    assert_eq!(
        section(&doc, "impact"),
        "About 1200 carts failed over 40 minutes."
    );
    // The checklist and the section's mark are the COE's as saved: Impact is no
    // longer missing.
    assert_eq!(browser.text("#h-impact .mark").await, "✓ complete");
    assert!(browser
        .find_all("#missing li[data-section=impact]")
        .await
        .is_empty());
    browser.screenshot("autosave-saved").await;

    // Typed on, saved again from the revision saved last (no conflict with itself).
    browser.type_into("#body-impact", " 900 gave up.").await;
    browser.wait_for_text("#autosaved-impact", "Saved at").await;
    let doc = app.get_json(&api, &admin).await;
    assert_eq!(
        section(&doc, "impact"),
        "About 1200 carts failed over 40 minutes. 900 gave up."
    );

    // A line typed on, saved by script (`\n`), then the Save button (a form sends
    // `\r\n`): one text, saved, not a conflict with itself.
    browser
        .type_into("#body-impact", "\nRetries doubled the load.")
        .await;
    browser.wait_for_text("#autosaved-impact", "Saved at").await;
    browser.click_to_load("#impact button[name=save]").await;
    browser.wait_for_url("saved=impact").await;
    let doc = app.get_json(&api, &admin).await;
    assert_eq!(
        section(&doc, "impact"),
        "About 1200 carts failed over 40 minutes. 900 gave up.\nRetries doubled the load."
    );

    // The page's other forms still go through after its own saves: the version it
    // carries moved with them.
    browser
        .type_into("#body-detection", "A customer told us.")
        .await;
    browser
        .wait_for_text("#autosaved-detection", "Saved at")
        .await;
    browser.click("#details summary").await;
    browser.clear("#d-title").await;
    browser.type_into("#d-title", "Carts failed").await;
    browser
        .click_to_load("#details button[formaction$='/details']")
        .await;
    browser.wait_for_url("did=details").await;
    assert_eq!(browser.text("#notice").await, "Saved.");
    let doc = app.get_json(&api, &admin).await;
    assert_eq!(doc["title"], "Carts failed");

    // Bo saves Summary through the API while Ana types in it: Ana's text is not
    // saved over Bo's, and the page says who saved and what to do.
    let summary = doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["key"] == "summary")
        .expect("summary")["revision"]
        .as_str()
        .expect("revision")
        .to_owned();
    let res = app
        .client
        .put(app.url(&format!("{api}/sections/summary")))
        .bearer_auth(&admin)
        .json(&json!({"body": "Bo's summary.", "based_on": summary}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    browser.type_into("#body-summary", "Ana's summary.").await;
    let said = browser
        .wait_for_text("#autosaved-summary", "Not saved:")
        .await;
    assert!(
        said.contains("the API client “test-admin” saved this section meanwhile"),
        "{said}"
    );
    assert_eq!(
        section(&app.get_json(&api, &admin).await, "summary"),
        "Bo's summary."
    );
    browser.screenshot("autosave-conflict").await;
    crate::html::assert_accessible_now(&browser).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_script_a_section_typed_and_kept_is_typed_not_saved_on_the_checklist() {
    let app = spawn_app().await;
    let (id, admin) = outage(&app).await;
    let page = format!("/coes/{id}");
    let browser = Browser::start_without_script().await;
    sign_in_to(&browser, &app, "ana@example.com", &page).await;
    browser
        .type_into("#body-impact", "About 1200 carts failed.")
        .await;
    // Another button (Preview) keeps the text without saving it.
    browser.click_to_load("#impact button[name=preview]").await;
    browser.wait_for_url("kept=").await;
    assert_eq!(
        browser
            .text("#missing li[data-section=impact] .problem")
            .await,
        "typed, not saved yet"
    );
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "impact"), "");
    assert_eq!(
        browser.text("#impact .section-problems").await,
        "typed, not saved yet"
    );
    browser.screenshot("no-script-typed-not-saved").await;
}
