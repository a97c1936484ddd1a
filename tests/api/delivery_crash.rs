//! A replica killed (`kill -9`) in the middle of sending email strands only the email
//! in flight, and gives it back when it starts again: against a real SMTP server, on
//! both databases.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use diesel::prelude::*;

use crate::cli::{serve, Served};
use crate::email::SmtpServer;
use crate::eventually::eventually;
use crate::helpers::{free_port, TestDatabase};
use coe::db::schema::outbox_emails;

/// How many emails the replica has to send.
const EMAILS: usize = 300;

/// The settings of both runs of the replica: the same name, so that the second run
/// knows what the first held.
fn start(db: &TestDatabase, smtp: &SmtpServer) -> Served {
    start_as(db, smtp, "replica-a")
}

fn start_as(db: &TestDatabase, smtp: &SmtpServer, name: &str) -> Served {
    serve(
        &db.url,
        &[
            ("COE_SMTP_URL", smtp.url().as_str()),
            ("COE_SERVER_REPLICA_NAME", name),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "1"),
        ],
    )
}

pub(crate) fn pool(db: &TestDatabase) -> coe::db::DbPool {
    coe::db::connect(&coe::config::DatabaseSettings {
        url: db.url.clone(),
        ..coe::config::DatabaseSettings::default()
    })
    .expect("connect")
}

/// Emails by state.
fn states(pool: &coe::db::DbPool) -> BTreeMap<String, i64> {
    outbox_emails::table
        .group_by(outbox_emails::state)
        .select((outbox_emails::state, diesel::dsl::count_star()))
        .load::<(String, i64)>(&mut pool.get().expect("conn"))
        .expect("the outbox")
        .into_iter()
        .collect()
}

/// Queues `EMAILS` overdue digests.
fn queue_emails(pool: &coe::db::DbPool) {
    {
        let mut conn = pool.get().expect("conn");
        coe::db::write_transaction(&mut conn, |conn| {
            for n in 0..EMAILS {
                let email = coe::services::outbound::outbox::NewEmail {
                    kind: coe::email::Kind::OverdueDigest,
                    dedup_key: format!("crash-{n}"),
                    recipient: format!("owner{n}@example.com"),
                    recipient_name: None,
                    subject: format!("Overdue digest {n}"),
                    text: "One action is overdue.".into(),
                    html: "<p>One action is overdue.</p>".into(),
                    data: serde_json::Value::Null,
                    calendar: None,
                };
                coe::services::outbound::outbox::enqueue(conn, &email, coe::db::now())?;
            }
            Ok::<_, diesel::result::Error>(())
        })
        .expect("queue the emails");
    }
}

/// Waits (up to a minute) until about a third of the emails reached the SMTP server.
fn until_a_third_left(smtp: &SmtpServer) {
    eventually(
        Duration::from_secs(60),
        "the emails start to leave (a third reach the SMTP server)",
        || smtp.messages().len() >= EMAILS / 3,
    );
}

/// Waits until every email is sent, at most two minutes after `restarted`.
fn until_every_email_is_sent(pool: &coe::db::DbPool, restarted: Instant) {
    eventually(
        Duration::from_secs(120).saturating_sub(restarted.elapsed()),
        "every email sent within two minutes of the restart",
        || {
            let now = states(pool);
            if now.get("sent").copied().unwrap_or(0) == EMAILS as i64 {
                Ok(())
            } else {
                Err(format!("{now:?}"))
            }
        },
    );
}

