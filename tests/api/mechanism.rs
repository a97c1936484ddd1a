//! The mechanism inspects itself: an outage that comes back judges the actions meant
//! to prevent it.

use coe::db::schema::{coes, corrective_actions, outbox_emails, review_comments};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};
use crate::outage::send;
use crate::pages::{get_page, sign_in};

/// The database's failover alert, firing from `at` (or resolved at `ended`).
pub(crate) fn failover(at: &str, ended: Option<&str>) -> Value {
    let mut event = json!({"dedup_key": "pg-failover", "group_key": "payments-db-failover",
        "severity": "sev2", "service": "payments-db", "title": "Payments database failed over",
        "started_at": at});
    if let Some(ended) = ended {
        event["status"] = json!("resolved");
        event["ended_at"] = json!(ended);
    }
    event
}

/// The COEs, newest first.
async fn coe_ids(app: &TestApp, admin: &str) -> Vec<String> {
    let list = app.get_json("/api/v1/coes?sort=newest", admin).await;
    list["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect()
}

/// Who got the "it happened again" emails, in order.
fn told(app: &TestApp) -> Vec<String> {
    let mut conn = app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq("action_recurred"))
        .order((
            outbox_emails::created_at.asc(),
            outbox_emails::recipient.asc(),
        ))
        .select(outbox_emails::recipient)
        .load(&mut conn)
        .expect("emails")
}

