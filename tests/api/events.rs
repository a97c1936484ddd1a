//! The generic event API and the incident life cycle: grouping, worst severity,
//! resolution, the reopen window, the COE mark, and the incident read API.

use coe::domain::Role;
use serde_json::{json, Value};

use crate::helpers::{error_of, json, spawn_app, spawn_app_with, TestApp};

struct Client {
    app: TestApp,
    ingest: String,
    reader: String,
}

impl Client {
    async fn new() -> Client {
        Client::with(spawn_app().await)
    }

    fn with(app: TestApp) -> Client {
        let ingest = app.token("ingest", Role::Ingest);
        let reader = app.token("reader", Role::Member);
        Client {
            app,
            ingest,
            reader,
        }
    }

    async fn post(&self, body: Value) -> Value {
        let res = self
            .app
            .post_json("/api/v1/events", Some(&self.ingest), &body)
            .await;
        let status = res.status().as_u16();
        let body = json(res).await;
        assert!(status == 202 || status == 200, "{status}: {body}");
        body
    }

    async fn incidents(&self, query: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/incidents{query}"), &self.reader)
            .await
    }

    async fn incident(&self, id: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/incidents/{id}"), &self.reader)
            .await
    }
}

fn incident_of(outcome: &Value, i: usize) -> String {
    outcome["events"][i]["incident_id"]
        .as_str()
        .expect("incident id")
        .to_owned()
}

#[tokio::test]
async fn events_of_a_group_form_one_incident_with_the_worst_severity() {
    let c = Client::new().await;
    let out = c
        .post(json!([
            {"dedup_key": "db-1", "group_key": "db", "title": "Replica lag", "service": "orders-db",
             "severity": "sev4", "started_at": "2026-11-29T10:00:00Z"},
            {"dedup_key": "db-2", "group_key": "db", "title": "Primary down", "severity": "critical",
             "started_at": "2026-11-29T09:58:00Z"}
        ]))
        .await;
    let id = incident_of(&out, 0);
    assert_eq!(incident_of(&out, 1), id);
    let incident = c.incident(&id).await;
    assert_eq!(incident["severity"], "sev1");
    assert_eq!(
        incident["title"], "Replica lag",
        "the first event names the incident"
    );
    assert_eq!(incident["service"], "orders-db");
    assert_eq!(
        incident["started_at"], "2026-11-29T09:58:00Z",
        "the earliest start"
    );
    assert_eq!(incident["state"], "open");
    assert_eq!(incident["events"].as_array().expect("events").len(), 2);
    assert_eq!(incident["needs_coe"], true);
}

#[tokio::test]
async fn an_incident_resolves_when_every_alert_has_resolved() {
    let c = Client::new().await;
    let fire = |key: &str| json!({"dedup_key": key, "group_key": "g", "started_at": "2026-11-29T10:00:00Z"});
    let resolve = |key: &str, at: &str| {
        json!({"dedup_key": key, "group_key": "g", "status": "resolved",
               "started_at": "2026-11-29T10:00:00Z", "ended_at": at})
    };
    let out = c.post(json!([fire("a"), fire("b")])).await;
    let id = incident_of(&out, 0);
    c.post(resolve("a", "2026-11-29T10:10:00Z")).await;
    assert_eq!(c.incident(&id).await["state"], "open", "b still fires");
    c.post(resolve("b", "2026-11-29T10:20:00Z")).await;
    let incident = c.incident(&id).await;
    assert_eq!(incident["state"], "resolved");
    assert_eq!(incident["resolved_at"], "2026-11-29T10:20:00Z");
    assert_eq!(incident["duration_seconds"], 20 * 60);
}

