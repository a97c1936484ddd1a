//! The inspection figures, in the API and as gauges on /metrics.

use chrono::{Duration, Utc};
use coe::domain::Role;
use diesel::prelude::*;
use serde_json::json;

use crate::helpers::{json, spawn_app};

#[tokio::test]
async fn stats_count_open_overdue_closed_on_time_and_late_and_waiting_coes() {
    let app = spawn_app().await;
    let token = app.token("lead", Role::Member);
    let ingest = app.token("ingest", Role::Ingest);
    // A sev2 incident that resolved ten days ago: its draft is past the 7-day deadline.
    let ten_days_ago = (Utc::now() - Duration::days(10)).to_rfc3339();
    let eleven_days_ago = (Utc::now() - Duration::days(11)).to_rfc3339();
    for status in ["firing", "resolved"] {
        let res = app
            .post_json(
                "/api/v1/events",
                Some(&ingest),
                &json!({"dedup_key": "old", "severity": "sev2", "status": status,
                "title": "Old outage", "started_at": eleven_days_ago, "ended_at": ten_days_ago}),
            )
            .await;
        assert!(res.status().is_success());
    }
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(&token),
            &json!({"title": "With actions"}),
        )
        .await;
    let coe = json(res).await;
    let id = coe["id"].as_str().expect("id");
    let due = (Utc::now() + Duration::days(5)).date_naive();
    let mut ids = Vec::new();
    for owner in [
        "ann@example.com",
        "ann@example.com",
        "ben@example.com",
        "ben@example.com",
        "ben@example.com",
    ] {
        let res = app
            .post_json(&format!("/api/v1/coes/{id}/actions"), Some(&token),
                &json!({"title": "Fix", "owner": owner, "due_date": due, "priority": "high", "kind": "prevent"}))
            .await;
        ids.push(json(res).await["id"].as_str().expect("id").to_owned());
    }
    {
        use coe::db::schema::{corrective_actions, people};
        let mut conn = app.pool.get().expect("conn");
        let past = (Utc::now() - Duration::days(3)).date_naive();
        for a in [&ids[0], &ids[2]] {
            diesel::update(corrective_actions::table.find(a))
                .set(corrective_actions::due_date.eq(past))
                .execute(&mut conn)
                .expect("backdate");
        }
        diesel::update(people::table.find("ann@example.com"))
            .set(people::team.eq("payments"))
            .execute(&mut conn)
            .expect("team");
    }
    // ids[2] closes late (its due date passed), ids[3] on time; ids[0] stays overdue, ids[1] open.
    for a in [&ids[2], &ids[3]] {
        let res = app
            .post_json(
                &format!("/api/v1/actions/{a}/complete"),
                Some(&token),
                &json!({"note": "Done, and checked against its success criteria in production."}),
            )
            .await;
        assert_eq!(res.status(), 200);
    }

    // ids[4] is decided not to be done: neither on time nor late.
    let res = app
        .post_json(
            &format!("/api/v1/actions/{}/wont-do", ids[4]),
            Some(&token),
            &json!({"note": "superseded by the new deploy tool"}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(stats["actions"], json!({"open": 2, "overdue": 1}));
    assert_eq!(
        stats["actions_by_owner"]["ann@example.com"],
        json!({"open": 2, "overdue": 1})
    );
    assert_eq!(
        stats["actions_by_team"]["payments"],
        json!({"open": 2, "overdue": 1})
    );
    assert_eq!(
        stats["closed_last_30_days"],
        json!({"on_time": 1, "late": 1, "wont_do": 1})
    );
    assert_eq!(
        stats["closed_last_90_days"],
        json!({"on_time": 1, "late": 1, "wont_do": 1})
    );
    // Days with one decimal; the two done today took no time at all.
    assert_eq!(stats["median_days_to_close"].as_f64().expect("median"), 0.0);
    assert_eq!(stats["coes_by_state"]["draft"], 2);
    assert_eq!(stats["coes_by_state"]["in_review"], 0);
    let late = stats["drafts_past_deadline"].as_array().expect("late");
    assert_eq!(late.len(), 1);
    assert_eq!(late[0]["title"], "Old outage");
    assert_eq!(late[0]["days"], 10);

    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    assert!(metrics.contains("coe_actions_open 2"), "{metrics}");
    assert!(metrics.contains("coe_actions_overdue 1"), "{metrics}");
    assert!(
        metrics.contains("coe_actions_overdue_by_team{team=\"payments\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("coe_coes{state=\"draft\"} 2"), "{metrics}");
    assert!(
        metrics.contains("coe_coes_drafts_past_deadline 1"),
        "{metrics}"
    );
}
