//! The COE's page as its owner and reviewer use it, over HTTP: every form on it
//! (details, text sections with preview, timeline, 5 whys, related items, corrective
//! actions, the review steps), the printable view and the history.

use coe::db::schema::outbox_emails;
use diesel::prelude::*;
use reqwest::header::{COOKIE, LOCATION};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{json as body_json, spawn_app, TestApp};
use crate::pages::{browser, csrf_of, get_page, landed, post_sections, sign_in, version_of};

/// Posts a form of the COE page `page` to `to`, with the session's CSRF token and the
/// version the page shows now (as a browser would send them).
async fn post_coe(
    app: &TestApp,
    cookie: &str,
    page: &str,
    to: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let html = get_page(app, page, Some(cookie))
        .await
        .text()
        .await
        .expect("html");
    // The review forms carry no version; a reader's page has no form but sign-out.
    let csrf = csrf_of(&html);
    let version = if html.contains("name=\"version\"") {
        version_of(&html)
    } else {
        String::new()
    };
    let mut form: Vec<(&str, &str)> = vec![("csrf", &csrf), ("version", &version)];
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

/// Saves the text sections of COE page `page` as `typed` (with `extra` fields), and
/// follows the answer as a browser would.
async fn save_sections(
    app: &TestApp,
    cookie: &str,
    page: &str,
    typed: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let html = text_of(app, page, cookie).await;
    let res = post_sections(app, cookie, page, &html, typed, extra).await;
    landed(app, cookie, res).await
}

async fn text_of(app: &TestApp, path: &str, cookie: &str) -> String {
    let res = get_page(app, path, Some(cookie)).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.expect("html")
}

/// The first id in `html` after `prefix` (an id in a form's address).
fn id_after(html: &str, prefix: &str) -> String {
    let start = html
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix} in {html}"))
        + prefix.len();
    html[start..]
        .split(['"', '/'])
        .next()
        .expect("id")
        .to_owned()
}

