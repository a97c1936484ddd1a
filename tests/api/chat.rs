//! Notices in team chat. Slack, Teams, Google Chat and Mattermost cannot run here: a
//! loopback receiver checks each payload against the platform's published format
//! and limits, and plays the platforms' answers (429 with `Retry-After`, 404 for a
//! deleted webhook, a failure). Delivery is the service's own pass, as the
//! scheduler runs it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use coe::config::{ChannelSettings, ChatEvent, ChatKind, Settings};
use coe::db::schema::{chat_channels, chat_messages, corrective_actions};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::helpers::{json as body_json, spawn_app_with, TestApp};

/// An answer to play: a status and a `Retry-After`; status 0 answers 200 after 3 s
/// (past a 1 s timeout).
type Answer = (u16, Option<&'static str>);

/// What the receiver got, by path, and the answers it is to play, by path.
#[derive(Default)]
pub(crate) struct Inbox {
    got: Mutex<HashMap<String, Vec<Value>>>,
    script: Mutex<HashMap<String, VecDeque<Answer>>>,
}

impl Inbox {
    pub(crate) fn got(&self, path: &str) -> Vec<Value> {
        self.got
            .lock()
            .expect("lock")
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    fn will_answer(&self, path: &str, status: u16, retry_after: Option<&'static str>) {
        self.script
            .lock()
            .expect("lock")
            .entry(path.to_owned())
            .or_default()
            .push_back((status, retry_after));
    }
}

/// The platform's format, as published, checked: an answer saying what is wrong, or
/// `None`.
fn problem(platform: &str, body: &Value) -> Option<String> {
    let text_len = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    match platform {
        "slack" => {
            let blocks = body["blocks"].as_array()?;
            if blocks.is_empty() || blocks.len() > 50 {
                return Some("invalid_blocks: 1 to 50 blocks".into());
            }
            if text_len(&body["text"]) == 0 {
                return Some("no top-level text (the notification's fallback)".into());
            }
            for b in blocks {
                match b["type"].as_str() {
                    Some("header")
                        if b["text"]["type"] == "plain_text"
                            && text_len(&b["text"]["text"]) <= 150 => {}
                    Some("section") => {
                        if text_len(&b["text"]["text"]) > 3000 {
                            return Some("section text over 3000".into());
                        }
                        if let Some(fields) = b["fields"].as_array() {
                            if fields.len() > 10
                                || fields.iter().any(|f| text_len(&f["text"]) > 2000)
                            {
                                return Some("fields: at most 10 of 2000".into());
                            }
                        }
                    }
                    Some("actions") => {
                        for e in b["elements"].as_array()? {
                            if e["type"] != "button"
                                || text_len(&e["text"]["text"]) > 75
                                || text_len(&e["url"]) > 3000
                            {
                                return Some("button: plain_text ≤ 75, url ≤ 3000".into());
                            }
                        }
                    }
                    other => return Some(format!("unexpected block {other:?}")),
                }
            }
            None
        }
        "teams" => {
            let ok = body["type"] == "message"
                && body["attachments"].as_array().map(Vec::len) == Some(1)
                && body["attachments"][0]["contentType"]
                    == "application/vnd.microsoft.card.adaptive"
                && body["attachments"][0]["content"]["type"] == "AdaptiveCard"
                && body["attachments"][0]["content"]["version"] == "1.4"
                && body["attachments"][0]["content"]["body"].is_array()
                && body.to_string().len() <= 28 * 1024;
            (!ok).then(|| "TriggerInputSchemaMismatch".into())
        }
        "google-chat" => {
            let card = &body["cardsV2"][0];
            let ok = card["cardId"].is_string()
                && card["card"]["header"]["title"].is_string()
                && card["card"]["sections"][0]["widgets"].is_array()
                && body.to_string().len() <= 32_000;
            (!ok).then(|| "INVALID_ARGUMENT: cardsV2".into())
        }
        "mattermost" => {
            let ok = text_len(&body["text"]) > 0
                && text_len(&body["text"]) <= 16_383
                && body.get("blocks").is_none();
            (!ok).then(|| "text required, at most 16383".into())
        }
        _ => Some(format!("no platform {platform}")),
    }
}

async fn receive(req: HttpRequest, body: web::Bytes, inbox: web::Data<Arc<Inbox>>) -> HttpResponse {
    let path = req.path().to_owned();
    let platform = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let scripted = inbox
        .script
        .lock()
        .expect("lock")
        .get_mut(&path)
        .and_then(VecDeque::pop_front);
    if let Some((status, retry_after)) = scripted {
        if status == 0 {
            // A wait that is the point: a platform too slow to answer (past coe's 1 s
            // chat timeout).
            actix_web::rt::time::sleep(std::time::Duration::from_secs(3)).await;
            return HttpResponse::Ok().body("ok");
        }
        let mut answer =
            HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("a status"));
        if let Some(after) = retry_after {
            answer.insert_header(("retry-after", after));
        }
        return answer.body(if status == 404 {
            "no_service"
        } else {
            "rate_limited"
        });
    }
    let Ok(value) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::BadRequest().body("invalid_payload");
    };
    if let Some(problem) = problem(&platform, &value) {
        return HttpResponse::BadRequest().body(problem);
    }
    inbox
        .got
        .lock()
        .expect("lock")
        .entry(path)
        .or_default()
        .push(value);
    match platform.as_str() {
        "teams" => HttpResponse::Accepted().finish(),
        "google-chat" => HttpResponse::Ok().json(json!({"name": "spaces/x/messages/y"})),
        _ => HttpResponse::Ok().body("ok"),
    }
}

