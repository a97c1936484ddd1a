//! Emails that behave like automated mail (RFC 3834's `Auto-Submitted`, `Reply-To`,
//! RFC 2369's `List-Id` and `List-Unsubscribe` with RFC 8058's one-click on reminders
//! and digests), and a person's notification settings: digests only, only what needs
//! them, a pause. Escalations and assignments go whatever the settings say.

use reqwest::header::{CONTENT_TYPE, COOKIE};
use reqwest::StatusCode;

use crate::email::{days_from_now, Received, SmtpServer, World, PUBLIC_URL};
use crate::pages::{browser, csrf_of, get_page, sign_in};

/// The path of a reminder's unsubscribe link (`/notifications/…`).
fn unsubscribe_path(email: &Received) -> String {
    let header = email
        .header("List-Unsubscribe")
        .expect("a List-Unsubscribe header");
    let link = header
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned();
    let path = link
        .strip_prefix(PUBLIC_URL)
        .unwrap_or_else(|| panic!("a link to coe: {link}"));
    assert!(path.starts_with("/notifications/coe_"), "{path}");
    path.to_owned()
}

fn digests(smtp: &SmtpServer, to: &str) -> Vec<Received> {
    smtp.to(to)
        .into_iter()
        .filter(|m| m.subject.contains("overdue corrective action"))
        .collect()
}

