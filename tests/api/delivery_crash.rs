//! A replica killed (`kill -9`) in the middle of sending email strands only the email
//! in flight, and gives it back when it starts again: against a real SMTP server, on
//! both databases.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use diesel::prelude::*;

use crate::cli::{serve, Served};
use crate::email::SmtpServer;
use crate::helpers::{free_port, TestDatabase};
use coe::db::schema::outbox_emails;

/// How many emails the replica has to send.
const EMAILS: usize = 300;

/// The settings of both runs of the replica: the same name, so that the second run
/// knows what the first held.
fn start(db: &TestDatabase, smtp: &SmtpServer) -> Served {
    serve(
        &db.url,
        &[
            ("COE_SMTP_URL", smtp.url().as_str()),
            ("COE_SERVER_REPLICA_NAME", "replica-a"),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "1"),
        ],
    )
}

fn pool(db: &TestDatabase) -> coe::db::DbPool {
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

#[test]
fn a_replica_killed_while_sending_strands_only_the_email_in_flight() {
    let db = TestDatabase::new();
    // A slow server (20 ms a message): the kill finds a send under way.
    let smtp = SmtpServer::start_with(free_port(), &["--delay-ms", "20"]);
    let served = start(&db, &smtp);
    let pool = pool(&db);
    {
        let mut conn = pool.get().expect("conn");
        coe::db::write_transaction(&mut conn, |conn| {
            for n in 0..EMAILS {
                let email = coe::services::outbox::NewEmail {
                    kind: coe::email::Kind::OverdueDigest,
                    dedup_key: format!("crash-{n}"),
                    recipient: format!("owner{n}@example.com"),
                    recipient_name: None,
                    subject: format!("Overdue digest {n}"),
                    text: "One action is overdue.".into(),
                    html: "<p>One action is overdue.</p>".into(),
                };
                coe::services::outbox::enqueue(conn, &email, coe::db::now())?;
            }
            Ok::<_, diesel::result::Error>(())
        })
        .expect("queue the emails");
    }

    // Killed once about a third went out.
    let deadline = Instant::now() + Duration::from_secs(60);
    while smtp.messages().len() < EMAILS / 3 {
        assert!(
            Instant::now() < deadline,
            "the emails did not start to leave"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let deadline = restarted + Duration::from_secs(120);
    loop {
        let now = states(&pool);
        if now.get("sent").copied().unwrap_or(0) == EMAILS as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every email was sent within two minutes of the restart: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = restarted.elapsed();
    // Every email arrived; one the server had taken just before the kill may come
    // twice (the same Message-ID): that is the only duplicate a crash can make.
    let deadline = Instant::now() + Duration::from_secs(30);
    let received = loop {
        let received = smtp.messages();
        let ids: std::collections::BTreeSet<&str> =
            received.iter().map(|m| m.message_id.as_str()).collect();
        if ids.len() == EMAILS {
            break received;
        }
        assert!(
            Instant::now() < deadline,
            "{} different emails arrived of {EMAILS}",
            ids.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let twice = received.len() - EMAILS;
    assert!(
        twice as i64 <= stranded,
        "{twice} email(s) arrived twice though {stranded} was being sent at the kill"
    );
    if stranded == 1 {
        let given_back = served.logged(
            "emails this replica was sending when it stopped are sent again (one the SMTP \
             server had taken just before may arrive twice, with the same Message-ID)",
        );
        assert_eq!(given_back.len(), 1, "the restart says what it gave back");
        assert_eq!(given_back[0]["emails"], 1, "{given_back:?}");
    }
    eprintln!(
        "kill -9 after {sent_before} of {EMAILS} sent, {stranded} in flight: the rest sent \
         {took:?} after the restart, {twice} arrived twice"
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
    for (key, lease) in [("stopped", -60), ("sending", 600)] {
        let email = coe::services::outbox::NewEmail {
            kind: coe::email::Kind::OverdueDigest,
            dedup_key: key.into(),
            recipient: format!("{key}@example.com"),
            recipient_name: None,
            subject: format!("Overdue digest ({key})"),
            text: "One action is overdue.".into(),
            html: "<p>One action is overdue.</p>".into(),
        };
        coe::services::outbox::enqueue(&mut conn, &email, now).expect("queue");
        diesel::update(outbox_emails::table.filter(outbox_emails::dedup_key.eq(key)))
            .set((
                outbox_emails::state.eq("sending"),
                outbox_emails::attempts.eq(1),
                outbox_emails::claimed_by.eq("host-b/10.0.0.2:8080"),
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
    assert!(
        !page.contains("/retry"),
        "no retry while it is being sent: {page}"
    );
}
