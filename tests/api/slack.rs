//! Work from Slack (issue 67): `/coe report`, `/coe follow-up`, `/coe mine` and the
//! buttons of its messages, against a loopback Slack that answers as Slack's Web API is
//! published (`users.info`, `views.open` with an expired trigger and a 429) and takes
//! what coe says through `response_url`; every request signed as Slack signs
//! (tests/fixtures/slack).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use coe::config::{ChannelSettings, ChatEvent, ChatKind};
use serde_json::{json, Value};

use crate::actions::World;
use crate::eventually::eventually_async;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// What the loopback Slack was asked and told.
#[derive(Default)]
struct Slack {
    views: Mutex<Vec<Value>>,
    responses: Mutex<Vec<Value>>,
    /// `chat.postMessage` bodies.
    posted: Mutex<Vec<Value>>,
    /// The channels `conversations.history` was asked for.
    read: Mutex<Vec<String>>,
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/slack/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON")
}

/// Slack users, and the email their profile has.
fn email_of(user: &str) -> Option<&'static str> {
    match user {
        "U_OWNER" => Some("owner@example.com"),
        "U_DEV" => Some("dev@example.com"),
        "U_REV" => Some("reviewer@example.com"),
        "U_OUT" => Some("someone@elsewhere.example.org"),
        _ => None,
    }
}

/// A query parameter, decoded.
fn query(req: &HttpRequest, name: &str) -> String {
    serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
        .unwrap_or_default()
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_default()
}

async fn slack(req: HttpRequest, body: web::Bytes, asked: web::Data<Arc<Slack>>) -> HttpResponse {
    let path = req.path().to_owned();
    if let Some(n) = path.strip_prefix("/respond/") {
        let mut said: Value = serde_json::from_slice(&body).expect("JSON");
        said["_url"] = json!(n);
        asked.responses.lock().expect("lock").push(said);
        return HttpResponse::Ok().body("ok");
    }
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if auth != "Bearer xoxb-app" {
        return HttpResponse::Ok().json(json!({"ok": false, "error": "invalid_auth"}));
    }
    match path.as_str() {
        "/api/users.info" => {
            let user = query(&req, "user");
            let mut answer = fixture("users_info.json");
            answer["user"]["id"] = json!(user);
            match email_of(&user) {
                Some(email) => answer["user"]["profile"]["email"] = json!(email),
                None => {
                    answer["user"]["profile"]
                        .as_object_mut()
                        .expect("profile")
                        .remove("email");
                }
            }
            HttpResponse::Ok().json(answer)
        }
        "/api/users.lookupByEmail" => {
            let email = query(&req, "email");
            let users = ["U_OWNER", "U_DEV", "U_REV", "U_OUT"];
            match users
                .into_iter()
                .find(|u| email_of(u) == Some(email.as_str()))
            {
                Some(user) => {
                    let mut answer = fixture("users_info.json");
                    answer["user"]["id"] = json!(user);
                    answer["user"]["profile"]["email"] = json!(email);
                    HttpResponse::Ok().json(answer)
                }
                None => HttpResponse::Ok().json(json!({"ok": false, "error": "users_not_found"})),
            }
        }
        "/api/conversations.history" => {
            let channel = query(&req, "channel");
            asked.read.lock().expect("lock").push(channel);
            HttpResponse::Ok().json(json!({"ok": true, "messages": [], "has_more": false}))
        }
        "/api/chat.postMessage" => {
            let message: Value = serde_json::from_slice(&body).expect("JSON");
            let channel = message["channel"].clone();
            asked.posted.lock().expect("lock").push(message);
            HttpResponse::Ok()
                .json(json!({"ok": true, "channel": channel, "ts": "1700000000.000100"}))
        }
        "/api/views.open" => {
            let asked_for: Value = serde_json::from_slice(&body).expect("JSON");
            match asked_for["trigger_id"].as_str() {
                Some("expired") => {
                    HttpResponse::Ok().json(json!({"ok": false, "error": "expired_trigger_id"}))
                }
                Some("busy") => HttpResponse::TooManyRequests()
                    .insert_header(("retry-after", "30"))
                    .finish(),
                _ => {
                    asked
                        .views
                        .lock()
                        .expect("lock")
                        .push(asked_for["view"].clone());
                    HttpResponse::Ok().json(json!({"ok": true, "view": {"id": "V1"}}))
                }
            }
        }
        _ => HttpResponse::Ok().json(json!({"ok": false, "error": "unknown_method"})),
    }
}