#[tokio::test]
async fn the_same_alert_within_the_reopen_window_reopens_later_it_opens_a_new_incident() {
    let c = Client::new().await;
    let fire = |at: &str| json!({"dedup_key": "api-5xx", "started_at": at});
    let resolve = |start: &str, end: &str| json!({"dedup_key": "api-5xx", "status": "resolved", "started_at": start, "ended_at": end});
    let first = incident_of(&c.post(fire("2026-11-29T10:00:00Z")).await, 0);
    c.post(resolve("2026-11-29T10:00:00Z", "2026-11-29T10:05:00Z"))
        .await;
    assert_eq!(c.incident(&first).await["state"], "resolved");

    // Fires again 30 minutes after resolving: within the default hour.
    let again = incident_of(&c.post(fire("2026-11-29T10:35:00Z")).await, 0);
    assert_eq!(again, first);
    let incident = c.incident(&first).await;
    assert_eq!(incident["state"], "open");
    assert_eq!(incident["reopened_count"], 1);
    assert!(incident["resolved_at"].is_null());
    c.post(resolve("2026-11-29T10:35:00Z", "2026-11-29T10:40:00Z"))
        .await;

    // Fires again two hours later: a new incident.
    let later = incident_of(&c.post(fire("2026-11-29T12:41:00Z")).await, 0);
    assert_ne!(later, first);
    assert_eq!(c.incidents("").await["total"], 2);
}

#[tokio::test]
async fn the_reopen_window_is_a_setting() {
    let c = Client::with(spawn_app_with(|s| s.incidents.reopen_window_secs = 60).await);
    let first = incident_of(
        &c.post(json!({"dedup_key": "k", "started_at": "2026-11-29T10:00:00Z"}))
            .await,
        0,
    );
    c.post(
        json!({"dedup_key": "k", "status": "resolved", "started_at": "2026-11-29T10:00:00Z",
                  "ended_at": "2026-11-29T10:01:00Z"}),
    )
    .await;
    let second = incident_of(
        &c.post(json!({"dedup_key": "k", "started_at": "2026-11-29T10:03:00Z"}))
            .await,
        0,
    );
    assert_ne!(first, second, "two minutes is past a one-minute window");
}

#[tokio::test]
async fn the_coe_mark_is_set_when_an_incident_reaches_the_policy() {
    let c = Client::new().await;
    let id = incident_of(
        &c.post(json!({"dedup_key": "x", "group_key": "pay", "severity": "sev3"}))
            .await,
        0,
    );
    let incident = c.incident(&id).await;
    assert_eq!(incident["needs_coe"], false);
    assert!(incident["coe_required_at"].is_null());

    c.post(json!({"dedup_key": "y", "group_key": "pay", "severity": "high"}))
        .await;
    let incident = c.incident(&id).await;
    assert_eq!(incident["severity"], "sev2");
    assert_eq!(incident["needs_coe"], true);
    let marked = incident["coe_required_at"].clone();
    assert!(marked.is_string());

    // A later, milder event changes neither the severity nor the mark.
    c.post(json!({"dedup_key": "z", "group_key": "pay", "severity": "info"}))
        .await;
    let incident = c.incident(&id).await;
    assert_eq!(incident["severity"], "sev2");
    assert_eq!(incident["coe_required_at"], marked);
}

#[tokio::test]
async fn the_coe_policy_is_a_setting() {
    let c = Client::with(
        spawn_app_with(|s| s.policy.coe_at_or_above = coe::domain::Severity::Sev1).await,
    );
    let id = incident_of(
        &c.post(json!({"dedup_key": "x", "severity": "sev2"})).await,
        0,
    );
    assert_eq!(c.incident(&id).await["needs_coe"], false);
}

#[tokio::test]
async fn reposting_an_event_stores_nothing_new() {
    let c = Client::new().await;
    let event = json!({"dedup_key": "same", "started_at": "2026-11-29T10:00:00Z", "title": "Same"});
    let first = c.post(event.clone()).await;
    let res = c
        .app
        .post_json("/api/v1/events", Some(&c.ingest), &event)
        .await;
    assert_eq!(res.status(), 200);
    let second = json(res).await;
    assert_eq!(second["duplicate"], true);
    assert_eq!(second["events"][0]["id"], first["events"][0]["id"]);
    let incidents = c.incidents("").await;
    assert_eq!(incidents["total"], 1);
    assert_eq!(incidents["incidents"][0]["event_count"], 1);
}

