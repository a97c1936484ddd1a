//! COE writeups: drafts that open by themselves, the document with its completeness
//! report, edits guarded by versions, the rules and the lint, recurrence, search,
//! export and history.

use coe::domain::Role;
use diesel::prelude::*;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::helpers::{error_of, fixture, json, spawn_app, spawn_app_with, TestApp};

struct Client {
    app: TestApp,
    ingest: String,
    member: String,
}

impl Client {
    fn with(app: TestApp) -> Client {
        let ingest = app.token("ingest", Role::Ingest);
        let member = app.token("writer", Role::Member);
        Client {
            app,
            ingest,
            member,
        }
    }

    async fn new() -> Client {
        Client::with(spawn_app().await)
    }

    async fn event(&self, body: Value) -> Value {
        let res = self
            .app
            .post_json("/api/v1/events", Some(&self.ingest), &body)
            .await;
        assert!(res.status().is_success(), "{}", res.status());
        json(res).await
    }

    async fn coes(&self, query: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/coes{query}"), &self.member)
            .await
    }

    async fn coe(&self, id: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/coes/{id}"), &self.member)
            .await
    }

    /// Sends a write with `If-Match: "<version>"`; returns status and body.
    async fn write(
        &self,
        method: &str,
        path: &str,
        version: Option<i64>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .request(method.parse().expect("method"), self.app.url(path))
            .bearer_auth(&self.member);
        if let Some(v) = version {
            req = req.header("if-match", format!("\"{v}\""));
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.expect("sent");
        let status = res.status().as_u16();
        let text = res.text().await.expect("text");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The only COE, asserting there is exactly one.
    async fn only_coe(&self) -> Value {
        let page = self.coes("").await;
        assert_eq!(page["total"], 1, "{page}");
        let id = page["coes"][0]["id"].as_str().expect("id").to_owned();
        self.coe(&id).await
    }
}

fn version(doc: &Value) -> i64 {
    doc["version"].as_i64().expect("version")
}

fn missing_keys(doc: &Value) -> Vec<String> {
    doc["completeness"]["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .map(|f| f["at"].as_str().expect("at").to_owned())
        .collect()
}

#[tokio::test]
async fn a_sev2_alertmanager_alert_opens_a_draft_that_lists_what_is_missing() {
    let c = Client::with(
        spawn_app_with(|s| {
            s.ownership
                .services
                .insert("checkout".into(), "Checkout-Lead@example.com".into());
        })
        .await,
    );
    let alert = json!({
        "version": "4", "status": "firing", "groupKey": "{}:{alertname=\"CheckoutErrors\"}",
        "alerts": [{
            "status": "firing", "fingerprint": "ab12",
            "labels": {"alertname": "CheckoutErrors", "severity": "error", "service": "checkout"},
            "annotations": {"summary": "Checkout error rate above 5%", "runbook_url": "https://runbooks.example.com/checkout"},
            "startsAt": "2026-11-29T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "https://prometheus.example.com/graph?g0.expr=errors"
        }]
    });
    let res = c
        .app
        .webhook("alertmanager", Some(&c.ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);

    let doc = c.only_coe().await;
    assert_eq!(doc["state"], "draft");
    assert_eq!(doc["title"], "Checkout error rate above 5%");
    assert_eq!(doc["service"], "checkout");
    assert_eq!(doc["severity"], "sev2");
    assert_eq!(
        doc["owner"], "checkout-lead@example.com",
        "from ownership.services"
    );
    assert_eq!(doc["started_at"], "2026-11-29T10:00:00Z");
    assert!(doc["links"]
        .as_array()
        .expect("links")
        .contains(&json!("https://runbooks.example.com/checkout")));
    let timeline = doc["timeline"].as_array().expect("timeline");
    assert_eq!(timeline.len(), 1);
    assert_eq!(timeline[0]["kind"], "fired");
    assert_eq!(timeline[0]["source"], "alertmanager");
    assert_eq!(timeline[0]["text"], "Fired: Checkout error rate above 5%");
    let sections = doc["sections"].as_array().expect("sections");
    assert_eq!(sections.len(), 12);
    assert_eq!(sections[1]["key"], "impact");
    assert_eq!(
        sections[1]["guidance"],
        "Who was affected and how much: customers, requests, orders, revenue, data. Give numbers."
    );
    assert_eq!(sections[1]["complete"], false);
    assert_eq!(
        missing_keys(&doc),
        [
            "summary",
            "impact",
            "detection",
            "diagnosis",
            "mitigation",
            "prevention",
            "five_whys",
            "lessons",
            "actions"
        ]
    );

    // The alert resolving adds to the timeline and sets the resolution time.
    let mut resolved = alert.clone();
    resolved["alerts"][0]["status"] = json!("resolved");
    resolved["alerts"][0]["endsAt"] = json!("2026-11-29T10:42:00Z");
    c.app
        .webhook("alertmanager", Some(&c.ingest), resolved.to_string(), &[])
        .await;
    let doc = c.only_coe().await;
    assert_eq!(doc["timeline"].as_array().expect("timeline").len(), 2);
    assert_eq!(doc["resolved_at"], "2026-11-29T10:42:00Z");
    assert_eq!(doc["duration_seconds"], 42 * 60);
}

#[tokio::test]
async fn fixtures_at_or_above_the_policy_open_drafts_and_the_others_do_not() {
    for (source, file, opens) in [
        (
            "alertmanager",
            "alertmanager/zulip-alert-2-alerts.json",
            true,
        ),
        (
            "alertmanager",
            "alertmanager/kube-prometheus-etcd-firing.json",
            false,
        ),
        (
            "grafana",
            "grafana/zulip-grafana9-mixed-firing-resolved.json",
            false,
        ),
        (
            "pagerduty",
            "pagerduty/zulip-incident-triggered-v3.json",
            true,
        ),
        (
            "pagerduty",
            "pagerduty/go-pagerduty-incident-priority-updated-SIGNED.json",
            true,
        ),
        ("opsgenie", "opsgenie/zulip-opsgenie-create.json", false),
        (
            "cloudwatch",
            "aws-sns-cloudwatch/COMPOSED-http-notification-cloudwatch-alarm.json",
            true,
        ),
        ("sentry", "sentry/zulip-sentry-issue-resolved.json", true),
    ] {
        let c = Client::new().await;
        let res = c
            .app
            .webhook(source, Some(&c.ingest), fixture(file), &[])
            .await;
        assert_eq!(res.status(), 202, "{file}");
        let page = c.coes("").await;
        assert_eq!(page["total"], if opens { 1 } else { 0 }, "{file}");
        if opens {
            let doc = c.coe(page["coes"][0]["id"].as_str().expect("id")).await;
            assert!(
                !doc["timeline"].as_array().expect("timeline").is_empty(),
                "{file}"
            );
            assert!(doc["incident_id"].is_string(), "{file}");
            assert_eq!(doc["timeline"][0]["source"], source, "{file}");
        }
    }
}

#[tokio::test]
async fn concurrent_events_for_one_incident_open_exactly_one_draft() {
    let c = Client::new().await;
    let mut tasks = JoinSet::new();
    for i in 0..24 {
        let client = c.app.client.clone();
        let url = c.app.url("/api/v1/events");
        let token = c.ingest.clone();
        tasks.spawn(async move {
            client
                .post(url)
                .bearer_auth(token)
                .json(
                    &json!({"dedup_key": format!("a{i}"), "group_key": "db", "severity": "sev1",
                              "title": "Database down", "service": "db"}),
                )
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.expect("task"), 202);
    }
    let doc = c.only_coe().await;
    let timeline = doc["timeline"].as_array().expect("timeline");
    assert_eq!(
        timeline.len(),
        1,
        "the 24 alerts of one name share an entry"
    );
    assert_eq!(timeline[0]["occurrences"], 24, "every event counted once");
    assert_eq!(timeline[0]["hosts"], 24, "no host label: each alert counts");
}

#[tokio::test]
async fn a_stale_write_is_refused_and_never_applied() {
    let c = Client::new().await;
    let (status, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Payments outage", "service": "payments"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id").to_owned();
    let v1 = version(&doc);
    let path = format!("/api/v1/coes/{id}/sections/summary");

    let (status, body) = c
        .write("PUT", &path, None, Some(json!({"body": "no version"})))
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["code"], "version_required");

    let (status, doc) = c
        .write(
            "PUT",
            &path,
            Some(v1),
            Some(json!({"body": "Alice's summary"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(version(&doc), v1 + 1);

    // Bob saw version v1 too.
    let (status, body) = c
        .write(
            "PUT",
            &path,
            Some(v1),
            Some(json!({"body": "Bob's summary"})),
        )
        .await;
    assert_eq!(status, 412, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    assert!(body["error"]["message"]
        .as_str()
        .expect("message")
        .contains(&format!("version {}", v1 + 1)));
    let doc = c.coe(&id).await;
    assert_eq!(doc["sections"][0]["body"], "Alice's summary");

    // The ETag header carries the version.
    let res = c
        .app
        .get(&format!("/api/v1/coes/{id}"), Some(&c.member))
        .await;
    assert_eq!(
        res.headers().get("etag").and_then(|v| v.to_str().ok()),
        Some(format!("\"{}\"", v1 + 1).as_str())
    );
}

#[tokio::test]
async fn the_rules_and_the_intention_lint_apply_to_what_people_write() {
    let c = Client::new().await;
    let (_, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Search outage"})),
        )
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let mut v = version(&doc);
    let guidance = doc["sections"][4]["guidance"]
        .as_str()
        .expect("guidance")
        .to_owned();
    for (key, body) in [
        ("summary", "Search returned errors for 35 minutes."),
        ("impact", "Many customers could not search."),
        ("detection", guidance.as_str()),
        ("diagnosis", "Logs showed a full disk."),
        ("mitigation", "Freed disk space."),
        ("prevention", "We will be more careful with disk usage."),
        ("lessons", "Disk alerts were missing."),
    ] {
        let (status, doc) = c
            .write(
                "PUT",
                &format!("/api/v1/coes/{id}/sections/{key}"),
                Some(v),
                Some(json!({"body": body})),
            )
            .await;
        assert_eq!(status, 200, "{key}: {doc}");
        v = version(&doc);
    }
    let (status, doc) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/timeline"),
            Some(v),
            Some(
                json!({"at": "2026-11-29T09:00:00Z", "kind": "started", "text": "Disk filled up"}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    v = version(&doc);
    let (status, doc) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/whys"),
            Some(v),
            Some(json!({"steps": [
                {"why": "Why did search fail?", "because": "The disk was full."},
                {"why": "Why was the disk full?", "because": "Logs were not rotated."},
            ]})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(
        doc["started_at"], "2026-11-29T09:00:00Z",
        "a started entry sets the COE's start"
    );
    assert_eq!(
        missing_keys(&doc),
        [
            "impact",
            "detection",
            "five_whys",
            "five_whys[0]",
            "actions"
        ],
        "a chain names its contributing factor too"
    );
    let problems: Vec<&str> = doc["completeness"]["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .map(|f| f["problem"].as_str().expect("problem"))
        .collect();
    assert!(problems[0].contains("number"));
    assert_eq!(problems[1], "still holds only its guidance text");
    assert_eq!(problems[2], "needs a chain of at least 3 whys");

    v = version(&doc);
    let chain_id = doc["five_whys"][0]["id"]
        .as_str()
        .expect("chain")
        .to_owned();
    let steps = json!([
        {"why": "Why did search fail?", "because": "The disk was full."},
        {"why": "Why was the disk full?", "because": "Logs were not rotated."},
        {"why": "Why were they not rotated?", "because": "Human error."},
    ]);
    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/whys/{chain_id}"),
            Some(v),
            Some(json!({"steps": steps, "factor": "bad luck"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "factor");
    assert!(
        body["error"]["fields"][0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("monitoring gap")),
        "{body}"
    );
    let (status, doc) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/whys/{chain_id}"),
            Some(v),
            Some(json!({"steps": steps, "factor": "Runbook/Process"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["five_whys"][0]["factor"], "runbook/process");
    assert_eq!(missing_keys(&doc), ["impact", "detection", "actions"]);
    let warnings: Vec<(String, String)> = doc["completeness"]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| {
            (
                w["at"].as_str().unwrap_or("").to_owned(),
                w["problem"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|(at, p)| at == "prevention" && p.contains("be more careful")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|(at, p)| at == "five_whys[0]" && p.contains("human error")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn bad_input_names_the_problem_and_changes_nothing() {
    let c = Client::with(spawn_app_with(|s| s.coe.max_section_bytes = 1024).await);
    let (_, doc) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"title": "T"})))
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let v = version(&doc);

    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/epilogue"),
            Some(v),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(status, 422);
    let problem = body["error"]["fields"][0]["problem"]
        .as_str()
        .expect("problem");
    assert!(problem.contains("summary, impact, timeline"), "{problem}");

    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(v),
            Some(json!({"body": "x".repeat(2000)})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "body");

    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/timeline"),
            Some(v),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");

    for (entry, field) in [
        (json!({"at": "noon", "kind": "note", "text": "x"}), "at"),
        (
            json!({"at": "2026-11-29T10:00:00Z", "kind": "party", "text": "x"}),
            "kind",
        ),
        (
            json!({"at": "2026-11-29T10:00:00Z", "kind": "note", "text": " "}),
            "text",
        ),
    ] {
        let (status, body) = c
            .write(
                "POST",
                &format!("/api/v1/coes/{id}/timeline"),
                Some(v),
                Some(entry),
            )
            .await;
        assert_eq!(status, 422);
        assert_eq!(body["error"]["fields"][0]["field"], field);
    }
    let (status, body) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/whys"),
            Some(v),
            Some(json!({"steps": [{"why": "w", "because": ""}]})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "steps[0].because");
    let (status, _) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/related"),
            Some(v),
            Some(json!({"kind": "link", "url": "javascript:x"})),
        )
        .await;
    assert_eq!(status, 422);
    let (status, body) = c
        .write(
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"owner": "a@example.com", "reviewer": "a@example.com"})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "reviewer");

    assert_eq!(version(&c.coe(&id).await), v, "nothing was written");
    let (status, _) = c.write("GET", "/api/v1/coes/nope", None, None).await;
    assert_eq!(status, 404);
    let (status, _) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"service": "x"})))
        .await;
    assert_eq!(status, 422);
    let (status, _) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"incident_id": "nope"})),
        )
        .await;
    assert_eq!(status, 422);
    error_of(
        c.app.get("/api/v1/coes?state=lost", Some(&c.member)).await,
        422,
    )
    .await;
    error_of(c.app.get("/api/v1/coes", Some(&c.ingest)).await, 403).await;
}

#[tokio::test]
async fn an_approved_coe_cannot_be_edited() {
    let c = Client::new().await;
    let (_, doc) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"title": "T"})))
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    {
        use coe::db::schema::coes;
        let mut conn = c.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&id))
            .set(coes::state.eq("approved"))
            .execute(&mut conn)
            .expect("approve directly: the review step comes with the actions feature");
    }
    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(version(&doc)),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(status, 409);
    assert!(body["error"]["message"]
        .as_str()
        .expect("message")
        .contains("approved"));
}

