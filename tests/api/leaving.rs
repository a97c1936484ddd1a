//! A person leaving (SCIM deactivation, or an admin's "left the company"): their open
//! actions, the COEs they own before approval and the reviews they hold pass to their
//! manager with one email (a real SMTP server) and an audit record each; they can no
//! longer be named; work nobody can take stays flagged on the board. Both databases.

use coe::domain::Role;
use serde_json::{json, Value};

use crate::email::{SmtpServer, World};
use crate::helpers::{json, TestApp};
use crate::pages::{get_page, post_form, sign_in};

async fn provision(world: &World, idp: &str, user: Value) -> String {
    let res = world
        .app
        .client
        .post(world.app.url("/scim/v2/Users"))
        .bearer_auth(idp)
        .header("content-type", "application/scim+json")
        .body(user.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 201);
    json(res).await["id"].as_str().expect("an id").to_owned()
}

/// An action on `coe` owned by `owner`, added with the admin token (the COE's owner
/// may have left), its due date `days_overdue` days past.
async fn add_action(
    world: &World,
    coe: &str,
    title: &str,
    owner: &str,
    days_overdue: i64,
) -> String {
    let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
    let res = world
        .app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(&world.admin),
            &json!({"title": title, "owner": owner, "due_date": due, "priority": "high", "kind": "prevent"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let id = json(res).await["id"].as_str().expect("an id").to_owned();
    world.set_due(
        &id,
        crate::email::today() - chrono::Duration::days(days_overdue),
    );
    id
}

/// A SCIM PATCH of User `id` with `operations`; its status.
pub(crate) async fn scim_patch(app: &TestApp, idp: &str, id: &str, operations: Value) -> u16 {
    app.client
        .patch(app.url(&format!("/scim/v2/Users/{id}")))
        .bearer_auth(idp)
        .header("content-type", "application/scim+json")
        .body(
            json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                   "Operations": operations})
            .to_string(),
        )
        .send()
        .await
        .expect("sent")
        .status()
        .as_u16()
}

/// Sets or clears `email`'s admin flag with the admin token `admin`.
pub(crate) async fn set_admin(app: &TestApp, admin: &str, email: &str, flag: bool) {
    let res = app
        .client
        .put(app.url(&format!("/api/v1/people/{email}/admin")))
        .bearer_auth(admin)
        .json(&json!({ "is_admin": flag }))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success(), "{}", res.status());
}

