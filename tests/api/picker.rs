//! Pages at the size of a large organisation (issue 50): the people picker searches
//! the directory instead of every page carrying it, and the board pages its actions.
//! On both databases.

use diesel::prelude::*;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};
use crate::pages::{get_page, sign_in};

/// Puts `n` people into the directory in one go: `person.{i}@example.com`, named
/// "Given{i} Family{i}", in team `team-{i % 100}`; person 4242 is Maria Lopez.
fn fill_directory(app: &TestApp, n: usize) {
    use coe::db::schema::people;
    let mut conn = app.pool.get().expect("conn");
    let now = coe::db::now();
    let rows: Vec<coe::db::models::PersonRow> = (0..n)
        .map(|i| coe::db::models::PersonRow {
            email: if i == 4242 {
                "maria.lopez@example.com".to_owned()
            } else {
                format!("person.{i:05}@example.com")
            },
            name: Some(if i == 4242 {
                "Maria Lopez".to_owned()
            } else {
                format!("Given{i} Family{i}")
            }),
            team: Some(format!("team-{}", i % 100)),
            manager_email: None,
            timezone: None,
            created_at: now,
            updated_at: now,
            feed_token_hash: None,
            is_admin: false,
            bar_raiser: false,
            scim_id: None,
            active: true,
            left_at: None,
            scim_manager_ref: None,
        })
        .collect();
    for chunk in rows.chunks(500) {
        match &mut *conn {
            coe::db::DbConnection::Sqlite(c) => {
                diesel::insert_into(people::table).values(chunk).execute(c)
            }
            coe::db::DbConnection::Pg(c) => {
                diesel::insert_into(people::table).values(chunk).execute(c)
            }
        }
        .expect("people");
    }
}

async fn find_page(app: &TestApp, cookie: Option<&str>, q: &str) -> reqwest::Response {
    let q: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    get_page(app, &format!("/people/find?q={q}"), cookie).await
}

fn emails(found: &Value, key: &str) -> Vec<String> {
    found[key]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .map(|p| p["email"].as_str().expect("email").to_owned())
        .collect()
}

#[tokio::test]
async fn the_people_search_finds_anyone_among_ten_thousand() {
    let app = spawn_app().await;
    fill_directory(&app, 10_000);
    let cookie = sign_in(&app, "person.00001@example.com").await;

    // By a part of the name, whoever they are (the 5,001st and later too).
    let res = find_page(&app, Some(&cookie), "lop").await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap_or_default(),
        "application/json"
    );
    let found: Value = res.json().await.expect("json");
    assert_eq!(emails(&found, "people"), ["maria.lopez@example.com"]);
    assert_eq!(found["people"][0]["name"], "Maria Lopez");
    assert_eq!(found["people"][0]["team"], "team-42");
    let found: Value = find_page(&app, Some(&cookie), "Family9999")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(emails(&found, "people"), ["person.09999@example.com"]);
    // Many match: at most ten, those starting with the text first.
    let found: Value = find_page(&app, Some(&cookie), "given1")
        .await
        .json()
        .await
        .expect("json");
    let list = emails(&found, "people");
    assert_eq!(list.len(), 10, "{list:?}");
    // By team; by address.
    let found: Value = find_page(&app, Some(&cookie), "team-42")
        .await
        .json()
        .await
        .expect("json");
    assert!(emails(&found, "people").contains(&"maria.lopez@example.com".to_owned()));
    let found: Value = find_page(&app, Some(&cookie), "MARIA.L")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(emails(&found, "people"), ["maria.lopez@example.com"]);
    // Wildcards are letters like any other; nothing typed finds nobody.
    for q in ["%", "_", "\\", ""] {
        let found: Value = find_page(&app, Some(&cookie), q)
            .await
            .json()
            .await
            .expect("json");
        assert_eq!(emails(&found, "people"), Vec::<String>::new(), "{q:?}");
    }
    // Too long: 422 naming the field, in JSON.
    let res = find_page(&app, Some(&cookie), &"a".repeat(101)).await;
    assert_eq!(res.status(), 422);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["fields"][0]["field"], "q", "{body}");
    // Not signed in: the sign-in page, never the directory.
    let res = find_page(&app, None, "maria").await;
    assert_eq!(res.status(), 303);
    assert!(res.headers()["location"]
        .to_str()
        .unwrap_or_default()
        .starts_with("/sign-in"));

    // Teams, for the board's team filter: those starting with the text first.
    let res = get_page(&app, "/teams/find?q=team-4", Some(&cookie)).await;
    assert_eq!(res.status(), 200);
    let teams: Value = res.json().await.expect("json");
    let teams: Vec<&str> = teams["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .map(|t| t.as_str().expect("a name"))
        .collect();
    assert_eq!(teams.len(), 10, "{teams:?}");
    assert_eq!(teams[0], "team-4");
    assert!(teams.iter().all(|t| t.starts_with("team-4")), "{teams:?}");
    let res = get_page(&app, "/teams/find?q=TEAM-99", Some(&cookie)).await;
    let teams: Value = res.json().await.expect("json");
    assert_eq!(teams["teams"], json!(["team-99"]));
    let long = format!("/teams/find?q={}", "a".repeat(101));
    assert_eq!(get_page(&app, &long, Some(&cookie)).await.status(), 422);
    assert_eq!(
        get_page(&app, "/teams/find?q=team", None).await.status(),
        303
    );

    // The API's: a member's token; `limit`; its bounds; no token, no answer.
    let token = crate::actions::person_token(&app, "p1", "person.00001@example.com");
    let found = app
        .get_json("/api/v1/people?q=given1&limit=5", &token)
        .await;
    assert_eq!(emails(&found, "found").len(), 5, "{found}");
    assert!(found.get("people").is_none(), "{found}");
    let found = app.get_json("/api/v1/people?q=lopez", &token).await;
    assert_eq!(emails(&found, "found"), ["maria.lopez@example.com"]);
    for (query, field) in [
        ("q=a&limit=0", "limit"),
        ("q=a&limit=51", "limit"),
        ("q=a&limit=x", "limit"),
        ("limit=0", "limit"),
    ] {
        let res = app
            .get(&format!("/api/v1/people?{query}"), Some(&token))
            .await;
        let (_, _, fields) = crate::helpers::error_of(res, 422).await;
        assert_eq!(fields[0].0, field, "{query}");
    }
    let long = format!("/api/v1/people?q={}", "a".repeat(101));
    let (_, _, fields) = crate::helpers::error_of(app.get(&long, Some(&token)).await, 422).await;
    assert_eq!(fields[0].0, "q");
    assert_eq!(app.get("/api/v1/people?q=maria", None).await.status(), 401);
}