#[tokio::test]
async fn bad_events_name_the_field_and_store_nothing() {
    let c = Client::new().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({"title": "no key"}), "dedup_key"),
        (json!({"dedup_key": ""}), "dedup_key"),
        (json!({"dedup_key": "k", "severity": "sev9"}), "severity"),
        (json!({"dedup_key": "k", "status": "exploded"}), "status"),
        (
            json!({"dedup_key": "k", "started_at": "last tuesday"}),
            "started_at",
        ),
        (json!({"dedup_key": "k", "labels": {"a": 1}}), "labels.a"),
        (json!({"dedup_key": "k", "source": "Has Spaces"}), "source"),
        (
            json!([{"dedup_key": "ok"}, {"dedup_key": "ok2"}, {"dedup_key": 7}]),
            "[2].dedup_key",
        ),
        (json!([]), "body"),
        (json!("a string"), "body"),
    ];
    for (body, field) in cases {
        let res = c
            .app
            .post_json("/api/v1/events", Some(&c.ingest), &body)
            .await;
        let (code, _, fields) = error_of(res, 422).await;
        assert_eq!(code, "validation_failed", "{body}");
        assert_eq!(fields[0].0, field, "{body}");
    }
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"dedup_key": format!("k{i}")}))
        .collect();
    let res = c
        .app
        .post_json("/api/v1/events", Some(&c.ingest), &json!(too_many))
        .await;
    let (_, message, _) = error_of(res, 422).await;
    assert!(message.contains("1000"), "{message}");
    assert_eq!(c.incidents("").await["total"], 0, "nothing was stored");

    let (_, _, _) = error_of(
        c.app
            .post_raw("/api/v1/events", Some(&c.ingest), "[{\"dedup_key\": ")
            .await,
        400,
    )
    .await;
    error_of(
        c.app
            .post_json(
                "/api/v1/events",
                Some(&c.reader),
                &json!({"dedup_key": "k"}),
            )
            .await,
        403,
    )
    .await;
    error_of(
        c.app
            .post_json("/api/v1/events", None, &json!({"dedup_key": "k"}))
            .await,
        401,
    )
    .await;
}

#[tokio::test]
async fn nul_characters_and_huge_keys_are_stored_safely() {
    let c = Client::new().await;
    // Our own API says its limits: each oversized field is named, nothing is written.
    for (field, body) in [
        ("dedup_key", json!({"dedup_key": "k".repeat(513)})),
        (
            "group_key",
            json!({"dedup_key": "k", "group_key": "g".repeat(9 * 1024 * 1024 / 8)}),
        ),
        ("title", json!({"dedup_key": "k", "title": "t".repeat(501)})),
        (
            "service",
            json!({"dedup_key": "k", "service": "s".repeat(201)}),
        ),
    ] {
        let res = c
            .app
            .post_json("/api/v1/events", Some(&c.ingest), &body)
            .await;
        let (_, message, fields) = error_of(res, 422).await;
        assert!(
            fields.iter().any(|(f, _)| f == field),
            "{field}: {message} {fields:?}"
        );
        assert!(message.contains("at most"), "{message}");
    }
    assert_eq!(c.incidents("").await["total"], 0);

    let out = c
        .post(
            json!({"dedup_key": format!("k\u{0}{}", "x".repeat(300)), "title": "nul\u{0}title",
                     "labels": {"a\u{0}b": "c\u{0}d"}, "group_key": "g".repeat(500)}),
        )
        .await;
    let id = out["events"][0]["id"].as_str().expect("id");
    let event = c
        .app
        .get_json(&format!("/api/v1/events/{id}"), &c.reader)
        .await;
    assert_eq!(event["title"], "nul\u{fffd}title");
    assert_eq!(event["labels"]["a\u{fffd}b"], "c\u{fffd}d");
    assert_eq!(event["group_key"].as_str().expect("group").len(), 500);

    // A sender cannot be asked to change: its oversized keys are stored as their
    // hash (the same key, the same hash: grouping holds), its service cut.
    let payload = |alert: &str| {
        json!({"version": "4", "status": "firing", "receiver": "coe", "groupKey": "G".repeat(9000),
               "alerts": [{"status": "firing", "labels": {"alertname": alert, "service": "s".repeat(300)},
                           "annotations": {}, "startsAt": "2026-11-29T10:00:00Z", "fingerprint": alert}]})
        .to_string()
    };
    for alert in ["a1", "a2"] {
        let res = c
            .app
            .webhook("alertmanager", Some(&c.ingest), payload(alert), &[])
            .await;
        assert!(res.status().is_success(), "{}", res.status());
    }
    let incidents = c.incidents("").await;
    assert_eq!(
        incidents["total"], 2,
        "the API's event and one alertmanager group: {incidents}"
    );
    let grouped = incidents["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .find(|i| {
            i["group_key"]
                .as_str()
                .is_some_and(|g| g.starts_with("sha256:"))
        })
        .expect("the hashed group");
    assert_eq!(
        grouped["service"].as_str().expect("service").len(),
        200,
        "{grouped}"
    );
}