#[test]
fn a_replica_killed_while_sending_strands_only_the_email_in_flight() {
    let db = TestDatabase::new();
    // A slow server (20 ms a message): the kill finds a send under way.
    let smtp = SmtpServer::start_with(free_port(), &["--delay-ms", "20"]);
    let served = start(&db, &smtp);
    let pool = pool(&db);
    queue_emails(&pool);

    // Killed once about a third went out.
    until_a_third_left(&smtp);
    drop(served); // SIGKILL, and waited for
    let at_kill = states(&pool);
    let stranded = at_kill.get("sending").copied().unwrap_or(0);
    assert!(
        stranded <= 1,
        "a crash strands at most the email in flight: {at_kill:?}"
    );
    let sent_before = at_kill.get("sent").copied().unwrap_or(0);
    assert!(
        sent_before < EMAILS as i64,
        "killed before the end: {at_kill:?}"
    );

    // Started again under the same name: everything goes out, the stranded email at
    // once rather than after its 15-minute lease.
    let restarted = Instant::now();
    let served = start(&db, &smtp);
    until_every_email_is_sent(&pool, restarted);
    let took = restarted.elapsed();
    // Every email arrived; one the server had taken just before the kill may come
    // twice (the same Message-ID): that is the only duplicate a crash can make.
    let received = eventually(Duration::from_secs(30), "every email arrived", || {
        let received = smtp.messages();
        let different = received
            .iter()
            .map(|m| m.message_id.as_str())
            .collect::<std::collections::BTreeSet<&str>>()
            .len();
        if different == EMAILS {
            Ok(received)
        } else {
            Err(format!("{different} different emails arrived of {EMAILS}"))
        }
    });
    let twice = received.len() - EMAILS;
    assert!(
        twice as i64 <= stranded,
        "{twice} email(s) arrived twice though {stranded} was being sent at the kill"
    );
    if stranded == 1 {
        let given_back = served.logged(
            "what this replica was sending when it stopped is sent again (one the other side \
             had taken just before may arrive twice; an email with the same Message-ID)",
        );
        assert_eq!(given_back.len(), 1, "the restart says what it gave back");
        assert_eq!(given_back[0]["queue"], "email", "{given_back:?}");
        assert_eq!(given_back[0]["rows"], 1, "{given_back:?}");
    }
    eprintln!(
        "kill -9 after {sent_before} of {EMAILS} sent, {stranded} in flight: the rest sent \
         {took:?} after the restart, {twice} arrived twice"
    );
}

/// A replica killed while sending and started again under another name (a new pod)
/// leaves nothing `sending` for the whole lease: once the old name's heartbeat has
/// been silent for a minute, its email is stranded and the new replica sends it.
#[test]
fn a_replica_back_under_another_name_sends_what_the_old_name_held() {
    use coe::db::schema::replica_heartbeats;
    let db = TestDatabase::new();
    let smtp = SmtpServer::start_with(free_port(), &["--delay-ms", "20"]);
    let served = start_as(&db, &smtp, "pod-a");
    let pool = pool(&db);
    queue_emails(&pool);
    until_a_third_left(&smtp);
    drop(served); // SIGKILL, and waited for
    let mut conn = pool.get().expect("conn");
    let held: Vec<String> = outbox_emails::table
        .filter(outbox_emails::state.eq("sending"))
        .select(outbox_emails::id)
        .load(&mut conn)
        .expect("the outbox");
    let beats: Vec<String> = replica_heartbeats::table
        .select(replica_heartbeats::name)
        .load(&mut conn)
        .expect("the heartbeats");
    assert_eq!(beats, ["pod-a"], "the replica said it was alive");
    // A minute passes without pod-a's heartbeat (it is dead: nothing writes it).
    diesel::update(replica_heartbeats::table)
        .set(replica_heartbeats::seen_at.eq(coe::db::now() - chrono::Duration::seconds(61)))
        .execute(&mut conn)
        .expect("a minute later");
    drop(conn);

    let restarted = Instant::now();
    let _served = start_as(&db, &smtp, "pod-b");
    until_every_email_is_sent(&pool, restarted);
    // What pod-a held was sent by pod-b, long before the 15-minute lease ran out.
    let mut conn = pool.get().expect("conn");
    for id in &held {
        let (state, by): (String, Option<String>) = outbox_emails::table
            .find(id)
            .select((outbox_emails::state, outbox_emails::claimed_by))
            .first(&mut conn)
            .expect("the email");
        assert_eq!(state, "sent", "{id}");
        assert_eq!(by, None, "{id}");
    }
    eprintln!(
        "a replica back as pod-b sent all {EMAILS} ({} held by pod-a) {:?} after its start",
        held.len(),
        restarted.elapsed()
    );
}