/// With 10,000 people in the directory, a COE's page (as its owner, who may name
/// anyone) and the board carry none of them: tens of kilobytes, not hundreds.
#[tokio::test]
async fn pages_carry_no_directory() {
    let app = spawn_app().await;
    fill_directory(&app, 10_000);
    let admin = app.admin_token();
    let id = crate::inspection_pages::coe(&app, &admin, "Checkout down", "checkout", "sev2").await;
    let owner = "person.00007@example.com";
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{id}")))
        .bearer_auth(&admin)
        .header("If-Match", "\"1\"")
        .json(&json!({"owner": owner}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    for i in 0..5 {
        crate::inspection_pages::action(
            &app,
            &admin,
            &id,
            &format!("Fix {i}"),
            &format!("person.{:05}@example.com", i * 1000 + 3),
            -3 - i,
        )
        .await;
    }
    let cookie = sign_in(&app, owner).await;
    for path in [format!("/coes/{id}"), "/board".to_owned()] {
        let html = get_page(&app, &path, Some(&cookie))
            .await
            .text()
            .await
            .expect("html");
        assert!(html.len() < 60_000, "{path}: {} bytes", html.len());
        assert!(!html.contains("Given9999"), "{path} carries the directory");
        assert!(html.contains("data-people"), "{path}: its picker");
        assert!(!html.contains("team-99"), "{path} carries the teams");
    }
}

/// Without script, a slip of a person's address is answered with the person meant.
#[tokio::test]
async fn a_slip_of_an_address_is_answered_with_the_person_meant() {
    let app = spawn_app().await;
    fill_directory(&app, 10_000);
    let admin = app.admin_token();
    let id = crate::inspection_pages::coe(&app, &admin, "Checkout down", "checkout", "sev2").await;
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{id}")))
        .bearer_auth(&admin)
        .header("If-Match", "\"1\"")
        .json(&json!({"reviewer": "mraia.lopez@example.com"}))
        .send()
        .await
        .expect("sent");
    let (_, _, fields) = crate::helpers::error_of(res, 422).await;
    assert_eq!(fields[0].0, "reviewer");
    assert!(
        fields[0]
            .1
            .contains("did you mean maria.lopez@example.com?"),
        "{fields:?}"
    );
}

/// The board pages its actions: the first page of the overdue (the most overdue
/// first) with the count of all, and the next.
#[tokio::test]
async fn the_board_pages_its_actions() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let id = crate::inspection_pages::coe(&app, &admin, "Checkout down", "checkout", "sev2").await;
    for i in 0..60 {
        crate::inspection_pages::action(
            &app,
            &admin,
            &id,
            &format!("Overdue {i:02}"),
            "ana@example.com",
            -1 - i,
        )
        .await;
    }
    let cookie = sign_in(&app, "ana@example.com").await;
    let first = get_page(&app, "/board", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(first.contains("Overdue actions (1–50 of 60)"), "{first}");
    assert!(first.contains(">Overdue 59</a>"), "the most overdue first");
    assert!(!first.contains(">Overdue 00</a>"), "{first}");
    assert!(
        first.contains("href=\"/board?offset=50\">Next</a>"),
        "{first}"
    );
    let second = get_page(&app, "/board?offset=50", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(second.contains("Overdue actions (51–60 of 60)"), "{second}");
    assert!(second.contains(">Overdue 00</a>"), "{second}");
    assert!(second.contains(">Previous</a>"), "{second}");
    // An offset past the end, or not a number: said, not a 500.
    let res = get_page(&app, "/board?offset=x", Some(&cookie)).await;
    assert_eq!(res.status(), 400);
    let past = get_page(&app, "/board?offset=500", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        past.contains("This page is past the last of the 60 actions")
            && past.contains("href=\"/board\">back to the first page</a>"),
        "{past}"
    );
}

/// A COE of owner person.00007, among 10,000 people: its id.
async fn owned_coe(app: &TestApp) -> String {
    let admin = app.admin_token();
    let id = crate::inspection_pages::coe(app, &admin, "Checkout down", "checkout", "sev2").await;
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{id}")))
        .bearer_auth(&admin)
        .header("If-Match", "\"1\"")
        .json(&json!({"owner": "person.00007@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    id
}

/// The browser journey: the owner picks a reviewer by typing part of a name among
/// 10,000 people; with script off, an address typed with a slip is answered with the
/// person meant.
#[tokio::test]
async fn an_owner_picks_a_reviewer_by_typing_part_of_a_name() {
    use crate::webdriver::Browser;
    let app = spawn_app().await;
    fill_directory(&app, 10_000);
    let id = owned_coe(&app).await;
    let path = format!("/coes/{id}");

    let browser = Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "person.00007@example.com", &path).await;
    browser.click("#details summary").await;
    browser.type_into("#d-reviewer", "Lopez").await;
    let offered = crate::eventually::eventually_async(
        std::time::Duration::from_secs(10),
        "someone offered",
        || async {
            let offered = browser
                .eval(
                    "return [...document.querySelectorAll('#d-reviewer-found option')]\
                     .map(o => o.value + ' | ' + o.label)",
                )
                .await;
            if offered.as_array().is_some_and(|o| !o.is_empty()) {
                Ok(offered)
            } else {
                Err(format!("nothing offered: {offered}"))
            }
        },
    )
    .await;
    assert_eq!(
        offered,
        json!(["maria.lopez@example.com | Maria Lopez · team-42"])
    );
    browser.set_size(1280, 900).await;
    browser.screenshot("picker-typed").await;
    // Picking the person fills their address; saving names her.
    browser
        .set_value("#d-reviewer", "maria.lopez@example.com")
        .await;
    browser
        .click_to_load("#details button[formaction$='/details']")
        .await;
    browser.wait_for_url(&path).await;
    let facts = browser.text(".facts").await;
    assert!(facts.contains("Maria Lopez"), "{facts}");
    browser.screenshot("picker-picked").await;
    crate::html::assert_accessible_now(&browser).await;
    // The board's filters find owners and teams the same way.
    browser.goto(&app.url("/board")).await;
    browser.click(".filters-fold summary").await;
    for (field, typed, offered) in [
        ("#b-team", "team-42", "team-42"),
        ("#b-owner", "lopez", "maria.lopez@example.com"),
    ] {
        browser.type_into(field, typed).await;
        let script = format!(
            "return [...document.querySelectorAll('{field}-found option')].map(o => o.value)"
        );
        crate::eventually::eventually_async(
            std::time::Duration::from_secs(10),
            &format!("{field} offers {offered}"),
            || async {
                let got = browser.eval(&script).await;
                if got
                    .as_array()
                    .is_some_and(|o| o.iter().any(|v| v == offered))
                {
                    Ok(())
                } else {
                    Err(format!("{field} offered {got}"))
                }
            },
        )
        .await;
    }
    browser.screenshot("picker-board-filters").await;
    drop(browser);

    // Without script: the field takes an address; a slip is answered by name.
    let browser = Browser::start_without_script().await;
    crate::browser::sign_in_to(&browser, &app, "person.00007@example.com", &path).await;
    browser.click("#details summary").await;
    browser.clear("#d-reviewer").await;
    browser
        .type_into("#d-reviewer", "mraia.lopez@example.com")
        .await;
    browser
        .click_to_load("#details button[formaction$='/details']")
        .await;
    let said = browser.text("#details").await;
    assert!(
        said.contains("did you mean maria.lopez@example.com?"),
        "{said}"
    );
    browser.screenshot("picker-slip-without-script").await;
}
