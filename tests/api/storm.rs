//! An alert storm: 20,000 events over 50 group keys, sent concurrently (with some
//! deliveries repeated), end as exactly 50 incidents with every event stored once.

use std::collections::HashSet;

use coe::domain::Role;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::helpers::spawn_app;

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
    let reader = app.token("reader", Role::Member);
    let requests = EVENTS / PER_REQUEST;
    // Every tenth delivery is sent twice, as retrying senders do.
    let mut order: Vec<usize> = (0..requests).collect();
    order.extend((0..requests).step_by(10));

    let mut ids = HashSet::new();
    let mut in_flight = JoinSet::new();
    let mut next = order.into_iter();
    loop {
        while in_flight.len() < CONCURRENCY {
            let Some(r) = next.next() else { break };
            let client = app.client.clone();
            let url = app.url("/api/v1/events");
            let token = ingest.clone();
            in_flight.spawn(async move {
                let res = client
                    .post(url)
                    .bearer_auth(token)
                    .json(&request_body(r))
                    .send()
                    .await
                    .expect("sent");
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.expect("json"))
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
}