#[tokio::test]
async fn an_outage_that_comes_back_judges_the_actions_done_to_prevent_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    send(&app, &ingest, failover("2026-11-01T10:00:00Z", None)).await;
    send(
        &app,
        &ingest,
        failover("2026-11-01T10:00:00Z", Some("2026-11-01T11:00:00Z")),
    )
    .await;
    let first = coe_ids(&app, &admin).await.remove(0);
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{first}")))
        .bearer_auth(&admin)
        .header("If-Match", "\"1\"")
        .json(&json!({"owner": "ana@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    // Three actions: one to prevent it (done), one of process (done), one to detect
    // it (still open).
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(30)).to_string();
    let mut ids = Vec::new();
    for (title, kind) in [
        ("Fail over by runbook, tested monthly", "prevent"),
        ("Write the failover runbook", "process"),
        ("Alert on replication lag", "detect"),
    ] {
        let res = app
            .post_json(
                &format!("/api/v1/coes/{first}/actions"),
                Some(&admin),
                &json!({"title": title, "owner": "bo@example.com", "due_date": due,
                        "priority": "high", "kind": kind}),
            )
            .await;
        assert_eq!(res.status(), 201);
        ids.push(
            crate::helpers::json(res).await["id"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    let (prevent, process, detect) = (&ids[0], &ids[1], &ids[2]);
    for done in [prevent, process] {
        let res = app
            .post_json(
                &format!("/api/v1/actions/{done}/complete"),
                Some(&admin),
                &json!({"note": "Done and checked in a game day."}),
            )
            .await;
        assert_eq!(
            res.status(),
            200,
            "{}",
            res.text().await.unwrap_or_default()
        );
    }
    // They were done on 5 November, and the COE reviewed by Rev and approved on the
    // 10th (the review's own rules are tested elsewhere: the record is written here).
    {
        let mut conn = app.pool.get().expect("conn");
        let day = |d: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 11, d)
                .and_then(|d| d.and_hms_opt(12, 0, 0))
                .expect("a day")
        };
        diesel::update(
            corrective_actions::table.filter(corrective_actions::id.eq_any([prevent, process])),
        )
        .set(corrective_actions::closed_at.eq(day(5)))
        .execute(&mut conn)
        .expect("done on the 5th");
        diesel::update(coes::table.find(&first))
            .set((
                coes::state.eq("approved"),
                coes::reviewer_email.eq("rev@example.com"),
            ))
            .execute(&mut conn)
            .expect("approved");
        diesel::insert_into(review_comments::table)
            .values((
                review_comments::id.eq("approval-1"),
                review_comments::coe_id.eq(&first),
                review_comments::author.eq("rev@example.com"),
                review_comments::verdict.eq("approved"),
                review_comments::body.eq(""),
                review_comments::created_at.eq(day(10)),
            ))
            .execute(&mut conn)
            .expect("approved on the 10th");
    }
    assert!(told(&app).is_empty());

    // It comes back on the 20th: a new incident, a new draft that recurs the first.
    send(&app, &ingest, failover("2026-11-20T10:00:00Z", None)).await;
    let second = coe_ids(&app, &admin).await.remove(0);
    assert_ne!(second, first);
    let doc = app
        .get_json(&format!("/api/v1/coes/{second}"), &admin)
        .await;
    let meant: Vec<&str> = doc["meant_to_prevent"]
        .as_array()
        .expect("meant_to_prevent")
        .iter()
        .map(|a| a["action_id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        meant,
        [prevent.as_str()],
        "only the preventive action done: {doc}"
    );
    assert_eq!(doc["meant_to_prevent"][0]["action_coe_id"], json!(first));
    assert_eq!(doc["meant_to_prevent"][0]["at"], "2026-11-20T10:00:00Z");
    let incident = doc["incident_id"].as_str().expect("incident").to_owned();
    let action = app
        .get_json(&format!("/api/v1/actions/{prevent}"), &admin)
        .await;
    assert_eq!(
        action["recurrences"],
        json!([{"incident_id": incident, "coe_id": second, "at": "2026-11-20T10:00:00Z"}])
    );
    for not_judged in [process, detect] {
        let action = app
            .get_json(&format!("/api/v1/actions/{not_judged}"), &admin)
            .await;
        assert_eq!(action["recurrences"], json!([]), "{action}");
    }
    let earlier = app.get_json(&format!("/api/v1/coes/{first}"), &admin).await;
    assert_eq!(
        earlier["recurred_after_done"][0]["action_id"],
        json!(prevent)
    );
    assert_eq!(earlier["recurred_after_done"][0]["coe_id"], json!(second));
    // The earlier COE's owner and reviewer are told once, however often it fires.
    assert_eq!(told(&app), ["ana@example.com", "rev@example.com"]);
    send(&app, &ingest, failover("2026-11-20T10:05:00Z", None)).await;
    assert_eq!(told(&app).len(), 2);
    {
        let mut conn = app.pool.get().expect("conn");
        let (subject, body): (String, String) = outbox_emails::table
            .filter(outbox_emails::kind.eq("action_recurred"))
            .select((outbox_emails::subject, outbox_emails::body_text))
            .first(&mut conn)
            .expect("the email");
        assert!(
            subject.contains("Payments database failed over"),
            "{subject}"
        );
        assert!(
            body.contains("Fail over by runbook, tested monthly"),
            "{body}"
        );
        assert!(!body.contains("Write the failover runbook"), "{body}");
        assert!(body.contains(&format!("/coes/{second}")), "{body}");
    }
    // The stats count the action and the approved COE that came back.
    let stats = app.get_json("/api/v1/stats", &admin).await;
    assert_eq!(stats["actions_recurred_after_done"], 1, "{stats}");
    assert_eq!(
        stats["recurrence_after_approval"],
        json!({"approved": 1, "recurred": 1, "rate": 1.0}),
        "{stats}"
    );

    // The pages say it: the new draft lists the action first, the earlier COE and
    // the action's page show it recurred after done; the dashboard draws it.
    let ana = sign_in(&app, "ana@example.com").await;
    let page = |path: String| {
        let (app, ana) = (&app, &ana);
        async move {
            get_page(app, &path, Some(ana))
                .await
                .text()
                .await
                .expect("html")
        }
    };
    let html = page(format!("/coes/{second}")).await;
    assert!(html.contains("Meant to prevent this"), "{html}");
    assert!(
        html.contains("Fail over by runbook, tested monthly"),
        "{html}"
    );
    let html = page(format!("/coes/{first}")).await;
    assert!(html.contains("recurred after done"), "{html}");
    let html = page(format!("/actions/{prevent}")).await;
    assert!(html.contains("Recurred after done"), "{html}");
    let html = page("/dashboard".to_owned()).await;
    assert!(html.contains("Did the actions hold?"), "{html}");
    // The weekly review's agenda lists the recurrence (it was recorded today).
    let html = page("/review-meeting".to_owned()).await;
    let recurrences = section(&html, "recurrences");
    assert!(
        recurrences.contains("Fail over by runbook, tested monthly")
            && recurrences.contains(&format!("/coes/{second}")),
        "{recurrences}"
    );

    // It comes back again on the 25th: a second recurrence, told again.
    send(
        &app,
        &ingest,
        failover("2026-11-20T10:00:00Z", Some("2026-11-20T11:00:00Z")),
    )
    .await;
    send(&app, &ingest, failover("2026-11-25T10:00:00Z", None)).await;
    assert_eq!(told(&app).len(), 4);
    let action = app
        .get_json(&format!("/api/v1/actions/{prevent}"), &admin)
        .await;
    assert_eq!(action["recurrences"].as_array().expect("list").len(), 2);
    let stats = app.get_json("/api/v1/stats", &admin).await;
    assert_eq!(
        stats["actions_recurred_after_done"], 1,
        "one action: {stats}"
    );
}

/// The `<section id="{id}">` of a page.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}: {html}"));
    let end = html[start..]
        .find("</section>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

#[tokio::test]
async fn a_sev1_coe_closes_only_once_its_reviewer_verified_every_done_action() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Payments down for an hour", "severity": "sev1", "owner": "ana@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let coe = crate::helpers::json(res).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(30)).to_string();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(&admin),
            &json!({"title": "Fail over by runbook", "owner": "bo@example.com", "due_date": due,
                    "priority": "high", "kind": "prevent",
                    "success_criteria": "A failover drill takes under a minute"}),
        )
        .await;
    let action = crate::helpers::json(res).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // Reviewed by Rev and approved (the review's own rules are tested elsewhere).
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(coes::table.find(&coe))
            .set((
                coes::state.eq("approved"),
                coes::reviewer_email.eq("rev@example.com"),
            ))
            .execute(&mut conn)
            .expect("approved");
    }
    let (bo, rev) = (
        crate::actions::person_token(&app, "bo", "bo@example.com"),
        crate::actions::person_token(&app, "rev", "rev@example.com"),
    );
    let verify = format!("/api/v1/actions/{action}/verify");
    // Nothing to verify before it is done.
    let res = app
        .post_json(&verify, Some(&rev), &json!({"verified": true}))
        .await;
    assert_eq!(res.status(), 409);
    let complete = format!("/api/v1/actions/{action}/complete");
    let done = json!({"note": "Drilled", "evidence_url": "https://grafana.example.com/d/drill"});
    let res = app.post_json(&complete, Some(&bo), &done).await;
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let state = |app: &TestApp| {
        let mut conn = app.pool.get().expect("conn");
        coes::table
            .find(&coe)
            .select(coes::state)
            .first::<String>(&mut conn)
            .expect("state")
    };
    assert_eq!(
        state(&app),
        "approved",
        "waits for the reviewer's verification"
    );

    // Only the reviewer verifies; a refusal needs its reason and sends it back.
    let res = app
        .post_json(&verify, Some(&bo), &json!({"verified": true}))
        .await;
    assert_eq!(res.status(), 403);
    let res = app
        .post_json(&verify, Some(&rev), &json!({"verified": false}))
        .await;
    let (_, _, fields) = crate::helpers::error_of(res, 422).await;
    assert_eq!(fields[0].0, "reason");
    let res = app.post_json(&verify, Some(&rev), &json!({})).await;
    let (_, _, fields) = crate::helpers::error_of(res, 422).await;
    assert_eq!(fields[0].0, "verified");
    let res = app
        .post_json(
            &verify,
            Some(&rev),
            &json!({"verified": false, "reason": "The drill failed over by hand, not by the runbook."}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let detail = crate::helpers::json(res).await;
    assert_eq!(detail["state"], "in_progress", "{detail}");
    assert_eq!(
        detail["steps"]
            .as_array()
            .expect("steps")
            .last()
            .expect("a step")["step"],
        "refuse"
    );
    {
        let mut conn = app.pool.get().expect("conn");
        let (recipient, body): (String, String) = outbox_emails::table
            .filter(outbox_emails::kind.eq("action_verification"))
            .select((outbox_emails::recipient, outbox_emails::body_text))
            .first(&mut conn)
            .expect("the owner is told");
        assert_eq!(recipient, "bo@example.com");
        assert!(body.contains("by hand, not by the runbook"), "{body}");
    }

    // Done again; the reviewer verifies it on the action's page; the COE closes.
    let res = app.post_json(&complete, Some(&bo), &done).await;
    assert_eq!(res.status(), 200);
    assert_eq!(state(&app), "approved");
    let rev_session = sign_in(&app, "rev@example.com").await;
    let page = format!("/actions/{action}");
    let html = get_page(&app, &page, Some(&rev_session))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Verify it: it does what it was meant to"),
        "{html}"
    );
    let res = crate::pages::post_form(
        &app,
        &rev_session,
        &page,
        &format!("{page}/verify"),
        &[("verified", "true")],
    )
    .await;
    assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER);
    assert_eq!(state(&app), "closed");
    let detail = app
        .get_json(&format!("/api/v1/actions/{action}"), &admin)
        .await;
    assert_eq!(detail["verified_by"], "rev@example.com", "{detail}");
    // The owner heard both verdicts.
    let mut conn = app.pool.get().expect("conn");
    let told: i64 = outbox_emails::table
        .filter(outbox_emails::kind.eq("action_verification"))
        .filter(outbox_emails::recipient.eq("bo@example.com"))
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(told, 2);
    drop(conn);
    // The weekly review's agenda lists the refusal with its reason; the closed COE
    // is the one to read together.
    let html = get_page(&app, "/review-meeting", Some(&rev_session))
        .await
        .text()
        .await
        .expect("html");
    let refusals = section(&html, "refusals");
    assert!(
        refusals.contains("by hand, not by the runbook")
            && refusals.contains("Fail over by runbook"),
        "{refusals}"
    );
    assert!(
        section(&html, "pick").contains("Payments down for an hour"),
        "{html}"
    );
    let res = get_page(&app, "/review-meeting?since=yesterday", Some(&rev_session)).await;
    assert_eq!(res.status(), reqwest::StatusCode::BAD_REQUEST);
}

