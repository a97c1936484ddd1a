//! SCIM 2.0 provisioning (`/scim/v2`): PyPI's scim2-tester runs every check it has
//! against a running coe; Okta's and Entra ID's published request sequences are
//! replayed (`tests/fixtures/scim/`); what they mean to coe (the directory, teams from
//! groups, managers, a leaver's sessions and tokens, manual edits refused) is checked
//! through coe's own API. Both databases.

use std::collections::HashMap;
use std::path::PathBuf;

use coe::domain::{EmailAddress, Role, TokenName};
use serde_json::{json, Value};

use crate::helpers::{json, spawn_app_with, TestApp};

/// The virtualenv `tests/scim/install.sh` (run by `scripts/setup`) made.
fn tester_python() -> PathBuf {
    let venv = std::env::var_os("SCIM_TESTER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let root = PathBuf::from("/opt/scim2-tester-venv");
            if root.exists() {
                return root;
            }
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/coe/scim2-tester-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "scim2-tester is not installed at {}: run scripts/setup (or tests/scim/install.sh)",
        venv.display()
    );
    python
}

async fn scim_app() -> TestApp {
    spawn_app_with(|s| s.scim.team_groups = vec!["team-*".into()]).await
}

#[tokio::test]
async fn scim2_tester_finds_no_fault() {
    let app = scim_app().await;
    let token = app.token("idp", Role::Scim);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scim/check.py");
    let base = app.url("/scim/v2");
    let out = tokio::process::Command::new(tester_python())
        .args([script, &base, &token])
        .output()
        .await
        .expect("scim2-tester ran");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.contains('\t'))
        .map(|l| l.split('\t').collect())
        .collect();
    let count = |status: &str| lines.iter().filter(|l| l[0] == status).count();
    let failed: Vec<_> = lines
        .iter()
        .filter(|l| !["SUCCESS", "COMPLIANT", "ACCEPTABLE", "SKIPPED"].contains(&l[0]))
        .collect();
    assert!(failed.is_empty(), "checks that failed: {failed:#?}");
    // The only checks skipped: searching Users and Groups at once (`POST /.search`),
    // which RFC 7644 section 3.4.3 leaves optional and coe answers 501.
    let skipped: Vec<_> = lines.iter().filter(|l| l[0] == "SKIPPED").collect();
    assert!(
        skipped
            .iter()
            .all(|l| l[1] == "search_with_attributes" && l[3].contains("several resource types")),
        "{skipped:#?}"
    );
    assert!(skipped.len() <= 2, "{skipped:#?}");
    assert!(count("SUCCESS") >= 70, "{text}");
    assert!(text.contains(&format!("checks: {}", lines.len())), "{text}");
}

/// A vendor's request sequence (`tests/fixtures/scim/`), replayed step by step: ids
/// coe answers with are kept (`save`) and put into later paths and bodies.
struct Sequence {
    steps: Vec<Value>,
    next: usize,
    vars: HashMap<String, String>,
}

