//! A drill that proves the fix (issue 68, item 3): an action to detect or mitigate
//! names the alert that proves it; some days after it is verified (`coe sweep --at`,
//! the clock a simulated quarter takes), coe asks its owner for a drill; the alert,
//! fired in the drill, proves it by itself; a missed one asks the COE's reviewer to
//! confirm the fix or reopen the action.

use chrono::{Duration, Utc};
use coe::db::schema::{drill_rechecks, outbox_emails};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::actions::World;

/// The drill emails queued, oldest first: (recipient, subject).
fn drill_emails(w: &World) -> Vec<(String, String)> {
    let mut conn = w.app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq("drill_recheck"))
        .order((outbox_emails::created_at.asc(), outbox_emails::id.asc()))
        .select((outbox_emails::recipient, outbox_emails::subject))
        .load(&mut conn)
        .expect("emails")
}

/// The re-checks of action `id` by state, oldest first.
fn rechecks(w: &World, id: &str) -> Vec<String> {
    let mut conn = w.app.pool.get().expect("conn");
    drill_rechecks::table
        .filter(drill_rechecks::action_id.eq(id))
        // By id (made in order): the sweeps below take later clocks than a request.
        .order(drill_rechecks::id.asc())
        .select(drill_rechecks::state)
        .load(&mut conn)
        .expect("rechecks")
}

/// An action of `kind` on COE `coe`, owned by dev@, added by the COE's owner.
async fn action_of_kind(w: &World, coe: &str, title: &str, kind: &str) -> String {
    action_of_kind_for(w, coe, title, kind, "dev@example.com").await
}

/// An action of `kind` on COE `coe`, owned by `owner`, added by the COE's owner.
async fn action_of_kind_for(w: &World, coe: &str, title: &str, kind: &str, owner: &str) -> String {
    let due = (Utc::now() + Duration::days(10)).date_naive();
    let (status, action) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{coe}/actions"),
            None,
            Some(json!({"title": title, "owner": owner, "due_date": due,
                        "priority": "high", "kind": kind,
                        "success_criteria": "The alert pages on-call when the config drifts"})),
        )
        .await;
    assert_eq!(status, 201, "{action}");
    action["id"].as_str().expect("id").to_owned()
}