#[tokio::test]
async fn only_web_links_are_kept_and_labels_survive() {
    let c = Client::new().await;
    let out = c
        .post(json!({"dedup_key": "k", "links": ["https://runbook.example/x", "javascript:alert(1)", "file:///etc/passwd"],
                     "labels": {"team": "payments", "k8s.io/app": "checkout"}, "description": "🔥"}))
        .await;
    let id = out["events"][0]["id"].as_str().expect("id");
    let event = c
        .app
        .get_json(&format!("/api/v1/events/{id}"), &c.reader)
        .await;
    assert_eq!(event["links"], json!(["https://runbook.example/x"]));
    assert_eq!(event["labels"]["k8s.io/app"], "checkout");
    assert_eq!(event["description"], "🔥");
    assert_eq!(event["source"], "api");
}

#[tokio::test]
async fn incidents_are_listed_newest_first_with_filters_and_pages() {
    let c = Client::new().await;
    let mut events = Vec::new();
    for i in 0..7 {
        events.push(json!({
            "dedup_key": format!("k{i}"),
            "group_key": format!("g{i}"),
            "service": if i % 2 == 0 { "checkout" } else { "search" },
            "severity": format!("sev{}", i % 5 + 1),
            "started_at": format!("2026-11-2{}T10:00:00Z", i + 1),
        }));
    }
    c.post(json!(events)).await;
    c.post(
        json!({"dedup_key": "k0", "group_key": "g0", "status": "resolved",
                  "started_at": "2026-11-21T10:00:00Z", "ended_at": "2026-11-21T11:00:00Z"}),
    )
    .await;

    let all = c.incidents("").await;
    assert_eq!(all["total"], 7);
    let starts: Vec<&str> = all["incidents"]
        .as_array()
        .expect("list")
        .iter()
        .map(|i| i["started_at"].as_str().expect("start"))
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(starts, sorted, "newest first");

    let page = c.incidents("?limit=3&offset=3").await;
    assert_eq!(page["incidents"].as_array().expect("list").len(), 3);
    assert_eq!(page["incidents"][0]["started_at"], starts[3]);

    assert_eq!(c.incidents("?service=checkout").await["total"], 4);
    assert_eq!(c.incidents("?status=resolved").await["total"], 1);
    assert_eq!(c.incidents("?status=open").await["total"], 6);
    assert_eq!(c.incidents("?severity=sev1").await["total"], 2);
    assert_eq!(c.incidents("?min_severity=sev2").await["total"], 4);
    assert_eq!(c.incidents("?needs_coe=true").await["total"], 4);
    assert_eq!(
        c.incidents("?since=2026-11-23T00:00:00Z&until=2026-11-25T00:00:00Z")
            .await["total"],
        2
    );

    for (query, field) in [
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?offset=-1", "offset"),
        ("?severity=bad", "severity"),
        ("?status=maybe", "status"),
        ("?since=yesterday", "since"),
        ("?colour=red", "colour"),
    ] {
        let res = c
            .app
            .get(&format!("/api/v1/incidents{query}"), Some(&c.reader))
            .await;
        let (_, _, fields) = error_of(res, 422).await;
        assert_eq!(fields[0].0, field, "{query}");
    }
}

