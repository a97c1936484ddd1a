//! The web pages over HTTP: signing in with an emailed link, sessions, CSRF, the
//! proxy mode, escaping and the security headers.

use coe::config::AuthMode;
use coe::db::schema::{outbox_emails, people, sessions};
use diesel::prelude::*;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;

use crate::eventually::{eventually, try_until};
use crate::helpers::{spawn_app, spawn_app_with, TestApp};

/// A browser-like client (it asks for HTML) that does not follow redirects (so each
/// step is seen).
pub(crate) fn browser() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("text/html,application/xhtml+xml,*/*;q=0.8"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The newest sign-in link emailed to `email`. The link is made after the page
/// answered (so that the answer takes as long for anyone): wait for it, up to 10 s.
pub(crate) fn emailed_link(app: &TestApp, email: &str) -> Option<String> {
    try_until(std::time::Duration::from_secs(10), || {
        newest_link(app, email)
    })
}

/// No sign-in link was emailed to `email`, after a request that got as far as
/// writing one: the link is written after the answer (one expired at birth for an
/// address that may not sign in) in the transaction that queues its email, so once
/// the link is there (waited for, up to 10 s) an email would be too.
pub(crate) fn no_link_emailed(app: &TestApp, email: &str) -> bool {
    use coe::db::schema::sign_in_links;
    eventually(
        std::time::Duration::from_secs(10),
        &format!("a sign-in link written for {email}"),
        || {
            sign_in_links::table
                .filter(sign_in_links::email.eq(email))
                .count()
                .get_result::<i64>(&mut app.pool.get().expect("conn"))
                .expect("links")
                > 0
        },
    );
    newest_link(app, email).is_none()
}

/// The link the newest sign-in email to `email` carries: kept apart from its text
/// (which says only that a link was sent) until the email is sent, so a test reads it
/// from the outbox's own column, as the delivery worker does.
fn newest_link(app: &TestApp, email: &str) -> Option<String> {
    let mut conn = app.pool.get().expect("conn");
    let links: Vec<Option<String>> = outbox_emails::table
        .filter(outbox_emails::kind.eq("sign_in"))
        .filter(outbox_emails::recipient.eq(email))
        .order(outbox_emails::created_at.desc())
        .select(outbox_emails::private_link)
        .load(&mut conn)
        .expect("outbox");
    links
        .into_iter()
        .next()
        .flatten()
        .filter(|link| link.contains("/sign-in/confirm?token="))
}

pub(crate) fn token_of(link: &str) -> String {
    link.split_once("token=").expect("a token").1.to_owned()
}

pub(crate) async fn ask_for_link(app: &TestApp, email: &str) -> reqwest::Response {
    browser()
        .post(app.url("/sign-in"))
        .form(&[("email", email), ("next", "/")])
        .send()
        .await
        .expect("sent")
}

/// Signs in through the emailed link; returns the session cookie (`name=value`).
pub(crate) async fn sign_in(app: &TestApp, email: &str) -> String {
    let before = newest_link(app, email);
    let res = ask_for_link(app, email).await;
    assert_eq!(res.status(), StatusCode::OK);
    // A new link (the one this request made, after the answer).
    let link = eventually(
        std::time::Duration::from_secs(10),
        "a new link emailed",
        || newest_link(app, email).filter(|link| Some(link) != before.as_ref()),
    );
    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", token_of(&link))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let cookie = res
        .headers()
        .get(SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_owned();
    cookie.split(';').next().expect("name=value").to_owned()
}

pub(crate) async fn get_page(app: &TestApp, path: &str, cookie: Option<&str>) -> reqwest::Response {
    let mut req = browser().get(app.url(path));
    if let Some(c) = cookie {
        req = req.header(COOKIE, c);
    }
    req.send().await.expect("sent")
}

pub(crate) fn csrf_of(html: &str) -> String {
    let start = html
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("a csrf field in {html}"))
        + 19;
    html[start..].split('"').next().expect("value").to_owned()
}

#[tokio::test]
async fn a_person_signs_in_with_an_emailed_link_that_works_once() {
    let app = spawn_app().await;
    // Not signed in: the page sends them to sign in, and back here afterwards.
    let res = get_page(&app, "/?x=1", None).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[LOCATION], "/sign-in?next=%2F%3Fx%3D1");

    let form = get_page(&app, "/sign-in", None).await;
    assert_eq!(form.status(), StatusCode::OK);
    let html = form.text().await.expect("html");
    assert!(
        html.contains("<label for=\"email\">Email address</label>"),
        "{html}"
    );

    let res = ask_for_link(&app, "ana@example.com").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.expect("html").contains("Check your email"));
    let link = emailed_link(&app, "ana@example.com").expect("a link");
    assert!(
        link.starts_with("http://127.0.0.1:8080/sign-in/confirm?token="),
        "{link}"
    );

    // Opening the link changes nothing (mail scanners open links): it shows a button.
    let path = link.trim_start_matches("http://127.0.0.1:8080");
    let confirm = get_page(&app, path, None).await;
    assert_eq!(confirm.status(), StatusCode::OK);
    assert!(confirm
        .text()
        .await
        .expect("html")
        .contains("name=\"token\""));

    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", token_of(&link))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[LOCATION], "/");
    let set = res.headers()[SET_COOKIE]
        .to_str()
        .expect("ascii")
        .to_owned();
    for attribute in ["coe_session=", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains("Secure"), "plain http here: {set}");
    let cookie = set.split(';').next().expect("pair").to_owned();

    let home = get_page(&app, "/", Some(&cookie)).await;
    assert_eq!(home.status(), StatusCode::OK);
    let html = home.text().await.expect("html");
    assert!(
        html.contains("My work") && html.contains("ana@example.com"),
        "{html}"
    );

    // Once only.
    let again = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", token_of(&link))])
        .send()
        .await
        .expect("sent");
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert!(again
        .text()
        .await
        .expect("html")
        .contains("used already or has expired"));
}