/// Done by dev@ with its evidence, verified by the COE's reviewer.
async fn done_and_verified(w: &World, dev: &str, id: &str) {
    let path = format!("/api/v1/actions/{id}");
    let done = json!({"note": "Alert added", "evidence_url": "https://example.com/alert-rule"});
    let (status, body) = w
        .send(dev, "POST", &format!("{path}/complete"), None, Some(done))
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{path}/verify"),
            None,
            Some(json!({"verified": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_proves_a_fix_by_itself_and_a_missed_one_asks_the_reviewer_to_confirm_or_reopen() {
    use crate::email::SmtpServer;
    let (w, admin) = crate::attacks::review_world_with(|s| s.reminders.enabled = false).await;
    let smtp = SmtpServer::start();
    let (coe_id, prevent) = crate::attacks::approved_sev1(&w).await;
    let detect = action_of_kind(&w, &coe_id, "Alert on config drift", "detect").await;
    let mitigate =
        action_of_kind(&w, &coe_id, "Roll back a bad config by itself", "mitigate").await;
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    let drill = |id: &str| format!("/api/v1/actions/{id}/drill");

    // Bad labels: each refused naming the field, nothing kept.
    for (body, why) in [
        (json!({"labels": {"1st": "x"}}), "not a label name"),
        (json!({"labels": {"alertname": ""}}), "an empty value"),
        (json!({"labels": {"coe_drill": "true"}}), "the drill's mark"),
        (json!({"labels": {"alertname": 5}}), "a number"),
        (json!({"labels": ["alertname"]}), "a list"),
        (
            json!({"labels": {"a": "b"}, "extra": 1}),
            "an unknown field",
        ),
    ] {
        let (status, answer) = w.send(&dev, "PUT", &drill(&detect), None, Some(body)).await;
        assert_eq!(status, 422, "{why}: {answer}");
        assert!(
            answer.to_string().contains("labels") || why == "an unknown field",
            "{why}: {answer}"
        );
    }
    let malformed = w
        .app
        .client
        .put(w.app.url(&drill(&detect)))
        .bearer_auth(&dev)
        .header("content-type", "application/json")
        .body("{\"labels\": ")
        .send()
        .await
        .expect("sent");
    assert_eq!(malformed.status(), 400);
    let (status, answer) = w
        .send(
            &dev,
            "PUT",
            &drill(&prevent),
            None,
            Some(json!({"labels": {"a": "b"}})),
        )
        .await;
    assert_eq!(
        status, 422,
        "an action to prevent is not proven by an alarm: {answer}"
    );
    assert!(
        answer.to_string().contains("detect or to mitigate"),
        "{answer}"
    );
    let (status, _) = w
        .send(
            &w.stranger,
            "PUT",
            &drill(&detect),
            None,
            Some(json!({"labels": {"a": "b"}})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = w
        .send(
            &dev,
            "PUT",
            &drill("0193b0c0-0000-7000-8000-000000000000"),
            None,
            Some(json!({"labels": {"a": "b"}})),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        w.app.get_json(&drill(&detect), &dev).await["labels"],
        Value::Null
    );

    // Named: the detect action by its own label, the mitigate one by the alert's.
    let (status, named) = w
        .send(
            &dev,
            "PUT",
            &drill(&detect),
            None,
            Some(json!({"labels": {"coe_action": detect}})),
        )
        .await;
    assert_eq!(status, 200, "{named}");
    assert_eq!(named["labels"]["coe_action"], detect.as_str());
    let alert = json!({"alertname": "ConfigDrift", "service": "payments"});
    let (status, _) = w
        .send(
            &dev,
            "PUT",
            &drill(&mitigate),
            None,
            Some(json!({"labels": alert})),
        )
        .await;
    assert_eq!(status, 200);
    // A drill asked for before the fix is done is refused.
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 409, "{body}");
    done_and_verified(&w, &dev, &detect).await;
    done_and_verified(&w, &dev, &mitigate).await;

    // A month on, nothing is asked (the default is 90 days after the verification);
    // past 90 days, dev@ is asked for a drill of each, once, however many sweeps run.
    let now = Utc::now();
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now + Duration::days(30));
    assert!(drill_emails(&w).is_empty(), "{:?}", drill_emails(&w));
    let opened_at = now + Duration::days(91);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), opened_at);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), opened_at + Duration::hours(1));
    let asked = drill_emails(&w);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked
            .iter()
            .all(|(to, s)| to == "dev@example.com" && s.contains("Prove the fix in a drill")),
        "{asked:?}"
    );
    assert_eq!(rechecks(&w, &detect), ["waiting"]);
    assert_eq!(rechecks(&w, &mitigate), ["waiting"]);
    {
        // "My work" says whose move it is.
        let cookie = crate::pages::sign_in(&w.app, "dev@example.com").await;
        let home = crate::pages::get_page(&w.app, "/", Some(&cookie))
            .await
            .text()
            .await
            .expect("home");
        let moves = crate::html::text_of(&home, "your-move");
        assert!(
            moves.contains("Prove Alert on config drift in a drill: its alert by "),
            "{moves}"
        );
    }
    let mail = crate::eventually::eventually_async(
        std::time::Duration::from_secs(60),
        "the drill's request reaches dev@",
        || async {
            let got = smtp.to("dev@example.com");
            got.into_iter()
                .find(|m| {
                    m.subject.contains("Alert on config drift") && m.subject.contains("drill")
                })
                .ok_or("not yet")
        },
    )
    .await;
    assert!(
        mail.text.contains(&format!("coe_action={detect}")),
        "{}",
        mail.text
    );
    assert!(mail.text.contains("coe_drill"), "{}", mail.text);

    // A drill's alert of another action proves nothing, nor does a real outage's alert
    // (no `coe_drill`) that carries the labels; the drill's alert, whose drill started
    // 3 minutes before it fired, proves the detect action by itself and asks for no
    // COE although it is a sev1.
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    let fired = Utc::now() - Duration::minutes(1);
    let post = |body: Value| {
        let (app, ingest) = (&w.app, ingest.clone());
        async move {
            let res = app.post_json("/api/v1/events", Some(&ingest), &body).await;
            let status = res.status().as_u16();
            (status, crate::helpers::json(res).await)
        }
    };
    let (status, body) = post(json!({"dedup_key": "other-drill", "title": "Another alert",
        "severity": "sev1", "started_at": fired.to_rfc3339(),
        "labels": {"coe_action": "not-this-one", "coe_drill": "true"}}))
    .await;
    assert!(status == 200 || status == 202, "{status}: {body}");
    assert_eq!(rechecks(&w, &detect), ["waiting"]);
    let (status, body) = post(json!({"dedup_key": "real-drift", "title": "Real drift",
        "severity": "sev4", "started_at": fired.to_rfc3339(),
        "labels": {"coe_action": detect}}))
    .await;
    assert!(status == 200 || status == 202, "{status}: {body}");
    assert_eq!(
        rechecks(&w, &detect),
        ["waiting"],
        "a real outage is no drill"
    );
    let (status, body) = post(
        json!({"dedup_key": "config-drift-drill", "title": "Config drift",
        "severity": "sev1", "started_at": fired.to_rfc3339(),
        "labels": {"coe_action": detect,
                   "coe_drill": (fired - Duration::minutes(3)).to_rfc3339()}}),
    )
    .await;
    assert!(status == 200 || status == 202, "{status}: {body}");
    assert_eq!(rechecks(&w, &detect), ["proven"]);
    // The mitigate action's re-check waits still: the alert named another action.
    assert_eq!(rechecks(&w, &mitigate), ["waiting"]);
    let view = w.app.get_json(&drill(&detect), &dev).await;
    assert_eq!(view["rechecks"][0]["detected_seconds"], 180, "{view}");
    assert!(view["rechecks"][0]["event_id"].is_string(), "{view}");
    let incidents = w.app.get_json("/api/v1/incidents", &admin).await;
    let drill_incident = incidents["incidents"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["title"] == "Config drift").cloned())
        .expect("the drill's incident");
    assert_eq!(drill_incident["needs_coe"], false, "{drill_incident}");
    let proven = drill_emails(&w);
    assert!(
        proven
            .iter()
            .any(|(to, s)| to == "dev@example.com"
                && s.contains("Proven in a drill, detected in 3 min")),
        "{proven:?}"
    );

    // Its day passed with no alarm: the mitigate action's re-check is missed, and the
    // COE's reviewer is asked.
    crate::mechanism::sweep_at(&w.app, &smtp.url(), opened_at + Duration::days(15));
    assert_eq!(rechecks(&w, &mitigate), ["missed"]);
    {
        // "My work" says whose move it is.
        let cookie = crate::pages::sign_in(&w.app, "reviewer@example.com").await;
        let home = crate::pages::get_page(&w.app, "/", Some(&cookie))
            .await
            .text()
            .await
            .expect("home");
        let moves = crate::html::text_of(&home, "your-move");
        assert!(
            moves.contains("No drill proved Roll back a bad config by itself"),
            "{moves}"
        );
    }
    let missed: Vec<_> = drill_emails(&w)
        .into_iter()
        .filter(|(_, s)| s.contains("No drill proved"))
        .collect();
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert_eq!(missed[0].0, "reviewer@example.com");

    // Never the owner; the reviewer's note is required; an unknown decision is none.
    let decide = |what: &str| format!("{}/{what}", drill(&mitigate));
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &decide("confirm"),
            None,
            Some(json!({"note": "fine"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = w
        .send(&w.reviewer, "POST", &decide("reopen"), None, None)
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("note"), "{body}");
    let (status, _) = w
        .send(&w.reviewer, "POST", &decide("maybe"), None, None)
        .await;
    assert_eq!(status, 404);
    // Nothing to decide on the proven one.
    let (status, _) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{}/confirm", drill(&detect)),
            None,
            Some(json!({"note": "x"})),
        )
        .await;
    assert_eq!(status, 409);

    // The reviewer reopens it: open again, unverified, its owner told why.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &decide("reopen"),
            None,
            Some(json!({"note": "Nobody ran the drill; run it with the next game day"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "reopened");
    let action = w
        .app
        .get_json(&format!("/api/v1/actions/{mitigate}"), &admin)
        .await;
    assert_eq!(action["state"], "open", "{action}");
    assert_eq!(action["verified_at"], Value::Null, "{action}");
    let steps: Vec<&str> = action["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["step"].as_str())
        .collect();
    for step in [
        "drill_alarm",
        "drill_waiting",
        "drill_missed",
        "reopen",
        "drill_reopened",
    ] {
        assert!(steps.contains(&step), "{step}: {steps:?}");
    }
    assert!(
        drill_emails(&w)
            .iter()
            .any(|(to, s)| to == "dev@example.com" && s.contains("Reopened after a missed drill")),
        "{:?}",
        drill_emails(&w)
    );

    // Asked for on request: a second re-check of the proven fix; one at a time; its day
    // passes, and the reviewer confirms the fix stands.
    let (status, opened) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 201, "{opened}");
    assert_eq!(opened["state"], "waiting");
    let (status, _) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 409, "one open at a time");
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now + Duration::days(16));
    assert_eq!(rechecks(&w, &detect), ["proven", "missed"]);
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{}/confirm", drill(&detect)),
            None,
            Some(json!({"note": "Proven last quarter; the rule has not changed since"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(rechecks(&w, &detect), ["proven", "confirmed"]);
    let action = w
        .app
        .get_json(&format!("/api/v1/actions/{detect}"), &admin)
        .await;
    assert_eq!(
        action["state"], "done",
        "confirmed, it stays done: {action}"
    );

    // A missed re-check proven late by a drill's alert: the owner and the reviewer,
    // who was asked to decide, are told.
    let (status, _) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 201);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now + Duration::days(16));
    assert_eq!(rechecks(&w, &detect), ["proven", "confirmed", "missed"]);
    let (status, body) = post(
        json!({"dedup_key": "config-drift-late", "title": "Config drift, late drill",
        "severity": "sev2", "started_at": Utc::now().to_rfc3339(),
        "labels": {"coe_action": detect, "coe_drill": "true"}}),
    )
    .await;
    assert!(status == 200 || status == 202, "{status}: {body}");
    assert_eq!(rechecks(&w, &detect), ["proven", "confirmed", "proven"]);
    let told: Vec<String> = drill_emails(&w)
        .into_iter()
        .filter(|(_, s)| s == "[coe] Proven in a drill: Alert on config drift")
        .map(|(to, _)| to)
        .collect();
    assert_eq!(
        told,
        ["dev@example.com", "reviewer@example.com"],
        "{told:?}"
    );

    // Reopened by hand while a re-check waits: it is withdrawn, nothing left to prove.
    let (status, _) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 201);
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{detect}/reopen"),
            None,
            Some(json!({"note": "The rule was deleted by a cleanup"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        rechecks(&w, &detect),
        ["proven", "confirmed", "proven", "withdrawn"]
    );
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("{}/recheck", drill(&detect)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 409, "not done: {body}");

    // The COE's reviewer owns an action: they may not decide on its missed drill; an
    // admin does, and is the one asked.
    for (path, body) in [
        (
            "/api/v1/people/dana@example.com",
            json!({"name": "Dana Okafor"}),
        ),
        (
            "/api/v1/people/dana@example.com/admin",
            json!({"is_admin": true}),
        ),
    ] {
        let (status, answer) = w.send(&admin, "PUT", path, None, Some(body)).await;
        assert_eq!(status, 200, "{answer}");
    }
    let dana = crate::actions::person_token_with_role(
        &w.app,
        "dana",
        coe::domain::Role::Admin,
        "dana@example.com",
    );
    let own = action_of_kind_for(
        &w,
        &coe_id,
        "Page on a stuck queue",
        "mitigate",
        "reviewer@example.com",
    )
    .await;
    let (status, _) = w
        .send(
            &w.reviewer,
            "PUT",
            &drill(&own),
            None,
            Some(json!({"labels": {"alertname": "StuckQueue"}})),
        )
        .await;
    assert_eq!(status, 200);
    let done = json!({"note": "Paging added", "evidence_url": "https://example.com/paging"});
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/actions/{own}/complete"),
            None,
            Some(done),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{}/recheck", drill(&own)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 201);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now + Duration::days(16));
    assert_eq!(rechecks(&w, &own), ["missed"]);
    let asked: Vec<String> = drill_emails(&w)
        .into_iter()
        .filter(|(_, s)| s.contains("No drill proved \"Page on a stuck queue\""))
        .map(|(to, _)| to)
        .collect();
    assert_eq!(asked, ["dana@example.com"], "{asked:?}");
    let note = Some(json!({"note": "The paging was tested by hand last week"}));
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{}/confirm", drill(&own)),
            None,
            note.clone(),
        )
        .await;
    assert_eq!(status, 403, "the reviewer owns it: {body}");
    let (status, body) = w
        .send(
            &dana,
            "POST",
            &format!("{}/confirm", drill(&own)),
            None,
            note,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decided_by"], "dana@example.com");

    // Asked again, then its kind changes to prevent: the re-check is withdrawn at once.
    let (status, _) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("{}/recheck", drill(&own)),
            None,
            None,
        )
        .await;
    assert_eq!(status, 201);
    let (status, body) = w
        .send(
            &w.reviewer,
            "PATCH",
            &format!("/api/v1/actions/{own}"),
            None,
            Some(json!({"kind": "prevent"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(rechecks(&w, &own), ["confirmed", "withdrawn"]);

    // The pages the inspection uses, and /metrics.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let since = (now - Duration::days(1)).date_naive();
    let agenda = crate::pages::get_page(
        &w.app,
        &format!("/review-meeting?since={since}"),
        Some(&cookie),
    )
    .await
    .text()
    .await
    .expect("agenda");
    let drills = crate::html::text_of(&agenda, "drills");
    assert!(
        drills.contains("Fixes proven in a drill (2 since then; 0 missed)"),
        "{drills}"
    );
    assert!(drills.contains("Alert on config drift"), "{drills}");
    assert!(drills.contains("detected in 3 min"), "{drills}");
    let dashboard = crate::pages::get_page(&w.app, "/dashboard", Some(&cookie))
        .await
        .text()
        .await
        .expect("dashboard");
    let figures = crate::html::text_of(&dashboard, "drills");
    // Proven twice (one late) of five (the withdrawn one left out); one drill did not
    // say when it started.
    assert!(figures.contains("2 of 5 re-checks"), "{figures}");
    assert!(figures.contains("median of 3 min"), "{figures}");
    assert!(
        figures.contains("1 drill did not say when it started"),
        "{figures}"
    );
    assert!(figures.contains("1 missed and reopened"), "{figures}");
    assert!(
        figures.contains("2 missed; the fix was confirmed to stand"),
        "{figures}"
    );
    let page = crate::pages::get_page(&w.app, &format!("/actions/{detect}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("action page");
    let section = crate::html::text_of(&page, "drill");
    assert!(
        section.contains(&format!("coe_action={detect}")),
        "{section}"
    );
    assert!(section.contains("detected in 3 min"), "{section}");
    let metrics = w
        .app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("metrics");
    for (state, n) in [
        ("proven", 2),
        ("confirmed", 2),
        ("reopened", 1),
        ("withdrawn", 2),
        ("waiting", 0),
    ] {
        let line = format!("coe_drill_rechecks{{state=\"{state}\"}} {n}");
        assert!(metrics.contains(&line), "{line}: {metrics}");
    }
}

/// In a real browser, with a real Alertmanager: dev@ names the alert that proves a
/// detect action and asks for a drill on its page; the drill's alert, annotated with
/// when the drill started, proves it; the action's page, the agenda and the dashboard
/// say so (screenshots `drill-asked`, `drill-proven`, `agenda-drills`,
/// `dashboard-drills`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_an_owner_asks_for_a_drill_and_a_real_alertmanagers_alert_proves_the_fix() {
    use crate::webdriver::Browser;
    let (w, admin) = crate::attacks::review_world_with(|_| {}).await;
    let (coe_id, _) = crate::attacks::approved_sev1(&w).await;
    let detect = action_of_kind(&w, &coe_id, "Alert on config drift", "detect").await;
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    done_and_verified(&w, &dev, &detect).await;

    let browser = Browser::start().await;
    crate::browser::sign_in_to(
        &browser,
        &w.app,
        "dev@example.com",
        &format!("/actions/{detect}"),
    )
    .await;
    browser.wait_for_text("#drill-h", "Proven in a drill").await;
    browser
        .eval("document.getElementById('drill-alarm').open = true")
        .await;
    browser
        .type_into("#drill-labels", &format!("coe_action={detect}"))
        .await;
    browser
        .click_to_load(&format!("button[formaction='/actions/{detect}/drill']"))
        .await;
    let section = browser
        .wait_for_text("#drill", "The alert that proves it carries")
        .await;
    assert!(
        section.contains(&format!("coe_action={detect}")),
        "{section}"
    );
    browser
        .click_to_load(&format!(
            "button[formaction='/actions/{detect}/drill-recheck']"
        ))
        .await;
    let banner = browser
        .wait_for_text("#drill-open-h", "Prove the fix in a drill by")
        .await;
    assert!(
        banner.contains("dev@example.com's move"),
        "whose move: {banner}"
    );
    browser.screenshot("drill-asked").await;

    // The drill: its alert fires in Alertmanager, annotated with when it started.
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    let am = crate::alertmanager::Alertmanager::start(&w.app, &ingest);
    let fired = Utc::now() - Duration::minutes(1);
    let alert = json!({
        "labels": {"alertname": "ConfigDrift", "severity": "critical", "service": "payments",
                   "coe_action": detect},
        "annotations": {"summary": "Config drift on payments",
                        "coe_drill": (fired - Duration::minutes(4)).to_rfc3339()},
        "startsAt": fired.to_rfc3339(),
    });
    am.post_alert(&w.app.client, &alert).await;
    crate::eventually::eventually_async(
        std::time::Duration::from_secs(60),
        "the drill's alert proves the fix",
        || async { rechecks(&w, &detect) == ["proven"] },
    )
    .await;
    let incidents = w.app.get_json("/api/v1/incidents", &admin).await;
    let drill_incident = incidents["incidents"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|i| i["title"] == "Config drift on payments")
                .cloned()
        })
        .expect("the drill's incident");
    assert_eq!(
        drill_incident["needs_coe"], false,
        "a drill asks for no COE: {drill_incident}"
    );
    // The drill ends: Alertmanager sends the alert resolved; the incident resolves and
    // still asks for no COE.
    let mut resolved = alert.clone();
    resolved["endsAt"] = json!(Utc::now().to_rfc3339());
    am.post_alert(&w.app.client, &resolved).await;
    let drill_incident = crate::eventually::eventually_async(
        std::time::Duration::from_secs(60),
        "the drill's alert resolved",
        || async {
            let list = w.app.get_json("/api/v1/incidents", &admin).await;
            list["incidents"].as_array().and_then(|l| {
                l.iter()
                    .find(|i| i["title"] == "Config drift on payments" && i["state"] == "resolved")
                    .cloned()
            })
        },
    )
    .await;
    assert_eq!(
        drill_incident["needs_coe"], false,
        "a drill's resolution asks for no COE either: {drill_incident}"
    );

    browser
        .goto(&w.app.url(&format!("/actions/{detect}")))
        .await;
    let section = browser.wait_for_text("#drill", "detected in 4 min").await;
    assert!(section.contains("proven: the alarm fired"), "{section}");
    browser
        .eval("document.getElementById('drill').scrollIntoView()")
        .await;
    browser.screenshot("drill-proven").await;

    let since = (Utc::now() - Duration::days(7)).date_naive();
    browser
        .goto(&w.app.url(&format!("/review-meeting?since={since}")))
        .await;
    let agenda = browser
        .wait_for_text("#drills", "Fixes proven in a drill (1 since then")
        .await;
    assert!(agenda.contains("Alert on config drift"), "{agenda}");
    browser
        .eval("document.getElementById('drills').scrollIntoView()")
        .await;
    browser.screenshot("agenda-drills").await;

    browser.goto(&w.app.url("/dashboard")).await;
    let figures = browser.wait_for_text("#drills", "1 of 1 re-check").await;
    assert!(figures.contains("median of 4 min"), "{figures}");
    browser
        .eval("document.getElementById('drills').scrollIntoView()")
        .await;
    browser.screenshot("dashboard-drills").await;
}