#[tokio::test]
async fn reminders_say_they_are_automated_and_unsubscribe_in_one_click_while_escalations_still_go()
{
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    let coe = w.coe("Search was down", "lead@example.com", None).await;
    w.action(&coe, "Shard the index", "ana@example.com", 6)
        .await;
    let reply_to = [("COE_EMAIL_REPLY_TO", "SRE team <sre@example.com>")];

    w.sweep_with(&smtp.url(), &reply_to, &[]);
    let ana = digests(&smtp, "ana@example.com");
    assert_eq!(ana.len(), 1, "day 6: Ana's digest");
    let digest = &ana[0];
    assert_eq!(
        digest.header("Auto-Submitted").as_deref(),
        Some("auto-generated")
    );
    assert_eq!(
        digest.header("X-Auto-Response-Suppress").as_deref(),
        Some("All")
    );
    let reply = digest.header("Reply-To").expect("Reply-To");
    assert!(reply.contains("sre@example.com"), "{reply}");
    assert_eq!(
        digest.header("List-Id").as_deref(),
        Some("coe reminders <reminders.localhost>")
    );
    assert_eq!(
        digest.header("List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    assert!(
        digest
            .text
            .contains(&format!("{PUBLIC_URL}/me/notifications")),
        "the footer links the settings: {}",
        digest.text
    );
    let link = unsubscribe_path(digest);

    // The link opens the settings without signing in.
    let page = get_page(&w.app, &link, None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.expect("html");
    assert!(html.contains("ana@example.com"), "{html}");
    assert!(html.contains("Only what needs me"), "{html}");

    // The mail provider's one-click POST (RFC 8058): no cookie, no page.
    let res = browser()
        .post(w.app.url(&link))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.expect("text").contains("Unsubscribed"));

    // Day 7: no digest for Ana, but the escalation reaches her manager, and what is
    // assigned to her still reaches her.
    let out = w.sweep_with(&smtp.url(), &reply_to, &["--at", &days_from_now(1)]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("held 1 email(s)"), "{said}");
    let carla = smtp.to("carla@example.com");
    assert_eq!(carla.len(), 1, "the manager is told");
    assert!(carla[0].subject.starts_with("[coe] Escalation"));
    assert_eq!(
        carla[0].header("Auto-Submitted").as_deref(),
        Some("auto-generated")
    );
    assert_eq!(
        carla[0].header("List-Unsubscribe"),
        None,
        "an escalation cannot be unsubscribed from"
    );
    assert!(carla[0]
        .text
        .contains("whatever your notification settings say"));
    assert_eq!(digests(&smtp, "ana@example.com").len(), 1, "no new digest");
    // Assigned after the one-click: the assignment still reaches her.
    let res = w
        .app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(&w.lead),
            &serde_json::json!({"title": "Cap the query size", "owner": "ana@example.com",
                                "due_date": "2099-01-01", "priority": "high", "kind": "prevent"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    w.sweep_with(&smtp.url(), &reply_to, &["--at", &days_from_now(1)]);
    let assigned: Vec<Received> = smtp
        .to("ana@example.com")
        .into_iter()
        .filter(|m| m.text.contains("Cap the query size"))
        .collect();
    assert_eq!(assigned.len(), 1, "the assignment still goes");

    // A link nobody made is a 404, and changes nothing.
    let res = browser()
        .post(w.app.url("/notifications/coe_0000"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        get_page(&w.app, "/notifications/coe_0000", None)
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_pause_holds_reminders_until_it_ends_and_the_page_says_so() {
    let w = World::new().await;
    let smtp = SmtpServer::start();
    w.person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    let coe = w.coe("Search was down", "lead@example.com", None).await;
    w.action(&coe, "Shard the index", "ana@example.com", 1)
        .await;

    let ana = sign_in(&w.app, "ana@example.com").await;
    let page = get_page(&w.app, "/me/notifications", Some(&ana)).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.expect("html");
    assert!(
        html.contains("Your move: choose which emails coe sends you"),
        "{html}"
    );
    let csrf = csrf_of(&html);

    // A pause longer than allowed is refused, naming the problem; nothing is saved.
    let res = browser()
        .post(w.app.url("/me/notifications"))
        .header(COOKIE, &ana)
        .form(&[("csrf", csrf.as_str()), ("mode", "every"), ("pause", "365")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res
        .text()
        .await
        .expect("html")
        .contains("a pause lasts from 1 to 90 days"));
    let res = browser()
        .post(w.app.url("/me/notifications"))
        .header(COOKIE, &ana)
        .form(&[
            ("csrf", csrf.as_str()),
            ("mode", "sometimes"),
            ("pause", "0"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let res = browser()
        .post(w.app.url("/me/notifications"))
        .header(COOKIE, &ana)
        .form(&[("csrf", csrf.as_str()), ("mode", "every"), ("pause", "3")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let me = get_page(&w.app, "/me", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(me.contains("Paused until"), "{me}");

    // Paused: no digest today or in two days; the day after the pause, one.
    let out = w.sweep(&smtp.url(), &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("held 1 email(s)"));
    w.sweep(&smtp.url(), &["--at", &days_from_now(2)]);
    assert!(digests(&smtp, "ana@example.com").is_empty(), "paused");
    w.sweep(&smtp.url(), &["--at", &days_from_now(4)]);
    assert_eq!(
        digests(&smtp, "ana@example.com").len(),
        1,
        "the pause ended"
    );

    // Digests only: the digest keeps coming.
    let res = browser()
        .post(w.app.url("/me/notifications"))
        .header(COOKIE, &ana)
        .form(&[("csrf", csrf.as_str()), ("mode", "digests"), ("pause", "0")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    w.sweep(&smtp.url(), &["--at", &days_from_now(5)]);
    assert_eq!(digests(&smtp, "ana@example.com").len(), 2);
    let page = get_page(&w.app, "/me/notifications?saved=1", Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    assert!(page.contains("Saved."), "{page}");
    assert!(
        page.contains(r#"value="digests" checked"#),
        "the choice is shown: {page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_chooses_digests_only_and_pauses_from_their_page_in_the_browser() {
    let app = crate::helpers::spawn_app().await;
    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "ana@example.com", "/me").await;
    assert!(browser.text("main").await.contains("You get every email."));
    browser.click_to_load("a[href='/me/notifications']").await;
    browser.wait_for_heading("Email from coe").await;
    browser.screenshot("notifications").await;
    browser.click("input[value=digests]").await;
    browser.set_value("#pause", "7").await;
    browser.click_to_load("main button[type=submit]").await;
    browser.wait_for_url("/me/notifications?saved=1").await;
    let main = browser.text("main").await;
    assert!(main.contains("Saved."), "{main}");
    assert!(main.contains("Paused until"), "{main}");
    browser.screenshot("notifications-paused").await;
    browser.goto(&app.url("/me")).await;
    assert!(browser.text("main").await.contains("Paused until"));

    // Without script the form works the same.
    let plain = crate::webdriver::Browser::start_without_script().await;
    crate::browser::sign_in_to(&plain, &app, "ana@example.com", "/me/notifications").await;
    plain.click("input[value=essential]").await;
    plain.click_to_load("main button[type=submit]").await;
    plain.wait_for_url("/me/notifications?saved=1").await;
    assert!(
        plain.text("main").await.contains("Keep the pause until"),
        "the pause stays when only the choice changes"
    );
    plain.goto(&app.url("/me")).await;
    assert!(plain.text("main").await.contains("Paused until"));
}
