//! A small W3C WebDriver client for the browser tests: Debian's `chromedriver`
//! driving Debian's headless `chromium` (installed by `scripts/setup`). No test tool
//! downloads a browser.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::eventually::eventually_async;

/// The key W3C WebDriver names an element by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn binary(var: &str, default: &str) -> String {
    let path = std::env::var(var).unwrap_or_else(|_| default.to_owned());
    assert!(
        Path::new(&path).exists(),
        "{path} is missing: run scripts/setup (apt-get install chromium chromium-driver) or set {var}"
    );
    path
}

/// Where the browser tests save screenshots: `target/test-artifacts/browser/`.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/browser");
    std::fs::create_dir_all(&dir).expect("artifact folder");
    dir
}

/// A running chromedriver with one headless browser session; both end on drop.
pub struct Browser {
    _driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start() -> Browser {
        Self::start_with(true).await
    }

    /// A browser with script off, as some people (and some locked-down machines) use.
    pub async fn start_without_script() -> Browser {
        Self::start_with(false).await
    }

    async fn start_with(script: bool) -> Browser {
        let driver = binary("CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = binary("CHROMIUM", "/usr/bin/chromium");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        eventually_async(
            Duration::from_secs(20),
            "chromedriver becomes ready",
            || async {
                match http.get(format!("{base}/status")).send().await {
                    Ok(res) => {
                        let status: Value = res.json().await.unwrap_or_default();
                        status["value"]["ready"] == true
                    }
                    Err(_) => false,
                }
            },
        )
        .await;
        let profile = tempfile::tempdir().expect("profile dir");
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let res: Value = http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": chromium, "args": args, "prefs": {
                    "profile.managed_default_content_settings.javascript": if script { 1 } else { 2 },
                }},
            }}}))
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("json");
        let session = res["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {res}"))
            .to_owned();
        Browser {
            _driver: child,
            base,
            session,
            http,
            _profile: profile,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res: Value = req
            .send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("json");
        if let Some(error) = res["value"]["error"].as_str() {
            panic!("webdriver {path}: {error}: {}", res["value"]["message"]);
        }
        res["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    pub async fn url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits (up to 10 s) until the address contains `part`; returns it.
    pub async fn wait_for_url(&self, part: &str) -> String {
        eventually_async(
            Duration::from_secs(10),
            &format!("the address reaches …{part}…"),
            || async {
                let url = self.url().await;
                if url.contains(part) {
                    Ok(url)
                } else {
                    Err(format!("still at {url}, not at …{part}…"))
                }
            },
        )
        .await
    }

    /// Waits (up to 10 s) until the text of `css` (which exists) contains `part`;
    /// returns it. What the page's script writes after a request of its own.
    pub async fn wait_for_text(&self, css: &str, part: &str) -> String {
        eventually_async(
            Duration::from_secs(10),
            &format!("{css} reads …{part}…"),
            || async {
                let text = self.text(css).await;
                if text.contains(part) {
                    Ok(text)
                } else {
                    Err(format!("{css} still reads {text:?}, not …{part}…"))
                }
            },
        )
        .await
    }

    /// Waits (up to 10 s) until the page's `h1` reads `heading` (after a click that
    /// loads a page).
    pub async fn wait_for_heading(&self, heading: &str) {
        eventually_async(
            Duration::from_secs(10),
            &format!("the page's heading becomes {heading:?}"),
            || async {
                let found = self
                    .call_raw(
                        reqwest::Method::POST,
                        "/element",
                        json!({"using": "css selector", "value": "h1"}),
                    )
                    .await;
                let Some(id) = found[ELEMENT].as_str() else {
                    return false;
                };
                let text = self
                    .call_raw(
                        reqwest::Method::GET,
                        &format!("/element/{id}/text"),
                        Value::Null,
                    )
                    .await;
                text.as_str() == Some(heading)
            },
        )
        .await;
    }

    /// Clicks `css` (a button that submits a form, a link) and waits (up to 10 s) until
    /// the next page has replaced this one.
    pub async fn click_to_load(&self, css: &str) {
        let old = self.find("html").await;
        self.click(css).await;
        // The old page's root is gone once the next page has replaced it.
        eventually_async(
            Duration::from_secs(10),
            &format!("clicking {css} loads a page"),
            || async {
                let probe = self
                    .call_raw(
                        reqwest::Method::GET,
                        &format!("/element/{old}/name"),
                        Value::Null,
                    )
                    .await;
                probe["error"].is_string()
            },
        )
        .await;
    }

    /// The elements matching `css` (none is an empty list).
    pub async fn find_all(&self, css: &str) -> Vec<String> {
        let found = self
            .call(
                reqwest::Method::POST,
                "/elements",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Like `call`, but an error (e.g. a stale element while a page loads) is a value.
    async fn call_raw(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if !body.is_null() {
            req = req.json(&body);
        }
        match req.send().await {
            Ok(res) => res
                .json::<Value>()
                .await
                .map(|v| v["value"].clone())
                .unwrap_or_default(),
            Err(_) => Value::Null,
        }
    }

    /// The first element matching `css`.
    pub async fn find(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Empties a form field, as a person selecting its text and deleting it (works
    /// with script off, unlike `set_value`).
    pub async fn clear(&self, css: &str) {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/clear"),
            Some(json!({})),
        )
        .await;
    }

    /// The visible text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        let id = self.find(css).await;
        self.call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The current value of a form field.
    pub async fn value(&self, css: &str) -> String {
        let id = self.find(css).await;
        self.call(
            reqwest::Method::GET,
            &format!("/element/{id}/property/value"),
            None,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// What `script` (a function body: `return …`) answers in the page.
    pub async fn eval(&self, script: &str) -> Value {
        self.eval_with(script, json!([])).await
    }

    /// `eval` with `args` (a JSON array) as the script's `arguments`.
    pub async fn eval_with(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Sets a form field's value as a script would (date and time fields, whose
    /// typing depends on the browser's locale).
    pub async fn set_value(&self, css: &str, value: &str) {
        self.find(css).await;
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({
                "script": "document.querySelector(arguments[0]).value = arguments[1];",
                "args": [css, value],
            })),
        )
        .await;
    }

    pub async fn set_size(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// Saves what the browser shows as `name.png` among the test artifacts.
    /// The rendered height of the first element `css` names, in CSS pixels.
    pub async fn height(&self, css: &str) -> f64 {
        let id = self.find(css).await;
        let rect = self
            .call(reqwest::Method::GET, &format!("/element/{id}/rect"), None)
            .await;
        rect["height"].as_f64().expect("a height")
    }

    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let data = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().expect("base64"))
            .expect("a PNG");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let path = artifacts().join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the browser; chromedriver itself is killed with its handle.
        let url = format!("{}/session/{}", self.base, self.session);
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    let _ = reqwest::Client::new().delete(url).send().await;
                });
            }
        })
        .join();
    }
}
