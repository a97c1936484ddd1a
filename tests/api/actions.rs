//! Corrective actions tracked to closure, and the review that approves a COE.

use chrono::{Duration, Utc};
use coe::db::schema::outbox_emails;
use coe::domain::{EmailAddress, Role, TokenName};
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::helpers::{error_of, TestApp};

pub(crate) struct World {
    pub(crate) app: TestApp,
    pub(crate) owner: String,
    pub(crate) reviewer: String,
    pub(crate) stranger: String,
}

pub(crate) fn person_token(app: &TestApp, name: &str, email: &str) -> String {
    person_token_with_role(app, name, Role::Member, email)
}

/// A token of `role` that names `email`, made from the command line (the person's own).
pub(crate) fn person_token_with_role(app: &TestApp, name: &str, role: Role, email: &str) -> String {
    let mut conn = app.pool.get().expect("conn");
    let (_, secret) = coe::services::directory::tokens::create(
        &mut conn,
        &TokenName::parse(name).expect("name"),
        role,
        Some(&EmailAddress::parse(email).expect("email")),
    )
    .expect("token");
    secret.expose().to_owned()
}

impl World {
    pub(crate) async fn new() -> World {
        World::with(|_| {}).await
    }

    /// A world whose app has settings of the test's own.
    pub(crate) async fn with(configure: impl FnOnce(&mut coe::config::Settings)) -> World {
        let app = crate::helpers::spawn_app_with(configure).await;
        let owner = person_token(&app, "owner", "owner@example.com");
        let reviewer = person_token(&app, "reviewer", "reviewer@example.com");
        let stranger = person_token(&app, "stranger", "stranger@example.com");
        World {
            app,
            owner,
            reviewer,
            stranger,
        }
    }

    pub(crate) async fn send(
        &self,
        token: &str,
        method: &str,
        path: &str,
        version: Option<i64>,
        body: Option<Value>,
    ) -> (u16, Value) {
        // An approval names the version approved: unless the test names one, the
        // version the COE is at (as the approver just read it).
        let version = match version {
            None if path.ends_with("/approve") => {
                let doc = self
                    .app
                    .get(&path.replace("/approve", ""), Some(token))
                    .await;
                let doc: Value = doc.json().await.unwrap_or(Value::Null);
                doc["version"].as_i64()
            }
            v => v,
        };
        let mut req = self
            .app
            .client
            .request(method.parse().expect("method"), self.app.url(path))
            .bearer_auth(token);
        if let Some(v) = version {
            req = req.header("if-match", format!("\"{v}\""));
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.expect("sent");
        let status = res.status().as_u16();
        let text = res.text().await.expect("text");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A COE whose writeup is complete, owned by owner@, reviewed by reviewer@.
    pub(crate) async fn written_coe(&self) -> (String, i64) {
        let (status, doc) = self
            .send(
                &self.owner,
                "POST",
                "/api/v1/coes",
                None,
                Some(json!({"title": "Payments down", "owner": "owner@example.com"})),
            )
            .await;
        assert_eq!(status, 201, "{doc}");
        let id = doc["id"].as_str().expect("id").to_owned();
        let v = doc["version"].as_i64().expect("version");
        let v = self.write_up(&id, v).await;
        (id, v)
    }

    /// Writes COE `id` (at version `v`) up completely and names reviewer@ its
    /// reviewer; the version after.
    pub(crate) async fn write_up(&self, id: &str, mut v: i64) -> i64 {
        for (key, body) in [
            ("summary", "Payments failed for 20 minutes."),
            ("impact", "4,100 payments failed."),
            ("detection", "Alert after 3 minutes."),
            ("diagnosis", "A bad config push."),
            ("mitigation", "Rolled back."),
            ("prevention", "Config is validated in CI."),
            ("lessons", "Rollback was fast."),
        ] {
            let (_, doc) = self
                .send(
                    &self.owner,
                    "PUT",
                    &format!("/api/v1/coes/{id}/sections/{key}"),
                    Some(v),
                    Some(json!({"body": body})),
                )
                .await;
            v = doc["version"].as_i64().expect("version");
        }
        // The start as its alert says (a start after the first alert is missing work).
        let started = self.coe(id).await["started_at"]
            .as_str()
            .unwrap_or("2026-11-29T10:00:00Z")
            .to_owned();
        let (_, doc) = self
            .send(
                &self.owner,
                "POST",
                &format!("/api/v1/coes/{id}/timeline"),
                Some(v),
                Some(json!({"at": started, "kind": "started", "text": "Config pushed"})),
            )
            .await;
        v = doc["version"].as_i64().expect("version");
        let (_, doc) = self
            .send(
                &self.owner,
                "POST",
                &format!("/api/v1/coes/{id}/whys"),
                Some(v),
                Some(json!({"steps": [
                    {"why": "Why did payments fail?", "because": "The config was invalid."},
                    {"why": "Why was it invalid?", "because": "A typo."},
                    {"why": "Why did the typo ship?", "because": "Nothing validated the config."}
                ], "factor": "configuration"})),
            )
            .await;
        v = doc["version"].as_i64().expect("version");
        let (status, doc) = self
            .send(
                &self.owner,
                "PATCH",
                &format!("/api/v1/coes/{id}"),
                Some(v),
                Some(json!({"reviewer": "reviewer@example.com"})),
            )
            .await;
        assert_eq!(status, 200, "{doc}");
        doc["version"].as_i64().expect("version")
    }

    pub(crate) async fn action(&self, coe: &str, title: &str, owner: &str) -> Value {
        let due = (Utc::now() + Duration::days(10)).date_naive();
        let (status, action) = self
            .send(&self.owner, "POST", &format!("/api/v1/coes/{coe}/actions"), None, Some(json!({
                "title": title, "owner": owner, "due_date": due, "priority": "high", "kind": "prevent",
                "success_criteria": "A bad config fails CI", "external_url": "https://tickets.example.com/P-1"
            })))
            .await;
        assert_eq!(status, 201, "{action}");
        action
    }

    pub(crate) async fn coe(&self, id: &str) -> Value {
        self.app
            .get_json(&format!("/api/v1/coes/{id}"), &self.owner)
            .await
    }
}

#[tokio::test]
async fn a_coe_is_submitted_approved_and_closes_with_its_last_action() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;

    // No action yet: submitting lists what is missing.
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "actions");