async fn double() -> (String, Arc<Slack>) {
    let asked = Arc::new(Slack::default());
    let data = web::Data::new(asked.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(slack))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let port = server.addrs()[0].port();
    tokio::spawn(server.run());
    (format!("http://127.0.0.1:{port}"), asked)
}

fn app_channel(base: &str) -> ChannelSettings {
    ChannelSettings {
        name: "incidents".into(),
        kind: ChatKind::Slack,
        url: Some(format!("{base}/hooks/unused").into()),
        homeserver: None,
        room_id: None,
        access_token: None,
        page_id: None,
        api_url: Some(format!("{base}/api")),
        read_token: Some("xoxb-app".to_owned().into()),
        read_channel: None,
        signing_secret: Some(SECRET.to_owned().into()),
        people_domain: None,
        app_id: None,
        app_password: None,
        tenant_id: None,
        teams: Vec::new(),
        services: Vec::new(),
        events: vec![ChatEvent::Review],
    }
}

struct Client<'a> {
    w: &'a World,
    base: String,
    asked: Arc<Slack>,
    /// Makes each request's timestamp (and so its signature) its own.
    n: Mutex<i64>,
}

impl Client<'_> {
    fn stamp(&self) -> String {
        let mut n = self.n.lock().expect("lock");
        *n += 1;
        (chrono::Utc::now().timestamp() - 60 + *n).to_string()
    }

    async fn post_signed(
        &self,
        path: &str,
        body: &str,
        stamp: &str,
        signature: &str,
    ) -> (u16, Value) {
        let res = self
            .w
            .app
            .client
            .post(self.w.app.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-slack-request-timestamp", stamp)
            .header("x-slack-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .expect("sent");
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: &str) -> (u16, Value) {
        let stamp = self.stamp();
        let signature = coe::chat::slack::sign(SECRET, &stamp, body.as_bytes());
        self.post_signed(path, body, &stamp, &signature).await
    }

    /// `/coe <text>` typed by `user` in `channel`.
    async fn command(&self, user: &str, channel: &str, text: &str, trigger: &str) -> (u16, Value) {
        let body = serde_urlencoded::to_string([
            ("token", "gIkuvaNzQIHg97ATvDxqgjtO"),
            ("team_id", "T0001"),
            ("channel_id", channel),
            (
                "channel_name",
                if channel.starts_with('D') {
                    "directmessage"
                } else {
                    "inc-checkout"
                },
            ),
            ("user_id", user),
            ("command", "/coe"),
            ("text", text),
            (
                "response_url",
                &format!("{}/respond/command-{trigger}", self.base),
            ),
            ("trigger_id", trigger),
        ])
        .expect("form");
        self.post("/chat/slack/commands", &body).await
    }

    async fn interact(&self, payload: &Value) -> (u16, Value) {
        let body = serde_urlencoded::to_string([("payload", payload.to_string())]).expect("form");
        self.post("/chat/slack/interactions", &body).await
    }

    /// `user` presses button `action_id` (on an action `value`) of a message.
    async fn press(
        &self,
        user: &str,
        action_id: &str,
        value: &str,
        trigger: &str,
        ts: &str,
    ) -> (u16, Value) {
        let mut p = fixture("block_actions.json");
        p["user"]["id"] = json!(user);
        p["trigger_id"] = json!(trigger);
        p["response_url"] = json!(format!("{}/respond/press-{ts}", self.base));
        p["actions"][0]["action_id"] = json!(action_id);
        p["actions"][0]["value"] = json!(value);
        p["actions"][0]["action_ts"] = json!(ts);
        self.interact(&p).await
    }

    /// `user` submits `view` (as coe opened it) with `values` by block.
    async fn submit(&self, user: &str, view: &Value, view_id: &str, values: Value) -> (u16, Value) {
        let mut p = fixture("view_submission.json");
        p["user"]["id"] = json!(user);
        p["view"]["id"] = json!(view_id);
        p["view"]["callback_id"] = view["callback_id"].clone();
        p["view"]["private_metadata"] = view["private_metadata"].clone();
        p["view"]["state"]["values"] = values;
        self.interact(&p).await
    }

    fn last_view(&self) -> Value {
        self.asked
            .views
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .expect("a view opened")
    }

    fn views(&self) -> usize {
        self.asked.views.lock().expect("lock").len()
    }

    /// What coe said through response URL `url`, once it has.
    async fn said_at(&self, url: &str) -> Value {
        let asked = self.asked.clone();
        let url = url.to_owned();
        eventually_async(
            Duration::from_secs(20),
            "coe answers through response_url",
            || {
                let found = asked
                    .responses
                    .lock()
                    .expect("lock")
                    .iter()
                    .rev()
                    .find(|r| r["_url"] == url)
                    .cloned();
                async move { found }
            },
        )
        .await
    }
}

fn text(v: &str) -> Value {
    json!({"a": {"type": "plain_text_input", "value": v}})
}

fn picked(v: &str) -> Value {
    json!({"a": {"type": "static_select", "selected_option": {"value": v}}})
}

fn words(message: &Value) -> String {
    message.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_reported_followed_up_done_and_verified_from_slack() {
    let (base, asked) = double().await;
    let channel = app_channel(&base);
    let (w, _admin) = crate::attacks::review_world_with(move |s| {
        s.chat.channels = vec![channel];
        s.server.connections_on_loopback = true;
    })
    .await;
    let (submitted, _) = crate::mechanism::submitted_sev1(&w).await;
    let slack = Client {
        w: &w,
        base: base.clone(),
        asked,
        n: Mutex::new(0),
    };
    // /coe link: the incident channel hears the COE's review steps from the app.
    let (status, said) = slack
        .command(
            "U_OWNER",
            "C_LINKED",
            &format!("link {}/coes/{submitted}", w.app.address),
            "t-link",
        )
        .await;
    assert_eq!(status, 200);
    assert!(words(&said).contains("now linked to the COE"), "{said}");
    let (approved, action) = crate::attacks::approve_sev1(&w, submitted).await;
    crate::chat::deliver_with(&w.app, w.app.runtime.env());
    let posted = slack.asked.posted.lock().expect("lock").clone();
    assert!(
        posted
            .iter()
            .any(|m| m["channel"] == "C_LINKED" && m.to_string().contains("COE approved")),
        "the linked channel hears the approval: {posted:?}"
    );

    // Only Slack's signature is taken: none, a forged one, a stale one, a replay.
    let body = "command=%2Fcoe&text=mine&user_id=U_OWNER&channel_id=C_INC";
    let (status, said) = slack
        .post_signed("/chat/slack/commands", body, "1", "v0=00")
        .await;
    assert_eq!(status, 401, "{said}");
    let stamp = slack.stamp();
    let forged = coe::chat::slack::sign("not-the-secret", &stamp, body.as_bytes());
    assert_eq!(
        slack
            .post_signed("/chat/slack/commands", body, &stamp, &forged)
            .await
            .0,
        401
    );
    let old = (chrono::Utc::now().timestamp() - 600).to_string();
    let stale = coe::chat::slack::sign(SECRET, &old, body.as_bytes());
    let (status, said) = slack
        .post_signed("/chat/slack/commands", body, &old, &stale)
        .await;
    assert_eq!(status, 401);
    assert!(words(&said).contains("five minutes"), "{said}");
    let good = coe::chat::slack::sign(SECRET, &stamp, body.as_bytes());
    assert_eq!(
        slack
            .post_signed("/chat/slack/commands", body, &stamp, &good)
            .await
            .0,
        200
    );
    let (status, said) = slack
        .post_signed("/chat/slack/commands", body, &stamp, &good)
        .await;
    assert_eq!(status, 401, "a replay is refused");
    let shouted = good.to_uppercase().replacen("V0=", "v0=", 1);
    let (status, _) = slack
        .post_signed("/chat/slack/commands", body, &stamp, &shouted)
        .await;
    assert_eq!(
        status, 401,
        "a replay written in capitals is the same request"
    );
    assert!(words(&said).contains("replay"), "{said}");

    // Someone Slack knows but coe's directory does not: told privately, nothing changes.
    let (status, said) = slack.command("U_OUT", "C_INC", "report", "t-out").await;
    assert_eq!(status, 200);
    assert_eq!(said["response_type"], "ephemeral");
    assert!(words(&said).contains("not in coe's directory"), "{said}");
    let (_, said) = slack.command("U_NOMAIL", "C_INC", "mine", "t-nomail").await;
    assert!(words(&said).contains("ask an admin"), "{said}");
    assert_eq!(slack.views(), 0, "no form opened for them");

    // /coe report: the form opens; a trigger used too late, or Slack busy, is said.
    let (status, said) = slack.command("U_OWNER", "C_INC", "report", "expired").await;
    assert_eq!(status, 200);
    assert!(words(&said).contains("took too long"), "{said}");
    let (_, said) = slack.command("U_OWNER", "C_INC", "report", "busy").await;
    assert!(words(&said).contains("slow down"), "{said}");
    let (status, said) = slack
        .command("U_OWNER", "C_INC", "report", "t-report")
        .await;
    assert_eq!(
        (status, said),
        (200, Value::Null),
        "answered with nothing: the form opens"
    );
    let report = slack.last_view();
    assert_eq!(report["callback_id"], "report");

    // A report without its severity stays open, the problem under its field; nothing filed.
    let started = chrono::Utc::now().timestamp() - 1800;
    let mut values = json!({
        "title": text("Checkout answers 502 to card payments"),
        "service": text("checkout"),
        "started_at": {"a": {"type": "datetimepicker", "selected_date_time": started}},
        "customers_saw": text("Card payments failed at checkout."),
    });
    let (status, said) = slack
        .submit("U_OWNER", &report, "V-report", values.clone())
        .await;
    assert_eq!(status, 200);
    assert_eq!(said["response_action"], "errors", "{said}");
    assert!(said["errors"]["severity"].is_string(), "{said}");
    let listed = w.app.get_json("/api/v1/coes?limit=100", &w.owner).await;
    assert!(
        !words(&listed).contains("502 to card payments"),
        "nothing filed: {listed}"
    );
    values["severity"] = picked("sev2");
    let (_, said) = slack
        .submit("U_OWNER", &report, "V-report", values.clone())
        .await;
    assert_eq!(said["response_action"], "update", "{said}");
    assert!(words(&said).contains("Open the COE"), "{said}");
    // The channel is told, and linked to the COE.
    let told = slack.said_at("command-t-report").await;
    assert_eq!(told["response_type"], "in_channel", "{told}");
    assert!(
        words(&told).contains("owner@example.com reported a failure"),
        "{told}"
    );
    // Slack delivering the submission again files nothing twice.
    let (_, said) = slack.submit("U_OWNER", &report, "V-report", values).await;
    assert!(words(&said).contains("done already"), "{said}");
    let listed = w.app.get_json("/api/v1/coes?limit=100", &w.owner).await;
    let reported: Vec<&Value> = listed["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .filter(|c| c["title"] == "Checkout answers 502 to card payments")
        .collect();
    assert_eq!(reported.len(), 1, "{listed}");
    let coe = reported[0]["id"].as_str().expect("id").to_owned();
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}/history"), &w.owner)
        .await;
    assert!(
        history["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .any(|h| h["via"] == "slack"),
        "the report is in the history as from Slack: {history}"
    );

    // "Import from chat" reads the linked channel by default.
    let res = w
        .app
        .client
        .get(w.app.url(&format!(
            "/api/v1/coes/{coe}/chat-messages?channel=incidents"
        )))
        .bearer_auth(&w.owner)
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert_eq!(
        *slack.asked.read.lock().expect("lock"),
        vec!["C_INC".to_owned()]
    );

    // /coe follow-up: only in a linked channel; the form names the COE.
    let (_, said) = slack
        .command("U_OWNER", "C_OTHER", "follow-up", "t-f0")
        .await;
    assert!(words(&said).contains("not linked to a COE"), "{said}");
    slack.command("U_OWNER", "C_INC", "follow-up", "t-f1").await;
    let follow = slack.last_view();
    assert_eq!(follow["callback_id"], "follow_up");
    assert!(words(&follow).contains("Checkout answers 502"), "{follow}");
    let due = (chrono::Utc::now() + chrono::Duration::days(20))
        .date_naive()
        .to_string();
    let mut values = json!({
        "title": text("Alert on 5xx from the card gateway"),
        "owner": {"a": {"type": "users_select", "selected_user": "U_NOMAIL"}},
        "due_date": {"a": {"type": "datepicker", "selected_date": due}},
        "priority": picked("high"),
        "kind": picked("detect"),
        "success_criteria": text("A 502 burst pages within five minutes"),
    });
    let (_, said) = slack
        .submit("U_OWNER", &follow, "V-f1", values.clone())
        .await;
    assert!(said["errors"]["owner"].is_string(), "{said}");
    values["owner"] = json!({"a": {"type": "users_select", "selected_user": "U_DEV"}});
    let (_, said) = slack.submit("U_OWNER", &follow, "V-f1", values).await;
    assert!(words(&said).contains("owned by dev@example.com"), "{said}");
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}"), &w.owner)
        .await;
    assert_eq!(
        doc["actions"][0]["title"], "Alert on 5xx from the card gateway",
        "{doc}"
    );
    assert_eq!(doc["actions"][0]["owner"], "dev@example.com");

    // /coe mine: the owner's actions, each with its buttons, to them alone.
    let (_, mine) = slack.command("U_DEV", "D_DEV", "mine", "t-m1").await;
    assert_eq!(mine["response_type"], "ephemeral");
    let shown = words(&mine);
    assert!(shown.contains("Validate config in CI"), "{shown}");
    assert!(
        shown.contains(&format!("\"value\":\"{action}\"")),
        "{shown}"
    );
    assert!(
        shown.contains("coe_done") && shown.contains("coe_move_due"),
        "{shown}"
    );

    // Move the due date: the same date is no move; a new one with its reason is.
    slack
        .press("U_DEV", "coe_move_due", &action, "t-mv", "1.0")
        .await;
    let moving = slack.last_view();
    assert_eq!(moving["callback_id"], "move_due");
    let current = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await["due_date"]
        .as_str()
        .expect("due")
        .to_owned();
    let later = (chrono::NaiveDate::parse_from_str(&current, "%Y-%m-%d").expect("date")
        + chrono::Duration::days(7))
    .to_string();
    let (_, said) = slack
        .submit(
            "U_DEV",
            &moving,
            "V-mv",
            json!({"due_date": {"a": {"type": "datepicker", "selected_date": current}},
                   "reason": text("waiting on the CI team")}),
        )
        .await;
    assert!(
        said["errors"]["due_date"]
            .as_str()
            .unwrap_or_default()
            .contains("already"),
        "{said}"
    );
    let (_, said) = slack
        .submit(
            "U_DEV",
            &moving,
            "V-mv",
            json!({"due_date": {"a": {"type": "datepicker", "selected_date": later}},
                   "reason": text("waiting on the CI team")}),
        )
        .await;
    assert!(words(&said).contains(&format!("now due {later}")), "{said}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(a["due_date"], later.as_str(), "{a}");

    // Mark done: the form; without evidence it stays open and nothing changes.
    slack
        .press("U_DEV", "coe_done", &action, "t-d1", "1.1")
        .await;
    let done = slack.last_view();
    assert_eq!(done["callback_id"], "done");
    let (_, said) = slack
        .submit("U_DEV", &done, "V-d1", json!({"note": text("done")}))
        .await;
    assert_eq!(said["response_action"], "errors", "{said}");
    assert!(
        said["errors"]["evidence_url"]
            .as_str()
            .unwrap_or_default()
            .contains("evidence"),
        "{said}"
    );
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_ne!(a["state"], "done", "{a}");
    let (_, said) = slack
        .submit("U_DEV", &done, "V-d1", json!({
            "note": text("CI now validates every config change"),
            "evidence_url": {"a": {"type": "url_text_input", "value": "https://ci.example.com/runs/42"}},
        }))
        .await;
    assert!(
        words(&said).contains("marked done by dev@example.com"),
        "{said}"
    );
    let updated = slack.said_at("press-1.1").await;
    assert_eq!(updated["replace_original"], true, "{updated}");
    assert!(
        words(&updated).contains("marked done by dev@example.com"),
        "{updated}"
    );

    // The reviewer's list asks to verify it; someone else's press verifies nothing.
    let (_, mine) = slack.command("U_REV", "D_REV", "mine", "t-m2").await;
    assert!(words(&mine).contains("coe_verify"), "{mine}");
    slack
        .press("U_OWNER", "coe_verify", &action, "t-v0", "2.1")
        .await;
    let refused = slack.said_at("press-2.1").await;
    assert_eq!(refused["replace_original"], false, "{refused}");
    assert!(words(&refused).contains("Nothing was changed"), "{refused}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert!(a["verified_at"].is_null(), "{a}");
    // The reviewer verifies: the COE, approved, closes.
    slack
        .press("U_REV", "coe_verify", &action, "t-v1", "3.1")
        .await;
    let updated = slack.said_at("press-3.1").await;
    assert!(
        words(&updated).contains("verified by reviewer@example.com"),
        "{updated}"
    );
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{approved}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed", "{doc}");
    // Pressed again (a retried delivery): nothing twice.
    slack
        .press("U_REV", "coe_verify", &action, "t-v1", "3.1")
        .await;
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    let steps = a["steps"].as_array().expect("steps");
    assert_eq!(
        steps.iter().filter(|s| s["step"] == "verify").count(),
        1,
        "{a}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s["step"] == "complete" && s["via"] == "slack"),
        "marked done from Slack, in its history: {a}"
    );

    let metrics = w
        .app
        .get("/metrics", None)
        .await
        .text()
        .await
        .expect("text");
    for line in [
        "coe_chat_moves_total{platform=\"slack\",move=\"verify\",outcome=\"done\"} 1",
        "coe_chat_moves_total{platform=\"slack\",move=\"verify\",outcome=\"repeated\"} 1",
        "coe_chat_moves_total{platform=\"slack\",move=\"report\",outcome=\"done\"} 1",
        "coe_chat_moves_total{platform=\"slack\",move=\"report\",outcome=\"not_in_directory\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}

/// The direct messages posted to Slack user `user`, once there are `n`.
async fn dms(asked: &Arc<Slack>, user: &str, n: usize) -> Vec<Value> {
    let asked = asked.clone();
    let user = user.to_owned();
    eventually_async(
        Duration::from_secs(30),
        "direct messages posted in Slack",
        || {
            let got: Vec<Value> = asked
                .posted
                .lock()
                .expect("lock")
                .iter()
                .filter(|m| m["channel"] == user.as_str())
                .cloned()
                .collect();
            async move { (got.len() >= n).then_some(got) }
        },
    )
    .await
}

fn email_rows(w: &World, kind: &str, to: &str) -> Vec<(String, Option<String>)> {
    use coe::db::schema::outbox_emails;
    use diesel::prelude::*;
    let mut conn = w.app.pool.get().expect("conn");
    outbox_emails::table
        .filter(outbox_emails::kind.eq(kind))
        .filter(outbox_emails::recipient.eq(to))
        .select((outbox_emails::state, outbox_emails::last_error))
        .load(&mut conn)
        .expect("outbox")
}

/// Reminders, assignments and verifications reach people in Slack when they chose it
/// on their settings page: an action given to its owner arrives as a direct message
/// with its buttons (and, in Slack instead of email, the email is not sent); done from
/// the message; the reviewer, who chose both, verifies from theirs and the COE closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_reaches_people_in_slack_as_they_chose_and_is_done_from_there() {
    let (base, asked) = double().await;
    let channel = app_channel(&base);
    let (w, _admin) = crate::attacks::review_world_with(move |s| {
        s.chat.channels = vec![channel];
        s.server.connections_on_loopback = true;
    })
    .await;
    let slack = Client {
        w: &w,
        base: base.clone(),
        asked: asked.clone(),
        n: Mutex::new(0),
    };
    // Each chooses on their settings page (offered because a Slack app is set up).
    for (email, reach) in [
        ("dev@example.com", "chat"),
        ("reviewer@example.com", "both"),
        ("di@example.com", "chat"),
    ] {
        if email == "dev@example.com" {
            crate::ownership::person(&w.app, email, false).await;
        }
        let cookie = crate::pages::sign_in(&w.app, email).await;
        let page = crate::pages::get_page(&w.app, "/me/notifications", Some(&cookie))
            .await
            .text()
            .await
            .expect("page");
        assert!(page.contains("In Slack instead"), "{page}");
        if email == "dev@example.com" {
            let mut saved = Vec::new();
            crate::html::save(&mut saved, "notifications-slack", &page);
            crate::html::assert_valid(&crate::html::vnu_jar(), &saved);
            crate::html::assert_accessible(&w.app, &saved).await;
            let browser = crate::webdriver::Browser::start().await;
            crate::browser::sign_in_to(&browser, &w.app, email, "/me/notifications").await;
            browser.screenshot("notifications-slack").await;
        }
        let res = crate::pages::post_form(
            &w.app,
            &cookie,
            "/me/notifications",
            "/me/notifications",
            &[("mode", "every"), ("pause", "keep"), ("reach", reach)],
        )
        .await;
        assert_eq!(res.status(), 303, "{email}");
    }
    let (approved, action) = crate::attacks::approved_sev1(&w).await;

    // The action given to dev@ arrives in Slack, with its buttons.
    crate::chat::deliver_with(&w.app, w.app.runtime.env());
    let got = dms(&asked, "U_DEV", 1).await;
    let shown = got[0].to_string();
    assert!(shown.contains("Validate config in CI"), "{shown}");
    assert!(
        shown.contains(&format!("\"value\":\"{action}\"")),
        "{shown}"
    );
    assert!(
        shown.contains("coe_done") && shown.contains("coe_move_due"),
        "{shown}"
    );
    // In Slack instead of email: the email, which waited, is not sent.
    assert_eq!(
        email_rows(&w, "action_assigned", "dev@example.com"),
        vec![(
            "dropped".to_owned(),
            Some("delivered as a direct message in Slack instead".to_owned())
        )]
    );

    // di@ has no Slack account: the message is refused, and the email, which waited for
    // it, goes at once.
    let due: Vec<(String, chrono::NaiveDateTime)> = {
        use coe::db::schema::outbox_emails;
        use diesel::prelude::*;
        let mut conn = w.app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::recipient.eq("di@example.com"))
            .filter(outbox_emails::kind.eq("review_requested"))
            .select((outbox_emails::state, outbox_emails::next_attempt_at))
            .load(&mut conn)
            .expect("outbox")
    };
    assert!(!due.is_empty(), "di@ was asked to review");
    for (state, at) in due {
        assert_ne!(state, "dropped");
        assert!(
            state == "sent" || at <= chrono::Utc::now().naive_utc(),
            "{state} at {at}: the email goes now"
        );
    }

    // Done from the message: the form, then the message says so.
    slack
        .press("U_DEV", "coe_done", &action, "t-dm1", "5.1")
        .await;
    let done = slack.last_view();
    let (_, said) = slack
        .submit(
            "U_DEV",
            &done,
            "V-dm1",
            json!({
                "note": text("CI now validates every config change"),
                "evidence_url": {"a": {"type": "url_text_input", "value": "https://ci.example.com/runs/7"}},
            }),
        )
        .await;
    assert!(words(&said).contains("marked done"), "{said}");
    let updated = slack.said_at("press-5.1").await;
    assert!(
        words(&updated).contains("marked done by dev@example.com"),
        "{updated}"
    );

    // The reviewer is asked to verify, by email and in Slack; verifies from Slack.
    let smtp = crate::email::SmtpServer::start();
    crate::mechanism::sweep_at(&w.app, &smtp.url(), chrono::Utc::now());
    crate::chat::deliver_with(&w.app, w.app.runtime.env());
    let got = dms(&asked, "U_REV", 1).await;
    let asking = got
        .iter()
        .find(|m| m.to_string().contains("coe_verify"))
        .unwrap_or_else(|| panic!("a message asking to verify: {got:?}"));
    assert!(asking.to_string().contains(&action), "{asking}");
    let emailed = email_rows(&w, "verifications_waiting", "reviewer@example.com");
    assert_eq!(emailed.len(), 1, "both: the email goes too: {emailed:?}");
    assert_ne!(emailed[0].0, "dropped");
    slack
        .press("U_REV", "coe_verify", &action, "t-dm2", "6.1")
        .await;
    slack.said_at("press-6.1").await;
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{approved}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed", "{doc}");
}

/// What is not Slack's, or not what Slack sends, gets a clear 4xx and changes nothing:
/// a request with no app set up, unsigned, a signed body that is no form or no JSON, a
/// payload without a user, one too large; a modal coe did not open is received and
/// nothing done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_from_slack_are_refused_and_change_nothing() {
    // No Slack app set up: nothing is Slack's.
    let w = World::new().await;
    let res = w
        .app
        .client
        .post(w.app.url("/chat/slack/commands"))
        .header(
            "x-slack-request-timestamp",
            chrono::Utc::now().timestamp().to_string(),
        )
        .header("x-slack-signature", "v0=00")
        .body("command=%2Fcoe&text=mine&user_id=U1")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 401);
    let said: Value = res.json().await.expect("JSON");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("signature"),
        "{said}"
    );

    let (base, asked) = double().await;
    let channel = app_channel(&base);
    let (w, _) = crate::attacks::review_world_with(move |s| {
        s.chat.channels = vec![channel];
        s.server.connections_on_loopback = true;
    })
    .await;
    let slack = Client {
        w: &w,
        base,
        asked,
        n: Mutex::new(0),
    };
    let (status, said) = slack.post("/chat/slack/commands", "%%%").await;
    assert_eq!(status, 400, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("slash command"),
        "{said}"
    );
    let (status, said) = slack
        .post("/chat/slack/interactions", "payload=%7Bnot%20json")
        .await;
    assert_eq!(status, 400, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("JSON"),
        "{said}"
    );
    let (status, said) = slack
        .interact(&json!({"type": "block_actions", "actions": []}))
        .await;
    assert_eq!(status, 400, "no user: {said}");
    let big = format!(
        "command=%2Fcoe&user_id=U_OWNER&text={}",
        "a".repeat(300 * 1024)
    );
    let (status, said) = slack.post("/chat/slack/commands", &big).await;
    assert_eq!(status, 413, "{said}");
    // A modal coe did not open, a shortcut, a button coe does not know: received, nothing done.
    let (status, _) = slack
        .submit(
            "U_OWNER",
            &json!({"callback_id": "other", "private_metadata": "{}"}),
            "V-x",
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = slack
        .interact(&json!({"type": "shortcut", "user": {"id": "U_OWNER"}}))
        .await;
    assert_eq!(status, 200);
    let (status, _) = slack
        .press("U_OWNER", "something_else", "x", "t-x", "9.9")
        .await;
    assert_eq!(status, 200);
    // An action that does not exist: said to the presser, nothing opened.
    let before = slack.views();
    slack
        .press("U_OWNER", "coe_done", "no-such-action", "t-y", "9.8")
        .await;
    let said = slack.said_at("press-9.8").await;
    assert!(words(&said).contains("Nothing was changed"), "{said}");
    assert_eq!(slack.views(), before);
    let listed = w.app.get_json("/api/v1/coes?limit=100", &w.owner).await;
    assert_eq!(listed["coes"].as_array().map(Vec::len), Some(0), "{listed}");
}

/// The Slack app set up in coe by an admin (the connection kept in coe, as the
/// browser's form saves it): its signing secret sealed and shown by its end only, the
/// bot token required with it, and commands signed with it taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_app_an_admin_sets_up_in_coe_takes_its_commands() {
    let (base, asked) = double().await;
    let (w, admin) = crate::attacks::review_world_with(|s| {
        s.secret_key = Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into());
        s.server.connections_on_loopback = true;
    })
    .await;
    let put = |body: Value| {
        w.app
            .client
            .put(w.app.url("/api/v1/connections/chat/work-app"))
            .bearer_auth(&admin)
            .json(&body)
            .send()
    };
    let app = json!({"kind": "slack", "url": format!("{base}/hooks/x"),
                     "api_url": format!("{base}/api"), "signing_secret": SECRET});
    let res = put(app.clone()).await.expect("sent");
    assert_eq!(
        res.status(),
        422,
        "the bot token goes with the signing secret"
    );
    let said: Value = res.json().await.expect("JSON");
    assert!(said.to_string().contains("read_token"), "{said}");
    let mut app = app;
    app["read_token"] = json!("xoxb-app");
    let res = put(app).await.expect("sent");
    assert!(res.status().is_success(), "{}", res.status());
    let saved: Value = res.json().await.expect("JSON");
    let shown = saved["settings"]["signing_secret"]
        .as_str()
        .unwrap_or_default();
    assert!(shown.starts_with("set, ends"), "{saved}");
    assert!(!saved.to_string().contains(SECRET), "{saved}");

    let slack = Client {
        w: &w,
        base,
        asked,
        n: Mutex::new(0),
    };
    let (status, mine) = slack.command("U_OWNER", "D_OWNER", "mine", "t-kept").await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["response_type"], "ephemeral", "{mine}");
    assert!(words(&mine).contains("waits on you"), "{mine}");
}
