//! Corrective actions kept in step with Jira Cloud, Linear and GitHub Issues. The
//! trackers cannot run here: a loopback double (`tracker_double`) checks what coe
//! sends against each platform's published shapes and plays its answers. Delivery
//! and the reconcile are the service's own passes, as the scheduler runs them; the
//! webhooks are posted as each tracker signs them, their bodies from the fixtures in
//! tests/fixtures/trackers/.

use std::sync::atomic::{AtomicBool, Ordering};

use coe::config::{CreateWhen, Settings, TrackerKind, TrackerSettings};
use coe::db::schema::{outbox_emails, tracker_jobs};
use coe::services::coe::trackers::TrackerReport;
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::chat::person;
use crate::helpers::{spawn_app_with, TestApp};
use crate::leaving::coe_with_action;
use crate::tracker_double::{self, GITHUB_TOKEN, JIRA_TOKEN, JIRA_USER, LINEAR_KEY};

pub(crate) fn tracker(kind: TrackerKind, base: &str) -> TrackerSettings {
    let (name, token, place) = match kind {
        TrackerKind::Jira => ("jira", JIRA_TOKEN, "OPS"),
        TrackerKind::Linear => ("linear", LINEAR_KEY, "ENG"),
        TrackerKind::Github => ("github", GITHUB_TOKEN, "acme/api"),
    };
    TrackerSettings {
        name: name.into(),
        kind,
        base_url: Some(base.into()),
        user: (kind == TrackerKind::Jira).then(|| JIRA_USER.into()),
        token: token.into(),
        webhook_secret: Some(format!("{name}-webhook-secret").into()),
        place: Some(place.into()),
        issue_type: "Task".into(),
        create: CreateWhen::Automatic,
        reconcile_secs: 60,
        timeout_secs: 5,
        routes: Vec::new(),
        statuses: Default::default(),
    }
}

/// An app with `trackers`, and the settings its passes run with.
pub(crate) async fn app_with(trackers: Vec<TrackerSettings>) -> (TestApp, Settings) {
    let configure = move |s: &mut Settings| {
        s.trackers = trackers;
        s.reminders.retry_base_secs = 1;
        s.reminders.retry_max_secs = 1;
    };
    let mut settings = Settings::default();
    configure.clone()(&mut settings);
    let app = spawn_app_with(configure).await;
    settings.database = Default::default();
    (app, settings)
}

/// One delivery pass as replica `claimant`.
pub(crate) fn deliver_as(app: &TestApp, settings: &Settings, claimant: &str) -> TrackerReport {
    let runtime = coe::services::Runtime::load(settings.clone()).expect("runtime");
    coe::services::coe::trackers::deliver(
        &app.pool,
        runtime.env(),
        claimant,
        &AtomicBool::new(false),
    )
    .expect("a tracker pass")
}

pub(crate) fn deliver(app: &TestApp, settings: &Settings) -> TrackerReport {
    deliver_as(app, settings, "test")
}

/// Every waiting job due now (as the back-off passing would make them).
fn due_now(app: &TestApp) {
    let mut conn = app.pool.get().expect("conn");
    diesel::update(tracker_jobs::table.filter(tracker_jobs::state.eq("pending")))
        .set(
            tracker_jobs::next_attempt_at
                .eq(chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1)),
        )
        .execute(&mut conn)
        .expect("due now");
}

fn reconcile(app: &TestApp, settings: &Settings) -> usize {
    let template = coe::domain::template::Template::default_template();
    let emails = coe::email::EmailTemplates::load(None, &settings.public_url).expect("templates");
    let env = coe::services::Env {
        settings,
        template: &template,
        emails: &emails,
        connections: &coe::services::connections::Connections::of_file(settings),
    };
    coe::services::coe::trackers::reconcile(&app.pool, env, &AtomicBool::new(false))
        .expect("reconcile")
}

async fn action(app: &TestApp, token: &str, id: &str) -> Value {
    app.get_json(&format!("/api/v1/actions/{id}"), token).await
}