    let a1 = w
        .action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let a2 = w
        .action(&id, "Alert on payment errors", "ops@example.com")
        .await;
    assert_eq!(a1["state"], "open");
    assert_eq!(a1["coe_title"], "Payments down");

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
    assert_eq!(doc["state"], "in_review");

    // Only the reviewer approves.
    let (status, _) = w
        .send(
            &w.stranger,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 403);
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422, "a comment is required: {body}");
    let (status, doc) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            Some(json!({"comment": "Add the customer count."})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(doc["state"], "draft");
    assert_eq!(doc["review"][1]["verdict"], "changes_requested");
    assert_eq!(doc["review"][1]["body"], "Add the customer count.");
    w.send(
        &w.owner,
        "POST",
        &format!("/api/v1/coes/{id}/submit"),
        None,
        None,
    )
    .await;
    let (status, doc) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved");

    // Approving again is an invalid transition, named.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 409);
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("m")
            .contains("approved"),
        "{body}"
    );

    let a1_id = a1["id"].as_str().expect("id");
    let a2_id = a2["id"].as_str().expect("id");
    let (status, _) = w
        .send(&w.owner, "POST", &format!("/api/v1/actions/{a1_id}/complete"), None,
              Some(json!({"note": "CI rejects bad configs", "evidence_url": "https://ci.example.com/run/1"})))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        w.coe(&id).await["state"],
        "approved",
        "one action is still open"
    );
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/actions/{a2_id}/wont-do"),
            None,
            Some(json!({"note": "Covered by a1"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        w.coe(&id).await["state"],
        "closed",
        "the last action closed it"
    );

    let (status, action) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/actions/{a2_id}/reopen"),
            None,
            Some(json!({"note": "Not covered after all"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(action["state"], "open");
    assert_eq!(
        w.coe(&id).await["state"],
        "approved",
        "reopening an action reopens the COE"
    );

    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{id}/history"), &w.owner)
        .await;
    let actions: Vec<&str> = history["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| c["action"].as_str().unwrap_or(""))
        .collect();
    assert!(
        actions.contains(&"state:closed") && actions.contains(&"action:reopen"),
        "{actions:?}"
    );
}

#[tokio::test]
async fn the_reviewer_cannot_be_the_owner_and_submission_lists_every_missing_piece() {
    let w = World::new().await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Empty", "owner": "owner@example.com"})),
        )
        .await;
    assert_eq!(status, 201);
    let id = doc["id"].as_str().expect("id").to_owned();
    let v = doc["version"].as_i64().expect("v");
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"reviewer": "owner@example.com"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "reviewer");
    let (_, doc) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"reviewer": "reviewer@example.com"})),
        )
        .await;
    assert_eq!(doc["reviewer"], "reviewer@example.com");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422);
    let fields: Vec<&str> = body["error"]["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| f["field"].as_str().expect("f"))
        .collect();
    assert_eq!(
        fields,
        [
            "summary",
            "impact",
            "timeline",
            "detection",
            "diagnosis",
            "mitigation",
            "prevention",
            "five_whys",
            "lessons",
            "actions"
        ]
    );
}