/// An email whose sender stopped (its claim ran out) says so in the outbox, and an
/// admin may retry it at once; one still being sent names who sends it and until when,
/// and is not taken from them.
#[tokio::test]
async fn an_admin_retries_an_email_whose_sender_stopped() {
    use serde_json::json;
    let app = crate::helpers::spawn_app().await;
    let admin = app.admin_token();
    let mut conn = app.pool.get().expect("conn");
    let now = coe::db::now();
    let mut ids = Vec::new();
    // host-b says it is alive; host-c has been silent for two minutes.
    for (name, seen) in [("host-b/10.0.0.2:8080", 0), ("host-c/10.0.0.3:8080", -120)] {
        use coe::db::schema::replica_heartbeats;
        diesel::insert_into(replica_heartbeats::table)
            .values((
                replica_heartbeats::name.eq(name),
                replica_heartbeats::started_at.eq(now - chrono::Duration::hours(1)),
                replica_heartbeats::seen_at.eq(now + chrono::Duration::seconds(seen)),
            ))
            .execute(&mut conn)
            .expect("a heartbeat");
    }
    for (key, lease, by) in [
        ("stopped", -60, "host-b/10.0.0.2:8080"),
        ("sending", 600, "host-b/10.0.0.2:8080"),
        ("silent", 600, "host-c/10.0.0.3:8080"),
    ] {
        let email = coe::services::outbound::outbox::NewEmail {
            kind: coe::email::Kind::OverdueDigest,
            dedup_key: key.into(),
            recipient: format!("{key}@example.com"),
            recipient_name: None,
            subject: format!("Overdue digest ({key})"),
            text: "One action is overdue.".into(),
            html: "<p>One action is overdue.</p>".into(),
            data: serde_json::Value::Null,
            calendar: None,
        };
        coe::services::outbound::outbox::enqueue(&mut conn, &email, now).expect("queue");
        diesel::update(outbox_emails::table.filter(outbox_emails::dedup_key.eq(key)))
            .set((
                outbox_emails::state.eq("sending"),
                outbox_emails::attempts.eq(1),
                outbox_emails::claimed_by.eq(by),
                outbox_emails::lease_until.eq(now + chrono::Duration::seconds(lease)),
            ))
            .execute(&mut conn)
            .expect("claimed");
        let id: String = outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .select(outbox_emails::id)
            .first(&mut conn)
            .expect("id");
        ids.push(id);
    }
    let listed = app.get_json("/api/v1/outbox?state=sending", &admin).await;
    let by_id = |id: &str| {
        listed["emails"]
            .as_array()
            .expect("emails")
            .iter()
            .find(|e| e["id"] == id)
            .cloned()
            .expect("listed")
    };
    assert_eq!(by_id(&ids[0])["stranded"], true, "{listed}");
    assert_eq!(by_id(&ids[1])["stranded"], false, "{listed}");
    assert_eq!(by_id(&ids[1])["claimed_by"], "host-b/10.0.0.2:8080");
    assert!(by_id(&ids[1])["lease_until"].is_string(), "{listed}");
    // Its lease runs for ten minutes, but its replica has gone silent: stranded.
    assert_eq!(by_id(&ids[2])["stranded"], true, "{listed}");

    let res = app
        .post_json(
            &format!("/api/v1/outbox/{}/retry", ids[1]),
            Some(&admin),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 409);
    let body: serde_json::Value = res.json().await.expect("json");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("being sent by host-b/10.0.0.2:8080"),
        "{body}"
    );
    let res = app
        .post_json(
            &format!("/api/v1/outbox/{}/retry", ids[0]),
            Some(&admin),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.expect("json");
    assert_eq!(body["state"], "pending", "{body}");
    assert_eq!(body["claimed_by"], serde_json::Value::Null, "{body}");
    let res = app
        .post_json(
            &format!("/api/v1/outbox/{}/retry", ids[2]),
            Some(&admin),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 200, "a silent replica's claim is taken back");

    // The outbox page says who was sending the other, and offers no retry for it.
    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let cookie = crate::pages::sign_in(&app, "dana@example.com").await;
    let page = crate::pages::get_page(&app, "/admin/outbox?state=sending", Some(&cookie))
        .await
        .text()
        .await
        .expect("the page");
    assert!(
        page.contains("by host-b/10.0.0.2:8080, claimed until"),
        "{page}"
    );
    // Above the emails, the one view over the queue: the email being sent counted.
    assert!(
        page.contains("What waits to leave coe") && page.contains("Tracker updates"),
        "{page}"
    );
    assert!(
        !page.contains("/retry"),
        "no retry while it is being sent: {page}"
    );
}