#[tokio::test]
async fn an_expired_link_and_a_made_up_one_do_not_sign_in() {
    let app = spawn_app().await;
    ask_for_link(&app, "ana@example.com").await;
    let link = emailed_link(&app, "ana@example.com").expect("a link");
    {
        use coe::db::schema::sign_in_links;
        let mut conn = app.pool.get().expect("conn");
        let past = chrono::Utc::now().naive_utc() - chrono::Duration::minutes(16);
        diesel::update(sign_in_links::table)
            .set(sign_in_links::expires_at.eq(past))
            .execute(&mut conn)
            .expect("expire");
    }
    for token in [token_of(&link), "coe_made_up".to_owned(), String::new()] {
        let res = browser()
            .post(app.url("/sign-in/confirm"))
            .form(&[("token", token.as_str())])
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{token}");
        assert!(res.headers().get(SET_COOKIE).is_none());
    }
}

#[tokio::test]
async fn sign_out_needs_the_forms_token_and_ends_the_session() {
    let app = spawn_app().await;
    let cookie = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, "/", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    let csrf = csrf_of(&html);

    // A form from elsewhere (no or a wrong token) changes nothing.
    for token in ["", "forged"] {
        let res = browser()
            .post(app.url("/sign-out"))
            .header(COOKIE, &cookie)
            .form(&[("csrf", token)])
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    }
    assert_eq!(
        get_page(&app, "/", Some(&cookie)).await.status(),
        StatusCode::OK
    );

    let res = browser()
        .post(app.url("/sign-out"))
        .header(COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(res.headers()[SET_COOKIE]
        .to_str()
        .expect("ascii")
        .contains("Max-Age=0"));
    assert_eq!(
        get_page(&app, "/", Some(&cookie)).await.status(),
        StatusCode::SEE_OTHER
    );

    // An admin can end anyone's session the same way (the row is what counts).
    let other = sign_in(&app, "bo@example.com").await;
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::update(sessions::table.filter(sessions::person_email.eq("bo@example.com")))
            .set(sessions::ended_at.eq(Some(chrono::Utc::now().naive_utc())))
            .execute(&mut conn)
            .expect("end");
    }
    assert_eq!(
        get_page(&app, "/", Some(&other)).await.status(),
        StatusCode::SEE_OTHER
    );
}