#[tokio::test]
async fn a_coe_is_written_submitted_sent_back_and_approved_from_its_page() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout 502s <script>alert(1)</script>", "owner": "ana@example.com",
                    "severity": "sev2", "service": "checkout"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id").to_owned();
    let page = format!("/coes/{id}");
    let ana = sign_in(&app, "ana@example.com").await;
    let html = text_of(&app, &page, &ana).await;
    assert!(html.contains("Checkout 502s &lt;script&gt;alert(1)&lt;/script&gt;"));
    for form in [
        "Add a timeline entry",
        "Add a 5-whys chain",
        "Add a corrective action",
        "Link a related item",
        "Submit for review",
        "Change the title, owner, reviewer, severity or service",
    ] {
        assert!(html.contains(form), "{form}");
    }

    // Submitting now lists every missing piece at once, next to the button.
    let res = post_coe(&app, &ana, &page, &format!("{page}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("It cannot go to review yet"), "{html}");
    // Each named as the checklist names its section, not by its key.
    for gap in [
        "reviewer",
        "<li>Summary: is empty",
        "<li>Timeline: has no entries",
        "<li>Root cause (5 whys): needs a chain of at least 3 whys",
        "<li>Corrective actions: needs at least one corrective action",
    ] {
        assert!(html.contains(gap), "{gap}: {html}");
    }
    assert!(!html.contains("five whys:"), "{html}");

    // Details: a bad address is named and nothing changes; then a reviewer is set.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/details"),
        &[("reviewer", "not an address"), ("owner", "ana@example.com")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.expect("html").contains("Reviewer: "));
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/details"),
        &[
            ("reviewer", "rev@example.com"),
            ("owner", "ana@example.com"),
            ("severity", "sev2"),
            ("title", "Checkout 502s <script>alert(1)</script>"),
            ("service", "checkout"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(api["reviewer"], "rev@example.com");

    // A preview renders the Markdown (raw HTML as text) and saves nothing.
    let res = save_sections(
        &app,
        &ana,
        &page,
        &[("summary", "**Checkout** failed <script>x()</script>")],
        &[("preview", "summary")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("html");
    assert!(html.contains("Preview, not saved yet"), "{html}");
    assert!(
        html.contains("<strong>Checkout</strong> failed &lt;script&gt;x()&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>x()"), "{html}");
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(api["version"], 2, "the preview saved nothing");

    for (key, text) in [
        ("summary", "Checkout answered **502** for 42 minutes."),
        ("impact", "1,200 orders failed; 3% of customers."),
        ("detection", "An alert after 4 minutes."),
        ("diagnosis", "Logs showed the pool exhausted."),
        ("mitigation", "Rolled back deploy 42."),
        ("prevention", "A pool-size check in CI."),
        ("lessons", "Canaries catch this."),
    ] {
        let res = save_sections(&app, &ana, &page, &[(key, text)], &[]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{key}");
    }

    // Timeline: a wrong kind is named; entries are added, changed and deleted.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/timeline"),
        &[
            ("at", "2026-11-29T10:03"),
            ("kind", "exploded"),
            ("text", "Deploy 42"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("Kind: must be one of"), "{html}");
    assert!(
        html.contains("value=\"2026-11-29T10:03\""),
        "what was typed stays: {html}"
    );
    for (at, kind, text) in [
        ("2026-11-29T10:03", "started", "Deploy 42 went out"),
        ("2026-11-29T10:07", "detected", "Alert fired"),
        ("2026-11-29T10:20", "note", "A mistaken entry"),
    ] {
        let res = post_coe(
            &app,
            &ana,
            &page,
            &format!("{page}/timeline"),
            &[("at", at), ("kind", kind), ("text", text)],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{text}");
        // It lands on the entry it made.
        assert!(
            res.headers()[LOCATION]
                .to_str()
                .expect("ascii")
                .starts_with(&format!("{page}?did=timeline#tl-")),
            "{:?}",
            res.headers()[LOCATION]
        );
    }
    let html = text_of(&app, &page, &ana).await;
    assert!(html.contains("2026-11-29 10:03 UTC"), "{html}");
    let entries = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await["timeline"].clone();
    let mistaken = entries
        .as_array()
        .expect("timeline")
        .iter()
        .find(|e| e["text"] == "A mistaken entry")
        .expect("entry")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let html = text_of(&app, &format!("{page}/timeline/{mistaken}"), &ana).await;
    assert!(
        html.contains("Change a timeline entry") && html.contains(">A mistaken entry</textarea>"),
        "{html}"
    );
    assert!(html.contains("value=\"2026-11-29T10:20\""), "{html}");
    assert_eq!(
        get_page(&app, &format!("{page}/timeline/nope"), Some(&ana))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/timeline/{mistaken}"),
        &[
            ("at", "2026-11-29T10:20"),
            ("kind", "mitigated"),
            ("text", "Rolled back"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(
        api["mitigated_at"], "2026-11-29T10:20:00Z",
        "a milestone sets the COE's time"
    );
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/timeline/{mistaken}"),
        &[
            ("at", "2026-11-29T10:20"),
            ("kind", "mitigated"),
            ("text", "Rolled back"),
            ("delete", "1"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(api["timeline"].as_array().map(Vec::len), Some(2));

    // 5 whys: an empty chain is refused; three whys are added, as pairs.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/whys"),
        &[("why", ""), ("because", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/whys"),
        &[
            ("why", "did checkout fail"),
            ("because", "the pool was exhausted"),
            ("why", "was the pool exhausted"),
            ("because", "deploy 42 halved it"),
            ("why", "did deploy 42 halve it"),
            ("because", "no check compares pool sizes"),
            ("why", ""),
            ("because", ""),
            ("factor", "deployment"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    assert!(
        html.contains("<strong>Why did checkout fail?</strong> Because the pool was exhausted"),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="tag factor">deployment</span>"#),
        "the chain shows its contributing factor: {html}"
    );

    // Related: only web links; another COE by its page's address.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/related"),
        &[("kind", "link"), ("target", "javascript:alert(1)")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/related"),
        &[
            ("kind", "runbook"),
            ("target", "https://wiki.example.com/checkout"),
            ("title", "Checkout runbook"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    assert!(
        html.contains("href=\"https://wiki.example.com/checkout\""),
        "{html}"
    );
    let item = id_after(&html, &format!("{page}/related/"));
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/related/{item}/delete"),
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(!text_of(&app, &page, &ana)
        .await
        .contains("wiki.example.com"));

    // A corrective action: every missing field named at once, what was typed kept.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/actions"),
        &[
            ("title", "Check pool sizes in CI"),
            ("owner", ""),
            ("due_date", ""),
            ("priority", ""),
            ("kind", ""),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    for field in [
        "Owner: is required",
        "Due date: is required",
        "Priority: is required",
        "Kind: is required",
    ] {
        assert!(html.contains(field), "{field}: {html}");
    }
    assert!(html.contains("value=\"Check pool sizes in CI\""), "{html}");
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(14)).to_string();
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/actions"),
        &[
            ("title", "Check pool sizes in CI"),
            ("owner", "cy@example.com"),
            ("due_date", &due),
            ("priority", "high"),
            ("kind", "prevent"),
            ("success_criteria", "CI fails on a smaller pool"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    let action = id_after(&html, "<a href=\"/actions/");
    assert!(html.contains("Check pool sizes in CI</a>"), "{html}");
    assert!(
        !html.contains("Still missing before it can be submitted"),
        "{html}"
    );

    // Submitted: in review; the owner no longer sees the submit button.
    let res = post_coe(&app, &ana, &page, &format!("{page}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    assert!(html.contains("<dt>State</dt><dd>in review</dd>"), "{html}");
    assert!(!html.contains("Submit for review</button>"), "{html}");
    assert!(
        !html.contains("Yes, approve it</button>"),
        "the owner does not approve: {html}"
    );
    let res = post_coe(&app, &ana, &page, &format!("{page}/review/approve"), &[]).await;
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "nor by posting the form"
    );

    // The reviewer: sending it back needs a comment; then it is a draft again.
    let rev = sign_in(&app, "rev@example.com").await;
    let html = text_of(&app, &page, &rev).await;
    assert!(
        html.contains("Yes, approve it</button>") && html.contains("Request changes</button>"),
        "{html}"
    );
    let res = post_coe(
        &app,
        &rev,
        &page,
        &format!("{page}/review/request-changes"),
        &[("comment", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = post_coe(
        &app,
        &rev,
        &page,
        &format!("{page}/review/request-changes"),
        &[("comment", "Say how many customers retried.")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    assert!(html.contains("<dt>State</dt><dd>draft</dd>"), "{html}");
    assert!(html.contains("Say how many customers retried."), "{html}");

    // The owner changes the impact and submits again; the reviewer sees what changed.
    let res = save_sections(
        &app,
        &ana,
        &page,
        &[(
            "impact",
            "1,200 orders failed; 300 customers retried and 900 gave up.",
        )],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = post_coe(&app, &ana, &page, &format!("{page}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &rev).await;
    assert!(html.contains("Changed since your last look"), "{html}");
    assert!(
        html.contains("ana@example.com wrote Customer and business impact"),
        "{html}"
    );
    assert!(
        html.contains("changed since your last look</span>"),
        "the section is marked: {html}"
    );
    // A second look with nothing new says so.
    let html = text_of(&app, &page, &rev).await;
    assert!(html.contains("Nothing changed since then."), "{html}");

    let res = post_coe(
        &app,
        &rev,
        &page,
        &format!("{page}/review/approve"),
        &[("comment", "Clear.")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &rev).await;
    assert!(html.contains("<dt>State</dt><dd>approved</dd>"), "{html}");

    // The printable view: the whole document, rendered, with no form of its own.
    let print = text_of(&app, &format!("{page}/print"), &rev).await;
    for text in [
        "Customer and business impact",
        "<strong>502</strong>",
        "Deploy 42 went out",
        "Why did deploy 42 halve it?",
        "Check pool sizes in CI",
        "Clear.",
    ] {
        assert!(print.contains(text), "{text}: {print}");
    }
    // Sign-out and the header's search box only.
    assert_eq!(print.matches("<form").count(), 2, "{print}");
    assert!(!print.contains("<script>alert"), "{print}");

    // The history, in words.
    let history = text_of(&app, &format!("{page}/history"), &rev).await;
    for text in [
        "added a timeline entry",
        "deleted a timeline entry",
        "added a 5-whys chain",
        "moved it to in review",
        "moved it to approved",
        "wrote Summary",
    ] {
        assert!(history.contains(text), "{text}: {history}");
    }

    // Someone else reads it without forms and cannot change it.
    let bo = sign_in(&app, "bo@example.com").await;
    let html = text_of(&app, &page, &bo).await;
    assert!(
        !html.contains("Add a timeline entry") && !html.contains("Yes, approve it</button>"),
        "{html}"
    );
    let res = post_coe(
        &app,
        &bo,
        &page,
        &format!("{page}/actions"),
        &[("title", "x")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = post_coe(&app, &bo, &page, &format!("{page}/review/approve"), &[]).await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "approved already");
    assert_eq!(
        get_page(&app, &format!("/actions/{action}"), Some(&bo))
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        get_page(&app, "/coes/nope/print", Some(&bo)).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn forms_of_a_coe_page_need_the_sessions_token() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Queue", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id");
    let ana = sign_in(&app, "ana@example.com").await;
    for to in [
        "timeline",
        "whys",
        "related",
        "actions",
        "details",
        "review/submit",
    ] {
        let res = browser()
            .post(app.url(&format!("/coes/{id}/{to}")))
            .header(COOKIE, &ana)
            .form(&[("csrf", "forged"), ("version", "1"), ("title", "x")])
            .send()
            .await
            .expect("sent");
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{to}");
    }
    // A change without the version its page was loaded with: a 412 page, nothing saved.
    let html = text_of(&app, &format!("/coes/{id}"), &ana).await;
    let res = browser()
        .post(app.url(&format!("/coes/{id}/details")))
        .header(COOKIE, &ana)
        .form(&[
            ("csrf", csrf_of(&html).as_str()),
            ("title", "Another title"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::PRECONDITION_FAILED);
    let page = res.text().await.expect("html");
    assert!(page.contains("This page was out of date"), "{page}");
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(api["version"], 1, "nothing changed");
}

/// Every form of the COE page keeps what was typed when it does not go through: a
/// 5-whys chain (new, or a change of one) and a timeline entry (on its own page), as
/// the text sections and the other forms do.
#[tokio::test]
async fn whys_and_timeline_forms_keep_what_was_typed() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Queue", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id").to_owned();
    let page = format!("/coes/{id}");
    let ana = sign_in(&app, "ana@example.com").await;

    // A new chain with a "because" missing: 422, the rows as typed.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/whys"),
        &[
            ("why", "Why did the queue <stall>?"),
            ("because", "The consumer crashed"),
            ("why", "Why did it crash?"),
            ("because", ""),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(
        html.contains("Why 2, “Because …”: must not be empty"),
        "{html}"
    );
    assert!(
        html.contains(r#"value="Why did the queue &lt;stall&gt;?""#)
            && html.contains(r#"value="Why did it crash?""#),
        "the typed rows are back in the form: {html}"
    );

    // A chain that exists, changed to something invalid: its own form keeps the text.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/whys"),
        &[
            ("why", "Why did the queue stall?"),
            ("because", "The consumer crashed"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    let chain = id_after(&html, &format!("/coes/{id}/whys/"));
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/whys/{chain}"),
        &[("why", "Why, really?"), ("because", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains(r#"value="Why, really?""#), "{html}");
    assert!(
        html.contains("<details open><summary>Change chain 1"),
        "{html}"
    );

    // A timeline entry changed to an empty text: its page again, with the time and
    // kind as typed and the problem.
    let res = post_coe(
        &app,
        &ana,
        &page,
        &format!("{page}/timeline"),
        &[
            ("at", "2026-11-29T10:00"),
            ("kind", "note"),
            ("text", "Queue stalled"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(&app, &page, &ana).await;
    let entry = id_after(&html, &format!("/coes/{id}/timeline/"));
    let entry_page = format!("{page}/timeline/{entry}");
    let res = post_coe(
        &app,
        &ana,
        &entry_page,
        &entry_page,
        &[
            ("at", "2026-11-29T10:07"),
            ("kind", "mitigated"),
            ("text", " "),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("What happened: must not be empty"), "{html}");
    assert!(html.contains(r#"value="2026-11-29T10:07""#), "{html}");
    assert!(
        html.contains(r#"<option value="mitigated" selected>"#),
        "{html}"
    );
    let api = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await;
    assert_eq!(api["timeline"][0]["text"], "Queue stalled", "nothing saved");

    // An error is a page in the layout, with the navigation of a signed-in person's
    // pages kept out (the error page does not know who is signed in).
    let res = browser()
        .post(app.url("/sign-in/confirm"))
        .form(&[("token", "made-up")])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let html = res.text().await.expect("html");
    assert!(
        html.contains(r##"<a class="skip" href="#main">"##)
            && html.contains(r#"<header class="top">"#)
            && html.contains("this sign-in link was used already or has expired"),
        "{html}"
    );
}

#[tokio::test]
async fn a_recurring_coe_shows_the_earlier_coes_open_actions() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    let fire = |at: &str| {
        json!({"dedup_key": "disk-full", "group_key": "search-disk", "severity": "sev2",
               "service": "search", "title": "Disk full", "started_at": at})
    };
    for event in [
        fire("2026-11-01T10:00:00Z"),
        json!({"dedup_key": "disk-full", "group_key": "search-disk", "status": "resolved",
               "started_at": "2026-11-01T10:00:00Z", "ended_at": "2026-11-01T11:00:00Z"}),
    ] {
        let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
        assert_eq!(res.status(), 202);
    }
    let earlier = app.get_json("/api/v1/coes", &admin).await["coes"][0]["id"]
        .as_str()
        .expect("the first COE")
        .to_owned();
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(9)).to_string();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{earlier}/actions"),
            Some(&admin),
            &json!({"title": "Alarm at 80% disk <now>", "owner": "cy@example.com", "due_date": due,
                    "priority": "high", "kind": "detect"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let res = app
        .post_json(
            "/api/v1/events",
            Some(&ingest),
            &fire("2026-11-20T10:00:00Z"),
        )
        .await;
    assert_eq!(res.status(), 202);
    let newest = app.get_json("/api/v1/coes", &admin).await["coes"][0]["id"]
        .as_str()
        .expect("the second COE")
        .to_owned();
    assert_ne!(newest, earlier);
    let ana = sign_in(&app, "ana@example.com").await;
    let html = text_of(&app, &format!("/coes/{newest}"), &ana).await;
    let at = html.find("It happened before").expect("the recurrence");
    let part = &html[at..];
    assert!(
        part.contains(&format!("href=\"/coes/{earlier}\"")),
        "{part}"
    );
    assert!(part.contains("1 of 1 actions still open"), "{part}");
    assert!(
        part.contains("Alarm at 80% disk &lt;now&gt;</a> · cy@example.com"),
        "{part}"
    );
}

/// The value of the hidden `form_key` field of the part of the page whose button posts
/// to `action` (the page is one form; each part's key comes before its button).
fn form_key_of(html: &str, action: &str) -> String {
    let button = html
        .find(&format!("formaction=\"{action}\""))
        .expect("the part's button");
    let start = html[..button]
        .rfind(".form_key\" value=\"")
        .expect("a form key")
        + 19;
    html[start..].split('"').next().expect("value").to_owned()
}

#[tokio::test]
async fn a_repeated_create_form_makes_one_record_and_lands_on_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Queue backlog", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let id = coe["id"].as_str().expect("id").to_owned();
    let page = format!("/coes/{id}");
    let ana = sign_in(&app, "ana@example.com").await;
    let html = text_of(&app, &page, &ana).await;
    let csrf = csrf_of(&html);
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(20)).to_string();

    // A double click: the same action form sent twice at once, then a retry.
    let key = form_key_of(&html, &format!("{page}/actions"));
    let action_form = [
        ("csrf", csrf.as_str()),
        ("form_key", key.as_str()),
        ("title", "Alarm on queue age"),
        ("owner", "cy@example.com"),
        ("due_date", due.as_str()),
        ("priority", "high"),
        ("kind", "detect"),
        (
            "success_criteria",
            "An alarm fires within 5 minutes of a stuck queue.",
        ),
    ];
    let send = || {
        browser()
            .post(app.url(&format!("{page}/actions")))
            .header(COOKIE, &ana)
            .form(&action_form)
            .send()
    };
    let (first, second) = tokio::join!(send(), send());
    let retry = send().await.expect("sent");
    let mut landed_at = Vec::new();
    for res in [first.expect("sent"), second.expect("sent"), retry] {
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        landed_at.push(res.headers()[LOCATION].to_str().expect("ascii").to_owned());
    }
    let actions = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await["actions"].clone();
    let actions = actions.as_array().expect("a list").clone();
    assert_eq!(actions.len(), 1, "one action: {actions:?}");
    let action_id = actions[0]["id"].as_str().expect("id");
    for location in &landed_at {
        assert_eq!(
            location,
            &format!("{page}?did=actions#action-{action_id}"),
            "{landed_at:?}"
        );
    }

    // The same for a timeline entry, a 5-whys chain and a related item.
    for (to, fields, count_of) in [
        (
            "timeline",
            vec![
                ("at", "2026-11-29T10:03"),
                ("kind", "note"),
                ("text", "Queue grew"),
            ],
            "timeline",
        ),
        (
            "whys",
            vec![("why", "the queue grew"), ("because", "a consumer hung")],
            "five_whys",
        ),
        (
            "related",
            vec![("kind", "link"), ("target", "https://wiki.example.com/q")],
            "related",
        ),
    ] {
        let before = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await[count_of]
            .as_array()
            .map_or(0, Vec::len);
        let html = text_of(&app, &page, &ana).await;
        let key = form_key_of(&html, &format!("{page}/{to}"));
        let mut form = vec![("csrf", csrf.as_str()), ("form_key", key.as_str())];
        form.extend(fields);
        let mut places = Vec::new();
        for _ in 0..2 {
            let res = browser()
                .post(app.url(&format!("{page}/{to}")))
                .header(COOKIE, &ana)
                .form(&form)
                .send()
                .await
                .expect("sent");
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{to}");
            places.push(res.headers()[LOCATION].to_str().expect("ascii").to_owned());
        }
        assert_eq!(places[0], places[1], "{to}");
        let after = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await[count_of]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(after, before + 1, "{to}: one made");
    }

    // A key sent again with other fields (a page kept from before, filled in anew)
    // makes nothing under it, says so, and keeps what was typed.
    let mut other = action_form.to_vec();
    other[2] = ("title", "Another action entirely");
    let res = browser()
        .post(app.url(&format!("{page}/actions")))
        .header(COOKIE, &ana)
        .form(&other)
        .send()
        .await
        .expect("sent");
    let res = landed(&app, &ana, res).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let html = res.text().await.expect("html");
    assert!(
        html.contains("This form was sent before with other contents"),
        "{html}"
    );
    assert!(html.contains("value=\"Another action entirely\""), "{html}");
    let actions = app.get_json(&format!("/api/v1/coes/{id}"), &admin).await["actions"].clone();
    let actions = actions.as_array().expect("a list").clone();
    assert_eq!(actions.len(), 1);
}

#[tokio::test]
async fn an_action_added_by_mistake_is_deleted_by_the_coes_owner_while_a_draft() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let coe = body_json(
        app.post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Queue backlog", "owner": "ana@example.com"}),
        )
        .await,
    )
    .await;
    let coe_id = coe["id"].as_str().expect("id").to_owned();
    let action = body_json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&admin),
            &json!({"title": "Typo action", "owner": "cy@example.com", "due_date": "2099-01-01",
                    "priority": "low", "kind": "process"}),
        )
        .await,
    )
    .await;
    let id = action["id"].as_str().expect("id").to_owned();
    let page = format!("/actions/{id}");

    // The action's owner may not delete it: no button, and a refusal.
    let cy = sign_in(&app, "cy@example.com").await;
    let html = text_of(&app, &page, &cy).await;
    assert!(!html.contains("Delete this action"), "{html}");
    let res = browser()
        .post(app.url(&format!("{page}/delete")))
        .header(COOKIE, &cy)
        .form(&[("csrf", csrf_of(&html))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // The COE's owner deletes it; the COE's history keeps what it was.
    let ana = sign_in(&app, "ana@example.com").await;
    let html = text_of(&app, &page, &ana).await;
    assert!(
        html.contains("Delete this action (added by mistake)"),
        "{html}"
    );
    let res = browser()
        .post(app.url(&format!("{page}/delete")))
        .header(COOKIE, &ana)
        .form(&[("csrf", csrf_of(&html))])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()[LOCATION],
        format!("/coes/{coe_id}#part-actions")
    );
    let res = app
        .get(&format!("/api/v1/actions/{id}"), Some(&admin))
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let history = app
        .get_json(&format!("/api/v1/coes/{coe_id}/history"), &admin)
        .await
        .to_string();
    assert!(
        history.contains("action:delete") && history.contains("Typo action"),
        "{history}"
    );
    // Deleting it again: it is gone.
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/actions/{id}")))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

/// The reviewer reads the COE rendered, with the review panel on top; comments on a
/// section; sends it back on the comments alone; the owner's page opens with the
/// banner, each comment is answered before it can go back to review; the reviewer
/// then sees the words that changed.
#[tokio::test]
async fn a_reviewer_reads_comments_on_sections_and_the_owner_answers_each() {
    let w = crate::actions::World::new().await;
    let app = &w.app;
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "owner@example.com")
        .await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    let page = format!("/coes/{id}");

    // The reviewer's reading mode: no editor, the panel above the first section,
    // Approve a secondary button in a form of its own, away from the comment box.
    let rev = sign_in(app, "reviewer@example.com").await;
    let html = text_of(app, &page, &rev).await;
    assert!(!html.contains("name=\"text:"), "no editor: {html}");
    let panel = html.find("id=\"review\"").expect("the review panel");
    assert!(
        panel < html.find("id=\"summary\"").expect("summary"),
        "{html}"
    );
    assert!(
        html.contains("<textarea id=\"rv-comment\" name=\"review.comment\" rows=\"4\"></textarea>"),
        "{html}"
    );
    assert!(
        html.contains("<button type=\"submit\" class=\"secondary\" formaction=\"/coes/"),
        "{html}"
    );
    assert!(html.contains("4,100 payments failed."), "rendered: {html}");
    assert!(
        html.contains("Comment on Customer and business impact"),
        "{html}"
    );

    // A comment on Impact; an empty one is refused at its section, keeping nothing.
    let res = post_coe(
        app,
        &rev,
        &page,
        &format!("{page}/comments"),
        &[("section", "impact"), ("body", "  ")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(html.contains("The text: must not be empty"), "{html}");
    let res = post_coe(
        app,
        &rev,
        &page,
        &format!("{page}/comments"),
        &[
            ("section", "impact"),
            ("body", "How many customers retried?\nAnd how many gave up?"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        res.headers()[LOCATION]
            .to_str()
            .expect("location")
            .ends_with("#impact"),
        "{:?}",
        res.headers()
    );
    let html = text_of(app, &page, &rev).await;
    assert!(
        html.contains(
            "<p class=\"comment\">How many customers retried?\nAnd how many gave up?</p>"
        ),
        "{html}"
    );
    // Through the API: only the reviewer comments, on a section of the template.
    let comment = json!({"section": "impact", "body": "x"});
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/comments"),
            None,
            Some(comment),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/comments"),
            None,
            Some(json!({"section": "nope", "body": "x"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "section", "{body}");

    // Sent back on the section comment alone; the email holds it under its section.
    let res = post_coe(
        app,
        &rev,
        &page,
        &format!("{page}/review/request-changes"),
        &[("comment", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let email: String = {
        let mut conn = app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::kind.eq("changes_requested"))
            .select(outbox_emails::body_text)
            .first(&mut conn)
            .expect("the email")
    };
    assert!(
        email.contains("On Customer and business impact: How many customers retried?"),
        "{email}"
    );

    // The owner's page opens with the banner; submitting lists the unanswered comment.
    let ana = sign_in(app, "owner@example.com").await;
    let html = text_of(app, &page, &ana).await;
    let banner = html.find("Changes requested by").expect("the banner");
    assert!(
        banner < html.find("id=\"summary\"").expect("summary"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"#impact\">Customer and business impact</a>"),
        "{html}"
    );
    let res = post_coe(app, &ana, &page, &format!("{page}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.expect("html");
    assert!(
        html.contains(
            "Customer and business impact: the comment by reviewer@example.com waits for an answer"
        ),
        "{html}"
    );
    let comment_id = id_after(&html, &format!("action=\"/coes/{id}/comments/"));
    let res = post_coe(
        app,
        &ana,
        &page,
        &format!("{page}/comments/{comment_id}/answer"),
        &[
            ("section", "impact"),
            ("answer", "300 retried, 900 gave up: added."),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = save_sections(
        app,
        &ana,
        &page,
        &[(
            "impact",
            "4,100 payments failed; 300 customers retried and 900 gave up.",
        )],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = text_of(app, &page, &ana).await;
    assert!(html.contains("300 retried, 900 gave up: added."), "{html}");
    let res = post_coe(app, &ana, &page, &format!("{page}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    // The reviewer sees the words that changed in Impact, not only that it changed.
    let html = text_of(app, &page, &rev).await;
    assert!(html.contains("Changed since your last look"), "{html}");
    let diff = &html[html.find("<div class=\"diff\">").expect("a diff")..];
    let diff = &diff[..diff.find("</div>").expect("its end")];
    assert_eq!(
        diff,
        "<div class=\"diff\">4,100 payments <del>failed.</del><ins>failed; 300 customers retried and 900 gave up.</ins>",
    );
    // Answering again replaces the answer; a stranger may not answer.
    let answer = format!("/api/v1/coes/{id}/comments/{comment_id}/answer");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &answer,
            None,
            Some(json!({"answer": "Added to Impact."})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["comments"][0]["answer"], "Added to Impact.", "{body}");
    let stranger = crate::actions::person_token(app, "bo", "bo@example.com");
    let (status, body) = w
        .send(
            &stranger,
            "POST",
            &answer,
            None,
            Some(json!({"answer": "mine"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    // Nor its author, though the reviewer may edit the draft: the owner answers.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &answer,
            None,
            Some(json!({"answer": "answered myself"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not by the one who made it")),
        "{body}"
    );
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/comments/nope/answer"),
            None,
            Some(json!({"answer": "x"})),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    // The reviewer may still switch to the editor, and the owner to the reading mode.
    let html = text_of(app, &format!("{page}?view=edit"), &rev).await;
    assert!(html.contains("name=\"text:impact\""), "{html}");
    let html = text_of(app, &format!("{page}?view=read"), &ana).await;
    assert!(
        !html.contains("name=\"text:impact\"") && html.contains(">Edit it</a>"),
        "{html}"
    );
}