/// The PostgreSQL tool `name` (`pg_dump`, `pg_restore`) of the newest server installed.
pub(crate) fn pg_tool(name: &str) -> String {
    let bin = std::env::var("PG_BIN").ok().unwrap_or_else(|| {
        let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed")
            .flatten()
            .map(|e| e.path().join("bin"))
            .collect();
        dirs.sort();
        dirs.last()
            .expect("a PostgreSQL version")
            .display()
            .to_string()
    });
    format!("{bin}/{name}")
}

/// Runs `program` with `args`, which must succeed; its standard output.
pub(crate) fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Emails by id: each one's state.
pub(crate) fn state_of(pool: &coe::db::DbPool, id: &str) -> String {
    outbox_emails::table
        .find(id)
        .select(outbox_emails::state)
        .first(&mut pool.get().expect("conn"))
        .expect("the email")
}

/// A backup taken while two emails were being sent, restored (`coe restore` on
/// SQLite; `pg_dump` and `pg_restore --clean` on PostgreSQL): neither is sent again
/// by itself — they may have gone out after the backup — but held for an admin, who
/// sends one again and drops the other. The replica that starts has the name that
/// held them, so giving back its own would have sent them.
#[test]
fn a_restore_holds_what_was_in_flight_for_an_admin() {
    let db = TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    crate::cli::coe(&["migrate"], &env);
    let setup = pool(&db);
    let now = coe::db::now();
    let mut ids = Vec::new();
    for key in ["in-flight-1", "in-flight-2", "waiting"] {
        let email = coe::services::outbound::outbox::NewEmail {
            kind: coe::email::Kind::ActionAssigned,
            dedup_key: key.into(),
            recipient: format!("{key}@example.com"),
            recipient_name: None,
            subject: format!("Assigned ({key})"),
            text: "An action is yours.".into(),
            html: "<p>An action is yours.</p>".into(),
            data: serde_json::Value::Null,
            calendar: None,
        };
        let mut conn = setup.get().expect("conn");
        coe::services::outbound::outbox::enqueue(&mut conn, &email, now).expect("queue");
        ids.push(
            outbox_emails::table
                .filter(outbox_emails::dedup_key.eq(key))
                .select(outbox_emails::id)
                .first::<String>(&mut conn)
                .expect("id"),
        );
    }
    diesel::update(outbox_emails::table.filter(outbox_emails::id.eq_any(&ids[..2])))
        .set((
            outbox_emails::state.eq("sending"),
            outbox_emails::attempts.eq(1),
            outbox_emails::claimed_by.eq("replica-a"),
            outbox_emails::lease_until.eq(now - chrono::Duration::seconds(60)),
        ))
        .execute(&mut setup.get().expect("conn"))
        .expect("claimed");
    drop(setup);

    let dir = tempfile::tempdir().expect("temp dir");
    if db.url.starts_with("sqlite://") {
        let backup = dir.path().join("backup.db");
        let out = crate::cli::coe(&["backup", &backup.to_string_lossy()], &env);
        assert!(out.status.success(), "{}", crate::cli::stderr(&out));
        let out = crate::cli::coe(&["restore", &backup.to_string_lossy()], &env);
        assert!(out.status.success(), "{}", crate::cli::stderr(&out));
        let said = crate::cli::stdout(&out);
        assert!(
            said.contains("2 email(s) were being sent and 1 waiting when the backup was taken"),
            "{said}"
        );
    } else {
        let dump = dir.path().join("coe.dump");
        let dump = dump.to_string_lossy();
        run(
            &pg_tool("pg_dump"),
            &["--format=custom", "--file", &dump, &db.url],
            &[],
        );
        run(
            &pg_tool("pg_restore"),
            &["--clean", "--if-exists", "--dbname", &db.url, &dump],
            &[],
        );
    }

    let smtp = SmtpServer::start();
    let served = start(&db, &smtp);
    let pool = pool(&db);
    // All three are held (issue 62 item 2: the waiting one too, since the database the
    // restore replaced may have sent it); then an email queued after the restore goes
    // out: the delivery job ran, after the hold.
    let deadline = Instant::now() + Duration::from_secs(60);
    eventually(Duration::from_secs(60), "the restored emails held", || {
        ids.iter().all(|id| state_of(&pool, id) == "held")
    });
    let after = coe::services::outbound::outbox::NewEmail {
        kind: coe::email::Kind::ActionAssigned,
        dedup_key: "after-restore".into(),
        recipient: "after-restore@example.com".into(),
        recipient_name: None,
        subject: "Assigned (after the restore)".into(),
        text: "An action is yours.".into(),
        html: "<p>An action is yours.</p>".into(),
        data: serde_json::Value::Null,
        calendar: None,
    };
    coe::services::outbound::outbox::enqueue(
        &mut pool.get().expect("conn"),
        &after,
        coe::db::now(),
    )
    .expect("queue");
    // Within the same minute.
    eventually(
        deadline.saturating_duration_since(Instant::now()),
        "the new email sent",
        || !smtp.to("after-restore@example.com").is_empty(),
    );
    for id in &ids {
        assert_eq!(state_of(&pool, id), "held");
    }
    assert_eq!(smtp.messages().len(), 1, "nothing held was sent");
    if !db.url.starts_with("sqlite://") {
        served.until_logged("this database was restored from a dump");
    }

    let admin = served.admin_token();
    let listed = crate::cli::http_get(served.port, "/api/v1/outbox?state=held", Some(&admin));
    assert!(listed.contains("may have gone out already"), "{listed}");
    assert!(listed.contains(r#""held":3"#), "{listed}");
    assert!(
        !listed.contains("replica-a"),
        "a held email names no sender: {listed}"
    );
    let dropped = crate::cli::http_post(
        served.port,
        &format!("/api/v1/outbox/{}/drop", ids[0]),
        &admin,
    );
    assert!(dropped.starts_with("HTTP/1.1 200"), "{dropped}");
    assert!(dropped.contains(r#""state":"dropped""#), "{dropped}");
    let again = crate::cli::http_post(
        served.port,
        &format!("/api/v1/outbox/{}/drop", ids[0]),
        &admin,
    );
    assert!(again.starts_with("HTTP/1.1 409"), "{again}");
    let unknown = crate::cli::http_post(
        served.port,
        "/api/v1/outbox/0190d2a0-0000-7000-8000-000000000000/drop",
        &admin,
    );
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");
    let sent = crate::cli::http_post(
        served.port,
        &format!("/api/v1/outbox/{}/retry", ids[1]),
        &admin,
    );
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
    eventually(Duration::from_secs(60), "the email sent again goes", || {
        !smtp.to("in-flight-2@example.com").is_empty()
    });
    assert_eq!(state_of(&pool, &ids[0]), "dropped");
    assert!(smtp.to("in-flight-1@example.com").is_empty());
    assert_eq!(smtp.messages().len(), 2);
}
