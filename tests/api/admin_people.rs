//! The smaller things of a day's work (issue 63 item 7), in a real browser: an admin
//! adds one person and changes a team or manager in a form; making someone an admin
//! and signing them out everywhere ask first; a search box in the header.

use crate::browser::sign_in_to;
use crate::helpers::spawn_app;
use crate::webdriver::Browser;

/// A person of the directory, as the API lists them.
async fn person(app: &crate::helpers::TestApp, admin: &str, email: &str) -> serde_json::Value {
    let people = app.get_json("/api/v1/people", admin).await;
    let list = people
        .as_array()
        .or_else(|| people["people"].as_array())
        .expect("a list")
        .clone();
    list.into_iter()
        .find(|p| p["email"] == email)
        .unwrap_or_else(|| panic!("{email} is not listed: {people}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_adds_one_person_and_changes_a_team_in_a_form() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    crate::ownership::person(&app, "dana@example.com", true).await;
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "dana@example.com", "/admin/people").await;

    // A made-up manager address is refused by its label, with what was typed kept.
    browser.click("#add-person summary").await;
    browser.type_into("#p-email", "chen@example.com").await;
    browser.type_into("#p-name", "Chen Li").await;
    browser.type_into("#p-team", "payments").await;
    browser.type_into("#p-manager", "not an address").await;
    browser
        .click_to_load("#add-person button[type=submit]")
        .await;
    let problems = browser.text("#one-problems").await;
    assert!(problems.contains("Manager email:"), "{problems}");
    assert_eq!(browser.value("#p-name").await, "Chen Li");

    // Mended: saved, and listed.
    browser.clear("#p-manager").await;
    browser.type_into("#p-manager", "dana@example.com").await;
    browser
        .click_to_load("#add-person button[type=submit]")
        .await;
    browser.wait_for_url("saved=").await;
    assert_eq!(browser.text("#notice").await, "Saved chen@example.com.");
    let chen = person(&app, &admin, "chen@example.com").await;
    assert_eq!(
        (
            chen["name"].as_str(),
            chen["team"].as_str(),
            chen["manager_email"].as_str()
        ),
        (Some("Chen Li"), Some("payments"), Some("dana@example.com")),
        "{chen}"
    );

    // Another team, from the person's row; the rest of them stays.
    let chen_row = "tr[data-person='chen@example.com'] td[data-label=Manager] details";
    browser.click(&format!("{chen_row} summary")).await;
    browser.clear(&format!("{chen_row} input[name=team]")).await;
    browser
        .type_into(&format!("{chen_row} input[name=team]"), "search")
        .await;
    browser
        .click_to_load(&format!("{chen_row} button[type=submit]"))
        .await;
    browser.wait_for_url("saved=").await;
    let chen = person(&app, &admin, "chen@example.com").await;
    assert_eq!(
        (
            chen["name"].as_str(),
            chen["team"].as_str(),
            chen["manager_email"].as_str()
        ),
        (Some("Chen Li"), Some("search"), Some("dana@example.com")),
        "{chen}"
    );
    browser.screenshot("admin-people-saved").await;
    crate::html::assert_accessible_now(&browser).await;

    // Dangerous moves ask first: nothing happens until the button inside is pressed.
    let make_admin = "tr[data-person='chen@example.com'] td[data-label=Admin] details";
    assert!(
        browser
            .find_all(&format!("{make_admin}:not([open]) button"))
            .await
            .len()
            == 1
    );
    browser.click(&format!("{make_admin} summary")).await;
    assert!(browser
        .text(&format!("{make_admin} p"))
        .await
        .starts_with("An admin may change anything"));
    browser.click_to_load(&format!("{make_admin} button")).await;
    assert_eq!(
        person(&app, &admin, "chen@example.com").await["is_admin"],
        true
    );
    // The header's search box searches.
    browser.type_into("#top-q", "checkout\n").await;
    browser.wait_for_url("/search?q=checkout").await;
}
