//! Webhook receivers: every real payload in tests/fixtures/webhooks is taken through
//! HTTP, normalized as expected, and changes nothing when delivered again.

use std::sync::Arc;

use coe::domain::Role;
use coe::ingest::signature::sign_hex;
use serde_json::{json, Value};

use crate::helpers::{
    error_of, fixture, json, spawn_app, spawn_app_with, spawn_app_with_sns, RecordingConfirmer,
    TestApp,
};

/// What one stored event must look like.
struct Expected {
    title: &'static str,
    service: Option<&'static str>,
    severity: &'static str,
    status: &'static str,
    started_at: &'static str,
    ended_at: Option<&'static str>,
}

const fn ev(
    title: &'static str,
    service: Option<&'static str>,
    severity: &'static str,
    status: &'static str,
    started_at: &'static str,
    ended_at: Option<&'static str>,
) -> Expected {
    Expected {
        title,
        service,
        severity,
        status,
        started_at,
        ended_at,
    }
}

/// Everything stored, as (events by id, incidents), for before/after comparisons.
async fn snapshot(app: &TestApp, token: &str) -> (Vec<Value>, Vec<Value>) {
    let page = app.get_json("/api/v1/incidents?limit=500", token).await;
    let incidents = page["incidents"].as_array().expect("incidents").clone();
    let mut events = Vec::new();
    for incident in &incidents {
        let id = incident["id"].as_str().expect("id");
        let detail = app
            .get_json(&format!("/api/v1/incidents/{id}"), token)
            .await;
        events.extend(detail["events"].as_array().expect("events").iter().cloned());
    }
    events.sort_by_key(|e| e["id"].as_str().unwrap_or_default().to_owned());
    (events, incidents)
}

/// Delivers `file` to `source`, checks the stored events against `expected`, then
/// delivers it again and checks that nothing changed.
async fn ingest_fixture(source: &str, file: &str, expected: &[Expected]) -> (TestApp, Vec<Value>) {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let reader = app.token("reader", Role::Member);
    let body = fixture(file);
    let res = app.webhook(source, Some(&ingest), body.clone(), &[]).await;
    assert_eq!(res.status(), 202, "{file}");
    let first = json(res).await;
    let stored = first["events"].as_array().expect("events").clone();
    assert_eq!(stored.len(), expected.len(), "{file}: {first}");

    let mut events = Vec::new();
    for (s, want) in stored.iter().zip(expected) {
        let event = app
            .get_json(
                &format!("/api/v1/events/{}", s["id"].as_str().expect("id")),
                &reader,
            )
            .await;
        assert_eq!(event["title"], want.title, "{file}");
        assert_eq!(event["service"].as_str(), want.service, "{file}: service");
        assert_eq!(event["severity"], want.severity, "{file}: {}", want.title);
        assert_eq!(event["status"], want.status, "{file}: {}", want.title);
        assert_eq!(
            event["started_at"], want.started_at,
            "{file}: {}",
            want.title
        );
        match want.ended_at {
            // Set, to when it was received: a test cannot know the exact time.
            Some("*") => assert!(event["ended_at"].is_string(), "{file}: ended_at"),
            exact => assert_eq!(event["ended_at"].as_str(), exact, "{file}: {}", want.title),
        }
        assert_eq!(event["source"], source);
        // The raw payload is kept as received.
        let raw: Value = serde_json::from_slice(&body).expect("fixture is JSON");
        assert_eq!(event["raw_payload"], raw, "{file}: raw payload");
        events.push(event);
    }

    let before = snapshot(&app, &reader).await;
    let res = app.webhook(source, Some(&ingest), body, &[]).await;
    assert_eq!(res.status(), 200, "{file}: a re-delivery answers 200");
    let second = json(res).await;
    assert_eq!(second["duplicate"], true, "{file}");
    let ids = |v: &Value| -> Vec<Value> {
        v["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["id"].clone())
            .collect()
    };
    assert_eq!(
        ids(&second),
        ids(&first),
        "{file}: the same ids answer a re-delivery"
    );
    assert_eq!(
        snapshot(&app, &reader).await,
        before,
        "{file}: a re-delivery changed something"
    );
    (app, events)
}

async fn incidents(app: &TestApp) -> Vec<Value> {
    let reader = app.token(
        &format!("reader-{}", uuid::Uuid::now_v7().simple()),
        Role::Member,
    );
    app.get_json("/api/v1/incidents?limit=500", &reader).await["incidents"]
        .as_array()
        .expect("incidents")
        .clone()
}

#[tokio::test]
async fn alertmanager_kube_prometheus_firing_then_resolved() {
    let (app, events) = ingest_fixture(
        "alertmanager",
        "alertmanager/kube-prometheus-etcd-firing.json",
        &[ev(
            "etcd database size in use is less than 50% of the actual allocated storage.",
            Some("kube-prometheus-stack-kube-etcd"),
            "sev3",
            "firing",
            "2022-12-14T01:32:49.278Z",
            None,
        )],
    )
    .await;
    assert_eq!(events[0]["dedup_key"], "bc6e3ddcbe61b398");
    assert_eq!(events[0]["labels"]["namespace"], "kube-system");
    assert!(events[0]["links"]
        .as_array()
        .expect("links")
        .contains(&json!(
            "https://etcd.io/docs/v3.5/op-guide/maintenance/#defragmentation"
        )));
    let open = incidents(&app).await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["state"], "open");
    assert_eq!(
        open[0]["needs_coe"], false,
        "sev3 is below the default policy"
    );

    let ingest = app.token("ingest-2", Role::Ingest);
    let res = app
        .webhook(
            "alertmanager",
            Some(&ingest),
            fixture("alertmanager/kube-prometheus-etcd-resolved.json"),
            &[],
        )
        .await;
    assert_eq!(res.status(), 202);
    let after = incidents(&app).await;
    assert_eq!(after.len(), 1, "the resolution joins the same incident");
    assert_eq!(after[0]["state"], "resolved");
    assert_eq!(after[0]["resolved_at"], "2022-12-14T02:13:49.278Z");
    assert_eq!(after[0]["duration_seconds"], 41 * 60);
    assert_eq!(after[0]["event_count"], 2);
}