pub(crate) async fn send(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let res = app
        .client
        .request(method.parse().expect("method"), app.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("sent");
    let status = res.status().as_u16();
    let text = res.text().await.expect("text");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Posts a webhook body to tracker `name` with `headers`.
pub(crate) async fn webhook(
    app: &TestApp,
    name: &str,
    body: &[u8],
    headers: &[(&str, String)],
) -> (u16, Value) {
    let mut req = app
        .client
        .post(app.url(&format!("/api/v1/trackers/{name}/webhook")))
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let res = req.send().await.expect("sent");
    let status = res.status().as_u16();
    let text = res.text().await.expect("text");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/trackers")
            .join(path),
    )
    .expect("the fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn sign(secret: &str, body: &[u8]) -> String {
    coe::ingest::signature::sign_hex(secret, body)
}

/// Jira's `jira:issue_updated` for `issue` (the fixture's body, the issue's key,
/// id and status put in), signed, with its delivery id.
pub(crate) fn jira_update(
    issue: &tracker_double::Issue,
    delivery: &str,
) -> (Vec<u8>, Vec<(&'static str, String)>) {
    let mut body = fixture("jira/issue-updated-status.json");
    body["issue"]["key"] = json!(issue.key);
    body["issue"]["id"] = json!(issue.id);
    body["issue"]["fields"]["status"]["name"] = json!(issue.status);
    body["issue"]["fields"]["status"]["statusCategory"]["key"] = json!(issue.category);
    body["issue"]["fields"]["resolution"] = issue
        .reason
        .as_ref()
        .map_or(Value::Null, |r| json!({"name": r}));
    body["changelog"]["items"][0]["toString"] = json!(issue.status);
    let bytes = serde_json::to_vec(&body).expect("JSON");
    let signature = format!("sha256={}", sign("jira-webhook-secret", &bytes));
    (
        bytes,
        vec![
            ("X-Hub-Signature", signature),
            ("X-Atlassian-Webhook-Identifier", delivery.to_owned()),
        ],
    )
}

fn emails_of_kind(app: &TestApp, kind: &str, to: &str) -> i64 {
    let mut conn = app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq(kind))
        .filter(outbox_emails::recipient.eq(to))
        .count()
        .get_result(&mut conn)
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jira_gets_one_ticket_from_two_replicas_with_its_fields_and_coe_s_changes_reach_it() {
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(vec![tracker(TrackerKind::Jira, &base)]).await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    let (coe, id) = coe_with_action(
        &app,
        &admin,
        ("Checkout returned 502", "ana@example.com"),
        (
            "Add a canary stage to the checkout deploy",
            "ana@example.com",
        ),
    )
    .await;
    let before = action(&app, &admin, &id).await;
    assert_eq!(before["ticket"]["tracker"], "jira", "{before}");
    assert_eq!(before["ticket"]["key"], Value::Null);
    assert_eq!(before["ticket"]["waiting"], 1);

    // Two replicas deliver at once: one ticket.
    let (a, b) = std::thread::scope(|scope| {
        let one = scope.spawn(|| deliver_as(&app, &settings, "replica-a"));
        let two = scope.spawn(|| deliver_as(&app, &settings, "replica-b"));
        (one.join().expect("a"), two.join().expect("b"))
    });
    assert_eq!(a.sent + b.sent, 1, "{a:?} {b:?}");
    let issues = double.issues("jira");
    assert_eq!(issues.len(), 1);
    let issue = &issues[0];
    assert_eq!(issue.title, "Add a canary stage to the checkout deploy");
    assert_eq!(issue.priority, "High");
    assert_eq!(issue.issue_type, "Task");
    assert_eq!(issue.assignee.as_deref(), Some("acc-ana"));
    assert_eq!(issue.due.as_deref(), before["due_date"].as_str());
    assert!(
        issue.labels.contains(&format!("coe-action-{id}")),
        "{:?}",
        issue.labels
    );
    let description = issue.description.to_string();
    assert!(
        description.contains(&format!("/actions/{id}")),
        "{description}"
    );
    assert!(
        description.contains(&format!("/coes/{coe}")),
        "{description}"
    );
    let after = action(&app, &admin, &id).await;
    assert_eq!(after["ticket"]["key"], "OPS-1", "{after}");
    assert!(after["ticket"]["url"]
        .as_str()
        .unwrap_or_default()
        .ends_with("/browse/OPS-1"));
    assert_eq!(after["ticket"]["status"], "To Do");
    assert_eq!(after["ticket"]["meaning"], "open");
    assert_eq!(after["ticket"]["waiting"], 0);

    // A moved due date, with its reason.
    let due = (chrono::Utc::now() + chrono::Duration::days(30)).date_naive();
    let (status, body) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/actions/{id}"),
        json!({"due_date": due, "reason": "Waiting on the vendor's fix"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Another owner Jira knows, then one it does not.
    let (status, body) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/actions/{id}"),
        json!({"owner": "bo@example.com"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/actions/{id}"),
        json!({"owner": "carl@example.com"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(deliver(&app, &settings).sent, 3);
    let issue = double.issue("OPS-1");
    assert_eq!(issue.due, Some(due.to_string()));
    assert_eq!(issue.assignee, None, "carl is nobody in Jira");
    assert!(
        issue
            .comments
            .iter()
            .any(|c| c.contains("Waiting on the vendor's fix")),
        "{:?}",
        issue.comments
    );
    assert!(issue.comments.iter().any(|c| c.contains("bo@example.com")));
    let now = action(&app, &admin, &id).await;
    assert!(
        now["ticket"]["assignee_note"]
            .as_str()
            .unwrap_or_default()
            .contains("Jira has nobody with the address carl@example.com"),
        "{now}"
    );

    // Won't do, with its reason: the ticket moves to a done status that says so.
    let (status, body) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{id}/wont-do"),
        json!({"note": "The service is retired next month"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(deliver(&app, &settings).sent, 1);
    let issue = double.issue("OPS-1");
    assert_eq!(
        (issue.status.as_str(), issue.reason.as_deref()),
        ("Won't Do", Some("Won't Do"))
    );
    assert!(issue
        .comments
        .iter()
        .any(|c| c.contains("The service is retired next month")));
    // Its echo changes nothing.
    let (body, headers) = jira_update(&issue, "echo-1");
    let (status, answer) = webhook(&app, "jira", &body, &headers).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changed"], Value::Null, "{answer}");
    let now = action(&app, &admin, &id).await;
    assert_eq!(now["state"], "wont_do");
    assert_eq!(now["ticket"]["awaiting"], Value::Null);
    assert_eq!(deliver(&app, &settings), TrackerReport::default());
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_in_jira_asks_for_the_evidence_and_the_reviewer_s_verification_closes_the_coe() {
    let (base, double) = tracker_double::start().await;
    let jira = tracker(TrackerKind::Jira, &base);
    let settings = Settings {
        trackers: vec![jira.clone()],
        ..Settings::default()
    };
    let (w, _admin) = crate::attacks::review_world_with(move |s| s.trackers = vec![jira]).await;
    let (coe, id) = crate::attacks::approved_sev1(&w).await;
    assert_eq!(deliver(&w.app, &settings).sent, 1);
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");

    // Forged: refused, nothing changes.
    double.set_status("OPS-1", "Done", "done", Some("Done"));
    let issue = double.issue("OPS-1");
    let (body, mut headers) = jira_update(&issue, "delivery-1");
    let forged = vec![
        (
            "X-Hub-Signature",
            format!("sha256={}", sign("not-the-secret", &body)),
        ),
        headers[1].clone(),
    ];
    let (status, answer) = webhook(&w.app, "jira", &body, &forged).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(
        action(&w.app, &dev, &id).await["ticket"]["awaiting"],
        Value::Null
    );
    let (status, _) = webhook(&w.app, "jira", &body, &headers[1..]).await;
    assert_eq!(status, 401, "unsigned");

    // Done in Jira: the owner is asked for the evidence, once; the action waits.
    let (status, answer) = webhook(&w.app, "jira", &body, &headers).await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["changed"]
            .as_str()
            .unwrap_or_default()
            .contains("evidence"),
        "{answer}"
    );
    let (status, answer) = webhook(&w.app, "jira", &body, &headers).await;
    assert_eq!(
        (status, &answer["duplicate"]),
        (200, &json!(true)),
        "{answer}"
    );
    headers[1].1 = "delivery-2".into();
    let (status, answer) = webhook(&w.app, "jira", &body, &headers).await;
    assert_eq!(
        (status, &answer["changed"]),
        (200, &Value::Null),
        "asked already: {answer}"
    );
    let now = action(&w.app, &dev, &id).await;
    assert_eq!(now["state"], "open", "{now}");
    assert_eq!(now["ticket"]["awaiting"], "evidence");
    assert_eq!(now["ticket"]["status"], "Done");
    assert_eq!(
        emails_of_kind(&w.app, "ticket_closed", "dev@example.com"),
        1
    );

    // The evidence, then the reviewer's verification: the COE closes.
    let (status, body) = send(&w.app, &dev, "POST", &format!("/api/v1/actions/{id}/complete"),
        json!({"note": "Bad configs now fail the CI run", "evidence_url": "https://ci.example.com/runs/42"})).await;
    assert_eq!(status, 200, "{body}");
    // Sent back by the reviewer: Jira hears it (back in progress, with why).
    let (status, body) = send(
        &w.app,
        &w.reviewer,
        "POST",
        &format!("/api/v1/actions/{id}/verify"),
        json!({"verified": false, "reason": "The CI run linked is for another repository"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(deliver(&w.app, &settings).sent, 2, "done, then sent back");
    let issue = double.issue("OPS-1");
    assert_eq!(issue.status, "In Progress");
    assert!(
        issue
            .comments
            .iter()
            .any(|c| c.contains("another repository")),
        "{:?}",
        issue.comments
    );
    let (status, body) = send(&w.app, &dev, "POST", &format!("/api/v1/actions/{id}/complete"),
        json!({"note": "Bad configs now fail the CI run of this repository", "evidence_url": "https://ci.example.com/runs/42"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &w.app,
        &w.reviewer,
        "POST",
        &format!("/api/v1/actions/{id}/verify"),
        json!({"verified": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed", "{doc}");
    // Jira hears of the evidence again: the ticket moves to done once more.
    assert_eq!(deliver(&w.app, &settings).sent, 1);
    let issue = double.issue("OPS-1");
    assert!(
        issue
            .comments
            .iter()
            .any(|c| c.contains("https://ci.example.com/runs/42")),
        "{:?}",
        issue.comments
    );
    assert_eq!(double.issue("OPS-1").status, "Done");
    // The first completion found the ticket done already; the send-back and the
    // second completion each moved it once.
    assert_eq!(
        double.requests_to("POST /rest/api/3/issue/OPS-1/transitions"),
        2
    );
    assert_eq!(
        action(&w.app, &dev, &id).await["ticket"]["awaiting"],
        Value::Null
    );
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopened_in_jira_reopens_the_action_an_unmapped_status_is_shown_and_a_refused_move_is_said(
) {
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(vec![tracker(TrackerKind::Jira, &base)]).await;
    let admin = app.admin_token();
    let (_, id) = coe_with_action(
        &app,
        &admin,
        ("Search slow", "ana@example.com"),
        ("Cap the query size", "ana@example.com"),
    )
    .await;
    assert_eq!(deliver(&app, &settings).sent, 1);
    let (status, body) = send(&app, &admin, "POST", &format!("/api/v1/actions/{id}/complete"),
        json!({"note": "Queries over the cap are refused now", "evidence_url": "https://example.com/pr/7"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(double.issue("OPS-1").status, "Done");

    // Back in progress in Jira: reopened and started in coe, by Jira.
    double.set_status("OPS-1", "In Progress", "indeterminate", None);
    let (body, headers) = jira_update(&double.issue("OPS-1"), "reopen-1");
    let (status, answer) = webhook(&app, "jira", &body, &headers).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changed"], "reopened and started", "{answer}");
    let now = action(&app, &admin, &id).await;
    assert_eq!(now["state"], "in_progress", "{now}");
    let steps: Vec<(&str, &str)> = now["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap_or(""),
                s["by"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(steps.contains(&("reopen", "tracker:jira")), "{steps:?}");
    // Nothing goes back to Jira for its own change.
    assert_eq!(deliver(&app, &settings), TrackerReport::default());

    // A status coe cannot map: shown, never dropped; the action is left as it is.
    double.set_status("OPS-1", "Limbo", "undefined", None);
    let (body, headers) = jira_update(&double.issue("OPS-1"), "limbo-1");
    let (status, _) = webhook(&app, "jira", &body, &headers).await;
    assert_eq!(status, 200);
    let now = action(&app, &admin, &id).await;
    assert_eq!(
        (&now["ticket"]["status"], &now["ticket"]["meaning"]),
        (&json!("Limbo"), &json!("unmapped")),
        "{now}"
    );
    assert_eq!(now["state"], "in_progress");
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert_eq!(
        trackers["trackers"][0]["unmapped"],
        json!(["Limbo"]),
        "{trackers}"
    );
    assert!(trackers["trackers"][0]["last_in_at"].is_string());

    // The workflow refuses the move: said in a comment, the refusal kept and shown.
    double.refuse_moves.store(true, Ordering::Relaxed);
    let (status, body) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{id}/wont-do"),
        json!({"note": "Superseded by the new search service"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let report = deliver(&app, &settings);
    assert_eq!(report.failed, 1, "{report:?}");
    let issue = double.issue("OPS-1");
    assert_eq!(issue.status, "Limbo");
    assert!(issue
        .comments
        .iter()
        .any(|c| c.contains("Superseded by the new search service")));
    // The member reads what failed in words; the workflow's own answer is for admins.
    let now = action(&app, &admin, &id).await;
    let said = now["ticket"]["last_error"].as_str().unwrap_or_default();
    assert!(
        said.contains("refused") && !said.contains("not valid"),
        "{now}"
    );
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert!(
        trackers["trackers"][0]["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("not valid"),
        "{trackers}"
    );
    // The ticket never left its status: reading it back reopens nothing.
    double.set_status("OPS-1", "In Progress", "indeterminate", None);
    assert_eq!(reconcile(&app, &settings), 0);
    assert_eq!(action(&app, &admin, &id).await["state"], "wont_do");
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jira_down_for_an_hour_loses_nothing_a_lost_answer_makes_no_second_ticket_and_the_reconcile_catches_a_missed_webhook(
) {
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(vec![tracker(TrackerKind::Jira, &base)]).await;
    let admin = app.admin_token();
    double.down.store(true, Ordering::Relaxed);
    let (_, first) = coe_with_action(
        &app,
        &admin,
        ("Queue stuck", "ana@example.com"),
        ("Alert on queue age", "ana@example.com"),
    )
    .await;
    let (_, second) = coe_with_action(
        &app,
        &admin,
        ("Disk full", "ana@example.com"),
        ("Rotate the logs", "ana@example.com"),
    )
    .await;
    let due = (chrono::Utc::now() + chrono::Duration::days(40)).date_naive();
    let (status, _) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/actions/{first}"),
        json!({"due_date": due, "reason": "The queue team is on the migration"}),
    )
    .await;
    assert_eq!(status, 200);
    // An hour of an outage: each pass finds everything due again, and sends nothing.
    for _ in 0..4 {
        let r = deliver(&app, &settings);
        assert_eq!(r.sent, 0, "{r:?}");
        due_now(&app);
    }
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert_eq!(
        trackers["trackers"][0]["waiting_to_create"], 2,
        "{trackers}"
    );
    assert!(trackers["trackers"][0]["last_error"]
        .as_str()
        .unwrap_or_default()
        .contains("503"));
    // Back: everything goes, once; the due date after its ticket.
    double.down.store(false, Ordering::Relaxed);
    let mut sent = 0;
    for _ in 0..3 {
        sent += deliver(&app, &settings).sent;
        due_now(&app);
    }
    assert_eq!(sent, 3);
    assert_eq!(double.issues("jira").len(), 2);
    let moved = double
        .issues("jira")
        .into_iter()
        .find(|i| i.title == "Alert on queue age")
        .expect("first");
    assert_eq!(moved.due, Some(due.to_string()));
    assert_eq!(moved.comments.len(), 1, "{:?}", moved.comments);
    assert_eq!(deliver(&app, &settings), TrackerReport::default());
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert_eq!(
        trackers["trackers"][0]["last_error"],
        Value::Null,
        "{trackers}"
    );

    // 429 with Retry-After: waited for as asked.
    double.will_answer(429, Some("120"));
    let (status, _) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{second}/start"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliver(&app, &settings).deferred, 1);
    {
        let mut conn = app.pool.get().expect("conn");
        let (next, updated): (chrono::NaiveDateTime, chrono::NaiveDateTime) = tracker_jobs::table
            .filter(tracker_jobs::state.eq("pending"))
            .select((tracker_jobs::next_attempt_at, tracker_jobs::updated_at))
            .first(&mut conn)
            .expect("the waiting job");
        assert!((next - updated).num_seconds() >= 119, "{next} {updated}");
    }
    due_now(&app);
    assert_eq!(deliver(&app, &settings).sent, 1);

    // A ticket made whose answer was lost: the retry finds it by its marker.
    double.lose_next_answer.store(true, Ordering::Relaxed);
    let (_, third) = coe_with_action(
        &app,
        &admin,
        ("DNS flap", "ana@example.com"),
        ("Lower the TTL", "ana@example.com"),
    )
    .await;
    assert_eq!(deliver(&app, &settings).deferred, 1);
    due_now(&app);
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(
        double.issues("jira").len(),
        3,
        "one ticket for the third action"
    );
    assert_eq!(action(&app, &admin, &third).await["ticket"]["key"], "OPS-3");

    // A webhook never sent: the reconcile reads the ticket back.
    let key = action(&app, &admin, &first).await["ticket"]["key"]
        .as_str()
        .expect("key")
        .to_owned();
    double.set_status(&key, "In Progress", "indeterminate", None);
    assert_eq!(reconcile(&app, &settings), 1);
    assert_eq!(action(&app, &admin, &first).await["state"], "in_progress");
    assert_eq!(reconcile(&app, &settings), 0, "not due again yet");
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_gets_a_ticket_of_coe_s_id_canceled_asks_for_the_reason_and_signatures_are_checked()
{
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(vec![tracker(TrackerKind::Linear, &base)]).await;
    let admin = app.admin_token();
    // The answer to the first create is lost: the retry finds the issue by its id.
    double.lose_next_answer.store(true, Ordering::Relaxed);
    let (_, id) = coe_with_action(
        &app,
        &admin,
        ("Login errors", "ana@example.com"),
        ("Retry the token refresh", "ana@example.com"),
    )
    .await;
    assert_eq!(deliver(&app, &settings).deferred, 1);
    due_now(&app);
    assert_eq!(deliver(&app, &settings).sent, 1);
    let issues = double.issues("linear");
    assert_eq!(issues.len(), 1);
    let issue = &issues[0];
    let chosen = uuid::Uuid::parse_str(&issue.id).expect("a UUID");
    assert_eq!(
        chosen.get_version_num(),
        4,
        "coe chose the issue's id, a UUID v4"
    );
    assert_eq!(issue.priority, 2);
    assert_eq!(issue.assignee.as_deref(), Some("user-ana"));
    assert!(issue.due.is_some());
    assert!(issue
        .description
        .as_str()
        .unwrap_or_default()
        .contains(&format!("/actions/{id}")));
    let now = action(&app, &admin, &id).await;
    assert_eq!(
        (&now["ticket"]["key"], &now["ticket"]["meaning"]),
        (&json!("ENG-1"), &json!("open")),
        "{now}"
    );

    // Canceled in Linear, as Linear signs it.
    let mut body = fixture("linear/COMPOSED-issue-update-completed.json");
    double.set_status("ENG-1", "Canceled", "canceled", None);
    body["data"]["id"] = json!(double.issue("ENG-1").id);
    body["data"]["identifier"] = json!("ENG-1");
    body["data"]["state"] = json!({"id": "st-canceled", "name": "Canceled", "type": "canceled"});
    body["webhookTimestamp"] = json!(chrono::Utc::now().timestamp_millis());
    let bytes = serde_json::to_vec(&body).expect("JSON");
    let headers = |bytes: &[u8], secret: &str, delivery: &str| {
        vec![
            ("Linear-Signature", sign(secret, bytes)),
            ("Linear-Delivery", delivery.to_owned()),
            ("Linear-Event", "Issue".to_owned()),
        ]
    };
    let (status, _) = webhook(&app, "linear", &bytes, &headers(&bytes, "wrong", "d-1")).await;
    assert_eq!(status, 401);
    let mut stale = body.clone();
    stale["webhookTimestamp"] = json!(chrono::Utc::now().timestamp_millis() - 5 * 60_000);
    let stale = serde_json::to_vec(&stale).expect("JSON");
    let (status, answer) = webhook(
        &app,
        "linear",
        &stale,
        &headers(&stale, "linear-webhook-secret", "d-0"),
    )
    .await;
    assert_eq!(status, 401, "a replay: {answer}");
    assert_eq!(
        action(&app, &admin, &id).await["ticket"]["awaiting"],
        Value::Null
    );
    let (status, answer) = webhook(
        &app,
        "linear",
        &bytes,
        &headers(&bytes, "linear-webhook-secret", "d-1"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["changed"]
            .as_str()
            .unwrap_or_default()
            .contains("reason"),
        "{answer}"
    );
    let (_, answer) = webhook(
        &app,
        "linear",
        &bytes,
        &headers(&bytes, "linear-webhook-secret", "d-1"),
    )
    .await;
    assert_eq!(answer["duplicate"], true);
    let now = action(&app, &admin, &id).await;
    assert_eq!(
        (&now["state"], &now["ticket"]["awaiting"]),
        (&json!("open"), &json!("reason")),
        "{now}"
    );
    assert_eq!(emails_of_kind(&app, "ticket_closed", "ana@example.com"), 1);
    // The owner gives the reason in coe: the ticket hears it, already canceled.
    let (status, _) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{id}/wont-do"),
        json!({"note": "The old login flow is removed in January"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliver(&app, &settings).sent, 1);
    let issue = double.issue("ENG-1");
    assert_eq!(issue.category, "canceled");
    assert!(
        issue
            .comments
            .iter()
            .any(|c| c.contains("removed in January")),
        "{:?}",
        issue.comments
    );
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_issues_follow_won_t_do_and_a_close_as_completed_asks_for_the_evidence() {
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(vec![tracker(TrackerKind::Github, &base)]).await;
    let admin = app.admin_token();
    let (_, ana) = coe_with_action(
        &app,
        &admin,
        ("Deploy broke", "ana@example.com"),
        ("Gate deploys on canary", "ana@example.com"),
    )
    .await;
    let (_, bo) = coe_with_action(
        &app,
        &admin,
        ("Cron missed", "bo@example.com"),
        ("Page on a missed cron", "bo@example.com"),
    )
    .await;
    assert_eq!(deliver(&app, &settings).sent, 2);
    let first = double.issue("acme/api#1");
    assert_eq!(
        first.assignee.as_deref(),
        Some("ana-gh"),
        "Ana's email is public"
    );
    assert!(
        first.labels.contains(&"priority: high".to_owned()),
        "{:?}",
        first.labels
    );
    assert!(first.labels.contains(&format!("coe-action-{ana}")));
    assert!(first
        .description
        .as_str()
        .unwrap_or_default()
        .contains("**Due:**"));
    assert_eq!(double.issue("acme/api#2").assignee, None);
    let now = action(&app, &admin, &bo).await;
    assert!(
        now["ticket"]["assignee_note"]
            .as_str()
            .unwrap_or_default()
            .contains("GitHub has nobody with the address bo@example.com"),
        "{now}"
    );

    // Won't do in coe: closed as not planned, with the reason.
    let (status, _) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{bo}/wont-do"),
        json!({"note": "The cron moves to the scheduler with its own alerts"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliver(&app, &settings).sent, 1);
    let second = double.issue("acme/api#2");
    assert_eq!(
        (second.category.as_str(), second.reason.as_deref()),
        ("closed", Some("not_planned"))
    );

    // Closed as completed on GitHub: the evidence is asked for.
    double.set_status("acme/api#1", "closed", "closed", Some("completed"));
    let mut body = fixture("github/issues-closed.json");
    body["repository"]["full_name"] = json!("acme/api");
    body["issue"]["number"] = json!(1);
    body["issue"]["state"] = json!("closed");
    body["issue"]["state_reason"] = json!("completed");
    let bytes = serde_json::to_vec(&body).expect("JSON");
    let signed = |bytes: &[u8], secret: &str, delivery: &str, event: &str| {
        vec![
            (
                "X-Hub-Signature-256",
                format!("sha256={}", sign(secret, bytes)),
            ),
            ("X-GitHub-Delivery", delivery.to_owned()),
            ("X-GitHub-Event", event.to_owned()),
        ]
    };
    let (status, _) = webhook(
        &app,
        "github",
        &bytes,
        &signed(&bytes, "forged", "g-1", "issues"),
    )
    .await;
    assert_eq!(status, 401);
    let ping = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let (status, answer) = webhook(
        &app,
        "github",
        ping,
        &signed(ping, "github-webhook-secret", "g-0", "ping"),
    )
    .await;
    assert_eq!(
        (status, &answer["changed"]),
        (200, &Value::Null),
        "{answer}"
    );
    let (status, answer) = webhook(
        &app,
        "github",
        &bytes,
        &signed(&bytes, "github-webhook-secret", "g-1", "issues"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        action(&app, &admin, &ana).await["ticket"]["awaiting"],
        "evidence"
    );
    // Reopened on GitHub before the owner answered: nothing is asked any more.
    // Issue #1 of another repository is not this ticket.
    let mut other = fixture("github/issues-closed.json");
    other["repository"]["full_name"] = json!("acme/web");
    other["issue"]["number"] = json!(2);
    let other = serde_json::to_vec(&other).expect("JSON");
    let (status, answer) = webhook(
        &app,
        "github",
        &other,
        &signed(&other, "github-webhook-secret", "g-9", "issues"),
    )
    .await;
    assert_eq!(
        (status, &answer["changed"]),
        (200, &Value::Null),
        "{answer}"
    );
    assert_eq!(action(&app, &admin, &bo).await["state"], "wont_do");
    double.set_status("acme/api#1", "open", "open", Some("reopened"));
    let mut reopened = fixture("github/issues-reopened.json");
    reopened["repository"]["full_name"] = json!("acme/api");
    reopened["issue"]["number"] = json!(1);
    reopened["issue"]["state"] = json!("open");
    let bytes = serde_json::to_vec(&reopened).expect("JSON");
    let (status, _) = webhook(
        &app,
        "github",
        &bytes,
        &signed(&bytes, "github-webhook-secret", "g-2", "issues"),
    )
    .await;
    assert_eq!(status, 200);
    let now = action(&app, &admin, &ana).await;
    assert_eq!(
        (&now["state"], &now["ticket"]["awaiting"]),
        (&json!("open"), &Value::Null),
        "{now}"
    );

    // The repository is gone (404): the change waits, and the admin page says why.
    double.will_answer(404, None);
    let due = (chrono::Utc::now() + chrono::Duration::days(20)).date_naive();
    let (status, _) = send(
        &app,
        &admin,
        "PATCH",
        &format!("/api/v1/actions/{ana}"),
        json!({"due_date": due, "reason": "Blocked on the canary tooling"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliver(&app, &settings).deferred, 1);
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert!(
        trackers["trackers"][0]["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("404"),
        "{trackers}"
    );
    let now = action(&app, &admin, &ana).await;
    assert_eq!(now["ticket"]["waiting"], 1);
    due_now(&app);
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert!(double
        .issue("acme/api#1")
        .comments
        .iter()
        .any(|c| c.contains("Blocked on the canary tooling")));
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_asked_for_and_webhooks_refuse_bad_input_and_a_ticket_follows_one_action() {
    let (base, double) = tracker_double::start().await;
    let mut jira = tracker(TrackerKind::Jira, &base);
    jira.create = CreateWhen::OnRequest;
    let (app, settings) = app_with(vec![jira]).await;
    let admin = app.admin_token();
    let (_, a) = coe_with_action(
        &app,
        &admin,
        ("Cache stampede", "ana@example.com"),
        ("Add jitter", "ana@example.com"),
    )
    .await;
    let (_, b) = coe_with_action(
        &app,
        &admin,
        ("Cache stampede again", "ana@example.com"),
        ("Add a lock", "ana@example.com"),
    )
    .await;
    assert_eq!(
        action(&app, &admin, &a).await["ticket"],
        Value::Null,
        "made on request only"
    );
    let path = |id: &str| format!("/api/v1/actions/{id}/ticket");
    // Malformed, wrong types, unknown fields, unknown ids, no token.
    let res = app.post_raw(&path(&a), Some(&admin), "{\"tracker\":").await;
    assert_eq!(res.status(), 400);
    let (status, body) = send(&app, &admin, "POST", &path(&a), json!({"tracker": 7})).await;
    assert!(status == 400 || status == 422, "{status} {body}");
    let (status, body) = send(
        &app,
        &admin,
        "POST",
        &path(&a),
        json!({"tracker": "jira", "colour": "red"}),
    )
    .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    let (status, body) = send(&app, &admin, "POST", &path(&a), json!({"tracker": "nope"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("tracker"), "{body}");
    let (status, _) = send(
        &app,
        &admin,
        "POST",
        &path("01936a2e-0000-7000-8000-000000000000"),
        json!({}),
    )
    .await;
    assert_eq!(status, 404);
    let res = app
        .client
        .post(app.url(&path(&a)))
        .json(&json!({}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 401);

    // Jira refuses it (a field not on its screen, say): it can be asked for again.
    let (status, body) = send(&app, &admin, "POST", &path(&a), json!({})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["waiting"], 1);
    double.will_answer(400, None);
    assert_eq!(deliver(&app, &settings).failed, 1);
    let now = action(&app, &admin, &a).await;
    assert_eq!(
        (&now["ticket"]["stuck"], &now["ticket"]["key"]),
        (&json!(true), &Value::Null),
        "{now}"
    );
    // Made on request; linking it to another action is refused.
    let (status, body) = send(&app, &admin, "POST", &path(&a), json!({})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["waiting"], 1);
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(action(&app, &admin, &a).await["ticket"]["key"], "OPS-1");
    let (status, body) = send(&app, &admin, "POST", &path(&a), json!({})).await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = send(&app, &admin, "POST", &path(&b), json!({"key": "OPS-1"})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("another action"), "{body}");
    let (status, body) = send(&app, &admin, "POST", &path(&b), json!({"key": "OPS-99"})).await;
    assert_eq!(status, 422, "{body}");
    // An existing ticket made by hand in Jira, linked.
    {
        let mut all = double.issues.lock().expect("lock");
        all.push(tracker_double::Issue {
            platform: "jira",
            key: "OPS-2".into(),
            id: "20002".into(),
            place: "OPS".into(),
            status: "In Progress".into(),
            category: "indeterminate".into(),
            ..Default::default()
        });
    }
    let (status, body) = send(&app, &admin, "POST", &path(&b), json!({"key": "OPS-2"})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        (&body["key"], &body["meaning"]),
        (&json!("OPS-2"), &json!("in_progress")),
        "{body}"
    );

    // A closed action gets no ticket.
    let (_, c) = coe_with_action(
        &app,
        &admin,
        ("Cache cold", "ana@example.com"),
        ("Warm it", "ana@example.com"),
    )
    .await;
    let (status, _) = send(
        &app,
        &admin,
        "POST",
        &format!("/api/v1/actions/{c}/wont-do"),
        json!({"note": "The cache is going away"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = send(&app, &admin, "POST", &path(&c), json!({})).await;
    assert_eq!(status, 409, "{body}");
    // A ticket outside the tracker's places is not linked (coe would write there).
    {
        let mut all = double.issues.lock().expect("lock");
        all.push(tracker_double::Issue {
            platform: "jira",
            key: "HR-4".into(),
            id: "30004".into(),
            place: "HR".into(),
            status: "To Do".into(),
            category: "new".into(),
            ..Default::default()
        });
    }
    let (_, d) = coe_with_action(
        &app,
        &admin,
        ("Cache hot", "ana@example.com"),
        ("Shard it", "ana@example.com"),
    )
    .await;
    let (status, body) = send(&app, &admin, "POST", &path(&d), json!({"key": "HR-4"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("not in a place"), "{body}");

    // Webhooks: unknown tracker, not JSON, too big.
    let (status, _) = webhook(&app, "nope", b"{}", &[]).await;
    assert_eq!(status, 404);
    let junk = b"not json";
    let (status, body) = webhook(
        &app,
        "jira",
        junk,
        &[(
            "X-Hub-Signature",
            format!("sha256={}", sign("jira-webhook-secret", junk)),
        )],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let big = vec![b' '; 2 << 20];
    let (status, _) = webhook(&app, "jira", &big, &[]).await;
    assert_eq!(status, 413);
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

/// In Chromium: an action's "Create the ticket", the ticket on the action's page, the
/// banner when it is done in Jira, and the Trackers admin page with a tracker that
/// refuses coe's token and the same one mended (screenshots `action-create-ticket`,
/// `action-ticket`, `action-ticket-done`, `trackers-broken`, `trackers-mended`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_s_ticket_and_the_trackers_page_in_a_browser() {
    let (base, double) = tracker_double::start().await;
    let mut jira = tracker(TrackerKind::Jira, &base);
    jira.create = CreateWhen::OnRequest;
    let (app, settings) = app_with(vec![jira]).await;
    let admin = app.admin_token();
    person(&app, &admin, "admin@example.com", "payments").await;
    crate::leaving::set_admin(&app, &admin, "admin@example.com", true).await;
    let (_, id) = coe_with_action(
        &app,
        &admin,
        ("Checkout returned 502", "admin@example.com"),
        ("Add a canary stage", "admin@example.com"),
    )
    .await;

    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(
        &browser,
        &app,
        "admin@example.com",
        &format!("/actions/{id}"),
    )
    .await;
    browser.wait_for_heading("Add a canary stage").await;
    let ticket = browser.text("#ticket").await;
    assert!(ticket.contains("Create the ticket in Jira"), "{ticket}");
    browser.screenshot("action-create-ticket").await;
    browser
        .click_to_load(r#"form[action$="/ticket"] button"#)
        .await;
    browser.wait_for_heading("Add a canary stage").await;
    let ticket = browser.text("#ticket").await;
    assert!(ticket.contains("being made in Jira"), "{ticket}");
    assert_eq!(deliver(&app, &settings).sent, 1);
    browser.goto(&app.url(&format!("/actions/{id}"))).await;
    browser.wait_for_heading("Add a canary stage").await;
    let ticket = browser.text("#ticket").await;
    assert!(
        ticket.contains("OPS-1 in Jira") && ticket.contains("reads here as open"),
        "{ticket}"
    );
    assert!(browser
        .find_all(r#"form[action$="/ticket"]"#)
        .await
        .is_empty());
    browser.screenshot("action-ticket").await;

    double.set_status("OPS-1", "Done", "done", Some("Done"));
    let (body, headers) = jira_update(&double.issue("OPS-1"), "browser-1");
    let (status, _) = webhook(&app, "jira", &body, &headers).await;
    assert_eq!(status, 200);
    browser.goto(&app.url(&format!("/actions/{id}"))).await;
    browser.wait_for_heading("Add a canary stage").await;
    let banner = browser.text("#ticket-closed").await;
    assert!(
        banner.contains("Done in Jira") && banner.contains("evidence"),
        "{banner}"
    );
    browser.screenshot("action-ticket-done").await;
    crate::html::assert_accessible_now(&browser).await;

    // The tracker refuses coe's token, then takes it again.
    double.will_answer(401, None);
    browser.goto(&app.url("/admin/trackers")).await;
    browser.wait_for_heading("Issue trackers").await;
    browser
        .click_to_load("#tracker-jira button[type=submit]")
        .await;
    browser.wait_for_heading("Issue trackers").await;
    let checked = browser.text("#tracker-checked").await;
    assert!(
        checked.contains("does not answer") && checked.contains("401"),
        "{checked}"
    );
    let health = browser.text("#tracker-jira").await;
    assert!(health.contains("401"), "{health}");
    browser.screenshot("trackers-broken").await;
    browser
        .click_to_load("#tracker-jira button[type=submit]")
        .await;
    browser.wait_for_heading("Issue trackers").await;
    let checked = browser.text("#tracker-checked").await;
    assert!(
        checked.contains("jira answers") && checked.contains("In Progress: in progress"),
        "{checked}"
    );
    assert!(checked.contains("Limbo: coe cannot read it"), "{checked}");
    assert!(checked.contains("Won't Do: will not be done"), "{checked}");
    let health = browser.text("#tracker-jira").await;
    assert!(
        health.contains("Last error\nnone") || health.contains("Last error none"),
        "{health}"
    );
    browser.screenshot("trackers-mended").await;
    crate::html::assert_accessible_now(&browser).await;
    // Both pages as served are valid HTML.
    let cookie = crate::pages::sign_in(&app, "admin@example.com").await;
    let mut saved = Vec::new();
    for (name, path) in [
        ("action-with-ticket", format!("/actions/{id}")),
        ("admin-trackers", "/admin/trackers".to_owned()),
    ] {
        let html = crate::pages::get_page(&app, &path, Some(&cookie))
            .await
            .text()
            .await
            .expect("html");
        crate::html::save(&mut saved, name, &html);
    }
    crate::html::assert_valid(&crate::html::vnu_jar(), &saved);
}

/// A delivery of `issue` as its tracker sends and signs it (the fixtures' bodies).
fn delivery_of(
    kind: TrackerKind,
    issue: &tracker_double::Issue,
    id: &str,
) -> (Vec<u8>, Vec<(&'static str, String)>) {
    match kind {
        TrackerKind::Jira => jira_update(issue, id),
        TrackerKind::Linear => {
            let mut body = fixture("linear/COMPOSED-issue-update-completed.json");
            body["data"]["id"] = json!(issue.id);
            body["data"]["identifier"] = json!(issue.key);
            body["data"]["state"] =
                json!({"id": "x", "name": issue.status, "type": issue.category});
            body["webhookTimestamp"] = json!(chrono::Utc::now().timestamp_millis());
            let bytes = serde_json::to_vec(&body).expect("JSON");
            let signature = sign("linear-webhook-secret", &bytes);
            (
                bytes,
                vec![
                    ("Linear-Signature", signature),
                    ("Linear-Delivery", id.to_owned()),
                ],
            )
        }
        TrackerKind::Github => {
            let mut body = fixture("github/issues-closed.json");
            body["action"] = json!(if issue.category == "open" {
                "reopened"
            } else {
                "closed"
            });
            body["repository"]["full_name"] = json!(issue.place);
            body["issue"]["number"] = json!(issue.number);
            body["issue"]["state"] = json!(issue.category);
            body["issue"]["state_reason"] = json!(issue.reason);
            let bytes = serde_json::to_vec(&body).expect("JSON");
            let signature = format!("sha256={}", sign("github-webhook-secret", &bytes));
            (
                bytes,
                vec![
                    ("X-Hub-Signature-256", signature),
                    ("X-GitHub-Delivery", id.to_owned()),
                    ("X-GitHub-Event", "issues".to_owned()),
                ],
            )
        }
    }
}

/// The same life for each tracker: one ticket from two replicas; a moved due date
/// kept through an outage and told once after; done in the tracker with its webhook
/// missed, caught by the reconcile (the owner asked for the evidence, once);
/// reopened there, with the delivery duplicated and a forged one refused; done
/// again, and the evidence given in coe told to the ticket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tracker_lives_the_same_life() {
    for kind in [TrackerKind::Jira, TrackerKind::Linear, TrackerKind::Github] {
        let (base, double) = tracker_double::start().await;
        let (app, settings) = app_with(vec![tracker(kind, &base)]).await;
        let name = kind.as_str();
        let admin = app.admin_token();
        let (_, id) = coe_with_action(
            &app,
            &admin,
            ("Checkout returned 502", "ana@example.com"),
            ("Add a canary stage", "ana@example.com"),
        )
        .await;
        let (a, b) = std::thread::scope(|scope| {
            let one = scope.spawn(|| deliver_as(&app, &settings, "replica-a"));
            let two = scope.spawn(|| deliver_as(&app, &settings, "replica-b"));
            (one.join().expect("a"), two.join().expect("b"))
        });
        assert_eq!(a.sent + b.sent, 1, "{name}: {a:?} {b:?}");
        let issues = double.issues(name);
        assert_eq!(issues.len(), 1, "{name}");
        let key = issues[0].key.clone();
        assert_eq!(action(&app, &admin, &id).await["ticket"]["key"], json!(key));

        // The tracker down: the moved due date waits, and goes once after.
        double.down.store(true, Ordering::Relaxed);
        let due = (chrono::Utc::now() + chrono::Duration::days(30)).date_naive();
        let (status, _) = send(
            &app,
            &admin,
            "PATCH",
            &format!("/api/v1/actions/{id}"),
            json!({"due_date": due, "reason": "The vendor ships the fix in January"}),
        )
        .await;
        assert_eq!(status, 200);
        for _ in 0..3 {
            assert_eq!(deliver(&app, &settings).sent, 0, "{name}");
            due_now(&app);
        }
        double.down.store(false, Ordering::Relaxed);
        assert_eq!(deliver(&app, &settings).sent, 1, "{name}");
        assert_eq!(deliver(&app, &settings), TrackerReport::default(), "{name}");
        let issue = double.issue(&key);
        let told: Vec<&String> = issue
            .comments
            .iter()
            .filter(|c| c.contains("ships the fix in January"))
            .collect();
        assert_eq!(told.len(), 1, "{name}: {:?}", issue.comments);
        if kind != TrackerKind::Github {
            assert_eq!(issue.due, Some(due.to_string()), "{name}");
        }

        // Done there, its webhook missed: the reconcile asks the owner, once.
        let done = match kind {
            TrackerKind::Jira => ("Done", "done", Some("Done")),
            TrackerKind::Linear => ("Done", "completed", None),
            TrackerKind::Github => ("closed", "closed", Some("completed")),
        };
        double.set_status(&key, done.0, done.1, done.2);
        assert_eq!(reconcile(&app, &settings), 1, "{name}");
        let now = action(&app, &admin, &id).await;
        assert_eq!(
            (&now["state"], &now["ticket"]["awaiting"]),
            (&json!("open"), &json!("evidence")),
            "{name}: {now}"
        );
        assert_eq!(
            emails_of_kind(&app, "ticket_closed", "ana@example.com"),
            1,
            "{name}"
        );

        // Reopened there: nothing asked any more; the delivery twice, a forgery.
        let open = match kind {
            TrackerKind::Jira => ("To Do", "new", None),
            TrackerKind::Linear => ("Todo", "unstarted", None),
            TrackerKind::Github => ("open", "open", Some("reopened")),
        };
        double.set_status(&key, open.0, open.1, open.2);
        let (body, headers) = delivery_of(kind, &double.issue(&key), "reopen-1");
        let mut forged = headers.clone();
        let wrong = sign("not-the-webhook-secret", &body);
        forged[0].1 = if kind == TrackerKind::Linear {
            wrong
        } else {
            format!("sha256={wrong}")
        };
        let (status, _) = webhook(&app, name, &body, &forged).await;
        assert_eq!(status, 401, "{name}");
        assert_eq!(
            action(&app, &admin, &id).await["ticket"]["awaiting"],
            "evidence",
            "{name}: the forgery changed nothing"
        );
        let (status, answer) = webhook(&app, name, &body, &headers).await;
        assert_eq!(
            (status, &answer["duplicate"]),
            (200, &json!(false)),
            "{name}: {answer}"
        );
        assert_eq!(
            action(&app, &admin, &id).await["ticket"]["awaiting"],
            Value::Null,
            "{name}"
        );
        let (status, answer) = webhook(&app, name, &body, &headers).await;
        assert_eq!(
            (status, &answer["duplicate"]),
            (200, &json!(true)),
            "{name}: {answer}"
        );

        // Done again, told by its webhook; the evidence given in coe reaches it.
        double.set_status(&key, done.0, done.1, done.2);
        let (body, headers) = delivery_of(kind, &double.issue(&key), "done-2");
        let (status, answer) = webhook(&app, name, &body, &headers).await;
        assert_eq!(status, 200, "{name}: {answer}");
        assert_eq!(
            action(&app, &admin, &id).await["ticket"]["awaiting"],
            "evidence",
            "{name}"
        );
        let (status, body) = send(&app, &admin, "POST", &format!("/api/v1/actions/{id}/complete"),
            json!({"note": "Deploys stop at the canary on errors", "evidence_url": "https://ci.example.com/runs/9"})).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(deliver(&app, &settings).sent, 1, "{name}");
        let issue = double.issue(&key);
        assert_eq!(issue.category, done.1, "{name}: still done there");
        assert!(
            issue
                .comments
                .iter()
                .any(|c| c.contains("https://ci.example.com/runs/9")),
            "{name}: {:?}",
            issue.comments
        );
        assert!(
            double.problems().is_empty(),
            "{name}: {:?}",
            double.problems()
        );
    }
}

/// Three trackers on one double, each making tickets only when asked (no action is
/// given one on its own): Jira, Linear and GitHub.
fn on_request(base: &str) -> Vec<TrackerSettings> {
    [TrackerKind::Jira, TrackerKind::Linear, TrackerKind::Github]
        .into_iter()
        .map(|kind| TrackerSettings {
            create: CreateWhen::OnRequest,
            ..tracker(kind, base)
        })
        .collect()
}

/// Issue 61, item 2: a member links "tickets" to her own action whose keys are paths
/// (`..\..\rest\api\3\myself`, which coe once sent to Jira with its credentials and
/// answered with 300 characters of Jira's body; `\\evil.test\x`, which the url crate
/// turned into `//evil.test/x`): each is refused, naming `key` and the shape
/// expected, and the tracker hears nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_walk_the_tracker_s_host_with_a_ticket_key() {
    let (base, double) = tracker_double::start().await;
    let (app, _) = app_with(on_request(&base)).await;
    let admin = app.admin_token();
    let (_, id) = coe_with_action(
        &app,
        &admin,
        ("Checkout returned 502", "ana@example.com"),
        ("Add a canary stage", "ana@example.com"),
    )
    .await;
    let ana = crate::actions::person_token(&app, "ana", "ana@example.com");
    let path = format!("/api/v1/actions/{id}/ticket");
    let attacks = [
        (
            "jira",
            r"..\..\..\..\rest\api\3\myself",
            "a Jira key such as OPS-12",
        ),
        ("jira", r"\\evil.test\x", "a Jira key such as OPS-12"),
        (
            "jira",
            "../../rest/api/3/myself",
            "a Jira key such as OPS-12",
        ),
        ("jira", "OPS-1/../../myself", "a Jira key such as OPS-12"),
        ("jira", "OPS-1?x=1", "a Jira key such as OPS-12"),
        ("jira", "%2e%2e", "a Jira key such as OPS-12"),
        ("linear", r"..\graphql", "a Linear key such as ENG-12"),
        ("linear", "ENG-1#x", "a Linear key such as ENG-12"),
        (
            "github",
            r"acme/api#1\..\..\user",
            "a GitHub issue such as acme/api#12",
        ),
        ("github", "../..#1", "a GitHub issue such as acme/api#12"),
        (
            "github",
            "acme/api/../../user#1",
            "a GitHub issue such as acme/api#12",
        ),
    ];
    for (tracker, key, shape) in attacks {
        let (status, body) = send(
            &app,
            &ana,
            "POST",
            &path,
            json!({"tracker": tracker, "key": key}),
        )
        .await;
        assert_eq!(status, 422, "{tracker} {key}: {body}");
        let problems = body.to_string();
        assert!(
            problems.contains("\"key\"") && problems.contains(shape),
            "{tracker} {key}: {body}"
        );
    }
    assert_eq!(
        double.request_count(),
        0,
        "{:?}",
        double.requests.lock().expect("lock")
    );
    assert_eq!(double.requests_to("myself"), 0);
    assert_eq!(action(&app, &ana, &id).await["ticket"], Value::Null);
}

/// Issue 61, item 2: a key of the right shape that the tracker does not know, or that
/// it answers with its credentials refused: the member is told what failed in words,
/// never what the tracker answered (here a secret-looking string); the tracker's
/// answer to a job goes to the log and to the admins' Trackers page only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_is_not_shown_what_the_tracker_answered() {
    let (base, double) = tracker_double::start().await;
    let (app, settings) = app_with(on_request(&base)).await;
    let admin = app.admin_token();
    let (_, id) = coe_with_action(
        &app,
        &admin,
        ("Checkout returned 502", "ana@example.com"),
        ("Add a canary stage", "ana@example.com"),
    )
    .await;
    let ana = crate::actions::person_token(&app, "ana", "ana@example.com");
    let path = format!("/api/v1/actions/{id}/ticket");
    let secret = "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let body_with_secret =
        json!({"errorMessages": [format!("Issue does not exist. debug: {secret}")]});

    double.will_answer_with(404, body_with_secret.clone());
    let (status, body) = send(
        &app,
        &ana,
        "POST",
        &path,
        json!({"tracker": "jira", "key": "ops-12"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let said = body.to_string();
    assert!(said.contains("Jira did not find OPS-12"), "{body}");
    assert!(!said.contains("AKIA") && !said.contains("debug"), "{body}");
    assert_eq!(double.requests_to("GET /rest/api/3/issue/OPS-12"), 1);

    double.will_answer_with(401, body_with_secret.clone());
    let (status, body) = send(
        &app,
        &ana,
        "POST",
        &path,
        json!({"tracker": "jira", "key": "OPS-12"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let said = body.to_string();
    assert!(said.contains("Jira refused coe's credentials"), "{body}");
    assert!(!said.contains("AKIA"), "{body}");

    double.will_answer_with(404, json!({"message": secret}));
    let (status, body) = send(
        &app,
        &ana,
        "POST",
        &path,
        json!({"tracker": "github", "key": "acme/api#77"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string().contains("GitHub did not find acme/api#77"),
        "{body}"
    );
    assert!(!body.to_string().contains("AKIA"), "{body}");

    // A ticket Jira refuses to make: the member's page says so in words.
    let (status, body) = send(&app, &ana, "POST", &path, json!({"tracker": "jira"})).await;
    assert_eq!(status, 202, "{body}");
    double.will_answer_with(400, body_with_secret);
    assert_eq!(deliver(&app, &settings).failed, 1);
    let now = action(&app, &ana, &id).await;
    let said = now["ticket"]["last_error"].as_str().unwrap_or_default();
    assert!(said.contains("refused") && !said.contains("AKIA"), "{now}");
    let cookie = crate::pages::sign_in(&app, "ana@example.com").await;
    let page = crate::pages::get_page(&app, &format!("/actions/{id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        page.contains("did not make it") && !page.contains("AKIA"),
        "{page}"
    );
    // Admins read the tracker's own answer.
    let trackers = app.get_json("/api/v1/trackers", &admin).await;
    assert!(
        trackers["trackers"][0]["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("AKIA"),
        "{trackers}"
    );
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

/// Issue 61, item 5: eight members link tickets at once while the tracker is slow to
/// answer (the double holds every request until it is released), then eight
/// webhooks come in while it is slow again. No pooled connection waits on the
/// tracker: all eight reach it, and meanwhile other requests are answered at once
/// from a pool of four.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_ticket_links_leave_the_pool_to_everyone_else() {
    let (base, double) = tracker_double::start().await;
    let mut jira = tracker(TrackerKind::Jira, &base);
    jira.create = CreateWhen::OnRequest;
    jira.timeout_secs = 60;
    let app = spawn_app_with(move |s| {
        s.trackers = vec![jira];
        s.database.pool_size = 4;
    })
    .await;
    let admin = app.admin_token();
    let mut links = Vec::new();
    for n in 1..=8 {
        let owner = format!("owner{n}@example.com");
        let (_, id) = coe_with_action(
            &app,
            &admin,
            (&format!("Outage {n}"), &owner),
            (&format!("Fix {n}"), &owner),
        )
        .await;
        double
            .issues
            .lock()
            .expect("lock")
            .push(tracker_double::Issue {
                platform: "jira",
                key: format!("OPS-{n}"),
                id: format!("{}", 20_000 + n),
                place: "OPS".into(),
                status: "To Do".into(),
                category: "new".into(),
                ..Default::default()
            });
        let token = crate::actions::person_token(&app, &format!("owner{n}"), &owner);
        links.push((id, token, format!("OPS-{n}")));
    }
    let probe = links[0].0.clone();

    double.hold.store(true, Ordering::SeqCst);
    let asked: Vec<_> = links
        .iter()
        .map(|(id, token, key)| {
            let client = app.client.clone();
            let url = app.url(&format!("/api/v1/actions/{id}/ticket"));
            let (token, key) = (token.clone(), key.clone());
            tokio::spawn(async move {
                let res = client
                    .post(url)
                    .bearer_auth(token)
                    .json(&json!({"key": key}))
                    .send()
                    .await
                    .expect("sent");
                (res.status().as_u16(), res.text().await.unwrap_or_default())
            })
        })
        .collect();
    all_held_while_others_are_answered(&app, &double, &admin, &probe, "links").await;
    for (task, (id, _, key)) in asked.into_iter().zip(&links) {
        let (status, body) = task.await.expect("the link");
        assert_eq!(status, 202, "{key}: {body}");
        assert_eq!(action(&app, &admin, id).await["ticket"]["key"], json!(key));
    }

    // The same for eight webhooks: each reads its ticket from the slow tracker.
    double.hold.store(true, Ordering::SeqCst);
    let told: Vec<_> = (1..=8)
        .map(|n| {
            let (body, headers) =
                jira_update(&double.issue(&format!("OPS-{n}")), &format!("slow-{n}"));
            let mut req = app
                .client
                .post(app.url("/api/v1/trackers/jira/webhook"))
                .header("content-type", "application/json")
                .body(body);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            tokio::spawn(async move {
                let res = req.send().await.expect("sent");
                (res.status().as_u16(), res.text().await.unwrap_or_default())
            })
        })
        .collect();
    all_held_while_others_are_answered(&app, &double, &admin, &probe, "webhooks").await;
    for task in told {
        let (status, body) = task.await.expect("the webhook");
        assert_eq!(status, 200, "{body}");
    }
    assert!(double.problems().is_empty(), "{:?}", double.problems());
}

/// Waits until eight requests wait on the held tracker (`what` reached it while
/// holding no connection), checks that other requests are answered meanwhile, then
/// releases the tracker.
async fn all_held_while_others_are_answered(
    app: &TestApp,
    double: &tracker_double::Double,
    admin: &str,
    probe: &str,
    what: &str,
) {
    crate::eventually::eventually_async(
        std::time::Duration::from_secs(20),
        &format!("the eight {what} reach the tracker"),
        || async {
            let held = double.held.load(Ordering::SeqCst);
            if held >= 8 {
                Ok(())
            } else {
                Err(format!(
                    "only {held} of the eight {what} reached the tracker: the others wait for a \
                     connection"
                ))
            }
        },
    )
    .await;
    // Eight wait on the tracker; everyone else is answered at once.
    for _ in 0..3 {
        let res = app
            .client
            .get(app.url(&format!("/api/v1/actions/{probe}")))
            .bearer_auth(admin)
            .timeout(std::time::Duration::from_secs(3))
            .send()
            .await
            .expect("an action read while the tracker is slow");
        assert_eq!(res.status(), 200, "{what}");
        let res = app
            .client
            .get(app.url("/readyz"))
            .timeout(std::time::Duration::from_secs(3))
            .send()
            .await
            .expect("/readyz while the tracker is slow");
        assert_eq!(res.status(), 200, "{what}");
    }
    assert_eq!(
        double.held.load(Ordering::SeqCst),
        8,
        "{what}: still waiting on the tracker"
    );
    double.release();
}

/// Issue 61, item 6: a signed delivery captured and posted again under a new delivery
/// id (no tracker signs the id) is answered as a duplicate, asks the tracker nothing
/// and moves nothing, for each tracker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_delivery_replayed_under_a_new_delivery_id_is_a_duplicate() {
    for kind in [TrackerKind::Jira, TrackerKind::Linear, TrackerKind::Github] {
        let (base, double) = tracker_double::start().await;
        let (app, settings) = app_with(vec![tracker(kind, &base)]).await;
        let name = kind.as_str();
        let admin = app.admin_token();
        let (_, id) = coe_with_action(
            &app,
            &admin,
            ("Checkout returned 502", "ana@example.com"),
            ("Add a canary stage", "ana@example.com"),
        )
        .await;
        assert_eq!(deliver(&app, &settings).sent, 1, "{name}");
        let key = double.issues(name)[0].key.clone();
        let done = match kind {
            TrackerKind::Jira => ("Done", "done", Some("Done")),
            TrackerKind::Linear => ("Done", "completed", None),
            TrackerKind::Github => ("closed", "closed", Some("completed")),
        };
        double.set_status(&key, done.0, done.1, done.2);
        let (body, headers) = delivery_of(kind, &double.issue(&key), "captured-1");
        let (status, answer) = webhook(&app, name, &body, &headers).await;
        assert_eq!(
            (status, &answer["duplicate"]),
            (200, &json!(false)),
            "{name}: {answer}"
        );
        assert_eq!(
            action(&app, &admin, &id).await["ticket"]["awaiting"],
            "evidence",
            "{name}"
        );
        let emails = emails_of_kind(&app, "ticket_closed", "ana@example.com");

        // The owner answers; the ticket stays done in the tracker.
        let (status, said) = send(
            &app,
            &admin,
            "POST",
            &format!("/api/v1/actions/{id}/complete"),
            json!({"note": "Canary on", "evidence_url": "https://ci.example.com/runs/1"}),
        )
        .await;
        assert_eq!(status, 200, "{name}: {said}");
        let before = action(&app, &admin, &id).await;
        let asked = double.request_count();

        // The same signed body under new delivery ids.
        for replay in ["replayed-1", "replayed-2"] {
            let mut again = headers.clone();
            for (header, value) in again.iter_mut() {
                if header.ends_with("Delivery") || header.ends_with("Identifier") {
                    *value = replay.to_owned();
                }
            }
            assert_ne!(again, headers, "{name}");
            let (status, answer) = webhook(&app, name, &body, &again).await;
            assert_eq!(
                (status, &answer["duplicate"], &answer["changed"]),
                (200, &json!(true), &Value::Null),
                "{name}: {answer}"
            );
        }
        assert_eq!(
            double.request_count(),
            asked,
            "{name}: the tracker was asked nothing"
        );
        let after = action(&app, &admin, &id).await;
        assert_eq!(
            (&after["state"], &after["ticket"], &after["steps"]),
            (&before["state"], &before["ticket"], &before["steps"]),
            "{name}"
        );
        assert_eq!(
            emails_of_kind(&app, "ticket_closed", "ana@example.com"),
            emails,
            "{name}"
        );
    }
}
