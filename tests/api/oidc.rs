//! Signing in through a real, certified OpenID Provider: panva's `oidc-provider`
//! (npm; `scripts/setup` installs it in `tests/oidc/`), started on loopback by each
//! test with a client for `coe` and accounts with email, name and groups
//! (`tests/oidc/op.mjs`). The flow is driven as a browser would (a cookie jar,
//! following redirects, the provider's own login form); the journey in a real
//! browser is at the end.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use coe::config::AuthMode;
use coe::db::schema::{people, sessions};
use diesel::prelude::*;
use reqwest::cookie::CookieStore;
use reqwest::redirect::Policy;
use reqwest::StatusCode;

use crate::cli::{coe, stderr, stdout};
use crate::helpers::{spawn_app_with, TestApp};
use crate::webdriver::Browser;

const CALLBACK: &str = "/sign-in/oidc/callback";

/// The test provider: a `node` process serving `http://127.0.0.1:<port>`.
struct Provider {
    child: Child,
    port: u16,
    /// Its signing keys and its log, kept while it runs.
    _keys: Arc<tempfile::TempDir>,
}

fn provider_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "the test OpenID Provider is not installed: run scripts/setup (npm ci in tests/oidc)"
    );
    dir
}

impl Provider {
    /// A provider for a coe on `coe_port`, signing with the first of `kids`, as
    /// shipped: the scopes' claims at UserInfo only.
    fn start(coe_port: u16, kids: &str) -> Provider {
        Provider::start_with(coe_port, kids, &[])
    }

    /// The same with more options of `op.mjs` (`--claims-in-id-token`,
    /// `--userinfo-signed`, `--no-kid`).
    fn start_with(coe_port: u16, kids: &str, options: &[&str]) -> Provider {
        let keys = Arc::new(tempfile::tempdir().expect("a key folder"));
        // The free port may be taken by another test's server before node binds it,
        // and once in CI node stayed silent for 90 s: then again, on another port
        // (any other failure stops the test).
        let mut logs = Vec::new();
        for _ in 0..3 {
            match Provider::try_start_on(
                crate::helpers::free_port(),
                coe_port,
                keys.clone(),
                kids,
                options,
            ) {
                Ok(provider) => return provider,
                Err(log) if log.contains("EADDRINUSE") || log.contains("Timeout") => {
                    eprintln!("{log}\n(trying again on another port)");
                    logs.push(log);
                }
                Err(log) => panic!("{log}"),
            }
        }
        panic!(
            "the OpenID Provider did not start in three tries:\n{}",
            logs.join("\n")
        )
    }