impl Sequence {
    fn load(name: &str) -> Sequence {
        let path = format!("{}/tests/fixtures/scim/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("the fixture");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        assert!(!doc["source"].as_array().expect("sources").is_empty());
        Sequence {
            steps: doc["steps"].as_array().expect("steps").clone(),
            next: 0,
            vars: HashMap::new(),
        }
    }

    fn fill(&self, text: &str) -> String {
        self.vars.iter().fold(text.to_owned(), |t, (k, v)| {
            t.replace(&format!("{{{k}}}"), v)
        })
    }

    /// Runs the steps up to (not including) the one named `before`, or to the end.
    async fn run(&mut self, app: &TestApp, token: &str, before: Option<&str>) {
        while let Some(step) = self.steps.get(self.next).cloned() {
            let name = step["name"].as_str().expect("a name");
            if Some(name) == before {
                return;
            }
            self.next += 1;
            let method = step["method"].as_str().expect("a method");
            let path = self.fill(step["path"].as_str().expect("a path"));
            let mut req = app
                .client
                .request(
                    method.parse().expect("method"),
                    app.url(&format!("/scim/v2{path}")),
                )
                .bearer_auth(token);
            if !step["body"].is_null() {
                req = req
                    .header("content-type", "application/scim+json")
                    .body(self.fill(&step["body"].to_string()));
            }
            let res = req.send().await.expect("sent");
            let status = res.status().as_u16();
            let text = res.text().await.expect("a body");
            assert_eq!(
                Some(status as u64),
                step["status"].as_u64(),
                "step {name:?}: {text}"
            );
            if text.is_empty() {
                continue;
            }
            let body: Value = serde_json::from_str(&text).expect("JSON");
            for (pointer, want) in step["expect"].as_object().into_iter().flatten() {
                let want = match want {
                    Value::String(s) => Value::String(self.fill(s)),
                    other => other.clone(),
                };
                assert_eq!(
                    body.pointer(pointer),
                    Some(&want),
                    "step {name:?}, {pointer}: {body}"
                );
            }
            for (var, pointer) in step["save"].as_object().into_iter().flatten() {
                let value = body
                    .pointer(pointer.as_str().expect("a pointer"))
                    .and_then(Value::as_str)
                    .expect("a saved value")
                    .to_owned();
                self.vars.insert(var.clone(), value);
            }
        }
    }
}

async fn person(app: &TestApp, admin: &str, email: &str) -> Value {
    let res = app.get("/api/v1/people", Some(admin)).await;
    let all = json(res).await;
    all["people"]
        .as_array()
        .expect("people")
        .iter()
        .find(|p| p["email"] == email)
        .unwrap_or_else(|| panic!("{email} is not in {all}"))
        .clone()
}

#[tokio::test]
async fn okta_provisions_a_person_their_team_and_manager_and_deactivates_them() {
    let app = scim_app().await;
    let (idp, admin) = (app.token("okta", Role::Scim), app.admin_token());
    // The SCIM token may do nothing else; a member token may not provision.
    assert_eq!(app.get("/api/v1/coes", Some(&idp)).await.status(), 403);
    let member = app.token("someone", Role::Member);
    assert_eq!(app.get("/scim/v2/Users", Some(&member)).await.status(), 403);
    assert_eq!(app.get("/scim/v2/Users", None).await.status(), 401);

    let mut okta = Sequence::load("okta.json");
    okta.run(&app, &idp, Some("deactivate the user")).await;
    let alice = "test.user@okta.local";
    let p = person(&app, &admin, alice).await;
    assert_eq!(p["name"], "Another User");
    assert_eq!(
        p["team"], "Checkout",
        "the team follows the renamed team group"
    );
    assert_eq!(p["manager_email"], "bob.manager@okta.local");
    assert_eq!(p["timezone"], "America/Los_Angeles");
    assert_eq!(
        (p["provisioned"].clone(), p["active"].clone()),
        (json!(true), json!(true))
    );

    // Edits of what the provider sets are refused, naming the field and where to go.
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{alice}")))
        .bearer_auth(&admin)
        .json(&json!({"name": "Someone Else", "team": "Checkout",
                      "manager_email": "bob.manager@okta.local", "timezone": "America/Los_Angeles"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 409);
    let body = json(res).await;
    assert_eq!(body["error"]["fields"][0]["field"], "name", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("identity provider"),
        "{body}"
    );
    // What coe alone keeps (the bar-raiser flag) may still change.
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{alice}")))
        .bearer_auth(&admin)
        .json(&json!({"name": "Another User", "team": "Checkout",
                      "manager_email": "bob.manager@okta.local", "timezone": "America/Los_Angeles",
                      "bar_raiser": true}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );

    // A token acting for the person stops working when they are deactivated.
    let theirs = {
        let mut conn = app.pool.get().expect("a connection");
        let (_, secret) = coe::services::directory::tokens::create(
            &mut conn,
            &TokenName::parse("alice-cli").expect("a name"),
            Role::Member,
            Some(&EmailAddress::parse(alice).expect("an address")),
        )
        .expect("a token");
        secret.expose().to_owned()
    };
    assert_eq!(app.get("/api/v1/me", Some(&theirs)).await.status(), 200);
    okta.run(&app, &idp, None).await;
    assert_eq!(app.get("/api/v1/me", Some(&theirs)).await.status(), 401);
    let p = person(&app, &admin, alice).await;
    assert_eq!(p["active"], false);
    assert!(p["left_at"].is_string(), "{p}");
    assert_eq!(p["team"], Value::Null, "out of every team group");
}

#[tokio::test]
async fn entra_provisions_renames_and_deletes_a_person() {
    let app = scim_app().await;
    let (idp, admin) = (app.token("entra", Role::Scim), app.admin_token());
    let mut entra = Sequence::load("entra.json");
    entra
        .run(
            &app,
            &idp,
            Some("change the work email and the family name"),
        )
        .await;
    // Chen owns a COE and an action under the old address.
    let (coe, action) = crate::leaving::coe_with_action(
        &app,
        &admin,
        ("Login failed", "test_user_fd0ea13b@contoso.com"),
        ("Rate-limit logins", "test_user_fd0ea13b@contoso.com"),
    )
    .await;
    // And is an admin of coe: the flag must not follow an address the provider sets.
    crate::leaving::set_admin(&app, &admin, "test_user_fd0ea13b@contoso.com", true).await;
    entra
        .run(&app, &idp, Some("a filter that does not parse"))
        .await;
    assert_eq!(
        person(&app, &admin, "chen.li@contoso.com").await["is_admin"],
        false
    );
    let a = app
        .get_json(&format!("/api/v1/actions/{action}"), &admin)
        .await;
    assert_eq!(
        a["owner"], "chen.li@contoso.com",
        "the action followed: {a}"
    );
    let c = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert_eq!(c["owner"], "chen.li@contoso.com");
    let mine = app
        .get_json("/api/v1/actions?owner=chen.li@contoso.com", &admin)
        .await
        .to_string();
    assert!(mine.contains(&action), "{mine}");
    // The work address changed: the person moved to it, with their manager.
    let p = person(&app, &admin, "chen.li@contoso.com").await;
    assert_eq!(p["manager_email"], "test_manager_ab6490ee@contoso.com");
    assert_eq!(p["name"], "Chen Li");
    let everyone = json(app.get("/api/v1/people", Some(&admin)).await).await;
    assert!(
        !everyone.to_string().contains("test_user_fd0ea13b"),
        "the old address is gone: {everyone}"
    );
    entra.run(&app, &idp, Some("delete the user")).await;
    assert_eq!(
        person(&app, &admin, "chen.li@contoso.com").await["active"],
        false
    );
    entra.run(&app, &idp, None).await;
    let p = person(&app, &admin, "chen.li@contoso.com").await;
    assert_eq!(
        (p["active"].clone(), p["provisioned"].clone()),
        (json!(false), json!(false))
    );
}

/// Bad input gets a SCIM error naming the problem, and nothing is written.
#[tokio::test]
async fn bad_scim_requests_are_refused_in_scims_own_shape() {
    let app = scim_app().await;
    let idp = app.token("idp", Role::Scim);
    let send = |method: &str, path: &str, body: &str| {
        app.client
            .request(method.parse().unwrap(), app.url(&format!("/scim/v2{path}")))
            .bearer_auth(&idp)
            .header("content-type", "application/scim+json")
            .body(body.to_owned())
            .send()
    };
    let cases = [
        (
            "POST",
            "/Users",
            "{not json",
            400,
            "invalidSyntax",
            "malformed JSON",
        ),
        ("POST", "/Users", "[]", 400, "invalidSyntax", "JSON object"),
        (
            "POST",
            "/Users",
            r#"{"emails": [{"value": "a@example.com"}]}"#,
            400,
            "invalidValue",
            "userName is required",
        ),
        (
            "POST",
            "/Users",
            r#"{"userName": "a", "active": 3, "emails": [{"value": "a@example.com"}]}"#,
            400,
            "invalidValue",
            "active must be true or false",
        ),
        (
            "POST",
            "/Users",
            r#"{"userName": "not-an-address"}"#,
            400,
            "invalidValue",
            "emails is required",
        ),
        (
            "POST",
            "/Users",
            r#"{"userName": "a", "emails": [{"value": "nope"}]}"#,
            400,
            "invalidValue",
            "not an email address",
        ),
        (
            "POST",
            "/Users",
            r#"{"userName": "a", "timezone": "Mars/Olympus", "emails": [{"value": "a@example.com"}]}"#,
            400,
            "invalidValue",
            "IANA time zone",
        ),
        (
            "PATCH",
            "/Users/nobody",
            r#"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "remove", "path": "title"}]}"#,
            404,
            "",
            "no User has the id",
        ),
        (
            "GET",
            "/Users?filter=userName%20zz%20%22a%22",
            "",
            400,
            "invalidFilter",
            "does not parse",
        ),
        (
            "GET",
            "/Users?count=many",
            "",
            400,
            "invalidValue",
            "count must be a number",
        ),
        (
            "POST",
            "/Groups",
            r#"{"displayName": "g", "members": [{"value": "nobody"}]}"#,
            400,
            "invalidValue",
            "members: no User",
        ),
    ];
    for (method, path, body, status, scim_type, says) in cases {
        let res = send(method, path, body).await.expect("sent");
        assert_eq!(res.status().as_u16(), status, "{method} {path} {body}");
        assert_eq!(
            res.headers()["content-type"],
            "application/scim+json",
            "{method} {path}"
        );
        let answer = json(res).await;
        assert_eq!(
            answer["schemas"][0],
            "urn:ietf:params:scim:api:messages:2.0:Error"
        );
        assert_eq!(answer["status"], status.to_string());
        if !scim_type.is_empty() {
            assert_eq!(answer["scimType"], scim_type, "{answer}");
        }
        assert!(
            answer["detail"].as_str().unwrap().contains(says),
            "{answer}"
        );
    }
    let list = json(app.get("/scim/v2/Users", Some(&idp)).await).await;
    assert_eq!(list["totalResults"], 0, "nothing half-written: {list}");
    let groups = json(app.get("/scim/v2/Groups", Some(&idp)).await).await;
    assert_eq!(groups["totalResults"], 0, "{groups}");
}
