//! Nobody slips through: an install reachable from a network signs in only the
//! directory, the directory is written by admins, addresses cannot break the URLs
//! built from them, the proxy header counts once, and search survives any text.
//! (Separation of duties in the review: `actions::nobody_approves_a_coe_they_put_up`;
//! the sign-in limits: `pages::nobody_can_lock_another_person_out_of_signing_in`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coe::config::AuthMode;
use coe::domain::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::eventually::{eventually, try_until};
use crate::helpers::{error_of, spawn_app, spawn_app_with, TestDatabase};
use crate::pages::{browser, get_page, sign_in};

/// A raw HTTP/1.1 request to 127.0.0.1:`port`; the whole response.
fn http(port: u16, head: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "{head}\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// `coe serve --listen 0.0.0.0:PORT` with no other setting (development mode, no
/// SMTP server): sign-in is as in production, and it says so at start. An outsider
/// gets no link, and no link appears in the log, the page or the outbox folder.
#[test]
fn an_install_reachable_from_a_network_signs_in_only_the_directory() {
    let db = TestDatabase::new();
    let dir = tempfile::tempdir().expect("dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_coe"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_clear()
        .env("COE_DATABASE_URL", &db.url)
        .env("COE_LOG_FORMAT", "json")
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("coe serve starts");
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = logs.clone();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            kept.lock().expect("logs").push(line);
        }
    });
    let stdout = child.stdout.take().expect("stdout");
    let (token_tx, token_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.trim().starts_with("coe_") {
                let _ = token_tx.send(line.trim().to_owned());
            }
        }
    });
    let admin = token_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the admin token");
    // Where it listens: the port the system gave it, in its "listening" line.
    // What follows is waited for within 30 s in all.
    let deadline = Instant::now() + Duration::from_secs(30);
    let left = || deadline.saturating_duration_since(Instant::now());
    let port = eventually(left(), "it says where it listens", || {
        logs.lock().expect("logs").iter().find_map(|l| {
            let line: serde_json::Value = serde_json::from_str(l).ok()?;
            (line["message"] == "listening").then_some(())?;
            line["address"]
                .as_str()?
                .rsplit(':')
                .next()?
                .parse::<u16>()
                .ok()
        })
    });
    eventually(left(), "ready", || {
        http(port, "GET /readyz HTTP/1.1", "").starts_with("HTTP/1.1 200")
    });
    let person = json!({"name": "Ana Lima"}).to_string();
    let res = http(
        port,
        &format!(
            "PUT /api/v1/people/ana@example.com HTTP/1.1\r\nAuthorization: Bearer {admin}\r\n\
             Content-Type: application/json"
        ),
        &person,
    );
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");

    let ask = |email: &str| {
        http(
            port,
            "POST /sign-in HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
            &format!("email={}&next=%2F", email.replace('@', "%40")),
        )
    };
    let outsider = ask("outsider@attacker.test");
    let member = ask("ana@example.com");
    for page in [&outsider, &member] {
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(!page.contains("/sign-in/confirm"), "no link on the page");
    }
    // The emails queued (after the answers): one sign-in link, to Ana.
    try_until(left(), || {
        http(
            port,
            &format!("GET /api/v1/outbox HTTP/1.1\r\nAuthorization: Bearer {admin}"),
            "",
        )
        .contains("ana@example.com")
    });
    // The outsider's request was refused after its answer, in the transaction that
    // would have queued its email: once its log line is there, nothing more comes.
    eventually(left(), "the outsider's request was refused", || {
        logs.lock()
            .expect("logs")
            .iter()
            .any(|l| l.contains("may not sign in") && l.contains("outsider@attacker.test"))
    });
    let outbox = http(
        port,
        &format!("GET /api/v1/outbox HTTP/1.1\r\nAuthorization: Bearer {admin}"),
        "",
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(outbox.starts_with("HTTP/1.1 200"), "{outbox}");
    assert!(
        !outbox.contains("outsider@attacker.test"),
        "the outsider got nothing: {outbox}"
    );
    assert!(
        outbox.contains("ana@example.com"),
        "Ana, in the directory, got her link: {outbox}"
    );
    let logs = logs.lock().expect("logs").join("\n");
    assert!(
        !logs.contains("/sign-in/confirm"),
        "no link in the log:\n{logs}"
    );
    assert!(
        logs.contains("sign-in is as in production"),
        "said at start:\n{logs}"
    );
}

