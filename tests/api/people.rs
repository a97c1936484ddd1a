//! The people directory: one person at a time, and CSV import with a per-line report.

use coe::domain::Role;
use serde_json::json;

use crate::helpers::{error_of, json, spawn_app};

#[tokio::test]
async fn a_person_is_put_and_listed_and_bad_fields_are_named() {
    let app = spawn_app().await;
    let token = app.token("hr", Role::Admin);
    let res = app
        .client
        .put(app.url("/api/v1/people/Alice@Example.com"))
        .bearer_auth(&token)
        .json(&json!({"name": "Alice", "team": "payments", "manager_email": "bob@example.com", "timezone": "Europe/Berlin"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let alice = json(res).await;
    assert_eq!(alice["email"], "alice@example.com");
    assert_eq!(alice["manager_email"], "bob@example.com");

    for (body, field) in [
        (json!([]), "body"),
        (json!(["Alice", "payments"]), "body"),
        (json!({"timezone": "Mars/Base"}), "timezone"),
        (json!({"manager_email": "nope"}), "manager_email"),
        (
            json!({"manager_email": "alice@example.com"}),
            "manager_email",
        ),
    ] {
        let res = app
            .client
            .put(app.url("/api/v1/people/alice@example.com"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .expect("sent");
        let (_, _, fields) = error_of(res, 422).await;
        assert_eq!(fields[0].0, field, "{body}");
    }
    let res = app
        .client
        .put(app.url("/api/v1/people/not-an-email"))
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await
        .expect("sent");
    error_of(res, 422).await;

    let list = app.get_json("/api/v1/people?team=payments", &token).await;
    assert_eq!(list["people"].as_array().expect("people").len(), 1);
    assert_eq!(list["people"][0]["timezone"], "Europe/Berlin");
}

#[tokio::test]
async fn csv_import_takes_the_good_lines_and_reports_every_bad_one() {
    let app = spawn_app().await;
    let token = app.token("hr", Role::Admin);
    let csv = "email,name,team,manager_email,timezone\n\
               carol@example.com,Carol,search,dave@example.com,America/New_York\n\
               not-an-email,Nobody,search,,\n\
               erin@example.com,Erin,search,also-bad,UTC\n\
               frank@example.com,Frank,ops,,Nowhere/Land\n\
               dave@example.com,\"Dave, the manager\",search,,UTC\n\
               too,many,fields,in,this,line\n";
    let res = app
        .client
        .post(app.url("/api/v1/people/import"))
        .bearer_auth(&token)
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let report = json(res).await;
    assert_eq!(report["created"], 2, "{report}");
    assert_eq!(report["updated"], 0);
    let rejected = report["rejected"].as_array().expect("rejected");
    let lines: Vec<i64> = rejected
        .iter()
        .map(|r| r["line"].as_i64().expect("line"))
        .collect();
    assert_eq!(lines, [3, 4, 5, 7], "{report}");
    assert!(rejected[0]["problem"]
        .as_str()
        .expect("p")
        .contains("email"));
    assert!(rejected[1]["problem"]
        .as_str()
        .expect("p")
        .contains("manager_email"));
    assert!(rejected[2]["problem"]
        .as_str()
        .expect("p")
        .contains("timezone"));

    let people = app.get_json("/api/v1/people", &token).await;
    let emails: Vec<&str> = people["people"]
        .as_array()
        .expect("people")
        .iter()
        .map(|p| p["email"].as_str().expect("e"))
        .collect();
    assert_eq!(emails, ["carol@example.com", "dave@example.com"]);
    assert_eq!(people["people"][1]["name"], "Dave, the manager");

    // Importing again updates.
    let res = app
        .client
        .post(app.url("/api/v1/people/import"))
        .bearer_auth(&token)
        .body("email,team\ncarol@example.com,platform\n")
        .send()
        .await
        .expect("sent");
    let report = json(res).await;
    assert_eq!(report["updated"], 1, "{report}");

    let res = app
        .client
        .post(app.url("/api/v1/people/import"))
        .bearer_auth(&token)
        .body("name,team\nx,y\n")
        .send()
        .await
        .expect("sent");
    let (_, message, _) = error_of(res, 422).await;
    assert!(message.contains("header"), "{message}");
}

#[tokio::test]
async fn csv_lines_with_a_nul_or_inside_a_quote_never_closed_are_each_reported() {
    let app = spawn_app().await;
    let token = app.token("hr", Role::Admin);
    let import = |csv: &'static str| {
        app.client
            .post(app.url("/api/v1/people/import"))
            .bearer_auth(&token)
            .body(csv)
            .send()
    };
    // A NUL (which PostgreSQL cannot store) rejects its line only, on both databases.
    let res = import("email,name,team\nnul@example.com,Nu\0l,ops\nok@example.com,Ok,ops\n")
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let report = json(res).await;
    assert_eq!(report["created"], 1, "{report}");
    assert_eq!(report["rejected"][0]["line"], 2, "{report}");
    let problem = report["rejected"][0]["problem"].as_str().expect("problem");
    assert!(
        problem.contains("name") && problem.contains("control character"),
        "{problem}"
    );

    // A quote opened on line 3 and never closed takes lines 3 to 5: each is reported.
    let res = import(
        "email,name,team\n\
         first@example.com,First,ops\n\
         second@example.com,\"Second,ops\n\
         third@example.com,Third,ops\n\
         fourth@example.com,Fourth,ops\n",
    )
    .await
    .expect("sent");
    assert_eq!(res.status(), 200);
    let report = json(res).await;
    assert_eq!(report["created"], 1, "{report}");
    let lines: Vec<i64> = report["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| r["line"].as_i64().expect("line"))
        .collect();
    assert_eq!(lines, [3, 4, 5], "{report}");
    assert!(report["rejected"][2]["problem"]
        .as_str()
        .expect("problem")
        .contains("line 3 opens a quote"));
    let people = app.get_json("/api/v1/people", &token).await;
    let emails: Vec<&str> = people["people"]
        .as_array()
        .expect("people")
        .iter()
        .map(|p| p["email"].as_str().expect("e"))
        .collect();
    assert_eq!(emails, ["first@example.com", "ok@example.com"]);
}

#[tokio::test]
async fn an_action_owner_not_in_the_directory_is_added_with_just_the_email() {
    let app = spawn_app().await;
    let token = app.token("writer", Role::Member);
    let res = app
        .post_json("/api/v1/coes", Some(&token), &json!({"title": "T"}))
        .await;
    let coe = json(res).await;
    let id = coe["id"].as_str().expect("id");
    let due = (chrono::Utc::now() + chrono::Duration::days(5)).date_naive();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{id}/actions"),
            Some(&token),
            &json!({"title": "Add an alert", "owner": "New.Person@example.com", "due_date": due, "priority": "medium", "kind": "detect"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let people = app.get_json("/api/v1/people", &token).await;
    assert_eq!(people["people"][0]["email"], "new.person@example.com");
    assert!(people["people"][0]["name"].is_null());
}

/// RFC 5545's rules for the events of a feed: a UID, unique; a DTSTAMP in UTC; an
/// all-day DTSTART with a DTEND of the same kind that is later (3.8.2.2; a one-day
/// event ends the next day).
fn rfc5545_rules(text: &str, events: &[ical::parser::ical::component::IcalEvent]) {
    let mut uids = std::collections::HashSet::new();
    for event in events {
        let prop = |name: &str| event.properties.iter().find(|p| p.name == name);
        let uid = prop("UID").and_then(|p| p.value.clone()).expect("a UID");
        assert!(uids.insert(uid.clone()), "UID {uid} twice");
        let stamp = prop("DTSTAMP")
            .and_then(|p| p.value.clone())
            .expect("a DTSTAMP");
        assert!(
            chrono::NaiveDateTime::parse_from_str(&stamp, "%Y%m%dT%H%M%SZ").is_ok(),
            "DTSTAMP in UTC: {stamp}"
        );
        let date = |name: &str| {
            let p = prop(name).unwrap_or_else(|| panic!("{name} in {text}"));
            let is_date = p.params.as_ref().is_some_and(|params| {
                params
                    .iter()
                    .any(|(k, v)| k == "VALUE" && v.iter().any(|v| v == "DATE"))
            });
            assert!(is_date, "{name} is a date (VALUE=DATE): {text}");
            chrono::NaiveDate::parse_from_str(p.value.as_deref().unwrap_or_default(), "%Y%m%d")
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        let (start, end) = (date("DTSTART"), date("DTEND"));
        assert_eq!(end, start + chrono::Duration::days(1), "{text}");
    }
}

#[tokio::test]
async fn a_person_subscribes_to_a_calendar_of_their_open_actions() {
    let app = spawn_app().await;
    let mut conn = app.pool.get().expect("conn");
    let (_, ann) = coe::services::directory::tokens::create(
        &mut conn,
        &coe::domain::TokenName::parse("ann").expect("name"),
        Role::Member,
        Some(&coe::domain::EmailAddress::parse("ann@example.com").expect("email")),
    )
    .expect("token");
    drop(conn);
    let ann = ann.expose().to_owned();
    let other = app.token("other", Role::Member);

    let coe = json(
        app.post_json(
            "/api/v1/coes",
            Some(&ann),
            &json!({"title": "Cache outage"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id");
    let due = (chrono::Utc::now() + chrono::Duration::days(4)).date_naive();
    let mut actions = Vec::new();
    for title in ["Add cache alerts", "Shard the cache"] {
        let res = app
            .post_json(&format!("/api/v1/coes/{id}/actions"), Some(&ann),
                &json!({"title": title, "owner": "ann@example.com", "due_date": due, "priority": "high", "kind": "detect"}))
            .await;
        actions.push(json(res).await["id"].as_str().expect("id").to_owned());
    }
    let res = app
        .post_json(
            &format!("/api/v1/actions/{}/complete", actions[1]),
            Some(&ann),
            &json!({"note": "Sharded, and the alert fired in the game day."}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let res = app
        .post_json(
            "/api/v1/people/ann@example.com/feed-token",
            Some(&other),
            &json!({}),
        )
        .await;
    error_of(res, 403).await;
    let res = app
        .post_json(
            "/api/v1/people/ann@example.com/feed-token",
            Some(&ann),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let url = json(res).await["url"].as_str().expect("url").to_owned();
    let path = url
        .split_once("127.0.0.1:8080")
        .map(|(_, p)| p.to_owned())
        .expect("path of the feed URL");

    let res = app.client.get(app.url(&path)).send().await.expect("sent");
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .expect("ct")
        .starts_with("text/calendar"));
    let text = res.text().await.expect("text");
    let calendars: Vec<_> = ical::IcalParser::new(std::io::BufReader::new(text.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .expect("a valid iCalendar document");
    assert_eq!(calendars.len(), 1);
    let events = &calendars[0].events;
    assert_eq!(events.len(), 1, "only the open action: {text}");
    let prop = |name: &str| {
        events[0]
            .properties
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.value.clone())
            .unwrap_or_default()
    };
    assert_eq!(prop("SUMMARY"), "Due: Add cache alerts");
    assert_eq!(prop("DTSTART"), due.format("%Y%m%d").to_string());
    assert!(prop("UID").starts_with(&actions[0]));
    rfc5545_rules(&text, &calendars[0].events);
    // Its links open the pages (as the emails' do), not the JSON API.
    let page = format!("http://127.0.0.1:8080/actions/{}", actions[0]);
    assert_eq!(prop("URL"), page);
    let description = prop("DESCRIPTION");
    assert!(description.contains(&page), "{description}");
    assert!(
        description.contains(&format!("http://127.0.0.1:8080/coes/{id}")),
        "{description}"
    );
    assert!(!text.contains("/api/v1/"), "{text}");

    // A moved due date moves its event.
    let later = due + chrono::Duration::days(9);
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/actions/{}", actions[0])))
        .bearer_auth(&ann)
        .json(&json!({"due_date": later, "reason": "Waiting for the vendor"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let text = app
        .client
        .get(app.url(&path))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    let moved: Vec<_> = ical::IcalParser::new(std::io::BufReader::new(text.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .expect("a valid iCalendar document");
    rfc5545_rules(&text, &moved[0].events);
    let start = moved[0].events[0]
        .properties
        .iter()
        .find(|p| p.name == "DTSTART")
        .and_then(|p| p.value.clone());
    assert_eq!(start, Some(later.format("%Y%m%d").to_string()));

    let wrong = path.replace("token=coe_", "token=coe_0");
    error_of(
        app.client.get(app.url(&wrong)).send().await.expect("sent"),
        401,
    )
    .await;
    let none = path.split('?').next().expect("path").to_owned();
    error_of(
        app.client.get(app.url(&none)).send().await.expect("sent"),
        401,
    )
    .await;
    // A new URL replaces the old one.
    app.post_json(
        "/api/v1/people/ann@example.com/feed-token",
        Some(&ann),
        &json!({}),
    )
    .await;
    error_of(
        app.client.get(app.url(&path)).send().await.expect("sent"),
        401,
    )
    .await;
}

#[tokio::test]
async fn concurrent_writes_of_one_new_person_all_succeed_and_make_one() {
    let app = spawn_app().await;
    let token = app.token("hr", Role::Admin);
    let coe = app
        .post_json(
            "/api/v1/coes",
            Some(&token),
            &json!({"title": "Race for a person"}),
        )
        .await;
    assert_eq!(coe.status(), 201);
    let coe = json(coe).await["id"].as_str().expect("id").to_owned();
    let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
    // Rounds of people not in the directory yet, each written at once by PUTs to the
    // directory and by actions assigned to them.
    for round in 0..10 {
        let email = format!("new{round}@example.com");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..8 {
            let client = app.client.clone();
            let token = token.clone();
            let request = if i % 2 == 0 {
                client
                    .put(app.url(&format!("/api/v1/people/{email}")))
                    .json(&json!({"name": format!("Writer {i}")}))
            } else {
                client
                    .post(app.url(&format!("/api/v1/coes/{coe}/actions")))
                    .json(
                        &json!({"title": format!("Action {round}.{i}"), "owner": email,
                                  "due_date": due, "priority": "low", "kind": "process"}),
                    )
            };
            tasks.spawn(async move {
                let res = request.bearer_auth(token).send().await.expect("sent");
                let status = res.status().as_u16();
                (status, res.text().await.unwrap_or_default())
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (status, body) = done.expect("task");
            assert!(status == 200 || status == 201, "{status}: {body}");
        }
    }
    let people = app.get_json("/api/v1/people", &token).await;
    for round in 0..10 {
        let email = format!("new{round}@example.com");
        let matching: Vec<_> = people["people"]
            .as_array()
            .expect("people")
            .iter()
            .filter(|p| p["email"] == email.as_str())
            .collect();
        assert_eq!(matching.len(), 1, "{email}");
        assert!(matching[0]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("Writer ")));
    }
}

/// Sends `body` to `path` with `method` and the token; the status and the JSON body.
async fn send(
    app: &crate::helpers::TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    version: Option<i64>,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut req = app
        .client
        .request(method, app.url(path))
        .bearer_auth(token)
        .json(&body);
    if let Some(v) = version {
        req = req.header("if-match", format!("\"{v}\""));
    }
    let res = req.send().await.expect("sent");
    let status = res.status().as_u16();
    (status, json(res).await)
}

#[tokio::test]
async fn people_are_named_from_the_directory_or_an_allowed_domain_and_a_slip_names_the_address_meant(
) {
    let app = crate::helpers::spawn_app_with(|s| {
        s.auth.allowed_domains = vec!["example.com".into()];
    })
    .await;
    let hr = app.token("hr", Role::Admin);
    // Reviewers are named by a person: a token of the admin's own.
    let admin = {
        let mut conn = app.pool.get().expect("conn");
        let (_, secret) = coe::services::directory::tokens::create(
            &mut conn,
            &coe::domain::TokenName::parse("lead").expect("name"),
            Role::Admin,
            Some(&coe::domain::EmailAddress::parse("lead@example.com").expect("email")),
        )
        .expect("token");
        secret.expose().to_owned()
    };
    let (status, _) = send(
        &app,
        reqwest::Method::PUT,
        "/api/v1/people/maria@partner.org",
        &hr,
        None,
        json!({"name": "Maria Lopez"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, coe) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/coes",
        &admin,
        None,
        json!({"title": "Payments down", "owner": "ana@example.com"}),
    )
    .await;
    assert_eq!(status, 201, "an allowed domain: {coe}");
    let id = coe["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/coes/{id}");

    for (typed, meant) in [
        ("maria@partnr.org", Some("maria@partner.org")),
        ("maria@exmaple.com", Some("maria@example.com")),
        ("zed@elsewhere.test", None),
    ] {
        let (status, body) = send(
            &app,
            reqwest::Method::PATCH,
            &path,
            &admin,
            Some(1),
            json!({"reviewer": typed}),
        )
        .await;
        assert_eq!(status, 422, "{typed}: {body}");
        let field = &body["error"]["fields"][0];
        assert_eq!(field["field"], "reviewer");
        let problem = field["problem"].as_str().expect("problem");
        assert!(problem.contains("not in the directory"), "{problem}");
        if let Some(meant) = meant {
            assert!(
                problem.contains(&format!("did you mean {meant}?")),
                "{problem}"
            );
        }
    }
    let doc = app.get_json(&path, &admin).await;
    assert_eq!(doc["version"], 1, "nothing was written");
    assert!(doc["reviewer"].is_null());

    // In the directory, though outside the allowed domains: taken.
    let (status, body) = send(
        &app,
        reqwest::Method::PATCH,
        &path,
        &admin,
        Some(1),
        json!({"reviewer": "maria@partner.org"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // An action's owner too, with every other problem named at once.
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        &format!("{path}/actions"),
        &admin,
        None,
        json!({"title": "Alarm on failovers", "owner": "cy@exmaple.com", "due_date": "2099-01-01",
               "priority": "high", "kind": "detect"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "owner");
    assert!(
        body["error"]["fields"][0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("did you mean cy@example.com?")),
        "{body}"
    );
    let doc = app.get_json(&path, &admin).await;
    assert_eq!(doc["actions"].as_array().map(Vec::len), Some(0));

    // The page shows names; its fields for a person find people as they are typed,
    // and it carries no directory.
    let ana = crate::pages::sign_in(&app, "ana@example.com").await;
    let html = crate::pages::get_page(&app, &format!("/coes/{id}"), Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("data-people"), "{html}");
    assert!(!html.contains("<datalist id=\"people\""), "{html}");
    assert!(
        !html.contains("<option value=\"maria@partner.org\""),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"person\" title=\"maria@partner.org\">Maria Lopez</span>"),
        "the reviewer by name: {html}"
    );
}

#[tokio::test]
async fn where_anyone_may_sign_in_only_a_slip_of_a_known_domain_is_refused() {
    let app = spawn_app().await;
    let admin = app.token("hr", Role::Admin);
    let (status, body) = send(
        &app,
        reqwest::Method::PUT,
        "/api/v1/people/ana@example.com",
        &admin,
        None,
        json!({"name": "Ana"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/coes",
        &admin,
        None,
        json!({"title": "Search down again", "owner": "bo@exmaple.com"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["fields"][0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("did you mean bo@example.com?")),
        "{body}"
    );
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        "/api/v1/coes",
        &admin,
        None,
        json!({"title": "Search down elsewhere", "owner": "new@elsewhere.org"}),
    )
    .await;
    assert_eq!(status, 201, "a new domain is nobody's slip: {body}");
}
