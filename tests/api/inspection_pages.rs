//! The inspection pages over HTTP: the overdue board (filters in the URL, by team and
//! owner, due-date moves and their reasons), the dashboard (its SVG draws the stats
//! API's figures), search, the admin pages (only for admins) and a person's calendar
//! feed.

use coe::db::schema::{coes, corrective_actions, outbox_emails};
use diesel::prelude::*;
use reqwest::header::{COOKIE, LOCATION};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{json as body_json, spawn_app, TestApp};
use crate::pages::{browser, get_page, post_form, sign_in};

async fn page(app: &TestApp, path: &str, cookie: &str) -> String {
    let res = get_page(app, path, Some(cookie)).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.expect("html")
}

async fn person(app: &TestApp, admin: &str, email: &str, team: &str) {
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{email}")))
        .bearer_auth(admin)
        .json(&json!({"team": team, "name": email.split('@').next()}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
}

pub(crate) async fn coe(
    app: &TestApp,
    admin: &str,
    title: &str,
    service: &str,
    severity: &str,
) -> String {
    let body = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(admin),
            &json!({"title": title, "service": service, "severity": severity, "owner": "lead@example.com"}),
        )
        .await,
    )
    .await;
    body["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned()
}

/// An action due `due_in` days from today; a negative value backdates it after
/// creation (due dates must be in the future when made).
pub(crate) async fn action(
    app: &TestApp,
    admin: &str,
    coe: &str,
    title: &str,
    owner: &str,
    due_in: i64,
) -> String {
    let today = chrono::Utc::now().date_naive();
    let due = today + chrono::Duration::days(due_in.max(1));
    let body = body_json(
        app.post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(admin),
            &json!({"title": title, "owner": owner, "due_date": due.to_string(),
                    "priority": "high", "kind": "prevent"}),
        )
        .await,
    )
    .await;
    let id = body["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned();
    if due_in < 1 {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&id))
            .set(corrective_actions::due_date.eq(today + chrono::Duration::days(due_in)))
            .execute(&mut conn)
            .expect("backdate");
    }
    id
}