#[tokio::test]
async fn a_manual_coe_for_an_incident_below_the_policy_is_prefilled_and_only_one() {
    let c = Client::new().await;
    let out = c
        .event(json!({"dedup_key": "slow", "severity": "sev4", "title": "Slow pages", "service": "web"}))
        .await;
    let incident = out["events"][0]["incident_id"]
        .as_str()
        .expect("incident")
        .to_owned();
    assert_eq!(c.coes("").await["total"], 0);
    let (status, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"incident_id": incident, "owner": "web@example.com"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(doc["title"], "Slow pages");
    assert_eq!(doc["owner"], "web@example.com");
    assert_eq!(doc["timeline"].as_array().expect("timeline").len(), 1);
    let (status, body) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"incident_id": incident})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
}

#[tokio::test]
async fn a_recurring_failure_links_to_the_earlier_coe() {
    let c = Client::new().await;
    let fire = |at: &str| {
        json!({"dedup_key": "disk-full", "group_key": "search-disk", "severity": "sev2",
                                 "service": "search", "title": "Disk full", "started_at": at})
    };
    c.event(fire("2026-11-01T10:00:00Z")).await;
    c.event(
        json!({"dedup_key": "disk-full", "group_key": "search-disk", "status": "resolved",
                   "started_at": "2026-11-01T10:00:00Z", "ended_at": "2026-11-01T11:00:00Z"}),
    )
    .await;
    c.event(fire("2026-11-20T10:00:00Z")).await;
    let page = c.coes("").await;
    assert_eq!(page["total"], 2);
    let newest = c.coe(page["coes"][0]["id"].as_str().expect("id")).await;
    let earlier = page["coes"][1]["id"].as_str().expect("id");
    let recurrence = newest["recurrence"].as_array().expect("recurrence");
    assert_eq!(recurrence.len(), 1);
    assert_eq!(recurrence[0]["coe_id"], earlier);
    assert_eq!(recurrence[0]["matched_on"], "alert");
    assert_eq!(recurrence[0]["state"], "draft");
    assert_eq!(recurrence[0]["total_actions"], 0);
    assert_eq!(recurrence[0]["open_actions"], 0);
}