#[tokio::test]
async fn alertmanager_two_alerts_in_one_group() {
    let t = "High CPU core temperature";
    let (app, events) = ingest_fixture(
        "alertmanager",
        "alertmanager/zulip-alert-2-alerts.json",
        &[
            ev(
                t,
                None,
                "sev1",
                "firing",
                "2020-02-06T00:17:58.432911Z",
                None,
            ),
            ev(
                t,
                None,
                "sev1",
                "firing",
                "2020-02-06T00:17:58.432911Z",
                None,
            ),
        ],
    )
    .await;
    assert_ne!(events[0]["dedup_key"], events[1]["dedup_key"]);
    let all = incidents(&app).await;
    assert_eq!(all.len(), 1, "one group, one incident");
    assert_eq!(all[0]["severity"], "sev1");
    assert_eq!(all[0]["needs_coe"], true, "sev1 meets the default policy");
    assert!(all[0]["coe_required_at"].is_string());
}

#[tokio::test]
async fn alertmanager_alert_without_generator_url() {
    let (_, events) = ingest_fixture(
        "alertmanager",
        "alertmanager/zulip-single-alert-no-generatorURL.json",
        &[ev(
            "High CPU core temperature",
            None,
            "sev1",
            "firing",
            "2020-02-06T00:17:58.432911Z",
            None,
        )],
    )
    .await;
    assert!(events[0]["links"]
        .as_array()
        .expect("links")
        .iter()
        .all(|l| l.as_str().is_some_and(|l| l.starts_with("http"))));
}

#[tokio::test]
async fn alertmanager_twelve_alerts_without_status_or_fingerprint() {
    let expected: Vec<Expected> = (0..12)
        .map(|_| {
            ev(
                "Server High Memory usage",
                None,
                "sev3",
                "firing",
                // 06:33:21.873077559-05:00 in UTC, to the microsecond.
                "2018-03-07T11:33:21.873077Z",
                None,
            )
        })
        .collect();
    let (app, events) = ingest_fixture(
        "alertmanager",
        "alertmanager/msteams-12-alerts.json",
        &expected,
    )
    .await;
    let keys: std::collections::BTreeSet<_> = events
        .iter()
        .map(|e| e["dedup_key"].as_str().expect("key").to_owned())
        .collect();
    assert_eq!(
        keys.len(),
        12,
        "alerts without a fingerprint are told apart by labels"
    );
    assert_eq!(incidents(&app).await.len(), 1);
}

