//! Follow-through no one else enforces (issue 68): targets by priority and severity.

use chrono::{Duration, NaiveDate, Utc};
use coe::db::schema::corrective_actions;
use coe::domain::action::{Priority, Target};
use coe::domain::Severity;
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::actions::World;

/// High within 28 days (14 on a sev1), medium 56, low 90.
pub(crate) fn targets(settings: &mut coe::config::Settings) {
    let t = |priority, severity, days| Target {
        priority,
        severity,
        days,
    };
    settings.actions.targets = vec![
        t(Priority::High, None, 28),
        t(Priority::High, Some(Severity::Sev1), 14),
        t(Priority::Medium, None, 56),
        t(Priority::Low, None, 90),
    ];
}

fn today() -> NaiveDate {
    Utc::now().date_naive()
}

fn action_body(title: &str, priority: &str, due: Option<NaiveDate>) -> Value {
    let mut body = json!({
        "title": title, "owner": "dev@example.com", "priority": priority, "kind": "prevent",
        "success_criteria": "A bad config fails CI",
    });
    if let Some(due) = due {
        body["due_date"] = json!(due);
    }
    body
}

fn action_count(w: &World) -> i64 {
    let mut conn = w.app.pool.get().expect("conn");
    corrective_actions::table
        .count()
        .get_result(&mut conn)
        .expect("count")
}

/// Sets an action's creation, target and (when closed) closing days, as a quarter
/// would have left them.
fn date(w: &World, id: &str, created: NaiveDate, target: NaiveDate, closed: Option<NaiveDate>) {
    let mut conn = w.app.pool.get().expect("conn");
    let noon = |d: NaiveDate| d.and_hms_opt(12, 0, 0).expect("noon");
    diesel::update(corrective_actions::table.find(id))
        .set((
            corrective_actions::created_at.eq(noon(created)),
            corrective_actions::target_date.eq(Some(target)),
            corrective_actions::closed_at.eq(closed.map(noon)),
        ))
        .execute(&mut conn)
        .expect("dated");
}

