//! An alert storm: 20,000 events over 50 group keys, sent concurrently (with some
//! deliveries repeated), to one replica or three, ends as exactly 50 incidents with
//! every event stored once.

use std::collections::HashSet;

use coe::domain::Role;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::helpers::{spawn_app, Replica};

const GROUPS: usize = 50;
const EVENTS: usize = 20_000;
const PER_REQUEST: usize = 50;
const CONCURRENCY: usize = 16;

fn request_body(r: usize) -> Value {
    // Two consecutive requests share a group, so that concurrent deliveries race on it.
    let group = (r / 2) % GROUPS;
    let events: Vec<Value> = (0..PER_REQUEST)
        .map(|i| {
            let n = r * PER_REQUEST + i;
            json!({
                "dedup_key": format!("alert-{n}"),
                "group_key": format!("storm-{group}"),
                "title": format!("Alert {n}"),
                "severity": if n % 97 == 0 { "sev1" } else { "sev3" },
                "started_at": "2026-11-29T10:00:00Z",
            })
        })
        .collect();
    json!(events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_alert_storm_ends_as_one_incident_per_group_with_every_event_once() {
    let app = spawn_app().await;
    let ingest = app.token("storm", Role::Ingest);
    storm(&app, &[app.url("/api/v1/events")], &ingest).await;
}

/// The same storm sent to three replicas of the service on one database (this
/// test's server and two `coe serve` processes), each writing with its own
/// group-commit writers: the group locks hold across processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_a_storm_and_still_open_one_incident_per_group() {
    let app = spawn_app().await;
    let ingest = app.token("storm", Role::Ingest);
    let replicas: Vec<Replica> = (0..2)
        .map(|_| Replica::start(app.database_url(), &[]))
        .collect();
    let mut urls = vec![app.url("/api/v1/events")];
    for replica in &replicas {
        replica.wait_until_ready(&app.client).await;
        urls.push(format!("{}/api/v1/events", replica.address));
    }
    storm(&app, &urls, &ingest).await;
}

/// Sends the storm (every tenth delivery twice, as retrying senders do), delivery
/// `r` to `urls[r % urls.len()]`, and checks that it ends as exactly `GROUPS`
/// incidents holding every event once.
async fn storm(app: &crate::helpers::TestApp, urls: &[String], ingest: &str) {
    let reader = app.token("reader", Role::Member);
    let requests = EVENTS / PER_REQUEST;
    let mut order: Vec<usize> = (0..requests).collect();
    order.extend((0..requests).step_by(10));

    let mut ids = HashSet::new();
    let mut in_flight = JoinSet::new();
    let mut next = order.into_iter().enumerate();
    loop {
        while in_flight.len() < CONCURRENCY {
            let Some((sent, r)) = next.next() else { break };
            let client = app.client.clone();
            let url = urls[sent % urls.len()].clone();
            let token = ingest.to_owned();
            in_flight.spawn(async move {
                let body = request_body(r);
                // A 503 (the database busy past the pool's wait, on a loaded
                // machine) is retried for up to a minute, as alert senders retry
                // it; the retry must then store nothing twice.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
                for attempt in 1_u64.. {
                    let res = client
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await
                        .expect("sent");
                    let status = res.status().as_u16();
                    if status == 503 && std::time::Instant::now() < deadline {
                        // A wait that is the point: an alert sender's back-off
                        // before it retries a 503.
                        let pause = 200 * attempt.min(10);
                        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                        continue;
                    }
                    return (status, res.json::<Value>().await.expect("json"));
                }
                unreachable!("the loop returns")
            });
        }
        let Some(done) = in_flight.join_next().await else {
            break;
        };
        let (status, body) = done.expect("task");
        assert!(status == 202 || status == 200, "{status}: {body}");
        for event in body["events"].as_array().expect("events") {
            ids.insert(event["id"].as_str().expect("id").to_owned());
        }
    }
    assert_eq!(ids.len(), EVENTS, "each event has one id, repeats included");

    let page = app.get_json("/api/v1/incidents?limit=500", &reader).await;
    assert_eq!(page["total"], GROUPS, "one incident per group");
    let incidents = page["incidents"].as_array().expect("list");
    let stored: i64 = incidents
        .iter()
        .map(|i| i["event_count"].as_i64().expect("count"))
        .sum();
    assert_eq!(stored, EVENTS as i64, "every event stored exactly once");
    for incident in incidents {
        assert_eq!(incident["event_count"], EVENTS / GROUPS);
        assert_eq!(incident["state"], "open");
    }
    assert!(incidents.iter().any(|i| i["severity"] == "sev1"));
    assert!(incidents
        .iter()
        .all(|i| (i["severity"] == "sev1") == (i["needs_coe"] == true)));
    // One draft per incident that needs one, opened by whichever replica filed it.
    let coes = app.get_json("/api/v1/coes?limit=500", &reader).await;
    let needing = incidents.iter().filter(|i| i["needs_coe"] == true).count();
    assert_eq!(
        coes["total"], needing,
        "one draft per incident at the policy"
    );
}

/// One event of the readable-storm test: alerts named `HighCPU-0`…`HighCPU-29` on 50
/// hosts, and every tenth event an alert of its own (more names than a timeline shows).
fn storm_event(n: usize, group: &str, opens: bool) -> Value {
    let name = if n % 10 == 9 {
        format!("OneOff-{n}")
    } else {
        format!("HighCPU-{}", n % 30)
    };
    json!({
        "dedup_key": format!("{group}-{n}"),
        "group_key": group,
        "title": format!("{name} on host-{}", n % 50),
        "service": "checkout",
        "severity": if n == 0 && opens { "sev1" } else { "sev3" },
        "status": if n % 7 == 6 { "resolved" } else { "firing" },
        "started_at": format!("2026-11-29T10:{:02}:00Z", n % 60),
        "ended_at": if n % 7 == 6 { json!("2026-11-29T11:00:00Z") } else { Value::Null },
        "labels": {"alertname": name, "instance": format!("host-{}", n % 50)},
    })
}

async fn send_storm(
    app: &crate::helpers::TestApp,
    token: &str,
    group: &str,
    count: usize,
    opens: bool,
) {
    const BATCH: usize = 500;
    let mut in_flight = JoinSet::new();
    for start in (0..count).step_by(BATCH) {
        let body: Vec<Value> = (start..(start + BATCH).min(count))
            .map(|n| storm_event(n, group, opens))
            .collect();
        let (client, url, token) = (
            app.client.clone(),
            app.url("/api/v1/events"),
            token.to_owned(),
        );
        in_flight.spawn(async move {
            let res = client.post(url).bearer_auth(token).json(&body).send().await;
            res.expect("sent").status().as_u16()
        });
        if in_flight.len() >= 4 {
            let status = in_flight.join_next().await.expect("task").expect("joined");
            assert_eq!(status, 202);
        }
    }
    while let Some(done) = in_flight.join_next().await {
        assert_eq!(done.expect("joined"), 202);
    }
}

/// Checks that the COE of a storm of `count` events stays readable, and returns its
/// document.
async fn assert_readable(
    app: &crate::helpers::TestApp,
    reader: &str,
    coe_id: &str,
    count: usize,
) -> Value {
    let res = app
        .get(&format!("/api/v1/coes/{coe_id}"), Some(reader))
        .await;
    assert_eq!(res.status(), 200);
    let bytes = res.bytes().await.expect("body");
    assert!(bytes.len() < 100_000, "document is {} bytes", bytes.len());
    let doc: Value = serde_json::from_slice(&bytes).expect("json");
    let timeline = doc["timeline"].as_array().expect("timeline");
    assert!(timeline.len() < 100, "{} timeline entries", timeline.len());
    let counted: i64 = timeline
        .iter()
        .map(|e| e["occurrences"].as_i64().expect("occurrences"))
        .sum();
    assert_eq!(counted, count as i64, "every event counted once");
    // HighCPU-3 fired on events n ≡ 3 (mod 30), n % 10 != 9, n % 7 != 6: on the 5
    // hosts n % 50 takes for those n (3, 33, 13, 43, 23), at minutes n % 60 (3, 33).
    let cpu3 = timeline
        .iter()
        .find(|e| {
            e["kind"] == "fired" && e["text"].as_str().unwrap_or("").starts_with("HighCPU-3 ")
        })
        .unwrap_or_else(|| panic!("a HighCPU-3 entry in {timeline:#?}"));
    let expected = (0..count)
        .filter(|n| n % 30 == 3 && n % 10 != 9 && n % 7 != 6)
        .count();
    assert_eq!(cpu3["occurrences"], expected);
    assert_eq!(cpu3["hosts"], 5);
    assert_eq!(
        cpu3["text"],
        format!(
            "HighCPU-3 fired {expected} times between 2026-11-29 10:03 and 10:33 UTC on 5 hosts"
        )
    );
    assert_eq!(cpu3["at"], "2026-11-29T10:03:00Z");
    assert_eq!(cpu3["last_at"], "2026-11-29T10:33:00Z");
    assert!(timeline.iter().any(|e| e["text"]
        .as_str()
        .unwrap_or("")
        .starts_with("Other alerts fired ")));

    let export = app
        .get(&format!("/api/v1/coes/{coe_id}/export.md"), Some(reader))
        .await;
    assert_eq!(export.status(), 200);
    let markdown = export.text().await.expect("text");
    assert!(
        markdown.len() < 100_000,
        "export is {} bytes",
        markdown.len()
    );
    assert!(markdown.contains("HighCPU-3 fired "), "{markdown}");
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_leaves_a_coe_people_can_read_with_every_event_on_the_incident() {
    let app = spawn_app().await;
    let ingest = app.token("storm", Role::Ingest);
    let reader = app.token("reader", Role::Member);

    // The first event is sev1: the draft opens with it, and the other 19,999 are
    // counted into its timeline as they arrive.
    send_storm(&app, &ingest, "opened-early", 20_000, true).await;
    let page = app.get_json("/api/v1/coes?limit=10", &reader).await;
    let coe = &page["coes"][0];
    assert_eq!(page["total"], 1);
    let doc = assert_readable(&app, &reader, coe["id"].as_str().expect("id"), 20_000).await;

    // The raw events stay on the incident: the first 100 with it, all of them by page.
    let incident_id = doc["incident_id"].as_str().expect("incident");
    let incident = app
        .get_json(&format!("/api/v1/incidents/{incident_id}"), &reader)
        .await;
    assert_eq!(incident["event_count"], 20_000);
    assert_eq!(incident["events"].as_array().expect("events").len(), 100);
    let last = app
        .get_json(
            &format!("/api/v1/incidents/{incident_id}/events?limit=500&offset=19900"),
            &reader,
        )
        .await;
    assert_eq!(last["total"], 20_000);
    assert_eq!(last["events"].as_array().expect("events").len(), 100);

    // A COE opened by hand after the storm collapses the events it starts from.
    let late = "opened-late";
    send_storm(&app, &ingest, late, 2_000, false).await;
    let incidents = app
        .get_json("/api/v1/incidents?needs_coe=false", &reader)
        .await;
    let incident = incidents["incidents"]
        .as_array()
        .expect("list")
        .iter()
        .find(|i| i["group_key"] == late)
        .expect("the late incident");
    let created = app
        .post_json(
            "/api/v1/coes",
            Some(&reader),
            &json!({"incident_id": incident["id"]}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let created = crate::helpers::json(created).await;
    let id = created["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    // (2,000 events: the same collapsing, written at once rather than event by event.)
    assert_readable(&app, &reader, id, 2_000).await;

    let missing = app
        .get(
            &format!("/api/v1/incidents/{}/events", "no-such-incident"),
            Some(&reader),
        )
        .await;
    assert_eq!(missing.status(), 404);
}

/// Deliveries written together (group commit) each keep their own outcome: one that
/// fails in the database rolls back alone, the others are stored and answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_that_fails_in_a_shared_commit_rolls_back_alone() {
    use diesel::prelude::*;
    let app = spawn_app().await;
    let ingest = app.token("storm", Role::Ingest);
    let reader = app.token("reader", Role::Member);
    {
        // A poisoned key the database refuses: its delivery fails mid-write.
        let mut conn = app.pool.get().expect("conn");
        let ddl = if crate::helpers::on_postgres() {
            vec![
                "CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN \
                 IF NEW.dedup_key = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
                 FOR EACH ROW EXECUTE FUNCTION poison()",
            ]
        } else {
            vec![
                "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
                 WHEN NEW.dedup_key = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
            ]
        };
        for statement in ddl {
            diesel::sql_query(statement)
                .execute(&mut conn)
                .expect("poison");
        }
    }
    let mut sent = JoinSet::new();
    for n in 0..40 {
        let client = app.client.clone();
        let url = app.url("/api/v1/events");
        let token = ingest.clone();
        // The poisoned delivery also opens an incident of its own group before its
        // event fails: that must roll back with it.
        let key = if n == 20 {
            "poison".to_owned()
        } else {
            format!("good-{n}")
        };
        sent.spawn(async move {
            let body = json!({"dedup_key": key, "group_key": format!("g-{n}"), "title": "x",
                              "started_at": "2026-11-29T10:00:00Z"});
            let res = client
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .expect("sent");
            (key, res.status().as_u16())
        });
    }
    let mut answers = Vec::new();
    while let Some(answer) = sent.join_next().await {
        answers.push(answer.expect("joined"));
    }
    for (key, status) in &answers {
        if key == "poison" {
            assert_eq!(*status, 500, "the poisoned delivery fails");
        } else {
            assert_eq!(*status, 202, "{key} is stored");
        }
    }
    let incidents = app.get_json("/api/v1/incidents?limit=100", &reader).await;
    assert_eq!(incidents["total"], 39, "{incidents}");
    let groups: HashSet<String> = incidents["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .map(|i| i["group_key"].as_str().expect("group").to_owned())
        .collect();
    assert!(
        !groups.contains("g-20"),
        "the poisoned delivery's incident rolled back"
    );
    let metrics = app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("metrics");
    assert!(
        metrics.contains("coe_ingest_batch_deliveries_count"),
        "{metrics}"
    );
}

/// Deliveries that arrive together are written as one batch: a delivery sent again
/// inside that batch (the same `X-Webhook-Id`), or an occurrence repeated by other
/// deliveries of it, is stored once, and every copy is answered with the stored ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copies_of_a_delivery_inside_one_batch_are_stored_once() {
    let app = spawn_app().await;
    let ingest = app.token("copies", Role::Ingest);
    let reader = app.token("reader", Role::Member);
    let mut sent = JoinSet::new();
    for n in 0..60 {
        let (client, url, token) = (
            app.client.clone(),
            app.url("/api/v1/events"),
            ingest.clone(),
        );
        sent.spawn(async move {
            // Every third: the same keyed delivery of two events; every third: an
            // unkeyed delivery repeating one occurrence; the rest: new alerts.
            let (key, body) = match n % 3 {
                0 => (
                    Some("copy-1"),
                    json!([
                        {"dedup_key": "copied-a", "group_key": "copies", "title": "A",
                         "started_at": "2026-11-29T10:00:00Z"},
                        {"dedup_key": "copied-b", "group_key": "copies", "title": "B",
                         "started_at": "2026-11-29T10:00:00Z"}
                    ]),
                ),
                1 => (
                    None,
                    json!({"dedup_key": "repeated", "group_key": "copies", "title": "R",
                           "started_at": "2026-11-29T10:00:00Z"}),
                ),
                _ => (
                    None,
                    json!({"dedup_key": format!("single-{n}"), "group_key": format!("g-{n}"),
                           "title": "S", "started_at": "2026-11-29T10:00:00Z"}),
                ),
            };
            let mut req = client.post(url).bearer_auth(token).json(&body);
            if let Some(key) = key {
                req = req.header("x-webhook-id", key);
            }
            let res = req.send().await.expect("sent");
            let status = res.status().as_u16();
            (n, status, res.json::<Value>().await.expect("json"))
        });
    }
    let mut copies = Vec::new();
    let mut repeats = Vec::new();
    while let Some(answer) = sent.join_next().await {
        let (n, status, body) = answer.expect("joined");
        assert!(status == 200 || status == 202, "{n}: {status} {body}");
        match n % 3 {
            0 => copies.push(body),
            1 => repeats.push(body),
            _ => assert_eq!(body["duplicate"], false, "{body}"),
        }
    }
    let ids = |bodies: &[Value]| -> HashSet<String> {
        bodies
            .iter()
            .flat_map(|b| b["events"].as_array().expect("events").clone())
            .map(|e| e["id"].as_str().expect("id").to_owned())
            .collect()
    };
    assert_eq!(
        ids(&copies).len(),
        2,
        "the keyed delivery's two events, once"
    );
    let deliveries: HashSet<&str> = copies
        .iter()
        .map(|b| b["delivery_id"].as_str().expect("delivery id"))
        .collect();
    assert_eq!(deliveries.len(), 1, "one delivery stored: {deliveries:?}");
    assert_eq!(
        copies.iter().filter(|b| b["duplicate"] == false).count(),
        1,
        "the first copy stored, the others answered as copies"
    );
    assert_eq!(ids(&repeats).len(), 1, "the repeated occurrence, once");
    let incidents = app.get_json("/api/v1/incidents?limit=100", &reader).await;
    assert_eq!(incidents["total"], 21, "{incidents}");
    let copied = incidents["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .find(|i| i["group_key"] == "copies")
        .expect("the copies' incident");
    assert_eq!(copied["event_count"], 3, "{copied}");
}