#[tokio::test]
async fn grafana_group_with_firing_and_resolved_alerts() {
    let (app, events) = ingest_fixture(
        "grafana",
        "grafana/zulip-grafana9-mixed-firing-resolved.json",
        &[
            ev(
                "This is a summary field, failure on badhost.example.com",
                Some("rabbitmq"),
                "sev3",
                "resolved",
                "2022-06-17T01:04:00.782137Z",
                Some("2022-06-17T01:08:28.652747Z"),
            ),
            ev(
                "This is a summary field, failure on otherhost.example.com",
                Some("rabbitmq"),
                "sev3",
                "resolved",
                "2022-06-17T01:04:00.782137Z",
                Some("2022-06-17T01:08:28.652747Z"),
            ),
            ev(
                "Testing **another** failing alert",
                None,
                "sev3",
                "firing",
                "2022-06-17T01:03:00.782137Z",
                None,
            ),
        ],
    )
    .await;
    assert!(events[0]["links"]
        .as_array()
        .expect("links")
        .contains(&json!(
            "https://grafana.example.com/alerting/grafana/zTjxv_C7k/view"
        )));
    let all = incidents(&app).await;
    assert_eq!(all.len(), 1, "one group, one incident");
    assert_eq!(
        all[0]["state"], "open",
        "one alert of the group still fires"
    );
    assert_eq!(all[0]["event_count"], 3);
}

#[tokio::test]
async fn grafana_resolved_group() {
    let (app, events) = ingest_fixture(
        "grafana",
        "grafana/zulip-grafana9-resolved.json",
        &[ev(
            "This is a summary field, failure on <no value>",
            None,
            "sev3",
            "resolved",
            "2022-06-17T00:41:00.782137Z",
            Some("2022-06-17T00:51:24.067337Z"),
        )],
    )
    .await;
    assert_eq!(events[0]["kind"], "resolved");
    let all = incidents(&app).await;
    assert_eq!(
        all.len(),
        1,
        "a resolution nobody saw fire is still recorded"
    );
    assert_eq!(all[0]["state"], "resolved");
}

#[tokio::test]
async fn pagerduty_triggered_then_resolved_by_its_own_incident() {
    let (app, events) = ingest_fixture(
        "pagerduty",
        "pagerduty/zulip-incident-triggered-v3.json",
        &[ev(
            "Test Incident 3",
            Some("pig208"),
            "sev2",
            "firing",
            "2021-06-04T13:35:29.781Z",
            None,
        )],
    )
    .await;
    assert_eq!(events[0]["labels"]["urgency"], "high");
    assert_eq!(events[0]["dedup_key"], "PFQZPSY");
    assert_eq!(
        events[0]["links"],
        json!(["https://pig208.pagerduty.com/incidents/PFQZPSY"])
    );
    let all = incidents(&app).await;
    assert_eq!(all[0]["needs_coe"], true, "high urgency maps to sev2");
}

#[tokio::test]
async fn pagerduty_resolved() {
    let (app, _) = ingest_fixture(
        "pagerduty",
        "pagerduty/zulip-incident-resolved-v3.json",
        &[ev(
            "Test Incident",
            Some("pig208"),
            "sev2",
            "resolved",
            "2021-06-04T13:16:53.816Z",
            Some("2021-06-04T13:16:53.816Z"),
        )],
    )
    .await;
    assert_eq!(incidents(&app).await[0]["state"], "resolved");
}

#[tokio::test]
async fn pagerduty_priority_updated() {
    let (app, events) = ingest_fixture(
        "pagerduty",
        "pagerduty/go-pagerduty-incident-priority-updated-SIGNED.json",
        &[ev(
            "A little bump in the road",
            Some("API Service"),
            "sev1",
            "firing",
            "2021-04-26T17:36:27.458Z",
            None,
        )],
    )
    .await;
    assert_eq!(events[0]["kind"], "updated");
    assert_eq!(events[0]["labels"]["priority"], "P1");
    assert_eq!(incidents(&app).await[0]["severity"], "sev1");
}

#[tokio::test]
async fn opsgenie_create() {
    let (_, events) = ingest_fixture(
        "opsgenie",
        "opsgenie/zulip-opsgenie-create.json",
        &[ev(
            "another alert",
            Some("Server"),
            "sev3",
            "firing",
            // createdAt 1502709956288 ms
            "2017-08-14T11:25:56.288Z",
            None,
        )],
    )
    .await;
    assert_eq!(events[0]["dedup_key"], "alert-alias");
    assert_eq!(events[0]["labels"]["tags"], "vip");
    assert_eq!(events[0]["labels"]["tiny_id"], "2");
}