#[tokio::test]
async fn every_action_transition_allowed_and_refused() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let action = w.action(&id, "Add a canary", "dev@example.com").await;
    let a = action["id"].as_str().expect("id").to_owned();
    let step = |verb: &'static str, note: Option<&'static str>| {
        let path = format!("/api/v1/actions/{a}/{verb}");
        let body = note.map(|n| json!({"note": n}));
        (path, body)
    };
    let cases: Vec<(&str, Option<&str>, u16, Option<&str>)> = vec![
        ("reopen", Some("x"), 409, None),
        ("complete", None, 422, None),
        ("wont-do", None, 422, None),
        ("start", None, 200, Some("in_progress")),
        ("start", None, 409, None),
        // An action to prevent an outage is done with evidence: two words are not.
        ("complete", Some("Canary deployed"), 422, None),
        (
            "complete",
            Some("Canary deployed, and a bad build was stopped by it."),
            200,
            Some("done"),
        ),
        ("complete", Some("again"), 409, None),
        ("start", None, 409, None),
        ("reopen", None, 422, None),
        ("reopen", Some("The canary was removed"), 200, Some("open")),
        (
            "wont-do",
            Some("Replaced by blue/green"),
            200,
            Some("wont_do"),
        ),
        ("reopen", Some("Blue/green cancelled"), 200, Some("open")),
        ("explode", None, 404, None),
    ];
    for (verb, note, status, state) in cases {
        let (path, body) = step(verb, note);
        let (got, answer) = w.send(&w.owner, "POST", &path, None, body).await;
        assert_eq!(got, status, "{verb} {note:?}: {answer}");
        if let Some(state) = state {
            assert_eq!(answer["state"], state, "{verb}");
        }
        if got == 409 {
            let message = answer["error"]["message"].as_str().expect("message");
            assert!(
                message.contains("can:"),
                "names the allowed transitions: {message}"
            );
        }
    }
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/actions/{a}/complete"),
            None,
            Some(json!({"note": 7})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/actions/{a}/complete"),
            None,
            Some(json!("{")),
        )
        .await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn due_dates_must_be_in_the_future_and_moving_one_needs_a_reason() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let yesterday = (Utc::now() - Duration::days(1)).date_naive();
    let (status, body) = w
        .send(&w.owner, "POST", &format!("/api/v1/coes/{id}/actions"), None, Some(json!({
            "title": "Late", "owner": "not-an-email", "due_date": yesterday, "priority": "urgent", "kind": "prevent"
        })))
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = w
        .send(&w.owner, "POST", &format!("/api/v1/coes/{id}/actions"), None, Some(json!({
            "title": "Late", "owner": "dev@example.com", "due_date": yesterday, "priority": "low", "kind": "prevent"
        })))
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "due_date");
    assert!(body["error"]["fields"][0]["problem"]
        .as_str()
        .expect("p")
        .contains("future"));

    let action = w.action(&id, "Rate-limit retries", "dev@example.com").await;
    let a = action["id"].as_str().expect("id");
    let later = (Utc::now() + Duration::days(30)).date_naive();
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{a}"),
            None,
            Some(json!({"due_date": later})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["fields"][0]["field"], "reason");
    let (status, action) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{a}"),
            None,
            Some(json!({"due_date": later, "reason": "Waiting for the vendor"})),
        )
        .await;
    assert_eq!(status, 200, "{action}");
    assert_eq!(action["due_date"], json!(later));
    assert_eq!(action["due_date_changes"], 1);
    assert_eq!(
        action["due_date_history"][0]["reason"],
        "Waiting for the vendor"
    );
    assert_eq!(action["due_date_history"][0]["by"], "owner@example.com");
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{a}"),
            None,
            Some(json!({"due_date": yesterday, "reason": "oops"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = w
        .send(&w.owner, "GET", "/api/v1/actions/nope", None, None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn intentions_in_action_titles_are_flagged_and_overdue_actions_are_found_by_team() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let a1 = w
        .action(
            &id,
            "Remind the team to double-check deploys",
            "dev@example.com",
        )
        .await;
    let a2 = w.action(&id, "Add a deploy gate", "ops@example.com").await;
    let doc = w.coe(&id).await;
    let warned: Vec<&str> = doc["completeness"]["warnings"]
        .as_array()
        .expect("w")
        .iter()
        .map(|x| x["at"].as_str().expect("at"))
        .collect();
    assert!(warned.contains(&"actions[0].title"), "{warned:?}");
    assert_eq!(doc["actions"].as_array().expect("actions").len(), 2);

    // Make a1 overdue by 9 days, as if it had been set long ago.
    {
        use coe::db::schema::{corrective_actions, people};
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(a1["id"].as_str().expect("id")))
            .set(corrective_actions::due_date.eq((Utc::now() - Duration::days(9)).date_naive()))
            .execute(&mut conn)
            .expect("backdate");
        diesel::update(people::table.find("dev@example.com"))
            .set(people::team.eq("payments"))
            .execute(&mut conn)
            .expect("team");
    }
    let page = w
        .app
        .get_json("/api/v1/actions?overdue=true", &w.owner)
        .await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["actions"][0]["id"], a1["id"]);
    assert_eq!(page["actions"][0]["days_overdue"], 9);
    assert_eq!(page["actions"][0]["overdue"], true);
    assert_eq!(page["actions"][0]["coe_severity"], "sev3");
    assert_eq!(
        w.app
            .get_json("/api/v1/actions?overdue=false", &w.owner)
            .await["total"],
        1
    );
    assert_eq!(
        w.app
            .get_json("/api/v1/actions?team=payments", &w.owner)
            .await["total"],
        1
    );
    // A team matches whatever its case (the board's filter is the same).
    assert_eq!(
        w.app
            .get_json("/api/v1/actions?team=Payments", &w.owner)
            .await["total"],
        1
    );
    assert_eq!(
        w.app
            .get_json("/api/v1/actions?owner=OPS@example.com", &w.owner)
            .await["actions"][0]["id"],
        a2["id"]
    );
    assert_eq!(
        w.app
            .get_json(
                &format!("/api/v1/actions?coe={id}&priority=high&kind=prevent"),
                &w.owner
            )
            .await["total"],
        2
    );
    assert_eq!(
        w.app
            .get_json("/api/v1/actions?status=done", &w.owner)
            .await["total"],
        0
    );
    let sorted = w
        .app
        .get_json("/api/v1/actions?sort=days_overdue", &w.owner)
        .await;
    assert_eq!(sorted["actions"][0]["id"], a1["id"]);
    for (query, field) in [
        ("?status=lost", "status"),
        ("?overdue=maybe", "overdue"),
        ("?due_before=soon", "due_before"),
        ("?sort=random", "sort"),
    ] {
        let (_, _, fields) = error_of(
            w.app
                .get(&format!("/api/v1/actions{query}"), Some(&w.owner))
                .await,
            422,
        )
        .await;
        assert_eq!(fields[0].0, field, "{query}");
    }
}

#[tokio::test]
async fn only_the_owner_the_reviewer_or_an_admin_change_a_coe_and_its_actions() {
    let w = World::new().await;
    let (id, v) = w.written_coe().await;
    let action = w.action(&id, "Add a gate", "dev@example.com").await;
    let a = action["id"].as_str().expect("id").to_owned();

    let (status, body) = w
        .send(
            &w.stranger,
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            Some(v),
            Some(json!({"body": "mine now"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .expect("m")
        .contains("owner@example.com"));
    let (status, _) = w
        .send(
            &w.stranger,
            "POST",
            &format!("/api/v1/actions/{a}/start"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = w
        .send(
            &w.stranger,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 403);
    let due = (Utc::now() + Duration::days(3)).date_naive();
    let (status, _) = w
        .send(&w.stranger, "POST", &format!("/api/v1/coes/{id}/actions"), None,
              Some(json!({"title": "x", "owner": "x@example.com", "due_date": due, "priority": "low", "kind": "process"})))
        .await;
    assert_eq!(status, 403);

    // The reviewer may edit; the action's own owner may move it; an admin may do anything.
    let (status, doc) = w
        .send(
            &w.reviewer,
            "PUT",
            &format!("/api/v1/coes/{id}/sections/lessons"),
            Some(v),
            Some(json!({"body": "Reviewed."})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    let dev = person_token(&w.app, "dev", "dev@example.com");
    let (status, _) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{a}/start"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let admin = w.app.admin_token();
    let (status, _) = w
        .send(
            &admin,
            "PUT",
            &format!("/api/v1/coes/{id}/sections/lessons"),
            Some(doc["version"].as_i64().expect("v")),
            Some(json!({"body": "Admin."})),
        )
        .await;
    assert_eq!(status, 200);
    // An ingest token does nothing here.
    let ingest = w.app.token("ingest", Role::Ingest);
    let (status, _) = w
        .send(&ingest, "GET", &format!("/api/v1/coes/{id}"), None, None)
        .await;
    assert_eq!(status, 403);
}

/// An empty draft with no reviewer: one 422 names the reviewer and every missing
/// section and the missing actions, not only the first problem.
#[tokio::test]
async fn submitting_an_empty_draft_lists_every_missing_piece_at_once() {
    let w = World::new().await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Search down", "owner": "owner@example.com"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let fields: Vec<&str> = body["error"]["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| f["field"].as_str().expect("field"))
        .collect();
    for expected in [
        "reviewer",
        "summary",
        "impact",
        "timeline",
        "detection",
        "diagnosis",
        "mitigation",
        "prevention",
        "five_whys",
        "lessons",
        "actions",
    ] {
        assert!(
            fields.contains(&expected),
            "{expected} missing from {fields:?}"
        );
    }
    assert_eq!(fields[0], "reviewer", "{fields:?}");
    assert_eq!(w.coe(id).await["state"], "draft");
}

/// A new action with every field wrong or missing: one 422 names each of them.
#[tokio::test]
async fn a_new_action_with_every_field_wrong_is_refused_naming_each() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let path = format!("/api/v1/coes/{id}/actions");
    let fields_of = |body: &Value| -> Vec<String> {
        body["error"]["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .map(|f| f["field"].as_str().expect("field").to_owned())
            .collect()
    };
    let (status, body) = w.send(&w.owner, "POST", &path, None, Some(json!({}))).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        fields_of(&body),
        ["title", "owner", "due_date", "priority", "kind"],
        "{body}"
    );
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &path,
            None,
            Some(json!({
                "title": " ", "owner": "not an address", "due_date": "2020-01-01",
                "priority": "urgent", "kind": "hope", "external_url": "javascript:alert(1)"
            })),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        fields_of(&body),
        [
            "title",
            "owner",
            "due_date",
            "priority",
            "kind",
            "external_url"
        ],
        "{body}"
    );
    let text = body.to_string();
    assert!(text.contains("high, medium, low"), "{text}");
    assert!(
        text.contains("detect, diagnose, mitigate, prevent, process"),
        "{text}"
    );
    assert!(w.coe(&id).await["actions"]
        .as_array()
        .expect("actions")
        .is_empty());
}

/// Every time the API writes is RFC 3339 with its `Z`, and goes back in as it came out.
#[tokio::test]
async fn times_go_out_in_the_format_they_come_back_in() {
    let w = World::new().await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "Clock skew"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id").to_owned();
    assert!(
        doc["created_at"]
            .as_str()
            .expect("created_at")
            .ends_with('Z'),
        "{doc}"
    );
    let v = doc["version"].as_i64().expect("version");
    let entry =
        json!({"at": "2026-11-29T10:00:00.5+02:00", "kind": "started", "text": "Skew began"});
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/timeline"),
            Some(v),
            Some(entry),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let written = doc["timeline"][0]["at"].as_str().expect("at").to_owned();
    assert_eq!(written, "2026-11-29T08:00:00.500Z");
    assert_eq!(doc["started_at"], "2026-11-29T08:00:00.500Z");
    let v = doc["version"].as_i64().expect("version");
    let again = json!({"at": written, "kind": "note", "text": "Same moment"});
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/timeline"),
            Some(v),
            Some(again),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(doc["timeline"][1]["at"], doc["timeline"][0]["at"]);
    let export = w
        .app
        .client
        .get(w.app.url(&format!("/api/v1/coes/{id}/export.md")))
        .bearer_auth(&w.owner)
        .send()
        .await
        .expect("sent");
    let text = export.text().await.expect("text");
    assert!(text.contains("2026-11-29T08:00:00.500Z"), "{text}");
}

/// The export carries what the review needs: the actions, the review's comments,
/// whys that read as questions and answers; a closed COE ends without open findings.
#[tokio::test]
async fn the_export_of_a_closed_coe_holds_its_actions_and_review_and_no_open_findings() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let action = w
        .action(&id, "Validate config in CI", "owner@example.com")
        .await;
    let action_id = action["id"].as_str().expect("id").to_owned();
    let submit = format!("/api/v1/coes/{id}/submit");
    let (status, body) = w.send(&w.owner, "POST", &submit, None, None).await;
    assert_eq!(status, 200, "{body}");
    let changes = format!("/api/v1/coes/{id}/request-changes");
    let comment = json!({"comment": "Say how many customers."});
    w.send(&w.reviewer, "POST", &changes, None, Some(comment))
        .await;
    w.send(&w.owner, "POST", &submit, None, None).await;
    let approve = format!("/api/v1/coes/{id}/approve");
    let (status, _) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 200);
    let complete = format!("/api/v1/actions/{action_id}/complete");
    let note = json!({"note": "CI rejects an invalid config, tried with three broken ones."});
    let (status, _) = w.send(&w.owner, "POST", &complete, None, Some(note)).await;
    assert_eq!(status, 200);
    assert_eq!(w.coe(&id).await["state"], "closed");

    let res = w
        .app
        .get(&format!("/api/v1/coes/{id}/export.md"), Some(&w.owner))
        .await;
    let md = res.text().await.expect("text");
    assert!(
        md.contains("| Validate config in CI | owner@example.com |"),
        "{md}"
    );
    assert!(md.contains("done: CI rejects an invalid config"), "{md}");
    assert!(
        md.contains("A bad config fails CI"),
        "success criteria:\n{md}"
    );
    assert!(md.contains("## Review"), "{md}");
    assert!(
        md.contains("requested changes: Say how many customers."),
        "{md}"
    );
    assert!(md.contains("reviewer@example.com, approved it"), "{md}");
    assert!(
        md.contains("1. Why did payments fail? Because the config was invalid."),
        "{md}"
    );
    assert!(
        !md.contains("Still missing") && !md.contains("Warnings for the reviewer"),
        "{md}"
    );
}

/// Titles have a documented maximum (500 bytes, like an action's): a longer one is a
/// 422 naming the field, and nothing is written.
#[tokio::test]
async fn a_coe_title_over_500_bytes_is_refused_and_nothing_is_written() {
    let w = World::new().await;
    let long = "x".repeat(501);
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": long})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "title");
    assert!(body.to_string().contains("at most 500 bytes"), "{body}");
    let list = w.app.get_json("/api/v1/coes", &w.owner).await;
    assert_eq!(list["total"], 0, "{list}");

    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": "x".repeat(500)})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id");
    let v = doc["version"].as_i64().expect("version");
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"title": "y".repeat(600), "service": "s".repeat(201)})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(w.coe(id).await["version"], v, "nothing written");
}

