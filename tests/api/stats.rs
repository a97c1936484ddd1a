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

/// Each owner's open and overdue actions as a person would count them now: from every
/// action's owner, state and due date.
fn recount(app: &crate::helpers::TestApp) -> serde_json::Map<String, serde_json::Value> {
    use coe::db::schema::corrective_actions;
    let mut conn = app.pool.get().expect("conn");
    let rows: Vec<(String, String, chrono::NaiveDate)> = corrective_actions::table
        .select((
            corrective_actions::owner_email,
            corrective_actions::state,
            corrective_actions::due_date,
        ))
        .load(&mut conn)
        .expect("actions");
    let today = Utc::now().date_naive();
    let mut counts: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    for (owner, state, due) in rows {
        if state == "open" || state == "in_progress" {
            let c = counts.entry(owner).or_default();
            c.0 += 1;
            c.1 += i64::from(due < today);
        }
    }
    counts
        .into_iter()
        .map(|(o, (open, overdue))| (o, json!({"open": open, "overdue": overdue})))
        .collect()
}

/// POSTs `body` to `path` as `token`, expecting a 200.
async fn post_ok(
    app: &crate::helpers::TestApp,
    token: &str,
    path: String,
    body: serde_json::Value,
) {
    let res = app.post_json(&path, Some(token), &body).await;
    assert_eq!(res.status(), 200, "{path}");
}

