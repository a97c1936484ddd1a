//! A COE is owned from the first minute: the alert's `owner` label, its `team` label,
//! the service map admins keep on the admin page, then `ownership.default_owner`; a
//! COE none of them owns is told to the admins, heads their work, and anyone takes it.

use coe::db::schema::outbox_emails;
use diesel::prelude::*;
use reqwest::header::{COOKIE, LOCATION};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, TestApp};
use crate::pages::{browser, csrf_of, get_page, post_form, sign_in};

/// Sends one sev1 event of group `group` with `labels` on `service`; answers the
/// COE draft it opened.
async fn draft_of(app: &TestApp, group: &str, service: &str, labels: Value) -> Value {
    let ingest = app.token(&format!("ingest-{group}"), coe::domain::Role::Ingest);
    let admin = app.token(&format!("reader-{group}"), coe::domain::Role::Admin);
    let event = json!({"dedup_key": format!("{group}-1"), "group_key": group,
        "title": format!("{group} is failing"), "severity": "sev1", "service": service,
        "labels": labels});
    let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED, "{group}");
    let coes = app.get_json("/api/v1/coes?limit=200", &admin).await;
    let id = coes["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .find(|c| c["title"] == format!("{group} is failing"))
        .and_then(|c| c["id"].as_str())
        .unwrap_or_else(|| panic!("a draft for {group}: {coes}"))
        .to_owned();
    app.get_json(&format!("/api/v1/coes/{id}"), &admin).await
}

/// Puts `email` into the directory (an admin when `admin`).
pub(crate) async fn person(app: &TestApp, email: &str, admin: bool) {
    let token = app.token(
        &format!("hr-{}", email.replace(['@', '.'], "-")),
        coe::domain::Role::Admin,
    );
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{email}")))
        .bearer_auth(&token)
        .json(&json!({"name": email.split('@').next()}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    if admin {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}/admin")))
            .bearer_auth(&token)
            .json(&json!({"is_admin": true}))
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), 200);
    }
}

#[tokio::test]
async fn a_coe_is_owned_by_the_first_rule_that_names_someone_and_anyone_takes_an_unowned_one() {
    let app = spawn_app().await;
    person(&app, "root@example.com", true).await;
    person(&app, "olga@example.com", false).await;
    let root = sign_in(&app, "root@example.com").await;

    // The admin page sets a team's default owner and a service's owner and reviewer.
    for (to, fields) in [
        (
            "/admin/ownership/teams",
            vec![("team", "payments"), ("owner", "pat@example.com")],
        ),
        (
            "/admin/ownership/services",
            vec![
                ("service", "checkout"),
                ("owner", "sam@example.com"),
                ("reviewer", "rev@example.com"),
            ],
        ),
        (
            "/admin/ownership/services",
            vec![("service", "ledger"), ("team", "payments")],
        ),
    ] {
        let res = post_form(&app, &root, "/admin/ownership", to, &fields).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{to} {fields:?}");
    }
    // A slip of the keyboard is refused there too, naming the address meant.
    let res = post_form(
        &app,
        &root,
        "/admin/ownership",
        "/admin/ownership/teams",
        &[("team", "search"), ("owner", "olga@exmaple.com")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("did you mean olga@example.com?"), "{html}");
    assert!(
        html.contains("value=\"olga@exmaple.com\""),
        "typed text kept: {html}"
    );
    // What customers call a service is what they read: no internal host, no person.
    for (name, named) in [
        ("search-es-03.internal", "search-es-03.internal"),
        ("Ask olga@example.com", "olga@example.com"),
    ] {
        let res = post_form(
            &app,
            &root,
            "/admin/ownership",
            "/admin/ownership/services",
            &[("service", "search"), ("customer_name", name)],
        )
        .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{name}");
        let html = res.text().await.expect("html");
        assert!(
            html.contains("What customers call it") && html.contains(named),
            "{name}: {html}"
        );
    }
    let res = post_form(
        &app,
        &root,
        "/admin/ownership",
        "/admin/ownership/services",
        &[("service", "search"), ("customer_name", "Search")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, "/admin/ownership", Some(&root))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("<td data-label=\"Service\">checkout</td>")
            && html.contains("<td data-label=\"Customers call it\">Search</td>"),
        "{html}"
    );

    // 1. The alert's owner label, when the directory knows the person.
    let coe = draft_of(
        &app,
        "a",
        "checkout",
        json!({"owner": "olga@example.com", "team": "payments"}),
    )
    .await;
    assert_eq!(coe["owner"], "olga@example.com");
    // An owner label naming nobody known falls through to the next rule.
    let coe = draft_of(
        &app,
        "b",
        "search",
        json!({"owner": "ghost@example.com", "team": "payments"}),
    )
    .await;
    assert_eq!(coe["owner"], "pat@example.com", "the team label");
    // 3. The service map: the service's owner and its default reviewer.
    let coe = draft_of(&app, "c", "checkout", json!({})).await;
    assert_eq!(coe["owner"], "sam@example.com");
    assert_eq!(coe["reviewer"], "rev@example.com");
    // … or the service's team's default owner.
    let coe = draft_of(&app, "d", "ledger", json!({})).await;
    assert_eq!(coe["owner"], "pat@example.com");

    // Nothing names an owner: it opens unowned, the admins are told.
    let coe = draft_of(&app, "e", "unmapped", json!({})).await;
    assert!(coe["owner"].is_null(), "{coe}");
    let id = coe["id"].as_str().expect("id").to_owned();
    let told: Vec<(String, String)> = {
        let mut conn = app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::kind.eq("coe_opened"))
            .select((outbox_emails::recipient, outbox_emails::subject))
            .load(&mut conn)
            .expect("outbox")
    };
    assert!(
        told.iter()
            .any(|(to, subject)| to == "root@example.com"
                && subject.contains("Nobody owns a new COE")),
        "{told:?}"
    );
    // It heads the admin's work and the dashboard.
    for page in ["/", "/dashboard"] {
        let html = get_page(&app, page, Some(&root))
            .await
            .text()
            .await
            .expect("html");
        assert!(html.contains("Nobody owns these COEs"), "{page}: {html}");
        assert!(html.contains(&format!("/coes/{id}")), "{page}: {html}");
    }

    // Anyone takes it with the button; a second taker is told who was first.
    let bo = sign_in(&app, "bo@example.com").await;
    let page = format!("/coes/{id}");
    let html = get_page(&app, &page, Some(&bo))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("Take ownership"), "{html}");
    let res = browser()
        .post(app.url(&format!("{page}/take")))
        .header(COOKIE, &bo)
        .form(&[("csrf", csrf_of(&html))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[LOCATION], format!("{page}?did=take#details"));
    let admin = app.admin_token();
    let coe = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(coe["owner"], "bo@example.com");
    let cy = sign_in(&app, "cy@example.com").await;
    let res = post_form(&app, &cy, "/", &format!("{page}/take"), &[]).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("bo@example.com owns this COE already"));
    let html = get_page(&app, "/", Some(&root))
        .await
        .text()
        .await
        .expect("html");
    assert!(!html.contains(&format!("/coes/{id}\"")), "taken: {html}");
}