#[tokio::test]
async fn cloudwatch_alarm_through_sns() {
    let (app, events) = ingest_fixture(
        "cloudwatch",
        "aws-sns-cloudwatch/COMPOSED-http-notification-cloudwatch-alarm.json",
        &[ev(
            "EXAMPLE",
            Some("AWS/EC2"),
            "sev2",
            "firing",
            "2015-06-03T17:43:27.123Z",
            None,
        )],
    )
    .await;
    assert_eq!(events[0]["labels"]["metric"], "NetworkOut");
    assert_eq!(events[0]["labels"]["dimension.InstanceId"], "TestInstance");
    assert!(events[0]["description"]
        .as_str()
        .expect("reason")
        .contains("Threshold Crossed"));

    // The same alarm back to OK resolves it.
    let ingest = app.token("ingest-ok", Role::Ingest);
    let mut envelope: Value = serde_json::from_slice(&fixture(
        "aws-sns-cloudwatch/COMPOSED-http-notification-cloudwatch-alarm.json",
    ))
    .expect("json");
    let mut alarm: Value =
        serde_json::from_str(envelope["Message"].as_str().expect("message")).expect("alarm");
    alarm["NewStateValue"] = json!("OK");
    alarm["OldStateValue"] = json!("ALARM");
    alarm["StateChangeTime"] = json!("2015-06-03T18:13:27.123+0000");
    envelope["Message"] = json!(alarm.to_string());
    envelope["MessageId"] = json!("a-second-message");
    let res = app
        .webhook(
            "cloudwatch",
            Some(&ingest),
            envelope.to_string(),
            &[("content-type", "text/plain; charset=UTF-8")],
        )
        .await;
    assert_eq!(res.status(), 202);
    let all = incidents(&app).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["state"], "resolved");
    assert_eq!(all[0]["duration_seconds"], 30 * 60);
}

#[tokio::test]
async fn sentry_issue_resolved() {
    let (app, events) = ingest_fixture(
        "sentry",
        "sentry/zulip-sentry-issue-resolved.json",
        &[ev(
            "Exception: program has entered an invalid state.",
            Some("zulip-integration-testing"),
            "sev2",
            "resolved",
            "2020-04-30T05:54:15.092476Z",
            Some("*"),
        )],
    )
    .await;
    assert_eq!(events[0]["dedup_key"], "1638821441");
    assert_eq!(events[0]["labels"]["level"], "error");
    assert_eq!(incidents(&app).await[0]["state"], "resolved");
}

#[tokio::test]
async fn sns_subscription_is_confirmed_only_for_sns_addresses() {
    let sns = Arc::new(RecordingConfirmer::default());
    let app = spawn_app_with_sns(|_| {}, sns.clone()).await;
    let ingest = app.token("ingest", Role::Ingest);
    let body = fixture("aws-sns-cloudwatch/sns-docs-SubscriptionConfirmation.json");
    let res = app
        .webhook(
            "cloudwatch",
            Some(&ingest),
            body.clone(),
            &[
                ("content-type", "text/plain; charset=UTF-8"),
                ("x-amz-sns-message-type", "SubscriptionConfirmation"),
                (
                    "x-amz-sns-message-id",
                    "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
                ),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["subscription_confirmed"], true);
    assert_eq!(
        sns.urls.lock().expect("lock").as_slice(),
        ["https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336412f37..."]
    );

    let mut evil: Value = serde_json::from_slice(&body).expect("json");
    evil["SubscribeURL"] = json!("https://sns.us-west-2.amazonaws.com.attacker.example/confirm");
    let res = app
        .webhook("cloudwatch", Some(&ingest), evil.to_string(), &[])
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "SubscribeURL");
    assert_eq!(
        sns.urls.lock().expect("lock").len(),
        1,
        "the attacker's URL was not fetched"
    );
    assert!(incidents(&app).await.is_empty());
}