#[tokio::test]
async fn only_the_directory_and_allowed_domains_get_a_link_and_the_page_does_not_say_which() {
    let app = spawn_app_with(|s| s.auth.allowed_domains = vec!["example.com".into()]).await;
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::insert_into(people::table)
            .values((
                people::email.eq("guest@partner.test"),
                people::name.eq(Some("<b>Guest</b> <script>alert(1)</script>")),
                people::created_at.eq(chrono::Utc::now().naive_utc()),
                people::updated_at.eq(chrono::Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("person");
    }
    let stranger = ask_for_link(&app, "eve@evil.test").await;
    assert_eq!(stranger.status(), StatusCode::OK);
    let stranger_page = stranger.text().await.expect("html");
    assert!(no_link_emailed(&app, "eve@evil.test"));
    let known = ask_for_link(&app, "ana@example.com")
        .await
        .text()
        .await
        .expect("html");
    assert!(emailed_link(&app, "ana@example.com").is_some());
    assert_eq!(
        stranger_page.replace("eve@evil.test", "X"),
        known.replace("ana@example.com", "X"),
        "the answer does not tell who may sign in"
    );

    // A name from the directory is shown as text, never as markup.
    let cookie = sign_in(&app, "guest@partner.test").await;
    let html = get_page(&app, "/", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("&lt;b&gt;Guest&lt;&#x2F;b&gt;") || html.contains("&lt;b&gt;Guest&lt;/b&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>alert(1)"), "{html}");

    let bad = browser()
        .post(app.url("/sign-in"))
        .form(&[("email", "not an address")])
        .send()
        .await
        .expect("sent");
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad
        .text()
        .await
        .expect("html")
        .contains("That is not an email address"));
}

/// The address's limit bounds the emails sent to it; it never tells its owner they
/// are refused for requests somebody else made: past it, the page is the same and no
/// email goes, and the links sent already still work. The client's own limit stays.
#[tokio::test]
async fn nobody_can_lock_another_person_out_of_signing_in() {
    let app = spawn_app_with(|s| {
        s.auth.sign_in_per_address = 3;
        s.auth.sign_in_per_client = 100;
    })
    .await;
    // The emails are made after the answers, by the requests the limit let through
    // (decided before the answer: the others start nothing). Each of those writes a
    // link and queues its email in one transaction: once there are as many links as
    // requests let through, every email that will be queued is.
    let emails_to = |email: &str, let_through: i64| {
        use coe::db::schema::sign_in_links;
        let mut conn = app.pool.get().expect("conn");
        eventually(
            std::time::Duration::from_secs(10),
            &format!("links for {email}"),
            || {
                sign_in_links::table
                    .filter(sign_in_links::email.eq(email))
                    .count()
                    .get_result::<i64>(&mut conn)
                    .expect("links")
                    >= let_through
            },
        );
        outbox_emails::table
            .filter(outbox_emails::kind.eq("sign_in"))
            .filter(outbox_emails::recipient.eq(email))
            .count()
            .get_result::<i64>(&mut conn)
            .expect("count")
    };
    let mut pages = Vec::new();
    for _ in 0..3 {
        let res = ask_for_link(&app, "ana@example.com").await;
        assert_eq!(res.status(), StatusCode::OK);
        pages.push(res.text().await.expect("html"));
    }
    let first_link = emailed_link(&app, "ana@example.com").expect("a link");
    // An attacker (the same client here) keeps asking for Ana's links.
    for _ in 0..5 {
        let res = ask_for_link(&app, "ana@example.com").await;
        assert_eq!(res.status(), StatusCode::OK, "never a refusal for Ana");
        let html = res.text().await.expect("html");
        assert_eq!(html, pages[0], "the same answer as when a link is sent");
        assert!(!html.contains("too many"), "{html}");
    }
    assert_eq!(
        emails_to("ana@example.com", 3),
        3,
        "no more emails than the limit"
    );
    // A link sent already signs Ana in.
    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", token_of(&first_link).as_str())])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "the link still works");
    // Another address from the same client still works, up to the client's limit.
    assert_eq!(
        ask_for_link(&app, "bo@example.com").await.status(),
        StatusCode::OK
    );
    assert_eq!(emails_to("bo@example.com", 1), 1);
}

#[tokio::test]
async fn sign_in_requests_are_limited_per_client() {
    let app = spawn_app_with(|s| {
        s.auth.sign_in_per_client = 3;
    })
    .await;
    for who in ["a@example.com", "b@example.com", "c@example.com"] {
        assert_eq!(ask_for_link(&app, who).await.status(), StatusCode::OK);
    }
    let res = ask_for_link(&app, "d@example.com").await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("too many sign-in requests from this address"));
}

#[tokio::test]
async fn a_proxy_header_counts_only_from_a_trusted_proxy() {
    let untrusted = spawn_app_with(|s| {
        s.auth.mode = AuthMode::Proxy;
        s.auth.trusted_proxies = vec!["10.0.0.0/8".into()];
    })
    .await;
    let res = browser()
        .get(untrusted.url("/"))
        .header("X-Forwarded-Email", "ceo@example.com")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("did not come through it"));

    let trusted = spawn_app_with(|s| {
        s.auth.mode = AuthMode::Proxy;
        s.auth.trusted_proxies = vec!["127.0.0.1".into()];
        // Who may sign in: as with the emailed link.
        s.auth.allowed_domains = vec!["example.com".into()];
    })
    .await;
    let res = browser()
        .get(trusted.url("/"))
        .header("X-Forwarded-Email", "ana@example.com")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers().get(SET_COOKIE).is_some(),
        "a session for the forms' token"
    );
    assert!(res.text().await.expect("html").contains("ana@example.com"));
    let missing = browser().get(trusted.url("/")).send().await.expect("sent");
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
}

/// The proxy vouches for who a person is; the directory and `auth.allowed_domains`
/// for whether they may use coe, as with the emailed link: an address outside both is
/// refused and does not join the directory.
#[tokio::test]
async fn a_proxy_signs_in_only_the_directory_and_the_allowed_domains() {
    let app = spawn_app_with(|s| {
        s.auth.mode = AuthMode::Proxy;
        s.auth.trusted_proxies = vec!["127.0.0.1".into()];
        s.auth.allowed_domains = vec!["example.com".into()];
    })
    .await;
    let admin = app.admin_token();
    let res = app
        .client
        .put(app.url("/api/v1/people/partner@contractor.test"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"name": "A Partner"}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success(), "{}", res.status());
    let as_person = |email: &'static str| {
        browser()
            .get(app.url("/"))
            .header("X-Forwarded-Email", email)
            .send()
    };
    for allowed in ["ana@example.com", "partner@contractor.test"] {
        let res = as_person(allowed).await.expect("sent");
        assert_eq!(res.status(), StatusCode::OK, "{allowed}");
    }
    let res = as_person("outsider@attacker.test").await.expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(SET_COOKIE).is_none(), "no session");
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("outsider@attacker.test may not sign in"));
    let people = app.get_json("/api/v1/people", &admin).await;
    assert!(
        !people.to_string().contains("outsider@attacker.test"),
        "{people}"
    );
}