#[tokio::test]
async fn search_finds_a_coe_by_a_word_in_its_five_whys_and_ranks_titles_first() {
    let c = Client::new().await;
    let mut ids = Vec::new();
    for title in [
        "Checkout outage",
        "Search latency",
        "Flibbertigibbet cache stampede",
    ] {
        let (_, doc) = c
            .write(
                "POST",
                "/api/v1/coes",
                None,
                Some(json!({"title": title, "service": "shop"})),
            )
            .await;
        ids.push((doc["id"].as_str().expect("id").to_owned(), version(&doc)));
    }
    let (id, v) = &ids[0];
    let (status, _) = c
        .write("POST", &format!("/api/v1/coes/{id}/whys"), Some(*v), Some(json!({"steps": [
            {"why": "Why did checkout fail?", "because": "The flibbertigibbet queue overflowed."}
        ]})))
        .await;
    assert_eq!(status, 201);
    let (id1, v1) = &ids[1];
    c.write(
        "PUT",
        &format!("/api/v1/coes/{id1}/sections/summary"),
        Some(*v1),
        Some(json!({"body": "Searches were slow because of index rebuilds."})),
    )
    .await;

    let found = c.coes("?q=flibbertigibbet").await;
    assert_eq!(found["total"], 2);
    assert_eq!(
        found["coes"][0]["id"], ids[2].0,
        "a title match ranks first"
    );
    assert_eq!(
        found["coes"][1]["id"], ids[0].0,
        "found by a word in its 5 whys"
    );
    assert!(
        found["coes"][0]["rank"].as_f64().expect("rank")
            >= found["coes"][1]["rank"].as_f64().expect("rank")
    );

    let found = c.coes("?q=rebuilds").await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["coes"][0]["id"], ids[1].0);
    assert_eq!(c.coes("?q=nothing%20like%20this").await["total"], 0);
    // Query syntax in the text is treated as words.
    assert_eq!(c.coes("?q=%22flibbertigibbet%22%20*%20(").await["total"], 2);
    assert_eq!(c.coes("?q=flibbertigibbet&state=closed").await["total"], 0);
    assert_eq!(
        c.coes("?service=shop&limit=2").await["coes"]
            .as_array()
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn export_contains_every_section_heading_and_body() {
    let c = Client::new().await;
    let (_, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Export me"})),
        )
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let mut v = version(&doc);
    let bodies = [
        ("summary", "A *short* summary."),
        ("impact", "1,234 orders <failed>."),
        ("lessons", "We learned."),
    ];
    for (key, body) in bodies {
        let (_, doc) = c
            .write(
                "PUT",
                &format!("/api/v1/coes/{id}/sections/{key}"),
                Some(v),
                Some(json!({"body": body})),
            )
            .await;
        v = version(&doc);
    }
    let (_, doc) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/whys"),
            Some(v),
            Some(
                json!({"steps": [{"why": "Why did orders fail?", "because": "The pool ran out."}]}),
            ),
        )
        .await;
    v = version(&doc);
    c.write(
        "POST",
        &format!("/api/v1/coes/{id}/related"),
        Some(v),
        Some(json!({"kind": "ticket", "url": "https://tickets.example.com/T-1", "title": "T-1"})),
    )
    .await;
    let res = c
        .app
        .get(&format!("/api/v1/coes/{id}/export.md"), Some(&c.member))
        .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .expect("ct")
        .starts_with("text/markdown"));
    let md = res.text().await.expect("text");
    assert!(md.starts_with("# Export me"), "{md}");
    let doc = c.coe(&id).await;
    for section in doc["sections"].as_array().expect("sections") {
        let heading = format!("## {}", section["title"].as_str().expect("title"));
        assert!(md.contains(&heading), "missing {heading}:\n{md}");
    }
    // Markdown stays Markdown; raw HTML is shown as the text it is.
    for body in [
        "A *short* summary.",
        "1,234 orders &lt;failed&gt;.",
        "We learned.",
    ] {
        assert!(md.contains(body), "missing {body}:\n{md}");
    }
    assert!(
        md.contains("1. Why did orders fail? Because the pool ran out."),
        "{md}"
    );
    assert!(
        md.contains("[T-1](<https://tickets.example.com/T-1>)"),
        "{md}"
    );
    assert!(md.contains("`impact`") || !md.contains("Still missing") || md.contains("`detection`"));
}