#[tokio::test]
async fn pagerduty_signature_vector_is_accepted_and_the_wrong_one_refused() {
    const SECRET: &str = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK";
    const GOOD: &str = "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd";
    const BAD: &str = "v1=7020c8a7ec668a9b7012bc3dd82e483394b038f4230acc6785efbf2a7d8bcaf5";
    let app = spawn_app_with(|s| s.webhooks.pagerduty_secret = Some(SECRET.into())).await;
    let body = fixture("pagerduty/go-pagerduty-incident-priority-updated-SIGNED.json");

    for (sig, why) in [(Some(BAD), "wrong"), (None, "missing")] {
        let headers: Vec<(&str, &str)> = sig
            .map(|s| ("x-pagerduty-signature", s))
            .into_iter()
            .collect();
        let res = app.webhook("pagerduty", None, body.clone(), &headers).await;
        let (code, message, _) = error_of(res, 401).await;
        assert_eq!(code, "unauthorized", "{why}");
        assert!(message.contains("X-PagerDuty-Signature"), "{message}");
        assert!(
            incidents(&app).await.is_empty(),
            "{why} signature stored something"
        );
    }
    // During a rotation the old and the new signature both come.
    let rotating = format!("{BAD},{GOOD}");
    let res = app
        .webhook(
            "pagerduty",
            None,
            body.clone(),
            &[
                ("x-pagerduty-signature", rotating.as_str()),
                ("x-webhook-id", "d-1"),
            ],
        )
        .await;
    assert_eq!(res.status(), 202);
    let first = json(res).await;
    // The same X-Webhook-Id again: nothing new, the stored ids.
    let res = app
        .webhook(
            "pagerduty",
            None,
            body,
            &[("x-pagerduty-signature", GOOD), ("x-webhook-id", "d-1")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let second = json(res).await;
    assert_eq!(second["duplicate"], true);
    assert_eq!(second["events"][0]["id"], first["events"][0]["id"]);
    assert_eq!(incidents(&app).await.len(), 1);
}

/// Each `v1=` entry used to cost a full HMAC over the body on an async worker: two
/// requests with 1,900 entries stalled the server. A header with more entries than a
/// rotation needs is refused unhashed, and the server keeps answering meanwhile.
#[tokio::test]
async fn pagerduty_header_with_many_signatures_is_refused_and_the_server_keeps_answering() {
    const SECRET: &str = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK";
    const GOOD: &str = "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd";
    let app = spawn_app_with(|s| s.webhooks.pagerduty_secret = Some(SECRET.into())).await;
    let body = fixture("pagerduty/go-pagerduty-incident-priority-updated-SIGNED.json");
    let wrong = format!("v1={}", "ab".repeat(32));
    let flood = vec![wrong.as_str(); 1_900].join(",");
    let res = app
        .webhook(
            "pagerduty",
            None,
            body.clone(),
            &[("x-pagerduty-signature", flood.as_str())],
        )
        .await;
    let (code, message, _) = error_of(res, 401).await;
    assert_eq!(code, "unauthorized");
    assert!(message.contains("more than 8 signatures"), "{message}");
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    // Even the right signature hidden among too many entries is refused.
    let hidden = format!("{},{GOOD}", [wrong.as_str(); 8].join(","));
    let res = app
        .webhook(
            "pagerduty",
            None,
            body.clone(),
            &[("x-pagerduty-signature", hidden.as_str())],
        )
        .await;
    error_of(res, 401).await;
    assert!(incidents(&app).await.is_empty());
    // Up to eight entries, one of them right: accepted.
    let seven_and_good = format!("{},{GOOD}", [wrong.as_str(); 7].join(","));
    let res = app
        .webhook(
            "pagerduty",
            None,
            body,
            &[("x-pagerduty-signature", seven_and_good.as_str())],
        )
        .await;
    assert_eq!(res.status(), 202);
}

#[tokio::test]
async fn grafana_and_sentry_signatures_are_checked() {
    let app = spawn_app_with(|s| {
        s.webhooks.grafana_secret = Some("grafana-secret".into());
        s.webhooks.sentry_secret = Some("sentry-secret".into());
    })
    .await;
    let body = fixture("grafana/zulip-grafana9-resolved.json");
    let ts = chrono::Utc::now().timestamp().to_string();
    let sig = sign_hex("grafana-secret", &[ts.as_bytes(), b":", &body].concat());
    let res = app
        .webhook(
            "grafana",
            None,
            body.clone(),
            &[
                ("x-grafana-alerting-signature", sig.as_str()),
                ("x-grafana-alerting-signature-timestamp", ts.as_str()),
            ],
        )
        .await;
    assert_eq!(res.status(), 202);
    let old = (chrono::Utc::now().timestamp() - 600).to_string();
    let old_sig = sign_hex("grafana-secret", &[old.as_bytes(), b":", &body].concat());
    let res = app
        .webhook(
            "grafana",
            None,
            body,
            &[
                ("x-grafana-alerting-signature", old_sig.as_str()),
                ("x-grafana-alerting-signature-timestamp", old.as_str()),
            ],
        )
        .await;
    let (_, message, _) = error_of(res, 401).await;
    assert!(message.contains("5 minutes"), "{message}");

    let body = fixture("sentry/zulip-sentry-issue-resolved.json");
    let sig = sign_hex("sentry-secret", &body);
    let res = app
        .webhook(
            "sentry",
            None,
            body.clone(),
            &[("sentry-hook-signature", sig.as_str())],
        )
        .await;
    assert_eq!(res.status(), 202);
    let res = app
        .webhook("sentry", None, body, &[("sentry-hook-signature", "00ff")])
        .await;
    error_of(res, 401).await;
}

#[tokio::test]
async fn tokens_authenticate_senders_as_bearer_or_basic_password() {
    let app = spawn_app().await;
    let ingest = app.token("am", Role::Ingest);
    let member = app.token("person", Role::Member);
    let body = fixture("alertmanager/kube-prometheus-etcd-firing.json");

    let res = app.webhook("alertmanager", None, body.clone(), &[]).await;
    let challenges: Vec<&str> = res
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        challenges.iter().any(|c| c.starts_with("Basic")),
        "a Basic challenge, which SNS needs before it sends credentials: {challenges:?}"
    );
    error_of(res, 401).await;
    let res = app
        .webhook("alertmanager", Some("coe_wrong"), body.clone(), &[])
        .await;
    error_of(res, 401).await;
    let res = app
        .webhook("alertmanager", Some(&member), body.clone(), &[])
        .await;
    let (code, _, _) = error_of(res, 403).await;
    assert_eq!(code, "forbidden");
    let reader = app.token("reader", Role::Member);
    assert_eq!(
        app.get_json("/api/v1/incidents", &reader).await["total"],
        0,
        "refused deliveries store nothing"
    );

    let res = app
        .client
        .post(app.url("/api/v1/webhooks/alertmanager"))
        .basic_auth("alertmanager", Some(&ingest))
        .body(body)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 202);
}

