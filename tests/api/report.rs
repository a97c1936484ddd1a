//! Pulling the cord from the pages: a failure no alert caught is reported, opens a
//! manual incident and, at or above the policy, a draft owned by the ownership rules
//! or else by the reporter, who is emailed; below it, the incident alone.

use coe::db::schema::{incidents, outbox_emails, service_owners};
use diesel::prelude::*;
use reqwest::header::{COOKIE, LOCATION};
use reqwest::StatusCode;

use crate::helpers::spawn_app;
use crate::pages::{browser, csrf_of, get_page, sign_in};

/// The form's one-time key, as the page made it.
fn key_of(html: &str) -> String {
    let start = html.find("name=\"form_key\" value=\"").expect("a form key") + 23;
    html[start..].split('"').next().expect("value").to_owned()
}

#[tokio::test]
async fn a_reported_failure_opens_an_incident_and_a_draft_its_reporter_owns() {
    let app = spawn_app().await;
    let ana = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, "/report", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("<a href=\"/report\">Report a failure</a>"),
        "in the navigation: {html}"
    );
    let (csrf, key) = (csrf_of(&html), key_of(&html));
    let post = |fields: Vec<(&'static str, String)>| {
        let (app, ana, csrf) = (&app, ana.clone(), csrf.clone());
        async move {
            let mut form = vec![("csrf", csrf)];
            form.extend(fields);
            browser()
                .post(app.url("/report"))
                .header(COOKIE, ana)
                .form(&form)
                .send()
                .await
                .expect("sent")
        }
    };

    // Nothing usable: every problem at once, through 303, what was typed kept.
    let res = post(vec![
        ("title", String::new()),
        ("started_at", "yesterday".into()),
        ("customers_saw", "Orders vanished".into()),
    ])
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let location = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(location.starts_with("/report?kept="), "{location}");
    let res = get_page(&app, &location, Some(&ana)).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    for problem in [
        "When it started: must be a date and time",
        "Title: is required",
        "Severity: is required",
    ] {
        assert!(html.contains(problem), "{problem}: {html}");
    }
    assert!(html.contains(">Orders vanished</textarea>"), "{html}");

    // A sev2 of a service nobody owns: the reporter owns the draft, and is told.
    let started = (chrono::Utc::now() - chrono::Duration::hours(2))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let fields = vec![
        ("form_key", format!("{key}-report")),
        ("title", "Orders lost after checkout".into()),
        ("service", "orders".into()),
        ("severity", "sev2".into()),
        ("started_at", started.clone()),
        (
            "customers_saw",
            "Paid orders did not appear in their accounts.".into(),
        ),
    ];
    let res = post(fields.clone()).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let landed = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    let coe_id = landed
        .strip_prefix("/coes/")
        .expect("on its COE")
        .to_owned();
    // A double click reports once and lands on the same COE.
    let again = post(fields).await;
    assert_eq!(again.headers()[LOCATION].to_str().expect("ascii"), landed);
    let admin = app.admin_token();
    let doc = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    assert_eq!(doc["owner"], "ana@example.com", "{doc}");
    assert_eq!(doc["severity"], "sev2");
    let impact = doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["key"] == "impact")
        .expect("impact");
    assert!(
        impact["body"]
            .as_str()
            .expect("body")
            .contains("Paid orders did not appear"),
        "{impact}"
    );
    assert_eq!(doc["timeline"][0]["kind"], "started", "{doc}");
    let incident = doc["incident_id"].as_str().expect("an incident").to_owned();
    let found = app
        .get_json(&format!("/api/v1/incidents/{incident}"), &admin)
        .await;
    assert_eq!(found["source"], "manual", "{found}");
    assert_eq!(found["reported_by"], "ana@example.com", "{found}");
    {
        let mut conn = app.pool.get().expect("conn");
        let manual: i64 = incidents::table
            .filter(incidents::source.eq("manual"))
            .count()
            .get_result(&mut conn)
            .expect("count");
        assert_eq!(manual, 1, "one report, one incident");
        let told: i64 = outbox_emails::table
            .filter(outbox_emails::kind.eq("coe_opened"))
            .filter(outbox_emails::recipient.eq("ana@example.com"))
            .count()
            .get_result(&mut conn)
            .expect("count");
        assert_eq!(told, 1);
        // The payments service has an owner in the service map.
        diesel::insert_into(service_owners::table)
            .values((
                service_owners::service.eq("payments"),
                service_owners::owner_email.eq(Some("pat@example.com")),
                service_owners::updated_by.eq("test"),
                service_owners::updated_at.eq(chrono::Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("map");
    }

    // The service map's owner owns a report of their service.
    let html = get_page(&app, "/report", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let res = post(vec![
        ("form_key", format!("{}-report", key_of(&html))),
        ("title", "Refunds failing".into()),
        ("service", "payments".into()),
        ("severity", "sev1".into()),
        ("started_at", started.clone()),
    ])
    .await;
    let landed = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    let doc = app.get_json(&format!("/api/v1{landed}"), &admin).await;
    assert_eq!(doc["owner"], "pat@example.com", "{doc}");

    // Below the policy: the incident alone, whose page offers a COE anyway.
    let html = get_page(&app, "/report", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let res = post(vec![
        ("form_key", format!("{}-report", key_of(&html))),
        ("title", "A slow admin page".into()),
        ("severity", "sev4".into()),
        ("started_at", started),
    ])
    .await;
    let landed = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(landed.starts_with("/incidents/"), "{landed}");
    let html = get_page(&app, &landed, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("reported by ana@example.com"), "{html}");
    assert!(
        html.contains("below the COE policy; open one if it deserves it"),
        "{html}"
    );
}