/// The receiver on a free loopback port: its base URL and inbox.
pub(crate) async fn receiver() -> (String, Arc<Inbox>) {
    let inbox = Arc::new(Inbox::default());
    let data = web::Data::new(inbox.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(receive))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let port = server.addrs()[0].port();
    tokio::spawn(server.run());
    (format!("http://127.0.0.1:{port}"), inbox)
}

fn channel(
    name: &str,
    kind: ChatKind,
    url: String,
    teams: &[&str],
    services: &[&str],
) -> ChannelSettings {
    ChannelSettings {
        name: name.into(),
        kind,
        url: Some(url.into()),
        homeserver: None,
        room_id: None,
        access_token: None,
        page_id: None,
        api_url: None,
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: None,
        app_id: None,
        app_password: None,
        tenant_id: None,
        teams: teams.iter().map(|t| (*t).to_owned()).collect(),
        services: services.iter().map(|s| (*s).to_owned()).collect(),
        events: ChatEvent::ALL.to_vec(),
    }
}

fn channels(base: &str) -> Vec<ChannelSettings> {
    vec![
        channel(
            "payments",
            ChatKind::Slack,
            format!("{base}/slack/payments"),
            &["payments"],
            &[],
        ),
        channel(
            "search-team",
            ChatKind::Slack,
            format!("{base}/slack/search"),
            &["search"],
            &[],
        ),
        channel(
            "org",
            ChatKind::Teams,
            format!("{base}/teams/org"),
            &[],
            &[],
        ),
        channel(
            "checkout",
            ChatKind::GoogleChat,
            format!("{base}/google-chat/checkout"),
            &[],
            &["checkout"],
        ),
        channel(
            "eng",
            ChatKind::Mattermost,
            format!("{base}/mattermost/eng"),
            &[],
            &[],
        ),
        channel(
            "deleted",
            ChatKind::Slack,
            format!("{base}/slack/deleted"),
            &[],
            &[],
        ),
    ]
}

async fn app_with_chat(base: &str) -> (TestApp, Settings) {
    let chat = channels(base);
    let app = spawn_app_with({
        let chat = chat.clone();
        move |s| s.chat.channels = chat
    })
    .await;
    let mut settings = Settings::default();
    settings.chat.channels = chat;
    settings.public_url = "http://127.0.0.1:8080".into();
    (app, settings)
}

