//! Ingest throughput and memory, measured against a real `coe serve` (release build).
//!
//! ```sh
//! cargo bench --bench ingest                                   # SQLite in a temp folder
//! BENCH_DATABASE_URL=postgres://… cargo bench --bench ingest   # an empty PostgreSQL database
//! ```
//!
//! Prints a Markdown table for docs/benchmarks.md. Timings are wall-clock on a shared
//! machine: read them as orders of magnitude, and compare runs made the same way.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinSet;

struct Server {
    child: Child,
    base: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(database_url: &str, dir: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_coe"))
            .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
            .env("COE_DATABASE_URL", database_url)
            .env("COE_LOG_LEVEL", "warn,coe::cli=info")
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coe serve");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let token = stdout
            .lines()
            .map_while(Result::ok)
            .map(|l| l.trim().to_owned())
            .find(|l| l.starts_with("coe_"))
            .expect("the admin token is printed on first start");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut base = String::new();
        let mut lines = stderr.lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["message"] == "listening" {
                    base = v["address"].as_str().unwrap_or_default().to_owned();
                    break;
                }
            }
        }
        assert!(!base.is_empty(), "coe serve did not say where it listens");
        // Keep reading what it logs: a pipe nobody reads fills, or breaks when dropped,
        // and the server's next warning (a storm's drafts log some) would fail on it.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Server { child, base, token }
    }

    /// Peak resident memory of the server process so far, in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

/// Sends `bodies` with `concurrency` requests in flight; returns the elapsed time.
async fn blast(server: &Server, bodies: Vec<Value>, concurrency: usize) -> Duration {
    let client = reqwest::Client::new();
    let url = format!("{}/api/v1/events", server.base);
    let start = Instant::now();
    let mut in_flight = JoinSet::new();
    let mut bodies = bodies.into_iter();
    loop {
        while in_flight.len() < concurrency {
            let Some(body) = bodies.next() else { break };
            let request = client.post(&url).bearer_auth(&server.token).json(&body);
            in_flight.spawn(async move { request.send().await.map(|r| r.status().as_u16()) });
        }
        let Some(done) = in_flight.join_next().await else {
            break;
        };
        let status = done.expect("task").expect("request");
        assert!(status == 202 || status == 200, "status {status}");
    }
    start.elapsed()
}

fn event(n: usize, groups: usize) -> Value {
    json!({
        "dedup_key": format!("alert-{n}"),
        "group_key": format!("group-{}", n % groups),
        "title": format!("Alert {n}"),
        "service": "checkout",
        "severity": "sev3",
        "started_at": "2026-11-29T10:00:00Z",
        "labels": {"instance": format!("10.0.{}.{}", n / 256 % 256, n % 256), "job": "api"},
    })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let database_url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let backend = if database_url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let server = Server::start(&database_url, dir.path());
    let idle = server.peak_rss_mib();

    println!("| scenario ({backend}) | events | requests | time | events/s | server peak RSS |");
    println!("|---|---|---|---|---|---|");
    let report = |name: &str, events: usize, requests: usize, took: Duration, rss: f64| {
        println!(
            "| {name} | {events} | {requests} | {:.2} s | {:.0} | {rss:.1} MiB |",
            took.as_secs_f64(),
            events as f64 / took.as_secs_f64()
        );
    };
    report("idle, after start-up", 0, 0, Duration::from_secs(1), idle);

    // One event per request: the shape most senders produce.
    let singles: Vec<Value> = (0..5_000).map(|n| json!(event(n, 500))).collect();
    let took = runtime.block_on(blast(&server, singles, 16));
    report(
        "one event per request, 16 in flight",
        5_000,
        5_000,
        took,
        server.peak_rss_mib(),
    );

    // Batches of 100 (the generic API takes up to 1,000).
    let batches: Vec<Value> = (0..200)
        .map(|b| {
            json!((0..100)
                .map(|i| event(100_000 + b * 100 + i, 500))
                .collect::<Vec<_>>())
        })
        .collect();
    let took = runtime.block_on(blast(&server, batches, 8));
    report(
        "batches of 100, 8 in flight",
        20_000,
        200,
        took,
        server.peak_rss_mib(),
    );

    // The storm of the test suite: 20,000 events over 50 groups, 50 per request.
    let storm: Vec<Value> = (0..400)
        .map(|r| {
            json!((0..50)
                .map(|i| {
                    let mut e = event(200_000 + r * 50 + i, 50);
                    e["group_key"] = json!(format!("storm-{}", (r / 2) % 50));
                    e
                })
                .collect::<Vec<_>>())
        })
        .collect();
    let took = runtime.block_on(blast(&server, storm, 16));
    report(
        "storm: 50 groups, 50 per request, 16 in flight",
        20_000,
        400,
        took,
        server.peak_rss_mib(),
    );

    // The same storm at sev2: every group's incident needs a COE, so each opens a draft
    // and every later event adds to its timeline.
    let storm: Vec<Value> = (0..400)
        .map(|r| {
            json!((0..50)
                .map(|i| {
                    let mut e = event(300_000 + r * 50 + i, 50);
                    e["group_key"] = json!(format!("coe-storm-{}", (r / 2) % 50));
                    e["severity"] = json!("sev2");
                    e
                })
                .collect::<Vec<_>>())
        })
        .collect();
    let took = runtime.block_on(blast(&server, storm, 16));
    report(
        "storm at sev2: 50 drafts open, 20,000 timeline entries",
        20_000,
        400,
        took,
        server.peak_rss_mib(),
    );
}
