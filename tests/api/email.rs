//! Emails end to end: the reminder policy, the outbox and a real SMTP server
//! (aiosmtpd, `tests/support/smtp_server.py`). Received messages are parsed as MIME.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration as StdDuration, Instant};

use chrono::{Datelike, Duration, NaiveDate, Utc};
use coe::domain::{EmailAddress, Role, TokenName};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::eventually::{eventually, eventually_async, try_until, try_until_async};
use crate::helpers::{json, spawn_app_with, Replica, TestApp};

/// Where links in test emails point; the tests map it back to the app's address.
pub(crate) const PUBLIC_URL: &str = "https://coe.example.test";

/// The Python that has aiosmtpd (Debian's `python3-aiosmtpd`, installed by scripts/setup).
fn python() -> String {
    std::env::var("SMTP_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into())
}

/// A real SMTP server on a free port, writing what it receives into a Maildir.
/// Recipients starting with `bounce` get `550 5.1.1`.
pub(crate) struct SmtpServer {
    port: u16,
    _dir: tempfile::TempDir,
    maildir: PathBuf,
    child: Child,
}

/// One received message, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    /// The SMTP envelope's recipients.
    pub(crate) rcpt_to: Vec<String>,
    pub(crate) to: String,
    pub(crate) subject: String,
    pub(crate) text: String,
    pub(crate) html: String,
    pub(crate) message_id: String,
    has_bcc: bool,
    /// The header block as received.
    pub(crate) headers: String,
}

impl Received {
    /// The value of header `name` (folded lines joined), if the message has it.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        let unfolded = self
            .headers
            .replace("\r\n", "\n")
            .replace("\n ", " ")
            .replace("\n\t", " ");
        let prefix = format!("{}:", name.to_ascii_lowercase());
        unfolded.lines().find_map(|line| {
            line.to_ascii_lowercase()
                .starts_with(&prefix)
                .then(|| line[prefix.len()..].trim().to_owned())
        })
    }
}

impl SmtpServer {
    pub(crate) fn start() -> SmtpServer {
        Self::start_on(crate::helpers::free_port())
    }

    fn start_on(port: u16) -> SmtpServer {
        Self::start_with(port, &[])
    }

