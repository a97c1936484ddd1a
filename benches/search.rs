//! COE search latency over 10,000 COEs, through the service layer (no HTTP).
//!
//! ```sh
//! cargo bench --bench search                                   # SQLite in a temp folder
//! BENCH_DATABASE_URL=postgres://… cargo bench --bench search   # an empty PostgreSQL database
//! ```

use std::time::{Duration, Instant};

use coe::config::Settings;
use coe::db;
use coe::domain::template::Template;
use coe::services::coe::coes::{self, CoeFilter, NewCoe};
use coe::services::Env;

const COES: usize = 10_000;
const QUERIES: usize = 200;

/// A small deterministic generator, so that runs are comparable.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
}

fn word(n: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "po", "ra", "si", "tu", "va", "ze", "bri", "cho", "dra", "fle",
        "gru", "hin",
    ];
    format!(
        "{}{}{}",
        SYLLABLES[n % 16],
        SYLLABLES[n / 16 % 16],
        SYLLABLES[n / 256 % 16]
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let mut settings = Settings::default();
    settings.database.url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("search.db").display()));
    let backend = if settings.database.url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let pool = db::connect(&settings.database).expect("connect");
    let mut conn = pool.get().expect("conn");
    db::migrate(&mut conn).expect("migrate");
    let template = Template::default_template();
    let emails = coe::email::EmailTemplates::load(None, &settings.public_url)
        .expect("the built-in email templates load");
    let ctx = Env {
        settings: &settings,
        template: &template,
        emails: &emails,
        connections: &coe::services::connections::Connections::of_file(&settings),
    };
    let mut rng = Lcg(42);
    // Two words side by side in some COE's summary, for the searches of several words.
    let mut pairs: Vec<(String, String)> = Vec::new();
    let start = Instant::now();
    for i in 0..COES {
        let title = format!(
            "{} {} outage {}",
            word(rng.next() % 4096),
            word(rng.next() % 4096),
            i
        );
        let id = coes::create(
            &mut conn,
            NewCoe {
                incident_id: None,
                title: Some(title),
                service: Some(format!("service-{}", i % 40)),
                severity: None,
                owner: None,
            },
            "bench",
            &ctx,
        )
        .expect("create");
        let body: Vec<String> = (0..80).map(|_| word(rng.next() % 4096)).collect();
        if i % 50 == 0 {
            pairs.push((body[10].clone(), body[11].clone()));
        }
        coes::put_section(
            &mut conn,
            &id,
            "summary",
            &body.join(" "),
            Some(1),
            &coe::services::access::Editor {
                actor: "bench",
                email: None,
                is_admin: true,
                principal: "bench",
            },
            &ctx,
        )
        .expect("section");
    }
    let filled = start.elapsed();

    let mut timings = Vec::with_capacity(QUERIES);
    let mut hits = 0;
    for _ in 0..QUERIES {
        let filter = CoeFilter {
            text: Some(
                coe::domain::search::SearchText::parse(&word(rng.next() % 4096)).expect("a word"),
            ),
            ..CoeFilter::default()
        };
        let t = Instant::now();
        let (page, total) = coes::list(&mut conn, &filter, 50, 0).expect("search");
        timings.push(t.elapsed());
        hits += total;
        assert!(page.len() <= 50);
    }
    timings.sort();
    // Two words typed side by side (ranked: as typed, near, apart), and quoted.
    let mut measure = |text: &dyn Fn(&(String, String)) -> String| {
        let mut timings = Vec::with_capacity(pairs.len());
        let mut hits = 0;
        for pair in &pairs {
            let filter = CoeFilter {
                text: Some(coe::domain::search::SearchText::parse(&text(pair)).expect("words")),
                ..CoeFilter::default()
            };
            let t = Instant::now();
            let (_, total) = coes::list(&mut conn, &filter, 50, 0).expect("search");
            timings.push(t.elapsed());
            hits += total;
        }
        timings.sort();
        (timings, hits as f64 / pairs.len() as f64)
    };
    let (two, two_hits) = measure(&|(a, b)| format!("{a} {b}"));
    let (quoted, quoted_hits) = measure(&|(a, b)| format!("\"{a} {b}\""));
    // A typo that finds nothing, answered with the word meant.
    let mut typos = Vec::with_capacity(QUERIES);
    let mut offered = 0;
    for _ in 0..QUERIES {
        let meant = word(rng.next() % 4096);
        let mut typed: Vec<char> = meant.chars().collect();
        typed.swap(1, 2);
        let typed: String = typed.into_iter().collect();
        let text = coe::domain::search::SearchText::parse(&typed).expect("a word");
        let t = Instant::now();
        let fixed = coes::did_you_mean(&mut conn, &text).expect("did you mean");
        typos.push(t.elapsed());
        offered += usize::from(fixed.is_some());
    }
    typos.sort();
    let mut plain = Vec::with_capacity(QUERIES);
    for i in 0..QUERIES {
        let filter = CoeFilter {
            service: Some(format!("service-{}", i % 40)),
            ..CoeFilter::default()
        };
        let t = Instant::now();
        coes::list(&mut conn, &filter, 50, 0).expect("list");
        plain.push(t.elapsed());
    }
    plain.sort();
    println!(
        "| {backend}: {COES} COEs (filled in {:.1} s) | median | p95 | max |",
        filled.as_secs_f64()
    );
    println!("|---|---|---|---|");
    println!(
        "| search `q=<one word>`, first 50 (avg {:.0} hits) | {:.2} ms | {:.2} ms | {:.2} ms |",
        hits as f64 / QUERIES as f64,
        percentile(&timings, 0.5).as_secs_f64() * 1e3,
        percentile(&timings, 0.95).as_secs_f64() * 1e3,
        timings[QUERIES - 1].as_secs_f64() * 1e3
    );
    let row = |what: String, t: &[Duration]| {
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {:.2} ms |",
            percentile(t, 0.5).as_secs_f64() * 1e3,
            percentile(t, 0.95).as_secs_f64() * 1e3,
            t[t.len() - 1].as_secs_f64() * 1e3
        );
    };
    row(
        format!("search `q=<two words>`, first 50 (avg {two_hits:.0} hits)"),
        &two,
    );
    row(
        format!("search `q=\"<two words>\"`, first 50 (avg {quoted_hits:.1} hits)"),
        &quoted,
    );
    row(
        format!("did you mean, a typo ({offered} of {QUERIES} answered)"),
        &typos,
    );
    println!(
        "| list by service, first 50 | {:.2} ms | {:.2} ms | {:.2} ms |",
        percentile(&plain, 0.5).as_secs_f64() * 1e3,
        percentile(&plain, 0.95).as_secs_f64() * 1e3,
        plain[QUERIES - 1].as_secs_f64() * 1e3
    );
}