#[tokio::test]
async fn targets_propose_due_dates_ask_a_reason_past_them_and_a_quarter_shows_them_met_and_missed()
{
    let (w, admin) = crate::attacks::review_world_with(targets).await;
    let (id, _) = w.written_coe().await;
    let add = format!("/api/v1/coes/{id}/actions");

    // No date given: the priority's target is the due date.
    let (status, high) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body("Validate config in CI", "high", None)),
        )
        .await;
    assert_eq!(status, 201, "{high}");
    let in_28 = today() + Duration::days(28);
    assert_eq!(high["due_date"], json!(in_28), "{high}");
    assert_eq!(high["target_date"], json!(in_28), "{high}");
    assert_eq!(high["past_target"], false, "{high}");
    let (status, low) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body("Tidy the runbook", "low", None)),
        )
        .await;
    assert_eq!(status, 201, "{low}");
    assert_eq!(
        low["due_date"],
        json!(today() + Duration::days(90)),
        "{low}"
    );

    // A date past the target needs a reason; refused, nothing is written.
    let before = action_count(&w);
    let late = today() + Duration::days(40);
    let (status, refused) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body("Shard the queue", "high", Some(late))),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let problem = refused.to_string();
    assert!(
        problem.contains("past_target_reason") && problem.contains("28 days"),
        "the answer names the field and the target: {refused}"
    );
    assert_eq!(action_count(&w), before, "nothing written");
    let mut body = action_body("Shard the queue", "high", Some(late));
    body["past_target_reason"] = json!("Needs the new cluster, delivered in five weeks");
    let (status, sharded) = w.send(&w.owner, "POST", &add, None, Some(body)).await;
    assert_eq!(status, 201, "{sharded}");
    assert_eq!(sharded["past_target"], true, "{sharded}");
    assert_eq!(
        sharded["past_target_reason"],
        "Needs the new cluster, delivered in five weeks"
    );
    // A date within the target takes no reason (one given is not kept).
    let mut body = action_body("Alert on lag", "medium", Some(today() + Duration::days(20)));
    body["past_target_reason"] = json!("not needed");
    let (status, within) = w.send(&w.owner, "POST", &add, None, Some(body)).await;
    assert_eq!(status, 201, "{within}");
    assert_eq!(within["past_target_reason"], Value::Null, "{within}");
    assert_eq!(within["target_date"], json!(today() + Duration::days(56)));

    // A sev1 is tighter: high within 14 days.
    let v = w.coe(&id).await["version"].as_i64().expect("version");
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
    let (status, urgent) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body("Fail over by script", "high", None)),
        )
        .await;
    assert_eq!(status, 201, "{urgent}");
    assert_eq!(urgent["due_date"], json!(today() + Duration::days(14)));

    // A new priority, a new target (from the day it was added); a due date moved past
    // it keeps the move's reason.
    let low_id = low["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/actions/{low_id}");
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &path,
            None,
            Some(json!({"priority": "high"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let now_high = w.app.get_json(&path, &admin).await;
    assert_eq!(
        now_high["target_date"],
        json!(today() + Duration::days(14)),
        "{now_high}"
    );
    assert_eq!(
        now_high["past_target"], true,
        "90 days is past 14: {now_high}"
    );
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &path,
            None,
            Some(json!({"due_date": today() + Duration::days(30), "reason": "Waits for the vendor's fix"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let moved = w.app.get_json(&path, &admin).await;
    assert_eq!(
        moved["past_target_reason"], "Waits for the vendor's fix",
        "{moved}"
    );

    // A quarter: one closed within its target, one after it, one open long past it.
    let day = |n: i64| today() - Duration::days(90) + Duration::days(n);
    let id_of = |v: &Value| v["id"].as_str().expect("id").to_owned();
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    for (action, done) in [(&high, true), (&within, true), (&sharded, false)] {
        if done {
            let (status, body) = w
                .send(
                    &dev,
                    "POST",
                    &format!("/api/v1/actions/{}/complete", id_of(action)),
                    None,
                    Some(json!({"note": "Shipped and drilled", "evidence_url": "https://grafana.example.com/d/1"})),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    }
    // Within: added day 0, target day 28, done day 20. After: added day 10, target
    // day 66, done day 70. Open: added day 5, target day 33.
    date(&w, &id_of(&high), day(0), day(28), Some(day(20)));
    date(&w, &id_of(&within), day(10), day(66), Some(day(70)));
    date(&w, &id_of(&sharded), day(5), day(33), None);
    let from = day(0);
    let stats = w
        .app
        .get_json(&format!("/api/v1/stats?from={from}&to={}", today()), &admin)
        .await;
    let closed = &stats["coverage"]["overall"]["actions_closed"];
    assert_eq!(closed["within_target"], 1, "{closed}");
    assert_eq!(closed["past_target"], 1, "{closed}");
    // dev@ has no team: counted under none.
    assert_eq!(
        stats["coverage"]["by_team"]["(none)"]["actions_closed"]["past_target"], 1,
        "{stats}"
    );
    // Open past its target: the sharding (target day 33), and the reprioritised one
    // (its target, 14 days from today, is not yet past).
    assert_eq!(stats["actions_past_target"], 1, "{stats}");

    let metrics = w
        .app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("text");
    assert!(metrics.contains("coe_actions_past_target 1"), "{metrics}");

    // The pages the inspection uses.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let agenda = crate::pages::get_page(
        &w.app,
        &format!("/review-meeting?since={from}"),
        Some(&cookie),
    )
    .await
    .text()
    .await
    .expect("agenda");
    assert!(agenda.contains("Past their priority"), "{agenda}");
    assert!(agenda.contains("Shard the queue"), "listed past its target");
    assert!(agenda.contains("Needs the new cluster"), "with its reason");
    let dashboard = crate::pages::get_page(
        &w.app,
        &format!("/dashboard?from={from}&to={}", today()),
        Some(&cookie),
    )
    .await
    .text()
    .await
    .expect("dashboard");
    assert!(
        dashboard.contains("Open past their target (1)"),
        "{dashboard}"
    );
    assert!(
        dashboard.contains("1 of 2"),
        "closed within target, of those with one"
    );
    // The COE's form says what the targets are.
    let page = crate::pages::get_page(&w.app, &format!("/coes/{id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("coe page");
    assert!(page.contains("high priority within 14 days"), "{page}");
}

/// The risk requests emailed, as (recipient, subject) of the outbox.
fn risk_emails(w: &World) -> Vec<(String, String)> {
    use coe::db::schema::outbox_emails;
    let mut conn = w.app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq("risk_acceptance"))
        .order(outbox_emails::created_at.asc())
        .select((outbox_emails::recipient, outbox_emails::subject))
        .load(&mut conn)
        .expect("emails")
}

#[tokio::test]
async fn a_risk_accepted_by_the_manager_is_not_overdue_until_it_ends_then_escalates_as_usual() {
    use crate::email::SmtpServer;
    // The sweeps below (`coe sweep --at`) deliver every email, to the SMTP server.
    let (w, admin) = crate::attacks::review_world_with(|s| s.reminders.enabled = false).await;
    let smtp = SmtpServer::start();
    let (status, body) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/dev@example.com",
            None,
            Some(json!({"team": "payments", "manager_email": "mgr@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // A sev1, approved with its bar raiser (di@); dev@'s action, overdue 3 days.
    let (_, action) = crate::attacks::approved_sev1(&w).await;
    {
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&action))
            .set(corrective_actions::due_date.eq(today() - Duration::days(3)))
            .execute(&mut conn)
            .expect("overdue");
    }
    let path = format!("/api/v1/actions/{action}");
    assert_eq!(w.app.get_json(&path, &admin).await["overdue"], true);
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    let mgr = crate::actions::person_token(&w.app, "mgr", "mgr@example.com");
    let di = crate::actions::person_token(&w.app, "di-risk", "di@example.com");
    let ask = format!("{path}/risk");
    let until = today() + Duration::days(10);

    // Bad requests: each field named, nothing asked.
    let (status, body) = w.send(&dev, "POST", &ask, None, Some(json!({}))).await;
    assert_eq!(status, 422, "{body}");
    for field in ["until", "interim_control", "remaining_risk"] {
        assert!(body.to_string().contains(field), "{field}: {body}");
    }
    let full = |until: NaiveDate| {
        json!({"until": until, "interim_control": "A manual check of the config at each deploy",
               "remaining_risk": "A bad config still reaches one region before the check"})
    };
    let (status, body) = w.send(&dev, "POST", &ask, None, Some(full(today()))).await;
    assert_eq!(status, 422, "today is not in the future: {body}");
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &ask,
            None,
            Some(full(today() + Duration::days(400))),
        )
        .await;
    assert_eq!(status, 422, "past risk_max_days: {body}");
    assert!(body.to_string().contains("180 days"), "{body}");
    let (status, body) = w
        .send(&dev, "POST", &ask, None, Some(json!({"until": 5})))
        .await;
    assert_eq!(status, 422, "a number is not a date: {body}");
    assert!(body.to_string().contains("until"), "{body}");
    let malformed = w.app.post_raw(&ask, Some(&dev), "{\"until\": ").await;
    assert_eq!(malformed.status(), 400);
    let (status, _) = w
        .send(
            &dev,
            "POST",
            "/api/v1/actions/0193b0c0-0000-7000-8000-000000000000/risk",
            None,
            Some(full(until)),
        )
        .await;
    assert_eq!(status, 404);
    assert!(risk_emails(&w).is_empty(), "nothing asked yet");

    // Asked: the manager and the bar raiser are emailed.
    let (status, asked) = w.send(&dev, "POST", &ask, None, Some(full(until))).await;
    assert_eq!(status, 201, "{asked}");
    assert_eq!(asked["state"], "asked");
    let (status, body) = w.send(&dev, "POST", &ask, None, Some(full(until))).await;
    assert_eq!(status, 409, "one request waits at a time: {body}");
    let mut told: Vec<String> = risk_emails(&w).into_iter().map(|(to, _)| to).collect();
    told.sort();
    assert_eq!(told, ["di@example.com", "mgr@example.com"], "{told:?}");

    // Never the owner, nor the COE's owner (not a decider); a refusal needs its note.
    let accept = format!("{path}/risk/accept");
    let (status, body) = w.send(&dev, "POST", &accept, None, None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("their own"), "{body}");
    let (status, body) = w.send(&w.owner, "POST", &accept, None, None).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = w
        .send(&di, "POST", &format!("{path}/risk/refuse"), None, None)
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = w
        .send(&di, "POST", &format!("{path}/risk/maybe"), None, None)
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        w.app.get_json(&path, &admin).await["overdue"],
        true,
        "nothing decided"
    );

    // The bar raiser refuses: nothing moves, the owner is told why; asked again.
    let (status, refused) = w
        .send(
            &di,
            "POST",
            &format!("{path}/risk/refuse"),
            None,
            Some(json!({"note": "Do it now: the config check is a day's work"})),
        )
        .await;
    assert_eq!(status, 200, "{refused}");
    assert_eq!(refused["state"], "refused");
    let still = w.app.get_json(&path, &admin).await;
    assert_eq!(
        (still["overdue"].clone(), still["risk_accepted"].clone()),
        (json!(true), json!(false)),
        "{still}"
    );
    let (to, subject) = risk_emails(&w).last().cloned().expect("told");
    assert_eq!(to, "dev@example.com");
    assert!(subject.contains("Risk not accepted"), "{subject}");
    let (status, asked) = w.send(&dev, "POST", &ask, None, Some(full(until))).await;
    assert_eq!(status, 201, "asked again once refused: {asked}");

    // The manager accepts: due on that day, not overdue, marked; the owner is told.
    let (status, decided) = w
        .send(
            &mgr,
            "POST",
            &accept,
            None,
            Some(json!({"note": "Fine until the migration lands"})),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["state"], "accepted");
    let now = w.app.get_json(&path, &admin).await;
    assert_eq!(now["overdue"], false, "{now}");
    assert_eq!(now["risk_accepted"], true, "{now}");
    assert_eq!(now["due_date"], json!(until), "{now}");
    let last_move = now["due_date_history"]
        .as_array()
        .and_then(|h| h.last())
        .cloned()
        .unwrap_or_default();
    assert!(
        last_move["reason"].as_str().is_some_and(
            |r| r.starts_with(&format!("Risk accepted until {until} by mgr@example.com"))
        ),
        "{last_move}"
    );
    let steps: Vec<&str> = now["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["step"].as_str())
        .collect();
    assert!(steps.ends_with(&["risk_accepted"]), "{steps:?}");
    assert!(steps.contains(&"risk_asked"), "{steps:?}");
    assert_eq!(now["risk_acceptances"][1]["decided_by"], "mgr@example.com");
    let emails = risk_emails(&w);
    let (to, subject) = emails.last().expect("told");
    assert_eq!(to, "dev@example.com");
    assert!(subject.contains("Risk accepted until"), "{subject}");
    let (status, body) = w.send(&mgr, "POST", &accept, None, None).await;
    assert_eq!(status, 409, "nothing waits any more: {body}");

    // The pages the inspection uses show it apart.
    let cookie = crate::pages::sign_in(&w.app, "mgr@example.com").await;
    let board = crate::pages::get_page(&w.app, "/board", Some(&cookie))
        .await
        .text()
        .await
        .expect("board");
    assert!(board.contains("Risk accepted for now (1)"), "{board}");
    let agenda = crate::pages::get_page(&w.app, "/review-meeting", Some(&cookie))
        .await
        .text()
        .await
        .expect("agenda");
    assert!(
        agenda.contains("Validate config in CI"),
        "ending within two weeks: {agenda}"
    );
    assert!(
        agenda.contains(&format!("accepted until <strong>{until}</strong>")),
        "{agenda}"
    );

    // A sweep while it lasts escalates nothing; once it has ended a week, the
    // manager hears of it as of any action overdue a week.
    let at = |days: i64| Utc::now() + Duration::days(days);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), at(5));
    crate::mechanism::sweep_at(&w.app, &smtp.url(), at(17));
    let escalated = crate::eventually::eventually_async(
        std::time::Duration::from_secs(30),
        "the escalation to the manager",
        || async {
            let got = smtp.to("mgr@example.com");
            got.iter()
                .find(|m| m.subject.starts_with("[coe] Escalation"))
                .cloned()
        },
    )
    .await;
    assert!(
        escalated.text.contains("Validate config in CI"),
        "{}",
        escalated.text
    );
    assert!(
        escalated.subject.contains("overdue by 7 days"),
        "{}",
        escalated.subject
    );
    // The escalation counts from the day the acceptance ended: only the day-17
    // sweep's (the day-5 sweep, before it, sent none).
    let escalations = smtp
        .to("mgr@example.com")
        .into_iter()
        .filter(|m| m.subject.starts_with("[coe] Escalation"))
        .count();
    assert_eq!(escalations, 1);
}

#[tokio::test]
async fn outage_times_are_medians_and_90th_percentiles_with_the_missing_counted() {
    use coe::db::schema::coes;
    let (w, admin) = crate::attacks::review_world_with(|_| {}).await;
    // Five sev2 outages of payments, detected 3, 100, 5, 4 and 10 minutes after they
    // started; a sixth whose detection time nobody wrote.
    let start = Utc::now().naive_utc() - Duration::days(3);
    let mut ids = Vec::new();
    for minutes in [Some(3), Some(100), Some(5), Some(4), Some(10), None] {
        let (status, doc) = w
            .send(
                &w.owner,
                "POST",
                "/api/v1/coes",
                None,
                Some(json!({"title": "Payments down", "owner": "owner@example.com"})),
            )
            .await;
        assert_eq!(status, 201, "{doc}");
        let id = doc["id"].as_str().expect("id").to_owned();
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&id))
            .set((
                coes::severity.eq(2),
                coes::started_at.eq(Some(start)),
                coes::detected_at.eq(minutes.map(|m| start + Duration::minutes(m))),
                coes::mitigated_at.eq(Some(start + Duration::minutes(30))),
                coes::resolved_at.eq(Some(start + Duration::minutes(90))),
            ))
            .execute(&mut conn)
            .expect("timed");
        ids.push(id);
    }
    let stats = w.app.get_json("/api/v1/stats?team=payments", &admin).await;
    let measures = stats["outage_times"]["measures"]
        .as_array()
        .expect("measures");
    let of = |m: &str| {
        measures
            .iter()
            .find(|x| x["measure"] == m)
            .cloned()
            .expect("measure")
    };
    let detect = of("detect");
    assert_eq!(
        detect["by_severity"]["sev2"],
        json!({"count": 5, "missing": 1, "median": 5.0, "p90": 100.0}),
        "{detect}"
    );
    assert_eq!(detect["by_team"]["payments"]["count"], 5, "{detect}");
    let quarter = detect["by_quarter"].as_object().expect("quarters");
    assert_eq!(
        quarter
            .values()
            .map(|d| d["count"].as_u64().unwrap_or(0))
            .sum::<u64>(),
        5
    );
    assert_eq!(of("resolve")["overall"]["median"], 90.0);
    // None of them is approved: nothing measured to approval, nothing missing there.
    assert_eq!(
        of("approve")["overall"],
        json!({"count": 0, "missing": 0, "median": null, "p90": null})
    );

    // As histograms on /metrics: 3, 4 and 5 minutes within 300 s; 5 counted.
    let metrics = w
        .app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("metrics");
    assert!(
        metrics
            .contains(r#"coe_outage_duration_seconds_count{measure="detect",severity="sev2"} 5"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"coe_outage_duration_seconds_bucket{le="300.0",measure="detect",severity="sev2"} 3"#
        ) || metrics.contains(
            r#"coe_outage_duration_seconds_bucket{measure="detect",severity="sev2",le="300.0"} 3"#
        ),
        "{metrics}"
    );

    // On the dashboard, in words.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let page = crate::pages::get_page(&w.app, "/dashboard?team=payments", Some(&cookie))
        .await
        .text()
        .await
        .expect("dashboard");
    assert!(page.contains("How long outages took"), "{page}");
    assert!(page.contains("5 min / 1 h 40 min"), "{page}");
    assert!(page.contains("1 without times"), "{page}");
}

/// In a real browser: the manager accepts a risk on the action's page; the board,
/// the agenda and the dashboard show the targets, the acceptance and the times
/// (screenshots `risk-decision`, `risk-accepted`, `board-risk-accepted`,
/// `agenda-follow-through`, `dashboard-past-target`, `dashboard-follow-through`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_a_manager_accepts_a_risk_and_the_inspection_pages_show_the_follow_through() {
    use crate::webdriver::Browser;
    let (w, admin) = crate::attacks::review_world_with(targets).await;
    let (status, body) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/dev@example.com",
            None,
            Some(json!({"team": "payments", "manager_email": "mgr@example.com", "name": "Dev Patel"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (coe_id, action) = crate::attacks::approved_sev1(&w).await;
    let path = format!("/api/v1/actions/{action}");
    {
        use coe::db::schema::coes;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&action))
            .set((
                corrective_actions::due_date.eq(today() - Duration::days(3)),
                corrective_actions::target_date.eq(Some(today() - Duration::days(2))),
            ))
            .execute(&mut conn)
            .expect("overdue");
        // The outage's times, for the dashboard's distributions.
        let start = Utc::now().naive_utc() - Duration::days(2);
        diesel::update(coes::table.find(&coe_id))
            .set((
                coes::started_at.eq(Some(start)),
                coes::detected_at.eq(Some(start + Duration::minutes(12))),
                coes::mitigated_at.eq(Some(start + Duration::minutes(45))),
                coes::resolved_at.eq(Some(start + Duration::minutes(130))),
            ))
            .execute(&mut conn)
            .expect("timed");
    }
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    let until = today() + Duration::days(10);
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("{path}/risk"),
            None,
            Some(json!({"until": until, "interim_control": "A manual check of the config at each deploy",
                        "remaining_risk": "A bad config still reaches one region before the check"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let browser = Browser::start().await;
    crate::browser::sign_in_to(
        &browser,
        &w.app,
        "mgr@example.com",
        &format!("/actions/{action}"),
    )
    .await;
    let banner = browser.wait_for_text("#risk-h", "Your decision").await;
    assert!(banner.contains(&until.to_string()), "{banner}");
    browser.screenshot("risk-decision").await;
    browser
        .type_into("#decide-note", "Fine until the migration lands")
        .await;
    browser
        .click_to_load("button[name='decide.decision'][value='accept']")
        .await;
    let facts = browser.wait_for_text(".facts", "Risk accepted").await;
    assert!(facts.contains(&format!("until {until}")), "{facts}");
    assert!(
        !facts.contains("days overdue"),
        "not overdue while accepted: {facts}"
    );
    browser.screenshot("risk-accepted").await;

    browser.goto(&w.app.url("/board")).await;
    let accepted = browser
        .wait_for_text("#accepted-h", "Risk accepted for now")
        .await;
    assert!(accepted.contains("(1)"), "{accepted}");
    browser.screenshot("board-risk-accepted").await;

    let since = today() - Duration::days(30);
    browser
        .goto(&w.app.url(&format!("/review-meeting?since={since}")))
        .await;
    let targets = browser
        .wait_for_text("#targets", "Past their priority")
        .await;
    assert!(
        targets.contains("Validate config in CI"),
        "past its target: {targets}"
    );
    assert!(
        targets.contains("Risk acceptances ending in the next two weeks (1)"),
        "{targets}"
    );
    browser.screenshot("agenda-follow-through").await;

    browser.goto(&w.app.url("/dashboard")).await;
    browser
        .wait_for_text("#times-h", "How long outages took")
        .await;
    let times = browser.text("#times").await;
    assert!(times.contains("12 min / 12 min"), "{times}");
    let past = browser.text("#past-target").await;
    assert!(past.contains("(1)"), "{past}");
    browser
        .eval("document.getElementById('past-target').scrollIntoView()")
        .await;
    browser.screenshot("dashboard-past-target").await;
    browser
        .eval("document.getElementById('times').scrollIntoView()")
        .await;
    browser.screenshot("dashboard-follow-through").await;
}

#[tokio::test]
async fn an_outage_that_burned_its_error_budget_needs_a_coe_and_a_high_priority_action_to_prevent()
{
    use coe::db::schema::coes;
    let (w, admin) = crate::attacks::review_world_with(|s| {
        s.ownership.default_owner = Some("owner@example.com".into());
    })
    .await;
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    let post = |body: Value| {
        let (app, ingest) = (&w.app, ingest.clone());
        async move {
            let res = app.post_json("/api/v1/events", Some(&ingest), &body).await;
            let status = res.status().as_u16();
            (status, crate::helpers::json(res).await)
        }
    };
    // Wrong shares are refused, naming the field; nothing is stored.
    for wrong in [json!(-0.1), json!("a lot"), json!(1000)] {
        let (status, body) = post(json!({"dedup_key": "wrong", "severity": "sev4",
                                         "error_budget_burned": wrong}))
        .await;
        assert_eq!(status, 422, "{wrong}: {body}");
        assert!(body.to_string().contains("error_budget_burned"), "{body}");
    }
    // A sev4 below the policy: a COE anyway, for the 35% of the budget it burned.
    let (status, body) = post(
        json!({"dedup_key": "checkout-burn", "title": "Checkout slow",
        "service": "checkout", "severity": "sev4", "error_budget_burned": 0.35,
        "slo": "checkout-availability"}),
    )
    .await;
    assert!(status == 202 || status == 200, "{status}: {body}");
    // Another sev4 that burned 5%: below the share, no COE.
    let (status, _) = post(json!({"dedup_key": "search-blip", "title": "Search blip",
        "service": "search", "severity": "sev4", "labels": {"error_budget_burned": "5%"}}))
    .await;
    assert!(status == 202 || status == 200);
    let incidents = w.app.get_json("/api/v1/incidents", &admin).await;
    let by_title = |t: &str| {
        incidents["incidents"]
            .as_array()
            .and_then(|l| l.iter().find(|i| i["title"] == t).cloned())
            .unwrap_or_else(|| panic!("{t}: {incidents}"))
    };
    let burned = by_title("Checkout slow");
    assert_eq!(burned["needs_coe"], true, "{burned}");
    assert_eq!(burned["budget_burned"], 0.35);
    assert_eq!(burned["slo"], "checkout-availability");
    let blip = by_title("Search blip");
    assert_eq!(blip["needs_coe"], false, "{blip}");
    assert_eq!(blip["budget_burned"], 0.05, "a percentage read as a share");

    // Alertmanager (a real one), a burn-rate alert whose rule annotates the share.
    let am = crate::alertmanager::Alertmanager::start(&w.app, &ingest);
    let alert = json!({
        "labels": {"alertname": "CheckoutErrorBudgetBurn", "severity": "warning", "service": "checkout",
                   "sloth_slo": "checkout-requests-availability"},
        "annotations": {"summary": "Checkout burns its error budget", "error_budget_burned": "30%"},
        "startsAt": (Utc::now() - Duration::minutes(5)).to_rfc3339(),
    });
    am.post_alert(&w.app.client, &alert).await;
    let from_am = crate::eventually::eventually_async(
        std::time::Duration::from_secs(60),
        "the burn-rate alert's incident",
        || async {
            let list = w.app.get_json("/api/v1/incidents", &admin).await;
            list["incidents"].as_array().and_then(|l| {
                l.iter()
                    .find(|i| i["title"] == "Checkout burns its error budget")
                    .cloned()
            })
        },
    )
    .await;
    assert_eq!(from_am["budget_burned"], 0.3, "{from_am}");
    assert_eq!(from_am["slo"], "checkout-requests-availability");
    assert_eq!(
        from_am["needs_coe"], true,
        "a sev3 that burned 30%: {from_am}"
    );

    // Its COE, written up, is not submitted without a high-priority action to prevent.
    let incident = burned["id"].as_str().expect("id").to_owned();
    let coe_id: String = crate::eventually::eventually_async(
        std::time::Duration::from_secs(10),
        "the incident's draft",
        || async {
            let mut conn = w.app.pool.get().expect("conn");
            coes::table
                .filter(coes::incident_id.eq(&incident))
                .select(coes::id)
                .first::<String>(&mut conn)
                .optional()
                .expect("coe")
        },
    )
    .await;
    let v = w.coe(&coe_id).await["version"].as_i64().expect("version");
    w.write_up(&coe_id, v).await;
    let add = format!("/api/v1/coes/{coe_id}/actions");
    let (status, medium) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body(
                "Cache the catalogue",
                "medium",
                Some(today() + Duration::days(20)),
            )),
        )
        .await;
    assert_eq!(status, 201, "{medium}");
    let submit = format!("/api/v1/coes/{coe_id}/submit");
    let (status, refused) = w.send(&w.owner, "POST", &submit, None, None).await;
    assert!(status == 422 || status == 409, "{status}: {refused}");
    assert!(
        refused
            .to_string()
            .contains("burned 35% of the error budget of checkout-availability"),
        "{refused}"
    );
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &add,
            None,
            Some(action_body(
                "Shed load before the budget burns",
                "high",
                Some(today() + Duration::days(20)),
            )),
        )
        .await;
    assert_eq!(status, 201);
    let (status, doc) = w.send(&w.owner, "POST", &submit, None, None).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "in_review");

    // The agenda: checkout burned 65% this quarter, past the 20% share; search did not.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let agenda = crate::pages::get_page(&w.app, "/review-meeting", Some(&cookie))
        .await
        .text()
        .await
        .expect("agenda");
    assert!(
        agenda.contains("<strong>checkout</strong>: its 2 outages this quarter burned 65%"),
        "{agenda}"
    );
    assert!(!agenda.contains("<strong>search</strong>"), "{agenda}");
    // The incident's page says why it needs a COE.
    let page = crate::pages::get_page(
        &w.app,
        &format!("/incidents/{}", burned["id"].as_str().unwrap_or_default()),
        Some(&cookie),
    )
    .await
    .text()
    .await
    .expect("incident");
    assert!(
        page.contains("<strong>35%</strong> of the error budget of checkout-availability"),
        "{page}"
    );
}

/// What Python's `icalendar` (a real iCalendar library, as calendars read it) makes of
/// an invitation: its method, UID, sequence, start, status, organizer and attendees.
fn read_ics(ics: &str) -> Value {
    use std::io::Write;
    let script = r#"
import json, sys, icalendar
cal = icalendar.Calendar.from_ical(sys.stdin.read())
ev = [c for c in cal.walk() if c.name == "VEVENT"][0]
att = ev.get("ATTENDEE")
att = att if isinstance(att, list) else [att]
print(json.dumps({
  "method": str(cal.get("METHOD")),
  "uid": str(ev.get("UID")),
  "sequence": int(ev.get("SEQUENCE")),
  "start": ev.decoded("DTSTART").strftime("%Y-%m-%dT%H:%M:%SZ"),
  "end": ev.decoded("DTEND").strftime("%Y-%m-%dT%H:%M:%SZ"),
  "status": str(ev.get("STATUS")),
  "summary": str(ev.get("SUMMARY")),
  "url": str(ev.get("URL")),
  "organizer": str(ev.get("ORGANIZER")),
  "attendees": sorted(str(a) for a in att),
}))
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (scripts/setup installs icalendar)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(ics.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("read");
    assert!(
        out.status.success(),
        "icalendar refused it: {}\n{ics}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The review meeting emails queued for COE `coe`, as (recipient, subject, calendar).
fn meeting_emails(w: &World, sequence: u32) -> Vec<(String, String, String)> {
    use coe::db::schema::outbox_emails;
    let mut conn = w.app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq("review_meeting"))
        .filter(outbox_emails::dedup_key.like(format!("review_meeting:%:{sequence}:%")))
        .order(outbox_emails::recipient.asc())
        .select((
            outbox_emails::recipient,
            outbox_emails::subject,
            outbox_emails::calendar.assume_not_null(),
        ))
        .load(&mut conn)
        .expect("emails")
}

#[tokio::test]
async fn a_review_meeting_is_invited_moved_and_cancelled_as_calendars_read_it() {
    let (w, _) = crate::attacks::review_world_with(|s| {
        s.coe.review_slot = Some("thursday 15:00".into());
        s.coe.review_minutes = 45;
    })
    .await;
    // A draft has no meeting yet; a sev1 in review, with its bar raiser and dev@'s action.
    let (draft, _) = w.written_coe().await;
    let at = |days: i64| {
        (Utc::now() + Duration::days(days))
            .format("%Y-%m-%dT15:00")
            .to_string()
    };
    let (status, body) = w
        .send(
            &w.owner,
            "PUT",
            &format!("/api/v1/coes/{draft}/review-meeting"),
            None,
            Some(json!({"starts_at": at(3)})),
        )
        .await;
    assert_eq!(status, 409, "a draft: {body}");
    let (id, _) = crate::mechanism::submitted_sev1(&w).await;
    let path = format!("/api/v1/coes/{id}/review-meeting");
    assert!(
        meeting_emails(&w, 0).is_empty(),
        "nothing sent until someone chooses"
    );

    // Bad requests: named, nothing sent.
    for (body, field) in [
        (json!({}), "starts_at"),
        (json!({"starts_at": "2020-01-01T10:00"}), "starts_at"),
        (json!({"starts_at": "next week"}), "starts_at"),
        (json!({"starts_at": at(3), "minutes": 5}), "minutes"),
    ] {
        let (status, answer) = w
            .send(&w.owner, "PUT", &path, None, Some(body.clone()))
            .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(answer.to_string().contains(field), "{answer}");
    }
    let (status, _) = w
        .send(
            &w.stranger,
            "PUT",
            &path,
            None,
            Some(json!({"starts_at": at(3)})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = w.send(&w.owner, "DELETE", &path, None, None).await;
    assert_eq!(status, 409, "nothing to cancel yet");
    assert!(meeting_emails(&w, 0).is_empty());

    // Invited: each reader gets an email whose calendar says REQUEST.
    let (status, meeting) = w
        .send(
            &w.owner,
            "PUT",
            &path,
            None,
            Some(json!({"starts_at": at(3)})),
        )
        .await;
    assert_eq!(status, 200, "{meeting}");
    let mut attendees: Vec<String> = meeting["attendees"]
        .as_array()
        .expect("attendees")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    attendees.sort();
    assert_eq!(
        attendees,
        [
            "dev@example.com",
            "di@example.com",
            "owner@example.com",
            "reviewer@example.com"
        ]
    );
    let sent = meeting_emails(&w, 0);
    assert_eq!(
        sent.iter().map(|(to, _, _)| to.clone()).collect::<Vec<_>>(),
        attendees
    );
    let invitation = read_ics(&sent[0].2);
    assert_eq!(invitation["method"], "REQUEST", "{invitation}");
    assert_eq!(invitation["sequence"], 0);
    assert_eq!(invitation["status"], "CONFIRMED");
    // The organisation is on UTC here: 15:00 local is 15:00Z, for 45 minutes.
    assert_eq!(invitation["start"], format!("{}:00Z", at(3)));
    assert!(
        invitation["end"]
            .as_str()
            .is_some_and(|e| e.ends_with("T15:45:00Z")),
        "{invitation}"
    );
    assert!(
        invitation["url"]
            .as_str()
            .is_some_and(|u| u.ends_with(&format!("/coes/{id}/print"))),
        "the reading view: {invitation}"
    );
    assert_eq!(invitation["organizer"], "mailto:coe@localhost");
    assert_eq!(
        invitation["attendees"],
        json!(attendees
            .iter()
            .map(|a| format!("mailto:{a}"))
            .collect::<Vec<_>>())
    );
    let uid = invitation["uid"].clone();
    assert!(
        sent[0].1.starts_with("[coe] The review of"),
        "{}",
        sent[0].1
    );
    // The message as it leaves: its calendar part says the method too.
    {
        use coe::db::models::OutboxRow;
        use coe::db::schema::outbox_emails;
        let mut conn = w.app.pool.get().expect("conn");
        let row: OutboxRow = outbox_emails::table
            .filter(outbox_emails::kind.eq("review_meeting"))
            .select(OutboxRow::as_select())
            .first(&mut conn)
            .expect("row");
        let message =
            coe::services::outbound::outbox::message(&row, w.app.runtime.env()).expect("built");
        let raw = String::from_utf8_lossy(&message.formatted()).to_string();
        assert!(
            raw.contains("Content-Type: text/calendar; charset=utf-8; method=REQUEST"),
            "{raw}"
        );
    }

    // Moved to the weekly slot: the same UID, the next sequence, "Moved".
    let (status, moved) = w
        .send(
            &w.owner,
            "PUT",
            &path,
            None,
            Some(json!({"weekly_slot": true})),
        )
        .await;
    assert_eq!(status, 200, "{moved}");
    let update = meeting_emails(&w, 1);
    assert_eq!(update.len(), 4);
    let read = read_ics(&update[0].2);
    assert_eq!(
        (
            read["method"].clone(),
            read["sequence"].clone(),
            read["uid"].clone()
        ),
        (json!("REQUEST"), json!(1), uid.clone())
    );
    let start = chrono::DateTime::parse_from_rfc3339(read["start"].as_str().expect("start"))
        .expect("a time");
    assert_eq!(
        start.format("%A %H:%M").to_string(),
        "Thursday 15:00",
        "{read}"
    );
    assert!(
        update[0].1.starts_with("[coe] Moved: the review of"),
        "{}",
        update[0].1
    );

    // Cancelled: CANCEL, the next sequence; a second cancellation is refused.
    let (status, cancelled) = w.send(&w.owner, "DELETE", &path, None, None).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled");
    let cancel = meeting_emails(&w, 2);
    let read = read_ics(&cancel[0].2);
    assert_eq!(
        (
            read["method"].clone(),
            read["sequence"].clone(),
            read["uid"].clone(),
            read["status"].clone()
        ),
        (json!("CANCEL"), json!(2), uid, json!("CANCELLED"))
    );
    assert!(
        cancel[0].1.starts_with("[coe] Cancelled: the review of"),
        "{}",
        cancel[0].1
    );
    let (status, _) = w.send(&w.owner, "DELETE", &path, None, None).await;
    assert_eq!(status, 409);

    // The COE's page offers it to whoever may change the COE in review.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let page = crate::pages::get_page(&w.app, &format!("/coes/{id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("The review meeting"), "{page}");
    assert!(
        page.contains("At the weekly review (thursday 15:00)"),
        "{page}"
    );
}

/// In a real browser: the owner of a COE in review invites its readers to the review
/// meeting from the COE's page, then moves it to the weekly slot (screenshot
/// `coe-review-meeting`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_the_owner_invites_the_readers_to_the_review_meeting() {
    use crate::webdriver::Browser;
    let (w, _) = crate::attacks::review_world_with(|s| {
        s.coe.review_slot = Some("thursday 15:00".into());
    })
    .await;
    let (id, _) = crate::mechanism::submitted_sev1(&w).await;
    let browser = Browser::start().await;
    crate::browser::sign_in_to(
        &browser,
        &w.app,
        "owner@example.com",
        &format!("/coes/{id}"),
    )
    .await;
    browser.wait_for_text("#meeting", "No meeting is set").await;
    let when = (Utc::now() + Duration::days(3))
        .format("%Y-%m-%dT10:30")
        .to_string();
    browser.set_value("#mt-at", &when).await;
    browser
        .click_to_load("button[formaction$='/meeting/set']")
        .await;
    let set = browser.wait_for_text("#meeting", "were invited").await;
    assert!(set.contains("10:30"), "{set}");
    assert_eq!(meeting_emails(&w, 0).len(), 4);
    browser
        .click_to_load("button[formaction$='/meeting/slot']")
        .await;
    let moved = browser.wait_for_text("#meeting", "Thursday").await;
    assert!(moved.contains("15:00"), "{moved}");
    assert_eq!(meeting_emails(&w, 1).len(), 4, "the update sent");
    browser
        .eval("document.getElementById('meeting').scrollIntoView()")
        .await;
    browser.screenshot("coe-review-meeting").await;
}