/// A due date in year 262142 once counted as overdue on SQLite (dates compare as
/// text) while the row said it was not: dates outside 1970–9999 are refused.
#[tokio::test]
async fn dates_outside_the_years_people_write_are_refused() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/actions"),
            None,
            Some(json!({"title": "Far away", "owner": "owner@example.com",
                        "due_date": "+262142-12-31", "priority": "low", "kind": "process"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "due_date", "{body}");
    assert!(
        body.to_string()
            .contains("between 1970-01-01 and 9999-12-31"),
        "{body}"
    );
    let action = w.action(&id, "Near", "owner@example.com").await;
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/actions/{}", action["id"].as_str().expect("id")),
            None,
            Some(json!({"due_date": "+262142-12-31", "reason": "later"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = w
        .send(
            &w.owner,
            "GET",
            "/api/v1/actions?due_before=%2B262142-12-31",
            None,
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/timeline"),
            Some(w.coe(&id).await["version"].as_i64().expect("version")),
            Some(json!({"at": "+10000-01-01T00:00:00Z", "kind": "note", "text": "far"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test]
async fn a_new_reviewer_while_in_review_sends_the_coe_back_to_draft_and_tells_the_former_one() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
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
    assert_eq!(doc["state"], "in_review");
    let v = doc["version"].as_i64().expect("version");

    // The owner swaps the reviewer: the COE goes back to draft, so it is submitted
    // again to the new reviewer and the former one's review is not dodged unseen.
    let (status, doc) = w
        .send(
            &w.owner,
            "PATCH",
            &format!("/api/v1/coes/{id}"),
            Some(v),
            Some(json!({"reviewer": "stranger@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "draft", "{doc}");
    assert_eq!(doc["reviewer"], "stranger@example.com");

    // The former reviewer may no longer approve (nothing is in review) and is told.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert!(status == 403 || status == 409, "{status} {body}");
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{id}/history"), &w.owner)
        .await;
    let text = history.to_string();
    assert!(
        text.contains("state:draft") && text.contains("the reviewer changed while in review"),
        "{history}"
    );
    let mut conn = w.app.pool.get().expect("conn");
    let notices: Vec<(String, String)> = outbox_emails::table
        .filter(outbox_emails::kind.eq("coe_assigned"))
        .select((outbox_emails::recipient, outbox_emails::subject))
        .load(&mut conn)
        .expect("outbox");
    assert!(
        notices
            .iter()
            .any(|(to, subject)| to == "reviewer@example.com"
                && subject.starts_with("[coe] You no longer review")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|(to, subject)| to == "stranger@example.com"
                && subject.starts_with("[coe] COE to review")),
        "{notices:?}"
    );

    // Submitted again, it is the new reviewer's to approve.
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
    let (status, doc) = w
        .send(
            &w.stranger,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved");
}

#[tokio::test]
async fn every_free_text_has_a_limit_named_in_a_422() {
    let w = World::new().await;
    let (id, v) = w.written_coe().await;
    let action = w
        .action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let action_id = action["id"].as_str().expect("id");
    let long = |n: usize| "x".repeat(n);
    let later = (Utc::now() + Duration::days(40)).date_naive().to_string();
    for (method, path, version, body, field) in [
        (
            "POST",
            format!("/api/v1/coes/{id}/related"),
            Some(v),
            json!({"kind": "ticket", "url": "https://t.example.com/1", "title": long(501)}),
            "title",
        ),
        (
            "POST",
            format!("/api/v1/actions/{action_id}/complete"),
            None,
            json!({"note": long(10_001)}),
            "note",
        ),
        (
            "PATCH",
            format!("/api/v1/actions/{action_id}"),
            None,
            json!({"due_date": later, "reason": long(10_001)}),
            "reason",
        ),
    ] {
        let (status, answer) = w.send(&w.owner, method, &path, version, Some(body)).await;
        assert_eq!(status, 422, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["fields"][0]["field"], field, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .expect("message")
                .contains("at most"),
            "{answer}"
        );
    }
    // Nothing was written: the action is still open, its due date where it was.
    let action = w
        .app
        .get_json(&format!("/api/v1/actions/{action_id}"), &w.owner)
        .await;
    assert_eq!(action["state"], "open");
    assert_eq!(action["due_date_changes"], 0, "{action}");
    // A review comment too.
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
    let (status, answer) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            Some(json!({"comment": long(20_001)})),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["fields"][0]["field"], "comment", "{answer}");
}

/// Separation of duties: nobody names themselves reviewer; nobody approves a COE they
/// own, a round they submitted or a COE they named themselves reviewer of; only the
/// reviewer as a person decides (a token standing for nobody, or an admin, does not);
/// the history shows who submitted and who approved.
#[tokio::test]
async fn nobody_approves_a_coe_they_put_up() {
    let w = World::new().await;
    let (id, v) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let patch = format!("/api/v1/coes/{id}");
    let approve = format!("/api/v1/coes/{id}/approve");
    let submit = format!("/api/v1/coes/{id}/submit");

    // The attack of the issue: the owner hands the COE to someone else and names
    // themselves reviewer. Refused, naming the field.
    let v = w.coe(&id).await["version"]
        .as_i64()
        .expect("version")
        .max(v);
    let (status, body) = w
        .send(
            &w.owner,
            "PATCH",
            &patch,
            Some(v),
            Some(json!({"owner": "stranger@example.com", "reviewer": "owner@example.com"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["fields"][0]["field"], "reviewer");
    assert!(
        body.to_string().contains("nobody names themselves"),
        "{body}"
    );
    // The stranger may not change the COE at all (the access rule).
    let (status, _) = w
        .send(
            &w.stranger,
            "PATCH",
            &patch,
            Some(v),
            Some(json!({"reviewer": "stranger@example.com"})),
        )
        .await;
    assert_eq!(status, 403);

    // Submitted by the reviewer themselves (they may change the COE): they may not
    // approve that round.
    let (status, doc) = w.send(&w.reviewer, "POST", &submit, None, None).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["submitted_by"], "reviewer@example.com");
    assert_eq!(doc["reviewer_named_by"], "owner@example.com");
    let (status, body) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("nobody approves a review round they submitted"),
        "{body}"
    );
    // Sent back, submitted by the owner: now the reviewer may.
    let (status, _) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            Some(json!({"comment": "Submit it yourself."})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = w.send(&w.owner, "POST", &submit, None, None).await;
    assert_eq!(status, 200);

    // An admin token with no person, and an admin person who is not the reviewer,
    // decide nothing.
    let admin = w.app.admin_token();
    let (status, body) = w.send(&admin, "POST", &approve, None, None).await;
    assert_eq!(status, 403, "{body}");
    let boss = person_token_with_role(&w.app, "boss", Role::Admin, "boss@example.com");
    let (status, body) = w.send(&boss, "POST", &approve, None, None).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = w
        .send(
            &boss,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            Some(json!({"comment": "On behalf of the reviewer."})),
        )
        .await;
    assert_eq!(status, 403, "{body}");

    let (status, doc) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved");
    let review: Vec<(String, String)> = doc["review"]
        .as_array()
        .expect("review")
        .iter()
        .map(|r| {
            (
                r["verdict"].as_str().expect("verdict").to_owned(),
                r["author"].as_str().expect("author").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        review,
        [
            ("submitted", "reviewer@example.com"),
            ("changes_requested", "reviewer@example.com"),
            ("submitted", "owner@example.com"),
            ("approved", "reviewer@example.com"),
        ]
        .map(|(v, a)| (v.to_owned(), a.to_owned()))
    );
}

/// An admin names the reviewer: the reviewer approves; the admin who named them does
/// not become able to approve for them, and may not name themselves.
#[tokio::test]
async fn an_admin_names_another_reviewer_but_not_themselves() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let boss = person_token_with_role(&w.app, "boss", Role::Admin, "boss@example.com");
    let version = w.coe(&id).await["version"].as_i64().expect("version");
    let patch = format!("/api/v1/coes/{id}");
    let (status, body) = w
        .send(
            &boss,
            "PATCH",
            &patch,
            Some(version),
            Some(json!({"reviewer": "boss@example.com"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, doc) = w
        .send(
            &boss,
            "PATCH",
            &patch,
            Some(version),
            Some(json!({"reviewer": "stranger@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["reviewer_named_by"], "boss@example.com");
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, doc) = w
        .send(
            &w.stranger,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
}

/// A token an admin makes for someone else does not make the admin that person in the
/// review, and a token that stands for nobody neither names a reviewer nor submits.
#[tokio::test]
async fn tokens_made_for_others_or_for_nobody_cannot_get_round_the_review() {
    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    w.action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let boss = person_token_with_role(&w.app, "boss", Role::Admin, "boss@example.com");
    // The boss makes tokens naming the owner and the reviewer.
    let mint = |name: &'static str, email: &'static str| {
        let (app, boss) = (&w.app, boss.clone());
        async move {
            let res = app
                .post_json(
                    "/api/v1/tokens",
                    Some(&boss),
                    &json!({"name": name, "role": "member", "email": email}),
                )
                .await;
            assert_eq!(res.status(), 201);
            crate::helpers::json(res).await["secret"]
                .as_str()
                .expect("secret")
                .to_owned()
        }
    };
    let as_owner = mint("as-owner", "owner@example.com").await;
    let as_reviewer = mint("as-reviewer", "reviewer@example.com").await;
    let patch = format!("/api/v1/coes/{id}");
    let version = w.coe(&id).await["version"].as_i64().expect("version");
    // Through the owner's name, the boss names himself reviewer: refused.
    let (status, body) = w
        .send(
            &as_owner,
            "PATCH",
            &patch,
            Some(version),
            Some(json!({"reviewer": "boss@example.com"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    // A token for nobody names no reviewer and submits nothing.
    let admin = w.app.admin_token();
    let (status, body) = w
        .send(
            &admin,
            "PATCH",
            &patch,
            Some(version),
            Some(json!({"reviewer": "stranger@example.com"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("no person"), "{body}");
    let (status, _) = w
        .send(
            &admin,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 403);
    // Submitted by the owner; the boss's token in the reviewer's name decides nothing.
    let (status, _) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{id}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = w
        .send(
            &as_reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, doc) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{id}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
}

/// An action checked (`actions::prepare`, off the writer) for a COE that closes before
/// it is written (`actions::add`) is refused then: no action, no audit row, no email.
/// Open again, it is added, its owner told once, and the answer `add` makes without
/// reading back is what reading it gives.
#[tokio::test]
async fn an_action_prepared_for_a_coe_closed_since_is_not_added() {
    use coe::db::schema::{audit_log, coes, corrective_actions};
    use coe::services::access::Editor;
    use coe::services::coe::actions::{self, NewAction};

    let w = World::new().await;
    let (id, _) = w.written_coe().await;
    let settings = coe::config::Settings::default();
    let template = coe::domain::template::Template::default_template();
    let emails = coe::email::EmailTemplates::load(None, "http://localhost").expect("templates");
    let env = coe::services::Env {
        settings: &settings,
        template: &template,
        emails: &emails,
        connections: &coe::services::connections::Connections::of_file(&settings),
    };
    let actor = "lead@example.com";
    let who = Editor {
        actor,
        email: Some(actor),
        principal: actor,
        is_admin: true,
    };
    let input = NewAction {
        title: Some("Alarm on checkout errors".into()),
        owner: Some("carol@example.com".into()),
        due_date: Some((Utc::now().date_naive() + Duration::days(30)).to_string()),
        priority: Some("high".into()),
        kind: Some("detect".into()),
        ..NewAction::default()
    };
    let mut conn = w.app.pool.get().expect("conn");
    let counts = |conn: &mut coe::db::DbConnection| -> (i64, i64, i64) {
        (
            corrective_actions::table
                .count()
                .get_result(conn)
                .expect("actions"),
            audit_log::table.count().get_result(conn).expect("audit"),
            outbox_emails::table
                .filter(outbox_emails::recipient.eq("carol@example.com"))
                .count()
                .get_result(conn)
                .expect("emails"),
        )
    };
    let before = counts(&mut conn);
    let set_state = |conn: &mut coe::db::DbConnection, state: &str| {
        diesel::update(coes::table.find(&id))
            .set(coes::state.eq(state))
            .execute(conn)
            .expect("state set");
    };

    let prepared =
        actions::prepare(&mut conn, &id, &input, &who, settings.clock(), env).expect("checked");
    set_state(&mut conn, "closed");
    let refused = coe::db::write_transaction(&mut conn, |conn| actions::add(conn, prepared, env));
    assert!(
        matches!(refused, Err(actions::ActionError::CoeClosed(_))),
        "{refused:?}"
    );
    assert_eq!(counts(&mut conn), before, "nothing written");

    set_state(&mut conn, "draft");
    let prepared =
        actions::prepare(&mut conn, &id, &input, &who, settings.clock(), env).expect("checked");
    let added = coe::db::write_transaction(&mut conn, |conn| actions::add(conn, prepared, env))
        .expect("added");
    let after = counts(&mut conn);
    assert_eq!(after.0, before.0 + 1);
    assert_eq!(after.2, before.2 + 1, "the owner told once");
    let read = actions::get(&mut conn, &added.action.id, settings.clock(), &[]).expect("read back");
    assert_eq!(
        serde_json::to_value(&added).expect("json"),
        serde_json::to_value(&read).expect("json")
    );
}

/// Actions added side by side to one approved COE while its last action is completed
/// (which closes it): each is added or refused as closed, and the COE never ends
/// closed with an action open (on PostgreSQL the adds hold a share lock on the COE,
/// the completion its write lock).
#[tokio::test]
async fn actions_added_while_the_last_one_closes_the_coe_never_leave_it_closed_with_one_open() {
    let w = World::new().await;
    for round in 0..3 {
        let (id, _) = w.written_coe().await;
        let last = w
            .action(&id, "Validate config in CI", "dev@example.com")
            .await;
        for (token, step) in [(&w.owner, "submit"), (&w.reviewer, "approve")] {
            let (status, doc) = w
                .send(
                    token,
                    "POST",
                    &format!("/api/v1/coes/{id}/{step}"),
                    None,
                    None,
                )
                .await;
            assert_eq!(status, 200, "{step}: {doc}");
        }
        let due = (Utc::now() + Duration::days(10)).date_naive();
        // The completion sent after none, four and all eight adds.
        let mut tasks = tokio::task::JoinSet::new();
        let complete = w.app.url(&format!(
            "/api/v1/actions/{}/complete",
            last["id"].as_str().expect("id")
        ));
        for i in 0..=8 {
            let client = w.app.client.clone();
            let token = w.owner.clone();
            if i == round * 4 {
                let complete = complete.clone();
                tasks.spawn(async move {
                    let res = client
                        .post(complete)
                        .bearer_auth(token)
                        .json(&json!({"note": "CI rejects bad configs",
                                      "evidence_url": "https://ci.example.com/run/1"}))
                        .send()
                        .await
                        .expect("sent");
                    ("complete", res.status().as_u16())
                });
                continue;
            }
            let url = w.app.url(&format!("/api/v1/coes/{id}/actions"));
            tasks.spawn(async move {
                let res = client
                    .post(url)
                    .bearer_auth(token)
                    .json(&json!({"title": format!("Follow-up {round}-{i}"), "owner": "ops@example.com",
                                  "due_date": due, "priority": "medium", "kind": "detect",
                                  "success_criteria": "An alert fires"}))
                    .send()
                    .await
                    .expect("sent");
                ("add", res.status().as_u16())
            });
        }
        let mut added = 0;
        while let Some(done) = tasks.join_next().await {
            match done.expect("task") {
                ("complete", status) => assert_eq!(status, 200, "round {round}"),
                (_, 201) => added += 1,
                (_, status) => assert_eq!(status, 409, "round {round}: refused as closed"),
            }
        }
        let doc = w.coe(&id).await;
        let open = doc["actions"]
            .as_array()
            .expect("actions")
            .iter()
            .filter(|a| a["state"] == "open")
            .count();
        assert_eq!(open, added, "round {round}: every action added is there");
        match doc["state"].as_str() {
            Some("closed") => assert_eq!(open, 0, "round {round}: closed with open actions"),
            Some("approved") => assert!(open > 0, "round {round}: approved with nothing left"),
            other => panic!("round {round}: {other:?}"),
        }
    }
}
