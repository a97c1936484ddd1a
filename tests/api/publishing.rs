//! A COE's summary for customers: checked to name no person and no internal host
//! before the COE is submitted, published once approved (a public page showing only
//! it, revocable; its Markdown; a Statuspage postmortem and a signed webhook, retried
//! after a failure), and nothing else of the COE public.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use coe::config::{ChannelSettings, ChatKind, Settings};
use coe::db::schema::chat_messages;
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::actions::World;
use crate::attacks::{read, review_world_with};
use crate::chat::deliver;

/// What the Statuspage and webhook double got: (method, path, authorization,
/// signature, body, raw body), and the statuses it is to answer first.
type Got = (String, String, String, String, Value, String);

#[derive(Default)]
struct Double {
    got: Mutex<Vec<Got>>,
    script: Mutex<VecDeque<u16>>,
}

/// Statuspage's published shapes: `PUT /v1/pages/{page}/incidents/{incident}/postmortem`
/// with `{"postmortem": {"body_draft"}}`, then `…/publish` with
/// `{"postmortem": {"notify_twitter", "notify_subscribers"}}`; `PUT …/postmortem/revert`
/// with no body takes it back to a draft; `Authorization: OAuth <key>`; an unknown
/// incident is 404.
async fn serve(req: HttpRequest, body: web::Bytes, double: web::Data<Arc<Double>>) -> HttpResponse {
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = req.path().to_owned();
    double.got.lock().expect("lock").push((
        req.method().to_string(),
        path.clone(),
        header("authorization"),
        header("x-coe-signature-256"),
        value.clone(),
        String::from_utf8_lossy(&body).into_owned(),
    ));
    if let Some(status) = double.script.lock().expect("lock").pop_front() {
        return HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("status"))
            .json(json!({"error": "Service unavailable"}));
    }
    if path.starts_with("/v1/") {
        if header("authorization") != "OAuth sp-key" {
            return HttpResponse::Unauthorized().json(json!({"error": "Could not authenticate"}));
        }
        if !path.starts_with("/v1/pages/pg1/incidents/inc42/postmortem") {
            return HttpResponse::NotFound().json(json!({"error": "Incident not found"}));
        }
        let fits = if path.ends_with("/publish") {
            value["postmortem"]["notify_subscribers"].is_boolean()
        } else if path.ends_with("/revert") {
            // "Revert Postmortem" takes no body.
            body.is_empty()
        } else {
            value["postmortem"]["body_draft"].is_string()
        };
        if !fits || req.method() != actix_web::http::Method::PUT {
            return HttpResponse::BadRequest().json(json!({"error": "malformed postmortem"}));
        }
        return HttpResponse::Ok().json(json!({"body": value["postmortem"]["body_draft"]}));
    }
    HttpResponse::NoContent().finish()
}

async fn double() -> (String, Arc<Double>) {
    let double = Arc::new(Double::default());
    let data = web::Data::new(double.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(serve))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let port = server.addrs()[0].port();
    tokio::spawn(server.run());
    (format!("http://127.0.0.1:{port}"), double)
}

fn channels(base: &str) -> Vec<ChannelSettings> {
    let channel = |name: &str, kind, url: Option<String>, token: &str| ChannelSettings {
        name: name.into(),
        kind,
        url: url.map(Into::into),
        homeserver: None,
        room_id: None,
        access_token: Some(token.to_owned().into()),
        page_id: (kind == ChatKind::Statuspage).then(|| "pg1".into()),
        api_url: (kind == ChatKind::Statuspage).then(|| format!("{base}/v1")),
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: None,
        app_id: None,
        app_password: None,
        tenant_id: None,
        teams: Vec::new(),
        services: Vec::new(),
        events: vec![coe::config::ChatEvent::Published],
    };
    vec![
        channel("status", ChatKind::Statuspage, None, "sp-key"),
        channel(
            "site",
            ChatKind::Webhook,
            Some(format!("{base}/hook")),
            "hook-secret",
        ),
    ]
}

/// The default template with a section written for customers, saved by an admin.
async fn customer_template(w: &World, admin: &str) {
    let all = w.app.get_json("/api/v1/templates", admin).await;
    let default = &all["templates"][0]["template"];
    let mut sections = default["sections"].as_array().expect("sections").clone();
    sections.insert(1, json!({"key": "customer_summary", "title": "Summary for customers", "kind": "text",
        "for_customers": true, "guidance": "What happened, when, who was affected, what we are changing."}));
    let (status, body) = w
        .send(admin, "POST", "/api/v1/templates/default", None,
            Some(json!({"contributing_factors": default["contributing_factors"], "sections": sections})))
        .await;
    assert_eq!(status, 201, "{body}");
}

fn version(doc: &Value) -> i64 {
    doc["version"].as_i64().expect("version")
}

