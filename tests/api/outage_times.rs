//! The outage's own times (issue 63 item 1): a new timeline entry is a note unless the
//! person picks a milestone; a milestone that would move one of the COE's times says
//! so first, from and to, and moves it only when asked; times that contradict each
//! other are missing work naming which; the report form refuses "noticed" after
//! "ended". In a real browser, with and without script.

use chrono::{NaiveDateTime, Utc};
use serde_json::{json, Value};

use crate::browser::sign_in_to;
use crate::helpers::{spawn_app, TestApp};
use crate::webdriver::Browser;

/// An alert that fired two hours ago opens a COE (a critical alert is at the policy);
/// Ana of cart owns it. Returns the COE's id and an admin's token.
pub(crate) async fn outage(app: &TestApp) -> (String, String) {
    let ingest = app.token("alertmanager", coe::domain::Role::Ingest);
    let alert = json!({
        "version": "4", "status": "firing", "receiver": "coe",
        "groupKey": "{}:{alertname=\"CartErrors\"}",
        "groupLabels": {"alertname": "CartErrors"},
        "commonLabels": {"alertname": "CartErrors", "service": "cart", "severity": "critical"},
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "CartErrors", "service": "cart", "severity": "critical",
                       "instance": "cart-1"},
            "annotations": {"summary": "Cart error rate above 5%"},
            "startsAt": (Utc::now() - chrono::Duration::hours(2)).to_rfc3339(),
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "t1"
        }]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/ana@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"team": "cart"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let id = coes["coes"][0]["id"].as_str().expect("a COE").to_owned();
    let version = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await["version"].clone();
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{id}")))
        .bearer_auth(&admin)
        .header("if-match", format!("\"{version}\""))
        .json(&json!({"owner": "ana@example.com"}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success(), "{}", res.status());
    (id, admin)
}

fn time_of(doc: &Value, field: &str) -> NaiveDateTime {
    let text = doc[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field}: {doc}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .expect("RFC 3339")
        .naive_utc()
}

/// `at` to the minute, as a form gives times.
fn minute(at: NaiveDateTime) -> NaiveDateTime {
    use chrono::Timelike;
    at.with_second(0)
        .and_then(|t| t.with_nanosecond(0))
        .expect("a time")
}

/// The form's `datetime-local` value (UTC) of `at`.
fn local(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M").to_string()
}

pub(crate) async fn add_entry(
    browser: &Browser,
    at: NaiveDateTime,
    kind: Option<&str>,
    text: &str,
) {
    browser.click("#part-timeline > details.box summary").await;
    browser.set_value("#tl-at", &local(at)).await;
    if let Some(kind) = kind {
        browser
            .click(&format!("#tl-kind option[value={kind}]"))
            .await;
    }
    browser.type_into("#tl-text", text).await;
    browser
        .click_to_load("#part-timeline > details.box button[type=submit]")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_never_moves_the_outage_and_a_milestone_says_what_it_moves_first() {
    let app = spawn_app().await;
    let (id, admin) = outage(&app).await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let started = time_of(&doc, "started_at");
    let page = format!("/coes/{id}");

    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", &page).await;
    // A new entry is a note unless the person picks otherwise; the milestones are
    // offered apart, in words.
    assert_eq!(browser.value("#tl-kind").await, "note");
    let offered = browser
        .eval(
            "const g = document.querySelector('#tl-kind optgroup'); \
             return g.label + ': ' + Array.from(g.querySelectorAll('option')).map(o => o.text).join(', ');",
        )
        .await;
    assert_eq!(
        offered,
        "Milestones: they set the COE's own times: The outage started, The outage was noticed, \
         The impact was mitigated, The outage was resolved"
    );
    let later = minute(started) + chrono::Duration::minutes(38);
    add_entry(&browser, later, None, "The queue started growing").await;
    browser.wait_for_url("#tl-").await;
    let doc = app
        .get_json(&page.replace("/coes", "/api/v1/coes"), &admin)
        .await;
    assert_eq!(time_of(&doc, "started_at"), started, "a note moves nothing");
    let kinds: Vec<&str> = doc["timeline"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"note"), "{kinds:?}");
    assert!(
        browser
            .text("#part-timeline table")
            .await
            .contains("A note"),
        "the kind in words"
    );

    // A milestone that would move the start says so, from and to, and saves nothing.
    add_entry(
        &browser,
        later,
        Some("started"),
        "The first customer complaint",
    )
    .await;
    let said = browser.text("#part-timeline").await;
    let from = started.format("%Y-%m-%d %H:%M UTC").to_string();
    let to = later.format("%Y-%m-%d %H:%M UTC").to_string();
    assert!(
        said.contains(&format!(
            "This entry changes when the outage started from {from} to {to}."
        )),
        "{said}"
    );
    browser
        .screenshot("outage-times-a-milestone-asks-first")
        .await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(time_of(&doc, "started_at"), started);
    assert_eq!(
        browser.value("#tl-text").await,
        "The first customer complaint",
        "what was typed is kept"
    );

    // Asked for, it moves; the start after the first alert is then missing work.
    browser.click("input[name='timeline.move']").await;
    browser
        .click_to_load("#part-timeline > details.box button[type=submit]")
        .await;
    browser.wait_for_url("#tl-").await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(time_of(&doc, "started_at"), later);
    let missing = doc["completeness"]["missing"].to_string();
    assert!(
        missing.contains(&format!(
            "says the outage started at {to}, after its first alert fired at {from}"
        )),
        "{missing}"
    );
    let checklist = browser.text("main").await;
    assert!(
        checklist.contains("after its first alert fired"),
        "the checklist names it: {checklist}"
    );
    browser
        .eval("document.getElementById('timeline').scrollIntoView(); return null;")
        .await;
    browser
        .screenshot("outage-times-a-contradiction-is-missing-work")
        .await;
}

