//! Times in the person's own time zone (issue 63 item 7): set on their page, the pages
//! show times in it, naming it, and the timeline takes times typed in it. In a real
//! browser.

use chrono::{NaiveDate, TimeZone};

use crate::browser::sign_in_to;
use crate::helpers::spawn_app;
use crate::outage_times::{add_entry, outage};
use crate::webdriver::Browser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_and_types_times_in_their_own_time_zone() {
    let app = spawn_app().await;
    let (id, admin) = outage(&app).await;
    let browser = Browser::start().await;
    sign_in_to(&browser, &app, "ana@example.com", "/me").await;
    browser.click("#timezone summary").await;
    browser.type_into("#tz", "Europe/Berlin").await;
    browser.click_to_load("#timezone button[type=submit]").await;
    browser.wait_for_url("saved=timezone").await;
    assert!(browser.text("#notice").await.starts_with("Saved"));

    // A made-up zone is refused, and nothing changes.
    browser.click("#timezone summary").await;
    browser.clear("#tz").await;
    browser.type_into("#tz", "Mars/Olympus").await;
    browser.click_to_load("#timezone button[type=submit]").await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Your time zone was not changed"),
        "{notice}"
    );

    // The COE's page: the timeline in Berlin time (CET in December), named so.
    browser.goto(&app.url(&format!("/coes/{id}"))).await;
    let header = browser.text("table.timeline th").await;
    assert_eq!(header, "Time (Europe/Berlin)");
    assert!(
        browser.text("table.timeline td").await.ends_with("CET"),
        "{}",
        browser.text("table.timeline td").await
    );
    // 10:00 typed in Berlin is 09:00 UTC.
    let typed = NaiveDate::from_ymd_opt(2026, 12, 1)
        .and_then(|d| d.and_hms_opt(10, 0, 0))
        .expect("a time");
    add_entry(&browser, typed, None, "Paged the database team").await;
    browser.wait_for_url("did=timeline").await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let entry = doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .find(|e| e["text"] == "Paged the database team")
        .expect("the entry")
        .clone();
    let utc = chrono::Utc
        .with_ymd_and_hms(2026, 12, 1, 9, 0, 0)
        .single()
        .expect("a time")
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    assert_eq!(entry["at"], utc.as_str(), "{entry}");
    browser
        .screenshot("timeline-in-the-persons-time-zone")
        .await;
}