async fn write(w: &World, id: &str, text: &str) -> Value {
    let v = version(&read(w, id).await);
    let (status, doc) = w
        .send(
            &w.owner,
            "PUT",
            &format!("/api/v1/coes/{id}/sections/customer_summary"),
            Some(v),
            Some(json!({"body": text})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    doc
}

const TITLE: &str = "Card payments failed for 46 minutes";

const FIT: &str = "On 3 December from 14:02 to 14:48 UTC, 12% of card payments failed. A configuration change \
                   rejected valid cards; we rolled it back. We now test every such change against real card data first.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_summary_is_published_alone_and_revoked() {
    let (base, double) = double().await;
    let chat = channels(&base);
    let (w, admin) = review_world_with({
        let chat = chat.clone();
        move |s| s.chat.channels = chat
    })
    .await;
    let mut settings = Settings::default();
    settings.chat.channels = chat;
    let (status, _) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/ana@example.com",
            None,
            Some(json!({"name": "Ana Lima", "team": "payments"})),
        )
        .await;
    assert_eq!(status, 200);
    customer_template(&w, &admin).await;
    let (id, _) = w.written_coe().await;

    // A person's name, then an internal host: the COE cannot be submitted.
    let doc = write(
        &w,
        &id,
        "Ana Lima restarted the payments database and service recovered.",
    )
    .await;
    let problems = doc["completeness"]["missing"].to_string();
    assert!(
        problems.contains("names Ana Lima, a person in the directory"),
        "{problems}"
    );
    let (status, _) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/elodie@example.com",
            None,
            Some(json!({"name": "Élodie Martin"})),
        )
        .await;
    assert_eq!(status, 200);
    let doc = write(&w, &id, "ÉLODIE MARTIN and o’brien@example.com were paged.").await;
    let problems = doc["completeness"]["missing"].to_string();
    assert!(
        problems.contains("names Élodie Martin"),
        "any case, any letters: {problems}"
    );
    let doc = write(
        &w,
        &id,
        "The host db-7.payments.internal ran out of disk; 10.1.2.3 was moved.",
    )
    .await;
    let problems = doc["completeness"]["missing"].to_string();
    assert!(problems.contains("db-7.payments.internal"), "{problems}");
    assert!(problems.contains("10.1.2.3"), "{problems}");
    make_sev1(&w, &id).await;
    let (status, body) = submit(&w, &id).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("customer_summary"), "{body}");

    // Fit: submitted; not published before it is approved.
    write(&w, &id, FIT).await;
    let (status, body) = submit(&w, &id).await;
    assert_eq!(status, 200, "{body}");
    let publication = format!("/api/v1/coes/{id}/publication");
    let (status, body) = w.send(&w.owner, "POST", &publication, None, None).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body.to_string().contains("once the COE is approved"),
        "{body}"
    );
    approve(&w, &id).await;

    // Bad asks change nothing.
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"statuspage_incident": 42})),
        )
        .await;
    assert!(status == 400 || status == 422, "{status}");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"statuspage_incident": "../pages"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("statuspage_incident"), "{body}");
    let stranger = crate::actions::person_token(&w.app, "eve", "eve@example.com");
    let (status, _) = w.send(&stranger, "POST", &publication, None, None).await;
    assert_eq!(status, 403);
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes/00000000-0000-0000-0000-000000000000/publication",
            None,
            None,
        )
        .await;
    assert_eq!(status, 404);
    let res = w
        .app
        .client
        .post(w.app.url(&publication))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 401);
    let (status, _) = w.send(&w.owner, "GET", &publication, None, None).await;
    assert_eq!(status, 404, "never published");

    // A notice needs a title written for customers, checked like its text.
    for (title, named) in [
        (None, "is missing"),
        (
            Some("Card payments failed; write to owner@example.com"),
            "owner@example.com",
        ),
        (
            Some("search-es-03.internal was slow"),
            "search-es-03.internal",
        ),
        (Some("A title\non two lines"), "one line"),
    ] {
        let (status, body) = w
            .send(
                &w.owner,
                "POST",
                &publication,
                None,
                Some(json!({"title": title})),
            )
            .await;
        assert_eq!(status, 422, "{title:?}: {body}");
        assert!(
            body["error"]["fields"].to_string().contains("title")
                && body.to_string().contains(named),
            "{title:?}: {body}"
        );
    }

    // Published: the public page shows the summary and nothing else of the COE.
    let (status, published) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"statuspage_incident": "inc42", "title": TITLE})),
        )
        .await;
    assert_eq!(status, 201, "{published}");
    let url = published["url"]
        .as_str()
        .expect("a public address")
        .to_owned();
    let path = url
        .split_once("/summaries/")
        .map(|(_, t)| format!("/summaries/{t}"))
        .expect("path");
    assert!(path.len() > "/summaries/".len() + 40, "unguessable: {path}");
    let anonymous = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let page = anonymous.get(w.app.url(&path)).send().await.expect("sent");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(html.contains("12% of card payments failed"), "{html}");
    let coe = read(&w, &id).await;
    for private in [
        coe["title"].as_str().expect("title"),
        "owner@example.com",
        &id,
        coe["sections"][0]["body"].as_str().expect("summary"),
    ] {
        assert!(!html.contains(private), "{private} is on the public page");
    }
    let md = anonymous
        .get(w.app.url(&format!("{path}/summary.md")))
        .send()
        .await
        .expect("sent");
    assert_eq!(md.status(), 200);
    assert_eq!(md.text().await.expect("md"), format!("# {TITLE}\n\n{FIT}"));
    // The rest of the COE still needs a sign-in.
    for private in [
        format!("/coes/{id}"),
        format!("/coes/{id}/for-customers.md"),
        format!("/coes/{id}/print"),
    ] {
        let res = anonymous
            .get(w.app.url(&private))
            .send()
            .await
            .expect("sent");
        assert!(!res.status().is_success(), "{private}: {}", res.status());
    }
    let res = anonymous
        .get(w.app.url(&format!("/api/v1/coes/{id}")))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 401);
    let (status, body) = w.send(&w.owner, "POST", &publication, None, None).await;
    assert_eq!(status, 409, "published already: {body}");

    // The status page is down at first: told after, once; the webhook signed.
    double.script.lock().expect("lock").push_back(503);
    let first = deliver(&w.app, &settings);
    assert_eq!((first.sent, first.deferred), (1, 1), "{first:?}");
    {
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(chat_messages::table.filter(chat_messages::state.eq("pending")))
            .set(
                chat_messages::next_attempt_at
                    .eq(chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1)),
            )
            .execute(&mut conn)
            .expect("due again");
    }
    assert_eq!(deliver(&w.app, &settings).sent, 1);
    assert_eq!(
        deliver(&w.app, &settings),
        coe::services::outbound::chat::ChatReport::default()
    );
    let got = double.got.lock().expect("lock").clone();
    let puts: Vec<&String> = got.iter().filter(|g| g.0 == "PUT").map(|g| &g.1).collect();
    assert_eq!(
        puts,
        [
            "/v1/pages/pg1/incidents/inc42/postmortem",
            "/v1/pages/pg1/incidents/inc42/postmortem",
            "/v1/pages/pg1/incidents/inc42/postmortem/publish"
        ],
        "{got:?}"
    );
    let draft = got
        .iter()
        .rev()
        .find(|g| g.1.ends_with("/postmortem"))
        .expect("draft");
    assert_eq!(draft.2, "OAuth sp-key");
    assert_eq!(draft.4["postmortem"]["body_draft"], FIT);
    let hook = got.iter().find(|g| g.1 == "/hook").expect("the webhook");
    assert_eq!(hook.4["markdown"], FIT);
    assert_eq!(hook.4["title"], TITLE);
    assert_eq!(hook.4["event"], "published");
    assert_eq!(hook.4["url"], url);
    assert_eq!(hook.3, coe::chat::send::signature("hook-secret", &hook.5));

    // Revoked: the address says the notice was withdrawn, without its text; the
    // status page's postmortem goes back to a draft and the webhook is told.
    let (status, revoked) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 200, "{revoked}");
    assert!(
        revoked["url"] == url && revoked["revoked_by"] == "owner@example.com",
        "{revoked}"
    );
    let gone = anonymous.get(w.app.url(&path)).send().await.expect("sent");
    assert_eq!(gone.status(), 410);
    let gone = gone.text().await.expect("html");
    assert!(gone.contains("This notice was withdrawn on"), "{gone}");
    assert!(
        !gone.contains("12% of card payments") && !gone.contains("/coes"),
        "{gone}"
    );
    assert_eq!(deliver(&w.app, &settings).sent, 2);
    let got = double.got.lock().expect("lock").clone();
    assert!(
        got.iter()
            .any(|g| g.0 == "PUT" && g.1 == "/v1/pages/pg1/incidents/inc42/postmortem/revert"),
        "{got:?}"
    );
    let withdrawn = got
        .iter()
        .rev()
        .find(|g| g.1 == "/hook")
        .expect("the webhook told");
    assert_eq!(withdrawn.4["event"], "withdrawn", "{withdrawn:?}");
    assert_eq!(withdrawn.4["url"], url);
    assert!(withdrawn.4.get("markdown").is_none(), "{withdrawn:?}");
    assert_eq!(
        withdrawn.3,
        coe::chat::send::signature("hook-secret", &withdrawn.5)
    );
    assert_eq!(
        anonymous
            .get(w.app.url(&format!("{path}/summary.md")))
            .send()
            .await
            .expect("sent")
            .status(),
        410
    );
    let (status, _) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 409);
    let (status, again) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"title": TITLE})),
        )
        .await;
    assert_eq!(status, 201, "{again}");
    assert_ne!(again["url"], published["url"]);
    // Taken down before its post went: the webhook is not told.
    let (status, _) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 200);
    let hooks = double
        .got
        .lock()
        .expect("lock")
        .iter()
        .filter(|g| g.1 == "/hook")
        .count();
    assert_eq!(deliver(&w.app, &settings).sent, 0);
    assert_eq!(
        double
            .got
            .lock()
            .expect("lock")
            .iter()
            .filter(|g| g.1 == "/hook")
            .count(),
        hooks
    );
    assert_eq!(
        anonymous
            .get(w.app.url(&path))
            .send()
            .await
            .expect("sent")
            .status(),
        410
    );
    // No feed unless the organisation wants one: it would list every address.
    let feed = anonymous
        .get(w.app.url("/summaries/feed.atom"))
        .send()
        .await
        .expect("sent");
    assert_eq!(feed.status(), 404);
    // An address that never was: a plain page for customers, no way into coe.
    let none = anonymous
        .get(w.app.url("/summaries/no-such-notice"))
        .send()
        .await
        .expect("sent");
    assert_eq!(none.status(), 404);
    let none = none.text().await.expect("html");
    assert!(
        none.contains("There is no notice at this address") && !none.contains("<a "),
        "{none}"
    );
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{id}/history"), &admin)
        .await
        .to_string();
    assert!(
        history.contains("publication:published") && history.contains("publication:revoked"),
        "{history}"
    );
}