/// On loopback with no SMTP server (the README's trial), anyone may still sign in.
#[tokio::test]
async fn a_local_trial_still_lets_anyone_sign_in() {
    let app = spawn_app().await;
    let cookie = sign_in(&app, "newcomer@anywhere.test").await;
    let res = get_page(&app, "/", Some(&cookie)).await;
    assert_eq!(res.status(), StatusCode::OK);
}

/// The directory decides who may sign in and where escalations go: admins write it; a
/// member changes only their own name and time zone.
#[tokio::test]
async fn a_member_writes_only_their_own_name_and_time_zone() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ana = crate::actions::person_token_with_role(&app, "ana", Role::Member, "ana@example.com");
    let put = |token: &str, email: &str, body: serde_json::Value| {
        app.client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let res = put(
        &admin,
        "ana@example.com",
        json!({"name": "Ana", "team": "payments", "manager_email": "carla@example.com"}),
    )
    .await
    .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);

    // Making herself a colleague's manager (so that his escalations reach her): no.
    let (_, message, _) = error_of(
        put(
            &ana,
            "bo@example.com",
            json!({"manager_email": "ana@example.com"}),
        )
        .await
        .expect("sent"),
        403,
    )
    .await;
    assert!(message.contains("only an admin"), "{message}");
    for body in [
        json!({"name": "Ana", "manager_email": "ana.friend@example.com"}),
        json!({"name": "Ana", "team": "platform"}),
    ] {
        error_of(put(&ana, "ana@example.com", body).await.expect("sent"), 403).await;
    }
    let res = put(
        &ana,
        "ana@example.com",
        json!({"name": "Ana Lima", "timezone": "Europe/Lisbon"}),
    )
    .await
    .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    let me = crate::helpers::json(res).await;
    assert_eq!(me["name"], "Ana Lima");
    assert_eq!(me["timezone"], "Europe/Lisbon");
    assert_eq!(me["team"], "payments", "her team stays");
    assert_eq!(
        me["manager_email"], "carla@example.com",
        "her manager stays"
    );

    // A member not in the directory cannot add themselves (who may sign in is an
    // admin's to decide).
    let newcomer = crate::actions::person_token_with_role(
        &app,
        "newcomer",
        Role::Member,
        "newcomer@example.com",
    );
    error_of(
        put(&newcomer, "newcomer@example.com", json!({"name": "New"}))
            .await
            .expect("sent"),
        403,
    )
    .await;

    let csv =
        "email,name,team,manager_email,timezone\nbo@example.com,Bo,payments,ana@example.com,UTC\n";
    let import = |token: &str| {
        app.client
            .post(app.url("/api/v1/people/import"))
            .bearer_auth(token)
            .header("content-type", "text/csv")
            .body(csv)
            .send()
    };
    error_of(import(&ana).await.expect("sent"), 403).await;
    assert_eq!(import(&admin).await.expect("sent").status(), StatusCode::OK);
}

/// An address with `/ ? # %` or a quoted local part could point a link built from it
/// at another person: refused, naming the field; nothing stored.
#[tokio::test]
async fn addresses_that_would_break_a_url_are_refused() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = crate::helpers::json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout down"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id");
    let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{id}/actions"),
            Some(&admin),
            &json!({"title": "Add a canary", "owner": "\"x/../lee@example.com/admin?\"@example.com",
                    "due_date": due, "priority": "high", "kind": "prevent"}),
        )
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert!(fields.iter().any(|(f, _)| f == "owner"), "{fields:?}");
    let res = app
        .client
        .put(app.url("/api/v1/people/a%2Fb@example.com"))
        .bearer_auth(&admin)
        .json(&json!({"name": "Slash"}))
        .send()
        .await
        .expect("sent");
    let (_, _, fields) = error_of(res, 422).await;
    assert!(fields.iter().any(|(f, _)| f == "email"), "{fields:?}");
    let people = app.get_json("/api/v1/people", &admin).await;
    assert!(!people.to_string().contains("lee@example.com"), "{people}");
}