#[tokio::test]
async fn the_default_owner_comes_last() {
    let app = spawn_app_with(|s| {
        s.ownership.default_owner = Some("duty@example.com".into());
        s.ownership
            .services
            .insert("search".into(), "sue@example.com".into());
    })
    .await;
    let coe = draft_of(&app, "s", "search", json!({})).await;
    assert_eq!(coe["owner"], "sue@example.com", "the settings' service map");
    let coe = draft_of(&app, "x", "elsewhere", json!({})).await;
    assert_eq!(coe["owner"], "duty@example.com");
}

#[tokio::test]
async fn the_services_the_incidents_name_are_listed_to_be_given_owners() {
    let app = spawn_app().await;
    person(&app, "root@example.com", true).await;
    let root = sign_in(&app, "root@example.com").await;
    let html = get_page(&app, "/admin/ownership", Some(&root))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("No incident has named a service yet"),
        "{html}"
    );

    draft_of(&app, "s1", "checkout", json!({})).await;
    draft_of(&app, "s2", "checkout", json!({})).await;
    draft_of(&app, "s3", "search & browse", json!({})).await;
    let res = post_form(
        &app,
        &root,
        "/admin/ownership",
        "/admin/ownership/services",
        &[("service", "checkout"), ("owner", "root@example.com")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    let html = get_page(&app, "/admin/ownership", Some(&root))
        .await
        .text()
        .await
        .expect("html");
    let seen = crate::html::text_of(&html, "seen");
    assert!(
        seen.contains("1 of them has no owner in the service map yet"),
        "{seen}"
    );
    // Busiest first: checkout's two incidents, then the one of search & browse.
    let (checkout, search) = (
        seen.find("checkout 2 2")
            .unwrap_or_else(|| panic!("checkout, 2 incidents, 2 alerts: {seen}")),
        seen.find("search & browse 1 1")
            .expect("search & browse, 1 and 1"),
    );
    assert!(checkout < search, "{seen}");
    assert!(seen.contains("in the service map"), "{seen}");
    let link = "/admin/ownership?service=search+%26+browse#services";
    assert!(
        html.contains(&format!("<a href=\"{link}\">Give it an owner</a>")),
        "{html}"
    );
    // The link fills the service map's form with the service.
    let html = get_page(&app, link, Some(&root))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("name=\"service\" type=\"text\" required maxlength=\"200\" value=\"search &amp; browse\""),
        "{html}"
    );
    // Mapped as the ownership chain finds it, whatever the case of its letters.
    let res = post_form(
        &app,
        &root,
        "/admin/ownership",
        "/admin/ownership/services",
        &[
            ("service", "Search & Browse"),
            ("owner", "root@example.com"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, "/admin/ownership", Some(&root))
        .await
        .text()
        .await
        .expect("html");
    let seen = crate::html::text_of(&html, "seen");
    assert!(
        seen.contains("Each has its owner in the service map"),
        "{seen}"
    );
}
