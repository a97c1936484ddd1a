//! The email outbox: every email is a row first, written in the transaction that
//! decided to send it; a delivery pass claims due rows (a lease, with `SKIP LOCKED` on
//! PostgreSQL), sends them with no transaction open, and records each outcome.
//!
//! A crash between sending and recording leaves the row `sending` until its lease
//! expires; then it is sent again. So an email may at worst go out twice (its
//! Message-ID, derived from the row, shows it), and is never lost.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use crate::db::models::OutboxRow;
use crate::db::schema::{outbox_emails, people};
use crate::db::{self, DbConnection};
use crate::domain::notifications::Class;
use crate::email::{clean_line, EmailTemplates, Kind, TemplateError};
use crate::services::directory::notifications;

mod delivery;
mod listing;
pub mod restored;

pub use crate::services::outbound::queue::{backoff, DeliveryError};
pub use delivery::{claim, deliver, deliver_pooled, message, reclaim, DeliveryReport};
pub use listing::{get, list, retry, OutboxEmail, RetryError};

pub use crate::services::outbound::queue::{FAILED, PENDING, SENDING, SENT};
/// Being sent, or waiting to be, when the backup a restore put back was taken
/// (`restored`): sent only when an admin says so.
pub const HELD: &str = "held";
/// Held, and an admin chose not to send it.
pub const DROPPED: &str = "dropped";
pub const STATES: [&str; 6] = [PENDING, SENDING, SENT, FAILED, HELD, DROPPED];

/// What a stored email says where its private link goes (a sign-in link): plain ASCII
/// that HTML-escaping leaves as it is, so that it stands in the text and the HTML
/// alike. The link itself is kept apart (`outbox_emails.private_link`), put in its
/// place only in the message handed to the SMTP server (`message`), and forgotten
/// once the email is sent or dropped: nobody reads it in the outbox.
pub const PRIVATE_LINK: &str = "[[coe:private-link]]";

/// What an admin reads in place of a sign-in link.
pub const SIGN_IN_LINK_SHOWN: &str = "[the sign-in link: sent to the recipient only, never shown]";

/// What an admin reads in place of any other private link.
pub const PRIVATE_LINK_SHOWN: &str = "[a private link: sent to the recipient only, never shown]";