/// A proxy that adds its header beside a client's copy instead of replacing it: which
/// is whose cannot be told, so the request is refused.
#[tokio::test]
async fn the_proxy_header_twice_is_refused() {
    let app = spawn_app_with(|s| {
        s.auth.mode = AuthMode::Proxy;
        s.auth.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let res = browser()
        .get(app.url("/"))
        .header("X-Forwarded-Email", "ceo@example.com")
        .header("X-Forwarded-Email", "ana@example.com")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.text().await.expect("html").contains("more than once"));
}

/// `İ` and the Kelvin sign change length when lower-cased: search once answered 500
/// for a section holding them.
#[tokio::test]
async fn search_survives_letters_that_change_length() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = crate::helpers::json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Unicode outage"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id");
    let res = app
        .client
        .put(app.url(&format!("/api/v1/coes/{id}/sections/summary")))
        .bearer_auth(&admin)
        .header("if-match", format!("\"{}\"", coe["version"]))
        .json(&json!({"body": "İ éé \u{212A} İ: the résumé service failed."}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = sign_in(&app, "reader@example.com").await;
    for q in ["%C3%A9%C3%A9", "kelvin", "r%C3%A9sum%C3%A9", "%C4%B0"] {
        let res = get_page(&app, &format!("/search?q={q}"), Some(&cookie)).await;
        assert_eq!(res.status(), StatusCode::OK, "{q}");
    }
    let html = get_page(&app, "/search?q=%C3%A9%C3%A9", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(html.contains("<mark>éé</mark>"), "{html}");
}

/// `metrics.token`: `/metrics` answers only its bearer; unset, anyone who reaches it.
#[tokio::test]
async fn metrics_can_require_a_bearer_token() {
    let app = spawn_app_with(|s| s.metrics.token = Some("scrape-me-0123456789".into())).await;
    for token in [None, Some("wrong"), Some("scrape-me-012345678")] {
        let res = app.get("/metrics", token).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{token:?}");
    }
    let res = app.get("/metrics", Some("scrape-me-0123456789")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.expect("text").contains("coe_build_info"));
    let open = spawn_app().await;
    assert_eq!(open.get("/metrics", None).await.status(), StatusCode::OK);
}

/// Under https the session cookie is `__Host-` prefixed and `Secure` (a sibling
/// subdomain can neither set nor shadow it), and it signs in.
#[tokio::test]
async fn the_session_cookie_is_host_prefixed_and_secure_under_https() {
    let app = spawn_app_with(|s| {
        s.public_url = "https://coe.example.com".into();
        // Reached under a public name: not a local trial, so the directory's rule.
        s.auth.allowed_domains = vec!["example.com".into()];
    })
    .await;
    crate::pages::ask_for_link(&app, "ana@example.com").await;
    let link = crate::pages::emailed_link(&app, "ana@example.com").expect("a link");
    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", crate::pages::token_of(&link))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let set = res.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(set.starts_with("__Host-coe_session="), "{set}");
    for attribute in ["Secure", "Path=/", "HttpOnly"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains("Domain"), "{set}");
    let cookie = set.split(';').next().expect("name=value").to_owned();
    let res = get_page(&app, "/", Some(&cookie)).await;
    assert_eq!(res.status(), StatusCode::OK, "it signs in");
    // The unprefixed name counts for nothing here.
    let plain = cookie.replacen("__Host-", "", 1);
    assert_eq!(
        get_page(&app, "/", Some(&plain)).await.status(),
        StatusCode::SEE_OTHER
    );
}

/// A query string a page cannot read is answered with an HTML page with the pages'
/// security headers, not the API's JSON.
#[tokio::test]
async fn a_bad_query_string_on_a_page_is_an_html_page() {
    let app = spawn_app().await;
    let cookie = sign_in(&app, "ana@example.com").await;
    let res = get_page(&app, "/search?q=x&offset=not-a-number", Some(&cookie)).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let headers = res.headers().clone();
    assert!(headers["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("text/html"));
    assert!(headers.contains_key("content-security-policy"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = res.text().await.expect("html");
    assert!(html.contains("address is not understood"), "{html}");
}

/// `/me` lists where I am signed in and signs the other places out; this browser
/// stays signed in.
#[tokio::test]
async fn my_page_lists_my_sessions_and_signs_out_the_others() {
    let app = spawn_app().await;
    let laptop = sign_in(&app, "ana@example.com").await;
    let phone = sign_in(&app, "ana@example.com").await;
    let html = get_page(&app, "/me", Some(&phone))
        .await
        .text()
        .await
        .expect("html");
    assert_eq!(
        html.matches("<tr><td data-label=\"Signed in\">").count(),
        2,
        "{html}"
    );
    assert!(html.contains("(this browser)"), "{html}");
    let csrf = crate::pages::csrf_of(&html);
    let res = browser()
        .post(app.url("/me/sign-out-others"))
        .header(reqwest::header::COOKIE, &phone)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("Signed out of 1 other session."));
    assert_eq!(
        get_page(&app, "/", Some(&laptop)).await.status(),
        StatusCode::SEE_OTHER,
        "the laptop is signed out"
    );
    assert_eq!(
        get_page(&app, "/", Some(&phone)).await.status(),
        StatusCode::OK
    );
}
