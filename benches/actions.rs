//! Finding overdue actions among 1,000,000, through the service layer.
//!
//! ```sh
//! cargo bench --bench actions                                   # SQLite in a temp folder
//! BENCH_DATABASE_URL=postgres://… cargo bench --bench actions   # an empty PostgreSQL database
//! ```
//!
//! Fills 1,000 COEs and 1,000,000 actions over 10,000 owners (100,000 of them overdue,
//! the rest due later or closed), then times `GET /api/v1/actions?overdue=true` as the
//! handler runs it (first page of 50 and the total), overall and for one owner.

use std::time::{Duration, Instant};

use chrono::{NaiveDate, Utc};
use coe::config::Settings;
use coe::db::models::ActionRow;
use coe::db::schema::corrective_actions;
use coe::db::{self, write_transaction};
use coe::domain::template::Template;
use coe::services::actions::{self, ActionFilter, ActionSort, Clock};
use coe::services::coes::{self, Context, NewCoe};
use diesel::prelude::*;

const ACTIONS: usize = 1_000_000;
const OWNERS: usize = 10_000;
const COES: usize = 1_000;
const BATCH: usize = 1_000;
const RUNS: usize = 30;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let mut settings = Settings::default();
    settings.database.url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("actions.db").display()));
    let backend = if settings.database.url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let pool = db::connect(&settings.database).expect("connect");
    let mut conn = pool.get().expect("conn");
    db::migrate(&mut conn).expect("migrate");
    let template = Template::default_template();
    let emails = coe::email::EmailTemplates::embedded(&settings.public_url);
    let ctx = Context {
        settings: &settings,
        template: &template,
        emails: &emails,
    };
    let coe_ids: Vec<String> = (0..COES)
        .map(|i| {
            coes::create(
                &mut conn,
                NewCoe {
                    incident_id: None,
                    title: Some(format!("COE {i}")),
                    service: None,
                    severity: None,
                    owner: None,
                },
                "bench",
                &ctx,
            )
            .expect("coe")
        })
        .collect();

    let today = Utc::now().date_naive();
    let now = db::now();
    let start = Instant::now();
    for batch in 0..ACTIONS / BATCH {
        let rows: Vec<ActionRow> = (0..BATCH)
            .map(|i| {
                let n = batch * BATCH + i;
                // One in ten overdue; of the rest, one in three closed, the others due later.
                let (due, state) = match n % 30 {
                    0 | 10 | 20 => (today - chrono::Duration::days(1 + (n % 60) as i64), "open"),
                    1..=9 => (today + chrono::Duration::days(1 + (n % 90) as i64), "done"),
                    _ => (
                        today + chrono::Duration::days(1 + (n % 90) as i64),
                        "in_progress",
                    ),
                };
                ActionRow {
                    id: db::new_id(),
                    coe_id: coe_ids[n % COES].clone(),
                    title: format!("Action {n}"),
                    description: None,
                    owner_email: format!("owner{}@example.com", n % OWNERS),
                    due_date: due,
                    priority: ["high", "medium", "low"][n % 3].to_owned(),
                    kind: ["detect", "diagnose", "mitigate", "prevent", "process"][n % 5]
                        .to_owned(),
                    success_criteria: None,
                    external_url: None,
                    state: state.to_owned(),
                    resolution_note: None,
                    evidence_url: None,
                    wont_do_reason: None,
                    due_date_change_count: 0,
                    created_by: "bench".into(),
                    created_at: now,
                    updated_at: now,
                    closed_at: None,
                }
            })
            .collect();
        // Multi-row inserts need the backend's own connection.
        write_transaction(&mut conn, |conn| match conn {
            db::DbConnection::Sqlite(c) => diesel::insert_into(corrective_actions::table)
                .values(&rows)
                .execute(c),
            db::DbConnection::Pg(c) => diesel::insert_into(corrective_actions::table)
                .values(&rows)
                .execute(c),
        })
        .expect("insert");
    }
    let filled = start.elapsed();
    if let db::DbConnection::Pg(c) = &mut *conn {
        diesel::sql_query("ANALYZE").execute(c).expect("analyze");
    }

    let clock = Clock {
        now: Utc::now(),
        tz: chrono_tz::Tz::UTC,
    };
    let time = |conn: &mut db::DbConnection, filter: &ActionFilter| -> (Duration, i64) {
        let t = Instant::now();
        let (page, total) =
            actions::list(conn, filter, ActionSort::DueDate, 50, 0, clock).expect("list");
        assert!(page.len() <= 50);
        (t.elapsed(), total)
    };
    let overdue = ActionFilter {
        overdue: Some(true),
        ..ActionFilter::default()
    };
    let mut all = Vec::new();
    let mut total = 0;
    for _ in 0..RUNS {
        let (d, t) = time(&mut conn, &overdue);
        all.push(d);
        total = t;
    }
    let mut one = Vec::new();
    let mut one_total = 0;
    for i in 0..RUNS {
        let filter = ActionFilter {
            overdue: Some(true),
            owner: Some(format!("owner{}@example.com", (i * 340) % OWNERS)),
            ..ActionFilter::default()
        };
        let (d, t) = time(&mut conn, &filter);
        one.push(d);
        one_total = t;
    }
    let _: NaiveDate = today;
    println!(
        "| {backend}: {ACTIONS} actions, {OWNERS} owners (filled in {:.0} s) | matches | median |",
        filled.as_secs_f64()
    );
    println!("|---|---|---|");
    println!(
        "| `overdue=true`, first 50 and total | {total} | {:.1} ms |",
        median(all).as_secs_f64() * 1e3
    );
    println!(
        "| `overdue=true&owner=…`, first 50 and total | {one_total} | {:.2} ms |",
        median(one).as_secs_f64() * 1e3
    );
}
