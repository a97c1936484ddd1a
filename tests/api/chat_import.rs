//! "Import from chat": an incident channel's messages proposed for a draft's timeline
//! (people's, in the window, with authors and times, links kept, bots and the
//! platform's notes left out); only what the owner ticks is added. Matrix against the
//! real Synapse; Slack and Mattermost against loopback doubles of their published
//! shapes (`conversations.history` with cursors and a 429; `/api/v4/channels/{id}/posts`
//! by page).

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use coe::config::{ChannelSettings, ChatEvent, ChatKind};
use serde_json::{json, Value};

use crate::chat::Synapse;
use crate::helpers::{spawn_app_with, TestApp};

fn readable(name: &str, kind: ChatKind) -> ChannelSettings {
    ChannelSettings {
        name: name.into(),
        kind,
        url: Some("http://127.0.0.1:9/unused".to_owned().into()),
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
        teams: Vec::new(),
        services: Vec::new(),
        events: vec![ChatEvent::Review],
    }
}

async fn draft(app: &TestApp, admin: &str) -> String {
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(admin),
            &json!({"title": "Checkout errors", "owner": "admin@example.com", "severity": "sev2"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let doc: Value = res.json().await.expect("json");
    doc["id"].as_str().expect("id").to_owned()
}

async fn proposed(app: &TestApp, token: &str, id: &str, query: &str) -> (u16, Value) {
    let res = app
        .client
        .get(app.url(&format!("/api/v1/coes/{id}/chat-messages?{query}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("sent");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Writes a milestone of COE `id`'s timeline (`started`, `resolved`) with `token`.
async fn milestone(app: &TestApp, token: &str, id: &str, kind: &str, at: &str) {
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), token).await;
    let version = doc["version"].as_i64().expect("version");
    let res = app
        .client
        .post(app.url(&format!("/api/v1/coes/{id}/timeline")))
        .bearer_auth(token)
        .header("if-match", format!("\"{version}\""))
        .json(&json!({"at": at, "kind": kind, "text": format!("{kind} (from the alerts)")}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        201,
        "{}",
        res.text().await.unwrap_or_default()
    );
}

/// What a double was asked: path and query, and its authorization.
#[derive(Default)]
struct Asked {
    got: Mutex<Vec<(String, String)>>,
    slow_down: Mutex<bool>,
}

fn q<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
}

/// Slack's Web API as published: `conversations.history` newest first, 2 a page with
/// `response_metadata.next_cursor`, `oldest`/`latest` honoured, `{ok:false, error}`
/// for a channel the bot is not in, a 429 with `Retry-After`; `users.info`.
async fn slack(req: HttpRequest, asked: web::Data<Arc<Asked>>) -> HttpResponse {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let query = req.query_string().to_owned();
    asked
        .got
        .lock()
        .expect("lock")
        .push((format!("{}?{query}", req.path()), auth.clone()));
    if auth != "Bearer xoxb-read" {
        return HttpResponse::Ok().json(json!({"ok": false, "error": "invalid_auth"}));
    }
    if std::mem::take(&mut *asked.slow_down.lock().expect("lock")) {
        return HttpResponse::TooManyRequests()
            .insert_header(("retry-after", "3"))
            .finish();
    }
    if req.path().ends_with("/users.info") {
        let name = match q(&query, "user") {
            Some("U1") => "Ana Lima",
            Some("U2") => "Bo Chen",
            _ => "",
        };
        return HttpResponse::Ok().json(
            json!({"ok": true, "user": {"id": q(&query, "user"), "name": "x", "profile": {"display_name": name, "real_name": name}}}),
        );
    }
    if q(&query, "channel") != Some("C1") {
        return HttpResponse::Ok().json(json!({"ok": false, "error": "not_in_channel"}));
    }
    let oldest: f64 = q(&query, "oldest")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let latest: f64 = q(&query, "latest")
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::MAX);
    // 2026-12-01T10:00:00Z is 1_796_119_200.
    let all = [
        json!({"type": "message", "user": "U1", "text": "Seeing 500s on <https://grafana.example.com/d/co|checkout>", "ts": "1796119260.000100"}),
        json!({"type": "message", "subtype": "channel_join", "user": "U2", "text": "<@U2> has joined the channel", "ts": "1796119270.000100"}),
        json!({"type": "message", "user": "U2", "text": "<@U1> rolling back the deploy", "ts": "1796119320.000200"}),
        json!({"type": "message", "subtype": "bot_message", "bot_id": "B1", "text": "Alert: checkout 5xx", "ts": "1796119330.000300"}),
        json!({"type": "message", "bot_id": "B2", "user": "U9", "text": "PagerDuty: acknowledged", "ts": "1796119340.000300"}),
        json!({"type": "message", "user": "U1", "text": "Errors back to 0 &amp; steady", "ts": "1796119500.000400"}),
        json!({"type": "message", "user": "U1", "text": "Next day: writing the COE", "ts": "1796205600.000500"}),
    ];
    let mut inside: Vec<&Value> = all
        .iter()
        .filter(|m| {
            let ts: f64 = m["ts"].as_str().and_then(|t| t.parse().ok()).unwrap_or(0.0);
            ts >= oldest && ts <= latest
        })
        .collect();
    inside.reverse();
    let start: usize = q(&query, "cursor")
        .and_then(|c| c.strip_prefix("page"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let page: Vec<&Value> = inside.iter().skip(start).take(2).copied().collect();
    let more = start + 2 < inside.len();
    HttpResponse::Ok().json(json!({
        "ok": true, "messages": page, "has_more": more,
        "response_metadata": {"next_cursor": if more { format!("page{}", start + 2) } else { String::new() }}
    }))
}

/// Mattermost's API v4 as published: `/channels/{id}/posts?page=&per_page=` (`order` newest
/// first, `posts` by id; system posts, bots' and deleted ones among them) and
/// `POST /users/ids`.
async fn mattermost(
    req: HttpRequest,
    body: web::Bytes,
    asked: web::Data<Arc<Asked>>,
) -> HttpResponse {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    asked.got.lock().expect("lock").push((
        format!("{}?{}", req.path(), req.query_string()),
        auth.clone(),
    ));
    if auth != "Bearer mm-read" {
        return HttpResponse::Unauthorized().json(json!({"id": "api.context.session_expired.app_error", "message": "Invalid or expired session, please login again.", "detailed_error": "", "request_id": "r1", "status_code": 401}));
    }
    if req.path() == "/api/v4/users/ids" {
        let ids: Vec<String> = serde_json::from_slice(&body).unwrap_or_default();
        let users: Vec<Value> = ids
            .iter()
            .filter_map(|id| match id.as_str() {
                "u1" => Some(json!({"id": "u1", "username": "ana.lima"})),
                "u2" => Some(json!({"id": "u2", "username": "bo"})),
                _ => None,
            })
            .collect();
        return HttpResponse::Ok().json(users);
    }
    if req.path() != "/api/v4/channels/ch1/posts" {
        return HttpResponse::NotFound().json(json!({"id": "app.channel.get.existing.app_error", "message": "Unable to find the existing channel.", "detailed_error": "", "request_id": "r2", "status_code": 404}));
    }
    // Newest first, `per_page` a page (all of them fit in one here).
    assert_eq!(q(req.query_string(), "per_page"), Some("200"));
    let since: i64 = 0;
    let base = 1_796_119_200_000_i64;
    let posts = [
        json!({"id": "p1", "create_at": base - 3_600_000, "update_at": base - 3_600_000, "delete_at": 0, "user_id": "u1", "channel_id": "ch1", "message": "An hour before", "type": "", "props": {}}),
        json!({"id": "p2", "create_at": base + 60_000, "update_at": base + 60_000, "delete_at": 0, "user_id": "u1", "channel_id": "ch1", "message": "Checkout failing, see https://grafana.example.com/d/co", "type": "", "props": {}}),
        json!({"id": "p3", "create_at": base + 70_000, "update_at": base + 70_000, "delete_at": 0, "user_id": "u2", "channel_id": "ch1", "message": "bo joined the channel.", "type": "system_join_channel", "props": {}}),
        json!({"id": "p4", "create_at": base + 80_000, "update_at": base + 80_000, "delete_at": 0, "user_id": "u3", "channel_id": "ch1", "message": "Alert fired", "type": "", "props": {"from_webhook": "true"}}),
        json!({"id": "p5", "create_at": base + 90_000, "update_at": base + 95_000, "delete_at": base + 95_000, "user_id": "u2", "channel_id": "ch1", "message": "(deleted)", "type": "", "props": {}}),
        json!({"id": "p6", "create_at": base + 120_000, "update_at": base + 120_000, "delete_at": 0, "user_id": "u2", "channel_id": "ch1", "message": "Rolled back", "type": "", "props": {}}),
    ];
    let changed: Vec<&Value> = posts
        .iter()
        .filter(|p| p["update_at"].as_i64().unwrap_or(0) > since)
        .collect();
    let order: Vec<&str> = changed
        .iter()
        .rev()
        .filter_map(|p| p["id"].as_str())
        .collect();
    let by_id: serde_json::Map<String, Value> = changed
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default().to_owned(),
                (*p).clone(),
            )
        })
        .collect();
    HttpResponse::Ok().json(json!({"order": order, "posts": by_id, "next_post_id": "", "prev_post_id": "", "has_next": false}))
}

async fn double(mattermost_too: bool) -> (String, Arc<Asked>) {
    let asked = Arc::new(Asked::default());
    let data = web::Data::new(asked.clone());
    let server = HttpServer::new(move || {
        let app = App::new().app_data(data.clone());
        if mattermost_too {
            app.default_service(web::to(mattermost))
        } else {
            app.default_service(web::to(slack))
        }
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let port = server.addrs()[0].port();
    tokio::spawn(server.run());
    (format!("http://127.0.0.1:{port}"), asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_and_mattermost_channels_are_proposed_people_s_messages_in_the_window() {
    let (slack_base, slack_asked) = double(false).await;
    let (mm_base, mm_asked) = double(true).await;
    let mut slack = readable("incidents", ChatKind::Slack);
    slack.api_url = Some(slack_base.clone());
    slack.read_token = Some("xoxb-read".to_owned().into());
    slack.read_channel = Some("C1".into());
    let mut mm = readable("ops", ChatKind::Mattermost);
    mm.api_url = Some(mm_base.clone());
    mm.read_token = Some("mm-read".to_owned().into());
    mm.read_channel = Some("ch1".into());
    let post_only = readable("announce", ChatKind::Slack);
    let app = spawn_app_with(move |s| s.chat.channels = vec![slack, mm, post_only]).await;
    let admin = app.admin_token();
    let id = draft(&app, &admin).await;
    let window = "from=2026-12-01T10:00:00Z&to=2026-12-01T11:00:00Z";

    // Slack: two pages, a 429 first (said, with the wait), people only, links kept.
    *slack_asked.slow_down.lock().expect("lock") = true;
    let (status, body) = proposed(&app, &admin, &id, &format!("channel=incidents&{window}")).await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body.to_string().contains("try again in 3 seconds"),
        "{body}"
    );
    let (status, body) = proposed(&app, &admin, &id, &format!("channel=incidents&{window}")).await;
    assert_eq!(status, 200, "{body}");
    let said: Vec<(String, String, String)> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["at"].as_str().unwrap_or_default().to_owned(),
                m["author"].as_str().unwrap_or_default().to_owned(),
                m["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            (
                "2026-12-01T10:01:00Z".into(),
                "Ana Lima".into(),
                "Seeing 500s on checkout (https://grafana.example.com/d/co)".into()
            ),
            (
                "2026-12-01T10:02:00Z".into(),
                "Bo Chen".into(),
                "@Ana Lima rolling back the deploy".into()
            ),
            (
                "2026-12-01T10:05:00Z".into(),
                "Ana Lima".into(),
                "Errors back to 0 & steady".into()
            ),
        ],
        "{body}"
    );
    let pages = slack_asked
        .got
        .lock()
        .expect("lock")
        .iter()
        .filter(|(p, _)| p.starts_with("/conversations.history"))
        .count();
    assert_eq!(pages, 1 + 3, "a refused try, then three pages of two");
    // A channel the bot is not in: Slack's reason.
    let (status, body) = proposed(
        &app,
        &admin,
        &id,
        &format!("channel=incidents&conversation=C2&{window}"),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert!(body.to_string().contains("not_in_channel"), "{body}");

    // Mattermost: back to the window's start; no system, webhook or deleted posts.
    let (status, body) = proposed(&app, &admin, &id, &format!("channel=ops&{window}")).await;
    assert_eq!(status, 200, "{body}");
    let texts: Vec<String> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            format!(
                "{} {}: {}",
                m["at"].as_str().unwrap_or_default(),
                m["author"].as_str().unwrap_or_default(),
                m["text"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            "2026-12-01T10:01:00Z ana.lima: Checkout failing, see https://grafana.example.com/d/co",
            "2026-12-01T10:02:00Z bo: Rolled back",
        ]
    );
    assert!(mm_asked.got.lock().expect("lock").iter().any(|(p, a)| p
        == "/api/v4/channels/ch1/posts?page=0&per_page=200"
        && a == "Bearer mm-read"));
    let (status, body) = proposed(
        &app,
        &admin,
        &id,
        &format!("channel=ops&conversation=nope&{window}"),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body.to_string()
            .contains("Unable to find the existing channel"),
        "{body}"
    );

    // Bad asks.
    let (status, body) = proposed(&app, &admin, &id, &format!("channel=announce&{window}")).await;
    assert_eq!(status, 422, "a channel coe only posts to: {body}");
    assert_eq!(body["error"]["fields"][0]["field"], "channel", "{body}");
    let (status, body) = proposed(&app, &admin, &id, "channel=ops&from=yesterday").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "from", "{body}");
    let (status, body) = proposed(
        &app,
        &admin,
        &id,
        "channel=ops&from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z",
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = proposed(&app, &admin, &id, "channel=ops&colour=red").await;
    assert!(status == 400 || status == 422, "{status}");
    let (status, _) = proposed(
        &app,
        &admin,
        "00000000-0000-0000-0000-000000000000",
        "channel=ops",
    )
    .await;
    assert_eq!(status, 404);
    // Its owner (not an admin) reads the channel the settings give, and no other,
    // near the COE's incident (its start and resolution, as written in its timeline).
    let owner = crate::actions::person_token(&app, "owner", "admin@example.com");
    milestone(&app, &owner, &id, "started", "2026-12-01T10:00:00Z").await;
    milestone(&app, &owner, &id, "resolved", "2026-12-01T10:30:00Z").await;
    let (status, _) = proposed(&app, &owner, &id, &format!("channel=ops&{window}")).await;
    assert_eq!(status, 200);
    let (status, body) = proposed(
        &app,
        &owner,
        &id,
        &format!("channel=ops&conversation=town-square&{window}"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let other = crate::actions::person_token(&app, "eve", "eve@example.com");
    let (status, _) = proposed(&app, &other, &id, &format!("channel=ops&{window}")).await;
    assert_eq!(status, 403, "not the COE's owner");
    let res = app
        .client
        .get(app.url(&format!("/api/v1/coes/{id}/chat-messages?channel=ops")))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 401);
    // Nothing was added by reading.
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert!(
        doc["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .all(|e| e["source"].is_null()),
        "{doc}"
    );
}

/// A person writes in the Matrix room (real Synapse); the bot's own notices are left
/// out; in Chromium the owner reads the room from the draft and adds two of three
/// messages to the timeline, with their times and authors (screenshots
/// `chat-import-proposed`, `chat-import-added`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_room_s_messages_are_proposed_and_a_chosen_few_imported() {
    let synapse = Synapse::start();
    let mut matrix = readable("war-room", ChatKind::Matrix);
    matrix.url = None;
    matrix.homeserver = Some(synapse.base.clone());
    matrix.room_id = Some(synapse.room_id.clone());
    matrix.access_token = Some(synapse.bot_token.clone().into());
    let app = spawn_app_with(move |s| s.chat.channels = vec![matrix]).await;
    let admin = app.admin_token();
    crate::leaving::set_admin(&app, &admin, "admin@example.com", true).await;
    let id = draft(&app, &admin).await;

    let client = reqwest::Client::new();
    let room: String = form_urlencoded::byte_serialize(synapse.room_id.as_bytes()).collect();
    let whoami: Value = client
        .get(format!("{}/_matrix/client/v3/account/whoami", synapse.base))
        .bearer_auth(&synapse.reader_token)
        .send()
        .await
        .expect("whoami")
        .json()
        .await
        .expect("json");
    let reader = whoami["user_id"].as_str().expect("user").to_owned();
    let user: String = form_urlencoded::byte_serialize(reader.as_bytes()).collect();
    let res = client
        .put(format!(
            "{}/_matrix/client/v3/profile/{user}/displayname",
            synapse.base
        ))
        .bearer_auth(&synapse.reader_token)
        .json(&json!({"displayname": "Ana Lima"}))
        .send()
        .await
        .expect("name");
    assert!(res.status().is_success());
    let say = |token: String, txn: String, content: Value| {
        let url = format!(
            "{}/_matrix/client/v3/rooms/{room}/send/m.room.message/{txn}",
            synapse.base
        );
        let client = client.clone();
        async move {
            let res = client
                .put(url)
                .bearer_auth(token)
                .json(&content)
                .send()
                .await
                .expect("said");
            assert!(res.status().is_success(), "{}", res.status());
        }
    };
    say(synapse.reader_token.clone(), "t1".into(), json!({"msgtype": "m.text", "body": "Checkout is failing: https://grafana.example.com/d/co"})).await;
    say(
        synapse.bot_token.clone(),
        "t2".into(),
        json!({"msgtype": "m.notice", "body": "COE opened: Checkout errors"}),
    )
    .await;
    say(
        synapse.reader_token.clone(),
        "t3".into(),
        json!({"msgtype": "m.text", "body": "Rolling back 4.2"}),
    )
    .await;
    say(
        synapse.reader_token.clone(),
        "t4".into(),
        json!({"msgtype": "m.text", "body": "lunch?"}),
    )
    .await;

    // By the API: the three people's messages, the bot's notice left out.
    let (status, body) = proposed(&app, &admin, &id, "channel=war-room").await;
    assert_eq!(status, 200, "{body}");
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Checkout is failing: https://grafana.example.com/d/co",
            "Rolling back 4.2",
            "lunch?"
        ],
        "{body}"
    );
    assert!(
        body["messages"]
            .as_array()
            .expect("m")
            .iter()
            .all(|m| m["author"] == "Ana Lima"),
        "{body}"
    );

    // In the browser: two of three ticked and added.
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "admin@example.com", &format!("/coes/{id}")).await;
    browser.wait_for_heading("sev2 Checkout errors").await;
    browser.click_to_load("#import-from-chat").await;
    browser.wait_for_heading("Import from chat").await;
    browser
        .click_to_load("#import-pick button[type=submit]")
        .await;
    browser.wait_for_heading("Import from chat").await;
    let list = browser.text("#import-choose").await;
    assert!(
        list.contains("3 messages") && list.contains("Ana Lima: Rolling back 4.2"),
        "{list}"
    );
    assert!(!list.contains("COE opened"), "{list}");
    browser.click("#keep-0").await;
    browser.click("#keep-1").await;
    browser.screenshot("chat-import-proposed").await;
    crate::html::assert_accessible_now(&browser).await;
    browser
        .click_to_load("#import-choose button[type=submit]")
        .await;
    browser.wait_for_heading("sev2 Checkout errors").await;
    let timeline = browser.text("#part-timeline").await;
    assert!(
        timeline.contains("Ana Lima: Checkout is failing: https://grafana.example.com/d/co")
            && timeline.contains("Ana Lima: Rolling back 4.2"),
        "{timeline}"
    );
    assert!(!timeline.contains("lunch?"), "{timeline}");
    browser
        .eval("document.getElementById('part-timeline').scrollIntoView(); return 1")
        .await;
    browser.screenshot("chat-import-added").await;
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let entries = doc["timeline"].as_array().expect("timeline");
    assert_eq!(entries.len(), 2, "{doc}");
    assert!(
        entries
            .iter()
            .all(|e| e["kind"] == "note" && e["source"] == "chat:war-room"),
        "{doc}"
    );
    let said_at = body["messages"][1]["at"].as_str().expect("at");
    assert_eq!(
        entries[1]["at"].as_str().expect("at")[..19],
        said_at[..19],
        "the time it was said"
    );
    // Nothing ticked: said so, nothing added.
    browser
        .goto(&app.url(&format!("/coes/{id}/import?channel=war-room")))
        .await;
    browser.wait_for_heading("Import from chat").await;
    browser
        .click_to_load("#import-choose button[type=submit]")
        .await;
    let problem = browser.text("#import-problem").await;
    assert!(problem.contains("tick the messages"), "{problem}");
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(doc["timeline"].as_array().expect("timeline").len(), 2);
}

/// Two Slack channels read by one double (`C1`): the security team's and the
/// payments team's, each limited to its team.
fn team_channels(base: &str) -> Vec<ChannelSettings> {
    ["sec-incidents:security", "payments-incidents:payments"]
        .into_iter()
        .map(|spec| {
            let (name, team) = spec.split_once(':').expect("name:team");
            let mut c = readable(name, ChatKind::Slack);
            c.api_url = Some(base.to_owned());
            c.read_token = Some("xoxb-read".to_owned().into());
            c.read_channel = Some("C1".into());
            c.teams = vec![team.to_owned()];
            c
        })
        .collect()
}

/// An app with the two team channels; maria (payments) owns a draft whose incident
/// started 2026-12-01 10:00 and was resolved at 10:30 (its timeline says so). The
/// app, an admin token, maria's token and her draft's id.
async fn marias_draft() -> (TestApp, String, String, String) {
    let (base, _asked) = double(false).await;
    let channels = team_channels(&base);
    let app = spawn_app_with(move |s| s.chat.channels = channels).await;
    let admin = app.admin_token();
    crate::chat::person(&app, &admin, "maria@example.com", "payments").await;
    crate::chat::person(&app, &admin, "sam@example.com", "security").await;
    let maria = crate::actions::person_token(&app, "maria", "maria@example.com");
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(&maria),
            &json!({"title": "Card payments declined", "owner": "maria@example.com", "severity": "sev2"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let doc: Value = res.json().await.expect("json");
    let id = doc["id"].as_str().expect("id").to_owned();
    milestone(&app, &maria, &id, "started", "2026-12-01T10:00:00Z").await;
    milestone(&app, &maria, &id, "resolved", "2026-12-01T10:30:00Z").await;
    (app, admin, maria, id)
}

const NEAR: &str = "from=2026-12-01T10:00:00Z&to=2026-12-01T11:00:00Z";

/// The values of the page's `keep` boxes: the keys of the messages proposed.
fn keys_in(html: &str) -> Vec<String> {
    html.split("name=\"keep\" value=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_read_another_team_s_channel_into_her_own_draft() {
    let (app, admin, maria, id) = marias_draft().await;

    // The API: the security team's channel is refused, her team's is read.
    let (status, body) =
        proposed(&app, &maria, &id, &format!("channel=sec-incidents&{NEAR}")).await;
    assert_eq!(status, 403, "{body}");
    let said = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("sec-incidents") && said.contains("only an admin"),
        "{body}"
    );
    let (status, body) = proposed(
        &app,
        &maria,
        &id,
        &format!("channel=payments-incidents&{NEAR}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3), "{body}");
    // An admin reads it into her COE (marked in the history as beyond its scope).
    let (status, body) =
        proposed(&app, &admin, &id, &format!("channel=sec-incidents&{NEAR}")).await;
    assert_eq!(status, 200, "{body}");

    // The page: not offered to her, and refused when asked for by name.
    let cookie = crate::pages::sign_in(&app, "maria@example.com").await;
    let res = crate::pages::get_page(&app, &format!("/coes/{id}/import"), Some(&cookie)).await;
    assert_eq!(res.status(), 200);
    let html = res.text().await.expect("html");
    assert!(html.contains("payments-incidents"), "{html}");
    assert!(!html.contains("sec-incidents"), "{html}");
    let res = crate::pages::get_page(
        &app,
        &format!("/coes/{id}/import?channel=sec-incidents&from=2026-12-01T10:00:00&to=2026-12-01T11:00:00"),
        Some(&cookie),
    )
    .await;
    assert_eq!(res.status(), 403);
    let html = res.text().await.expect("html");
    assert!(html.contains("only an admin"), "{html}");
    assert!(!html.contains("rolling back"), "{html}");
    // "Import from chat" shows on her draft (her team has a channel), not on the draft
    // of someone whose team has none.
    let page = crate::pages::get_page(&app, &format!("/coes/{id}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(page.contains("id=\"import-from-chat\""), "{page}");
    crate::chat::person(&app, &admin, "lee@example.com", "search").await;
    let lee = crate::actions::person_token(&app, "lee", "lee@example.com");
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(&lee),
            &json!({"title": "Search slow", "owner": "lee@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let doc: Value = res.json().await.expect("json");
    let lees = doc["id"].as_str().expect("id");
    let lee_cookie = crate::pages::sign_in(&app, "lee@example.com").await;
    let page = crate::pages::get_page(&app, &format!("/coes/{lees}"), Some(&lee_cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(page.contains("Search slow"), "{page}");
    assert!(!page.contains("id=\"import-from-chat\""), "{page}");
    // In its place, where it would be used: why not, and who can connect a channel.
    let hint = crate::html::text_of(&page, "import-from-chat-missing");
    assert!(
        hint.contains("no chat channel this COE may read is connected yet")
            && hint.contains("there is no admin in the directory yet"),
        "{hint}"
    );
    crate::chat::person(&app, &admin, "ada@example.com", "platform").await;
    crate::leaving::set_admin(&app, &admin, "ada@example.com", true).await;
    let page = crate::pages::get_page(&app, &format!("/coes/{lees}"), Some(&lee_cookie))
        .await
        .text()
        .await
        .expect("html");
    let hint = crate::html::text_of(&page, "import-from-chat-missing");
    assert!(
        hint.contains("An admin connects one (ada@example.com)"),
        "{hint}"
    );
    // An admin reads any readable channel into any COE: offered to her.
    let ada = crate::pages::sign_in(&app, "ada@example.com").await;
    let page = crate::pages::get_page(&app, &format!("/coes/{lees}"), Some(&ada))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        page.contains("id=\"import-from-chat\"") && !page.contains("import-from-chat-missing"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_read_a_window_far_from_her_coe_s_incident() {
    let (app, admin, maria, id) = marias_draft().await;
    // Ten days before her incident: refused, the span named.
    let far = "from=2026-11-21T10:00:00Z&to=2026-11-22T10:00:00Z";
    let (status, body) = proposed(
        &app,
        &maria,
        &id,
        &format!("channel=payments-incidents&{far}"),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let field = &body["error"]["fields"][0];
    assert_eq!(field["field"], "from", "{body}");
    let problem = field["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("2026-11-30 10:00 UTC") && problem.contains("2026-12-02 10:30 UTC"),
        "{body}"
    );
    // Running on past her incident's resolution by more than a day: `to` is named.
    let late = "from=2026-12-01T10:00:00Z&to=2026-12-04T10:00:00Z";
    let (status, body) = proposed(
        &app,
        &maria,
        &id,
        &format!("channel=payments-incidents&{late}"),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "to", "{body}");
    // The page says so too.
    let cookie = crate::pages::sign_in(&app, "maria@example.com").await;
    let res = crate::pages::get_page(
        &app,
        &format!("/coes/{id}/import?channel=payments-incidents&from=2026-11-21T10:00:00&to=2026-11-22T10:00:00"),
        Some(&cookie),
    )
    .await;
    assert_eq!(res.status(), 422);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("from: must be between"));
    // An admin may read any window (of at most 14 days).
    let (status, body) = proposed(
        &app,
        &admin,
        &id,
        &format!("channel=payments-incidents&{far}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = proposed(
        &app,
        &admin,
        &id,
        "channel=payments-incidents&from=2026-11-01T00:00:00Z&to=2026-11-20T00:00:00Z",
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "to", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_a_channel_is_written_in_the_coe_s_history() {
    let (app, admin, maria, id) = marias_draft().await;
    let (status, body) = proposed(
        &app,
        &maria,
        &id,
        &format!("channel=payments-incidents&{NEAR}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = proposed(&app, &admin, &id, &format!("channel=sec-incidents&{NEAR}")).await;
    assert_eq!(status, 200);
    // A refused read reads nothing and writes nothing.
    let (status, _) = proposed(&app, &maria, &id, &format!("channel=sec-incidents&{NEAR}")).await;
    assert_eq!(status, 403);

    let history = app
        .get_json(&format!("/api/v1/coes/{id}/history"), &admin)
        .await;
    let reads: Vec<&Value> = history["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|h| h["action"] == "chat:read")
        .collect();
    assert_eq!(reads.len(), 2, "{history}");
    assert_eq!(
        reads[0]["after"],
        json!({"channel": "payments-incidents", "conversation": null,
               "from": "2026-12-01T10:00:00Z", "to": "2026-12-01T11:00:00Z",
               "messages": 3, "ours": true}),
        "{history}"
    );
    assert_eq!(reads[1]["after"]["channel"], "sec-incidents");
    assert_eq!(reads[1]["after"]["ours"], false);
    // Who read, and never what was said.
    assert!(
        reads[0]["actor"]
            .as_str()
            .unwrap_or_default()
            .contains("maria"),
        "{history}"
    );
    assert!(!history.to_string().contains("rolling back"), "{history}");

    // The history page says it in words.
    let cookie = crate::pages::sign_in(&app, "maria@example.com").await;
    let html = crate::pages::get_page(&app, &format!("/coes/{id}/history"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains(
            "read 3 messages of #payments-incidents from 2026-12-01 10:00 UTC to 2026-12-01 11:00 UTC"
        ),
        "{html}"
    );
    assert!(
        html.contains("read 3 messages of #sec-incidents from 2026-12-01 10:00 UTC to 2026-12-01 11:00 UTC (a channel outside its team and service)"),
        "{html}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_author_posted_back_to_the_import_form_is_not_what_lands_in_the_timeline() {
    let (app, admin, _maria, id) = marias_draft().await;
    let cookie = crate::pages::sign_in(&app, "maria@example.com").await;
    let page = format!(
        "/coes/{id}/import?channel=payments-incidents&from=2026-12-01T10:00:00&to=2026-12-01T11:00:00"
    );
    let res = crate::pages::get_page(&app, &page, Some(&cookie)).await;
    assert_eq!(res.status(), 200);
    let html = res.text().await.expect("html");
    let keys = keys_in(&html);
    assert_eq!(keys.len(), 3, "{html}");
    let csrf = crate::pages::csrf_of(&html);
    let post = |fields: Vec<(&'static str, String)>| {
        let (app, cookie, csrf, id) = (&app, cookie.clone(), csrf.clone(), id.clone());
        async move {
            let mut form = vec![
                ("csrf", csrf),
                ("channel", "payments-incidents".to_owned()),
                ("from", "2026-12-01T10:00:00".to_owned()),
                ("to", "2026-12-01T11:00:00".to_owned()),
            ];
            form.extend(fields);
            crate::pages::browser()
                .post(app.url(&format!("/coes/{id}/import")))
                .header(reqwest::header::COOKIE, cookie)
                .form(&form)
                .send()
                .await
                .expect("sent")
        }
    };

    // The old form's fields, forged: a message Ana never wrote, under Sam's name.
    let forged = post(vec![
        ("keep", keys[0].clone()),
        ("author0", "sam@example.com".into()),
        ("at0", "2026-12-01T10:01:00Z".into()),
        ("text0", "Maria did nothing wrong".into()),
    ])
    .await;
    assert_eq!(forged.status(), 303);
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let imported: Vec<&Value> = doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|e| e["source"] == "chat:payments-incidents")
        .collect();
    assert_eq!(imported.len(), 1, "{doc}");
    assert_eq!(
        imported[0]["text"], "Ana Lima: Seeing 500s on checkout (https://grafana.example.com/d/co)",
        "{doc}"
    );
    assert!(imported[0]["at"]
        .as_str()
        .unwrap_or_default()
        .starts_with("2026-12-01T10:01:00"));
    assert!(!doc.to_string().contains("did nothing wrong"), "{doc}");

    // A key of a message the platform never said: told, nothing added.
    let made_up = format!("{:032x}", 7);
    let res = post(vec![("keep", made_up), ("keep", keys[1].clone())]).await;
    assert_eq!(res.status(), 422);
    let html = res.text().await.expect("html");
    assert!(
        html.contains("1 of the ticked messages is no longer in the channel"),
        "{html}"
    );
    assert!(html.contains("Bo Chen"), "the channel as it is now: {html}");
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    let imported = doc["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|e| e["source"] == "chat:payments-incidents")
        .count();
    assert_eq!(imported, 1, "nothing added: {doc}");
    // Posting back the security team's channel is refused as reading it is.
    let res = post(vec![("keep", keys[1].clone())]).await;
    assert_eq!(res.status(), 303, "her own channel still imports");
    let res = crate::pages::browser()
        .post(app.url(&format!("/coes/{id}/import")))
        .header(reqwest::header::COOKIE, cookie.clone())
        .form(&[
            ("csrf", csrf.as_str()),
            ("channel", "sec-incidents"),
            ("from", "2026-12-01T10:00:00"),
            ("to", "2026-12-01T11:00:00"),
            ("keep", keys[2].as_str()),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 403);
}
