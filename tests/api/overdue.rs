//! "Overdue" has one definition, `domain::action::is_overdue`, and "active" (still to
//! be done) one, `ActionState::is_active`; the SQL filters (the action list's, and
//! `db::rules::action_is_active`) must agree with them. Both are run over one table
//! of cases, on the real database (SQLite, and PostgreSQL when `TEST_POSTGRES_URL` is
//! set).

use chrono::{DateTime, Duration, NaiveDate, Utc};
use coe::db::models::ActionRow;
use coe::db::schema::corrective_actions;
use coe::domain::action::{is_overdue, ActionState};
use coe::domain::Clock;
use coe::services::coe::actions::{self, ActionFilter, ActionSort};
use diesel::prelude::*;
use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn the_overdue_filter_in_sql_and_the_rust_rule_agree_on_every_case() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = app
        .post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Overdue cases"}),
        )
        .await;
    assert_eq!(coe.status(), 201);
    let coe_id = crate::helpers::json(coe).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // 23:30 UTC is already tomorrow in Berlin and still today in Los Angeles.
    let now: DateTime<Utc> = "2026-11-29T23:30:00Z".parse().expect("time");
    let mut cases = Vec::new();
    let mut conn = app.pool.get().expect("conn");
    for (i, (state, offset)) in ActionState::ALL
        .into_iter()
        .flat_map(|s| [-8, -1, 0, 1, 30].map(move |d| (s, d)))
        .enumerate()
    {
        let due = NaiveDate::from_ymd_opt(2026, 11, 29).expect("date") + Duration::days(offset);
        let at = now.naive_utc();
        let row = ActionRow {
            id: format!("case-{i:02}"),
            coe_id: coe_id.clone(),
            title: format!("{state} due {due}"),
            description: None,
            owner_email: "case@example.com".into(),
            due_date: due,
            priority: "high".into(),
            kind: "prevent".into(),
            success_criteria: None,
            external_url: None,
            state: state.as_str().into(),
            resolution_note: None,
            evidence_url: None,
            wont_do_reason: None,
            due_date_change_count: 0,
            created_by: "test".into(),
            created_at: at,
            updated_at: at,
            closed_at: None,
            verified_at: None,
            verified_by: None,
            handed_over_from: None,
            handed_over_at: None,
            target_date: None,
            past_target_reason: None,
            risk_accepted_until: None,
        };
        diesel::insert_into(corrective_actions::table)
            .values(&row)
            .execute(&mut conn)
            .expect("insert");
        cases.push((row.id, state, due));
    }
    let mut sql: Vec<String> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(&coe_id))
        .filter(coe::db::rules::action_is_active())
        .select(corrective_actions::id)
        .load(&mut conn)
        .expect("active");
    sql.sort_unstable();
    let rust: Vec<String> = cases
        .iter()
        .filter(|(_, state, _)| state.is_active())
        .map(|(id, _, _)| id.clone())
        .collect();
    assert_eq!(sql, rust, "active in SQL and in Rust");
    assert_eq!(rust.len(), 10, "open and in progress, five due dates each");
    for tz in [
        chrono_tz::UTC,
        chrono_tz::Europe::Berlin,
        chrono_tz::America::Los_Angeles,
    ] {
        let clock = Clock { now, tz };
        for overdue in [true, false] {
            let filter = ActionFilter {
                overdue: Some(overdue),
                ..Default::default()
            };
            let (found, total) =
                actions::list(&mut conn, &filter, ActionSort::DueDate, 1000, 0, clock)
                    .expect("list");
            let mut sql: Vec<&str> = found.iter().map(|a| a.id.as_str()).collect();
            sql.sort_unstable();
            let rust: Vec<&str> = cases
                .iter()
                .filter(|(_, state, due)| is_overdue(*state, *due, now, tz) == overdue)
                .map(|(id, _, _)| id.as_str())
                .collect();
            assert_eq!(sql, rust, "overdue={overdue} in {tz}");
            assert_eq!(total as usize, rust.len());
            assert!(
                found.iter().all(|a| a.overdue == overdue),
                "the view's flag, in {tz}"
            );
        }
    }
}