/// A stored email's text as an admin may read it: its private link (and any sign-in
/// link written out in full, as emails queued before links were kept apart were,
/// or a backup of that time holds) replaced by words saying that one was sent.
pub fn readable(kind: &str, text: &str) -> String {
    let words = if kind == Kind::SignIn.name() {
        SIGN_IN_LINK_SHOWN
    } else {
        PRIVATE_LINK_SHOWN
    };
    let text = text.replace(PRIVATE_LINK, words);
    if !text.contains(SIGN_IN_PATH) {
        return text;
    }
    text.split_inclusive(char::is_whitespace)
        .map(|piece| {
            let word = piece.trim_end_matches(char::is_whitespace);
            if word.contains(SIGN_IN_PATH) {
                format!("{SIGN_IN_LINK_SHOWN}{}", &piece[word.len()..])
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

/// The path every sign-in link takes (the sign-in service's `send_link` writes it).
const SIGN_IN_PATH: &str = "/sign-in/confirm?token=";

/// An email decided on, rendered, not yet queued.
#[derive(Debug, Clone, Serialize)]
pub struct NewEmail {
    pub kind: Kind,
    pub dedup_key: String,
    pub recipient: String,
    pub recipient_name: Option<String>,
    pub subject: String,
    #[serde(skip)]
    pub text: String,
    #[serde(skip)]
    pub html: String,
}

/// Renders `kind` for `recipient`; the greeting uses `name` (from the directory).
pub fn compose(
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    name: Option<&str>,
    mut data: serde_json::Value,
) -> Result<NewEmail, TemplateError> {
    let name = name.map(clean_line).filter(|n| !n.is_empty());
    if let serde_json::Value::Object(map) = &mut data {
        map.insert(
            "recipient_name".into(),
            serde_json::Value::String(name.clone().unwrap_or_default()),
        );
    }
    let rendered = templates.render(kind, &data)?;
    Ok(NewEmail {
        kind,
        dedup_key,
        recipient: recipient.to_owned(),
        recipient_name: name,
        subject: rendered.subject,
        text: rendered.text,
        html: rendered.html,
    })
}

/// Queues `email` unless one with its deduplication key exists, or it is a notice its
/// recipient's notification settings leave out (`domain::notifications`; the sweep
/// holds reminders and digests itself, at the time it decides for). Returns whether
/// it was queued. Call it inside the transaction that made the decision.
pub fn enqueue(conn: &mut DbConnection, email: &NewEmail, now: NaiveDateTime) -> QueryResult<bool> {
    queue(conn, email, None, now)
}

/// Queues `email` as `enqueue` does; its text and HTML say `PRIVATE_LINK` where `link`
/// goes (a sign-in link: the template's data had the placeholder). The link is kept
/// apart from them, never shown, put in place only in the message sent, and forgotten
/// once the email is sent or dropped.
pub fn enqueue_with_private_link(
    conn: &mut DbConnection,
    email: &NewEmail,
    link: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    queue(conn, email, Some(link), now)
}

fn queue(
    conn: &mut DbConnection,
    email: &NewEmail,
    private_link: Option<&str>,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let class = email.kind.class();
    if class == Class::Notice && !notifications::choice(conn, &email.recipient)?.allows(class, now)
    {
        return Ok(false);
    }
    // Reminders and digests carry a link that unsubscribes in one click (RFC 8058),
    // made only for an email not queued already.
    let unsubscribe_token = match class {
        Class::Digest => {
            let queued: bool = diesel::select(diesel::dsl::exists(
                outbox_emails::table.filter(outbox_emails::dedup_key.eq(&email.dedup_key)),
            ))
            .get_result(conn)?;
            if queued {
                return Ok(false);
            }
            Some(notifications::new_link(conn, &email.recipient, now)?)
        }
        Class::Essential | Class::Notice => None,
    };
    let row = OutboxRow {
        id: db::new_id(),
        kind: email.kind.name().to_owned(),
        dedup_key: email.dedup_key.clone(),
        recipient: email.recipient.clone(),
        recipient_name: email.recipient_name.clone(),
        subject: email.subject.clone(),
        body_text: email.text.clone(),
        body_html: email.html.clone(),
        state: PENDING.into(),
        attempts: 0,
        next_attempt_at: now,
        lease_until: None,
        last_error: None,
        created_at: now,
        updated_at: now,
        sent_at: None,
        claimed_by: None,
        unsubscribe_token,
        private_link: private_link.map(str::to_owned),
    };
    let inserted = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(outbox_emails::table).values(&row),
        outbox_emails::dedup_key
    )?;
    if inserted == 1 {
        QUEUED_HERE.with(|q| q.set(true));
    }
    Ok(inserted == 1)
}

thread_local! {
    /// Set when this thread queued an email: whoever called the service rings the
    /// delivery job's bell afterwards (`DeliveryWaker::wake_if_queued`).
    static QUEUED_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wakes the delivery job when an email was queued, so that it leaves at once
/// instead of at the next pass (`reminders.delivery_interval_secs`): a sign-in link
/// reaches the SMTP server within a second. Connected to the delivery job when it
/// starts (`jobs::serve`); until then (and with `reminders.enabled = false`) ringing
/// does nothing.
#[derive(Clone, Default)]
pub struct DeliveryWaker(std::sync::Arc<std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>>);

impl DeliveryWaker {
    /// Gives the bell the delivery job's wake-up channel.
    pub fn connect(&self, worker: std::sync::mpsc::Sender<()>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(worker);
    }

    /// Rings if this thread queued an email since it last asked (and forgets it).
    pub fn wake_if_queued(&self) {
        if QUEUED_HERE.with(|q| q.replace(false)) {
            if let Some(worker) = self.0.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                let _ = worker.send(());
            }
        }
    }
}

/// Composes and queues one event email (COE opened, review steps). A template that
/// fails is logged and the email skipped: it must not undo the change that caused it.
pub fn notify(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    data: serde_json::Value,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if let Some(email) = composed(conn, templates, kind, dedup_key, recipient, data)? {
        enqueue(conn, &email, now)?;
    }
    Ok(())
}

/// Composes one event email to `recipient` (named as the directory names them), to be
/// queued by `enqueue`: composed before a write, it is queued inside it. `None` when a
/// template fails (logged: it must not undo the change that caused it).
pub fn composed(
    conn: &mut DbConnection,
    templates: &EmailTemplates,
    kind: Kind,
    dedup_key: String,
    recipient: &str,
    data: serde_json::Value,
) -> QueryResult<Option<NewEmail>> {
    let name: Option<String> = people::table
        .find(recipient)
        .select(people::name)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten();
    Ok(
        match compose(templates, kind, dedup_key, recipient, name.as_deref(), data) {
            Ok(email) => Some(email),
            Err(e) => {
                tracing::error!(error = %e, kind = kind.name(), "cannot render an email; it is not sent");
                None
            }
        },
    )
}

/// The day of the latest email of `kind` to each recipient on or before `up_to`, read from the
/// deduplication keys (`kind:YYYY-MM-DD:recipient`; ISO dates sort as text, so the
/// greatest key is the latest). Sent emails are kept `reminders.keep_sent_days`,
/// longer than any period, so the memory outlives every cadence.
pub fn last_sent(
    conn: &mut DbConnection,
    kind: Kind,
    up_to: chrono::NaiveDate,
) -> QueryResult<std::collections::HashMap<String, chrono::NaiveDate>> {
    // Keys are `kind:YYYY-MM-DD:recipient`: those of days after `up_to` sort after
    // `kind:<the next day>:` (ISO dates sort as they count).
    let after = format!("{}:{}:", kind.name(), up_to + chrono::Duration::days(1));
    let rows: Vec<(String, Option<String>)> = outbox_emails::table
        .filter(outbox_emails::kind.eq(kind.name()))
        .filter(outbox_emails::dedup_key.lt(after))
        .group_by(outbox_emails::recipient)
        .select((
            outbox_emails::recipient,
            diesel::dsl::max(outbox_emails::dedup_key),
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(recipient, key)| {
            let day = key?.split(':').nth(1)?.parse().ok()?;
            Some((recipient, day))
        })
        .collect())
}

/// Which of `keys` are in the outbox already: the sweep skips rendering these. Exact
/// matches on the unique index, 1,000 keys per query (no collation can change them).
pub fn existing_keys(
    conn: &mut DbConnection,
    keys: &[&str],
) -> QueryResult<std::collections::HashSet<String>> {
    let mut existing = std::collections::HashSet::new();
    for chunk in keys.chunks(1000) {
        existing.extend(
            outbox_emails::table
                .filter(outbox_emails::dedup_key.eq_any(chunk))
                .select(outbox_emails::dedup_key)
                .load::<String>(conn)?,
        );
    }
    Ok(existing)
}

/// Deletes emails sent (or dropped) before `before`; returns how many. Failed, held
/// and pending emails stay. Their deduplication keys go with them, so `before` must be
/// older than the longest reminder period (the settings check it).
pub fn purge_sent(conn: &mut DbConnection, before: NaiveDateTime) -> QueryResult<usize> {
    db::write_transaction(conn, |conn| {
        let sent = diesel::delete(
            outbox_emails::table
                .filter(outbox_emails::state.eq(SENT))
                .filter(outbox_emails::sent_at.lt(before)),
        )
        .execute(conn)?;
        let dropped = diesel::delete(
            outbox_emails::table
                .filter(outbox_emails::state.eq(DROPPED))
                .filter(outbox_emails::updated_at.lt(before)),
        )
        .execute(conn)?;
        Ok(sent + dropped)
    })
}

/// Emails by state (every state present, zero included): the counts the outbox's
/// writes keep (migration 000036), with their changes not yet folded in.
pub fn counts(conn: &mut DbConnection) -> QueryResult<BTreeMap<String, i64>> {
    let mut counts: BTreeMap<String, i64> = STATES.iter().map(|s| ((*s).to_owned(), 0)).collect();
    counts.extend(db::outbox_counts::read(conn)?);
    Ok(counts)
}

/// Folds the changes PostgreSQL's triggers appended to the counts
/// (`db::outbox_counts::fold`); on SQLite the writes keep the counts themselves.
pub fn fold_counts(conn: &mut DbConnection) -> QueryResult<()> {
    db::outbox_counts::fold(conn)
}

#[cfg(test)]
mod tests {
    use super::delivery::*;
    use super::*;
    use crate::config::Settings;
    use crate::email::Transport;
    use chrono::Duration;
    use std::sync::atomic::AtomicBool;

    fn database() -> (tempfile::TempDir, crate::db::DbPool) {
        let dir = tempfile::tempdir().expect("dir");
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("t.db").display()),
            ..Default::default()
        };
        let pool = db::connect(&settings).expect("connect");
        db::migrate(&mut pool.get().expect("conn")).expect("migrate");
        (dir, pool)
    }

    fn email(key: &str) -> NewEmail {
        NewEmail {
            kind: Kind::Approved,
            dedup_key: key.into(),
            recipient: "ana@example.com".into(),
            recipient_name: Some("Ana\r\nBcc: x@example.com".into()),
            subject: "Approved: it".into(),
            text: "text".into(),
            html: "<p>html</p>".into(),
        }
    }

    #[test]
    fn an_email_is_queued_once_and_sent_once_with_its_row_in_the_message_id() {
        let (_dir, pool) = database();
        let mut conn = pool.get().expect("conn");
        let settings = Settings::default();
        assert!(enqueue(&mut conn, &email("k1"), db::now()).unwrap());
        assert!(
            !enqueue(&mut conn, &email("k1"), db::now()).unwrap(),
            "same key: no-op"
        );

        let transport = Transport::memory();
        let go = AtomicBool::new(false);
        let report = deliver(&mut conn, &transport, &settings, "a", &go).unwrap();
        assert_eq!(report.sent, 1);
        assert_eq!(
            deliver(&mut conn, &transport, &settings, "a", &go)
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
        let settings = Settings::default();
        let go = AtomicBool::new(false);
        deliver(&mut conn, &Transport::memory(), &settings, "b", &go).unwrap();
        check(&mut conn, "delivered");
        // Written by hand too: a row failed, one deleted, the sent purged.
        diesel::sql_query(
            "UPDATE outbox_emails SET state = 'failed' \
              WHERE id = (SELECT min(id) FROM outbox_emails WHERE state = 'pending')",
        )
        .execute(&mut conn)
        .unwrap();
        diesel::sql_query(
            "DELETE FROM outbox_emails WHERE id = (SELECT max(id) FROM outbox_emails)",
        )
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
        record(&mut conn, &stale, &Ok(()), &Settings::default(), later).unwrap();
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
            &Settings::default(),
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
        let report = deliver_pooled(&pool, &transport, &Settings::default(), "a", &go).unwrap();
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
}