#[tokio::test]
async fn unknown_incidents_and_events_are_404() {
    let c = Client::new().await;
    for path in [
        "/api/v1/incidents/nope",
        "/api/v1/events/nope",
        "/api/v1/incidents/%00",
        "/api/v1/events/%00%00",
    ] {
        let (code, _, _) = error_of(c.app.get(path, Some(&c.reader)).await, 404).await;
        assert_eq!(code, "not_found", "{path}");
    }
    // An ingest token may post but not read.
    error_of(c.app.get("/api/v1/incidents", Some(&c.ingest)).await, 403).await;
}

#[tokio::test]
async fn raw_bodies_older_than_keep_raw_days_are_emptied_by_the_sweep_and_events_stay() {
    use coe::db::schema::webhook_deliveries;
    use diesel::prelude::*;
    let c = Client::new().await;
    let old = c
        .post(json!({"dedup_key": "old", "title": "Old alert"}))
        .await;
    let new = c
        .post(json!({"dedup_key": "new", "title": "New alert"}))
        .await;
    let old_id = old["events"][0]["id"].as_str().expect("id").to_owned();
    let new_id = new["events"][0]["id"].as_str().expect("id").to_owned();
    {
        let mut conn = c.app.pool.get().expect("conn");
        diesel::update(
            webhook_deliveries::table.find(old["delivery_id"].as_str().expect("delivery")),
        )
        .set(
            webhook_deliveries::received_at
                .eq(chrono::Utc::now().naive_utc() - chrono::Duration::days(31)),
        )
        .execute(&mut conn)
        .expect("backdate");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coe"))
        .arg("sweep")
        .env_clear()
        .current_dir(dir.path())
        .env("COE_DATABASE_URL", c.app.database_url())
        .env("COE_LOG_LEVEL", "warn")
        .output()
        .expect("coe sweep runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("emptied 1 raw webhook body(ies) older than webhooks.keep_raw_days (30)"),
        "{stdout}"
    );
    let old = c
        .app
        .get_json(&format!("/api/v1/events/{old_id}"), &c.reader)
        .await;
    assert_eq!(old["raw_payload"], Value::Null, "{old}");
    assert_eq!(old["title"], "Old alert", "the event stays");
    let new = c
        .app
        .get_json(&format!("/api/v1/events/{new_id}"), &c.reader)
        .await;
    assert_eq!(new["raw_payload"]["dedup_key"], "new", "{new}");
}

/// Schemathesis (seed 255888383) found `links: null` accepted while the document said
/// an array: null is taken as none, and the document says so for links and labels.
#[tokio::test]
async fn null_links_and_labels_are_taken_as_none_and_documented_so() {
    let c = Client::new().await;
    let out = c
        .post(
            json!([{"dedup_key": "k-null", "links": null, "labels": null, "title": null,
                      "service": null, "started_at": null, "ended_at": null, "status": null}]),
        )
        .await;
    let id = out["events"][0]["id"].as_str().expect("id");
    let event = c
        .app
        .get_json(&format!("/api/v1/events/{id}"), &c.reader)
        .await;
    assert_eq!(event["links"], json!([]));
    let doc = json(c.app.get("/api/openapi.json", None).await).await;
    let input = &doc["components"]["schemas"]["EventInput"]["properties"];
    for field in ["links", "labels"] {
        let said = input[field].to_string();
        assert!(said.contains("null"), "{field}: {said}");
    }
}