    /// With extra options of `tests/support/smtp_server.py` (`--starttls`, `--auth`,
    /// `--delay-ms`).
    pub(crate) fn start_with(port: u16, options: &[&str]) -> SmtpServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let maildir = dir.path().join("mail");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/smtp_server.py");
        let mut child = Command::new(python())
            .arg(script)
            .arg(port.to_string())
            .arg(&maildir)
            .args(options)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the SMTP test server (needs python3-aiosmtpd: run scripts/setup)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the SMTP server says it is ready");
        assert_eq!(line.trim(), "ready", "the SMTP test server did not start");
        SmtpServer {
            port,
            _dir: dir,
            maildir,
            child,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub(crate) fn messages(&self) -> Vec<Received> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.maildir.join("new")) else {
            return out;
        };
        // In the order they arrived.
        let mut paths: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|e| {
                let modified = e.metadata().and_then(|m| m.modified());
                (modified.unwrap_or(std::time::UNIX_EPOCH), e.path())
            })
            .collect();
        paths.sort();
        let paths = paths.into_iter().map(|(_, p)| p);
        for path in paths {
            let raw = std::fs::read(&path).expect("read a message");
            let m = mail_parser::MessageParser::default()
                .parse(&raw)
                .expect("a MIME message");
            out.push(Received {
                rcpt_to: m
                    .header_raw("X-RcptTo")
                    .unwrap_or_default()
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect(),
                to: m
                    .to()
                    .and_then(|a| a.first())
                    .and_then(|a| a.address())
                    .unwrap_or_default()
                    .to_owned(),
                subject: m.subject().unwrap_or_default().to_owned(),
                text: m.body_text(0).unwrap_or_default().into_owned(),
                html: m.body_html(0).unwrap_or_default().into_owned(),
                message_id: m.message_id().unwrap_or_default().to_owned(),
                has_bcc: m.header_raw("Bcc").is_some(),
                headers: {
                    let text = String::from_utf8_lossy(&raw);
                    text.split("\r\n\r\n")
                        .next()
                        .unwrap_or_default()
                        .split("\n\n")
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                },
            });
        }
        out
    }

    pub(crate) fn to(&self, recipient: &str) -> Vec<Received> {
        self.messages()
            .into_iter()
            .filter(|m| m.rcpt_to.iter().any(|r| r == recipient))
            .collect()
    }

    /// Waits (up to a minute: shared machines are slow) until `n` messages arrived.
    async fn wait_for(&self, n: usize) -> Vec<Received> {
        try_until_async(StdDuration::from_secs(60), || async {
            self.messages().len() >= n
        })
        .await;
        self.messages()
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The app, a member token acting for lead@example.com, and an admin token.
pub(crate) struct World {
    pub(crate) app: TestApp,
    pub(crate) lead: String,
    pub(crate) admin: String,
}

impl World {
    /// Waits until every email waiting is due again: the backoff after its last
    /// failed attempt is over (by the time the outbox names, up to 30 s).
    pub(crate) async fn until_every_email_is_due(&self) {
        use coe::db::schema::outbox_emails;
        eventually_async(
            StdDuration::from_secs(30),
            "every email waiting due again",
            || async {
                let latest: Option<chrono::NaiveDateTime> = outbox_emails::table
                    .filter(outbox_emails::state.eq("pending"))
                    .select(diesel::dsl::max(outbox_emails::next_attempt_at))
                    .first(&mut self.app.pool.get().expect("conn"))
                    .expect("the outbox");
                if latest.is_none_or(|at| at < Utc::now().naive_utc()) {
                    Ok(())
                } else {
                    Err(format!("emails due again by {latest:?}"))
                }
            },
        )
        .await;
    }

    pub(crate) async fn new() -> World {
        // An install reached from a network: people are named from its domain.
        let app = spawn_app_with(|s| {
            s.public_url = PUBLIC_URL.into();
            s.auth.allowed_domains = vec!["example.com".into()];
        })
        .await;
        let lead = {
            let mut conn = app.pool.get().expect("conn");
            let (_, secret) = coe::services::directory::tokens::create(
                &mut conn,
                &TokenName::parse("lead").expect("name"),
                Role::Member,
                Some(&EmailAddress::parse("lead@example.com").expect("email")),
            )
            .expect("token");
            secret.expose().to_owned()
        };
        let admin = app.admin_token();
        World { app, lead, admin }
    }

    pub(crate) fn database_url(&self) -> String {
        self.app.database_url().to_owned()
    }

    pub(crate) async fn person(&self, email: &str, name: &str, manager: Option<&str>) {
        let res = self
            .app
            .client
            .put(self.app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&self.admin)
            .json(&json!({"name": name, "manager_email": manager}))
            .send()
            .await
            .expect("sent");
        assert!(res.status().is_success(), "{}", res.status());
    }

    /// A COE owned by `owner`, with `reviewer` set.
    pub(crate) async fn coe(&self, title: &str, owner: &str, reviewer: Option<&str>) -> String {
        let res = self
            .app
            .post_json(
                "/api/v1/coes",
                Some(&self.lead),
                &json!({"title": title, "owner": owner}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let id = json(res).await["id"].as_str().expect("id").to_owned();
        if let Some(reviewer) = reviewer {
            use coe::db::schema::coes;
            let mut conn = self.app.pool.get().expect("conn");
            diesel::update(coes::table.find(&id))
                .set(coes::reviewer_email.eq(reviewer))
                .execute(&mut conn)
                .expect("set the reviewer");
        }
        id
    }

    /// An action owned by `owner`, then moved to `days_overdue` days past due
    /// (negative: due in that many days), as if it had been set long ago.
    pub(crate) async fn action(
        &self,
        coe: &str,
        title: &str,
        owner: &str,
        days_overdue: i64,
    ) -> String {
        let due = (Utc::now() + Duration::days(10)).date_naive();
        let res = self
            .app
            .post_json(
                &format!("/api/v1/coes/{coe}/actions"),
                Some(&self.lead),
                &json!({"title": title, "owner": owner, "due_date": due, "priority": "high", "kind": "prevent"}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let id = json(res).await["id"].as_str().expect("id").to_owned();
        self.set_due(&id, today() - Duration::days(days_overdue));
        self.forget_assignment_emails();
        id
    }

    /// Drops the queued "assigned to you" emails, so that a test about reminders
    /// counts reminders (`owners_and_reviewers_are_told_when_something_is_assigned_to_them`
    /// tests those emails).
    pub(crate) fn forget_assignment_emails(&self) {
        use coe::db::schema::outbox_emails;
        let mut conn = self.app.pool.get().expect("conn");
        diesel::delete(outbox_emails::table.filter(outbox_emails::kind.eq("action_assigned")))
            .execute(&mut conn)
            .expect("forget assignment emails");
    }

    pub(crate) fn set_due(&self, action: &str, due: NaiveDate) {
        use coe::db::schema::corrective_actions;
        let mut conn = self.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(action))
            .set(corrective_actions::due_date.eq(due))
            .execute(&mut conn)
            .expect("move the due date");
    }

    /// `coe sweep ARGS` against this world's database and `smtp`.
    pub(crate) fn sweep(&self, smtp: &str, args: &[&str]) -> Output {
        self.sweep_with(smtp, &[], args)
    }

    /// `coe sweep ARGS` with more environment variables.
    pub(crate) fn sweep_with(&self, smtp: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_coe"));
        let dir = tempfile::tempdir().expect("temp dir");
        cmd.arg("sweep")
            .args(args)
            .env_clear()
            .current_dir(dir.path())
            .env("COE_DATABASE_URL", self.database_url())
            .env("COE_SMTP_URL", smtp)
            .env("COE_PUBLIC_URL", PUBLIC_URL)
            .env("COE_REMINDERS_SEND_HOUR", "0")
            .env("COE_REMINDERS_RETRY_BASE_SECS", "1")
            .env("COE_LOG_LEVEL", "warn")
            .envs(env.iter().copied());
        let out = cmd.output().expect("coe sweep runs");
        assert!(
            out.status.success(),
            "coe sweep {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub(crate) async fn outbox(&self, query: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/outbox{query}"), &self.admin)
            .await
    }

    /// Asserts that the counts the outbox keeps (and `/api/v1/outbox` shows) equal a
    /// count of its emails, state by state.
    pub(crate) async fn assert_counts_kept(&self) {
        use coe::db::schema::outbox_emails;
        let shown = self.outbox("").await["counts"].clone();
        let counted: Vec<(String, i64)> = {
            let mut conn = self.app.pool.get().expect("conn");
            outbox_emails::table
                .group_by(outbox_emails::state)
                .select((outbox_emails::state, diesel::dsl::count_star()))
                .load(&mut conn)
                .expect("count")
        };
        for state in ["pending", "sending", "sent", "failed"] {
            let n = counted
                .iter()
                .find(|(s, _)| s == state)
                .map_or(0, |(_, n)| *n);
            assert_eq!(
                shown[state], n,
                "{state}: shown {shown}, counted {counted:?}"
            );
        }
    }
}

pub(crate) fn today() -> NaiveDate {
    Utc::now().date_naive()
}

/// An RFC 3339 time `days` after now.
pub(crate) fn days_from_now(days: i64) -> String {
    (Utc::now() + Duration::days(days)).to_rfc3339()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test]
async fn an_owner_gets_one_digest_a_day_listing_every_overdue_action() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", None).await;
    let coe = w
        .coe("Checkout returned 502", "lead@example.com", None)
        .await;
    let titles = [
        "Add a canary stage to deploys",
        "Alert on 502 rate above 1%",
        "Load-test the checkout path",
    ];
    let mut ids = Vec::new();
    for (i, title) in titles.iter().enumerate() {
        ids.push(w.action(&coe, title, "ana@example.com", 2 + i as i64).await);
    }
    // Somebody else's action, due in 2 days: their digest lists it as due soon.
    w.action(&coe, "Write the runbook", "bo@example.com", -2)
        .await;

    // A dry run says what would go, and queues nothing.
    let out = w.sweep(&smtp.url(), &["--dry-run"]);
    assert!(
        stdout(&out).contains("would queue 2 email(s)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("ana@example.com"));
    // Only the email telling the COE's owner it opened is queued.
    let page = w.outbox("").await;
    assert_eq!(
        page["emails"].as_array().expect("emails").len(),
        1,
        "{page}"
    );
    assert_eq!(page["emails"][0]["kind"], "coe_opened");

    let out = w.sweep(&smtp.url(), &[]);
    assert!(stdout(&out).contains("3 sent"), "{}", stdout(&out));
    let ana = smtp.to("ana@example.com");
    assert_eq!(ana.len(), 1, "one digest for Ana");
    let digest = &ana[0];
    assert_eq!(digest.to, "ana@example.com");
    assert_eq!(
        digest.subject,
        "[coe] 3 overdue corrective actions (Checkout returned 502)"
    );
    assert!(
        digest.text.starts_with("Hello Ana Lima,"),
        "{}",
        digest.text
    );
    for (title, id) in titles.iter().zip(&ids) {
        assert!(digest.text.contains(title), "text lists {title}");
        assert!(digest.html.contains(title), "html lists {title}");
        let link = format!("{PUBLIC_URL}/actions/{id}");
        assert!(digest.text.contains(&link), "text links {id}");
        assert!(digest.html.contains(&format!("href=\"{link}\"")));
        // The link opens the action's page: a person not signed in is sent through
        // sign-in, which comes back to it (once mapped from the public URL to this
        // test's address).
        let res = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client")
            .get(w.app.url(&link.replace(PUBLIC_URL, "")))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 303, "{link}");
        assert_eq!(
            res.headers()["location"],
            format!("/sign-in?next=%2Factions%2F{id}").as_str()
        );
    }
    assert!(digest.text.contains("4 days overdue"), "{}", digest.text);
    assert!(
        digest.message_id.contains(".overdue_digest@"),
        "{}",
        digest.message_id
    );
    let bo = smtp.to("bo@example.com");
    assert_eq!(bo.len(), 1);
    assert_eq!(
        bo[0].subject,
        "[coe] 1 corrective action due soon (Checkout returned 502)"
    );
    // The COE owner is told the COE opened (lead@example.com made it: it is theirs).
    assert_eq!(smtp.to("lead@example.com").len(), 1);

    // A second sweep the same day sends nothing.
    let out = w.sweep(&smtp.url(), &[]);
    assert!(
        stdout(&out).contains("queued 0 email(s)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(smtp.to("ana@example.com").len(), 1);

    // The next day, again: one more digest.
    let tomorrow = days_from_now(1);
    w.sweep(&smtp.url(), &["--at", &tomorrow]);
    let ana = smtp.to("ana@example.com");
    assert_eq!(ana.len(), 2);
    assert!(
        ana.iter().any(|m| m.text.contains("5 days overdue")),
        "{ana:?}"
    );
    assert_ne!(ana[0].message_id, ana[1].message_id);

    let page = w.outbox("?state=sent").await;
    assert_eq!(page["counts"]["sent"], 5, "{page}");
    assert_eq!(page["emails"][0]["state"], "sent");
}

/// `coe sweep --at` a later day (not a dry run) sends that day's emails early; the
/// real sweeps of the days before it still owe the owner their digests and the
/// manager their escalation: a sweep at T considers only the history up to T.
#[tokio::test]
async fn a_sweep_dated_ahead_does_not_silence_the_days_before_it() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    let coe = w.coe("Search was down", "lead@example.com", None).await;
    w.action(&coe, "Shard the index", "ana@example.com", 7)
        .await;
    let digests = || {
        smtp.to("ana@example.com")
            .into_iter()
            .filter(|m| m.subject.contains("overdue"))
            .count()
    };
    let escalations = || smtp.to("carla@example.com").len();

    w.sweep(&smtp.url(), &["--at", &days_from_now(8)]);
    assert_eq!(digests(), 1, "the day 8 days ahead: a digest");
    assert_eq!(escalations(), 1, "and an escalation");

    // Today, then the days after: each owes its digest, as if nothing had run ahead.
    w.sweep(&smtp.url(), &[]);
    assert_eq!(digests(), 2, "today still gets its digest");
    assert_eq!(escalations(), 2, "and the manager today's escalation");
    for day in 1..=7 {
        w.sweep(&smtp.url(), &["--at", &days_from_now(day)]);
        assert_eq!(digests(), 2 + day as usize, "day {day}: one digest more");
    }
    // Weekly from today: the escalation of day 7 is due again.
    assert_eq!(escalations(), 3);
    // The day that ran ahead sent its emails already: nothing twice.
    w.sweep(&smtp.url(), &["--at", &days_from_now(8)]);
    assert_eq!(digests(), 9);
    assert_eq!(escalations(), 3);
}

#[tokio::test]
async fn escalation_reaches_the_manager_at_day_seven_and_not_before() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    let coe = w
        .coe(
            "Search was down",
            "lead@example.com",
            Some("rev@example.com"),
        )
        .await;
    w.action(&coe, "Shard the index", "ana@example.com", 6)
        .await;
    // Owned by someone with no manager in the directory.
    w.action(&coe, "Add a read replica", "nomgr@example.com", 6)
        .await;

    w.sweep(&smtp.url(), &[]);
    assert!(
        smtp.to("carla@example.com").is_empty(),
        "day 6: no escalation"
    );
    assert!(smtp.to("rev@example.com").is_empty());

    w.sweep(&smtp.url(), &["--at", &days_from_now(1)]);
    let carla = smtp.to("carla@example.com");
    assert_eq!(carla.len(), 1, "day 7: the manager is told");
    assert!(carla[0]
        .subject
        .starts_with("[coe] Escalation: 1 corrective action overdue by 7 days"));
    assert!(carla[0].text.contains("Shard the index"));
    assert!(carla[0].text.contains("Ana Lima <ana@example.com>"));
    assert!(carla[0].text.contains("Owned by people who report to you"));
    assert!(!carla[0].text.contains("no manager is known"));
    assert!(!carla[0].text.contains("Add a read replica"));
    // No manager known: the COE's owner and reviewer.
    for person in ["lead@example.com", "rev@example.com"] {
        let escalations: Vec<Received> = smtp
            .to(person)
            .into_iter()
            .filter(|m| m.subject.starts_with("[coe] Escalation"))
            .collect();
        assert_eq!(escalations.len(), 1, "{person}");
        assert!(escalations[0].text.contains("Add a read replica"));
        assert!(!escalations[0].text.contains("Shard the index"));
        assert!(escalations[0].text.contains("no manager is known"));
    }

    // Nothing new crossed: the next day adds no escalation (a week later does).
    let before = smtp.to("carla@example.com").len();
    w.sweep(&smtp.url(), &["--at", &days_from_now(2)]);
    assert_eq!(smtp.to("carla@example.com").len(), before);
    w.sweep(&smtp.url(), &["--at", &days_from_now(8)]);
    assert_eq!(smtp.to("carla@example.com").len(), before + 1);
}

/// A simulated month of daily sweeps: two reports of one manager cross the 7-day line
/// on different days of one week. Each is escalated on the day it crosses (newly
/// crossed listed first), then the manager hears weekly while nothing new crosses.
#[tokio::test]
async fn every_action_is_escalated_on_the_day_it_crosses_and_then_weekly() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    w.person("bo@example.com", "Bo Chen", Some("carla@example.com"))
        .await;
    let coe = w
        .coe("Checkout 502s", "lead@example.com", Some("rev@example.com"))
        .await;
    // Due in 2 and in 4 days: 7 days overdue on day 9 and on day 11.
    w.action(&coe, "Canary the payments deploy", "ana@example.com", -2)
        .await;
    w.action(&coe, "Alert on 502 rate", "bo@example.com", -4)
        .await;

    let mut heard = Vec::new();
    for day in 0..=30 {
        let before = smtp.to("carla@example.com").len();
        w.sweep(&smtp.url(), &["--at", &days_from_now(day)]);
        let mails = smtp.to("carla@example.com");
        assert!(
            mails.len() <= before + 1,
            "day {day}: at most one email a day"
        );
        if mails.len() > before {
            let mail = mails.last().expect("the new email").clone();
            assert!(
                mail.subject.starts_with("[coe] Escalation"),
                "{}",
                mail.subject
            );
            heard.push((day, mail.text));
        }
    }
    let days: Vec<i64> = heard.iter().map(|(d, _)| *d).collect();
    eprintln!("carla@example.com heard on days {days:?}");
    assert_eq!(
        days,
        [9, 11, 18, 25],
        "crossings on days 9 and 11, then weekly"
    );
    let (_, first) = &heard[0];
    assert!(first.contains("NEW: Canary the payments deploy"), "{first}");
    assert!(!first.contains("Alert on 502 rate"), "{first}");
    let (_, second) = &heard[1];
    let bo = second
        .find("NEW: Alert on 502 rate")
        .expect("Bo's action is new");
    let ana = second
        .find("Canary the payments deploy")
        .expect("Ana's again");
    assert!(bo < ana, "the newly crossed action comes first:\n{second}");
    assert!(
        !second.contains("NEW: Canary"),
        "Ana's was escalated before:\n{second}"
    );
    let (_, weekly) = &heard[2];
    assert!(
        !weekly.contains("NEW:"),
        "nothing new in the weekly reminder:\n{weekly}"
    );
    assert!(weekly.contains("Alert on 502 rate") && weekly.contains("Canary the payments deploy"));
}

/// People hear when something becomes theirs: an action assigned or handed over, a
/// COE whose owner or reviewer is set after it opened; not when they did it themselves.
#[tokio::test]
async fn owners_and_reviewers_are_told_when_something_is_assigned_to_them() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    let coe = w.coe("Checkout 502s", "lead@example.com", None).await;
    let due = (Utc::now() + Duration::days(20)).date_naive().to_string();
    let res = w
        .app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(&w.lead),
            &json!({"title": "Canary the payments deploy", "owner": "ana@example.com",
                    "due_date": due, "priority": "high", "kind": "prevent",
                    "success_criteria": "A failing canary stops the deploy"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let action = json(res).await["id"].as_str().expect("id").to_owned();
    // lead@ owns the action they assign to themselves: no email for that one.
    let res = w
        .app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(&w.lead),
            &json!({"title": "Own work", "owner": "lead@example.com",
                    "due_date": due, "priority": "low", "kind": "process"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let res = w
        .app
        .client
        .patch(w.app.url(&format!("/api/v1/actions/{action}")))
        .bearer_auth(&w.lead)
        .json(&json!({"owner": "bo@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}"), &w.lead)
        .await;
    let res = w
        .app
        .client
        .patch(w.app.url(&format!("/api/v1/coes/{coe}")))
        .bearer_auth(&w.lead)
        .header("if-match", format!("\"{}\"", doc["version"]))
        .json(&json!({"reviewer": "rev@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    w.sweep(&smtp.url(), &[]);

    let ana = smtp.to("ana@example.com");
    assert_eq!(ana.len(), 1, "{ana:?}");
    assert_eq!(
        ana[0].subject,
        "[coe] Corrective action assigned to you: Canary the payments deploy (Checkout 502s)"
    );
    assert!(
        ana[0].text.contains(&format!("Due {due}")),
        "{}",
        ana[0].text
    );
    assert!(
        ana[0].text.contains("COE: Checkout 502s"),
        "{}",
        ana[0].text
    );
    assert!(ana[0].text.contains("A failing canary stops the deploy"));
    assert!(ana[0].text.contains(&format!("/actions/{action}")));
    let bo = smtp.to("bo@example.com");
    assert_eq!(bo.len(), 1, "handed over: the new owner hears");
    assert!(bo[0].subject.contains("assigned to you"));
    let rev = smtp.to("rev@example.com");
    assert_eq!(rev.len(), 1);
    assert_eq!(rev[0].subject, "[coe] COE to review: Checkout 502s");
    assert!(
        rev[0].text.contains("made you the reviewer"),
        "{}",
        rev[0].text
    );
    let lead: Vec<Received> = smtp
        .to("lead@example.com")
        .into_iter()
        .filter(|m| m.subject.contains("assigned"))
        .collect();
    assert!(
        lead.is_empty(),
        "nobody is told of what they did themselves"
    );
}

#[tokio::test]
async fn emails_wait_while_the_smtp_server_is_down_and_go_out_once_when_it_is_back() {
    let w = World::new().await;
    let port = crate::helpers::free_port();
    let url = format!("smtp://127.0.0.1:{port}");
    let coe = w.coe("Queue backlog", "lead@example.com", None).await;
    for (owner, days) in [
        ("a@example.com", 1),
        ("b@example.com", 3),
        ("c@example.com", 8),
    ] {
        w.action(&coe, "Cap the queue", owner, days).await;
    }

    let out = w.sweep(&url, &[]);
    assert!(stdout(&out).contains("0 sent"), "{}", stdout(&out));
    let page = w.outbox("?state=pending").await;
    let pending = page["counts"]["pending"].as_i64().expect("pending");
    assert!(
        pending >= 5,
        "digests, escalations and the COE-opened email wait: {page}"
    );
    assert_eq!(page["counts"]["failed"], 0);
    let errors: Vec<&str> = page["emails"]
        .as_array()
        .expect("emails")
        .iter()
        .filter_map(|e| e["last_error"].as_str())
        .collect();
    assert_eq!(errors.len(), 1, "one attempt, then the pass stops: {page}");
    assert!(
        errors[0].to_lowercase().contains("connect"),
        "the reason is kept: {page}"
    );

    // Still down: more sweeps and passes lose nothing and add nothing.
    w.until_every_email_is_due().await;
    w.sweep(&url, &[]);
    assert_eq!(w.outbox("").await["counts"]["pending"], pending);

    // Back up: each email is delivered exactly once.
    let smtp = SmtpServer::start_on(port);
    w.until_every_email_is_due().await;
    let out = w.sweep(&url, &[]);
    assert!(
        stdout(&out).contains(&format!("{pending} sent")),
        "{}",
        stdout(&out)
    );
    w.sweep(&url, &[]);
    let messages = smtp.messages();
    assert_eq!(messages.len() as i64, pending);
    let mut ids: Vec<&str> = messages.iter().map(|m| m.message_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as i64, pending, "no duplicates");
    let counts = &w.outbox("").await["counts"];
    assert_eq!(counts["sent"], pending);
    assert_eq!(counts["pending"], 0);
}

#[tokio::test]
async fn a_permanent_failure_is_marked_failed_with_the_answer_and_shown() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    let coe = w.coe("DNS outage", "lead@example.com", None).await;
    w.action(&coe, "Lower the TTL", "bounce@example.com", 2)
        .await;

    let out = w.sweep(&smtp.url(), &[]);
    assert!(stdout(&out).contains("1 failed"), "{}", stdout(&out));
    let page = w.outbox("?state=failed").await;
    assert_eq!(
        page["emails"].as_array().expect("emails").len(),
        1,
        "{page}"
    );
    let failed = &page["emails"][0];
    assert_eq!(failed["recipient"], "bounce@example.com");
    assert_eq!(failed["kind"], "overdue_digest");
    assert_eq!(failed["attempts"], 1);
    let error = failed["last_error"].as_str().expect("last_error");
    assert!(
        error.contains("550") && error.contains("mailbox unavailable"),
        "{error}"
    );

    // The one view over the queue counts it, beside chat notices and tracker jobs.
    let queue = w.app.get_json("/api/v1/queue", &w.admin).await;
    let names: Vec<&str> = queue
        .as_array()
        .expect("a list")
        .iter()
        .map(|q| q["queue"].as_str().expect("its name"))
        .collect();
    assert_eq!(names, ["email", "chat", "tracker"], "{queue}");
    assert_eq!(queue[0]["failed"], 1, "{queue}");
    assert_eq!(queue[1]["failed"], 0, "{queue}");
    assert_eq!(queue[2]["failed"], 0, "{queue}");

    // Shown in the stats and in /metrics.
    let stats = w.app.get_json("/api/v1/stats", &w.lead).await;
    assert_eq!(stats["emails_by_state"]["failed"], 1, "{stats}");
    w.assert_counts_kept().await;
    let metrics = w
        .app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("coe_emails{state=\"failed\"} 1"),
        "{metrics}"
    );

    // Another sweep does not resend it.
    w.sweep(&smtp.url(), &[]);
    assert_eq!(
        w.outbox("?state=failed").await["emails"]
            .as_array()
            .expect("e")
            .len(),
        1
    );

    // A retry queues it again; it fails again, with the answer kept.
    let id = failed["id"].as_str().expect("id");
    let res = w
        .app
        .post_json(
            &format!("/api/v1/outbox/{id}/retry"),
            Some(&w.admin),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["state"], "pending");
    w.sweep(&smtp.url(), &[]);
    let again = w.outbox("?state=failed").await;
    assert_eq!(again["emails"][0]["attempts"], 1);

    // A sent email cannot be retried; unknown ids are 404; members may not look.
    let sent = w.outbox("?state=sent").await;
    let sent_id = sent["emails"][0]["id"].as_str().expect("a sent email");
    let res = w
        .app
        .post_json(
            &format!("/api/v1/outbox/{sent_id}/retry"),
            Some(&w.admin),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 409);
    let res = w
        .app
        .post_json("/api/v1/outbox/nope/retry", Some(&w.admin), &json!({}))
        .await;
    assert_eq!(res.status(), 404);
    assert_eq!(json(res).await["error"]["code"], "not_found");
    let res = w.app.get("/api/v1/outbox", Some(&w.lead)).await;
    assert_eq!(res.status(), 403);
    let res = w.app.get("/api/v1/queue", Some(&w.lead)).await;
    assert_eq!(res.status(), 403);
    let res = w.app.get("/api/v1/queue", None).await;
    assert_eq!(res.status(), 401);
    let res = w.app.get("/api/v1/outbox?state=lost", Some(&w.admin)).await;
    assert_eq!(res.status(), 422);
    assert_eq!(json(res).await["error"]["fields"][0]["field"], "state");
    let res = w.app.get("/api/v1/outbox?limit=0", Some(&w.admin)).await;
    assert_eq!(res.status(), 422);
}

#[tokio::test]
async fn hostile_titles_stay_inside_their_email() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    // A line break that would start a header is refused at the door…
    let res = w
        .app
        .post_json(
            "/api/v1/coes",
            Some(&w.lead),
            &json!({"title": "Disk\r\nBcc: evil@example.com", "owner": "lead@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 422);
    // …and what is left of a hostile title stays inside its email.
    let title = format!(
        "<script>alert(1)</script> Bcc: evil@example.com {}",
        "long ".repeat(80)
    );
    let res = w
        .app
        .post_json(
            "/api/v1/coes",
            Some(&w.lead),
            &json!({"title": title, "owner": "lead@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let coe = json(res).await["id"].as_str().expect("id").to_owned();
    w.action(&coe, &title, "ana@example.com", 1).await;
    w.sweep(&smtp.url(), &[]);
    let messages = smtp.wait_for(2).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    for m in &messages {
        assert!(!m.has_bcc, "no header was injected");
        assert!(m.rcpt_to.iter().all(|r| !r.contains("evil")));
        assert!(!m.subject.contains(['\r', '\n']));
        assert!(m.subject.chars().count() <= 200, "{}", m.subject.len());
        assert!(!m.html.contains("<script>"), "HTML is escaped");
        assert!(m.html.contains("&lt;script&gt;"));
        assert!(
            m.text.contains("<script>alert(1)</script>"),
            "text is not escaped"
        );
    }
    let opened = smtp.to("lead@example.com");
    assert!(opened[0]
        .subject
        .starts_with("[coe] COE opened (sev3): <script>alert(1)</script> Bcc:"));
}

#[tokio::test]
async fn review_steps_and_late_writeups_email_the_right_person() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("rev@example.com", "Rita Reviewer", None).await;
    let coe = w
        .coe(
            "Login failures",
            "lead@example.com",
            Some("rev@example.com"),
        )
        .await;
    // The incident resolved 8 days ago; the writeup was due after 7.
    {
        use coe::db::schema::coes;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&coe))
            .set(coes::resolved_at.eq((Utc::now() - Duration::days(8)).naive_utc()))
            .execute(&mut conn)
            .expect("resolve");
    }
    w.sweep(&smtp.url(), &[]);
    let late: Vec<Received> = smtp
        .to("lead@example.com")
        .into_iter()
        .filter(|m| m.subject.contains("past its deadline"))
        .collect();
    assert_eq!(late.len(), 1);
    assert!(late[0].text.contains("Login failures"));
    w.sweep(&smtp.url(), &[]);
    assert_eq!(
        smtp.to("lead@example.com")
            .iter()
            .filter(|m| m.subject.contains("past its deadline"))
            .count(),
        1,
        "daily, not every sweep"
    );

    // Request changes as the reviewer (with a token of her own): the owner hears.
    let rita = {
        let mut conn = w.app.pool.get().expect("conn");
        let (_, secret) = coe::services::directory::tokens::create(
            &mut conn,
            &TokenName::parse("rita").expect("name"),
            coe::domain::Role::Member,
            Some(&EmailAddress::parse("rev@example.com").expect("email")),
        )
        .expect("token");
        secret.expose().to_owned()
    };
    {
        use coe::db::schema::coes;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&coe))
            .set(coes::state.eq("in_review"))
            .execute(&mut conn)
            .expect("in review");
    }
    let res = w
        .app
        .post_json(
            &format!("/api/v1/coes/{coe}/request-changes"),
            Some(&rita),
            &json!({"comment": "The 5 whys stop at a person."}),
        )
        .await;
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    w.sweep(&smtp.url(), &[]);
    let changes: Vec<Received> = smtp
        .to("lead@example.com")
        .into_iter()
        .filter(|m| m.subject.starts_with("[coe] Changes requested"))
        .collect();
    assert_eq!(changes.len(), 1);
    assert!(changes[0].text.contains("The 5 whys stop at a person."));
    assert!(changes[0]
        .text
        .contains(&format!("{PUBLIC_URL}/coes/{coe}")));
}

#[tokio::test]
async fn the_weekly_inspection_digest_goes_to_its_subscribers_on_its_day() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    let coe = w.coe("Billing delay", "lead@example.com", None).await;
    w.action(&coe, "Retry failed invoices", "ana@example.com", 3)
        .await;
    // The next Monday at 10:00 UTC, and the Tuesday after it.
    let mut monday = today() + Duration::days(1);
    while monday.weekday() != chrono::Weekday::Mon {
        monday += Duration::days(1);
    }
    let at = |d: NaiveDate| format!("{d}T10:00:00Z");
    let env_sweep = |at: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_coe"))
            .args(["sweep", "--at", at])
            .env_clear()
            .env("COE_DATABASE_URL", w.database_url())
            .env("COE_SMTP_URL", smtp.url())
            .env("COE_PUBLIC_URL", PUBLIC_URL)
            .env(
                "COE_DIGEST_RECIPIENTS",
                r#"["leaders@example.com", "vp@example.com"]"#,
            )
            .env("COE_LOG_LEVEL", "warn")
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    env_sweep(&at(monday + Duration::days(1)));
    assert!(
        smtp.to("leaders@example.com").is_empty(),
        "not on a Tuesday"
    );
    env_sweep(&at(monday + Duration::days(7)));
    for r in ["leaders@example.com", "vp@example.com"] {
        let got = smtp.to(r);
        assert_eq!(got.len(), 1, "{r}");
        assert!(
            got[0].subject.starts_with("[coe] COE inspection "),
            "{}",
            got[0].subject
        );
        assert!(got[0].text.contains("1 open, 1 overdue"), "{}", got[0].text);
        assert!(got[0].text.contains("Retry failed invoices"));
    }
}

#[tokio::test]
async fn three_replicas_sweeping_at_once_send_each_email_once() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    let coe = w
        .coe(
            "Cache stampede",
            "lead@example.com",
            Some("rev@example.com"),
        )
        .await;
    let owners: Vec<String> = (0..12).map(|i| format!("owner{i}@example.com")).collect();
    for (i, owner) in owners.iter().enumerate() {
        w.action(&coe, "Add request coalescing", owner, 1 + (i as i64 % 9))
            .await;
    }
    // The COE-opened email, 12 digests, and escalations (days 7, 8, 9) to the COE's
    // owner and reviewer (the owners have no manager).
    let expected = 1 + 12 + 2;
    let smtp_url = smtp.url();
    let replicas: Vec<Replica> = (0..3)
        .map(|_| {
            Replica::start(
                &w.database_url(),
                &[
                    ("COE_SMTP_URL", &smtp_url),
                    ("COE_PUBLIC_URL", PUBLIC_URL),
                    ("COE_REMINDERS_SEND_HOUR", "0"),
                    ("COE_REMINDERS_INTERVAL_SECS", "1"),
                    ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "1"),
                ],
            )
        })
        .collect();
    let messages = smtp.wait_for(expected).await;
    assert_eq!(messages.len(), expected, "{messages:?}");
    // Each replica sweeps and delivers twice more: nothing more goes out.
    let runs = |replica: &Replica| -> (i64, i64) {
        let metrics = crate::cli::http_get(replica.served.port, "/metrics", None);
        let count = |job: &str| {
            metrics
                .lines()
                .find_map(|l| {
                    l.strip_prefix(&format!(
                        "coe_job_runs_total{{job=\"{job}\",outcome=\"ok\"}} "
                    ))
                })
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        (count("sweep"), count("delivery"))
    };
    let before: Vec<(i64, i64)> = replicas.iter().map(runs).collect();
    eventually_async(
        StdDuration::from_secs(60),
        "the replicas sweep on",
        || async {
            replicas
                .iter()
                .zip(&before)
                .all(|(r, (sweeps, deliveries))| {
                    let (s, d) = runs(r);
                    s >= sweeps + 2 && d >= deliveries + 2
                })
        },
    )
    .await;
    drop(replicas);
    let messages = smtp.messages();
    assert_eq!(messages.len(), expected);
    let mut ids: Vec<&str> = messages.iter().map(|m| m.message_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), expected, "each email once");
    for owner in &owners {
        assert_eq!(smtp.to(owner).len(), 1, "{owner}");
    }
    assert_eq!(smtp.to("rev@example.com").len(), 1);
    assert_eq!(smtp.to("lead@example.com").len(), 2);
    assert_eq!(w.outbox("").await["counts"]["sent"], expected as i64);
    w.assert_counts_kept().await;
}

/// A private certificate authority and a certificate it signed for 127.0.0.1.
struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    fn new() -> TestCa {
        let dir = tempfile::tempdir().expect("dir");
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("openssl runs");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=coe test CA",
        ]);
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        std::fs::write(
            dir.path().join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .expect("ext");
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        TestCa { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

#[tokio::test]
async fn starttls_with_a_login_reaches_a_relay_signed_by_a_private_ca() {
    let w = World::new().await;
    let ca = TestCa::new();
    let port = crate::helpers::free_port();
    let smtp = SmtpServer::start_with(
        port,
        &[
            "--starttls",
            &ca.path("server.pem"),
            &ca.path("server.key"),
            "--auth",
            "coe:s3cret",
        ],
    );
    let coe = w
        .coe("TLS handshake failures", "lead@example.com", None)
        .await;
    w.action(
        &coe,
        "Rotate certificates automatically",
        "ana@example.com",
        1,
    )
    .await;
    let ca_file = ca.path("ca.pem");
    let trusted = [("COE_SMTP_CA_FILE", ca_file.as_str())];

    let url = format!("smtp://coe:s3cret@127.0.0.1:{port}?tls=required");
    let out = w.sweep_with(&url, &trusted, &[]);
    assert!(stdout(&out).contains("2 sent"), "{}", stdout(&out));
    let ana = smtp.to("ana@example.com");
    assert_eq!(ana.len(), 1);
    assert!(ana[0].text.contains("Rotate certificates automatically"));

    // A wrong password is a permanent failure with the server's answer.
    w.action(
        &coe,
        "Alert before certificates expire",
        "bo@example.com",
        1,
    )
    .await;
    let wrong = format!("smtp://coe:nope@127.0.0.1:{port}?tls=required");
    let out = w.sweep_with(&wrong, &trusted, &[]);
    assert!(stdout(&out).contains("1 failed"), "{}", stdout(&out));
    let failed = w.outbox("?state=failed").await;
    let error = failed["emails"][0]["last_error"].as_str().expect("error");
    assert!(error.contains("535"), "{error}");

    // Without the private CA the relay's certificate is not trusted: nothing is sent,
    // and the email waits (the operator may fix the setting), with the reason kept.
    w.action(&coe, "Pin the relay's CA", "carl@example.com", 1)
        .await;
    let out = w.sweep_with(&url, &[], &[]);
    assert!(
        stdout(&out).contains("0 sent, 1 deferred"),
        "{}",
        stdout(&out)
    );
    let pending = w.outbox("?state=pending").await;
    let error = pending["emails"][0]["last_error"].as_str().expect("error");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    assert!(smtp.to("carl@example.com").is_empty());
}

/// Queueing an email wakes the delivery worker: on an idle server whose passes are a
/// minute apart, a sign-in link reaches the SMTP server within seconds, not at the next
/// pass.
#[test]
fn a_sign_in_link_leaves_at_once() {
    let smtp = SmtpServer::start();
    let db = crate::helpers::TestDatabase::new();
    let served = crate::cli::serve(
        &db.url,
        &[
            ("COE_SMTP_URL", smtp.url().as_str()),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "60"),
            ("COE_REMINDERS_INTERVAL_SECS", "3600"),
        ],
    );
    let admin = served.admin_token();
    // With an SMTP server, only the directory signs in.
    let body = r#"{"name":"Ana Lima"}"#;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    use std::io::{Read, Write};
    write!(
        stream,
        "PUT /api/v1/people/ana@example.com HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {admin}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // Let the start-up delivery pass go by: the next is a minute away.
    eventually(StdDuration::from_secs(60), "the start-up sweep ran", || {
        crate::cli::http_get(served.port, "/metrics", None)
            .contains("coe_job_runs_total{job=\"delivery\",outcome=\"ok\"} ")
    });

    let form = "email=ana%40example.com&next=%2F";
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", served.port)).expect("connect");
    write!(
        stream,
        "POST /sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let asked = Instant::now();
    try_until(StdDuration::from_secs(20), || {
        !smtp.to("ana@example.com").is_empty()
    });
    let took = asked.elapsed();
    let received = smtp.to("ana@example.com");
    assert_eq!(received.len(), 1, "the link arrived");
    assert!(received[0].text.contains("/sign-in/confirm?token="));
    // Well before the next pass (60 s): the worker was woken.
    assert!(took < StdDuration::from_secs(20), "took {took:?}");
}

/// Drafts merged into another COE of their outage are silent: a simulated week of
/// daily sweeps past the writeup deadline reminds only the COE kept, whose owner
/// hears once a day; the merged drafts' owners hear nothing after the merge notice
/// (and the "COE opened" email before it).
#[tokio::test]
async fn merged_drafts_are_silent_through_a_week_of_sweeps() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    for (email, name) in [
        ("ana@example.com", "Ana Lima"),
        ("bo@example.com", "Bo Chen"),
        ("cy@example.com", "Cy Diaz"),
    ] {
        w.person(email, name, Some("carla@example.com")).await;
    }
    let kept = w
        .coe("Payments database failed over", "ana@example.com", None)
        .await;
    let checkout = w.coe("Checkout failing", "bo@example.com", None).await;
    let gateway = w.coe("Gateway 5xx", "cy@example.com", None).await;
    // All resolved 8 days ago: each past its 7-day writeup deadline.
    {
        use coe::db::schema::coes;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table)
            .set(coes::resolved_at.eq((Utc::now() - Duration::days(8)).naive_utc()))
            .execute(&mut conn)
            .expect("resolve");
    }
    let res = w
        .app
        .post_json(
            &format!("/api/v1/coes/{kept}/merge"),
            Some(&w.admin),
            &json!({"coe_ids": [checkout, gateway]}),
        )
        .await;
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    // The merge took the COE's times from its incidents and timeline (it has none):
    // it is late again, as the drafts merged into it still are.
    {
        use coe::db::schema::coes;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&kept))
            .set(coes::resolved_at.eq((Utc::now() - Duration::days(8)).naive_utc()))
            .execute(&mut conn)
            .expect("resolve");
    }
    w.sweep(&smtp.url(), &[]);
    for owner in ["bo@example.com", "cy@example.com"] {
        let subjects: Vec<String> = smtp.to(owner).into_iter().map(|m| m.subject).collect();
        assert_eq!(subjects.len(), 2, "{owner}: {subjects:?}");
        assert!(subjects[0].contains("COE opened"), "{subjects:?}");
        assert!(subjects[1].contains("One outage, one COE"), "{subjects:?}");
    }
    for day in 1..=7 {
        w.sweep(&smtp.url(), &["--at", &days_from_now(day)]);
    }
    for owner in ["bo@example.com", "cy@example.com"] {
        assert_eq!(smtp.to(owner).len(), 2, "{owner} heard again");
    }
    let late: Vec<Received> = smtp
        .to("ana@example.com")
        .into_iter()
        .filter(|m| m.subject.contains("past its deadline"))
        .collect();
    assert_eq!(late.len(), 8, "once a day, today and 7 more days");
    assert!(
        late.iter()
            .all(|m| !m.text.contains("Checkout failing") && !m.text.contains("Gateway 5xx")),
        "{}",
        late[0].text
    );
}

/// Issue 61, item 4: an admin opened maria's sign-in email on `/admin/outbox/{id}`,
/// read her link in full, redeemed it and approved a COE as maria. The outbox shows
/// that a link was sent, never the link, nor a digest's unsubscribe token: not on the
/// pages, not through the API. The email the SMTP server receives carries the working
/// link, and once it is sent the outbox keeps no raw secret.
#[tokio::test]
async fn an_admin_cannot_sign_in_as_anyone_through_the_outbox() {
    use crate::pages::{ask_for_link, browser, emailed_link, get_page, sign_in, token_of};
    use coe::db::schema::outbox_emails;
    use reqwest::header::{COOKIE, SET_COOKIE};

    let w = World::new().await;
    w.person("maria@example.com", "Maria Lopez", None).await;
    w.person("dana@example.com", "Dana Okafor", None).await;
    let res = w
        .app
        .client
        .put(w.app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&w.admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let dana = sign_in(&w.app, "dana@example.com").await;

    // Maria's digest (an overdue action) and her sign-in link wait in the outbox: the
    // SMTP server is down.
    let coe = w.coe("Checkout failed", "lead@example.com", None).await;
    w.action(&coe, "Add a circuit breaker", "maria@example.com", 3)
        .await;
    let down = format!("smtp://127.0.0.1:{}", crate::helpers::free_port());
    w.sweep(&down, &[]);
    assert_eq!(
        ask_for_link(&w.app, "maria@example.com").await.status(),
        200
    );
    // What the attacker is after (read here from the database, as only coe may).
    let link = emailed_link(&w.app, "maria@example.com").expect("maria's link");
    let token = token_of(&link);
    let rows = |kind: &str| -> (String, Option<String>, Option<String>) {
        outbox_emails::table
            .filter(outbox_emails::kind.eq(kind))
            .filter(outbox_emails::recipient.eq("maria@example.com"))
            .select((
                outbox_emails::id,
                outbox_emails::private_link,
                outbox_emails::unsubscribe_token,
            ))
            .first(&mut w.app.pool.get().expect("conn"))
            .expect("maria's email")
    };
    let (sign_in_email, kept, _) = rows("sign_in");
    assert_eq!(kept.as_deref(), Some(link.as_str()), "kept apart, to send");
    let (digest, _, unsubscribe) = rows("overdue_digest");
    let unsubscribe = unsubscribe.expect("the digest's unsubscribe token, to send");

    // The attack: the admin reads everything the outbox shows.
    let mut seen = Vec::new();
    for path in [
        "/admin/outbox".to_owned(),
        "/admin/outbox?state=pending".to_owned(),
        format!("/admin/outbox/{sign_in_email}"),
        format!("/admin/outbox/{digest}"),
    ] {
        let res = get_page(&w.app, &path, Some(&dana)).await;
        assert_eq!(res.status(), 200, "{path}");
        seen.push((path, res.text().await.expect("html")));
    }
    for query in [
        "",
        "?recipient=maria@example.com",
        "?state=pending&limit=500",
    ] {
        let res = w
            .app
            .get(&format!("/api/v1/outbox{query}"), Some(&w.admin))
            .await;
        assert_eq!(res.status(), 200, "{query}");
        seen.push((query.to_owned(), res.text().await.expect("json")));
    }
    for (what, body) in &seen {
        for secret in [
            token.as_str(),
            unsubscribe.as_str(),
            "/sign-in/confirm?token=",
        ] {
            assert!(!body.contains(secret), "{what} shows {secret}: {body}");
        }
    }
    let page = &seen[2].1;
    assert!(
        page.contains("[the sign-in link: sent to the recipient only, never shown]"),
        "the page says a link was sent: {page}"
    );

    // Maria's mailbox gets the working link, and it signs her in.
    let smtp = SmtpServer::start();
    w.until_every_email_is_due().await;
    w.sweep(&smtp.url(), &[]);
    let received = smtp.to("maria@example.com");
    let email = received
        .iter()
        .find(|m| m.subject.contains("sign-in link"))
        .expect("the sign-in email");
    assert!(email.text.contains(&link), "{}", email.text);
    assert!(email.html.contains(&token), "{}", email.html);
    assert!(!email.text.contains("[[coe:"), "{}", email.text);
    let emailed = email
        .text
        .split_whitespace()
        .find(|w| w.contains("/sign-in/confirm?token="))
        .expect("a link");
    let res = browser()
        .post(w.app.url("/sign-in/confirm"))
        .form(&[("token", token_of(emailed))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 303, "the emailed link signs in");
    let cookie = res
        .headers()
        .get(SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .expect("a session")
        .to_owned();
    let me = browser()
        .get(w.app.url("/"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    assert!(
        me.contains("<a class=\"who\" href=\"/me\">Maria Lopez</a>"),
        "signed in as maria: {me}"
    );
    let digest_received = received
        .iter()
        .find(|m| m.subject.contains("overdue"))
        .expect("the digest");
    let header = digest_received
        .header("List-Unsubscribe")
        .expect("List-Unsubscribe");
    assert!(header.contains(&unsubscribe), "{header}");

    // Sent: no raw secret outlives its delivery.
    for kind in ["sign_in", "overdue_digest"] {
        let (_, link, unsubscribe) = rows(kind);
        assert_eq!(
            (link, unsubscribe),
            (None, None),
            "{kind}: forgotten once sent"
        );
    }
    let page = get_page(
        &w.app,
        &format!("/admin/outbox/{sign_in_email}"),
        Some(&dana),
    )
    .await
    .text()
    .await
    .expect("html");
    assert!(!page.contains(&token), "{page}");
}

/// A gate before an SMTP server: the first connection it takes waits, answered by
/// nothing (an SMTP server that stalls), until `open` is sent; then it is joined to the
/// server on `upstream` and the conversation goes on. `taken` says when it waits.
fn stalled_smtp(
    upstream: u16,
) -> (
    u16,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (taken_tx, taken) = std::sync::mpsc::channel();
    let (open, opened) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let Ok((client, _)) = listener.accept() else {
            return;
        };
        let _ = taken_tx.send(());
        if opened.recv().is_err() {
            return;
        }
        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
            return;
        };
        let (Ok(mut from_client), Ok(mut to_server)) = (client.try_clone(), server.try_clone())
        else {
            return;
        };
        let forward = std::thread::spawn(move || {
            let _ = std::io::copy(&mut from_client, &mut to_server);
            let _ = to_server.shutdown(Shutdown::Write);
        });
        let (mut from_server, mut to_client) = (server, client);
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
        let _ = forward.join();
    });
    (port, taken, open)
}

/// A raw HTTP/1.1 request to a served coe (`head` without its blank line).
fn http(port: u16, head: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(StdDuration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "{head}\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// Issue 61, item 5: delivery held a pooled connection while the SMTP server answered
/// (up to a minute), so a slow or silent server took the connections requests need.
/// With a pool of one connection and an SMTP server that stalls mid-delivery, requests
/// still answer at once: the claim is written and its connection given back before
/// the server is called, and a connection is taken again to record the outcome.
#[test]
fn a_stalled_smtp_server_holds_no_database_connection() {
    use coe::db::schema::outbox_emails;
    let smtp = SmtpServer::start();
    let (gate, taken, open) = stalled_smtp(smtp.port);
    let db = crate::helpers::TestDatabase::new();
    let gate_url = format!("smtp://127.0.0.1:{gate}");
    let served = crate::cli::serve(
        &db.url,
        &[
            ("COE_SMTP_URL", gate_url.as_str()),
            ("COE_DATABASE_POOL_SIZE", "1"),
            ("COE_DATABASE_CONNECT_TIMEOUT_SECS", "5"),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "60"),
            ("COE_REMINDERS_INTERVAL_SECS", "3600"),
        ],
    );
    let admin = served.admin_token();
    let res = http(
        served.port,
        &format!(
            "PUT /api/v1/people/ana@example.com HTTP/1.1\r\nAuthorization: Bearer {admin}\r\n\
             Content-Type: application/json"
        ),
        r#"{"name":"Ana Lima"}"#,
    );
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let res = http(
        served.port,
        "POST /sign-in HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
        "email=ana%40example.com&next=%2F",
    );
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");

    // Delivery has claimed Ana's link and is waiting on the SMTP server.
    taken
        .recv_timeout(StdDuration::from_secs(30))
        .expect("delivery reached the SMTP server");
    // Meanwhile the one database connection serves the requests, each at once (one
    // held by delivery would have them wait the 5 s and answer 503).
    for _ in 0..3 {
        let asked = Instant::now();
        let ready = crate::cli::http_get(served.port, "/readyz", None);
        assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
        let outbox = crate::cli::http_get(served.port, "/api/v1/outbox", Some(&admin));
        assert!(outbox.starts_with("HTTP/1.1 200"), "{outbox}");
        assert!(
            outbox.contains("\"state\":\"sending\""),
            "the email is being sent meanwhile: {outbox}"
        );
        let took = asked.elapsed();
        assert!(took < StdDuration::from_secs(5), "took {took:?}");
    }

    // The server answers: the email goes, and its outcome is recorded.
    open.send(()).expect("open the gate");
    let deadline = Instant::now() + StdDuration::from_secs(60);
    eventually(StdDuration::from_secs(60), "the link arrived", || {
        !smtp.to("ana@example.com").is_empty()
    });
    assert!(smtp.to("ana@example.com")[0]
        .text
        .contains("/sign-in/confirm?token="));
    let pool = coe::db::connect(&coe::config::DatabaseSettings {
        url: db.url.clone(),
        ..coe::config::DatabaseSettings::default()
    })
    .expect("connect");
    // Within the same minute.
    let link = eventually(
        deadline.saturating_duration_since(Instant::now()),
        "recorded as sent",
        || {
            let (state, link): (String, Option<String>) = outbox_emails::table
                .filter(outbox_emails::kind.eq("sign_in"))
                .select((outbox_emails::state, outbox_emails::private_link))
                .first(&mut pool.get().expect("conn"))
                .expect("the email");
            if state == "sent" {
                Ok(link)
            } else {
                Err(state)
            }
        },
    );
    assert_eq!(link, None, "the link forgotten once sent");
    drop(served);
}

/// On a local trial (development, loopback, no SMTP server) the sign-in link still
/// reaches the person two ways: the log line written for them, and the `.eml` file
/// the file transport writes (their mailbox on a trial). Both carry the same working
/// link, never the outbox's placeholder.
#[test]
fn a_local_trial_logs_the_link_and_writes_it_into_the_eml_file() {
    let db = crate::helpers::TestDatabase::new();
    let mailbox = tempfile::tempdir().expect("dir");
    let served = crate::cli::serve(
        &db.url,
        &[(
            "COE_EMAIL_FILE_DIR",
            mailbox.path().to_str().expect("a path"),
        )],
    );
    let res = http(
        served.port,
        "POST /sign-in HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
        "email=ana%40example.com&next=%2F",
    );
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let message = "sign-in link (a local trial: mode = development, loopback only, no SMTP \
                   server; written here so that you can sign in without one)";
    let deadline = Instant::now() + StdDuration::from_secs(30);
    let logged = eventually(StdDuration::from_secs(30), "the link was logged", || {
        served.logged(message).pop()
    })["link"]
        .as_str()
        .expect("the link")
        .to_owned();
    assert!(logged.contains("/sign-in/confirm?token=coe_"), "{logged}");
    // Within the same 30 s.
    let text = eventually(
        deadline.saturating_duration_since(Instant::now()),
        "the .eml file was written",
        || {
            std::fs::read_dir(mailbox.path())
                .expect("the mailbox")
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                .find_map(|e| {
                    let raw = std::fs::read(e.path()).ok()?;
                    let m = mail_parser::MessageParser::default().parse(&raw)?;
                    m.subject()
                        .is_some_and(|s| s.contains("sign-in link"))
                        .then(|| m.body_text(0).unwrap_or_default().into_owned())
                })
        },
    );
    assert!(text.contains(&logged), "the same link: {text}");
    assert!(!text.contains("[[coe:"), "{text}");
    let token = logged.split_once("token=").expect("a token").1;
    let res = http(
        served.port,
        "POST /sign-in/confirm HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
        &format!("token={token}"),
    );
    assert!(res.starts_with("HTTP/1.1 303"), "the link signs in: {res}");
}

/// Issue 62, item 2: `coe backup` while emails waited, `coe restore` (on PostgreSQL:
/// `pg_dump`, `pg_restore --clean`), and the next start sent every waiting email again
/// with the same Message-IDs. Now nothing restored is sent by itself: the sign-in email
/// is dropped and its link expired, a notice older than a day dropped as stale, the
/// rest (waiting or being sent) held; an email queued after the restore goes (the
/// delivery pass ran). An admin drops a waiting email (audited) and sends what is held:
/// each goes once.
#[test]
fn a_restored_backup_sends_nothing_by_itself_until_an_admin_sends_what_is_held() {
    use crate::delivery_crash::{pg_tool, pool, run, state_of};
    use coe::db::schema::{audit_log, outbox_emails};
    use coe::email::Kind;
    let db = crate::helpers::TestDatabase::new();
    let env = [("COE_DATABASE_URL", db.url.as_str())];
    assert!(crate::cli::coe(&["migrate"], &env).status.success());
    let setup = pool(&db);
    let now = coe::db::now();
    let mail = |kind: Kind, key: &str| coe::services::outbound::outbox::NewEmail {
        kind,
        dedup_key: key.into(),
        recipient: format!("{key}@example.com"),
        recipient_name: None,
        subject: format!("{} ({key})", kind.name()),
        text: format!(
            "For {key}: {}",
            coe::services::outbound::outbox::PRIVATE_LINK
        ),
        html: format!("<p>For {key}</p>"),
        data: serde_json::Value::Null,
        calendar: None,
    };
    let id_of = |conn: &mut coe::db::DbConnection, key: &str| -> String {
        outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .select(outbox_emails::id)
            .first(conn)
            .expect("id")
    };
    let mut ids = std::collections::BTreeMap::new();
    let token;
    {
        let mut conn = setup.get().expect("conn");
        coe::services::directory::people::ensure(&mut conn, "signin@example.com", now)
            .expect("person");
        let link = coe::services::accounts::auth::host_link(
            &mut conn,
            &EmailAddress::parse("signin@example.com").expect("address"),
            coe::services::Runtime::load(coe::config::Settings::default())
                .expect("runtime")
                .env(),
        )
        .expect("a link");
        token = link.split_once("token=").expect("token").1.to_owned();
        coe::services::outbound::outbox::enqueue_with_private_link(
            &mut conn,
            &mail(Kind::SignIn, "signin"),
            &link,
            now,
        )
        .expect("queued");
        for (kind, key, at) in [
            (Kind::Escalation, "escalation", now),
            (Kind::Approved, "stale", now - Duration::hours(30)),
            (Kind::Approved, "notice", now),
            (Kind::ActionAssigned, "in-flight", now),
            (Kind::ActionAssigned, "gone", now),
        ] {
            assert!(
                coe::services::outbound::outbox::enqueue(&mut conn, &mail(kind, key), at)
                    .expect("queue")
            );
        }
        for key in [
            "signin",
            "escalation",
            "stale",
            "notice",
            "in-flight",
            "gone",
        ] {
            ids.insert(key, id_of(&mut conn, key));
        }
        diesel::update(outbox_emails::table.find(&ids["in-flight"]))
            .set((
                outbox_emails::state.eq("sending"),
                outbox_emails::attempts.eq(1),
                outbox_emails::claimed_by.eq("replica-a"),
                outbox_emails::lease_until.eq(now + Duration::seconds(600)),
            ))
            .execute(&mut conn)
            .expect("claimed");
        diesel::update(outbox_emails::table.find(&ids["gone"]))
            .set((
                outbox_emails::state.eq("sent"),
                outbox_emails::sent_at.eq(now),
            ))
            .execute(&mut conn)
            .expect("sent");
    }
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
            said.contains("1 email(s) were being sent and 2 waiting")
                && said.contains("1 sign-in email(s) dropped")
                && said.contains("1 notice(s) older than 24 hours dropped as stale"),
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
    let served = crate::cli::serve(
        &db.url,
        &[
            ("COE_SMTP_URL", smtp.url().as_str()),
            ("COE_REMINDERS_DELIVERY_INTERVAL_SECS", "1"),
        ],
    );
    let pool = pool(&db);
    let expected = [
        ("signin", "dropped"),
        ("stale", "dropped"),
        ("escalation", "held"),
        ("notice", "held"),
        ("in-flight", "held"),
        ("gone", "sent"),
    ];
    let deadline = Instant::now() + StdDuration::from_secs(60);
    eventually(
        StdDuration::from_secs(60),
        "the restored emails as expected",
        || {
            let now = expected
                .iter()
                .map(|(key, _)| (*key, state_of(&pool, &ids[key])))
                .collect::<Vec<_>>();
            if now
                .iter()
                .zip(&expected)
                .all(|((_, now), (_, state))| now == state)
            {
                Ok(())
            } else {
                Err(format!("not as expected: {now:?}"))
            }
        },
    );
    // The delivery pass runs: an email queued after the restore goes.
    {
        let mut conn = pool.get().expect("conn");
        coe::services::outbound::outbox::enqueue(
            &mut conn,
            &mail(Kind::ActionAssigned, "after"),
            coe::db::now(),
        )
        .expect("queue");
        ids.insert("after", id_of(&mut conn, "after"));
    }
    // Within the same minute.
    eventually(
        deadline.saturating_duration_since(Instant::now()),
        "the new email sent",
        || !smtp.to("after@example.com").is_empty(),
    );
    assert_eq!(smtp.messages().len(), 1, "nothing restored was sent");
    for (key, state) in expected {
        assert_eq!(state_of(&pool, &ids[key]), state, "{key}");
    }
    // The sign-in link the restore put back no longer signs in, and its email keeps
    // no link.
    let refused = post_form(served.port, "/sign-in/confirm", &format!("token={token}"));
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    let kept: Option<String> = outbox_emails::table
        .find(&ids["signin"])
        .select(outbox_emails::private_link)
        .first(&mut pool.get().expect("conn"))
        .expect("the row");
    assert_eq!(kept, None);

    let admin = served.admin_token();
    let listed = crate::cli::http_get(served.port, "/api/v1/outbox?state=held", Some(&admin));
    assert!(listed.contains(r#""held":3"#), "{listed}");
    assert!(listed.contains("was waiting to be sent"), "{listed}");
    // A waiting email (backing off) is dropped by an admin: audited, never sent.
    {
        let mut conn = pool.get().expect("conn");
        coe::services::outbound::outbox::enqueue(
            &mut conn,
            &mail(Kind::ActionAssigned, "later"),
            coe::db::now(),
        )
        .expect("queue");
        let id = id_of(&mut conn, "later");
        diesel::update(outbox_emails::table.find(&id))
            .set(outbox_emails::next_attempt_at.eq(coe::db::now() + Duration::hours(1)))
            .execute(&mut conn)
            .expect("later");
        ids.insert("later", id);
    }
    let dropped = crate::cli::http_post(
        served.port,
        &format!("/api/v1/outbox/{}/drop", ids["later"]),
        &admin,
    );
    assert!(dropped.starts_with("HTTP/1.1 200"), "{dropped}");
    assert!(dropped.contains(r#""state":"dropped""#), "{dropped}");

    let sent = crate::cli::http_post(served.port, "/api/v1/outbox/send-held", &admin);
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
    assert!(sent.contains(r#""emails":3"#), "{sent}");
    eventually(StdDuration::from_secs(60), "what was held goes", || {
        ["escalation", "notice", "in-flight"]
            .iter()
            .all(|key| state_of(&pool, &ids[key]) == "sent")
    });
    let again = crate::cli::http_post(served.port, "/api/v1/outbox/send-held", &admin);
    assert!(again.contains(r#""emails":0"#), "{again}");
    let none = crate::cli::http_post(served.port, "/api/v1/outbox/drop-held", &admin);
    assert!(none.contains(r#""emails":0"#), "{none}");
    let received = smtp.messages();
    for key in ["after", "escalation", "notice", "in-flight"] {
        assert_eq!(
            smtp.to(&format!("{key}@example.com")).len(),
            1,
            "{key} went once"
        );
    }
    assert_eq!(received.len(), 4, "nothing else: {received:?}");
    assert_eq!(state_of(&pool, &ids["later"]), "dropped");
    let audited: Vec<(String, Option<String>)> = audit_log::table
        .filter(audit_log::action.like("outbox:%"))
        .order(audit_log::at.asc())
        .select((audit_log::action, audit_log::after))
        .load(&mut pool.get().expect("conn"))
        .expect("audit");
    let actions: Vec<&str> = audited.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        [
            "outbox:drop",
            "outbox:send_held",
            "outbox:send_held",
            "outbox:drop_held"
        ]
    );
    assert!(
        audited[1].1.as_deref().unwrap_or_default().contains("3"),
        "{audited:?}"
    );
}

/// A plain HTTP/1.1 POST of a form (no Origin, as from coe's own page).
fn post_form(port: u16, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(StdDuration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// Issue 62, item 2, on the outbox page: after a restore held what waited, an admin
/// drops a held one and a waiting one by their buttons, then sends what is held with
/// one button; each change is audited with the admin's name.
#[tokio::test]
async fn an_admin_sends_or_drops_what_a_restore_held_from_the_outbox_page() {
    use coe::db::schema::{audit_log, outbox_emails};
    use coe::email::Kind;
    let app = crate::helpers::spawn_app().await;
    let admin = app.admin_token();
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
    let mail = |key: &str| coe::services::outbound::outbox::NewEmail {
        kind: Kind::ActionAssigned,
        dedup_key: key.into(),
        recipient: format!("{key}@example.com"),
        recipient_name: None,
        subject: format!("Assigned ({key})"),
        text: "An action is yours.".into(),
        html: "<p>An action is yours.</p>".into(),
        data: serde_json::Value::Null,
        calendar: None,
    };
    let state_of = |key: &str| -> String {
        outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .select(outbox_emails::state)
            .first(&mut app.pool.get().expect("conn"))
            .expect("the email")
    };
    let id_of = |key: &str| -> String {
        outbox_emails::table
            .filter(outbox_emails::dedup_key.eq(key))
            .select(outbox_emails::id)
            .first(&mut app.pool.get().expect("conn"))
            .expect("the email")
    };
    {
        // As a restore leaves them: queued and held at once, before any delivery.
        let mut conn = app.pool.get().expect("conn");
        coe::db::write_transaction(&mut conn, |conn| {
            let now = coe::db::now();
            for key in ["held-a", "held-b", "held-c"] {
                coe::services::outbound::outbox::enqueue(conn, &mail(key), now)?;
            }
            coe::services::outbound::outbox::restored::hold_after_restore(conn, now)?;
            coe::services::outbound::outbox::enqueue(conn, &mail("waiting"), now)?;
            diesel::update(outbox_emails::table.filter(outbox_emails::dedup_key.eq("waiting")))
                .set(outbox_emails::next_attempt_at.eq(now + Duration::hours(1)))
                .execute(conn)
        })
        .expect("held");
    }
    let page = crate::pages::get_page(&app, "/admin/outbox", Some(&cookie))
        .await
        .text()
        .await
        .expect("the page");
    assert!(page.contains("3 emails are held"), "{page}");
    assert!(
        page.contains(r#"action="/admin/outbox/send-held""#),
        "{page}"
    );
    assert!(
        page.contains(r#"action="/admin/outbox/drop-held""#),
        "{page}"
    );
    let pending = crate::pages::get_page(&app, "/admin/outbox?state=pending", Some(&cookie))
        .await
        .text()
        .await
        .expect("the page");
    let waiting = id_of("waiting");
    assert!(
        pending.contains(&format!(r#"action="/admin/outbox/{waiting}/drop""#)),
        "a waiting email can be dropped: {pending}"
    );

    let dropped = crate::pages::post_form(
        &app,
        &cookie,
        "/admin/outbox?state=pending",
        &format!("/admin/outbox/{waiting}/drop"),
        &[],
    )
    .await;
    assert_eq!(dropped.status(), 303);
    assert_eq!(state_of("waiting"), "dropped");
    let held_a = id_of("held-a");
    let dropped = crate::pages::post_form(
        &app,
        &cookie,
        "/admin/outbox?state=held",
        &format!("/admin/outbox/{held_a}/drop"),
        &[],
    )
    .await;
    assert_eq!(dropped.status(), 303);
    assert_eq!(state_of("held-a"), "dropped");
    let sent = crate::pages::post_form(
        &app,
        &cookie,
        "/admin/outbox",
        "/admin/outbox/send-held",
        &[],
    )
    .await;
    assert_eq!(sent.status(), 303);
    for key in ["held-b", "held-c"] {
        assert!(
            ["pending", "sending", "sent"].contains(&state_of(key).as_str()),
            "{key}: {}",
            state_of(key)
        );
    }
    let page = crate::pages::get_page(&app, "/admin/outbox", Some(&cookie))
        .await
        .text()
        .await
        .expect("the page");
    assert!(
        !page.contains("/admin/outbox/send-held"),
        "nothing held: {page}"
    );
    let audited: Vec<(String, String, Option<String>)> = audit_log::table
        .filter(audit_log::action.like("outbox:%"))
        .order(audit_log::at.asc())
        .select((audit_log::actor, audit_log::action, audit_log::after))
        .load(&mut app.pool.get().expect("conn"))
        .expect("audit");
    let seen: Vec<(&str, &str)> = audited
        .iter()
        .map(|(who, what, _)| (who.as_str(), what.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("dana@example.com", "outbox:drop"),
            ("dana@example.com", "outbox:drop"),
            ("dana@example.com", "outbox:send_held"),
        ]
    );
    assert_eq!(audited[2].2.as_deref(), Some(r#"{"emails":2}"#));
}
