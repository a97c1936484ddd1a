//! End to end with a real Prometheus Alertmanager: an alert posted to Alertmanager
//! reaches `coe` through its webhook and becomes an incident; its resolution resolves it.
//! Needs Debian's `prometheus-alertmanager` (`scripts/test` installs it when it can).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use coe::domain::Role;
use serde_json::{json, Value};

use crate::eventually::eventually_async;
use crate::helpers::{spawn_app, TestApp};

/// The Alertmanager binary: `ALERTMANAGER_BIN`, Debian's path, or `alertmanager` on PATH.
fn alertmanager_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ALERTMANAGER_BIN") {
        return PathBuf::from(path);
    }
    for candidate in [
        "/usr/bin/prometheus-alertmanager",
        "/usr/local/bin/alertmanager",
    ] {
        if std::path::Path::new(candidate).is_file() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "Prometheus Alertmanager is needed for this test: `apt-get install prometheus-alertmanager` \
         (scripts/test does this when run as root) or set ALERTMANAGER_BIN"
    );
}

/// A running Alertmanager, stopped on drop.
pub(crate) struct Alertmanager {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Alertmanager {
    pub(crate) fn start(coe: &TestApp, token: &str) -> Alertmanager {
        let dir = tempfile::tempdir().expect("dir");
        let config = format!(
            r#"
route:
  receiver: coe
  group_by: ['alertname']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: coe
    webhook_configs:
      - url: {}/api/v1/webhooks/alertmanager
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {token}
"#,
            coe.address
        );
        let config_path = dir.path().join("alertmanager.yml");
        std::fs::write(&config_path, config).expect("write config");
        let port = crate::helpers::free_port();
        let child = Command::new(alertmanager_binary())
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start alertmanager");
        Alertmanager {
            child,
            port,
            _dir: dir,
        }
    }

    pub(crate) async fn post_alert(&self, client: &reqwest::Client, alert: &Value) {
        // Alertmanager may still be starting: asked again until it takes the alert.
        eventually_async(
            Duration::from_secs(30),
            "Alertmanager takes the alert",
            || async {
                let res = client
                    .post(format!("http://127.0.0.1:{}/api/v2/alerts", self.port))
                    .json(&json!([alert]))
                    .send()
                    .await;
                match res {
                    Ok(r) if r.status().is_success() => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
    }
}

/// Polls the incident list until `pred` holds for it, or fails after 60 s.
async fn wait_for(app: &TestApp, token: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    eventually_async(Duration::from_secs(60), what, || async {
        let page = app.get_json("/api/v1/incidents", token).await;
        if pred(&page) {
            Ok(page)
        } else {
            Err(page)
        }
    })
    .await
}

#[tokio::test]
async fn an_alert_sent_by_a_real_alertmanager_becomes_an_incident_and_resolves() {
    let app = spawn_app().await;
    let ingest = app.token("alertmanager", Role::Ingest);
    let reader = app.token("reader", Role::Member);
    let am = Alertmanager::start(&app, &ingest);

    let started = chrono::Utc::now() - chrono::Duration::seconds(30);
    let mut alert = json!({
        "labels": {"alertname": "CheckoutDown", "severity": "critical", "service": "checkout"},
        "annotations": {"summary": "Checkout answers 503", "runbook_url": "https://runbooks.example.com/checkout"},
        "startsAt": started.to_rfc3339(),
        "generatorURL": "http://prometheus.example.com/graph?g0.expr=up"
    });
    am.post_alert(&app.client, &alert).await;

    let page = wait_for(&app, &reader, "the incident", |p| p["total"] == 1).await;
    let incident = &page["incidents"][0];
    assert_eq!(incident["title"], "Checkout answers 503");
    assert_eq!(incident["service"], "checkout");
    assert_eq!(incident["severity"], "sev1");
    assert_eq!(incident["state"], "open");
    assert_eq!(incident["needs_coe"], true);
    assert_eq!(incident["source"], "alertmanager");

    alert["endsAt"] = json!(chrono::Utc::now().to_rfc3339());
    am.post_alert(&app.client, &alert).await;
    let page = wait_for(&app, &reader, "the resolution", |p| {
        p["incidents"][0]["state"] == "resolved"
    })
    .await;
    assert_eq!(page["total"], 1, "the resolution joined the same incident");
    let id = page["incidents"][0]["id"].as_str().expect("id");
    let detail = app
        .get_json(&format!("/api/v1/incidents/{id}"), &reader)
        .await;
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds.first(), Some(&"fired"));
    assert_eq!(kinds.last(), Some(&"resolved"));
}