/// A COE owned by `coe_owner` with one action owned by `owner`, due in ten days, made
/// with `token`: their ids.
pub(crate) async fn coe_with_action(
    app: &TestApp,
    token: &str,
    (coe_title, coe_owner): (&str, &str),
    (title, owner): (&str, &str),
) -> (String, String) {
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(token),
            &json!({"title": coe_title, "owner": coe_owner}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let coe = json(res).await["id"].as_str().expect("an id").to_owned();
    let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
    let res = app
        .post_json(
            &format!("/api/v1/coes/{coe}/actions"),
            Some(token),
            &json!({"title": title, "owner": owner, "due_date": due, "priority": "high", "kind": "prevent"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let action = json(res).await["id"].as_str().expect("an id").to_owned();
    (coe, action)
}

async fn get(world: &World, path: &str) -> Value {
    world.app.get_json(path, &world.admin).await
}

#[tokio::test]
async fn a_leaver_s_actions_drafts_and_reviews_pass_to_their_manager_with_one_email() {
    let (world, smtp) = (World::new().await, SmtpServer::start());
    let idp = world.app.token("okta", Role::Scim);
    let maria = provision(
        &world,
        &idp,
        json!({"userName": "maria@example.com", "displayName": "Maria Manager",
               "emails": [{"value": "maria@example.com", "primary": true}]}),
    )
    .await;
    let chen = provision(
        &world,
        &idp,
        json!({"userName": "chen@example.com", "displayName": "Chen Li",
               "emails": [{"value": "chen@example.com", "primary": true}],
               "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"manager": {"value": maria}}}),
    )
    .await;
    let draft = world
        .coe("Checkout returned 502", "chen@example.com", None)
        .await;
    let action = add_action(
        &world,
        &draft,
        "Add a canary to checkout deploys",
        "chen@example.com",
        -5,
    )
    .await;
    let reviewed = world
        .coe(
            "Search was slow",
            "lead@example.com",
            Some("chen@example.com"),
        )
        .await;
    let done = add_action(&world, &reviewed, "Already done", "chen@example.com", -3).await;
    let res = world
        .app
        .post_json(
            &format!("/api/v1/actions/{done}/start"),
            Some(&world.admin),
            &json!({}),
        )
        .await;
    assert!(res.status().is_success());
    // A sev1 COE in review whose bar raiser is Chen; Bea is another bar raiser.
    let raised = world
        .coe(
            "Payments fell over",
            "lead@example.com",
            Some("maria@example.com"),
        )
        .await;
    {
        use coe::db::schema::coes;
        use diesel::prelude::*;
        let mut conn = world.app.pool.get().expect("conn");
        diesel::update(coes::table.find(&raised))
            .set((
                coes::state.eq("in_review"),
                coes::severity.eq(1),
                coes::bar_raiser_email.eq("chen@example.com"),
                coes::submitted_by.eq("lead@example.com"),
            ))
            .execute(&mut conn)
            .expect("in review");
    }
    let res = world
        .app
        .client
        .put(world.app.url("/api/v1/people/bea@example.com"))
        .bearer_auth(&world.admin)
        .json(&json!({"name": "Bea Raiser", "team": "Search", "bar_raiser": true}))
        .send()
        .await
        .expect("sent");
    assert!(res.status().is_success());
    world.sweep(&smtp.url(), &[]);
    let before = smtp.messages().len();

    // Okta deactivates Chen.
    let deactivate = json!([{"op": "replace", "value": {"active": false}}]);
    assert_eq!(scim_patch(&world.app, &idp, &chen, deactivate).await, 200);

    let a = get(&world, &format!("/api/v1/actions/{action}")).await;
    assert_eq!(a["owner"], "maria@example.com", "{a}");
    assert_eq!(a["handed_over_from"], "chen@example.com");
    assert!(a["handed_over_at"].is_string());
    // Started work moves too: it is still open.
    let d = get(&world, &format!("/api/v1/actions/{done}")).await;
    assert_eq!(d["owner"], "maria@example.com");
    let c = get(&world, &format!("/api/v1/coes/{draft}")).await;
    assert_eq!(c["owner"], "maria@example.com");
    assert_eq!(c["handed_over"]["owner_from"], "chen@example.com");
    let r = get(&world, &format!("/api/v1/coes/{reviewed}")).await;
    assert_eq!(r["reviewer"], "maria@example.com");
    assert_eq!(r["handed_over"]["reviewer_from"], "chen@example.com");
    let history = get(&world, &format!("/api/v1/coes/{draft}/history"))
        .await
        .to_string();
    assert!(history.contains("owner:left"), "{history}");

    // One email to Maria, listing all four.
    world.sweep(&smtp.url(), &[]);
    let to_maria: Vec<_> = smtp
        .to("maria@example.com")
        .into_iter()
        .filter(|m| m.subject.contains("left"))
        .collect();
    assert_eq!(to_maria.len(), 1, "{to_maria:#?}");
    let mail = &to_maria[0];
    assert!(
        mail.subject.contains("Chen Li (chen@example.com) left"),
        "{}",
        mail.subject
    );
    assert!(mail.subject.contains("4 items"), "{}", mail.subject);
    for title in [
        "Add a canary to checkout deploys",
        "Already done",
        "Checkout returned 502",
        "Search was slow",
    ] {
        assert!(mail.text.contains(title), "{title}: {}", mail.text);
        assert!(mail.html.contains(title), "{title}");
    }
    assert!(smtp.messages().len() > before);
    assert!(
        smtp.to("bea@example.com")
            .iter()
            .any(|m| m.subject.contains("Payments fell over")),
        "Bea is asked to review"
    );
    assert!(smtp
        .to("chen@example.com")
        .iter()
        .all(|m| !m.subject.contains("left")));

    // Chen can no longer be given work.
    let res = world
        .app
        .post_json(
            &format!("/api/v1/coes/{draft}/actions"),
            Some(&world.admin),
            &json!({"title": "More", "owner": "chen@example.com", "due_date": (chrono::Utc::now() + chrono::Duration::days(9)).date_naive(),
                    "priority": "high", "kind": "prevent"}),
        )
        .await;
    assert_eq!(res.status(), 422);
    let body = json(res).await.to_string();
    assert!(body.contains("left the organisation"), "{body}");

    // Nor can Chen sign in: the request is answered as any other, and the link
    // written for it is expired at birth, with no email.
    let res = crate::pages::ask_for_link(&world.app, "chen@example.com").await;
    assert_eq!(res.status(), 200);
    let link = {
        use coe::db::schema::sign_in_links;
        use diesel::prelude::*;
        crate::eventually::eventually_async(
            std::time::Duration::from_secs(20),
            "the request handled (a link written for Chen)",
            || async {
                let mut conn = world.app.pool.get().expect("conn");
                sign_in_links::table
                    .filter(sign_in_links::email.eq("chen@example.com"))
                    .select((sign_in_links::created_at, sign_in_links::expires_at))
                    .first::<(chrono::NaiveDateTime, chrono::NaiveDateTime)>(&mut conn)
                    .optional()
                    .expect("links")
            },
        )
        .await
    };
    assert!(link.1 <= link.0, "expired at birth: {link:?}");
    {
        use coe::db::schema::outbox_emails;
        use diesel::prelude::*;
        let mut conn = world.app.pool.get().expect("conn");
        let emailed: i64 = outbox_emails::table
            .filter(outbox_emails::kind.eq("sign_in"))
            .filter(outbox_emails::recipient.eq("chen@example.com"))
            .count()
            .get_result(&mut conn)
            .expect("outbox");
        assert_eq!(emailed, 0, "no sign-in email for someone who left");
    }

    // Nor is Chen offered when an owner is being picked.
    let found = get(&world, "/api/v1/people?q=chen").await;
    assert_eq!(found["found"], json!([]), "{found}");

    // Reactivated: named again, but what passed on stays passed.
    let reactivate = json!([{"op": "replace", "path": "active", "value": true}]);
    assert_eq!(scim_patch(&world.app, &idp, &chen, reactivate).await, 200);
    assert_eq!(
        get(&world, &format!("/api/v1/actions/{action}")).await["owner"],
        "maria@example.com"
    );
}

#[tokio::test]
async fn an_admin_marks_someone_left_and_work_nobody_can_take_is_flagged_on_the_board() {
    let world = World::new().await;
    // Dana has no manager and no team lead: the admin who says she left takes it.
    world.person("dana@example.com", "Dana Doe", None).await;
    let coe = world.coe("Queue backed up", "lead@example.com", None).await;
    let action = add_action(&world, &coe, "Alert on queue depth", "dana@example.com", 3).await;
    world.person("admin@example.com", "Ada Admin", None).await;
    set_admin(&world.app, &world.admin, "admin@example.com", true).await;
    let cookie = sign_in(&world.app, "admin@example.com").await;
    let html = get_page(&world.app, "/admin/people", Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("left the company?"), "{html}");
    let res = post_form(
        &world.app,
        &cookie,
        "/admin/people",
        "/admin/people/dana@example.com/left",
        &[],
    )
    .await;
    assert_eq!(res.status(), 303, "back to the people page");
    let a = get(&world, &format!("/api/v1/actions/{action}")).await;
    assert_eq!(
        (a["owner"].clone(), a["handed_over_from"].clone()),
        (json!("admin@example.com"), json!("dana@example.com")),
        "{a}"
    );
    let html = get_page(&world.app, "/admin/people", Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("<strong>left</strong> on"), "{html}");
    let page = get_page(&world.app, &format!("/actions/{action}"), Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("who left on"), "{page}");
    // The admin cannot say they left themselves.
    let res = post_form(
        &world.app,
        &cookie,
        "/admin/people",
        "/admin/people/admin@example.com/left",
        &[],
    )
    .await;
    assert_eq!(res.status(), 403);
    let why = res.text().await.unwrap();
    assert!(
        why.contains("you cannot mark yourself as having left; ask another admin"),
        "{why}"
    );
    // Nor take away their own admin flag: on the page or with a token in their name.
    let res = post_form(
        &world.app,
        &cookie,
        "/admin/people",
        "/admin/people/admin@example.com/admin",
        &[("is_admin", "false")],
    )
    .await;
    assert_eq!(res.status(), 403);
    let why = res.text().await.unwrap();
    assert!(
        why.contains("you cannot remove your own admin flag; ask another admin"),
        "{why}"
    );
    let own = crate::actions::person_token_with_role(
        &world.app,
        "ada-admin",
        Role::Admin,
        "admin@example.com",
    );
    let res = world
        .app
        .client
        .put(world.app.url("/api/v1/people/admin@example.com/admin"))
        .bearer_auth(&own)
        .json(&json!({"is_admin": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let body: serde_json::Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("your own admin flag")),
        "{body}"
    );
    let people = get(&world, "/api/v1/people").await;
    let ada = people["people"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["email"] == "admin@example.com"))
        .cloned();
    assert_eq!(
        ada.as_ref().map(|a| a["is_admin"].clone()),
        Some(json!(true)),
        "nothing changed: {people}"
    );

    // Eve, provisioned with no manager, leaves when no admin is a person: nobody can
    // take her action, and the board says so.
    let idp = world.app.token("okta", Role::Scim);
    let eve = provision(
        &world,
        &idp,
        json!({"userName": "eve@example.com", "emails": [{"value": "eve@example.com"}]}),
    )
    .await;
    let other = add_action(&world, &coe, "Page the owner", "eve@example.com", 2).await;
    // The identity provider decides when a provisioned person leaves.
    let res = post_form(
        &world.app,
        &cookie,
        "/admin/people",
        "/admin/people/eve@example.com/left",
        &[],
    )
    .await;
    assert_eq!(res.status(), 409);
    set_admin(&world.app, &world.admin, "admin@example.com", false).await;
    let res = world
        .app
        .client
        .delete(world.app.url(&format!("/scim/v2/Users/{eve}")))
        .bearer_auth(&idp)
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 204);
    assert_eq!(
        get(&world, &format!("/api/v1/actions/{other}")).await["owner"],
        "eve@example.com"
    );
    let board = get_page(&world.app, "/board", Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    assert!(board.contains("their actions need a new owner"), "{board}");
    assert!(
        board.contains("needs a new owner</strong>"),
        "Eve's row: {board}"
    );
    // Dana's action, now the admin's, says whose it was.
    assert!(board.contains("Alert on queue depth"), "{board}");
    assert!(board.contains("(left on "), "{board}");
}

/// The People page's "left the company", in Chromium: the question, the answer, and
/// the action that says whose it was (screenshots `people-left-*.png`, `action-was-theirs.png`).
#[tokio::test]
async fn an_admin_says_someone_left_on_the_people_page_in_a_browser() {
    let app = crate::helpers::spawn_app().await;
    let admin = app.admin_token();
    for (email, name, manager) in [
        ("maria@example.com", "Maria Manager", None),
        ("dana@example.com", "Dana Doe", Some("maria@example.com")),
        ("admin@example.com", "Ada Admin", None),
    ] {
        let res = app
            .client
            .put(app.url(&format!("/api/v1/people/{email}")))
            .bearer_auth(&admin)
            .json(&json!({"name": name, "manager_email": manager}))
            .send()
            .await
            .expect("sent");
        assert!(res.status().is_success());
    }
    set_admin(&app, &admin, "admin@example.com", true).await;
    let (_, action) = coe_with_action(
        &app,
        &admin,
        ("Queue backed up", "admin@example.com"),
        ("Alert on queue depth", "dana@example.com"),
    )
    .await;

    let browser = crate::webdriver::Browser::start().await;
    crate::browser::sign_in_to(&browser, &app, "admin@example.com", "/admin/people").await;
    browser
        .click(r#"details[data-left="dana@example.com"] summary"#)
        .await;
    browser.screenshot("people-left-ask").await;
    browser
        .click_to_load(r#"details[data-left="dana@example.com"] button[type=submit]"#)
        .await;
    browser.wait_for_heading("People").await;
    browser.screenshot("people-left-done").await;
    let main = browser.text("main").await;
    assert!(main.contains("left on"), "{main}");
    browser.goto(&app.url(&format!("/actions/{action}"))).await;
    browser.wait_for_heading("Alert on queue depth").await;
    browser.screenshot("action-was-theirs").await;
    let main = browser.text("main").await;
    assert!(main.contains("who left on"), "{main}");
    assert!(
        main.contains("Maria Manager"),
        "the manager owns it now: {main}"
    );
}

/// A team change moves nothing: the coverage audit counts what a person closed before
/// it under the team they were in, and what they close after under the new one.
#[tokio::test]
async fn a_team_change_moves_nothing_and_counts_from_that_day_in_the_coverage_audit() {
    let app = crate::helpers::spawn_app().await;
    let admin = app.admin_token();
    let put_team = |team: &'static str| {
        app.client
            .put(app.url("/api/v1/people/ana@example.com"))
            .bearer_auth(&admin)
            .json(&json!({"name": "Ana Lima", "team": team}))
            .send()
    };
    assert!(put_team("Payments")
        .await
        .expect("sent")
        .status()
        .is_success());
    let res = app
        .post_json(
            "/api/v1/coes",
            Some(&admin),
            &json!({"title": "Checkout down", "owner": "ana@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let coe = json(res).await["id"].as_str().expect("an id").to_owned();
    let close = |title: &'static str| {
        let (app, admin, coe) = (&app, &admin, &coe);
        async move {
            let due = (chrono::Utc::now() + chrono::Duration::days(10)).date_naive();
            let res = app
                .post_json(
                    &format!("/api/v1/coes/{coe}/actions"),
                    Some(admin),
                    &json!({"title": title, "owner": "ana@example.com", "due_date": due,
                            "priority": "high", "kind": "prevent"}),
                )
                .await;
            assert_eq!(res.status(), 201);
            let id = json(res).await["id"].as_str().expect("an id").to_owned();
            let res = app
                .post_json(
                    &format!("/api/v1/actions/{id}/complete"),
                    Some(admin),
                    &json!({"note": "done", "evidence_url": "https://ci.example.com/run/1"}),
                )
                .await;
            assert_eq!(res.status(), 200);
            id
        }
    };
    let before = close("Alert on checkout errors").await;
    {
        // Closed yesterday, as far as the audit goes.
        use coe::db::schema::corrective_actions;
        use diesel::prelude::*;
        let mut conn = app.pool.get().expect("conn");
        diesel::update(corrective_actions::table.find(&before))
            .set(corrective_actions::closed_at.eq(Some(
                chrono::Utc::now().naive_utc() - chrono::Duration::days(1),
            )))
            .execute(&mut conn)
            .expect("backdated");
    }
    assert!(put_team("Search")
        .await
        .expect("sent")
        .status()
        .is_success());
    close("Canary the search deploys").await;

    let stats = app.get_json("/api/v1/stats", &admin).await;
    let by_team = &stats["coverage"]["by_team"];
    assert_eq!(
        by_team["Payments"]["actions_closed"]["on_time"], 1,
        "{by_team}"
    );
    assert_eq!(
        by_team["Search"]["actions_closed"]["on_time"], 1,
        "{by_team}"
    );
    // Nothing of theirs moved: the COE is still hers.
    let doc = app.get_json(&format!("/api/v1/coes/{coe}"), &admin).await;
    assert_eq!(doc["owner"], "ana@example.com");
}

/// A manager who left is passed over: their reports' escalations go to the manager
/// above them (who still works here), and nothing to the leaver.
#[tokio::test]
async fn escalations_pass_over_a_manager_who_left() {
    let (world, smtp) = (World::new().await, SmtpServer::start());
    world.person("vp@example.com", "Vera Vp", None).await;
    world
        .person("carla@example.com", "Carla Manager", Some("vp@example.com"))
        .await;
    world
        .person("ana@example.com", "Ana Lima", Some("carla@example.com"))
        .await;
    let coe = world
        .coe(
            "Search was down",
            "lead@example.com",
            Some("rev@example.com"),
        )
        .await;
    add_action(&world, &coe, "Shard the index", "ana@example.com", 8).await;
    {
        use coe::db::schema::people;
        use diesel::prelude::*;
        let mut conn = world.app.pool.get().expect("conn");
        diesel::update(people::table.find("carla@example.com"))
            .set((
                people::active.eq(false),
                people::left_at.eq(Some(chrono::Utc::now().naive_utc())),
            ))
            .execute(&mut conn)
            .expect("Carla left");
    }
    world.sweep(&smtp.url(), &[]);
    let to_vp: Vec<_> = smtp
        .to("vp@example.com")
        .into_iter()
        .filter(|m| m.subject.starts_with("[coe] Escalation"))
        .collect();
    assert_eq!(to_vp.len(), 1, "the manager above is told");
    assert!(to_vp[0].text.contains("Shard the index"));
    assert!(
        smtp.to("carla@example.com").is_empty(),
        "nothing to the leaver"
    );
}