/// A sev1 COE written and submitted by the world's owner: its id and document.
pub(crate) async fn submitted_sev1(w: &crate::actions::World) -> (String, Value) {
    let (id, v) = w.written_coe().await;
    let (status, doc) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"severity": "sev1"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    (id, doc)
}

#[tokio::test]
async fn the_worst_outages_get_a_bar_raiser_from_another_team_and_need_both_approvals() {
    use crate::actions::{person_token, World};
    let w = World::new().await;
    let admin = w.app.admin_token();
    // The directory: the owner in payments, the reviewer in search; bar raisers in
    // payments, search and edge.
    for (email, body) in [
        ("owner@example.com", json!({"team": "Payments"})),
        ("reviewer@example.com", json!({"team": "search"})),
        (
            "cy@example.com",
            json!({"team": "payments", "bar_raiser": true}),
        ),
        (
            "di@example.com",
            json!({"team": "search", "bar_raiser": true}),
        ),
    ] {
        let (status, person) = w
            .send(
                &admin,
                "PUT",
                &format!("/api/v1/people/{email}"),
                None,
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{person}");
    }
    let res = w
        .app
        .post_raw(
            "/api/v1/people/import",
            Some(&admin),
            b"email,name,team,manager_email,timezone,bar_raiser\ned@example.com,Ed,edge,,,yes\nfo@example.com,Fo,edge,,,perhaps\n".to_vec(),
        )
        .await;
    let report = crate::helpers::json(res).await;
    assert_eq!(report["created"], 1, "{report}");
    assert!(
        report["rejected"][0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("bar_raiser must be yes or no")),
        "{report}"
    );
    let di = person_token(&w.app, "di", "di@example.com");
    // A bar raiser cannot unmake (or make) themselves one.
    let (status, body) = w
        .send(
            &di,
            "PUT",
            "/api/v1/people/di@example.com",
            None,
            Some(json!({"team": "search", "bar_raiser": false})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let person = w.app.get_json("/api/v1/people?team=search", &admin).await;
    assert_eq!(person["people"][0]["bar_raiser"], true, "{person}");

    // A sev1 COE, written and submitted.
    let (id, doc) = submitted_sev1(&w).await;
    assert_eq!(doc["state"], "in_review");
    // Not cy (the owner's team, any case); di and ed never served: by address.
    assert_eq!(doc["bar_raiser"], "di@example.com", "{doc}");
    let asked = |w: &World| {
        let mut conn = w.app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::kind.eq("review_requested"))
            .order(outbox_emails::recipient.asc())
            .select((outbox_emails::recipient, outbox_emails::subject))
            .load::<(String, String)>(&mut conn)
            .expect("emails")
    };
    let emails = asked(&w);
    assert_eq!(emails.len(), 2, "{emails:?}");
    assert_eq!(emails[0].0, "di@example.com");
    assert!(emails[0].1.contains("Bar raiser requested"), "{emails:?}");
    assert_eq!(emails[1].0, "reviewer@example.com");

    // The reviewer approves first: it stays in review, waiting for the bar raiser.
    let approve = format!("/api/v1/coes/{id}/approve");
    let (status, doc) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "in_review");
    assert_eq!(doc["approved_by"], "reviewer@example.com");
    let (status, body) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 409, "nobody approves twice: {body}");
    {
        let mut conn = w.app.pool.get().expect("conn");
        let (to, text): (String, String) = outbox_emails::table
            .filter(outbox_emails::kind.eq("approved"))
            .select((outbox_emails::recipient, outbox_emails::body_text))
            .first(&mut conn)
            .expect("the owner is told");
        assert_eq!(to, "owner@example.com");
        assert!(
            text.contains("stays in review until di@example.com (bar raiser) approves"),
            "{text}"
        );
    }
    // The bar raiser sends it back; submitted again, it keeps its bar raiser and
    // starts the round with no approval.
    let (status, doc) = w
        .send(&di, "POST", &format!("/api/v1/coes/{id}/request-changes"), None,
              Some(json!({"comment": "Why did nothing validate the config? Say which check was missing."})))
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "draft");
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["bar_raiser"], "di@example.com");
    assert_eq!(doc["approved_by"], Value::Null);
    // The bar raiser first, then the reviewer: approved.
    let (status, doc) = w.send(&di, "POST", &approve, None, None).await;
    assert_eq!((status, doc["state"].as_str()), (200, Some("in_review")));
    let (status, doc) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved");

    // The weekly review's agenda lists it approved; with an overdue action.
    {
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.filter(corrective_actions::coe_id.eq(&id)))
            .set(
                corrective_actions::due_date
                    .eq(chrono::NaiveDate::from_ymd_opt(2026, 1, 5).expect("a day")),
            )
            .execute(&mut conn)
            .expect("overdue");
    }
    let session = sign_in(&w.app, "owner@example.com").await;
    let html = get_page(&w.app, "/review-meeting", Some(&session))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        section(&html, "approved").contains(&format!("/coes/{id}")),
        "{html}"
    );
    assert!(
        section(&html, "overdue").contains("Validate config in CI"),
        "{html}"
    );
    assert!(
        section(&html, "pick").contains(&format!("/coes/{id}/print")),
        "{html}"
    );
    // Since tomorrow, nothing was approved.
    let tomorrow = chrono::Utc::now().date_naive() + chrono::Duration::days(1);
    let html = get_page(
        &w.app,
        &format!("/review-meeting?since={tomorrow}"),
        Some(&session),
    )
    .await
    .text()
    .await
    .expect("html");
    assert!(section(&html, "approved").contains("None."), "{html}");

    // The next sev1 COE goes to the bar raiser least recently assigned: ed.
    let (second, doc) = submitted_sev1(&w).await;
    assert_eq!(doc["bar_raiser"], "ed@example.com", "{doc}");
    // Ed is away: an admin names another, from outside the owner's team.
    let name = format!("/api/v1/coes/{second}/bar-raiser");
    let (status, body) = w
        .send(
            &w.owner,
            "PUT",
            &name,
            None,
            Some(json!({"bar_raiser": "di@example.com"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    for who in ["cy@example.com", "dev@example.com", "reviewer@example.com"] {
        let (status, body) = w
            .send(&admin, "PUT", &name, None, Some(json!({"bar_raiser": who})))
            .await;
        assert_eq!(status, 422, "{who}: {body}");
        assert_eq!(body["error"]["fields"][0]["field"], "bar_raiser");
    }
    let (status, doc) = w
        .send(
            &admin,
            "PUT",
            &name,
            None,
            Some(json!({"bar_raiser": "di@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["bar_raiser"], "di@example.com");
    let asked = asked(&w);
    assert!(
        asked
            .iter()
            .filter(|(to, _)| to == "di@example.com")
            .count()
            >= 2,
        "the new bar raiser is asked: {asked:?}"
    );
}

#[tokio::test]
async fn the_coverage_audit_follows_each_outage_to_its_approved_coe_by_team_and_period() {
    use crate::actions::World;
    let w = World::new().await;
    let admin = w.app.admin_token();
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    for (email, team) in [
        ("owner@example.com", "Payments"),
        ("reviewer@example.com", "Search"),
    ] {
        let (status, _) = w
            .send(
                &admin,
                "PUT",
                &format!("/api/v1/people/{email}"),
                None,
                Some(json!({ "team": team })),
            )
            .await;
        assert_eq!(status, 200);
    }
    // An outage two days ago, resolved: its draft opens, within its writeup deadline.
    let started = chrono::Utc::now() - chrono::Duration::days(2);
    let at =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    send(&w.app, &ingest, failover(&at(started), None)).await;
    send(
        &w.app,
        &ingest,
        failover(
            &at(started),
            Some(&at(started + chrono::Duration::hours(1))),
        ),
    )
    .await;
    // A COE owned by payments, written, submitted and approved today.
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    for (token, step) in [(&w.owner, "submit"), (&w.reviewer, "approve")] {
        let (status, doc) = w
            .send(
                token,
                "POST",
                &format!("/api/v1/coes/{id}/{step}"),
                None,
                None,
            )
            .await;
        assert_eq!(status, 200, "{doc}");
    }

    let stats = w.app.get_json("/api/v1/stats", &admin).await;
    let overall = &stats["coverage"]["overall"];
    assert_eq!(overall["incidents_at_policy"], 1, "{overall}");
    assert_eq!(overall["incidents_by_coe_state"]["draft"], 1, "{overall}");
    assert_eq!(overall["incidents_by_coe_state"]["none"], 0, "{overall}");
    assert_eq!(overall["incidents"][0]["covered"], "draft");
    assert_eq!(overall["approved"][0]["coe_id"], id.as_str(), "{overall}");
    assert_eq!(overall["approved"][0]["lacks_prevention"], false);
    assert_eq!(overall["approved_without_prevention"], 0);
    assert_eq!(
        stats["coverage"]["by_team"]["Payments"]["approved"][0]["coe_id"],
        id.as_str()
    );
    // The draft has no owner and its service no team: it is nobody's team's.
    assert_eq!(
        stats["coverage"]["by_team"]["(none)"]["incidents_at_policy"],
        1
    );

    // Its 5-whys chain is counted by its contributing factor, in this quarter.
    let quarter = &stats["contributing_factors"][0];
    assert_eq!(quarter["overall"]["configuration"], 1, "{quarter}");
    assert_eq!(
        quarter["by_team"]["Payments"]["configuration"], 1,
        "{quarter}"
    );
    assert_eq!(
        stats["contributing_factors"].as_array().map(Vec::len),
        Some(4)
    );

    // One team (any case): its COEs, not the other outage.
    let payments = w.app.get_json("/api/v1/stats?team=payments", &admin).await;
    let overall = &payments["coverage"]["overall"];
    assert_eq!(overall["incidents_at_policy"], 0, "{overall}");
    assert_eq!(overall["approved"].as_array().map(Vec::len), Some(1));
    // A period before any of it: nothing.
    let before = w
        .app
        .get_json("/api/v1/stats?from=2026-01-01&to=2026-01-31", &admin)
        .await;
    assert_eq!(before["coverage"]["from"], "2026-01-01");
    assert_eq!(before["coverage"]["overall"]["incidents_at_policy"], 0);
    assert_eq!(before["coverage"]["overall"]["approved"], json!([]));
    // Bad dates name their field.
    for (query, field) in [
        ("from=yesterday", "from"),
        ("from=2026-12-10&to=2026-12-01", "from"),
        ("from=2020-01-01&to=2026-12-01", "to"),
    ] {
        let res = w
            .app
            .get(&format!("/api/v1/stats?{query}"), Some(&admin))
            .await;
        let (_, _, fields) = crate::helpers::error_of(res, 422).await;
        assert_eq!(fields[0].0, field, "{query}");
    }

    // The dashboard draws it, each figure a link to its list.
    let session = sign_in(&w.app, "owner@example.com").await;
    let html = get_page(&w.app, "/dashboard", Some(&session))
        .await
        .text()
        .await
        .expect("html");
    let coverage = section(&html, "coverage");
    assert!(coverage.contains("#cov-incidents"), "{coverage}");
    assert!(coverage.contains(&format!("/coes/{id}")), "{coverage}");
    assert!(coverage.contains("Payments"), "{coverage}");
    let factors = section(&html, "factors");
    assert!(factors.contains("configuration"), "{factors}");
}

/// Takes draft `id` as owner@, sets its severity, writes it up and adds an action of
/// dev@; returns the action's id.
pub(crate) async fn prepare(
    w: &crate::actions::World,
    admin: &str,
    id: &str,
    severity: &str,
) -> String {
    let doc = w.app.get_json(&format!("/api/v1/coes/{id}"), admin).await;
    let (status, doc) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            doc["version"].as_i64(),
            Some(json!({"owner": "owner@example.com", "severity": severity})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    w.write_up(id, doc["version"].as_i64().expect("version"))
        .await;
    w.action(
        id,
        "Fail over by runbook, drilled monthly",
        "dev@example.com",
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Takes review step `step` (submit, approve) on COE `id` with `token`: the document.
async fn review_step(w: &crate::actions::World, token: &str, id: &str, step: &str) -> Value {
    let (status, doc) = w
        .send(
            token,
            "POST",
            &format!("/api/v1/coes/{id}/{step}"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{step}: {doc}");
    doc
}

/// `coe sweep --at AT` against `app`'s database, delivering to `smtp`.
pub(crate) fn sweep_at(app: &TestApp, smtp: &str, at: chrono::DateTime<chrono::Utc>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coe"))
        .args(["sweep", "--at", &at.to_rfc3339()])
        .env_clear()
        .current_dir(dir.path())
        .env("COE_DATABASE_URL", app.database_url())
        .env("COE_SMTP_URL", smtp)
        .env("COE_REMINDERS_SEND_HOUR", "0")
        .env("COE_LOG_LEVEL", "warn")
        .output()
        .expect("coe sweep runs");
    assert!(
        out.status.success(),
        "coe sweep --at {at} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A quarter of the mechanism, day by day (`coe sweep --at`, a real SMTP server):
/// an outage's COE is approved and its action done in week 2; the same alert group
/// fires again in week 5; the action is judged, its COE's owner and reviewer told
/// once each; the new sev1 COE gets a bar raiser from another team, needs both
/// approvals, and closes only once its reviewer verified its action.
#[tokio::test]
async fn a_simulated_quarter_judges_the_actions_raises_the_bar_and_verifies_the_fix() {
    use crate::actions::{person_token, World};
    use crate::email::SmtpServer;
    use chrono::{Duration, Utc};
    let w = World::new().await;
    let smtp = SmtpServer::start();
    let admin = w.app.admin_token();
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    let (dev, cy) = (
        person_token(&w.app, "dev", "dev@example.com"),
        person_token(&w.app, "cy", "cy@example.com"),
    );
    for (email, body) in [
        ("owner@example.com", json!({"team": "payments"})),
        ("reviewer@example.com", json!({"team": "payments"})),
        ("dev@example.com", json!({"team": "payments"})),
        (
            "cy@example.com",
            json!({"team": "search", "bar_raiser": true}),
        ),
        (
            "pay@example.com",
            json!({"team": "payments", "bar_raiser": true}),
        ),
    ] {
        let (status, _) = w
            .send(
                &admin,
                "PUT",
                &format!("/api/v1/people/{email}"),
                None,
                Some(body),
            )
            .await;
        assert_eq!(status, 200);
    }
    let day0 = Utc::now() - Duration::days(70);
    let day = |n: i64| day0 + Duration::days(n);
    let at = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let coe_ids = |w: &World| {
        let mut conn = w.app.pool.get().expect("conn");
        coes::table
            .order(coes::created_at.asc())
            .select(coes::id)
            .load::<String>(&mut conn)
            .expect("coes")
    };
    let done = json!({"note": "Drilled the failover", "evidence_url": "https://grafana.example.com/d/drill"});

    // Week 1: the database fails over; its COE is written and approved.
    send(&w.app, &ingest, failover(&at(day(0)), None)).await;
    send(
        &w.app,
        &ingest,
        failover(&at(day(0)), Some(&at(day(0) + Duration::hours(1)))),
    )
    .await;
    let first = coe_ids(&w)[0].clone();
    let action = prepare(&w, &admin, &first, "sev2").await;
    review_step(&w, &w.owner, &first, "submit").await;
    let doc = review_step(&w, &w.reviewer, &first, "approve").await;
    assert_eq!(
        doc["state"], "approved",
        "a sev2 COE needs no bar raiser: {doc}"
    );
    // Week 2: the action is done (the API stamps today; the quarter dates it day 10).
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{action}/complete"),
            None,
            Some(done.clone()),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    {
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&action))
            .set(corrective_actions::closed_at.eq(day(10).naive_utc()))
            .execute(&mut conn)
            .expect("dated");
    }
    for n in 0..35 {
        sweep_at(&w.app, &smtp.url(), day(n));
    }

    // Week 5: the same alert group fires again.
    send(&w.app, &ingest, failover(&at(day(35)), None)).await;
    let second = coe_ids(&w)[1].clone();
    let judged = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &admin)
        .await;
    assert_eq!(
        judged["recurrences"][0]["coe_id"],
        second.as_str(),
        "{judged}"
    );
    let stats = w.app.get_json("/api/v1/stats", &admin).await;
    assert_eq!(stats["actions_recurred_after_done"], 1, "{stats}");

    // The new outage is a sev1: a bar raiser from another team, both approvals, and
    // the reviewer's verification before it closes.
    let fix = prepare(&w, &admin, &second, "sev1").await;
    let doc = review_step(&w, &w.owner, &second, "submit").await;
    assert_eq!(
        doc["bar_raiser"], "cy@example.com",
        "not pay@, of the owner's team: {doc}"
    );
    // The alert still fires: a sev1 is not approved before its outage ends unless
    // the reviewer says she knows. It ends an hour after it began.
    let (status, refused) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{second}/approve"),
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        refused["error"]["fields"][0]["field"], "acknowledge_open_incidents",
        "{refused}"
    );
    send(
        &w.app,
        &ingest,
        failover(&at(day(35)), Some(&at(day(35) + Duration::hours(1)))),
    )
    .await;
    let doc = review_step(&w, &w.reviewer, &second, "approve").await;
    assert_eq!(doc["state"], "in_review", "waits for the bar raiser");
    let doc = review_step(&w, &cy, &second, "approve").await;
    assert_eq!(doc["state"], "approved");
    let (status, _) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{fix}/complete"),
            None,
            Some(done),
        )
        .await;
    assert_eq!(status, 200);
    let state = |w: &World| {
        let mut conn = w.app.pool.get().expect("conn");
        coes::table
            .find(&second)
            .select(coes::state)
            .first::<String>(&mut conn)
            .expect("state")
    };
    assert_eq!(state(&w), "approved", "done, not yet verified");
    let (status, _) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/actions/{fix}/verify"),
            None,
            Some(json!({"verified": true})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(state(&w), "closed");

    // The rest of the quarter, day by day; the emails reach the SMTP server.
    for n in 35..=70 {
        sweep_at(&w.app, &smtp.url(), day(n));
    }
    sweep_at(&w.app, &smtp.url(), Utc::now());
    let again = |who: &str| {
        smtp.to(who)
            .into_iter()
            .filter(|m| m.subject.contains("It happened again"))
            .count()
    };
    assert_eq!(
        again("owner@example.com"),
        1,
        "the earlier COE's owner, once"
    );
    assert_eq!(again("reviewer@example.com"), 1, "and its reviewer, once");
    assert!(
        smtp.to("cy@example.com")
            .iter()
            .any(|m| m.subject.contains("Bar raiser requested")),
        "the bar raiser was asked"
    );
    assert!(
        smtp.to("pay@example.com").is_empty(),
        "the other bar raiser was not"
    );
}