#[tokio::test]
async fn the_board_shows_what_is_overdue_by_team_and_owner_with_its_filters_in_the_url() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    person(&app, &admin, "ana@example.com", "payments").await;
    person(&app, &admin, "cy@example.com", "payments").await;
    person(&app, &admin, "bo@example.com", "search").await;
    let checkout = coe(&app, &admin, "Checkout 502s", "checkout", "sev2").await;
    let search = coe(&app, &admin, "Search <slow>", "search", "sev3").await;
    let oldest = action(
        &app,
        &admin,
        &checkout,
        "Pool check in CI <script>x</script>",
        "ana@example.com",
        -10,
    )
    .await;
    action(
        &app,
        &admin,
        &checkout,
        "Canary deploys",
        "ana@example.com",
        -3,
    )
    .await;
    action(&app, &admin, &search, "Index warm-up", "bo@example.com", -5).await;
    action(
        &app,
        &admin,
        &checkout,
        "Runbook for 502s",
        "cy@example.com",
        2,
    )
    .await;
    // A due date moved with a reason, then overdue again.
    let moved = action(
        &app,
        &admin,
        &search,
        "Cache the facets",
        "bo@example.com",
        20,
    )
    .await;
    let later = (chrono::Utc::now().date_naive() + chrono::Duration::days(25)).to_string();
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/actions/{moved}")))
        .bearer_auth(&admin)
        .json(&json!({"due_date": later, "reason": "Waiting for the <vendor>"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&moved))
            .set(
                corrective_actions::due_date
                    .eq(chrono::Utc::now().date_naive() - chrono::Duration::days(1)),
            )
            .execute(&mut conn)
            .expect("backdate");
    }

    let lead = sign_in(&app, "lead@example.com").await;
    let html = page(&app, "/board", &lead).await;
    assert!(html.contains("Overdue: <strong>4</strong>"), "{html}");
    assert!(html.contains("Due soon: <strong>1</strong>"), "{html}");
    assert!(
        html.contains("href=\"/board?team=payments\">payments</a></td><td data-label=\"Overdue\">2</td><td data-label=\"Due soon\">1</td>"),
        "{html}"
    );
    assert!(
        html.contains("href=\"/board?team=search\">search</a></td><td data-label=\"Overdue\">2</td><td data-label=\"Due soon\">0</td>"),
        "{html}"
    );
    assert!(html.contains("10 days overdue"), "{html}");
    assert!(
        html.contains("Pool check in CI &lt;script&gt;x&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        html.contains("1×: Waiting for the &lt;vendor&gt;"),
        "{html}"
    );
    assert!(
        html.contains(&format!("href=\"/actions/{oldest}\"")),
        "one click to the action"
    );
    // Most overdue first.
    let first = html.find("Pool check in CI").expect("oldest");
    assert!(
        first < html.find("Index warm-up").expect("5 days"),
        "{html}"
    );

    // One team: its owners only, the filter in the form and in every link.
    let html = page(&app, "/board?team=payments", &lead).await;
    assert!(html.contains("Overdue: <strong>2</strong>"), "{html}");
    assert!(!html.contains("Index warm-up"), "{html}");
    assert!(
        html.contains(
            "id=\"b-team\" name=\"team\" type=\"text\" data-teams autocomplete=\"off\" value=\"payments\""
        ),
        "{html}"
    );
    assert!(
        html.contains("href=\"/board?team=payments&amp;show=due-soon\""),
        "{html}"
    );
    let html = page(&app, "/board?team=payments&show=due-soon", &lead).await;
    assert!(
        html.contains("Runbook for 502s") && !html.contains("Canary deploys"),
        "{html}"
    );
    let html = page(&app, "/board?severity=sev3", &lead).await;
    assert!(
        html.contains("Index warm-up") && !html.contains("Canary deploys"),
        "{html}"
    );
    let html = page(&app, "/board?service=checkout&sort=owner", &lead).await;
    assert!(
        html.contains("Canary deploys") && !html.contains("Index warm-up"),
        "{html}"
    );
    let html = page(&app, "/board?owner=bo@example.com", &lead).await;
    assert!(html.contains("Overdue: <strong>2</strong>"), "{html}");
    let html = page(&app, "/board?priority=low", &lead).await;
    assert!(html.contains("Nothing is overdue."), "{html}");
    assert_eq!(
        get_page(&app, "/board?severity=sev9", Some(&lead))
            .await
            .status(),
        StatusCode::BAD_REQUEST
    );

    // The owner moves a due date from the action's page: the board shows it at once.
    let ana = sign_in(&app, "ana@example.com").await;
    let next_month = (chrono::Utc::now().date_naive() + chrono::Duration::days(30)).to_string();
    let path = format!("/actions/{oldest}");
    let res = post_form(
        &app,
        &ana,
        &path,
        &format!("{path}/due-date"),
        &[
            ("due_date", &next_month),
            ("reason", "CI runners arrive next month"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = page(&app, "/board", &lead).await;
    assert!(
        html.contains("Overdue: <strong>3</strong>"),
        "the totals follow the change: {html}"
    );
    assert!(!html.contains("Pool check in CI"), "{html}");
}

/// The `data-value`s of one chart's bars, in order.
fn bar_values(html: &str, chart: &str) -> Vec<String> {
    let start = html
        .find(&format!("id=\"chart-{chart}\""))
        .expect("the chart");
    let end = html[start..].find("</svg>").expect("its end") + start;
    html[start..end]
        .split("data-value=\"")
        .skip(1)
        .map(|s| s.split('"').next().expect("value").to_owned())
        .collect()
}

#[tokio::test]
async fn the_dashboard_draws_the_figures_the_stats_api_gives() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let one = coe(&app, &admin, "Checkout 502s", "checkout", "sev2").await;
    let two = coe(&app, &admin, "Search slow", "search", "sev3").await;
    let overdue_a = action(&app, &admin, &one, "Overdue a", "ana@example.com", -3).await;
    action(&app, &admin, &one, "Overdue b", "ana@example.com", -20).await;
    let on_time = action(&app, &admin, &two, "Done on time", "bo@example.com", 5).await;
    let late = action(&app, &admin, &two, "Done late", "bo@example.com", -2).await;
    for id in [&on_time, &late] {
        let res = app
            .post_json(
                &format!("/api/v1/actions/{id}/complete"),
                Some(&admin),
                &json!({"note": "Done, and checked against its success criteria in production."}),
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    let stats: Value = app.get_json("/api/v1/stats", &admin).await;
    let weeks = stats["weeks"].as_array().expect("weeks");
    assert_eq!(weeks.len(), 12);
    assert_eq!(weeks[11]["overdue_at_end"], 2, "{stats}");
    assert_eq!(weeks[11]["closed_on_time"], 1, "{stats}");
    assert_eq!(weeks[11]["closed_late"], 1, "{stats}");

    let lead = sign_in(&app, "lead@example.com").await;
    let html = page(&app, "/dashboard", &lead).await;
    let overdue: Vec<String> = weeks
        .iter()
        .map(|w| w["overdue_at_end"].to_string())
        .collect();
    assert_eq!(bar_values(&html, "overdue"), overdue);
    let closed: Vec<String> = weeks
        .iter()
        .flat_map(|w| {
            [
                w["closed_on_time"].to_string(),
                w["closed_late"].to_string(),
            ]
        })
        .collect();
    assert_eq!(bar_values(&html, "closed"), closed);
    let states: Vec<String> = stats["coes_by_state"]
        .as_object()
        .expect("states")
        .values()
        .map(Value::to_string)
        .collect();
    assert_eq!(bar_values(&html, "states"), states);
    assert_eq!(
        bar_values(&html, "recurrence"),
        vec![
            stats["recurrence"]["recurring_coes"].to_string(),
            (stats["recurrence"]["all_coes"].as_i64().expect("n")
                - stats["recurrence"]["recurring_coes"].as_i64().expect("n"))
            .to_string()
        ]
    );
    assert!(html.contains("<svg viewBox="), "drawn on the server");
    assert!(
        !html.contains("<script>") && html.matches("<script").count() == 1,
        "drawn without script: the one script is the pages' own, from /static"
    );

    // The figures are cached between changes, never across one.
    let res = app
        .post_json(
            &format!("/api/v1/actions/{overdue_a}/complete"),
            Some(&admin),
            &json!({"note": "Done, and checked against its success criteria in production."}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let stats: Value = app.get_json("/api/v1/stats", &admin).await;
    assert_eq!(stats["actions"]["overdue"], 1, "{stats}");
    assert_eq!(stats["weeks"][11]["overdue_at_end"], 1, "{stats}");

    // One team, over four weeks, in the address: the figures of its people's actions.
    for (email, team) in [
        ("ana@example.com", "Payments"),
        ("bo@example.com", "search"),
    ] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"team": team}))
            .send()
            .await
            .expect("sent");
        assert!(res.status().is_success(), "{}", res.status());
    }
    let html = page(&app, "/dashboard?team=payments&weeks=4", &lead).await;
    assert!(html.contains("Team payments"), "{html}");
    assert!(
        html.contains("Open actions: <strong>1</strong>"),
        "ana's one: {html}"
    );
    assert_eq!(bar_values(&html, "overdue"), ["0", "0", "0", "1"], "{html}");
    assert!(
        html.contains("<strong>0</strong> on time, <strong>1</strong> late"),
        "ana's late one, not bo's two: {html}"
    );
    assert!(html.contains("<option value=\"4\" selected>"), "{html}");
    let html = page(&app, "/dashboard?team=SEARCH", &lead).await;
    assert!(
        html.contains("<strong>1</strong> on time, <strong>1</strong> late"),
        "{html}"
    );
    assert_eq!(bar_values(&html, "overdue").len(), 12);
    let res = crate::pages::get_page(&app, "/dashboard?weeks=500", Some(&lead)).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);

    // Long lists show their 20 longest waiting and say how many more there are.
    let mut drafts = Vec::new();
    for i in 0..23 {
        drafts.push(coe(&app, &admin, &format!("Late draft {i}"), "checkout", "sev2").await);
    }
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(coes::table.filter(coes::id.eq_any(&drafts)))
            .set(coes::resolved_at.eq(chrono::Utc::now().naive_utc() - chrono::Duration::days(30)))
            .execute(&mut conn)
            .expect("backdate");
    }
    let html = page(&app, "/dashboard", &lead).await;
    assert_eq!(html.matches(">Late draft ").count(), 20, "{html}");
    assert!(
        html.contains("And 3 more: <a href=\"/search?state=draft\">all drafts</a>."),
        "{html}"
    );
}

