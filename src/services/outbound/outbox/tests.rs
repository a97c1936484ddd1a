use super::delivery::*;
use super::*;
use crate::config::Settings;
use crate::db::testing::database;
use crate::email::Transport;
use chrono::Duration;
use std::sync::atomic::AtomicBool;

fn email(key: &str) -> NewEmail {
    NewEmail {
        kind: Kind::Approved,
        dedup_key: key.into(),
        recipient: "ana@example.com".into(),
        recipient_name: Some("Ana\r\nBcc: x@example.com".into()),
        subject: "Approved: it".into(),
        text: "text".into(),
        html: "<p>html</p>".into(),
        data: serde_json::Value::Null,
        calendar: None,
    }
}

#[test]
fn an_email_is_queued_once_and_sent_once_with_its_row_in_the_message_id() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    let runtime = crate::services::Runtime::load(Settings::default()).expect("runtime");
    assert!(enqueue(&mut conn, &email("k1"), db::now()).unwrap());
    assert!(
        !enqueue(&mut conn, &email("k1"), db::now()).unwrap(),
        "same key: no-op"
    );

    let transport = Transport::memory();
    let go = AtomicBool::new(false);
    let report = deliver(&mut conn, &transport, runtime.env(), "a", &go).unwrap();
    assert_eq!(report.sent, 1);
    assert_eq!(
        deliver(&mut conn, &transport, runtime.env(), "a", &go)
            .unwrap()
            .sent,
        0
    );
    let sent = transport.sent();
    assert_eq!(sent.len(), 1);
    let row = list(&mut conn, None, None, None, 10).unwrap().remove(0);
    assert_eq!(row.state, SENT);
    assert!(
        sent[0].contains(&format!("Message-ID: <{}.approved@localhost>", row.id)),
        "{}",
        sent[0]
    );
    assert!(!sent[0].contains("\r\nBcc:"), "the name lost its CR/LF");
}

#[test]
fn the_counts_kept_by_every_write_equal_a_count_of_the_emails() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    let check = |conn: &mut DbConnection, step: &str| {
        fold_counts(conn).unwrap();
        let counted: BTreeMap<String, i64> = outbox_emails::table
            .group_by(outbox_emails::state)
            .select((outbox_emails::state, diesel::dsl::count_star()))
            .load::<(String, i64)>(conn)
            .unwrap()
            .into_iter()
            .collect();
        for (state, n) in counts(conn).unwrap() {
            assert_eq!(
                counted.get(&state).copied().unwrap_or(0),
                n,
                "{step}: {state}"
            );
        }
    };
    check(&mut conn, "empty");
    for i in 0..6 {
        enqueue(&mut conn, &email(&format!("c{i}")), db::now()).unwrap();
    }
    enqueue(&mut conn, &email("c0"), db::now()).unwrap();
    check(&mut conn, "queued, one twice");
    let claimed = claim(&mut conn, db::now(), Duration::seconds(600), 2, "a").unwrap();
    assert_eq!(claimed.len(), 2);
    check(&mut conn, "two claimed");
    let runtime = crate::services::Runtime::load(Settings::default()).expect("runtime");
    let go = AtomicBool::new(false);
    deliver(&mut conn, &Transport::memory(), runtime.env(), "b", &go).unwrap();
    check(&mut conn, "delivered");
    // Written by hand too: a row failed, one deleted, the sent purged.
    diesel::sql_query(
        "UPDATE outbox_emails SET state = 'failed' \
          WHERE id = (SELECT min(id) FROM outbox_emails WHERE state = 'pending')",
    )
    .execute(&mut conn)
    .unwrap();
    diesel::sql_query("DELETE FROM outbox_emails WHERE id = (SELECT max(id) FROM outbox_emails)")
        .execute(&mut conn)
        .unwrap();
    check(&mut conn, "by hand");
    let purged = purge_sent(&mut conn, db::now() + Duration::days(1)).unwrap();
    assert!(purged > 0);
    check(&mut conn, "purged");
    assert_eq!(counts(&mut conn).unwrap()[SENT], 0);
}

#[test]
fn a_claim_is_exclusive_until_its_lease_expires() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    enqueue(&mut conn, &email("k2"), db::now()).unwrap();
    let now = db::now();
    let lease = Duration::seconds(600);
    assert_eq!(claim(&mut conn, now, lease, 10, "a").unwrap().len(), 1);
    assert!(claim(&mut conn, now, lease, 10, "b").unwrap().is_empty());
    // The worker died: after the lease, another one takes the email again.
    let later = now + Duration::seconds(601);
    let again = claim(&mut conn, later, lease, 10, "b").unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);
    assert_eq!(again[0].claimed_by.as_deref(), Some("b"));
    // The first worker wakes up: it no longer holds the email and may not record it.
    let mut stale = again[0].clone();
    stale.lease_until = Some(now + lease);
    record(
        &mut conn,
        &stale,
        &Ok(()),
        crate::services::Runtime::load(Settings::default())
            .expect("runtime")
            .env(),
        later,
    )
    .unwrap();
    let row = list(&mut conn, None, None, None, 10).unwrap().remove(0);
    assert_eq!(row.state, SENDING, "the stale worker changed nothing");
}