/// Makes COE `id` a sev1 with one corrective action, ready to submit.
async fn make_sev1(w: &World, id: &str) {
    let v = version(&read(w, id).await);
    let (status, _) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"severity": "sev1"})),
        )
        .await;
    assert_eq!(status, 200);
    w.action(id, "Validate config in CI", "dev@example.com")
        .await;
}

/// Its owner submits COE `id`: the answer.
async fn submit(w: &World, id: &str) -> (u16, Value) {
    w.send(
        &w.owner,
        "POST",
        &format!("/api/v1/coes/{id}/submit"),
        None,
        None,
    )
    .await
}

/// Its reviewer and bar raiser approve COE `id`.
async fn approve(w: &World, id: &str) {
    let di = crate::actions::person_token(&w.app, "di", "di@example.com");
    for token in [&w.reviewer, &di] {
        let v = version(&read(w, id).await);
        let (status, doc) = w
            .send(
                token,
                "POST",
                &format!("/api/v1/coes/{id}/approve"),
                Some(v),
                None,
            )
            .await;
        assert_eq!(status, 200, "{doc}");
    }
}

/// A sev1 COE with its summary for customers written, approved by its reviewer and
/// bar raiser.
async fn approved_with_summary(w: &World, admin: &str) -> String {
    customer_template(w, admin).await;
    let (id, _) = w.written_coe().await;
    write(w, &id, FIT).await;
    make_sev1(w, &id).await;
    let (status, body) = submit(w, &id).await;
    assert_eq!(status, 200, "{body}");
    approve(w, &id).await;
    id
}