#[tokio::test]
async fn an_unknown_source_is_404_listing_the_known_ones() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let res = app.webhook("nagios", Some(&ingest), "{}", &[]).await;
    let (code, message, _) = error_of(res, 404).await;
    assert_eq!(code, "not_found");
    for known in [
        "alertmanager",
        "grafana",
        "pagerduty",
        "opsgenie",
        "cloudwatch",
        "sentry",
    ] {
        assert!(message.contains(known), "{message}");
    }
}

#[tokio::test]
async fn bad_payloads_are_refused_naming_the_problem_and_store_nothing() {
    let app = spawn_app_with(|s| s.webhooks.max_body_bytes = 4096).await;
    let ingest = app.token("ingest", Role::Ingest);
    let reader = app.token("reader", Role::Member);

    let res = app
        .webhook("alertmanager", Some(&ingest), "{\"alerts\": [", &[])
        .await;
    let (code, message, _) = error_of(res, 400).await;
    assert_eq!(code, "malformed_json");
    assert!(message.contains("line 1"), "{message}");

    let res = app
        .webhook("alertmanager", Some(&ingest), r#"{"version":"4"}"#, &[])
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0], ("alerts".to_owned(), "is required".to_owned()));

    let res = app
        .webhook(
            "alertmanager",
            Some(&ingest),
            r#"{"alerts":[{"status":"firing","labels":{},"startsAt":"2026-01-01T00:00:00Z"},{"status":"firing","startsAt":"soon"}]}"#,
            &[],
        )
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "alerts[1].startsAt");
    assert_eq!(
        app.get_json("/api/v1/incidents", &reader).await["total"],
        0,
        "the valid first alert was not stored either: all or nothing"
    );

    let res = app
        .webhook(
            "pagerduty",
            Some(&ingest),
            r#"{"event":{"event_type":"incident.triggered"}}"#,
            &[],
        )
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "event.id");

    let big = format!("{{\"alerts\":[],\"pad\":\"{}\"}}", "x".repeat(5000));
    let res = app.webhook("alertmanager", Some(&ingest), big, &[]).await;
    let (code, message, _) = error_of(res, 413).await;
    assert_eq!(code, "payload_too_large");
    assert!(message.contains("4096"), "{message}");
}

#[tokio::test]
async fn event_types_that_are_not_failures_are_acknowledged_and_ignored() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let mut pd: Value =
        serde_json::from_slice(&fixture("pagerduty/zulip-incident-triggered-v3.json"))
            .expect("json");
    pd["event"]["event_type"] = json!("incident.annotated");
    let res = app
        .webhook("pagerduty", Some(&ingest), pd.to_string(), &[])
        .await;
    assert_eq!(res.status(), 200);
    assert!(json(res).await["ignored"]
        .as_str()
        .expect("reason")
        .contains("incident.annotated"));

    let mut og: Value =
        serde_json::from_slice(&fixture("opsgenie/zulip-opsgenie-create.json")).expect("json");
    og["action"] = json!("AddNote");
    let res = app
        .webhook("opsgenie", Some(&ingest), og.to_string(), &[])
        .await;
    assert_eq!(res.status(), 200);
    assert!(incidents(&app).await.is_empty());
}