#[tokio::test]
async fn the_export_shows_hostile_titles_and_links_as_text() {
    let c = Client::new().await;
    let (_, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({
                // (A line break or a control character in a title is refused:
                // `attacks::a_control_character_in_a_title_is_refused_…`.)
                "title": "Checkout # Approved by the VP <script>alert(1)</script> [click](javascript:alert(2))",
                "service": "pay|ments"
            })),
        )
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    assert!(
        doc["title"].as_str().expect("title").contains("<script>"),
        "{doc}"
    );
    let v = version(&doc);
    // A URL that would leave its link is refused on input, naming the field.
    for url in [
        "javascript:alert(1)",
        "https://ok.example.com/a b",
        "data:text/html,x",
        "https://",
    ] {
        let (status, body) = c
            .write(
                "POST",
                &format!("/api/v1/coes/{id}/related"),
                Some(v),
                Some(json!({"kind": "ticket", "url": url, "title": "T"})),
            )
            .await;
        assert_eq!(status, 422, "{url}: {body}");
        assert_eq!(body["error"]["fields"][0]["field"], "url", "{url}: {body}");
    }
    // One with brackets is kept, percent-encoded where a URL may not hold them.
    let (_, doc) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/related"),
            Some(v),
            Some(json!({"kind": "ticket", "url": "https://t.example.com/q?a=<b>\">", "title": "](javascript:x)"})),
        )
        .await;
    assert_eq!(
        doc["related"][0]["url"], "https://t.example.com/q?a=%3Cb%3E%22%3E",
        "{doc}"
    );
    let md = c
        .app
        .get(&format!("/api/v1/coes/{id}/export.md"), Some(&c.member))
        .await
        .text()
        .await
        .expect("text");
    let first = md.lines().next().expect("a first line");
    assert!(
        first.starts_with("# Checkout \\# Approved by the VP \\<script\\>"),
        "{md}"
    );
    assert!(!md.contains('\u{7}'), "{md}");
    assert!(
        !md.contains("\n# Approved") && !md.contains("<script>"),
        "{md}"
    );
    assert!(md.contains("pay\\|ments"), "{md}");
    assert!(
        md.contains("[\\](javascript:x)](<https://t.example.com/q?a=%3Cb%3E%22%3E>)"),
        "{md}"
    );
}

