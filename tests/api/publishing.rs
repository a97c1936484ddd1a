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
/// `{"postmortem": {"notify_twitter", "notify_subscribers"}}`, `Authorization: OAuth
/// <key>`; an unknown incident is 404.
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

    // Published: the public page shows the summary and nothing else of the COE.
    let (status, published) = w
        .send(
            &w.owner,
            "POST",
            &publication,
            None,
            Some(json!({"statuspage_incident": "inc42"})),
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
    assert_eq!(md.text().await.expect("md"), FIT);
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
    assert_eq!(hook.4["url"], url);
    assert_eq!(hook.3, coe::chat::send::signature("hook-secret", &hook.5));

    // Revoked: the address answers 404; published again, a new one.
    let (status, revoked) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 200, "{revoked}");
    assert!(
        revoked["url"].is_null() && revoked["revoked_by"] == "owner@example.com",
        "{revoked}"
    );
    assert_eq!(
        anonymous
            .get(w.app.url(&path))
            .send()
            .await
            .expect("sent")
            .status(),
        404
    );
    assert_eq!(
        anonymous
            .get(w.app.url(&format!("{path}/summary.md")))
            .send()
            .await
            .expect("sent")
            .status(),
        404
    );
    let (status, _) = w.send(&w.owner, "DELETE", &publication, None, None).await;
    assert_eq!(status, 409);
    let (status, again) = w.send(&w.owner, "POST", &publication, None, None).await;
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
        404
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

/// In Chromium: the owner of an approved COE publishes its summary for customers,
/// opens the public page, and takes it down (screenshots `coe-for-customers`,
/// `summary-public`, `coe-for-customers-published`, `summary-revoked`).
#[tokio::test]
async fn the_owner_publishes_the_summary_in_a_browser() {
    let (w, admin) = review_world_with(|_| {}).await;
    let id = approved_with_summary(&w, &admin).await;
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(
        &browser,
        &w.app,
        "owner@example.com",
        &format!("/coes/{id}"),
    )
    .await;
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
    browser
        .click_to_load("#for-customers button[type=submit]")
        .await;
    browser.wait_for_heading("sev1 Payments down").await;
    let published = browser.text("#published").await;
    assert!(published.contains("is public at"), "{published}");
    browser
        .eval("document.getElementById('for-customers').scrollIntoView(); return 1")
        .await;
    browser.screenshot("coe-for-customers-published").await;
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
    browser.goto(&url).await;
    browser.wait_for_heading("Incident summary").await;
    let page = browser.text("main").await;
    assert!(page.contains("12% of card payments failed"), "{page}");
    assert!(!page.contains("Payments down"), "{page}");
    browser.screenshot("summary-public").await;
    crate::html::assert_accessible_now(&browser).await;
    let html = reqwest::get(&url)
        .await
        .expect("sent")
        .text()
        .await
        .expect("html");
    let mut saved = Vec::new();
    crate::html::save(&mut saved, "summary-public", &html);
    crate::html::assert_valid(&crate::html::vnu_jar(), &saved);

    browser.goto(&w.app.url(&format!("/coes/{id}"))).await;
    browser.wait_for_heading("sev1 Payments down").await;
    browser
        .click_to_load("#for-customers button[type=submit]")
        .await;
    browser.wait_for_heading("sev1 Payments down").await;
    let box_text = browser.text("#for-customers").await;
    assert!(box_text.contains("was taken down"), "{box_text}");
    assert_eq!(reqwest::get(&url).await.expect("sent").status(), 404);
    browser.goto(&url).await;
    browser.screenshot("summary-revoked").await;
    browser
        .goto(&w.app.url(&format!("/coes/{id}/history")))
        .await;
    let history = browser.text("main").await;
    assert!(
        history.contains("published its summary for customers")
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
