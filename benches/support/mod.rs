//! The data set the action and reminder benchmarks share: 1,000 COEs and 1,000,000
//! actions over 10,000 owners (100,000 of them overdue by 1 to 60 days; the rest due
//! later, a third of those done), in a SQLite file in a temporary folder, or in the
//! empty PostgreSQL database named by `BENCH_DATABASE_URL`.
//!
//! Without a directory (the actions benchmark) action `n` belongs to owner `n % 10,000`,
//! so the overdue ones fall on 1,000 owners (100 each). With one (the reminder
//! benchmark) it belongs to owner `n / 10 % 10,000`: every owner has 100 actions, 10
//! of them overdue, as the reminder figures are meant to be read.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use chrono::Utc;
use coe::config::Settings;
use coe::db::models::ActionRow;
use coe::db::schema::corrective_actions;
use coe::db::{self, write_transaction, DbPool};
use coe::domain::template::Template;
use coe::domain::EmailAddress;
use coe::services::coe::coes::{self, NewCoe};
use coe::services::Env;
use diesel::prelude::*;

pub const ACTIONS: usize = 1_000_000;
pub const OWNERS: usize = 10_000;
pub const COES: usize = 1_000;
/// Managers in the directory, when it is filled: 100 owners each.
pub const MANAGERS: usize = 100;
const BATCH: usize = 1_000;

pub struct Bench {
    pub settings: Settings,
    pub pool: DbPool,
    pub backend: &'static str,
    _dir: tempfile::TempDir,
}

/// Opens (and migrates) the benchmark database.
pub fn open(file: &str) -> Bench {
    let dir = tempfile::tempdir().expect("dir");
    let mut settings = Settings::default();
    settings.database.url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join(file).display()));
    let backend = if settings.database.url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let pool = db::connect(&settings.database).expect("connect");
    db::migrate(&mut pool.get().expect("conn")).expect("migrate");
    Bench {
        settings,
        pool,
        backend,
        _dir: dir,
    }
}

pub fn owner(n: usize) -> String {
    format!("owner{}@example.com", n % OWNERS)
}

/// The owner of action `n` (see the module's note).
fn owner_of(n: usize, people: bool) -> String {
    owner(if people { n / 10 } else { n })
}

/// Fills the data set; with `people`, also a directory where every owner has a name
/// and one of `MANAGERS` managers, and COEs have an owner and a reviewer. Returns
/// how long it took.
pub fn fill(b: &Bench, people: bool) -> Duration {
    let start = Instant::now();
    let mut conn = b.pool.get().expect("conn");
    let template = Template::default_template();
    let emails = coe::email::EmailTemplates::load(None, &b.settings.public_url)
        .expect("the built-in email templates load");
    let ctx = Env {
        settings: &b.settings,
        template: &template,
        emails: &emails,
        connections: &coe::services::connections::Connections::of_file(&b.settings),
    };
    if people {
        use coe::db::schema::people as p;
        let now = db::now();
        for chunk in (0..OWNERS).collect::<Vec<_>>().chunks(BATCH) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|&i| {
                    (
                        p::email.eq(owner(i)),
                        p::name.eq(Some(format!("Owner {i}"))),
                        p::team.eq(Some(format!("team{}", i % 50))),
                        p::manager_email.eq(Some(format!("manager{}@example.com", i % MANAGERS))),
                        p::created_at.eq(now),
                        p::updated_at.eq(now),
                    )
                })
                .collect();
            write_transaction(&mut conn, |conn| match conn {
                db::DbConnection::Sqlite(c) => {
                    diesel::insert_into(p::table).values(&rows).execute(c)
                }
                db::DbConnection::Pg(c) => diesel::insert_into(p::table).values(&rows).execute(c),
            })
            .expect("people");
        }
    }
    let coe_ids: Vec<String> = (0..COES)
        .map(|i| {
            let lead = EmailAddress::parse(&format!("lead{}@example.com", i % 20)).ok();
            let id = coes::create(
                &mut conn,
                NewCoe {
                    incident_id: None,
                    title: Some(format!("COE {i}")),
                    service: None,
                    severity: None,
                    owner: if people { lead } else { None },
                },
                "bench",
                &ctx,
            )
            .expect("coe");
            if people {
                use coe::db::schema::coes as c;
                diesel::update(c::table.find(&id))
                    .set(c::reviewer_email.eq(format!("reviewer{}@example.com", i % 20)))
                    .execute(&mut *conn)
                    .expect("reviewer");
            }
            id
        })
        .collect();

    let today = Utc::now().date_naive();
    let now = db::now();
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
                    owner_email: owner_of(n, people),
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
                    verified_at: None,
                    verified_by: None,
                    handed_over_from: None,
                    handed_over_at: None,
                    target_date: None,
                    past_target_reason: None,
                    risk_accepted_until: None,
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
    if let db::DbConnection::Pg(c) = &mut *conn {
        diesel::sql_query("ANALYZE").execute(c).expect("analyze");
    }
    start.elapsed()
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