#[tokio::test]
async fn history_records_who_changed_what_before_and_after() {
    let c = Client::new().await;
    let (_, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "History"})),
        )
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let v = version(&doc);
    let (_, doc) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(v),
            Some(json!({"body": "first"})),
        )
        .await;
    let (_, doc) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(version(&doc)),
            Some(json!({"body": "second"})),
        )
        .await;
    c.write(
        "PATCH",
        &format!("/api/v1/coes/{id}"),
        Some(version(&doc)),
        Some(json!({"title": "History, renamed"})),
    )
    .await;
    let history = c
        .app
        .get_json(&format!("/api/v1/coes/{id}/history"), &c.member)
        .await;
    let changes = history["changes"].as_array().expect("changes");
    let actions: Vec<&str> = changes
        .iter()
        .map(|h| h["action"].as_str().expect("action"))
        .collect();
    assert_eq!(
        actions,
        ["opened", "section:summary", "section:summary", "update"]
    );
    assert_eq!(changes[2]["before"]["body"], "first");
    assert_eq!(changes[2]["after"]["body"], "second");
    assert_eq!(changes[3]["before"]["title"], "History");
    assert_eq!(changes[3]["after"]["title"], "History, renamed");
    assert!(changes.iter().all(|h| h["actor"] == "token:writer"));
}