#[tokio::test]
async fn new_fields_emoji_dotted_labels_big_ids_and_nanoseconds_survive() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let reader = app.token("reader", Role::Member);
    let body = json!({
        "version": "4",
        "status": "firing",
        "notification_reason": "new in a later Alertmanager",
        "routeLabels": {"team": "payments"},
        "groupKey": "{}:{alertname=\"Checkout🔥\"}",
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "Checkout🔥", "app.kubernetes.io/name": "checkout", "severity": "critical",
                       "request_id": "1234567890123456789"},
            "annotations": {"summary": "Checkout is on fire 🔥🧯"},
            "startsAt": "2026-11-29T10:00:00.123456789Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "f1",
            "someFutureField": {"nested": [1, 2, 3]}
        }]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), body.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    let id = json(res).await["events"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let event = app.get_json(&format!("/api/v1/events/{id}"), &reader).await;
    assert_eq!(event["title"], "Checkout is on fire 🔥🧯");
    assert_eq!(event["labels"]["app.kubernetes.io/name"], "checkout");
    assert_eq!(event["labels"]["request_id"], "1234567890123456789");
    assert_eq!(event["started_at"], "2026-11-29T10:00:00.123456Z");
    assert_eq!(
        event["raw_payload"]["alerts"][0]["startsAt"],
        "2026-11-29T10:00:00.123456789Z"
    );

    // Opsgenie's nanosecond updatedAt (above 2^53) and a 19-digit PagerDuty number.
    let mut og: Value =
        serde_json::from_slice(&fixture("opsgenie/zulip-opsgenie-create.json")).expect("json");
    og["action"] = json!("Close");
    let res = app
        .webhook("opsgenie", Some(&ingest), og.to_string(), &[])
        .await;
    let id = json(res).await["events"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let event = app.get_json(&format!("/api/v1/events/{id}"), &reader).await;
    assert_eq!(event["ended_at"], "2017-08-14T11:25:56.288Z");
    assert_eq!(
        event["raw_payload"]["alert"]["updatedAt"],
        json!(1502709956288000110_u64)
    );

    let mut pd: Value =
        serde_json::from_slice(&fixture("pagerduty/zulip-incident-triggered-v3.json"))
            .expect("json");
    pd["event"]["data"]["number"] = json!(9223372036854775807_u64);
    let res = app
        .webhook("pagerduty", Some(&ingest), pd.to_string(), &[])
        .await;
    let id = json(res).await["events"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let event = app.get_json(&format!("/api/v1/events/{id}"), &reader).await;
    assert_eq!(event["labels"]["incident_number"], "9223372036854775807");
}

/// An Alertmanager delivery of one firing alert of group `group`, started at `starts`.
fn alertmanager_alert(group: &str, fingerprint: &str, starts: &str) -> String {
    json!({
        "receiver": "coe", "status": "firing", "version": "4",
        "groupKey": format!("{{}}:{{alertname=\"{group}\"}}"),
        "groupLabels": {"alertname": group},
        "commonLabels": {"alertname": group, "severity": "critical", "service": "payments-db"},
        "commonAnnotations": {"summary": "Payments database failed over"},
        "externalURL": "http://alertmanager:9093",
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": group, "severity": "critical", "service": "payments-db",
                       "instance": fingerprint},
            "annotations": {"summary": "Payments database failed over",
                            "description": "The primary stopped answering;\nthe replica took over.",
                            "runbook_url": "https://runbooks.example.com/payments-db",
                            "dashboard": "javascript:alert(1)"},
            "startsAt": starts, "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "https://prometheus.example.com/graph?g0.expr=up",
            "fingerprint": fingerprint
        }]
    })
    .to_string()
}

