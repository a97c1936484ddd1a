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

mod support;

use std::time::{Duration, Instant};

use chrono::Utc;
use coe::db;
use coe::domain::Clock;
use coe::services::coe::actions::{self, ActionFilter, ActionSort};

use support::{median, ACTIONS, OWNERS};

const RUNS: usize = 30;

fn main() {
    let bench = support::open("actions.db");
    let backend = bench.backend;
    let filled = support::fill(&bench, false);
    let mut conn = bench.pool.get().expect("conn");

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
