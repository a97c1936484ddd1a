//! Retention (`events.keep_days`): a year of incidents, their events dropped once old
//! enough, every incident's and COE's page unchanged, the events of incidents with a
//! COE kept, and the SQLite file smaller afterwards.

use std::collections::BTreeMap;
use std::process::Command;

use chrono::Duration;
use coe::db::schema::{coe_incidents, failure_events, incidents, webhook_deliveries};
use coe::domain::Role;
use diesel::prelude::*;
use serde_json::json;

use crate::helpers::{json, spawn_app, TestApp};
use crate::pages::{get_page, sign_in};

/// Incidents: one every `STEP` days over a year, each of `ALERTS` alerts fired and
/// resolved (two events each).
const DAYS: i64 = 365;
const STEP: i64 = 5;
const ALERTS: usize = 12;

/// Posts one incident's alerts, fired then resolved; every seventh is sev2 (a COE
/// opens by itself), the others sev3. Returns the incident's id.
async fn incident(app: &TestApp, token: &str, n: i64) -> String {
    let severity = if n % 7 == 0 { "sev2" } else { "sev3" };
    let alerts = |status: &str| -> Vec<serde_json::Value> {
        (0..ALERTS)
            .map(|i| {
                json!({"source": "prometheus", "dedup_key": format!("day-{n}-host-{i}"),
                       "group_key": format!("outage-{n}"), "title": format!("Checkout 5xx above 2% (outage {n})"),
                       "service": "checkout", "severity": severity, "status": status,
                       "description": "The checkout service answers more than 2% of requests with a 5xx. ".repeat(6),
                       "labels": {"alertname": "CheckoutErrors", "instance": format!("web-{i}:9100"), "team": "payments"},
                       "links": [format!("https://grafana.example.com/d/checkout?host=web-{i}")]})
            })
            .collect()
    };
    let res = app
        .post_json("/api/v1/events", Some(token), &json!(alerts("firing")))
        .await;
    assert_eq!(res.status(), 202);
    let body = json(res).await;
    let id = body["events"][0]["incident_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned();
    let res = app
        .post_json("/api/v1/events", Some(token), &json!(alerts("resolved")))
        .await;
    assert_eq!(res.status(), 202);
    id
}

/// Moves incident `id` and what it holds `days` into the past.
fn backdate(app: &TestApp, id: &str, days: i64) {
    let mut conn = app.pool.get().expect("conn");
    let by = Duration::days(days);
    let events: Vec<(String, chrono::NaiveDateTime, String)> = failure_events::table
        .filter(failure_events::incident_id.eq(id))
        .select((
            failure_events::id,
            failure_events::received_at,
            failure_events::delivery_id,
        ))
        .load(&mut conn)
        .expect("events");
    for (event, at, delivery) in events {
        diesel::update(failure_events::table.find(&event))
            .set((
                failure_events::received_at.eq(at - by),
                failure_events::started_at.eq(at - by),
            ))
            .execute(&mut conn)
            .expect("backdate an event");
        diesel::update(webhook_deliveries::table.find(&delivery))
            .set(webhook_deliveries::received_at.eq(at - by))
            .execute(&mut conn)
            .expect("backdate a delivery");
    }
    let (started, detected, resolved, updated, created): (
        chrono::NaiveDateTime,
        chrono::NaiveDateTime,
        Option<chrono::NaiveDateTime>,
        chrono::NaiveDateTime,
        chrono::NaiveDateTime,
    ) = incidents::table
        .find(id)
        .select((
            incidents::started_at,
            incidents::detected_at,
            incidents::resolved_at,
            incidents::updated_at,
            incidents::created_at,
        ))
        .first(&mut conn)
        .expect("the incident");
    diesel::update(incidents::table.find(id))
        .set((
            incidents::started_at.eq(started - by),
            incidents::detected_at.eq(detected - by),
            incidents::resolved_at.eq(resolved.map(|t| t - by)),
            incidents::updated_at.eq(updated - by),
            incidents::created_at.eq(created - by),
        ))
        .execute(&mut conn)
        .expect("backdate the incident");
}

fn events_of(app: &TestApp, id: &str) -> i64 {
    failure_events::table
        .filter(failure_events::incident_id.eq(id))
        .count()
        .get_result(&mut app.pool.get().expect("conn"))
        .expect("count")
}

/// The page's main part (the layout around it names the time of the request).
async fn page(app: &TestApp, path: &str, cookie: &str) -> String {
    let res = get_page(app, path, Some(cookie)).await;
    assert_eq!(res.status(), 200, "{path}");
    let html = res.text().await.expect("html");
    let start = html.find("<main").unwrap_or(0);
    let end = html.rfind("</main>").unwrap_or(html.len());
    // A form's key is new at every load (it keeps what was typed across a refusal).
    let mut main = String::new();
    let mut rest = &html[start..end];
    while let Some(at) = rest.find("form_key\" value=\"") {
        let (head, tail) = rest.split_at(at + "form_key\" value=\"".len());
        main.push_str(head);
        rest = tail.split_once('"').map_or("", |(_, after)| after);
        main.push('"');
    }
    main.push_str(rest);
    main
}

/// Where `a` and `b` first differ, with some text around it.
fn difference(a: &str, b: &str) -> String {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let around = |s: &[char]| -> String {
        s[at.saturating_sub(200).min(s.len())..(at + 200).min(s.len())]
            .iter()
            .collect()
    };
    format!("before: …{}…\nafter:  …{}…", around(&a), around(&b))
}

/// The SQLite file's size once its write-ahead log is folded in.
fn file_bytes(app: &TestApp) -> Option<u64> {
    let path = app.database_url().strip_prefix("sqlite://")?.to_owned();
    let mut conn = app.pool.get().expect("conn");
    diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .ok();
    Some(std::fs::metadata(path).expect("the file").len())
}

#[tokio::test]
async fn a_year_of_events_is_pruned_and_every_page_stays_the_same() {
    let app = spawn_app().await;
    let token = app.token("alerts", Role::Ingest);
    let admin = app.admin_token();
    let mut ages: BTreeMap<String, i64> = BTreeMap::new();
    let every = usize::try_from(STEP).expect("step");
    for (n, days) in (0..DAYS).step_by(every).enumerate() {
        let id = incident(&app, &token, i64::try_from(n).expect("n")).await;
        backdate(&app, &id, days);
        ages.insert(id, days);
    }
    let with_coe: Vec<String> = coe_incidents::table
        .select(coe_incidents::incident_id)
        .load(&mut app.pool.get().expect("conn"))
        .expect("COEs");
    assert!(with_coe.len() >= 10, "{} COEs", with_coe.len());
    let coes: Vec<String> = coe_incidents::table
        .select(coe_incidents::coe_id)
        .load(&mut app.pool.get().expect("conn"))
        .expect("COEs");
    // A COE's timeline entry pointing at an event of an old incident it no longer
    // covers (an entry someone edited stays when its incident is detached): that
    // incident keeps its events.
    let pointed_at = ages
        .iter()
        .find(|(id, days)| **days > 200 && !with_coe.contains(id))
        .map(|(id, _)| id.clone())
        .expect("an old incident without a COE");
    {
        use coe::db::schema::timeline_entries;
        let mut conn = app.pool.get().expect("conn");
        let event: String = failure_events::table
            .filter(failure_events::incident_id.eq(&pointed_at))
            .select(failure_events::id)
            .first(&mut conn)
            .expect("an event");
        let now = chrono::Utc::now().naive_utc();
        diesel::insert_into(timeline_entries::table)
            .values((
                timeline_entries::id.eq(format!("kept-{event}")),
                timeline_entries::coe_id.eq(&coes[0]),
                timeline_entries::at.eq(now),
                timeline_entries::kind.eq("note"),
                timeline_entries::text.eq("The first alert, as the on-call saw it"),
                timeline_entries::event_id.eq(&event),
                timeline_entries::created_at.eq(now),
                timeline_entries::occurrences.eq(1),
                timeline_entries::hosts.eq(1),
            ))
            .execute(&mut conn)
            .expect("an entry pointing at an old event");
    }

    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let cookie = sign_in(&app, "dana@example.com").await;
    let mut before = BTreeMap::new();
    for id in ages.keys() {
        before.insert(
            format!("/incidents/{id}"),
            page(&app, &format!("/incidents/{id}"), &cookie).await,
        );
    }
    for id in &coes {
        before.insert(
            format!("/coes/{id}"),
            page(&app, &format!("/coes/{id}"), &cookie).await,
        );
    }
    let events_before: i64 = failure_events::table
        .count()
        .get_result(&mut app.pool.get().expect("conn"))
        .expect("count");
    let bytes_before = file_bytes(&app);

    // A sweep with a 90-day retention.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_coe"))
        .arg("sweep")
        .env_clear()
        .current_dir(dir.path())
        .env("COE_DATABASE_URL", app.database_url())
        .env("COE_EVENTS_KEEP_DAYS", "90")
        .env("COE_LOG_LEVEL", "warn")
        .output()
        .expect("coe sweep runs");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Old incidents without a COE lost their events; the rest kept every one.
    let mut pruned = 0;
    for (id, days) in &ages {
        let kept = events_of(&app, id);
        if *days >= 90 && !with_coe.contains(id) && *id != pointed_at {
            assert_eq!(kept, 0, "{id}, {days} days old");
            pruned += 1;
        } else {
            assert_eq!(
                kept,
                i64::try_from(2 * ALERTS).expect("n"),
                "{id}, {days} days old"
            );
        }
    }
    assert!(pruned > 40, "{pruned} incidents pruned");
    assert!(
        said.contains(&format!(
            "of {pruned} incident(s) past events.keep_days (90)"
        )),
        "{said}"
    );
    let counts: Vec<i32> = incidents::table
        .select(incidents::event_count)
        .load(&mut app.pool.get().expect("conn"))
        .expect("counts");
    assert!(
        counts
            .iter()
            .all(|n| *n == i32::try_from(2 * ALERTS).expect("n")),
        "{counts:?}"
    );

    // Every page as it was.
    for (path, html) in &before {
        let now = page(&app, path, &cookie).await;
        assert!(&now == html, "{path} changed:\n{}", difference(html, &now));
    }

    let events_after: i64 = failure_events::table
        .count()
        .get_result(&mut app.pool.get().expect("conn"))
        .expect("count");
    if let (Some(before), Some(after)) = (bytes_before, file_bytes(&app)) {
        eprintln!(
            "retention: {events_before} events in {before} bytes, {events_after} after pruning in {after} bytes"
        );
        assert!(after < before, "the file shrinks: {before} → {after}");
    }

    // A second sweep has nothing left to do.
    let out = Command::new(env!("CARGO_BIN_EXE_coe"))
        .arg("sweep")
        .env_clear()
        .current_dir(dir.path())
        .env("COE_DATABASE_URL", app.database_url())
        .env("COE_EVENTS_KEEP_DAYS", "90")
        .env("COE_LOG_LEVEL", "warn")
        .output()
        .expect("coe sweep runs");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("past events.keep_days"));

    // A COE opened afterwards on an incident whose events went has the timeline they
    // made, from the digest the incident kept; attaching a second one counts its
    // alerts into the same entries.
    let mut pruned_ids = ages
        .iter()
        .filter(|(id, days)| **days >= 90 && !with_coe.contains(id) && **id != pointed_at)
        .map(|(id, _)| id.clone());
    let (first, second) = (
        pruned_ids.next().expect("a pruned incident"),
        pruned_ids.next().expect("another"),
    );
    let res = app
        .post_json("/api/v1/coes", Some(&admin), &json!({"incident_id": first}))
        .await;
    assert_eq!(res.status(), 201);
    let opened = json(res).await;
    let coe_id = opened["id"].as_str().expect("an id").to_owned();
    let alerts = |coe: &serde_json::Value| -> Vec<(String, i64, i64)> {
        coe["timeline"]
            .as_array()
            .expect("a timeline")
            .iter()
            .filter(|e| e["kind"] == "fired" || e["kind"] == "resolved")
            .map(|e| {
                (
                    e["text"].as_str().unwrap_or_default().to_owned(),
                    e["occurrences"].as_i64().unwrap_or(0),
                    e["hosts"].as_i64().unwrap_or(0),
                )
            })
            .collect()
    };
    let entries = alerts(&opened);
    let n = i64::try_from(ALERTS).expect("n");
    assert_eq!(
        entries.len(),
        2,
        "a fired and a resolved entry: {entries:?}"
    );
    for (text, occurrences, hosts) in &entries {
        assert_eq!((*occurrences, *hosts), (n, n), "{text}");
        assert!(text.starts_with("CheckoutErrors "), "{text}");
    }
    let res = app
        .post_json(
            &format!("/api/v1/coes/{coe_id}/incidents"),
            Some(&admin),
            &json!({"incident_id": second}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    let res = app
        .client
        .get(app.url(&format!("/api/v1/coes/{coe_id}")))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    let entries = alerts(&json(res).await);
    assert_eq!(entries.len(), 2, "{entries:?}");
    for (text, occurrences, _) in &entries {
        assert_eq!(*occurrences, 2 * n, "{text}");
    }
}