/// The kept rows equal a recount, and the API's figures equal what a person counts.
async fn figures_agree(app: &crate::helpers::TestApp, token: &str, step: &str) {
    let stats = app.get_json("/api/v1/stats", token).await;
    let drift = {
        let mut conn = app.pool.get().expect("conn");
        coe::services::coe::actions::tally::drift(&mut conn).expect("drift")
    };
    assert!(drift.is_empty(), "{step}: kept rows differ for {drift:?}");
    let expected = recount(app);
    assert_eq!(
        stats["actions_by_owner"],
        serde_json::Value::Object(expected.clone()),
        "{step}"
    );
    // The figures about the past (no figures job ran here: counted for the asking)
    // equal a count made now.
    let (history, coverage) = {
        let mut conn = app.pool.get().expect("conn");
        let settings = coe::config::Settings::default();
        let clock = settings.clock();
        let scope = coe::services::figures::stats::Scope::default();
        let history =
            coe::services::figures::stats::history(&mut conn, clock, &scope).expect("history");
        let from = coe::services::figures::stats::first_day(clock, scope.weeks);
        let coverage = coe::services::figures::coverage::audit(
            &mut conn,
            coe::services::Runtime::load(settings.clone())
                .expect("runtime")
                .env(),
            None,
            from,
            clock.today(),
        )
        .expect("coverage");
        (history, coverage)
    };
    assert_eq!(
        stats["closed_last_30_days"],
        serde_json::to_value(&history.closed_last_30_days).expect("json"),
        "{step}"
    );
    assert_eq!(
        stats["closed_last_90_days"],
        serde_json::to_value(&history.closed_last_90_days).expect("json"),
        "{step}"
    );
    assert_eq!(
        stats["median_days_to_close"],
        json!(history.median_days_to_close),
        "{step}"
    );
    assert_eq!(
        stats["weeks"],
        serde_json::to_value(&history.weeks).expect("json"),
        "{step}"
    );
    assert_eq!(
        stats["coverage"]["overall"]["actions_closed"],
        serde_json::to_value(&coverage.overall.actions_closed).expect("json"),
        "{step}"
    );
    let open: i64 = expected
        .values()
        .map(|v| v["open"].as_i64().unwrap_or(0))
        .sum();
    let overdue: i64 = expected
        .values()
        .map(|v| v["overdue"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(
        stats["actions"],
        json!({"open": open, "overdue": overdue}),
        "{step}"
    );
}

#[tokio::test]
async fn owner_figures_are_kept_by_every_write_and_agree_with_a_recount() {
    let app = spawn_app().await;
    let token = app.token("lead", Role::Member);
    let coe = json(
        app.post_json(
            "/api/v1/coes",
            Some(&token),
            &json!({"title": "Kept figures"}),
        )
        .await,
    )
    .await;
    let coe = coe["id"].as_str().expect("id").to_owned();
    let owners = ["ann@example.com", "ben@example.com", "cy@example.com"];
    let mut ids = Vec::new();
    for i in 0..12 {
        let due = (Utc::now() + Duration::days(1 + i)).date_naive();
        let res = app
            .post_json(&format!("/api/v1/coes/{coe}/actions"), Some(&token),
                &json!({"title": format!("Fix {i}"), "owner": owners[i as usize % 3], "due_date": due,
                        "priority": "high", "kind": "process"}))
            .await;
        assert_eq!(res.status(), 201);
        ids.push(json(res).await["id"].as_str().expect("id").to_owned());
    }
    figures_agree(&app, &token, "created").await;

    let post = |path: String, body: serde_json::Value| post_ok(&app, &token, path, body);
    post(format!("/api/v1/actions/{}/start", ids[0]), json!({})).await;
    post(
        format!("/api/v1/actions/{}/complete", ids[1]),
        json!({"note": "Done and checked."}),
    )
    .await;
    post(
        format!("/api/v1/actions/{}/wont-do", ids[2]),
        json!({"note": "Superseded."}),
    )
    .await;
    figures_agree(&app, &token, "started, done, won't do").await;
    post(
        format!("/api/v1/actions/{}/reopen", ids[2]),
        json!({"note": "Needed after all."}),
    )
    .await;
    figures_agree(&app, &token, "reopened").await;

    let patch = |id: String, body: serde_json::Value| {
        let (app, token) = (&app, &token);
        async move {
            let res = app
                .client
                .patch(app.url(&format!("/api/v1/actions/{id}")))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .expect("sent");
            assert_eq!(
                res.status(),
                200,
                "{id}: {}",
                res.text().await.unwrap_or_default()
            );
        }
    };
    patch(ids[3].clone(), json!({"owner": "ben@example.com"})).await;
    figures_agree(&app, &token, "given to another owner").await;
    let later = (Utc::now() + Duration::days(40)).date_naive();
    patch(
        ids[4].clone(),
        json!({"due_date": later, "reason": "Waits for the new cluster."}),
    )
    .await;
    figures_agree(&app, &token, "due date moved").await;
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/actions/{}", ids[5])))
        .bearer_auth(app.admin_token())
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    figures_agree(&app, &token, "deleted").await;

    // Written outside the service (as an operator's SQL would, stamping the change):
    // still kept.
    {
        use coe::db::schema::corrective_actions;
        let mut conn = app.pool.get().expect("conn");
        let past = (Utc::now() - Duration::days(3)).date_naive();
        diesel::update(corrective_actions::table.filter(corrective_actions::id.eq_any(&ids[6..9])))
            .set((
                corrective_actions::due_date.eq(past),
                corrective_actions::updated_at.eq(Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("backdate");
    }
    figures_agree(&app, &token, "backdated").await;
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(stats["actions"]["overdue"], 3);

    // The kept rows were counted against another day (nobody read them for three
    // weeks, say, or a sweep dated ahead did): the first read moves them to today.
    for days in [-21, 30] {
        use coe::db::schema::action_tally_day;
        let mut conn = app.pool.get().expect("conn");
        let then = (Utc::now() + Duration::days(days)).date_naive();
        diesel::update(action_tally_day::table)
            .set(action_tally_day::day.eq(then))
            .execute(&mut conn)
            .expect("day");
        diesel::sql_query(
            "UPDATE action_tally SET overdue = (SELECT c.overdue FROM action_tally_counted c \
             WHERE c.owner_email = action_tally.owner_email)",
        )
        .execute(&mut conn)
        .expect("counted against that day");
        assert_eq!(
            coe::services::coe::actions::tally::drift(&mut conn).expect("drift"),
            Vec::<String>::new()
        );
        let today = Utc::now().date_naive();
        let kept =
            coe::services::coe::actions::tally::owners(&mut conn, today, None).expect("owners");
        let kept: serde_json::Map<String, serde_json::Value> = kept
            .into_iter()
            .map(|t| (t.owner, json!({"open": t.open, "overdue": t.overdue})))
            .collect();
        assert_eq!(kept, recount(&app), "{days} days away");
        let day: chrono::NaiveDate = action_tally_day::table
            .select(action_tally_day::day)
            .first(&mut conn)
            .expect("day");
        assert_eq!(day, today);
        drop(conn);
        figures_agree(&app, &token, &format!("counted {days} days away")).await;
    }

    // Every change a write's `updated_at` may not show is numbered (the totals kept
    // between changes count again after each), and the figures about the past equal
    // a count: three actions made 20 days ago and overdue (by SQL), then two closed by
    // the API, then one closed by SQL two days ago.
    let past = |app: &crate::helpers::TestApp| {
        let mut conn = app.pool.get().expect("conn");
        coe::services::coe::actions::tally::change_number(&mut conn).expect("number")
    };
    {
        use coe::db::schema::corrective_actions;
        let mut conn = app.pool.get().expect("conn");
        let now = Utc::now().naive_utc();
        diesel::update(
            corrective_actions::table.filter(corrective_actions::id.eq_any(&ids[9..12])),
        )
        .set((
            corrective_actions::created_at.eq(now - Duration::days(20)),
            corrective_actions::due_date.eq((now - Duration::days(5)).date()),
            corrective_actions::updated_at.eq(now),
        ))
        .execute(&mut conn)
        .expect("made 20 days ago");
    }
    figures_agree(&app, &token, "made 20 days ago").await;
    let history = past(&app);
    post(
        format!("/api/v1/actions/{}/complete", ids[9]),
        json!({"note": "Done, late."}),
    )
    .await;
    post(
        format!("/api/v1/actions/{}/wont-do", ids[10]),
        json!({"note": "Not needed."}),
    )
    .await;
    assert_eq!(past(&app), history + 2, "each closing is a change");
    figures_agree(&app, &token, "closed late").await;
    {
        use coe::db::schema::corrective_actions;
        let mut conn = app.pool.get().expect("conn");
        let then = Utc::now().naive_utc() - Duration::days(2);
        diesel::update(corrective_actions::table.find(&ids[11]))
            .set((
                corrective_actions::state.eq("done"),
                corrective_actions::closed_at.eq(then),
                corrective_actions::updated_at.eq(Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("closed two days ago");
    }
    assert_eq!(past(&app), history + 3);
    figures_agree(&app, &token, "closed two days ago by SQL").await;
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(stats["closed_last_30_days"]["late"], 2, "{stats}");

    // Many writers for one owner at once (PostgreSQL: concurrent transactions).
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..16 {
        let (client, url, token) = (
            app.client.clone(),
            app.url(&format!("/api/v1/coes/{coe}/actions")),
            token.clone(),
        );
        let due = Utc::now().date_naive() + Duration::days(1 + i % 4);
        creates.spawn(async move {
            client
                .post(url)
                .bearer_auth(token)
                .json(
                    &json!({"title": format!("Burst {i}"), "owner": "dee@example.com",
                              "due_date": due, "priority": "low", "kind": "process"}),
                )
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        });
    }
    let statuses = creates.join_all().await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    figures_agree(&app, &token, "sixteen at once").await;
}

/// The figures job counts the figures about the past into a snapshot; the API and
/// the dashboard read it with the live counters and say when it was counted. A
/// change shows at once in open and overdue, and in the past at the job's next count;
/// a team's figures are counted for the asking; a count older than the one kept, or
/// one of another day, is not read.
#[tokio::test]
async fn the_figures_job_counts_the_past_and_the_views_read_it_dated() {
    use coe::db::schema::{corrective_actions, figure_snapshots, people};
    use coe::services::figures::stats::{self, snapshot, Scope};

    let app = spawn_app().await;
    let token = app.token("lead", Role::Member);
    let now = Utc::now().naive_utc();
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::insert_into(people::table)
            .values((
                people::email.eq("ann@example.com"),
                people::team.eq(Some("storage")),
                people::created_at.eq(now),
                people::updated_at.eq(now),
            ))
            .execute(&mut conn)
            .expect("person");
    }
    let coe = json(
        app.post_json("/api/v1/coes", Some(&token), &json!({"title": "Past"}))
            .await,
    )
    .await;
    let coe = coe["id"].as_str().expect("id").to_owned();
    let mut ids = Vec::new();
    for i in 0..4 {
        let res = app
            .post_json(
                &format!("/api/v1/coes/{coe}/actions"),
                Some(&token),
                &json!({"title": format!("Fix {i}"), "owner": "ann@example.com",
                        "due_date": (Utc::now() + Duration::days(3)).date_naive(),
                        "priority": "high", "kind": "process"}),
            )
            .await;
        assert_eq!(res.status(), 201);
        ids.push(json(res).await["id"].as_str().expect("id").to_owned());
    }
    let complete = |id: &str| {
        post_ok(
            &app,
            &token,
            format!("/api/v1/actions/{id}/complete"),
            json!({"note": "Done."}),
        )
    };
    complete(&ids[0]).await;

    // No count kept yet: the view counts, and says nothing of a time.
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert!(stats["past_counted_at"].is_null(), "{stats}");
    assert_eq!(stats["closed_last_30_days"]["on_time"], 1, "{stats}");

    let settings = coe::config::Settings::default();
    let clock = settings.clock();
    let count = |clock: coe::domain::Clock| {
        let mut conn = app.pool.get().expect("conn");
        snapshot::count(&mut conn, clock).expect("counted");
    };
    count(clock);
    let kept_at = || -> Vec<(String, chrono::NaiveDateTime)> {
        let mut conn = app.pool.get().expect("conn");
        figure_snapshots::table
            .select((figure_snapshots::name, figure_snapshots::counted_at))
            .order(figure_snapshots::name)
            .load(&mut conn)
            .expect("snapshots")
    };
    let first = kept_at();
    assert_eq!(
        first.len(),
        2,
        "the past and the period's closings: {first:?}"
    );
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(
        stats["past_counted_at"],
        json!(coe::json::format_utc(&first[0].1)),
        "{stats}"
    );
    assert_eq!(stats["closed_last_30_days"]["on_time"], 1, "{stats}");
    assert_eq!(
        stats["coverage"]["overall"]["actions_closed"]["on_time"], 1,
        "{stats}"
    );
    let cookie = crate::pages::sign_in(&app, "ann@example.com").await;
    let page = crate::pages::get_page(&app, "/dashboard", Some(&cookie))
        .await
        .text()
        .await
        .expect("the dashboard");
    assert!(page.contains("and the coverage are as of "), "{page}");

    // A closing shows at once in open, and in the past at the next count.
    complete(&ids[1]).await;
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(stats["actions"]["open"], 2, "{stats}");
    assert_eq!(
        stats["closed_last_30_days"]["on_time"], 1,
        "as of the count: {stats}"
    );
    // A team's figures are counted for the asking.
    let team = app.get_json("/api/v1/stats?team=storage", &token).await;
    assert!(team["past_counted_at"].is_null(), "{team}");
    assert_eq!(team["closed_last_30_days"]["on_time"], 2, "{team}");
    count(settings.clock());
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert_eq!(stats["closed_last_30_days"]["on_time"], 2, "{stats}");
    assert_eq!(
        stats["coverage"]["overall"]["actions_closed"]["on_time"], 2,
        "{stats}"
    );
    let counted = {
        let mut conn = app.pool.get().expect("conn");
        stats::history(&mut conn, settings.clock(), &Scope::default()).expect("history")
    };
    assert_eq!(
        stats["weeks"],
        serde_json::to_value(&counted.weeks).expect("json")
    );
    assert_eq!(
        stats["median_days_to_close"],
        json!(counted.median_days_to_close)
    );

    // A count that read the actions earlier and ended later (another replica's) is
    // not kept over the newer one.
    let kept = kept_at();
    count(coe::domain::Clock {
        now: Utc::now() - Duration::seconds(30),
        tz: clock.tz,
    });
    assert_eq!(kept_at(), kept, "the newer count stays");

    // A count of another day is not read: the view counts again.
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(figure_snapshots::table)
            .set(figure_snapshots::counted_at.eq(now - Duration::days(1)))
            .execute(&mut conn)
            .expect("yesterday's");
        diesel::update(corrective_actions::table.find(&ids[2]))
            .set((
                corrective_actions::state.eq("done"),
                corrective_actions::closed_at.eq(Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("closed by SQL");
    }
    let stats = app.get_json("/api/v1/stats", &token).await;
    assert!(stats["past_counted_at"].is_null(), "{stats}");
    assert_eq!(stats["closed_last_30_days"]["on_time"], 3, "{stats}");
}