/// The public page at `url` as fetched by anyone, checked by the Nu validator and
/// saved as `name`.
async fn valid_public_page(url: &str, name: &str) -> String {
    let html = reqwest::get(url)
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    let mut saved = Vec::new();
    crate::html::save(&mut saved, name, &html);
    crate::html::assert_valid(&crate::html::vnu_jar(), &saved);
    html
}

/// In Chromium: the owner of an approved COE previews its summary for customers,
/// gives it a title and publishes it; the public page is read at 1280 and 390 px;
/// the owner changes the text, the reviewer approves the change, and the same
/// address says the new text, updated; taken down, it says it was withdrawn
/// (screenshots `coe-for-customers`, `publish-preview`, `summary-public`,
/// `summary-public-phone`, `summary-change-waiting`, `summary-updated`,
/// `summary-withdrawn`).
#[tokio::test]
async fn the_owner_publishes_and_corrects_the_summary_in_a_browser() {
    let (w, admin) = review_world_with(|s| s.org.name = Some("Acme Payments".into())).await;
    let id = approved_with_summary(&w, &admin).await;
    let browser = crate::webdriver::Browser::start().await;
    let coe_page = format!("/coes/{id}");
    crate::browser::sign_in_to(&browser, &w.app, "owner@example.com", &coe_page).await;
    browser.wait_for_heading("sev1 Payments down").await;
    let box_text = browser.text("#for-customers").await;
    assert!(
        box_text.contains("Whose move: yours") && !box_text.contains("Statuspage"),
        "{box_text}"
    );
    browser
        .eval("document.getElementById('for-customers').scrollIntoView(); return 1")
        .await;
    browser.screenshot("coe-for-customers").await;

    // The preview first: nothing is public until it is confirmed.
    browser.click_to_load("#publish-preview").await;
    browser
        .wait_for_heading("Publish the summary for customers")
        .await;
    assert!(browser
        .text("#confirm-later")
        .await
        .contains("Give it a title"));
    browser.type_into("#p-title", TITLE).await;
    browser.click_to_load("#publish-title button").await;
    browser.wait_for_text("#preview h1", TITLE).await;
    let preview = browser.text("#preview").await;
    assert!(
        preview.contains("12% of card payments failed") && preview.contains("Acme Payments"),
        "{preview}"
    );
    assert!(!preview.contains("Payments down"), "{preview}");
    let goes = browser.text("#destinations").await;
    assert!(goes.contains("A page of its own"), "{goes}");
    browser.screenshot("publish-preview").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.click_to_load("#confirm button").await;
    browser.wait_for_heading("sev1 Payments down").await;
    let published = browser.text("#published").await;
    assert!(
        published.contains("is public at") && published.contains(TITLE),
        "{published}"
    );
    crate::html::assert_accessible_now(&browser).await;
    let url = browser
        .eval("return document.querySelector('#published a').href")
        .await;
    // The address is under the settings' public URL; the test's server is elsewhere.
    let token = url
        .as_str()
        .and_then(|u| u.split_once("/summaries/"))
        .map(|(_, t)| t.to_owned())
        .expect("the public address");
    let url = w.app.url(&format!("/summaries/{token}"));

    // What customers read: the organisation, the title, the times in UTC.
    browser.goto(&url).await;
    browser.wait_for_heading(TITLE).await;
    let page = browser.text("body").await;
    assert!(
        page.contains("12% of card payments failed")
            && page.contains("Acme Payments")
            && page.contains("UTC")
            && page.contains("Published"),
        "{page}"
    );
    assert!(
        !page.contains("Payments down") && !page.contains("Sign out"),
        "{page}"
    );
    assert!(
        browser.find_all("script").await.is_empty(),
        "no script for customers"
    );
    browser.screenshot("summary-public").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.set_size(390, 844).await;
    browser.goto(&url).await;
    browser.wait_for_heading(TITLE).await;
    browser.screenshot("summary-public-phone").await;
    crate::html::assert_accessible_now(&browser).await;
    browser.set_size(1280, 900).await;
    valid_public_page(&url, "summary-public").await;

    // The owner corrects it: it waits for the reviewer; customers still read the old.
    browser.goto(&w.app.url(&coe_page)).await;
    browser.wait_for_heading("sev1 Payments down").await;
    browser.click("#summary-edit summary").await;
    browser.clear("#c-body").await;
    let corrected =
        "On 3 December from 14:02 to 14:48 UTC, 12% of card payments failed and were not charged.";
    browser.type_into("#c-body", corrected).await;
    browser
        .click_to_load("#summary-edit button[type=submit]")
        .await;
    browser.wait_for_heading("sev1 Payments down").await;
    let waiting = browser.text("#summary-change").await;
    assert!(
        waiting.contains("waits for") && waiting.contains("were not charged"),
        "{waiting}"
    );
    assert!(!browser
        .text("#summary-change")
        .await
        .contains("Approve the change"));
    browser.screenshot("summary-change-waiting").await;
    assert!(!reqwest::get(&url)
        .await
        .expect("sent")
        .text()
        .await
        .expect("html")
        .contains("were not charged"));

    // The reviewer approves that section alone: the same address says it, updated.
    let reviewer = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&reviewer, &w.app, "reviewer@example.com", &coe_page).await;
    reviewer.wait_for_heading("sev1 Payments down").await;
    let asked = reviewer.text("#summary-change").await;
    assert!(asked.contains("waits for you"), "{asked}");
    reviewer
        .click_to_load("#summary-change button[value=approve]")
        .await;
    reviewer.wait_for_heading("sev1 Payments down").await;
    let state = reviewer.text("main").await;
    assert!(
        state.contains("Approved: it is what customers read now"),
        "{state}"
    );
    browser.goto(&url).await;
    browser.wait_for_heading(TITLE).await;
    let page = browser.text("main").await;
    assert!(
        page.contains("were not charged") && page.contains("Last updated"),
        "{page}"
    );
    browser.screenshot("summary-updated").await;
    valid_public_page(&url, "summary-updated").await;

    // Taken down: the address says so, without the text, and leads nowhere in coe.
    browser.goto(&w.app.url(&coe_page)).await;
    browser.wait_for_heading("sev1 Payments down").await;
    browser
        .click_to_load("#for-customers button[formaction$=unpublish]")
        .await;
    browser.wait_for_heading("sev1 Payments down").await;
    let box_text = browser.text("#for-customers").await;
    assert!(box_text.contains("was taken down"), "{box_text}");
    // Nothing typed was left behind by the buttons: the page says what happened.
    let said = browser.text("#notice").await;
    assert!(
        said.contains("Taken down: its address says the notice was withdrawn"),
        "{said}"
    );
    browser.goto(&url).await;
    browser.wait_for_heading("This notice was withdrawn").await;
    let gone = browser.text("main").await;
    assert!(
        gone.contains("withdrawn on") && !gone.contains("were not charged"),
        "{gone}"
    );
    assert!(browser.find_all("a").await.is_empty(), "no way into coe");
    browser.screenshot("summary-withdrawn").await;
    crate::html::assert_accessible_now(&browser).await;
    valid_public_page(&url, "summary-withdrawn").await;
    browser
        .goto(&w.app.url(&format!("/coes/{id}/history")))
        .await;
    let history = browser.text("main").await;
    assert!(
        history.contains("published its summary for customers")
            && history.contains("approved the change of its summary for customers")
            && history.contains("took its public summary down"),
        "{history}"
    );
}