/// One chat delivery pass over `app`'s database with `settings`.
pub(crate) fn deliver(
    app: &TestApp,
    settings: &Settings,
) -> coe::services::outbound::chat::ChatReport {
    let mut conn = coe::db::checkout(&app.pool).expect("conn");
    let runtime = coe::services::Runtime::load(settings.clone()).expect("runtime");
    coe::services::outbound::chat::deliver(
        &mut conn,
        runtime.env(),
        "test",
        &AtomicBool::new(false),
    )
    .expect("a chat pass")
}

/// One chat delivery pass over `app`'s database with `env` (the app's own:
/// `app.runtime.env()`, with the connections kept in coe).
pub(crate) fn deliver_with(
    app: &TestApp,
    env: coe::services::Env<'_>,
) -> coe::services::outbound::chat::ChatReport {
    let mut conn = coe::db::checkout(&app.pool).expect("conn");
    coe::services::outbound::chat::deliver(&mut conn, env, "test", &AtomicBool::new(false))
        .expect("a chat pass")
}

pub(crate) async fn person(app: &TestApp, admin: &str, email: &str, team: &str) {
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{email}")))
        .bearer_auth(admin)
        .json(&json!({"name": email, "team": team}))
        .send()
        .await
        .expect("sent");
    assert!(
        res.status().is_success(),
        "{}",
        res.text().await.unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_coe_is_told_to_its_teams_channel_and_the_org_channels_once_each() {
    let (base, inbox) = receiver().await;
    let (app, settings) = app_with_chat(&base).await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    // The deleted webhook answers 404; Slack's payments channel is rate limited once.
    inbox.will_answer("/slack/deleted", 404, None);
    inbox.will_answer("/slack/payments", 429, Some("0"));

    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout <!channel> errors & @here", "owner": "ana@example.com",
                    "service": "checkout", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("an id").to_owned();

    // org (teams), checkout (google chat), eng (mattermost), and payments after its
    // 429 (Retry-After: 0: due again within the pass); deferred: that 429, and the
    // deleted channel, broken.
    let first = deliver(&app, &settings);
    assert_eq!(first.sent, 4, "{first:?}");
    assert_eq!(first.deferred, 2, "{first:?}");
    // Nothing more: each channel once; the broken one waits.
    assert_eq!(
        deliver(&app, &settings),
        coe::services::outbound::chat::ChatReport::default()
    );

    let slack = inbox.got("/slack/payments");
    assert_eq!(slack.len(), 1);
    let text = slack[0].to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:8080/coes/{id}")),
        "{text}"
    );
    // Slack reads mentions in mrkdwn (and the top-level text), never in plain_text:
    // there, the title's `<!channel>` is escaped.
    let mut mrkdwn = vec![slack[0]["text"].as_str().unwrap_or_default().to_owned()];
    for block in slack[0]["blocks"].as_array().expect("blocks") {
        for field in block["fields"].as_array().into_iter().flatten() {
            mrkdwn.push(field["text"].as_str().unwrap_or_default().to_owned());
        }
        if block["text"]["type"] == "mrkdwn" {
            mrkdwn.push(
                block["text"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
    }
    assert!(mrkdwn.iter().all(|t| !t.contains("<!")), "{mrkdwn:?}");
    assert!(text.contains("&lt;!channel&gt;"), "{text}");
    assert!(text.contains("ana@example.com"), "{text}");
    assert!(
        inbox.got("/slack/search").is_empty(),
        "another team's channel"
    );
    assert_eq!(inbox.got("/teams/org").len(), 1);
    assert_eq!(inbox.got("/google-chat/checkout").len(), 1);
    let mm = inbox.got("/mattermost/eng");
    assert_eq!(mm.len(), 1);
    assert!(
        !mm[0]["text"].as_str().unwrap_or_default().contains("@here"),
        "{}",
        mm[0]
    );

    // The deleted channel is marked broken, its message kept for when it is mended.
    let mut conn = app.pool.get().expect("conn");
    let (broken, error): (Option<chrono::NaiveDateTime>, Option<String>) = chat_channels::table
        .find("deleted")
        .select((chat_channels::broken_at, chat_channels::last_error))
        .first(&mut conn)
        .expect("its state");
    assert!(broken.is_some());
    assert!(error.unwrap_or_default().contains("404"));
    let waiting: i64 = chat_messages::table
        .filter(chat_messages::channel.eq("deleted"))
        .filter(chat_messages::state.eq("pending"))
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(waiting, 1);
    drop(conn);

    // An admin's test message gets through: mended, and what waited is sent.
    let mut conn = coe::db::checkout(&app.pool).expect("conn");
    let deleted = settings
        .chat
        .channels
        .iter()
        .find(|c| c.name == "deleted")
        .expect("channel");
    let runtime = coe::services::Runtime::load(settings.clone()).expect("runtime");
    let outcome =
        coe::services::outbound::chat::send_test(runtime.env(), deleted, "admin@example.com", "");
    assert_eq!(outcome, coe::chat::Sent::Delivered);
    coe::services::outbound::chat::record_test(&mut conn, &deleted.name, &outcome)
        .expect("recorded");
    drop(conn);
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(inbox.got("/slack/deleted").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_of_overdue_actions_is_one_summary_per_channel_whoever_sweeps() {
    let (base, inbox) = receiver().await;
    let (app, settings) = app_with_chat(&base).await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    person(&app, &admin, "sam@example.com", "search").await;
    // Ana's manager hears of her escalated actions.
    let res = app
        .client
        .put(app.url("/api/v1/people/ana@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"name": "Ana", "team": "payments", "manager_email": "mia@example.com"}))
        .send()
        .await
        .expect("sent");
    assert!(
        res.status().is_success(),
        "{}",
        res.text().await.unwrap_or_default()
    );
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout errors", "owner": "ana@example.com", "service": "checkout", "severity": "sev2"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("an id").to_owned();
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(10)).to_string();
    for i in 0..13 {
        let res = app
            .post_json(
                &format!("/api/v1/coes/{id}/actions"),
                Some(&admin),
                &json!({"title": format!("Action {i} <b>bold</b>"), "owner": "ana@example.com", "due_date": due,
                        "priority": "high", "kind": "prevent", "success_criteria": "It holds"}),
            )
            .await;
        assert!(
            res.status().is_success(),
            "{}",
            res.text().await.unwrap_or_default()
        );
    }
    {
        let mut conn = app.pool.get().expect("conn");
        let past = chrono::Utc::now().date_naive() - chrono::Duration::days(4);
        diesel::update(corrective_actions::table)
            .set(corrective_actions::due_date.eq(past))
            .execute(&mut conn)
            .expect("backdate");
    }
    // The COE-opened notices go first.
    deliver(&app, &settings);
    let before_slack = inbox.got("/slack/payments").len();

    // Two replicas sweep the same day (after the send hour): one summary each. The
    // actions cross the escalation threshold today, and it is the inspection's day.
    let noon = chrono::Utc::now()
        .date_naive()
        .and_hms_opt(12, 0, 0)
        .expect("noon")
        .and_utc();
    let mut settings = settings;
    settings.reminders.escalate_after_days = 4;
    settings.digest.weekday = chrono::Datelike::weekday(&noon.date_naive()).to_string();
    for _ in 0..2 {
        let mut conn = coe::db::checkout(&app.pool).expect("conn");
        let runtime = coe::services::Runtime::load(settings.clone()).expect("runtime");
        coe::services::reminders::sweep(&mut conn, runtime.env(), noon, false).expect("a sweep");
    }
    deliver(&app, &settings);
    let slack = inbox.got("/slack/payments");
    assert_eq!(
        slack.len(),
        before_slack + 3,
        "one summary, one escalation, one inspection"
    );
    let of = |needle: &str| {
        slack
            .iter()
            .map(Value::to_string)
            .filter(|m| m.contains(needle))
            .collect::<Vec<_>>()
    };
    let escalation = of("escalated to managers today");
    assert_eq!(escalation.len(), 1, "{slack:?}");
    assert!(
        escalation[0].contains("13 overdue actions escalated"),
        "{}",
        escalation[0]
    );
    assert!(
        escalation[0].contains("escalated to mia@example.com"),
        "{}",
        escalation[0]
    );
    let inspection = of("inspection for payments");
    assert_eq!(inspection.len(), 1, "{slack:?}");
    assert!(inspection[0].contains("Overdue"), "{}", inspection[0]);
    let summary = of("overdue corrective actions").pop().expect("the summary");
    assert!(
        summary.contains("13 overdue corrective actions"),
        "{summary}"
    );
    assert!(summary.contains("and 3 more"), "{summary}");
    assert!(summary.contains("4 days overdue"), "{summary}");
    assert!(summary.contains("/board?team=payments"), "{summary}");
    assert!(!summary.contains("<b>bold</b>"), "{summary}");
    // The search team has nothing overdue: no summary, no escalation; the week's
    // inspection (all zeros) only.
    let search = inbox.got("/slack/search");
    assert_eq!(search.len(), 1, "{search:?}");
    assert!(search[0].to_string().contains("inspection for search"));
    let teams = inbox.got("/teams/org");
    assert!(teams
        .iter()
        .any(|c| c.to_string().contains("13 overdue corrective actions")));
    assert!(teams
        .iter()
        .any(|c| c.to_string().contains("inspection for the organisation")));
    // A third sweep the same day: nothing new anywhere.
    let sent = |inbox: &Inbox| -> usize {
        [
            "/slack/payments",
            "/slack/search",
            "/teams/org",
            "/mattermost/eng",
        ]
        .iter()
        .map(|p| inbox.got(p).len())
        .sum()
    };
    let before = sent(&inbox);
    {
        let mut conn = coe::db::checkout(&app.pool).expect("conn");
        let runtime = coe::services::Runtime::load(settings.clone()).expect("runtime");
        coe::services::reminders::sweep(&mut conn, runtime.env(), noon, false).expect("a sweep");
    }
    deliver(&app, &settings);
    assert_eq!(sent(&inbox), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_see_each_channel_and_mend_a_broken_one_with_a_test_message() {
    let (base, inbox) = receiver().await;
    let (app, settings) = app_with_chat(&base).await;
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success());
    // A COE opened while the deleted webhook answers 404: the channel breaks.
    inbox.will_answer("/slack/deleted", 404, None);
    body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Search is slow", "service": "search", "severity": "sev3"}),
        )
        .await,
    )
    .await;
    deliver(&app, &settings);

    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "dana@example.com", "/admin/chat").await;
    browser.wait_for_heading("Chat channels").await;
    let row = browser.text("#chat-deleted").await;
    assert!(row.contains("(broken)"), "{row}");
    assert!(row.contains("HTTP 404"), "{row}");
    let org = browser.text("#chat-org").await;
    assert!(org.contains("the whole organisation"), "{org}");
    assert!(org.contains("Microsoft Teams"), "{org}");
    browser.screenshot("admin-chat-broken").await;

    browser
        .click_to_load("#chat-deleted button[type=submit]")
        .await;
    browser.wait_for_heading("Chat channels").await;
    let said = browser.text("#chat-tested").await;
    assert!(said.contains("reached deleted"), "{said}");
    let row = browser.text("#chat-deleted").await;
    assert!(!row.contains("(broken)"), "{row}");
    browser.screenshot("admin-chat-mended").await;
    // The test message, then what waited.
    assert_eq!(inbox.got("/slack/deleted").len(), 1);
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(inbox.got("/slack/deleted").len(), 2);
}

/// A real Matrix homeserver (Synapse, from PyPI; `tests/matrix/`), on loopback, with
/// a bot and a reader in one room.
pub(crate) struct Synapse {
    child: std::process::Child,
    pub(crate) base: String,
    pub(crate) room_id: String,
    pub(crate) bot_token: String,
    pub(crate) reader_token: String,
    /// The access token of each other member (`start_with`).
    pub(crate) members: std::collections::BTreeMap<String, String>,
    _dir: tempfile::TempDir,
}

impl Synapse {
    pub(crate) fn start() -> Synapse {
        Synapse::start_with(&[])
    }

    /// The same, with users `members` (`@name:localhost`) in the room too.
    pub(crate) fn start_with(members: &[&str]) -> Synapse {
        use std::io::BufRead;
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/matrix");
        let dir = tempfile::tempdir().expect("a folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = std::process::Command::new("bash")
            .arg(here.join("start.sh"))
            .arg(port.to_string())
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start.sh runs");
        let stdout = child.stdout.take().expect("stdout");
        let ready = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("SYNAPSE READY"));
        let log = || std::fs::read_to_string(dir.path().join("synapse.out")).unwrap_or_default();
        assert!(
            ready,
            "Synapse did not start (run scripts/setup):\n{}",
            log()
        );
        let out = std::process::Command::new("python3")
            .arg(here.join("setup_room.py"))
            .arg(port.to_string())
            .arg(dir.path())
            .args(members.iter().flat_map(|m| ["--member", m]))
            .output()
            .expect("setup_room.py runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let room: Value = serde_json::from_slice(
            out.stdout
                .split(|b| *b == b'\n')
                .find(|l| l.starts_with(b"{"))
                .expect("its JSON"),
        )
        .expect("JSON");
        Synapse {
            child,
            base: format!("http://127.0.0.1:{port}"),
            room_id: room["room_id"].as_str().expect("room").into(),
            bot_token: room["bot_token"].as_str().expect("bot").into(),
            reader_token: room["reader_token"].as_str().expect("reader").into(),
            members: serde_json::from_value(room["members"].clone()).unwrap_or_default(),
            _dir: dir,
        }
    }

    /// The room's messages as the reader reads them, oldest first.
    pub(crate) async fn messages(&self) -> Vec<Value> {
        let room: String = form_urlencoded::byte_serialize(self.room_id.as_bytes()).collect();
        let page: Value = reqwest::Client::new()
            .get(format!(
                "{}/_matrix/client/v3/rooms/{room}/messages?dir=b&limit=50",
                self.base
            ))
            .bearer_auth(&self.reader_token)
            .send()
            .await
            .expect("read")
            .json()
            .await
            .expect("JSON");
        let mut events: Vec<Value> = page["chunk"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e["type"] == "m.room.message")
            .collect();
        events.reverse();
        events
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_room_reads_the_notices_in_html_once_each() {
    let synapse = Synapse::start();
    let matrix = ChannelSettings {
        name: "payments-matrix".into(),
        kind: ChatKind::Matrix,
        url: None,
        homeserver: Some(synapse.base.clone()),
        room_id: Some(synapse.room_id.clone()),
        access_token: Some(synapse.bot_token.clone().into()),
        page_id: None,
        api_url: None,
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: None,
        app_id: None,
        app_password: None,
        tenant_id: None,
        teams: vec!["payments".into()],
        services: Vec::new(),
        events: ChatEvent::ALL.to_vec(),
    };
    let app = spawn_app_with({
        let matrix = matrix.clone();
        move |s| s.chat.channels = vec![matrix]
    })
    .await;
    let mut settings = Settings::default();
    settings.chat.channels = vec![matrix.clone()];
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Payments <script>alert(1)</script> & @room down", "owner": "ana@example.com",
                    "service": "payments-api", "severity": "sev1"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("an id").to_owned();
    assert_eq!(deliver(&app, &settings).sent, 1);
    // Sent again (a lost answer, another replica): the same transaction id, one event.
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(chat_messages::table)
            .set(chat_messages::state.eq("pending"))
            .execute(&mut conn)
            .expect("as if never answered");
    }
    assert_eq!(deliver(&app, &settings).sent, 1);
    let messages = synapse.messages().await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    let content = &messages[0]["content"];
    assert_eq!(content["msgtype"], "m.notice");
    assert_eq!(content["format"], "org.matrix.custom.html");
    let html = content["formatted_body"].as_str().expect("html");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains(&format!("/coes/{id}")), "{html}");
    assert!(
        content["body"]
            .as_str()
            .expect("body")
            .contains("nobody yet")
            || content["body"]
                .as_str()
                .expect("body")
                .contains("ana@example.com")
    );

    // A revoked token: the channel breaks and its message waits.
    let bad = ChannelSettings {
        access_token: Some("not-a-token".into()),
        page_id: None,
        api_url: None,
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: None,
        app_id: None,
        app_password: None,
        tenant_id: None,
        ..matrix.clone()
    };
    settings.chat.channels = vec![bad];
    {
        let mut conn = coe::db::checkout(&app.pool).expect("conn");
        let notice = coe::chat::Notice {
            headline: "Another".into(),
            facts: Vec::new(),
            items: Vec::new(),
            total_items: 0,
            link_label: "Open".into(),
            link_url: "http://127.0.0.1:8080/".into(),
        };
        coe::services::outbound::chat::enqueue(
            &mut conn,
            &settings.chat.channels[0],
            ChatEvent::CoeOpened,
            "another",
            &notice,
            coe::db::now(),
        )
        .expect("queued");
    }
    let report = deliver(&app, &settings);
    assert_eq!(report.sent, 0);
    let mut conn = app.pool.get().expect("conn");
    let error: Option<String> = chat_channels::table
        .find("payments-matrix")
        .select(chat_channels::last_error)
        .first(&mut conn)
        .expect("state");
    assert!(error.unwrap_or_default().contains("M_UNKNOWN_TOKEN"));
    drop(conn);

    // What the room shows, drawn as a page to look at.
    let mut page = String::from(
        "<!doctype html><meta charset=utf-8><title>Matrix room</title><style>body{font-family:sans-serif;max-width:50em;margin:2em auto}article{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}small{color:#666}</style><h1>The payments room, as its reader reads it</h1>",
    );
    for m in &messages {
        page.push_str(&format!(
            "<article><small>{} · {}</small><div>{}</div></article>",
            m["sender"].as_str().unwrap_or_default(),
            m["content"]["msgtype"].as_str().unwrap_or_default(),
            m["content"]["formatted_body"].as_str().unwrap_or_default()
        ));
    }
    let file = crate::webdriver::artifacts().join("matrix-room.html");
    std::fs::write(&file, page).expect("the page");
    let browser = crate::webdriver::Browser::start().await;
    browser.goto(&format!("file://{}", file.display())).await;
    browser.screenshot("matrix-room").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_down_for_an_hour_gets_its_notice_after_once_and_two_workers_send_it_once() {
    let (base, inbox) = receiver().await;
    let (app, settings) = app_with_chat(&base).await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    // The Teams workflow fails for a while (5xx, as a platform outage answers).
    for _ in 0..4 {
        inbox.will_answer("/teams/org", 503, None);
    }
    body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Payments down", "owner": "ana@example.com", "service": "payments-api", "severity": "sev1"}),
        )
        .await,
    )
    .await;
    // Two workers (replicas) deliver at once: each notice goes once.
    let (a, b) = {
        let (app_a, app_b) = (&app, &app);
        std::thread::scope(|scope| {
            let one = scope.spawn(|| deliver(app_a, &settings));
            let two = scope.spawn(|| deliver(app_b, &settings));
            (one.join().expect("one"), two.join().expect("two"))
        })
    };
    assert_eq!(a.sent + b.sent, 3, "{a:?} {b:?}"); // payments, eng, deleted (ok here)
    assert_eq!(inbox.got("/slack/payments").len(), 1);
    assert_eq!(inbox.got("/mattermost/eng").len(), 1);
    // The outage: the first pass met it; each next pass finds the message due again
    // (as an hour of back-off passing would), until the platform answers.
    for _ in 0..3 {
        {
            let mut conn = app.pool.get().expect("conn");
            diesel::update(chat_messages::table.filter(chat_messages::state.eq("pending")))
                .set(
                    chat_messages::next_attempt_at
                        .eq(chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1)),
                )
                .execute(&mut conn)
                .expect("due again");
        }
        let r = deliver(&app, &settings);
        assert_eq!(r.sent, 0, "{r:?}");
    }
    {
        let mut conn = app.pool.get().expect("conn");
        let (attempts, error): (i32, Option<String>) = chat_messages::table
            .filter(chat_messages::channel.eq("org"))
            .select((chat_messages::attempts, chat_messages::last_error))
            .first(&mut conn)
            .expect("the message");
        assert_eq!(attempts, 4);
        assert!(error.unwrap_or_default().contains("503"));
        diesel::update(chat_messages::table.filter(chat_messages::state.eq("pending")))
            .set(
                chat_messages::next_attempt_at
                    .eq(chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1)),
            )
            .execute(&mut conn)
            .expect("due again");
    }
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(inbox.got("/teams/org").len(), 1);
    assert_eq!(
        deliver(&app, &settings),
        coe::services::outbound::chat::ChatReport::default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sev2_incident_is_told_once_and_a_platform_too_slow_to_answer_gets_it_again() {
    let (base, inbox) = receiver().await;
    let chat = channels(&base);
    let app = spawn_app_with({
        let chat = chat.clone();
        move |s| {
            s.chat.channels = chat;
            s.ownership
                .services
                .insert("checkout".into(), "ana@example.com".into());
        }
    })
    .await;
    let mut settings = Settings::default();
    settings.chat.channels = chat;
    settings.chat.timeout_secs = 1;
    settings.public_url = "http://127.0.0.1:8080".into();
    let admin = app.admin_token();
    let ingest = app.token("alerts", coe::domain::Role::Ingest);
    person(&app, &admin, "ana@example.com", "payments").await;
    // The Teams workflow answers, but too late.
    inbox.will_answer("/teams/org", 0, None);

    let event = json!({"dedup_key": "checkout-errors", "group_key": "checkout", "severity": "sev2",
                       "service": "checkout", "title": "Checkout error rate above 5%",
                       "started_at": "2026-12-01T10:00:00Z"});
    for _ in 0..2 {
        // The alert fires, and fires again: one incident, one draft, one notice.
        let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
        // 202 the first time, 200 (a duplicate) the second.
        assert!(
            res.status().is_success(),
            "{}",
            res.text().await.unwrap_or_default()
        );
    }
    let report = deliver(&app, &settings);
    // payments (ana's team), checkout (the service), eng and deleted (everyone); org timed out.
    assert_eq!(report.sent, 4, "{report:?}");
    assert_eq!(report.deferred, 1, "{report:?}");
    let slack = inbox.got("/slack/payments");
    assert_eq!(slack.len(), 1);
    let text = slack[0].to_string();
    assert!(
        text.contains("COE opened: Checkout error rate above 5%"),
        "{text}"
    );
    assert!(text.contains("sev2"), "{text}");
    assert!(inbox.got("/slack/search").is_empty());
    {
        let mut conn = app.pool.get().expect("conn");
        let (state, error): (String, Option<String>) = chat_messages::table
            .filter(chat_messages::channel.eq("org"))
            .select((chat_messages::state, chat_messages::last_error))
            .first(&mut conn)
            .expect("org's message");
        assert_eq!(state, "pending");
        assert!(error.unwrap_or_default().starts_with("no answer"));
        diesel::update(chat_messages::table.filter(chat_messages::state.eq("pending")))
            .set(
                chat_messages::next_attempt_at
                    .eq(chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1)),
            )
            .execute(&mut conn)
            .expect("due again");
    }
    assert_eq!(deliver(&app, &settings).sent, 1);
    assert_eq!(inbox.got("/teams/org").len(), 1);
    assert_eq!(
        deliver(&app, &settings),
        coe::services::outbound::chat::ChatReport::default()
    );
}