#[tokio::test]
async fn search_finds_coes_and_marks_the_words() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let id = coe(
        &app,
        &admin,
        "Checkout <b>pool</b> exhausted",
        "checkout",
        "sev2",
    )
    .await;
    coe(&app, &admin, "Search slow", "search", "sev3").await;
    let res = app
        .client
        .put(app.url(&format!("/api/v1/coes/{id}/sections/diagnosis")))
        .bearer_auth(&admin)
        .header("If-Match", "\"1\"")
        .json(&json!({"body": "The database **pool** ran dry after [deploy 42](https://deploys.example.com/42) halved it; checkouts failed."}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );

    let lead = sign_in(&app, "lead@example.com").await;
    // Nothing asked: the newest COEs, to start from.
    let html = page(&app, "/search", &lead).await;
    assert!(html.contains("Search titles, writeups"), "{html}");
    assert!(
        html.contains("The newest COEs") && html.contains(">Search slow</a>"),
        "{html}"
    );
    // Word forms: "failing" finds "failed" on both databases, and marks it.
    let html = page(&app, "/search?q=failing", &lead).await;
    assert!(html.contains("1 COE, best match first"), "{html}");
    assert!(html.contains("checkouts <mark>failed</mark>."), "{html}");
    let html = page(&app, "/search?q=pool", &lead).await;
    assert!(html.contains("1 COE, best match first"), "{html}");
    assert!(
        html.contains("Checkout &lt;b&gt;<mark>pool</mark>&lt;/b&gt; exhausted"),
        "{html}"
    );
    assert!(
        html.contains("The database <mark>pool</mark> ran dry after deploy 42 halved it"),
        "plain text, no Markdown: {html}"
    );
    assert!(!html.contains("**"), "{html}");
    assert!(html.contains("value=\"pool\""), "{html}");
    let html = page(&app, "/search?q=pool&state=closed", &lead).await;
    assert!(html.contains("No COE matches “pool”."), "{html}");
    let html = page(&app, "/search?severity=sev3", &lead).await;
    assert!(
        html.contains("Search slow") && !html.contains("exhausted"),
        "{html}"
    );
    assert_eq!(
        get_page(&app, "/search?state=lost", Some(&lead))
            .await
            .status(),
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn admin_pages_are_for_admins_and_do_what_the_api_does() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let member = sign_in(&app, "mo@example.com").await;
    for path in [
        "/admin/people",
        "/admin/tokens",
        "/admin/outbox",
        "/admin/sessions",
    ] {
        assert_eq!(
            get_page(&app, path, Some(&member)).await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }
    let html = page(&app, "/", &member).await;
    assert!(
        !html.contains("href=\"/admin/people\""),
        "no admin link for members"
    );
    let res = app
        .client
        .put(app.url("/api/v1/people/dana@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    let dana = sign_in(&app, "dana@example.com").await;
    assert!(page(&app, "/", &dana)
        .await
        .contains("href=\"/admin/people\""));

    // People: a CSV import with a bad line, reported by number; hostile names escaped.
    let csv = "email,name,team,manager_email,timezone\nana@example.com,<b>Ana</b>,payments,dana@example.com,Europe/Berlin\nnot-an-address,X,,,\nbo@example.com,Bo,search,,Mars/Olympus\n";
    let res = post_form(
        &app,
        &dana,
        "/admin/people",
        "/admin/people/import",
        &[("csv", csv)],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("html");
    assert!(html.contains("1 added, 0 updated, 2 rejected"), "{html}");
    assert!(
        html.contains("<td data-label=\"Line\">3</td>")
            && html.contains("<td data-label=\"Line\">4</td>"),
        "{html}"
    );
    assert!(html.contains("&lt;b&gt;Ana&lt;/b&gt;"), "{html}");
    let res = post_form(
        &app,
        &dana,
        "/admin/people",
        "/admin/people/ana@example.com/admin",
        &[("is_admin", "true")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let people = app.get_json("/api/v1/people?team=payments", &admin).await;
    assert_eq!(people["people"][0]["is_admin"], true, "{people}");

    // Tokens: made and shown once; it works; revoked, it does not.
    let res = post_form(
        &app,
        &dana,
        "/admin/tokens",
        "/admin/tokens",
        &[("name", "grafana"), ("role", "ingest"), ("email", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let html = res.text().await.expect("html");
    let marker = "id=\"secret\" type=\"text\" readonly value=\"";
    let start = html.find(marker).expect("the secret") + marker.len();
    let secret = html[start..].split('"').next().expect("secret").to_owned();
    assert_eq!(app.get("/api/v1/me", Some(&secret)).await.status(), 200);
    assert!(
        !page(&app, "/admin/tokens", &dana).await.contains(&secret),
        "shown once"
    );
    let res = post_form(
        &app,
        &dana,
        "/admin/tokens",
        "/admin/tokens",
        &[("name", "grafana"), ("role", "ingest")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let res = post_form(
        &app,
        &dana,
        "/admin/tokens",
        "/admin/tokens",
        &[("name", "bad name!"), ("role", "king")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("name: ") && html.contains("role: "), "{html}");
    let res = post_form(
        &app,
        &dana,
        "/admin/tokens",
        "/admin/tokens/grafana/revoke",
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.get("/api/v1/me", Some(&secret)).await.status(), 401);

    // Outbox: a failed email with the server's answer, retried.
    let failed: String = {
        let mut conn = app.pool.get().expect("conn");
        let id: String = outbox_emails::table
            .select(outbox_emails::id)
            .first(&mut conn)
            .expect("the sign-in emails are there");
        diesel::update(outbox_emails::table.find(&id))
            .set((
                outbox_emails::state.eq("failed"),
                outbox_emails::last_error.eq(Some("550 5.1.1 <mailbox> unknown")),
            ))
            .execute(&mut conn)
            .expect("fail it");
        id
    };
    let html = page(&app, "/admin/outbox?state=failed", &dana).await;
    assert!(html.contains("550 5.1.1 &lt;mailbox&gt; unknown"), "{html}");
    // An admin opens it and reads what it says.
    assert!(
        html.contains(&format!("<a href=\"/admin/outbox/{failed}\">")),
        "{html}"
    );
    let html = page(&app, &format!("/admin/outbox/{failed}"), &dana).await;
    assert!(
        html.contains("<pre class=\"email-body\">")
            && html.contains("[the sign-in link: sent to the recipient only, never shown]")
            && !html.contains("/sign-in/confirm?token="),
        "the sign-in email's text, its link shown as words: {html}"
    );
    assert!(html.contains("Send it again</button>"), "{html}");
    assert_eq!(
        get_page(&app, "/admin/outbox/nope", Some(&dana))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get_page(&app, &format!("/admin/outbox/{failed}"), Some(&member))
            .await
            .status(),
        StatusCode::FORBIDDEN,
        "admins only: emails hold sign-in links"
    );
    let res = post_form(
        &app,
        &dana,
        "/admin/outbox",
        &format!("/admin/outbox/{failed}/retry"),
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!page(&app, "/admin/outbox?state=failed", &dana)
        .await
        .contains("550 5.1.1"));

    // Sessions: the member's session ended by the admin stops working.
    let html = page(&app, "/admin/sessions", &dana).await;
    assert!(
        html.contains("mo@example.com") && html.contains("this one"),
        "{html}"
    );
    let res = post_form(
        &app,
        &dana,
        "/admin/sessions",
        "/admin/people/mo@example.com/sign-out",
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = get_page(&app, "/", Some(&member)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(res.headers()[LOCATION]
        .to_str()
        .expect("ascii")
        .starts_with("/sign-in"));

    // CSRF holds here too.
    let res = browser()
        .post(app.url("/admin/tokens"))
        .header(COOKIE, &dana)
        .form(&[("csrf", "forged"), ("name", "x"), ("role", "admin")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_person_makes_their_calendar_feed_from_their_page() {
    let app = spawn_app().await;
    let ana = sign_in(&app, "ana@example.com").await;
    let html = page(&app, "/me", &ana).await;
    assert!(html.contains("Make my feed address"), "{html}");
    let feed = |html: &str| {
        let start = html.find("/api/v1/people/").expect("a feed address");
        html[start..]
            .split('"')
            .next()
            .expect("url")
            .replace("&amp;", "&")
    };
    let res = post_form(&app, &ana, "/me", "/me/calendar", &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let first = feed(&res.text().await.expect("html"));
    let res = app.get(&first, None).await;
    assert_eq!(res.status(), 200);
    assert!(res
        .text()
        .await
        .expect("ics")
        .starts_with("BEGIN:VCALENDAR"));
    let html = page(&app, "/me", &ana).await;
    assert!(
        html.contains("Make a new feed address") && !html.contains("/api/v1/people/"),
        "shown once: {html}"
    );
    let res = post_form(&app, &ana, "/me", "/me/calendar", &[]).await;
    let second = feed(&res.text().await.expect("html"));
    assert_ne!(first, second);
    assert_eq!(
        app.get(&first, None).await.status(),
        401,
        "the old address stops working"
    );
    assert_eq!(app.get(&second, None).await.status(), 200);
}

#[tokio::test]
async fn my_work_lists_what_waits_for_me_and_what_each_coe_still_needs() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let mine = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Queue <backlog>", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let theirs = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Search slow", "owner": "bo@example.com"}),
        )
        .await,
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(coe::db::schema::coes::table.find(&theirs))
            .set((
                coe::db::schema::coes::state.eq("in_review"),
                coe::db::schema::coes::reviewer_email.eq("ana@example.com"),
            ))
            .execute(&mut conn)
            .expect("in review");
    }
    action(&app, &admin, &mine, "Later one", "ana@example.com", 9).await;
    action(&app, &admin, &mine, "Overdue one", "ana@example.com", -4).await;
    let done = action(&app, &admin, &mine, "Done one", "ana@example.com", 3).await;
    let res = app
        .post_json(
            &format!("/api/v1/actions/{done}/complete"),
            Some(&admin),
            &json!({"note": "Done, and checked against its success criteria in production."}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let ana = sign_in(&app, "ana@example.com").await;
    let html = page(&app, "/", &ana).await;
    let waiting = html.find("Your move").expect("a review waits");
    assert!(html[waiting..].contains("Review <a"), "{html}");
    assert!(html[waiting..].contains("Search slow"), "{html}");
    assert!(html.contains("Queue &lt;backlog&gt;"), "{html}");
    assert!(
        html.contains("Still needs: Summary, Customer and business impact"),
        "{html}"
    );
    let overdue = html.find("Overdue one").expect("overdue");
    assert!(
        overdue < html.find("Later one").expect("later"),
        "overdue first: {html}"
    );
    assert!(html.contains("4 days overdue"), "{html}");
    assert!(
        !html.contains("Done one"),
        "closed actions are not work: {html}"
    );
}

#[tokio::test]
async fn every_coe_is_listed_filtered_by_team_and_sorted() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let first = coe(&app, &admin, "Checkout 502s", "checkout", "sev2").await;
    coe(&app, &admin, "Search slow", "search", "sev3").await;
    coe(&app, &admin, "Payments down", "payments", "sev1").await;
    let res = app
        .client
        .put(app.url("/api/v1/people/lead@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"team": "Platform", "name": "Lee Lead"}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success());
    let mine = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Someone else's", "owner": "bo@example.com"}),
        )
        .await,
    )
    .await;
    assert!(mine["id"].is_string(), "{mine}");

    let lead = sign_in(&app, "lead@example.com").await;
    let html = page(&app, "/coes", &lead).await;
    assert!(html.contains("COEs 1 to 4 of 4"), "{html}");
    let titles = |html: &str| -> Vec<String> {
        html.split("<td data-label=\"COE\"><a href=\"/coes/")
            .skip(1)
            .map(|s| s.split(['>', '<']).nth(1).expect("title").to_owned())
            .collect()
    };
    assert_eq!(
        titles(&html),
        [
            "Someone else&#x27;s",
            "Payments down",
            "Search slow",
            "Checkout 502s"
        ],
        "newest first"
    );
    assert!(html.contains("Lee Lead"), "names, not addresses: {html}");
    let html = page(&app, "/coes?sort=severity", &lead).await;
    assert_eq!(titles(&html)[0], "Payments down", "worst first");
    let html = page(&app, "/coes?sort=oldest", &lead).await;
    assert_eq!(titles(&html)[0], "Checkout 502s");
    let html = page(&app, "/coes?team=platform", &lead).await;
    assert_eq!(
        titles(&html).len(),
        3,
        "the team's owners' COEs, any case: {html}"
    );
    let html = page(
        &app,
        "/coes?team=platform&service=checkout&severity=sev2&state=draft",
        &lead,
    )
    .await;
    assert_eq!(titles(&html), ["Checkout 502s"]);
    assert!(html.contains(&format!("/coes/{first}")), "{html}");
    assert!(html.contains("One COE."), "{html}");
    let html = page(&app, "/coes?state=closed", &lead).await;
    assert!(html.contains("No COE matches these filters."), "{html}");
    for bad in [
        "/coes?sort=random",
        "/coes?state=lost",
        "/coes?severity=sev9",
    ] {
        assert_eq!(
            get_page(&app, bad, Some(&lead)).await.status(),
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    // The API filters the same way.
    let list = app
        .get_json("/api/v1/coes?team=PLATFORM&sort=severity", &admin)
        .await;
    assert_eq!(list["total"], 3, "{list}");
    assert_eq!(list["coes"][0]["title"], "Payments down", "{list}");
}