/// Puts `people` (address, name) in the directory.
async fn directory(w: &World, admin: &str, people: &[(&str, &str)]) {
    for (email, name) in people {
        let (status, body) = w
            .send(
                admin,
                "PUT",
                &format!("/api/v1/people/{email}"),
                None,
                Some(json!({ "name": name })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// The security test's attacks on the customer-summary check (issue 61, item 5; issue
/// 66, item 1): first names, possessives, names and hosts hidden by Markdown emphasis,
/// HTML entities and escapes, and links to internal hosts. Each is refused at submit,
/// naming the section and what it names; an ordinary summary still goes through.
#[tokio::test]
async fn a_writer_cannot_submit_names_or_internal_hosts_hidden_from_the_check() {
    let (w, admin) = review_world_with(|_| {}).await;
    directory(
        &w,
        &admin,
        &[
            ("omar@example.com", "Omar Haddad"),
            ("priya@example.com", "Priya Raman"),
            ("maria@example.com", "Maria Lopez"),
        ],
    )
    .await;
    customer_template(&w, &admin).await;
    let (id, _) = w.written_coe().await;
    make_sev1(&w, &id).await;

    for (text, named) in [
        (
            "Our engineer Omar rolled the change back within 40 minutes.",
            "names Omar",
        ),
        (
            "Service recovered at 14:48 UTC, thanks to Priya.",
            "names Priya",
        ),
        (
            "Service recovered at 14:48 UTC, thanks to Priya’s quick work.",
            "names Priya",
        ),
        (
            "Maria Lopez's team rolled the change back.",
            "names Maria Lopez",
        ),
        ("M*aria* Lopez rolled the change back.", "names Maria Lopez"),
        (
            "Maria&#32;Lopez rolled the change back.",
            "names Maria Lopez",
        ),
        (
            "The search-es-03\\.internal cluster ran out of disk.",
            "search-es-03.internal",
        ),
        (
            "See [status](https://search-es-03.internal/x) for details.",
            "search-es-03.internal",
        ),
        (
            "See <https://search-es-03.internal/x> for details.",
            "search-es-03.internal",
        ),
    ] {
        let doc = write(&w, &id, text).await;
        let missing = doc["completeness"]["missing"].to_string();
        assert!(missing.contains(named), "{text}: {missing}");
        let (status, body) = submit(&w, &id).await;
        assert_eq!(status, 422, "{text} was submitted: {body}");
        let body = body.to_string();
        assert!(
            body.contains("customer_summary") && body.contains(named),
            "{text}: {body}"
        );
    }

    // An ordinary summary, with no names and no internal host, goes through.
    let doc = write(&w, &id, FIT).await;
    for list in ["missing", "warnings"] {
        let found = doc["completeness"][list].to_string();
        assert!(!found.contains("customer_summary"), "{list}: {found}");
    }
    let (status, body) = submit(&w, &id).await;
    assert_eq!(status, 200, "{body}");
}

/// "Will" is the first name of Will Smith in the directory and a common word: a
/// warning the writer and the reviewer see, not a refusal. The check runs again when
/// the summary is published: a person added to the directory since the approval whose
/// given name the summary uses stops it.
#[tokio::test]
async fn a_first_name_that_is_a_common_word_warns_and_publishing_checks_again() {
    let (w, admin) = review_world_with(|_| {}).await;
    directory(&w, &admin, &[("will@example.com", "Will Smith")]).await;
    customer_template(&w, &admin).await;
    let (id, _) = w.written_coe().await;
    make_sev1(&w, &id).await;
    let text = format!("{FIT} Will this happen again? We will test every change first.");
    let doc = write(&w, &id, &text).await;
    let missing = doc["completeness"]["missing"].to_string();
    assert!(!missing.contains("customer_summary"), "{missing}");
    let warnings = doc["completeness"]["warnings"].to_string();
    assert!(
        warnings.contains("customer_summary")
            && warnings.contains("“Will” is also the first name of Will Smith"),
        "{warnings}"
    );
    // The writer sees it on the COE's page too.
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let page = crate::pages::get_page(&w.app, &format!("/coes/{id}"), Some(&cookie)).await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(
        html.contains("Worth a second look")
            && html.contains("is also the first name of Will Smith"),
        "{html}"
    );
    let (status, body) = submit(&w, &id).await;
    assert_eq!(status, 200, "a warning does not block: {body}");
    approve(&w, &id).await;

    // Someone joins whose given name the approved summary uses: publishing refuses.
    directory(&w, &admin, &[("december@example.com", "December Okafor")]).await;
    let publication = format!("/api/v1/coes/{id}/publication");
    let (status, body) = w.send(&w.owner, "POST", &publication, None, None).await;
    assert_eq!(status, 422, "{body}");
    let said = body.to_string();
    assert!(
        said.contains("customer_summary") && said.contains("names December"),
        "{said}"
    );
    let (status, _) = w.send(&w.owner, "GET", &publication, None, None).await;
    assert_eq!(status, 404, "nothing was published");
}

/// After approval the owner changes what customers read: checked as before submit,
/// it waits for the reviewer (not its writer); sent back, it needs a note; approved,
/// the same address says it ("Last updated"), the section is it, the COE stays
/// approved, and the Statuspage postmortem and the webhook get the new text. Admins
/// list what was published, and the feed has the current notices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_after_approval_waits_for_the_reviewer_then_replaces_the_notice() {
    let (base, double) = double().await;
    let chat = channels(&base);
    // The organisation's logo: a one-pixel PNG.
    let logo_dir = tempfile::tempdir().expect("dir");
    let logo = logo_dir.path().join("logo.png");
    let png: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52,
    ];
    std::fs::write(&logo, png).expect("logo");
    let (w, admin) = review_world_with({
        let chat = chat.clone();
        let logo = logo.clone();
        move |s| {
            s.chat.channels = chat;
            s.org.notice_feed = true;
            s.org.name = Some("Acme Payments".into());
            s.org.logo_file = Some(logo);
        }
    })
    .await;
    let served = reqwest::get(w.app.url("/summaries/logo"))
        .await
        .expect("sent");
    assert_eq!(served.status(), 200);
    assert_eq!(
        served.headers()["content-type"].to_str().expect("type"),
        "image/png"
    );
    assert_eq!(&served.bytes().await.expect("bytes")[..], png);
    let mut gif = Settings::default();
    gif.org.logo_file = Some(logo_dir.path().join("logo.gif"));
    let refused = gif.validate().expect_err("a GIF is not taken").to_string();
    assert!(refused.contains("org.logo_file"), "{refused}");
    let mut settings = Settings::default();
    settings.chat.channels = chat;
    let id = approved_with_summary(&w, &admin).await;
    let publication = format!("/api/v1/coes/{id}/publication");
    let (status, published) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"statuspage_incident": "inc42", "title": TITLE})),
        )
        .await;
    assert_eq!(status, 201, "{published}");
    assert_eq!(deliver(&w.app, &settings).sent, 2);
    let path = published["url"]
        .as_str()
        .and_then(|u| u.split_once("/summaries/"))
        .map(|(_, t)| format!("/summaries/{t}"))
        .expect("path");

    let change = format!("{publication}/change");
    let corrected = "From 14:02 to 14:48 UTC, card payments failed; none was charged twice.";
    for (ask, field) in [
        (
            json!({"title": TITLE, "body": "db-7.payments.internal failed"}),
            "body",
        ),
        (json!({"title": "", "body": corrected}), "title"),
        (json!({"title": TITLE, "body": FIT}), "body"),
    ] {
        let (status, body) = w
            .send(&w.owner, "PUT", &change, None, Some(ask.clone()))
            .await;
        assert_eq!(status, 422, "{ask}: {body}");
        assert!(
            body["error"]["fields"].to_string().contains(field),
            "{ask}: {body}"
        );
    }
    let (status, body) = w
        .send(
            &w.owner,
            "PUT",
            &change,
            None,
            Some(json!({"title": TITLE, "body": 3})),
        )
        .await;
    assert!(status == 400 || status == 422, "{status}: {body}");
    let (status, asked) = w
        .send(
            &w.owner,
            "PUT",
            &change,
            None,
            Some(json!({"title": "Card payments failed", "body": corrected})),
        )
        .await;
    assert_eq!(status, 201, "{asked}");
    assert!(asked["change"]["decision"].is_null(), "{asked}");
    // Customers still read the approved text.
    let public = reqwest::get(w.app.url(&path))
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    assert!(
        public.contains("12% of card payments") && !public.contains("charged twice"),
        "{public}"
    );
    // The affected services, by the names customers know them: one named in the
    // service map is shown so, one without such a name is left out.
    {
        use coe::db::schema::{coes, service_owners};
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&id))
            .set(coes::service.eq("checkout-api"))
            .execute(&mut conn)
            .expect("a service");
        diesel::insert_into(service_owners::table)
            .values((
                service_owners::service.eq("checkout-api"),
                service_owners::team.eq("payments"),
                service_owners::updated_by.eq("test"),
                service_owners::updated_at.eq(chrono::Utc::now().naive_utc()),
                service_owners::depends_on.eq("[]"),
                service_owners::customer_name.eq("Checkout"),
            ))
            .execute(&mut conn)
            .expect("mapped");
    }
    let public = reqwest::get(w.app.url(&path))
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    assert!(
        public.contains("<dt>Affected</dt><dd>Checkout</dd>") && !public.contains("checkout-api"),
        "{public}"
    );

    // The reviewer is asked by email, to the section on the COE's page.
    {
        use coe::db::schema::outbox_emails;
        let mut conn = w.app.pool.get().expect("conn");
        let asked_by_mail: Vec<(String, String, String)> = outbox_emails::table
            .filter(outbox_emails::kind.eq("review_requested"))
            .filter(outbox_emails::subject.like("%Approve a change for customers%"))
            .select((
                outbox_emails::recipient,
                outbox_emails::subject,
                outbox_emails::body_text,
            ))
            .load(&mut conn)
            .expect("emails");
        assert_eq!(asked_by_mail.len(), 1, "{asked_by_mail:?}");
        assert_eq!(asked_by_mail[0].0, "reviewer@example.com");
        assert!(
            asked_by_mail[0].2.contains("#for-customers"),
            "{asked_by_mail:?}"
        );
    }
    let decision = format!("{change}/decision");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &decision,
            None,
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 403, "its writer does not approve it: {body}");
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &decision,
            None,
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["fields"].to_string().contains("note"),
        "{body}"
    );
    let (status, decided) = w
        .send(
            &w.reviewer,
            "POST",
            &decision,
            None,
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["decision"], "approved");
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &decision,
            None,
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 409, "nothing waits any more: {body}");

    let coe = read(&w, &id).await;
    assert_eq!(coe["state"], "approved", "the rest stays approved");
    let section = coe["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["key"] == "customer_summary")
        .expect("the section");
    assert_eq!(section["body"], corrected);
    let public = reqwest::get(w.app.url(&path))
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    assert!(
        public.contains("src=\"/summaries/logo\"") && public.contains("Acme Payments"),
        "{public}"
    );
    assert!(
        public.contains("charged twice")
            && public.contains("Card payments failed")
            && public.contains("Last updated"),
        "{public}"
    );

    // Where it went hears the new text: Statuspage written and published again, the
    // webhook told it was updated.
    let before = double.got.lock().expect("lock").len();
    assert_eq!(deliver(&w.app, &settings).sent, 2);
    let got = double.got.lock().expect("lock")[before..].to_vec();
    let draft = got
        .iter()
        .find(|g| g.1 == "/v1/pages/pg1/incidents/inc42/postmortem")
        .expect("the draft");
    assert_eq!(draft.4["postmortem"]["body_draft"], corrected);
    assert!(
        got.iter().any(|g| g.1.ends_with("/postmortem/publish")),
        "{got:?}"
    );
    let hook = got.iter().find(|g| g.1 == "/hook").expect("the webhook");
    assert_eq!(hook.4["event"], "updated");
    assert_eq!(hook.4["markdown"], corrected);
    assert_eq!(hook.4["url"], published["url"]);
    assert_eq!(hook.3, coe::chat::send::signature("hook-secret", &hook.5));

    // Admins see what was published and where it went; the feed has it.
    let list = w.app.get_json("/api/v1/publications", &admin).await;
    assert_eq!(list[0]["title"], "Card payments failed", "{list}");
    assert!(list[0]["updated_at"].is_string(), "{list}");
    assert_eq!(
        list[0]["went_to"].as_array().map(Vec::len),
        Some(2),
        "{list}"
    );
    let (status, _) = w
        .send(&w.owner, "GET", "/api/v1/publications", None, None)
        .await;
    assert_eq!(status, 403);
    // Admin → Published says the same in words, as valid HTML.
    let (status, person) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/boss@example.com",
            None,
            Some(json!({"team": "payments"})),
        )
        .await;
    assert_eq!(status, 200, "{person}");
    let (status, flag) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/boss@example.com/admin",
            None,
            Some(json!({"is_admin": true})),
        )
        .await;
    assert_eq!(status, 200, "{flag}");
    let cookie = crate::pages::sign_in(&w.app, "boss@example.com").await;
    let html = crate::pages::get_page(&w.app, "/admin/published", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Card payments failed")
            && html.contains("Customers can read it")
            && html.contains("site (its update sent)")
            && html.contains("status (its update sent)"),
        "{html}"
    );
    let mut saved = Vec::new();
    crate::html::save(&mut saved, "admin-published", &html);
    crate::html::assert_valid(&crate::html::vnu_jar(), &saved);
    let feed = reqwest::get(w.app.url("/summaries/feed.atom"))
        .await
        .expect("sent");
    assert_eq!(feed.status(), 200);
    let feed = atom_syndication::Feed::read_from(&feed.bytes().await.expect("feed")[..])
        .expect("an Atom feed");
    assert_eq!(feed.entries().len(), 1);
    assert_eq!(feed.entries()[0].title().as_str(), "Card payments failed");
    assert_eq!(
        feed.entries()[0].id(),
        published["url"].as_str().expect("url")
    );
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{id}/history"), &admin)
        .await
        .to_string();
    assert!(
        history.contains("publication:change_proposed")
            && history.contains("publication:change_approved")
            && history.contains("publication:updated"),
        "{history}"
    );
    // Taken down, it leaves the feed.
    let (status, _) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 200);
    let feed = reqwest::get(w.app.url("/summaries/feed.atom"))
        .await
        .expect("sent")
        .bytes()
        .await
        .expect("feed");
    assert!(atom_syndication::Feed::read_from(&feed[..])
        .expect("feed")
        .entries()
        .is_empty());
}