#[tokio::test]
async fn an_outage_is_detected_when_its_first_alert_started_not_when_coe_heard_of_it() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let admin = app.admin_token();
    let now = chrono::Utc::now();
    let stamp = |minutes_ago: i64| {
        (now - chrono::Duration::minutes(minutes_ago))
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    // A time the API gave, as a time (the API writes as few decimals as it needs).
    let at = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339")
    };
    let minutes_ago = |m: i64| chrono::DateTime::parse_from_rfc3339(&stamp(m)).expect("RFC 3339");
    let res = app
        .webhook(
            "alertmanager",
            Some(&ingest),
            alertmanager_alert("PaymentsDbFailover", "a1", &stamp(30)),
            &[],
        )
        .await;
    assert_eq!(res.status(), 202);
    let incidents = app.get_json("/api/v1/incidents", &admin).await;
    let incident = &incidents["incidents"][0];
    assert_eq!(at(&incident["started_at"]), minutes_ago(30));
    assert_eq!(
        at(&incident["detected_at"]),
        minutes_ago(30),
        "the alert's own start"
    );
    let received = incident["received_at"].clone();
    assert!(
        at(&received) > minutes_ago(1),
        "received just now: {received}"
    );
    let incident_id = incident["id"].as_str().expect("id").to_owned();

    // The COE opened at the policy takes its detection from the alert.
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let coe_id = coes["coes"][0]["id"].as_str().expect("a draft").to_owned();
    let coe = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    assert_eq!(coe["incident_id"], incident_id);
    assert_eq!(at(&coe["detected_at"]), minutes_ago(30));

    // An alert of the same group that started earlier moves both back.
    let res = app
        .webhook(
            "alertmanager",
            Some(&ingest),
            alertmanager_alert("PaymentsDbFailover", "a2", &stamp(40)),
            &[],
        )
        .await;
    assert_eq!(res.status(), 202);
    let incident = app
        .get_json(&format!("/api/v1/incidents/{incident_id}"), &admin)
        .await;
    let incident = incident.get("incident").unwrap_or(&incident).clone();
    assert_eq!(at(&incident["detected_at"]), minutes_ago(40));
    assert_eq!(at(&incident["started_at"]), minutes_ago(40));
    assert_eq!(
        incident["received_at"], received,
        "the time of receipt stays"
    );
    let coe = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    assert_eq!(at(&coe["detected_at"]), minutes_ago(40));
    assert_eq!(at(&coe["started_at"]), minutes_ago(40));

    // A mitigation written 20 minutes ago comes after the detection on the printable view.
    let mitigated = (now - chrono::Duration::minutes(20))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let res = app
        .client
        .post(app.url(&format!("/api/v1/coes/{coe_id}/timeline")))
        .bearer_auth(&admin)
        .header("if-match", format!("\"{}\"", coe["version"]))
        .json(&json!({"at": mitigated, "kind": "mitigated", "text": "Failed back"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 201);
    let coe = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await;
    assert!(
        at(&coe["detected_at"]) < at(&coe["mitigated_at"]),
        "detected before mitigated: {coe}"
    );

    // The incident page shows what the alerts said; only web links are links.
    let cookie = crate::pages::sign_in(&app, "ana@example.com").await;
    let html = crate::pages::get_page(&app, &format!("/incidents/{incident_id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    for text in [
        "What the alerts said",
        "PaymentsDbFailover: Payments database failed over",
        "The primary stopped answering;\nthe replica took over.",
        "<a href=\"https://runbooks.example.com/payments-db\" rel=\"noopener noreferrer\">",
        "<a href=\"https://prometheus.example.com/graph?g0.expr=up\"",
        "<dd>javascript:alert(1)</dd>",
        "<code>service=payments-db</code>",
        "Received by coe",
    ] {
        assert!(html.contains(text), "{text}: {html}");
    }
    // The list links each incident to its COE, with the COE's state.
    let html = crate::pages::get_page(&app, "/incidents", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains(&format!("<a href=\"/coes/{coe_id}\">draft</a>")),
        "{html}"
    );
}

/// Issue 51 item 12: an alert storm (the same alert from twenty instances) reads on
/// its incident's page as one alert of twenty instances, each named by what sets it
/// apart, not as twenty entries of the same name.
#[tokio::test]
async fn an_alert_storm_reads_as_one_alert_of_many_instances() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", Role::Ingest);
    let admin = app.admin_token();
    let starts = (chrono::Utc::now() - chrono::Duration::minutes(10))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    for n in 0..20 {
        let res = app
            .webhook(
                "alertmanager",
                Some(&ingest),
                alertmanager_alert("PaymentsDbFailover", &format!("db-{n}"), &starts),
                &[],
            )
            .await;
        assert_eq!(res.status(), 202);
    }
    let incidents = app.get_json("/api/v1/incidents", &admin).await;
    let incidents = incidents["incidents"]
        .as_array()
        .expect("incidents")
        .clone();
    assert_eq!(incidents.len(), 1, "one incident for the group");
    let cookie = crate::pages::sign_in(&app, "ana@example.com").await;
    let id = incidents[0]["id"].as_str().expect("id");
    let html = crate::pages::get_page(&app, &format!("/incidents/{id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert_eq!(
        html.matches("class=\"box alert-said\"").count(),
        1,
        "{html}"
    );
    assert!(html.contains("(20 alerts)"), "{html}");
    for n in 0..20 {
        assert!(
            html.contains(&format!("<li><code>instance=db-{n}</code></li>")),
            "db-{n}"
        );
    }
    assert!(
        html.contains("Shared by all: <code>alertname=PaymentsDbFailover</code>"),
        "{html}"
    );
}
