//! One outage, one COE: the incidents of several alert groups attached to one COE,
//! whose times and timeline follow all of them, and whose later events reach it.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{error_of, spawn_app, TestApp};
use crate::pages::{csrf_of, get_page, sign_in};

/// An alert of group `group` firing (or resolving, with `ended`) at `at`.
fn alert(group: &str, severity: &str, at: &str, ended: Option<&str>) -> Value {
    let mut event = json!({"dedup_key": format!("{group}-alert"), "group_key": group,
                           "severity": severity, "service": group, "title": format!("{group} failing"),
                           "started_at": at});
    if let Some(ended) = ended {
        event["status"] = json!("resolved");
        event["ended_at"] = json!(ended);
    }
    event
}

async fn send(app: &TestApp, ingest: &str, event: Value) {
    let res = app.post_json("/api/v1/events", Some(ingest), &event).await;
    assert_eq!(res.status(), 202);
}

/// The id of the incident of group `group`.
async fn incident_of(app: &TestApp, admin: &str, group: &str) -> String {
    let list = app.get_json("/api/v1/incidents?limit=50", admin).await;
    list["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .find(|i| i["group_key"] == group)
        .and_then(|i| i["id"].as_str())
        .unwrap_or_else(|| panic!("no incident of {group}: {list}"))
        .to_owned()
}

#[tokio::test]
async fn the_incidents_of_one_outage_are_attached_to_one_coe_that_follows_them_all() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    // The database fails over (sev2: a draft); checkout and the gateway page too
    // (sev3: incidents only), one earlier than the database's own alert.
    send(
        &app,
        &ingest,
        alert("db", "sev2", "2026-11-30T10:02:00Z", None),
    )
    .await;
    send(
        &app,
        &ingest,
        alert("checkout", "sev3", "2026-11-30T10:00:00Z", None),
    )
    .await;
    send(
        &app,
        &ingest,
        alert("gateway", "sev3", "2026-11-30T10:03:00Z", None),
    )
    .await;
    let coes = app.get_json("/api/v1/coes", &admin).await;
    assert_eq!(coes["total"], 1, "{coes}");
    let coe = coes["coes"][0]["id"]
        .as_str()
        .expect("the draft")
        .to_owned();
    let (db, checkout, gateway) = (
        incident_of(&app, &admin, "db").await,
        incident_of(&app, &admin, "checkout").await,
        incident_of(&app, &admin, "gateway").await,
    );

    // Checkout attached through the API: its alert joins the timeline, its start is
    // the outage's.
    let path = format!("/api/v1/coes/{coe}/incidents");
    let res = app
        .post_json(&path, Some(&admin), &json!({"incident_id": checkout}))
        .await;
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.expect("json");
    assert_eq!(doc["incident_ids"], json!([db, checkout]), "{doc}");
    assert_eq!(doc["started_at"], "2026-11-30T10:00:00Z", "{doc}");
    assert!(
        doc["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .any(|e| e["text"]
                .as_str()
                .is_some_and(|t| t.contains("checkout failing"))),
        "{doc}"
    );
    // Again: nothing changes. Unknown: 422 naming the field.
    let res = app
        .post_json(&path, Some(&admin), &json!({"incident_id": checkout}))
        .await;
    assert_eq!(res.status(), 200);
    let res = app
        .post_json(&path, Some(&admin), &json!({"incident_id": "nope"}))
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "incident_id", "{fields:?}");

    // The gateway from the COE's page, by its incident page's address.
    let ana = sign_in(&app, "ana@example.com").await;
    let page = format!("/coes/{coe}");
    let html = get_page(&app, &page, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let res = crate::pages::browser()
        .post(app.url(&format!("{page}/incidents")))
        .header(reqwest::header::COOKIE, &ana)
        .form(&[
            ("csrf", csrf_of(&html)),
            ("incident", app.url(&format!("/incidents/{gateway}"))),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, &page, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    for group in ["db failing", "checkout failing", "gateway failing"] {
        assert!(html.contains(group), "{group}: {html}");
    }
    let incident_page = get_page(&app, &format!("/incidents/{gateway}"), Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        incident_page.contains(&format!("/coes/{coe}")),
        "the incident names its COE: {incident_page}"
    );

    // Another COE may not take an incident this one covers.
    let other = app
        .post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Something else"}),
        )
        .await
        .json::<Value>()
        .await
        .expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{other}/incidents"),
            Some(&admin),
            &json!({"incident_id": gateway}),
        )
        .await;
    assert_eq!(res.status(), 409);

    // Later events of any of them reach the COE: it resolves when all have.
    send(
        &app,
        &ingest,
        alert(
            "db",
            "sev2",
            "2026-11-30T10:02:00Z",
            Some("2026-11-30T10:40:00Z"),
        ),
    )
    .await;
    send(
        &app,
        &ingest,
        alert(
            "checkout",
            "sev3",
            "2026-11-30T10:00:00Z",
            Some("2026-11-30T10:45:00Z"),
        ),
    )
    .await;
    let doc = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert!(
        doc["resolved_at"].is_null(),
        "the gateway still fails: {doc}"
    );
    send(
        &app,
        &ingest,
        alert(
            "gateway",
            "sev3",
            "2026-11-30T10:03:00Z",
            Some("2026-11-30T10:50:00Z"),
        ),
    )
    .await;
    let doc = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert_eq!(doc["resolved_at"], "2026-11-30T10:50:00Z", "{doc}");
    // Checkout turning worse opens no draft of its own: it is covered.
    send(
        &app,
        &ingest,
        alert("checkout", "sev1", "2026-11-30T11:00:00Z", None),
    )
    .await;
    let coes = app.get_json("/api/v1/coes", &admin).await;
    assert_eq!(
        coes["total"], 2,
        "the outage's and the one opened by hand: {coes}"
    );
    let doc = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert_eq!(
        doc["severity"], "sev1",
        "the draft follows the worst: {doc}"
    );

    // Detached: its alerts leave the timeline; never the last one.
    let res = app
        .client
        .delete(app.url(&format!("{path}/{gateway}")))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.expect("json");
    assert_eq!(doc["incident_ids"], json!([db, checkout]), "{doc}");
    assert!(
        !doc["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .any(|e| e["text"]
                .as_str()
                .is_some_and(|t| t.contains("gateway failing"))),
        "{doc}"
    );
    for incident in [&checkout] {
        let res = app
            .client
            .delete(app.url(&format!("{path}/{incident}")))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200);
    }
    let res = app
        .client
        .delete(app.url(&format!("{path}/{db}")))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 409, "the last one stays");
    let res = app
        .client
        .delete(app.url(&format!("{path}/{gateway}")))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 404, "not attached any more");
}