#[test]
fn a_replica_that_starts_again_gives_back_only_what_it_held() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    for key in ["mine", "theirs", "waiting"] {
        enqueue(&mut conn, &email(key), db::now()).unwrap();
    }
    let now = db::now();
    let lease = Duration::seconds(900);
    let mine = claim(&mut conn, now, lease, 1, "host/a").unwrap().remove(0);
    let theirs = claim(&mut conn, now, lease, 1, "host/b").unwrap().remove(0);
    // host/a died while sending and starts again: its email is due at once, its
    // attempt not counted; host/b's stays claimed, the last one pending.
    assert_eq!(reclaim(&mut conn, "host/a", now).unwrap(), 1);
    let rows = list(&mut conn, None, None, None, 10).unwrap();
    let state = |id: &str| {
        rows.iter()
            .find(|r| r.id == id)
            .map(|r| (r.state.clone(), r.attempts))
    };
    assert_eq!(state(&mine.id), Some((PENDING.to_owned(), 0)));
    assert_eq!(state(&theirs.id), Some((SENDING.to_owned(), 1)));
    assert_eq!(
        reclaim(&mut conn, "host/a", now).unwrap(),
        0,
        "nothing twice"
    );
    // The next claim takes it again under the new process.
    let again = claim(&mut conn, now, lease, 10, "host/a").unwrap();
    assert_eq!(again.len(), 2, "the given-back email and the pending one");
}

#[test]
fn a_stop_puts_the_rest_of_the_batch_back() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    for key in ["a", "b", "c"] {
        enqueue(&mut conn, &email(key), db::now()).unwrap();
    }
    let stop = AtomicBool::new(true);
    let report = deliver(
        &mut conn,
        &Transport::memory(),
        crate::services::Runtime::load(Settings::default())
            .expect("runtime")
            .env(),
        "a",
        &stop,
    )
    .unwrap();
    assert_eq!(report, DeliveryReport::default());
    let rows = list(&mut conn, None, None, None, 10).unwrap();
    assert!(
        rows.iter().all(|r| r.state == PENDING && r.attempts == 0),
        "{rows:?}"
    );
}

#[test]
fn only_old_sent_emails_are_purged() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    let now = db::now();
    for key in ["old", "new", "failed"] {
        enqueue(&mut conn, &email(key), now).unwrap();
    }
    let set = |conn: &mut DbConnection, key: &str, state: &str, sent: Option<NaiveDateTime>| {
        diesel::update(outbox_emails::table.filter(outbox_emails::dedup_key.eq(key)))
            .set((
                outbox_emails::state.eq(state),
                outbox_emails::sent_at.eq(sent),
            ))
            .execute(conn)
            .unwrap();
    };
    set(&mut conn, "old", SENT, Some(now - Duration::days(100)));
    set(&mut conn, "new", SENT, Some(now - Duration::days(1)));
    set(&mut conn, "failed", FAILED, None);
    assert_eq!(purge_sent(&mut conn, now - Duration::days(90)).unwrap(), 1);
    let left: Vec<String> = list(&mut conn, None, None, None, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.dedup_key)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&"old".to_owned()));
}

/// A sign-in link is stored apart from the email's text: the text says a link was
/// sent, the message sent carries the link (escaped in the HTML as the template
/// would have), and the link is forgotten once it is sent.
#[test]
fn a_private_link_is_in_the_message_sent_only_and_forgotten_once_sent() {
    let (_dir, pool) = database();
    let link = "https://coe.example.com/sign-in/confirm?token=coe_s3cret&x=1";
    let mut mail = email("link");
    mail.kind = Kind::SignIn;
    mail.text = format!("open it:\n  {PRIVATE_LINK}\nthanks");
    mail.html = format!("<a href=\"{PRIVATE_LINK}\">Sign in</a>");
    {
        let mut conn = pool.get().expect("conn");
        assert!(enqueue_with_private_link(&mut conn, &mail, link, db::now()).unwrap());
        let id = list(&mut conn, None, None, None, 1).unwrap().remove(0).id;
        let (_, body) = get(&mut conn, &id).unwrap().expect("the email");
        assert!(!body.contains("coe_s3cret"), "{body}");
        assert!(body.contains(SIGN_IN_LINK_SHOWN), "{body}");
    }
    let transport = Transport::memory();
    let go = AtomicBool::new(false);
    let report = deliver_pooled(
        &pool,
        &transport,
        crate::services::Runtime::load(Settings::default())
            .expect("runtime")
            .env(),
        "a",
        &go,
    )
    .unwrap();
    assert_eq!(report.sent, 1);
    let raw = transport.sent().remove(0);
    let sent = mail_parser::MessageParser::default()
        .parse(raw.as_bytes())
        .expect("a MIME message");
    let (text, html) = (
        sent.body_text(0).expect("text"),
        sent.body_html(0).expect("html"),
    );
    assert_eq!(
        text.replace("\r\n", "\n"),
        format!("open it:\n  {link}\nthanks")
    );
    assert_eq!(
        html,
        "<a href=\"https://coe.example.com/sign-in/confirm?token&#x3D;coe_s3cret&amp;x&#x3D;1\">Sign in</a>",
        "escaped as the template would have"
    );
    let mut conn = pool.get().expect("conn");
    let kept: Vec<(Option<String>, Option<String>)> = outbox_emails::table
        .select((
            outbox_emails::private_link,
            outbox_emails::unsubscribe_token,
        ))
        .load(&mut conn)
        .unwrap();
    assert_eq!(kept, vec![(None, None)], "forgotten once sent");
}

#[test]
fn a_sign_in_link_written_in_full_is_shown_as_words() {
    let text = "Hi,\n\n  https://coe.example.com/sign-in/confirm?token=coe_abc\n\nBye ([[x]])";
    let shown = readable("sign_in", text);
    assert_eq!(
        shown,
        format!("Hi,\n\n  {SIGN_IN_LINK_SHOWN}\n\nBye ([[x]])")
    );
    assert_eq!(
        readable("approved", &format!("see {PRIVATE_LINK}.")),
        format!("see {PRIVATE_LINK_SHOWN}.")
    );
    assert_eq!(readable("approved", "nothing secret"), "nothing secret");
}