/// Without script the same: the milestone is refused with what it would move, and
/// moves once the box is ticked; the entry's own page asks the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_script_a_milestone_asks_before_it_moves_a_time() {
    let app = spawn_app().await;
    let (id, admin) = outage(&app).await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let detected = time_of(&doc, "detected_at");
    let page = format!("/coes/{id}");
    let browser = Browser::start_without_script().await;
    sign_in_to(&browser, &app, "ana@example.com", &page).await;

    let later = minute(detected) + chrono::Duration::minutes(5);
    add_entry(&browser, later, Some("detected"), "Support escalated").await;
    let said = browser.text("#part-timeline").await;
    assert!(
        said.contains("This entry changes when it was noticed from"),
        "{said}"
    );
    browser.click("input[name='timeline.move']").await;
    browser
        .click_to_load("#part-timeline > details.box button[type=submit]")
        .await;
    browser.wait_for_url("#tl-").await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(time_of(&doc, "detected_at"), later);

    // The entry's own page: moving it again asks again.
    let entry = doc["timeline"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["kind"] == "detected" && e["text"] == "Support escalated")
        .and_then(|e| e["id"].as_str())
        .expect("the entry")
        .to_owned();
    browser
        .goto(&app.url(&format!("{page}/timeline/{entry}")))
        .await;
    let again = later + chrono::Duration::minutes(2);
    browser.set_value("#tl-at", &local(again)).await;
    browser.click_to_load("main form button[type=submit]").await;
    let said = browser.text("main").await;
    assert!(
        said.contains("This entry changes when it was noticed from"),
        "{said}"
    );
    browser
        .screenshot("outage-times-the-entry-page-asks-first")
        .await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(time_of(&doc, "detected_at"), later, "nothing moved yet");
}

/// The report form refuses a failure noticed after it ended, and keeps what was typed.
#[tokio::test]
async fn a_report_noticed_after_it_ended_is_refused() {
    use crate::pages::{browser, csrf_of, get_page, sign_in};
    use reqwest::header::{COOKIE, LOCATION};
    let app = spawn_app().await;
    let ana = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, "/report", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let now = Utc::now().naive_utc();
    let form = [
        ("csrf", csrf_of(&html)),
        ("title", "Cart down".to_owned()),
        ("severity", "sev2".to_owned()),
        ("zone", "UTC".to_owned()),
        ("started_at", local(now - chrono::Duration::hours(2))),
        ("detected_at", local(now - chrono::Duration::minutes(10))),
        ("resolved_at", local(now - chrono::Duration::hours(1))),
    ];
    let res = browser()
        .post(app.url("/report"))
        .header(COOKIE, ana.clone())
        .form(&form)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER);
    let location = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(location.starts_with("/report?kept="), "{location}");
    let html = get_page(&app, &location, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("is after it ended"), "{html}");
    assert!(
        html.contains("value=\"Cart down\""),
        "what was typed is kept"
    );
}