#[tokio::test]
async fn an_organisation_template_is_used_and_a_coe_keeps_the_one_it_was_created_with() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("ours.toml");
    std::fs::write(
        &path,
        r#"
name = "ours"
version = 7
contributing_factors = ["vendor", "our code"]
[[sections]]
key = "what"
title = "What happened"
kind = "text"
required = true
guidance = "Tell the story."
[[sections]]
key = "why"
title = "Why"
kind = "five_whys"
required = true
min_whys = 2
"#,
    )
    .expect("write template");
    let template_path = path.clone();
    let c = Client::with(spawn_app_with(move |s| s.coe.template = Some(template_path)).await);
    let (status, doc) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"title": "Ours"})))
        .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(
        doc["template"],
        json!({"name": "ours", "version": 7, "contributing_factors": ["vendor", "our code"]})
    );
    let keys: Vec<&str> = doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .map(|s| s["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, ["what", "why"]);
    assert_eq!(missing_keys(&doc), ["what", "why"]);
    assert!(doc["completeness"]["missing"][1]["problem"]
        .as_str()
        .expect("p")
        .contains("at least 2 whys"));

    // The template file changes; the COE keeps its own.
    std::fs::write(&path, "name = \"ours\"\nversion = 8\n[[sections]]\nkey = \"other\"\ntitle = \"Other\"\nkind = \"text\"\n")
        .expect("rewrite");
    let id = doc["id"].as_str().expect("id");
    let again = c.coe(id).await;
    assert_eq!(again["template"]["version"], 7);
    assert_eq!(again["sections"][0]["key"], "what");
}

#[tokio::test]
async fn concurrent_writes_on_one_version_let_exactly_one_through() {
    let c = Client::new().await;
    let (_, doc) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"title": "Race"})))
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let v = version(&doc);
    let mut tasks = JoinSet::new();
    for i in 0..8 {
        let client = c.app.client.clone();
        let url = c.app.url(&format!("/api/v1/coes/{id}/sections/summary"));
        let token = c.member.clone();
        tasks.spawn(async move {
            client
                .put(url)
                .bearer_auth(token)
                .header("if-match", format!("\"{v}\""))
                .json(&json!({"body": format!("writer {i}")}))
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        });
    }
    let mut statuses = Vec::new();
    while let Some(s) = tasks.join_next().await {
        statuses.push(s.expect("task"));
    }
    statuses.sort();
    assert_eq!(statuses, [200, 412, 412, 412, 412, 412, 412, 412]);
    assert_eq!(version(&c.coe(&id).await), v + 1);
}