    /// The provider, or why it did not say it is ready (with its log).
    fn try_start_on(
        port: u16,
        coe_port: u16,
        keys: Arc<tempfile::TempDir>,
        kids: &str,
        options: &[&str],
    ) -> Result<Provider, String> {
        let coe_base = format!("http://127.0.0.1:{coe_port}");
        let mut child = Command::new("node")
            .current_dir(provider_dir())
            .arg("op.mjs")
            .args(["--port", &port.to_string()])
            .args(["--redirect", &format!("{coe_base}{CALLBACK}")])
            .args(["--post-logout", &format!("{coe_base}/sign-in")])
            .arg("--keys")
            .arg(keys.path())
            .args(["--kids", kids])
            .args(options)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(
                std::fs::File::create(keys.path().join("op.log")).expect("a log file"),
            ))
            .spawn()
            .expect("node starts (Node.js is needed: scripts/setup installs it)");
        let stdout = child.stdout.take().expect("its stdout");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("OP READY") {
                    let _ = ready_tx.send(());
                }
            }
        });
        let started = std::time::Instant::now();
        if let Err(e) = ready_rx.recv_timeout(Duration::from_secs(60)) {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(keys.path().join("op.log")).unwrap_or_default();
            return Err(format!(
                "the OpenID Provider on port {port} did not say it is ready ({e:?} after {:?}):\n{log}",
                started.elapsed()
            ));
        }
        Ok(Provider {
            child,
            port,
            _keys: keys,
        })
    }

    /// What the provider wrote to its log.
    fn log(&self) -> String {
        std::fs::read_to_string(self._keys.path().join("op.log")).unwrap_or_default()
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Makes the provider afresh signing with the first of `kids` (a rotation: the
    /// old key still published after it), as a restart with a new configuration
    /// would, but behind the same listening socket; its counts start again.
    async fn rotate(&self, kids: &str) {
        let rotated = reqwest::Client::new()
            .post(format!("{}/test/rotate?kids={kids}", self.issuer()))
            .send()
            .await
            .expect("the provider answers");
        assert_eq!(rotated.status(), StatusCode::OK);
    }

    /// What coe asked of it so far, by path (`/token`, `/jwks`, …).
    async fn counts(&self) -> serde_json::Value {
        reqwest::get(format!("{}/test/counts", self.issuer()))
            .await
            .expect("the provider answers")
            .json()
            .await
            .expect("its counts")
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A coe on `coe_port` signing people in through `provider`: `coe-admins` are
/// admins, example.com may sign in.
async fn coe_with(
    coe_port: u16,
    issuer: &str,
    configure: impl FnOnce(&mut coe::config::Settings),
) -> TestApp {
    let issuer = issuer.to_owned();
    spawn_app_with(move |s| {
        s.listen = format!("127.0.0.1:{coe_port}");
        s.public_url = format!("http://127.0.0.1:{coe_port}");
        s.auth.mode = AuthMode::Oidc;
        s.auth.allowed_domains = vec!["example.com".into()];
        s.auth.oidc.issuer = issuer;
        s.auth.oidc.client_id = "coe".into();
        s.auth.oidc.client_secret = "coe-test-secret".into();
        s.auth.oidc.scopes = vec![
            "openid".into(),
            "email".into(),
            "profile".into(),
            "groups".into(),
        ];
        s.auth.oidc.admin_groups = vec!["coe-admins".into()];
        s.auth.oidc.name = "Test Provider".into();
        configure(s);
    })
    .await
}

/// A browser without a browser: a cookie jar, following redirects but stopping at
/// coe's callback, so that a test can look at it (and replay it).
struct Visitor {
    client: reqwest::Client,
    jar: Arc<reqwest::cookie::Jar>,
}

impl Visitor {
    fn new() -> Visitor {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let client = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .redirect(Policy::custom(|attempt| {
                let from_callback = attempt
                    .previous()
                    .last()
                    .is_some_and(|u| u.path() == CALLBACK);
                if attempt.url().path() == CALLBACK
                    || from_callback
                    || attempt.previous().len() > 10
                {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .expect("an HTTP client");
        Visitor { client, jar }
    }

    /// Presses "Sign in with …" on coe's page and signs in as `login` on the
    /// provider's page; returns coe's answer where it is not the provider's login
    /// page (its error page) or the callback URL the provider sent the browser to.
    async fn to_callback(&self, app: &TestApp, login: &str) -> Result<String, reqwest::Response> {
        let at_provider = self
            .client
            .get(app.url("/sign-in/oidc?next=%2Fme"))
            .send()
            .await
            .expect("the sign-in starts");
        if !at_provider.url().path().starts_with("/interaction/") {
            return Err(at_provider);
        }
        let form = at_provider.url().clone();
        let page = at_provider.text().await.expect("the login page");
        assert!(page.contains("name=\"login\""), "{page}");
        let back = self
            .client
            .post(form)
            .form(&[("prompt", "login"), ("login", login), ("password", "any")])
            .send()
            .await
            .expect("the provider's login form is sent");
        let location = back
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        match location {
            Some(l) if l.contains(CALLBACK) => Ok(l),
            _ => Err(back),
        }
    }

    async fn get(&self, url: &str) -> reqwest::Response {
        self.client.get(url).send().await.expect("a GET")
    }

    /// Signs in as `login` all the way: coe's answer to the callback.
    async fn sign_in(&self, app: &TestApp, login: &str) -> reqwest::Response {
        match self.to_callback(app, login).await {
            Ok(callback) => self.get(&callback).await,
            Err(answer) => answer,
        }
    }

    /// The pending sign-in's cookie, as a replaying attacker would have copied it.
    fn pending_cookie(&self, app: &TestApp) -> String {
        let url = app.url("/").parse().expect("a URL");
        self.jar
            .cookies(&url)
            .and_then(|v| v.to_str().ok().map(str::to_owned))
            .unwrap_or_default()
            .split("; ")
            .find(|c| c.starts_with("coe_oidc="))
            .unwrap_or_default()
            .to_owned()
    }
}

async fn body(response: reqwest::Response) -> String {
    response.text().await.expect("a body")
}

fn live_sessions(app: &TestApp) -> Vec<(String, String)> {
    let mut conn = app.pool.get().expect("conn");
    sessions::table
        .filter(sessions::ended_at.is_null())
        .select((sessions::person_email, sessions::method))
        .load(&mut conn)
        .expect("sessions")
}

fn person(app: &TestApp, email: &str) -> Option<(Option<String>, bool)> {
    let mut conn = app.pool.get().expect("conn");
    people::table
        .find(email)
        .select((people::name, people::is_admin))
        .first(&mut conn)
        .optional()
        .expect("people")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_through_the_provider_and_admin_follows_their_groups() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;

    // The sign-in page offers the provider, and no emailed link.
    let page = body(app.get("/sign-in?next=/board", None).await).await;
    assert!(page.contains("Sign in with Test Provider"), "{page}");
    assert!(!page.contains("Email me a sign-in link"), "{page}");

    let alice = Visitor::new();
    let callback = alice.to_callback(&app, "alice").await.expect("a callback");
    let answer = alice.get(&callback).await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    assert_eq!(answer.headers()["location"], "/me");
    let me = alice.get(&app.url("/me")).await;
    assert_eq!(me.status(), StatusCode::OK);
    let page = body(me).await;
    assert!(page.contains("alice@example.com"), "{page}");
    assert!(page.contains("href=\"/admin/people\""), "an admin: {page}");
    // She joined the directory, with the provider's name for her, as an admin by her
    // group; her session is an OpenID one.
    assert_eq!(
        person(&app, "alice@example.com"),
        Some((Some("Alice Admin".into()), true))
    );
    assert_eq!(
        live_sessions(&app),
        vec![("alice@example.com".to_owned(), "oidc".to_owned())]
    );

    // The callback again, in the same browser: that sign-in is over.
    let again = alice.get(&callback).await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert!(body(again).await.contains("not started in this browser"));

    // Carol is not in an admin group: no Admin, even when the directory said admin
    // before (it follows the groups at each sign-in).
    {
        let mut conn = app.pool.get().expect("conn");
        diesel::insert_into(people::table)
            .values((
                people::email.eq("carol@example.com"),
                people::name.eq("Carol From The Directory"),
                people::is_admin.eq(true),
                people::created_at.eq(chrono::Utc::now().naive_utc()),
                people::updated_at.eq(chrono::Utc::now().naive_utc()),
            ))
            .execute(&mut conn)
            .expect("carol");
    }
    let carol = Visitor::new();
    let answer = carol.sign_in(&app, "carol").await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let page = body(carol.get(&app.url("/me")).await).await;
    assert!(page.contains("carol@example.com"), "{page}");
    assert!(!page.contains("href=\"/admin/people\""), "{page}");
    // The directory's name is kept; admin is the provider's word.
    assert_eq!(
        person(&app, "carol@example.com"),
        Some((Some("Carol From The Directory".into()), false))
    );

    // Only a page of coe's own to come back to: another site's is replaced by `/`.
    let elsewhere = Visitor::new();
    let start = elsewhere
        .client
        .get(app.url("/sign-in/oidc?next=%2F%2Fevil.example%2Fx"))
        .send()
        .await
        .expect("started");
    assert!(start.url().path().starts_with("/interaction/"));
    let form = start.url().clone();
    let back = elsewhere
        .client
        .post(form)
        .form(&[("prompt", "login"), ("login", "alice"), ("password", "any")])
        .send()
        .await
        .expect("signed in at the provider");
    let callback = back.headers()["location"]
        .to_str()
        .expect("a callback")
        .to_owned();
    let landed = elsewhere.get(&callback).await;
    assert_eq!(landed.headers()["location"], "/");

    // An emailed link is refused here (no fallback), its confirmation page too.
    let confirm = app.get("/sign-in/confirm?token=abc", None).await;
    assert_eq!(confirm.status(), StatusCode::BAD_REQUEST);
    let refused = app
        .client
        .post(app.url("/sign-in"))
        .form(&[("email", "alice@example.com")])
        .send()
        .await
        .expect("posted");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(body(refused).await.contains("Test Provider"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_or_forged_callback_signs_nobody_in() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;

    // Another state than the one this browser's sign-in began with.
    let victim = Visitor::new();
    let callback = victim.to_callback(&app, "alice").await.expect("a callback");
    let forged = callback.replace("state=", "state=forged");
    let answer = victim.get(&forged).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert!(body(answer).await.contains("state differs"));

    // The right state, once; an attacker who copied the browser's cookie and the
    // callback replays both: the provider will not exchange the code twice.
    let visitor = Visitor::new();
    let callback = visitor
        .to_callback(&app, "alice")
        .await
        .expect("a callback");
    let cookie = visitor.pending_cookie(&app);
    assert!(cookie.starts_with("coe_oidc="), "{cookie}");
    let first = visitor.get(&callback).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let replay = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("client")
        .get(&callback)
        .header("cookie", &cookie)
        .send()
        .await
        .expect("replayed");
    assert_eq!(replay.status(), StatusCode::FORBIDDEN);
    assert!(no_session_cookie(&replay), "{:?}", replay.headers());
    let page = body(replay).await;
    assert!(page.contains("invalid_grant"), "{page}");
    assert!(page.contains("Try again with Test Provider"), "{page}");

    // A callback nobody started: no cookie at all.
    let stranger = app
        .get(&format!("{CALLBACK}?code=abc&state=xyz"), None)
        .await;
    assert_eq!(stranger.status(), StatusCode::BAD_REQUEST);
    assert!(no_session_cookie(&stranger));

    // The provider's refusal of a sign-in this browser began comes back as a page;
    // the same words in a link nobody started are not shown as the provider's.
    let refusing = Visitor::new();
    let callback = refusing
        .to_callback(&app, "carol")
        .await
        .expect("a callback");
    let state = reqwest::Url::parse(&callback)
        .expect("a URL")
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .expect("a state");
    let words = "error=access_denied&error_description=call+0800+123+456";
    let refused = refusing
        .get(&app.url(&format!("{CALLBACK}?{words}&state={state}")))
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(body(refused).await.contains("call 0800 123 456"));
    let planted = app.get(&format!("{CALLBACK}?{words}&state=x"), None).await;
    assert_eq!(planted.status(), StatusCode::BAD_REQUEST);
    assert!(!body(planted).await.contains("0800"));

    // Only the one honest sign-in made a session.
    assert_eq!(live_sessions(&app).len(), 1);
}

/// Whether an answer sets no session cookie.
fn no_session_cookie(answer: &reqwest::Response) -> bool {
    answer
        .headers()
        .get_all("set-cookie")
        .iter()
        .all(|c| !c.to_str().unwrap_or_default().starts_with("coe_session="))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_fails_its_checks_or_an_unverified_address_signs_nobody_in() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;

    for (login, status, reason) in [
        ("wrong-aud", StatusCode::UNAUTHORIZED, "audience"),
        ("expired", StatusCode::UNAUTHORIZED, "expired"),
        ("forged", StatusCode::UNAUTHORIZED, "signature"),
        ("unknown-key", StatusCode::UNAUTHORIZED, "key"),
        ("bad-nonce", StatusCode::UNAUTHORIZED, "nonce"),
        ("wrong-iss", StatusCode::UNAUTHORIZED, "issuer"),
        (
            "noverify",
            StatusCode::FORBIDDEN,
            "does not say it verified nv@example.com",
        ),
        (
            "bob",
            StatusCode::FORBIDDEN,
            "has not verified bob@example.com",
        ),
        (
            "outsider",
            StatusCode::FORBIDDEN,
            "eve@elsewhere.org may not sign in",
        ),
    ] {
        let visitor = Visitor::new();
        let answer = visitor.sign_in(&app, login).await;
        assert_eq!(answer.status(), status, "{login}");
        assert!(no_session_cookie(&answer), "{login}");
        let page = body(answer).await;
        assert!(
            page.to_lowercase().contains(&reason.to_lowercase()),
            "{login}: {reason} in {page}"
        );
        assert!(page.contains("Try again with Test Provider"), "{page}");
        // Not signed in: the pages still ask for it.
        let me = visitor.get(&app.url("/me")).await;
        assert!(
            me.url().path().starts_with("/sign-in"),
            "{login}: {}",
            me.url()
        );
    }
    assert!(live_sessions(&app).is_empty(), "{:?}", live_sessions(&app));
    assert_eq!(person(&app, "bob@example.com"), None);

    // An ID token that expired 30 s ago is within the clock difference allowed.
    let skewed = Visitor::new().sign_in(&app, "skewed").await;
    assert_eq!(skewed.status(), StatusCode::SEE_OTHER);
    assert_eq!(live_sessions(&app).len(), 1);
    assert_eq!(person(&app, "eve@elsewhere.org"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_cannot_be_reached_is_a_page_with_a_way_to_try_again() {
    // Nothing listens where the provider should be.
    let coe_port = crate::helpers::free_port();
    let gone = format!("http://127.0.0.1:{}", crate::helpers::free_port());
    let app = coe_with(coe_port, &gone, |_| {}).await;
    let answer = Visitor::new()
        .get(&app.url("/sign-in/oidc?next=%2Fboard"))
        .await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.headers()["retry-after"], "30");
    let page = body(answer).await;
    assert!(page.contains("cannot be reached"), "{page}");
    assert!(page.contains("Try again with Test Provider"), "{page}");
    assert!(
        page.contains("href=\"/sign-in/oidc?next=%2Fboard\""),
        "{page}"
    );

    // The provider goes away between the login and the callback: the code cannot be
    // exchanged.
    let coe_port = crate::helpers::free_port();
    let mut provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let visitor = Visitor::new();
    let callback = visitor
        .to_callback(&app, "alice")
        .await
        .expect("a callback");
    provider.stop();
    let answer = visitor.get(&callback).await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(body(answer).await.contains("token endpoint did not answer"));
    assert!(live_sessions(&app).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_pages_of_oidc_mode_are_valid_html() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |s| {
        s.auth.oidc.email_link_fallback = true;
    })
    .await;
    let mut saved = Vec::new();
    let page = body(app.get("/sign-in?next=%2Fboard%3Fteam%3Da%26b", None).await).await;
    assert!(
        page.contains("href=\"/sign-in/oidc?next=%2Fboard%3Fteam%3Da%26b\""),
        "{page}"
    );
    crate::html::save(&mut saved, "oidc-sign-in", &page);
    let refused = body(Visitor::new().sign_in(&app, "bob").await).await;
    crate::html::save(&mut saved, "oidc-refused", &refused);
    let alice = Visitor::new();
    assert_eq!(
        alice.sign_in(&app, "alice").await.status(),
        StatusCode::SEE_OTHER
    );
    let me = body(alice.get(&app.url("/me")).await).await;
    let csrf = csrf_in(&me);
    let out = alice
        .client
        .post(app.url("/sign-out"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("signed out");
    crate::html::save(&mut saved, "oidc-signed-out", &body(out).await);
    crate::html::assert_valid(&crate::html::vnu_jar(), &saved);
}

fn csrf_in(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_signing_key_is_fetched_and_trusted() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let first = Visitor::new().sign_in(&app, "alice").await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    // The keys were fetched during that sign-in, so before now.
    let keys_fetched_by = tokio::time::Instant::now();
    let once = provider.counts().await;
    assert_eq!(once["/.well-known/openid-configuration"], 1, "{once}");
    assert_eq!(once["/jwks"], 1, "{once}");
    assert_eq!(once["/token"], 1, "{once}");
    // As shipped, the provider gives the address and groups at UserInfo only.
    assert_eq!(once["/me"], 1, "{once}");
    // Discovery and keys are kept: the next sign-in costs two requests (the token,
    // UserInfo).
    let second = Visitor::new().sign_in(&app, "carol").await;
    assert_eq!(second.status(), StatusCode::SEE_OTHER);
    let twice = provider.counts().await;
    assert_eq!(twice["/.well-known/openid-configuration"], 1, "{twice}");
    assert_eq!(twice["/jwks"], 1, "{twice}");
    assert_eq!(twice["/token"], 2, "{twice}");
    assert_eq!(twice["/me"], 2, "{twice}");

    // The provider now signs with k2 (k1 still published); coe kept only k1.
    provider.rotate("k2,k1").await;
    // A wait that is the point: keys are fetched again at most every
    // `KEYS_REFETCH_MIN`; once that has passed since they were fetched, a token signed
    // with the new key fetches them.
    tokio::time::sleep_until(keys_fetched_by + coe::oidc::KEYS_REFETCH_MIN).await;
    let after = Visitor::new().sign_in(&app, "alice").await;
    assert_eq!(
        after.status(),
        StatusCode::SEE_OTHER,
        "{}",
        body(after).await
    );
    assert_eq!(live_sessions(&app).len(), 3);
    // The provider made afresh counts afresh: one token, the keys fetched once more,
    // no discovery.
    let rotated = provider.counts().await;
    assert_eq!(rotated["/token"], 1, "{rotated}");
    assert_eq!(rotated["/jwks"], 1, "{rotated}");
    assert!(
        rotated["/.well-known/openid-configuration"].is_null(),
        "{rotated}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_ends_the_session_and_goes_through_the_providers_sign_out() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |s| {
        s.auth.oidc.email_link_fallback = true;
        s.auth.oidc.require_verified_email = false;
    })
    .await;
    // Trusting the email claims of a provider that never says it verified them.
    let trusted = Visitor::new().sign_in(&app, "noverify").await;
    assert_eq!(trusted.status(), StatusCode::SEE_OTHER);
    // With the fallback, both ways in are offered.
    let page = body(app.get("/sign-in", None).await).await;
    assert!(page.contains("Sign in with Test Provider"), "{page}");
    assert!(page.contains("Email me a sign-in link"), "{page}");

    let alice = Visitor::new();
    assert_eq!(
        alice.sign_in(&app, "alice").await.status(),
        StatusCode::SEE_OTHER
    );
    let csrf = csrf_in(&body(alice.get(&app.url("/me")).await).await);
    let out = alice
        .client
        .post(app.url("/sign-out"))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("signed out");
    // A page that goes on to the provider's sign-out (a refresh: the pages'
    // form-action 'self' would stop a redirect).
    assert_eq!(out.status(), StatusCode::OK);
    let page = body(out).await;
    let refresh = page
        .split("http-equiv=\"refresh\" content=\"0; url=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a refresh")
        .replace("&amp;", "&")
        .replace("&#x3D;", "=");
    let to = reqwest::Url::parse(&refresh).expect("a URL");
    assert_eq!(to.path(), "/session/end", "{to}");
    assert_eq!(to.port(), Some(provider.port));
    let query = to.query().unwrap_or_default().to_owned();
    assert!(query.contains("client_id=coe"), "{query}");
    assert!(query.contains("id_token_hint="), "{query}");
    assert!(
        query.contains(&format!(
            "post_logout_redirect_uri=http%3A%2F%2F127.0.0.1%3A{coe_port}%2Fsign-in"
        )),
        "{query}"
    );
    assert!(
        !live_sessions(&app)
            .iter()
            .any(|(email, _)| email == "alice@example.com"),
        "{:?}",
        live_sessions(&app)
    );
    let me = alice.get(&app.url("/me")).await;
    assert!(me.url().path().starts_with("/sign-in"), "{}", me.url());
}

#[test]
fn check_config_says_whether_the_provider_is_usable() {
    let provider = Provider::start(crate::helpers::free_port(), "k1");
    let issuer = provider.issuer();
    let env = [
        ("COE_AUTH_MODE", "oidc"),
        ("COE_AUTH_OIDC_ISSUER", issuer.as_str()),
        ("COE_AUTH_OIDC_CLIENT_ID", "coe"),
        ("COE_AUTH_OIDC_CLIENT_SECRET", "coe-test-secret"),
        ("COE_AUTH_OIDC_ADMIN_GROUPS", "[\"coe-admins\", \"sre\"]"),
    ];
    let out = coe(&["check-config"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("admin_groups = [\n    \"coe-admins\",\n    \"sre\",\n]")
            || text.contains("admin_groups = [\"coe-admins\", \"sre\"]"),
        "{text}"
    );
    assert!(text.contains("client_secret = \"***\""), "{text}");
    assert!(!text.contains("coe-test-secret"), "{text}");
    assert!(
        text.contains(&format!("token endpoint: {issuer}/token")),
        "{text}"
    );
    assert!(text.contains("# usable"), "{text}");

    let elsewhere = format!("http://127.0.0.1:{}", crate::helpers::free_port());
    let env = [
        ("COE_AUTH_MODE", "oidc"),
        ("COE_AUTH_OIDC_ISSUER", elsewhere.as_str()),
        ("COE_AUTH_OIDC_CLIENT_ID", "coe"),
    ];
    let out = coe(&["check-config"], &env);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("cannot be reached"),
        "{}",
        stderr(&out)
    );

    // Without an issuer, oidc mode is refused by name.
    let out = coe(&["check-config"], &[("COE_AUTH_MODE", "oidc")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("auth.oidc.issuer"),
        "{}",
        stderr(&out)
    );
}

/// The journey in a real browser: the sign-in page, the provider's login page, "My
/// work" as that person with Admin, and out through the provider's sign-out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_signs_in_and_out_through_the_provider_in_a_browser() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let browser = Browser::start().await;

    browser.goto(&app.url("/")).await;
    browser.wait_for_heading("Sign in").await;
    browser.screenshot("oidc-sign-in").await;
    browser.click("#oidc-sign-in").await;
    browser.wait_for_url("/interaction/").await;
    browser.screenshot("oidc-provider-login").await;
    browser.type_into("input[name=login]", "alice").await;
    browser.type_into("input[name=password]", "any").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_heading("My work").await;
    browser.screenshot("oidc-signed-in").await;
    let url = browser.url().await;
    assert_eq!(url, app.url("/"), "{url}");
    assert!(
        browser.text("nav").await.contains("Admin"),
        "{}",
        browser.text("nav").await
    );

    browser.click("form.signout button[type=submit]").await;
    browser.wait_for_url("/session/end").await;
    browser.screenshot("oidc-provider-sign-out").await;
    browser.click("button[name=logout][value=yes]").await;
    browser.wait_for_heading("Sign in").await;
    let url = browser.url().await;
    assert!(url.starts_with(&app.url("/sign-in")), "{url}");

    // An account whose address the provider has not verified: a page that says so.
    browser.click("#oidc-sign-in").await;
    browser.wait_for_url("/interaction/").await;
    browser.type_into("input[name=login]", "bob").await;
    browser.type_into("input[name=password]", "any").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_heading("You may not sign in here").await;
    browser.screenshot("oidc-refused").await;
    let problem = browser.text("#sign-in-problem").await;
    assert!(
        problem.contains("has not verified bob@example.com"),
        "{problem}"
    );
}

/// Okta, Entra ID, Google and Keycloak put the address and groups in the ID token
/// itself: then coe asks nothing more (no UserInfo request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_in_the_id_token_need_no_userinfo_request() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start_with(coe_port, "k1", &["--claims-in-id-token"]);
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let alice = Visitor::new();
    let answer = alice.sign_in(&app, "alice").await;
    assert_eq!(
        answer.status(),
        StatusCode::SEE_OTHER,
        "{}",
        body(answer).await
    );
    assert_eq!(
        person(&app, "alice@example.com"),
        Some((Some("Alice Admin".into()), true)),
        "named and an admin by her groups, from the ID token"
    );
    let counts = provider.counts().await;
    assert_eq!(counts["/token"], 1, "{counts}");
    assert!(counts["/me"].is_null(), "no UserInfo request: {counts}");
}

/// UserInfo's answer must be about the person of the ID token (OpenID Connect Core
/// 5.3.2): one naming another `sub` signs nobody in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_userinfo_answer_about_someone_else_signs_nobody_in() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start(coe_port, "k1");
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let visitor = Visitor::new();
    let answer = visitor.sign_in(&app, "other-sub").await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    assert!(no_session_cookie(&answer));
    let page = body(answer).await;
    assert!(page.contains("about someone else"), "{page}");
    assert!(live_sessions(&app).is_empty());
    assert_eq!(person(&app, "os@example.com"), None);
    let counts = provider.counts().await;
    assert_eq!(counts["/me"], 1, "{counts}");
}

/// A provider that answers UserInfo with a signed JWT (its `jwtUserinfo` feature):
/// the signature is checked with its published keys, and the person signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_userinfo_answer_is_checked_and_used() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start_with(coe_port, "k1", &["--userinfo-signed"]);
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let carol = Visitor::new();
    let answer = carol.sign_in(&app, "carol").await;
    assert_eq!(
        answer.status(),
        StatusCode::SEE_OTHER,
        "{}",
        body(answer).await
    );
    assert_eq!(
        person(&app, "carol@example.com"),
        Some((Some("Carol Member".into()), false))
    );
    let counts = provider.counts().await;
    assert_eq!(counts["/me"], 1, "{counts}");
}

/// A provider with one key that rotates it and signs without `kid`: the kept key
/// fails the signature, so the keys are fetched again and the new one is trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotated_without_a_kid_is_fetched_and_trusted() {
    let coe_port = crate::helpers::free_port();
    let provider = Provider::start_with(coe_port, "k1", &["--no-kid", "--claims-in-id-token"]);
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let first = Visitor::new().sign_in(&app, "alice").await;
    assert_eq!(
        first.status(),
        StatusCode::SEE_OTHER,
        "{}",
        body(first).await
    );
    // Only k2 published now, and tokens still carry no kid. Keys are fetched again at
    // most every `KEYS_REFETCH_MIN`: Carol signs in until coe takes the new key (a
    // sign-in refused before that fetches nothing: the count below says so).
    provider.rotate("k2").await;
    crate::eventually::eventually_async(
        Duration::from_secs(30),
        "the rotated key trusted",
        || async {
            let after = Visitor::new().sign_in(&app, "carol").await;
            if after.status() == StatusCode::SEE_OTHER {
                Ok(())
            } else {
                Err(body(after).await)
            }
        },
    )
    .await;
    let rotated = provider.counts().await;
    assert_eq!(rotated["/jwks"], 1, "the keys fetched once more: {rotated}");
    assert_eq!(live_sessions(&app).len(), 2);
}

/// A logout token the test provider signs as it would its own (`/test/logout-token`),
/// with `query` shaping it.
async fn minted(provider: &Provider, query: &str) -> String {
    reqwest::Client::new()
        .post(format!("{}/test/logout-token?{query}", provider.issuer()))
        .send()
        .await
        .expect("the provider answers")
        .text()
        .await
        .expect("a token")
}

async fn post_logout(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .post(app.url("/sign-in/oidc/back-channel-logout"))
        .form(&[("logout_token", token)])
        .send()
        .await
        .expect("posted")
}

/// OpenID Connect Back-Channel Logout 1.0: signing out at the provider ends the coe
/// session begun in that provider session (the provider posts a logout token); a
/// token that fails any check of section 2.6, or is sent twice, ends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_at_the_provider_ends_the_coe_session() {
    let coe_port = crate::helpers::free_port();
    let backchannel = format!("http://127.0.0.1:{coe_port}/sign-in/oidc/back-channel-logout");
    let provider = Provider::start_with(coe_port, "k1", &["--backchannel", &backchannel]);
    let app = coe_with(coe_port, &provider.issuer(), |_| {}).await;
    let alice = Visitor::new();
    let answer = alice.sign_in(&app, "alice").await;
    assert_eq!(
        answer.status(),
        StatusCode::SEE_OTHER,
        "{}",
        body(answer).await
    );
    let carol = Visitor::new();
    assert_eq!(
        carol.sign_in(&app, "carol").await.status(),
        StatusCode::SEE_OTHER
    );
    assert_eq!(live_sessions(&app).len(), 2);

    // Alice signs out at the provider itself (its own sign-out page).
    let page = body(
        alice
            .get(&format!("{}/session/end", provider.issuer()))
            .await,
    )
    .await;
    let xsrf = page
        .split("name=\"xsrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the provider's sign-out form: {page}"))
        .to_owned();
    let done = alice
        .client
        .post(format!("{}/session/end/confirm", provider.issuer()))
        .form(&[("xsrf", xsrf.as_str()), ("logout", "yes")])
        .send()
        .await
        .expect("signed out at the provider");
    assert!(
        done.status().is_success() || done.status().is_redirection(),
        "{}",
        done.status()
    );
    let ended = crate::eventually::try_until_async(Duration::from_secs(30), || async {
        live_sessions(&app).len() == 1
    })
    .await;
    assert!(
        ended.is_some(),
        "alice's coe session still alive; the provider's log:\n{}",
        provider.log()
    );
    assert_eq!(
        live_sessions(&app),
        vec![("carol@example.com".to_owned(), "oidc".to_owned())]
    );
    let ended_by: Option<String> = sessions::table
        .filter(sessions::person_email.eq("alice@example.com"))
        .select(sessions::ended_by)
        .first(&mut app.pool.get().expect("conn"))
        .expect("her session");
    assert_eq!(
        ended_by.as_deref(),
        Some(coe::services::accounts::auth::SIGNED_OUT_AT_PROVIDER)
    );
    let me = alice.get(&app.url("/me")).await;
    assert!(
        me.url().path().starts_with("/sign-in") || me.url().path().starts_with("/interaction"),
        "{}",
        me.url()
    );

    // What section 2.6 refuses: each answered 400 invalid_request, Carol still in.
    let id_token: String = sessions::table
        .filter(sessions::person_email.eq("carol@example.com"))
        .select(sessions::id_token)
        .first::<Option<String>>(&mut app.pool.get().expect("conn"))
        .expect("her session")
        .expect("its ID token");
    let mut refused = vec![
        ("not a JWT".to_owned(), "garbage".to_owned()),
        ("an ID token".to_owned(), id_token),
    ];
    for (what, query) in [
        ("signed with a key never published", "sub=carol&key=forger"),
        ("for another client", "sub=carol&aud=someone-else"),
        ("with a nonce", "sub=carol&nonce=1"),
        ("without the logout event", "sub=carol&noevent=1"),
        ("an hour old", "sub=carol&iat=-3600"),
        ("naming nobody", "jti=nobody"),
    ] {
        refused.push((what.to_owned(), minted(&provider, query).await));
    }
    for (what, token) in refused {
        let answer = post_logout(&app, &token).await;
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{what}");
        assert_eq!(answer.headers()["cache-control"], "no-store", "{what}");
        let said: serde_json::Value = answer.json().await.expect("json");
        assert_eq!(said["error"], "invalid_request", "{what}: {said}");
        // Issue 61, item 6: it is a logout token that was refused, not an ID token.
        assert!(
            said["error_description"]
                .as_str()
                .is_some_and(|d| d.starts_with("the logout token was refused")),
            "{what}: {said}"
        );
    }
    assert_eq!(
        live_sessions(&app).len(),
        1,
        "nothing ended by a refused token"
    );

    // A good token by subject ends Carol's session; the same token again is refused.
    let token = minted(&provider, "sub=carol&jti=once").await;
    let answer = post_logout(&app, &token).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(live_sessions(&app).is_empty());
    let again = post_logout(&app, &token).await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert!(body(again).await.contains("taken already"));
}
