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

#[tokio::test]
async fn three_drafts_of_one_outage_are_merged_into_one_coe() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    // The database fails over; checkout and the gateway page within the minute: three
    // sev2 groups, three drafts.
    send(
        &app,
        &ingest,
        alert("db", "sev2", "2026-11-30T10:01:00Z", None),
    )
    .await;
    send(
        &app,
        &ingest,
        alert("checkout", "sev2", "2026-11-30T10:00:00Z", None),
    )
    .await;
    send(
        &app,
        &ingest,
        alert("gateway", "sev1", "2026-11-30T10:01:30Z", None),
    )
    .await;
    let list = app.get_json("/api/v1/coes?sort=oldest", &admin).await;
    assert_eq!(list["total"], 3, "{list}");
    let ids: Vec<String> = list["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect();
    let (db, checkout, gateway) = (&ids[0], &ids[1], &ids[2]);
    // Owners, text written in one draft, an action in another.
    for (id, owner) in [
        (db, "ana@example.com"),
        (checkout, "bo@example.com"),
        (gateway, "cy@example.com"),
    ] {
        let res = app
            .client
            .patch(app.url(&format!("/api/v1/coes/{id}")))
            .bearer_auth(&admin)
            .header("If-Match", "\"1\"")
            .json(&json!({"owner": owner}))
            .send()
            .await
            .expect("sent");
        assert_eq!(
            res.status(),
            200,
            "{}",
            res.text().await.unwrap_or_default()
        );
    }
    let res = app
        .client
        .put(app.url(&format!("/api/v1/coes/{checkout}/sections/impact")))
        .bearer_auth(&admin)
        .header("If-Match", "\"2\"")
        .json(&json!({"body": "1,200 checkouts failed."}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(14)).to_string();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{gateway}/actions"),
            Some(&admin),
            &json!({"title": "Retry budget for the gateway", "owner": "cy@example.com", "due_date": due,
                    "priority": "high", "kind": "mitigate"}),
        )
        .await;
    assert_eq!(res.status(), 201);

    // Ana merges the other two into hers from its page, ticking them.
    let ana = sign_in(&app, "ana@example.com").await;
    let page = format!("/coes/{db}");
    let html = get_page(&app, &page, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Merge other drafts of this outage into this one"),
        "{html}"
    );
    let res = crate::pages::browser()
        .post(app.url(&format!("{page}/merge")))
        .header(reqwest::header::COOKIE, &ana)
        .form(&[
            ("csrf", csrf_of(&html).as_str()),
            ("coe_id", checkout.as_str()),
            ("coe_id", gateway.as_str()),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    let doc = app.get_json(&format!("/api/v1/coes/{db}"), &admin).await;
    assert_eq!(
        doc["incident_ids"].as_array().expect("ids").len(),
        3,
        "{doc}"
    );
    assert_eq!(
        doc["started_at"], "2026-11-30T10:00:00Z",
        "the earliest: {doc}"
    );
    assert_eq!(doc["severity"], "sev1", "the worst: {doc}");
    let impact = doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["key"] == "impact")
        .expect("impact");
    assert_eq!(
        impact["body"], "#### From “checkout failing”\n\n1,200 checkouts failed.",
        "{impact}"
    );
    assert_eq!(
        doc["actions"][0]["title"], "Retry budget for the gateway",
        "{doc}"
    );
    let texts: Vec<&str> = doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect();
    for group in ["db failing", "checkout failing", "gateway failing"] {
        assert!(
            texts.iter().any(|t| t.contains(group)),
            "{group}: {texts:?}"
        );
    }
    for merged in [checkout, gateway] {
        let source = app
            .get_json(&format!("/api/v1/coes/{merged}"), &admin)
            .await;
        assert_eq!(source["state"], "merged", "{source}");
        assert_eq!(source["merged_into"], json!(db), "{source}");
        let html = get_page(&app, &format!("/coes/{merged}"), Some(&ana))
            .await
            .text()
            .await
            .expect("html");
        assert!(
            html.contains(&format!("merged into <a href=\"/coes/{db}\">")),
            "{html}"
        );
    }
    // Everyone involved is told once; the stats count one outage.
    {
        use coe::db::schema::outbox_emails;
        use diesel::prelude::*;
        let mut conn = app.pool.get().expect("conn");
        let told: Vec<String> = outbox_emails::table
            .filter(outbox_emails::kind.eq("coe_merged"))
            .select(outbox_emails::recipient)
            .order(outbox_emails::recipient.asc())
            .load(&mut conn)
            .expect("emails");
        assert_eq!(
            told,
            ["bo@example.com", "cy@example.com"],
            "not ana, who merged them"
        );
    }
    // Merged drafts are no longer reminded: past any deadline they are not late
    // drafts (the list the daily writeup reminders and the dashboard read).
    {
        use coe::db::schema::coes;
        use diesel::prelude::*;
        let mut conn = app.pool.get().expect("conn");
        diesel::update(coes::table)
            .set(coes::resolved_at.eq(chrono::Utc::now().naive_utc() - chrono::Duration::days(30)))
            .execute(&mut conn)
            .expect("backdate");
    }
    let stats = app.get_json("/api/v1/stats", &admin).await;
    let late: Vec<&str> = stats["drafts_past_deadline"]
        .as_array()
        .expect("late drafts")
        .iter()
        .filter_map(|d| d["coe_id"].as_str())
        .collect();
    assert_eq!(late, [db.as_str()], "only the surviving draft: {stats}");
    assert_eq!(stats["recurrence"]["all_coes"], 1, "{stats}");
    assert!(stats["coes_by_state"].get("merged").is_none(), "{stats}");

    // A later alert of a merged draft's incident reaches the surviving COE.
    for (group, severity, at) in [
        ("db", "sev2", "2026-11-30T10:01:00Z"),
        ("checkout", "sev2", "2026-11-30T10:00:00Z"),
        ("gateway", "sev1", "2026-11-30T10:01:30Z"),
    ] {
        send(
            &app,
            &ingest,
            alert(group, severity, at, Some("2026-11-30T10:30:00Z")),
        )
        .await;
    }
    let doc = app.get_json(&format!("/api/v1/coes/{db}"), &admin).await;
    assert_eq!(doc["resolved_at"], "2026-11-30T10:30:00Z", "{doc}");

    // Only drafts merge; nothing into itself.
    let path = format!("/api/v1/coes/{db}/merge");
    let res = app
        .post_json(&path, Some(&admin), &json!({"coe_ids": [checkout]}))
        .await;
    assert_eq!(res.status(), 409, "merged already");
    let res = app
        .post_json(&path, Some(&admin), &json!({"coe_ids": [db]}))
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "coe_ids");
    let res = app
        .post_json(&path, Some(&admin), &json!({"coe_ids": []}))
        .await;
    let _ = error_of(res, 422).await;
}