/// Edits of several COEs sent at once (on SQLite they share the writer's commits),
/// each beside a stale edit of the same COE: every edit based on the current version
/// is kept with its history, every stale one is refused and leaves nothing behind.
#[tokio::test]
async fn edits_sent_together_are_kept_or_refused_each_on_its_own() {
    let c = Client::new().await;
    let mut coes = Vec::new();
    for i in 0..6 {
        let (_, doc) = c
            .write(
                "POST",
                "/api/v1/coes",
                None,
                Some(json!({"title": format!("Together {i}")})),
            )
            .await;
        coes.push((doc["id"].as_str().expect("id").to_owned(), version(&doc)));
    }
    let mut tasks = JoinSet::new();
    for (i, (id, v)) in coes.iter().enumerate() {
        for (based_on, body) in [(*v, format!("kept {i}")), (v + 5, format!("stale {i}"))] {
            let client = c.app.client.clone();
            let url = c.app.url(&format!("/api/v1/coes/{id}/sections/summary"));
            let token = c.member.clone();
            tasks.spawn(async move {
                let status = client
                    .put(url)
                    .bearer_auth(token)
                    .header("if-match", format!("\"{based_on}\""))
                    .json(&json!({ "body": body }))
                    .send()
                    .await
                    .expect("sent")
                    .status()
                    .as_u16();
                (body, status)
            });
        }
    }
    while let Some(done) = tasks.join_next().await {
        let (body, status) = done.expect("task");
        let expected = if body.starts_with("kept") { 200 } else { 412 };
        assert_eq!(status, expected, "{body}");
    }
    for (i, (id, v)) in coes.iter().enumerate() {
        let doc = c.coe(id).await;
        assert_eq!(version(&doc), v + 1, "{id}");
        let summary = doc["sections"]
            .as_array()
            .expect("sections")
            .iter()
            .find(|s| s["key"] == "summary")
            .expect("summary");
        assert_eq!(summary["body"], format!("kept {i}"));
        let history = c
            .app
            .get_json(&format!("/api/v1/coes/{id}/history"), &c.member)
            .await;
        let actions: Vec<&str> = history["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|h| h["action"].as_str().expect("action"))
            .collect();
        assert_eq!(actions, ["opened", "section:summary"], "{id}");
    }
}

#[tokio::test]
async fn nul_characters_are_refused_with_a_clear_error() {
    let c = Client::new().await;
    let (_, doc) = c
        .write("POST", "/api/v1/coes", None, Some(json!({"title": "T"})))
        .await;
    let id = doc["id"].as_str().expect("id").to_owned();
    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(version(&doc)),
            Some(json!({"body": "a\u{0}b"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .expect("m")
        .contains("NUL"));
    error_of(c.app.get("/api/v1/coes?q=%00", Some(&c.member)).await, 422).await;
}

#[tokio::test]
async fn concurrent_manual_coes_for_one_incident_make_one_and_refuse_the_rest() {
    let c = Client::new().await;
    let out = c
        .event(json!({"dedup_key": "flaky", "severity": "sev4", "title": "Flaky login", "service": "auth"}))
        .await;
    let incident = out["events"][0]["incident_id"]
        .as_str()
        .expect("incident")
        .to_owned();
    let mut tasks = JoinSet::new();
    for _ in 0..8 {
        let client = c.app.client.clone();
        let url = c.app.url("/api/v1/coes");
        let token = c.member.clone();
        let incident = incident.clone();
        tasks.spawn(async move {
            client
                .post(url)
                .bearer_auth(token)
                .json(&json!({"incident_id": incident}))
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        });
    }
    let mut statuses = Vec::new();
    while let Some(s) = tasks.join_next().await {
        statuses.push(s.expect("task"));
    }
    statuses.sort();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
    assert_eq!(c.coes("").await["total"], 1);
}

#[tokio::test]
async fn milestone_times_follow_the_timeline_when_entries_are_edited_or_deleted() {
    let c = Client::new().await;
    let out = c
        .event(
            json!({"dedup_key": "disk", "severity": "sev4", "title": "Disk full",
                      "started_at": "2026-11-28T08:00:00Z"}),
        )
        .await;
    let incident = out["events"][0]["incident_id"]
        .as_str()
        .expect("incident")
        .to_owned();
    let (status, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"incident_id": incident})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id").to_owned();
    assert_eq!(doc["started_at"], "2026-11-28T08:00:00Z");
    let mut v = version(&doc);
    let entry = |doc: &Value, kind: &str, at: &str| -> String {
        doc["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .find(|e| e["kind"] == kind && e["at"] == at)
            .and_then(|e| e["id"].as_str())
            .expect("entry")
            .to_owned()
    };
    let post = |v: i64, at: &'static str, kind: &'static str| {
        let path = format!("/api/v1/coes/{id}/timeline");
        let c = &c;
        async move {
            let (status, doc) = c
                .write(
                    "POST",
                    &path,
                    Some(v),
                    Some(json!({"at": at, "kind": kind, "text": format!("{kind} noted")})),
                )
                .await;
            assert_eq!(status, 201, "{doc}");
            doc
        }
    };
    let doc = post(v, "2026-11-28T07:50:00Z", "started").await;
    assert_eq!(doc["started_at"], "2026-11-28T07:50:00Z");
    v = version(&doc);
    let doc = post(v, "2026-11-28T08:20:00Z", "mitigated").await;
    assert_eq!(doc["mitigated_at"], "2026-11-28T08:20:00Z");
    v = version(&doc);
    let doc = post(v, "2026-11-28T08:07:00Z", "detected").await;
    assert_eq!(doc["detected_at"], "2026-11-28T08:07:00Z");
    v = version(&doc);
    // Detection is the earliest "detected" entry, whatever order they were written in.
    let doc = post(v, "2026-11-28T08:05:00Z", "detected").await;
    assert_eq!(doc["detected_at"], "2026-11-28T08:05:00Z");
    v = version(&doc);

    // Deleting the earlier "detected" leaves the one still there.
    let earlier = entry(&doc, "detected", "2026-11-28T08:05:00Z");
    let (status, doc) = c
        .write(
            "DELETE",
            &format!("/api/v1/coes/{id}/timeline/{earlier}"),
            Some(v),
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["detected_at"], "2026-11-28T08:07:00Z");
    v = version(&doc);

    // A "mitigated" entry turned into a note leaves the COE with no mitigation time.
    let mitigated = entry(&doc, "mitigated", "2026-11-28T08:20:00Z");
    let (status, doc) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/timeline/{mitigated}"),
            Some(v),
            Some(json!({"at": "2026-11-28T08:20:00Z", "kind": "note", "text": "Not really mitigated"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert!(doc["mitigated_at"].is_null(), "{doc}");
    v = version(&doc);

    // Deleting the person's "started" falls back to the incident's start.
    let started = entry(&doc, "started", "2026-11-28T07:50:00Z");
    let (status, doc) = c
        .write(
            "DELETE",
            &format!("/api/v1/coes/{id}/timeline/{started}"),
            Some(v),
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["started_at"], "2026-11-28T08:00:00Z");
}

#[tokio::test]
async fn a_resolution_time_written_by_a_person_is_not_overwritten_by_alerts() {
    let c = Client::new().await;
    let event = |status: &str| {
        json!({"dedup_key": "queue", "severity": "sev4", "title": "Queue backlog", "status": status,
               "started_at": "2026-11-28T08:00:00Z", "ended_at": "2026-11-28T09:30:00Z"})
    };
    let out = c.event(event("firing")).await;
    let incident = out["events"][0]["incident_id"]
        .as_str()
        .expect("incident")
        .to_owned();
    let (status, doc) = c
        .write(
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"incident_id": incident})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id").to_owned();
    let (status, doc) = c
        .write(
            "POST",
            &format!("/api/v1/coes/{id}/timeline"),
            Some(version(&doc)),
            Some(json!({"at": "2026-11-28T09:00:00Z", "kind": "resolved", "text": "Customers unaffected from here"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(doc["resolved_at"], "2026-11-28T09:00:00Z");
    // The alert resolves later: the timeline gets its entry, the COE keeps the person's time.
    c.event(event("resolved")).await;
    let doc = c.coe(&id).await;
    assert_eq!(doc["resolved_at"], "2026-11-28T09:00:00Z", "{doc}");
    assert!(doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .any(|e| e["kind"] == "resolved" && e["source"].is_string()));
}

#[tokio::test]
async fn repeats_of_an_alert_share_one_counted_entry_until_a_person_edits_it() {
    let c = Client::new().await;
    let fire = |host: &str, minute: u32| {
        json!({"dedup_key": format!("disk-{host}"), "group_key": "storage", "severity": "sev2",
               "title": format!("Disk full on {host}"), "started_at": format!("2026-11-28T08:{minute:02}:00Z"),
               "labels": {"alertname": "DiskFull", "instance": host}})
    };
    c.event(fire("db-1", 5)).await;
    let doc = c.only_coe().await;
    assert_eq!(doc["timeline"][0]["text"], "Fired: Disk full on db-1");
    assert_eq!(doc["timeline"][0]["occurrences"], 1);
    // The same alert again on its host (another occurrence) and on a second host.
    let again = json!({"dedup_key": "disk-db-1", "group_key": "storage", "severity": "sev2",
        "title": "Disk full on db-1",
        "started_at": "2026-11-28T08:20:00Z", "labels": {"alertname": "DiskFull", "instance": "db-1"}});
    c.event(again).await;
    c.event(fire("db-2", 12)).await;
    let doc = c.only_coe().await;
    let timeline = doc["timeline"].as_array().expect("timeline");
    assert_eq!(timeline.len(), 1, "{timeline:#?}");
    let entry = &timeline[0];
    assert_eq!(
        entry["text"],
        "DiskFull fired 3 times between 2026-11-28 08:05 and 08:20 UTC on 2 hosts"
    );
    assert_eq!(entry["occurrences"], 3);
    assert_eq!(entry["hosts"], 2);
    assert_eq!(entry["at"], "2026-11-28T08:05:00Z");
    assert_eq!(entry["last_at"], "2026-11-28T08:20:00Z");

    // A person rewrites it: their words stay, and the next event starts a new entry.
    let id = doc["id"].as_str().expect("id");
    let entry_id = entry["id"].as_str().expect("entry id");
    let (status, body) = c
        .write(
            "PUT",
            &format!("/api/v1/coes/{id}/timeline/{entry_id}"),
            Some(version(&doc)),
            Some(json!({"at": "2026-11-28T08:05:00Z", "kind": "fired",
                        "text": "DiskFull paged on db-1 and db-2; /var filled by logs"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    c.event(fire("db-3", 30)).await;
    let doc = c.only_coe().await;
    let texts: Vec<&str> = doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|e| e["text"].as_str().expect("text"))
        .collect();
    assert_eq!(
        texts,
        [
            "DiskFull paged on db-1 and db-2; /var filled by logs",
            "Fired: Disk full on db-3"
        ]
    );
}