#[tokio::test]
async fn pages_carry_security_headers_and_the_stylesheet_is_cached() {
    let app = spawn_app().await;
    let res = get_page(&app, "/sign-in", None).await;
    let h = res.headers();
    let csp = h["content-security-policy"].to_str().expect("ascii");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["cache-control"], "no-store");
    let html = res.text().await.expect("html");
    let css_path = html
        .split("href=\"")
        .find_map(|s| {
            s.split('"')
                .next()
                .filter(|p| p.starts_with("/static/app.css"))
        })
        .expect("a stylesheet")
        .to_owned();
    let css = get_page(&app, &css_path, None).await;
    assert_eq!(css.status(), StatusCode::OK);
    assert!(css.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("text/css"));
    let etag = css.headers()["etag"].to_str().expect("ascii").to_owned();
    let again = browser()
        .get(app.url(&css_path))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("sent");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    // A browser that asks for a page that does not exist gets a page; the API keeps JSON.
    let missing = browser()
        .get(app.url("/no-such-page"))
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .expect("sent");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("text/html"));
    let api = browser()
        .get(app.url("/api/v1/nothing"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("sent");
    assert_eq!(api.status(), StatusCode::NOT_FOUND);
    assert!(api.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("application/json"));
}

/// Posts a form with the session cookie and the CSRF token of the page at `from`.
pub(crate) async fn post_form(
    app: &TestApp,
    cookie: &str,
    from: &str,
    to: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let html = get_page(app, from, Some(cookie))
        .await
        .text()
        .await
        .expect("html");
    let csrf = csrf_of(&html);
    let mut form: Vec<(&str, &str)> = vec![("csrf", csrf.as_str())];
    form.extend_from_slice(fields);
    let res = browser()
        .post(app.url(to))
        .header(COOKIE, cookie)
        .form(&form)
        .send()
        .await
        .expect("sent");
    landed(app, cookie, res).await
}

/// The answer to a COE page's form as a browser shows it: a form that did not go
/// through, and a preview, are answered with a 303 to the page showing what was kept
/// (`?kept=…`); that page is loaded, as the browser would. Any other answer as it is.
pub(crate) async fn landed(
    app: &TestApp,
    cookie: &str,
    res: reqwest::Response,
) -> reqwest::Response {
    let kept = res
        .headers()
        .get(LOCATION)
        .and_then(|l| l.to_str().ok())
        .filter(|l| l.contains("?kept="))
        .map(str::to_owned);
    match kept {
        Some(location) if res.status() == StatusCode::SEE_OTHER => {
            get_page(app, &location, Some(cookie)).await
        }
        _ => res,
    }
}

/// The revision a COE page's section `key` is based on (its `seen:{key}` field).
pub(crate) fn seen_of(html: &str, key: &str) -> String {
    let marker = format!("name=\"seen:{key}\" value=\"");
    let start = html.find(&marker).expect("a seen field") + marker.len();
    html[start..].split('"').next().expect("value").to_owned()
}

/// The fields of a COE page's sections form with `typed` typed into those sections
/// (each based on the revision the page at `html` showed) and the Save button of
/// the first pressed: what a browser sends, less the sections left alone.
pub(crate) fn sections_typed(html: &str, typed: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    for (key, text) in typed {
        fields.push((format!("text:{key}"), (*text).to_owned()));
        fields.push((format!("seen:{key}"), seen_of(html, key)));
    }
    if let Some((key, _)) = typed.first() {
        fields.push(("save".to_owned(), (*key).to_owned()));
    }
    fields
}

#[tokio::test]
async fn incidents_are_listed_filtered_and_shown_with_their_alerts_collapsed() {
    let app = spawn_app().await;
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    let event = |key: &str, group: &str, title: &str, sev: &str, host: &str, minute: u32| {
        serde_json::json!({"dedup_key": key, "group_key": group, "title": title, "severity": sev,
            "service": "checkout", "started_at": format!("2026-11-29T10:{minute:02}:00Z"),
            "labels": {"alertname": "HighErrors", "instance": host}})
    };
    let events = serde_json::json!([
        event(
            "a1",
            "checkout",
            "<script>alert(1)</script> errors",
            "sev4",
            "web-1",
            1
        ),
        event(
            "a2",
            "checkout",
            "<script>alert(1)</script> errors",
            "sev4",
            "web-2",
            5
        ),
        event(
            "a3",
            "checkout",
            "<script>alert(1)</script> errors",
            "sev4",
            "web-2",
            9
        ),
        event("b1", "db", "Database down", "sev1", "db-1", 2),
    ]);
    let res = app
        .post_json("/api/v1/events", Some(&ingest), &events)
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let cookie = sign_in(&app, "ana@example.com").await;

    let html = get_page(&app, "/incidents", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("2 incidents"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt; errors"),
        "{html}"
    );
    assert!(!html.contains("<script>alert(1)"), "{html}");
    let sev1 = get_page(&app, "/incidents?min_severity=sev1", Some(&cookie)).await;
    let sev1 = sev1.text().await.expect("html");
    assert!(
        sev1.contains("1 incident,") && sev1.contains("Database down"),
        "{sev1}"
    );
    assert!(
        sev1.contains("<option value=\"sev1\" selected>"),
        "the filter shows: {sev1}"
    );
    let bad = get_page(&app, "/incidents?min_severity=sev9", Some(&cookie)).await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

    // The below-policy incident: its alerts collapsed, and a COE opened by hand.
    let list = app
        .get_json(
            "/api/v1/incidents?service=checkout&severity=sev4",
            &app.token("r2", coe::domain::Role::Member),
        )
        .await;
    let id = list["incidents"][0]["id"].as_str().expect("id").to_owned();
    let path = format!("/incidents/{id}");
    let html = get_page(&app, &path, Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("HighErrors fired 3 times between 2026-11-29 10:01 and 10:09 UTC on 2 hosts"),
        "{html}"
    );
    assert!(html.contains("Open a COE"), "{html}");
    let forged = browser()
        .post(app.url(&format!("{path}/coe")))
        .header(COOKIE, &cookie)
        .form(&[("csrf", "forged")])
        .send()
        .await
        .expect("sent");
    assert_eq!(forged.status(), StatusCode::BAD_REQUEST);
    let opened = post_form(&app, &cookie, &path, &format!("{path}/coe"), &[]).await;
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    let coe_path = opened.headers()[LOCATION]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(coe_path.starts_with("/coes/"), "{coe_path}");
    let again = post_form(&app, &cookie, &path, &format!("{path}/coe"), &[]).await;
    assert_eq!(
        again.headers()[LOCATION].to_str().expect("ascii"),
        coe_path,
        "the same COE"
    );

    // The COE page: its sections, what is missing (linked to its section), escaped.
    let html = get_page(&app, &coe_path, Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Still missing before it can be submitted"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"#impact\">Customer and business impact</a>"),
        "{html}"
    );
    assert!(html.contains("id=\"impact\""), "{html}");
    assert!(html.contains("What belongs here"), "{html}");
    assert!(!html.contains("<script>alert(1)"), "{html}");
    let missing = get_page(&app, "/coes/no-such-coe", Some(&cookie)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let missing = get_page(&app, "/incidents/no-such-incident", Some(&cookie)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

/// The value of the hidden `version` field of the first form on a page.
pub(crate) fn version_of(html: &str) -> String {
    let start = html
        .find("name=\"version\" value=\"")
        .expect("a version field")
        + 22;
    html[start..].split('"').next().expect("value").to_owned()
}

/// Posts the sections form of COE page `path` as loaded in `html`, with `typed` and
/// `extra` fields (a preview button); the answer as it comes (a 303).
pub(crate) async fn post_sections(
    app: &TestApp,
    cookie: &str,
    path: &str,
    html: &str,
    typed: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = vec![("csrf".to_owned(), csrf_of(html))];
    form.extend(sections_typed(html, typed));
    form.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    browser()
        .post(app.url(&format!("{path}/sections")))
        .header(COOKIE, cookie)
        .form(&form)
        .send()
        .await
        .expect("sent")
}

#[tokio::test]
async fn text_sections_are_saved_together_and_checked_section_by_section() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let created = app
        .post_json(
            "/api/v1/coes",
            Some(&admin),
            &serde_json::json!({"title": "Search down", "owner": "ana@example.com"}),
        )
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = crate::helpers::json(created).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/coes/{id}");
    let section = |doc: &serde_json::Value, key: &str| {
        doc["sections"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["key"] == key))
            .map(|s| s["body"].as_str().unwrap_or_default().to_owned())
            .expect("the section")
    };
    let ana = sign_in(&app, "ana@example.com").await;
    let first = get_page(&app, &path, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        first.contains("<textarea id=\"body-impact\" name=\"text:impact\""),
        "{first}"
    );

    // Typed in Impact and in Detection, Impact's Save pressed: both are saved, and the
    // page says so beside that button.
    let impact = "About 1200 searches failed over 40 minutes.";
    let res = post_sections(
        &app,
        &ana,
        &path,
        &first,
        &[("impact", impact), ("detection", "A customer told us.")],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()[LOCATION].to_str().expect("ascii"),
        format!("{path}?saved=impact#impact")
    );
    let html = get_page(&app, &format!("{path}?saved=impact"), Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains(impact), "{html}");
    assert!(html.contains("role=\"status\">Saved</span>"), "{html}");
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "impact"), impact);
    assert_eq!(section(&doc, "detection"), "A customer told us.");

    // A second tab, opened before: saving Mitigation is not blocked by the save above,
    // though the COE's version moved on.
    let res = post_sections(
        &app,
        &ana,
        &path,
        &first,
        &[("mitigation", "Failed over.")],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "mitigation"), "Failed over.");
    assert_eq!(
        section(&doc, "impact"),
        impact,
        "not undone by the other tab"
    );

    // The same old tab changes Impact too: a real conflict on that section. Summary,
    // typed in the same save, is saved; Impact is shown with theirs side by side.
    let res = post_sections(
        &app,
        &ana,
        &path,
        &first,
        &[
            ("impact", "Typed in the old tab <b>bold</b>"),
            ("summary", "Search was down."),
        ],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "POST → 303 → GET");
    let location = res.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(
        location.contains("?kept=") && location.ends_with("#impact"),
        "{location}"
    );
    let res = landed(&app, &ana, res).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let html = res.text().await.expect("html");
    // One person in two tabs is told so, not of "someone else" (issue 63 item 6).
    assert!(
        html.contains("Saved meanwhile by you, from another tab")
            && html.contains("You saved a section you changed here from another tab"),
        "{html}"
    );
    assert!(
        html.contains(&format!("<pre class=\"theirs\">{impact}</pre>")),
        "{html}"
    );
    assert!(
        html.contains("Typed in the old tab &lt;b&gt;bold&lt;/b&gt;</textarea>"),
        "{html}"
    );
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "impact"), impact, "theirs stays until merged");
    assert_eq!(section(&doc, "summary"), "Search was down.");
    // The conflict page is a GET: loaded again, it says the same.
    let again = get_page(&app, &location, Some(&ana)).await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    // Its Impact is based on theirs: the merge saves.
    let merged = format!("{impact} Typed in the old tab.");
    let res = post_sections(&app, &ana, &path, &html, &[("impact", &merged)], &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!res.headers()[LOCATION]
        .to_str()
        .expect("ascii")
        .contains("kept"));
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "impact"), merged);

    // A preview saves nothing, keeps what was typed, and is a GET after the POST.
    let html = get_page(&app, &path, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let res = post_sections(
        &app,
        &ana,
        &path,
        &html,
        &[("lessons", "**Canaries** catch this.")],
        &[("preview", "lessons")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = landed(&app, &ana, res).await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("html");
    assert!(
        html.contains("<strong>Canaries</strong> catch this."),
        "{html}"
    );
    assert!(
        html.contains("**Canaries** catch this.</textarea>"),
        "{html}"
    );
    let doc = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(section(&doc, "lessons"), "", "a preview saves nothing");

    // Through the API, a save based on a section's revision is checked against it only.
    let revision_of = |doc: &serde_json::Value, key: &str| {
        doc["sections"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["key"] == key))
            .and_then(|s| s["revision"].as_str())
            .expect("a revision")
            .to_owned()
    };
    let stale = revision_of(&doc, "impact");
    let put = |body: serde_json::Value| {
        reqwest::Client::new()
            .put(app.url(&format!("/api/v1/coes/{id}/sections/impact")))
            .bearer_auth(&admin)
            .json(&body)
            .send()
    };
    let res = put(serde_json::json!({"body": "From the API", "based_on": stale}))
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK, "no If-Match needed");
    let res = put(serde_json::json!({"body": "Again from the API", "based_on": stale}))
        .await
        .expect("sent");
    let (_, message, _) = crate::helpers::error_of(res, 412).await;
    assert!(message.contains("section `impact` changed"), "{message}");

    // Someone who is neither owner nor reviewer reads it, without forms, and cannot save.
    let bo = sign_in(&app, "bo@example.com").await;
    let html = get_page(&app, &path, Some(&bo))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("From the API") && !html.contains("<textarea"),
        "{html}"
    );
    let res = browser()
        .post(app.url(&format!("{path}/sections")))
        .header(COOKIE, &bo)
        .form(&[
            ("csrf", csrf_of(&html).as_str()),
            ("text:impact", "mine now"),
            ("seen:impact", ""),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn an_action_owner_moves_the_due_date_with_a_reason_and_closes_it_with_a_note() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = crate::helpers::json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &serde_json::json!({"title": "Queue backlog", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("coe").to_owned();
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(10)).to_string();
    let action = crate::helpers::json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&admin),
            &serde_json::json!({"title": "Alarm on queue age", "owner": "cy@example.com",
                "due_date": due, "priority": "high", "kind": "detect",
                "external_url": "https://tickets.example.com/OPS-1"}),
        )
        .await,
    )
    .await;
    let id = action["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{action}"))
        .to_owned();
    let path = format!("/actions/{id}");

    let cy = sign_in(&app, "cy@example.com").await;
    let html = get_page(&app, &path, Some(&cy))
        .await
        .text()
        .await
        .expect("html");
    for text in [
        "Alarm on queue age",
        "Start it",
        "Mark it done",
        // Giving up is a step apart, opened on purpose, confirmed, not a blue button.
        "<summary>It will not be done…</summary>",
        "class=\"danger\" formaction=\"/actions/",
        ">Confirm: it will not be done</button>",
        "Move the due date",
        "href=\"https://tickets.example.com/OPS-1\"",
    ] {
        assert!(html.contains(text), "{text}: {html}");
    }
    assert!(
        !html.contains("ticket-missing"),
        "it has its ticket: {html}"
    );
    // With no ticket and no tracker set up, the page says who can connect one.
    let bare = crate::helpers::json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&admin),
            &serde_json::json!({"title": "Page on queue age", "owner": "cy@example.com",
                "due_date": due, "priority": "high", "kind": "detect"}),
        )
        .await,
    )
    .await;
    let bare = bare["id"].as_str().unwrap_or_else(|| panic!("{bare}"));
    let html = get_page(&app, &format!("/actions/{bare}"), Some(&cy))
        .await
        .text()
        .await
        .expect("html");
    let hint = crate::html::text_of(&html, "ticket-missing");
    assert!(
        hint.starts_with("No issue tracker takes this action's tickets yet")
            && hint.contains("An admin connects Jira, Linear or GitHub"),
        "{hint}"
    );

    // A due date moves only with a reason; the page then shows the move.
    let later = (chrono::Utc::now().date_naive() + chrono::Duration::days(20)).to_string();
    let res = post_form(
        &app,
        &cy,
        &path,
        &format!("{path}/due-date"),
        &[("due_date", later.as_str()), ("reason", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.expect("html").contains("reason"));
    // That answer came through POST → 303 → GET: Back and reload never post it again,
    // and the kept problems are the person's own.
    let html = get_page(&app, &path, Some(&cy))
        .await
        .text()
        .await
        .expect("html");
    let raw = browser()
        .post(app.url(&format!("{path}/due-date")))
        .header(COOKIE, &cy)
        .form(&[("csrf", csrf_of(&html).as_str()), ("due_date", "soon")])
        .send()
        .await
        .expect("sent");
    assert_eq!(raw.status(), StatusCode::SEE_OTHER);
    let location = raw.headers()[LOCATION].to_str().expect("ascii").to_owned();
    assert!(
        location.starts_with(&format!("{path}?kept=")) && location.ends_with("#state-h"),
        "{location}"
    );
    let again = get_page(&app, &location, Some(&cy)).await;
    assert_eq!(
        again.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "a reload shows it again"
    );
    assert!(again.text().await.expect("html").contains("must be a date"));
    let other = sign_in(&app, "ana@example.com").await;
    let theirs = get_page(&app, &location, Some(&other)).await;
    assert_eq!(theirs.status(), StatusCode::OK, "not another person's");
    let res = post_form(
        &app,
        &cy,
        &path,
        &format!("{path}/due-date"),
        &[
            ("due_date", later.as_str()),
            ("reason", "Waiting for the <queue> upgrade"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, &path, Some(&cy))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Waiting for the &lt;queue&gt; upgrade") && html.contains(&later),
        "{html}"
    );

    // Done needs a note; then only reopening is offered, and starting is refused.
    let res = post_form(
        &app,
        &cy,
        &path,
        &format!("{path}/complete"),
        &[("note", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // An action to detect an outage needs evidence: a link, or a sentence.
    let res = post_form(
        &app,
        &cy,
        &path,
        &format!("{path}/complete"),
        &[("note", "Alarm live")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(
        html.contains("needs evidence against its success criteria"),
        "{html}"
    );
    let res = post_form(
        &app,
        &cy,
        &path,
        &format!("{path}/complete"),
        &[
            ("note", "Alarm live, tested in a game day"),
            ("evidence_url", "https://grafana.example.com/d/q"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, &path, Some(&cy))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("Reopen it") && !html.contains("Mark it done"),
        "{html}"
    );
    assert!(html.contains("Alarm live, tested in a game day"), "{html}");
    // Who moved it on, and when.
    assert!(html.contains("Who moved it on"), "{html}");
    assert!(html.contains("cy@example.com marked it done"), "{html}");
    let detail = app.get_json(&format!("/api/v1/actions/{id}"), &admin).await;
    let steps: Vec<&str> = detail["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["step"].as_str())
        .collect();
    assert_eq!(steps, ["create", "complete"], "{detail}");
    assert_eq!(detail["steps"][1]["by"], "cy@example.com");
    let res = post_form(&app, &cy, &path, &format!("{path}/start"), &[]).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let res = post_form(&app, &cy, &path, &format!("{path}/explode"), &[]).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    // Someone else reads it without forms and cannot change it.
    let bo = sign_in(&app, "bo@example.com").await;
    let html = get_page(&app, &path, Some(&bo))
        .await
        .text()
        .await
        .expect("html");
    assert!(!html.contains("Reopen it"), "{html}");
    let res = post_form(
        &app,
        &bo,
        &path,
        &format!("{path}/reopen"),
        &[("note", "mine")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        get_page(&app, "/actions/nope", Some(&bo)).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_admin_token_makes_someone_a_page_admin_and_signs_them_out_everywhere() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let member = app.token("member", coe::domain::Role::Member);
    let ana = sign_in(&app, "ana@example.com").await;
    let ana_too = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, "/", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(!html.contains("(admin)"), "{html}");

    let put = |token: String, body: serde_json::Value| {
        app.client
            .put(app.url("/api/v1/people/ana@example.com/admin"))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let res = put(member.clone(), serde_json::json!({"is_admin": true}))
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "members do not make admins"
    );
    let res = put(admin.clone(), serde_json::json!({"is_admin": "yes"}))
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.expect("body").contains("is_admin"));
    let res = put(admin.clone(), serde_json::json!({"is_admin": true}))
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    let person: serde_json::Value = res.json().await.expect("json");
    assert_eq!(person["is_admin"], true);
    let html = get_page(&app, "/", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("(admin)"), "the flag counts at once: {html}");

    // Two sessions; an admin ends both, and neither works any more.
    let listed = app
        .get_json("/api/v1/people/ana@example.com/sessions", &admin)
        .await;
    assert_eq!(
        listed["sessions"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    assert!(listed.to_string().contains("email-link"));
    let res = app
        .client
        .delete(app.url("/api/v1/people/ana@example.com/sessions"))
        .bearer_auth(&member)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = app
        .client
        .delete(app.url("/api/v1/people/ana@example.com/sessions"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    let ended: serde_json::Value = res.json().await.expect("json");
    assert_eq!(ended["ended"], 2);
    for cookie in [&ana, &ana_too] {
        let res = get_page(&app, "/", Some(cookie)).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert!(res.headers()[LOCATION]
            .to_str()
            .expect("ascii")
            .starts_with("/sign-in"));
    }
    let listed = app
        .get_json("/api/v1/people/ana@example.com/sessions", &admin)
        .await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(0));
}

/// Login CSRF: another site's page posting to the sign-in forms (its own link token,
/// to sign the visitor in as the attacker) is refused, and sets no cookie; the same
/// origin and the public URL's pass.
#[tokio::test]
async fn sign_in_forms_refuse_cross_site_posts() {
    let app = spawn_app().await;
    let post = |path: &'static str,
                form: Vec<(&'static str, String)>,
                headers: Vec<(&'static str, String)>| {
        let mut req = browser().post(app.url(path)).form(&form);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        req.send()
    };
    let ours = app.url("").trim_end_matches('/').to_owned();
    for headers in [
        vec![("origin", "https://attacker.test".to_owned())],
        vec![("origin", "null".to_owned())],
        vec![("sec-fetch-site", "cross-site".to_owned())],
    ] {
        let res = post(
            "/sign-in",
            vec![("email", "ana@example.com".into())],
            headers.clone(),
        )
        .await
        .expect("sent");
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{headers:?}");
    }
    // Refused before the answer: nothing runs after it.
    assert!(
        newest_link(&app, "ana@example.com").is_none(),
        "no link sent"
    );

    // The attacker's own link, posted from their page: refused, no cookie, still
    // unused (it was not redeemed).
    let res = post(
        "/sign-in",
        vec![("email", "mallory@example.com".into())],
        vec![("origin", ours.clone())],
    )
    .await
    .expect("sent");
    assert_eq!(res.status(), StatusCode::OK, "our own origin passes");
    let token = token_of(&emailed_link(&app, "mallory@example.com").expect("a link"));
    let res = post(
        "/sign-in/confirm",
        vec![("token", token.clone())],
        vec![
            ("origin", "https://attacker.test".into()),
            ("sec-fetch-site", "cross-site".into()),
        ],
    )
    .await
    .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(SET_COOKIE).is_none(), "no cookie");
    let res = post(
        "/sign-in/confirm",
        vec![("token", token)],
        vec![("origin", ours)],
    )
    .await
    .expect("sent");
    assert_eq!(
        res.status(),
        StatusCode::SEE_OTHER,
        "the link was not used up"
    );
    assert_eq!(res.headers()["cache-control"], "no-store");
}

/// A browser signed in as one person that opens another's link is told who is signed
/// in and whom the link is for before it switches; switching ends the first session.
#[tokio::test]
async fn the_confirm_page_asks_before_switching_person() {
    let app = spawn_app().await;
    let bo = sign_in(&app, "bo@example.com").await;
    assert_eq!(
        ask_for_link(&app, "ana@example.com").await.status(),
        StatusCode::OK
    );
    let link = emailed_link(&app, "ana@example.com").expect("a link");
    let path = link
        .split_once("/sign-in/confirm")
        .map(|(_, q)| format!("/sign-in/confirm{q}"))
        .expect("path");
    let html = get_page(&app, &path, Some(&bo))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        html.contains("signed in as <strong>bo@example.com</strong>"),
        "{html}"
    );
    assert!(html.contains("<strong>ana@example.com</strong>"), "{html}");
    assert!(html.contains("Switch and sign in"), "{html}");
    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .header(COOKIE, &bo)
        .form(&[("token", token_of(&link))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    // Bo's session ended.
    let res = get_page(&app, "/", Some(&bo)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "bo is signed out");
    // Not signed in: no warning.
    let html = get_page(&app, &path, None)
        .await
        .text()
        .await
        .expect("html");
    assert!(!html.contains("signed in as"), "{html}");
}
