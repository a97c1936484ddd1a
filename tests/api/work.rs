//! "My work" says whose move it is (issue 51, item 3): a reviewer, a bar raiser, an
//! owner whose COE came back and an action owner whose action was sent back each find
//! what waits on them, with since when, and it leaves once they moved.

use serde_json::json;

use crate::actions::person_token;
use crate::attacks::{read, review_world};
use crate::pages::{get_page, sign_in};

async fn my_work(app: &crate::helpers::TestApp, email: &str) -> String {
    let cookie = sign_in(app, email).await;
    get_page(app, "/", Some(&cookie))
        .await
        .text()
        .await
        .expect("html")
}

/// The part of "My work" that lists the moves (empty when none waits).
fn moves(html: &str) -> &str {
    match html.find("id=\"your-move\"") {
        Some(start) => {
            let end = html[start..]
                .find("</section>")
                .map_or(html.len(), |e| start + e);
            &html[start..end]
        }
        None => "",
    }
}

#[tokio::test]
async fn each_person_finds_the_move_that_waits_on_them_on_my_work() {
    let (w, _) = review_world().await;
    let (id, _) = crate::mechanism::submitted_sev1(&w).await;
    let di = person_token(&w.app, "di", "di@example.com");
    let dev = person_token(&w.app, "dev", "dev@example.com");
    let approve = format!("/api/v1/coes/{id}/approve");

    let html = my_work(&w.app, "reviewer@example.com").await;
    assert!(moves(&html).contains("Review <a"), "{html}");
    assert!(moves(&html).contains("waiting since today"), "{html}");
    let html = my_work(&w.app, "di@example.com").await;
    assert!(moves(&html).contains("Raise the bar on"), "{html}");
    // The owner did their part: My work says whom it waits for.
    let html = my_work(&w.app, "owner@example.com").await;
    assert!(
        html.contains("in review, waiting for reviewer@example.com to approve it"),
        "{html}"
    );

    // The reviewer approved: it waits on the bar raiser alone.
    let (status, _) = w.send(&w.reviewer, "POST", &approve, None, None).await;
    assert_eq!(status, 200);
    assert!(!moves(&my_work(&w.app, "reviewer@example.com").await).contains("Payments down"));
    assert!(moves(&my_work(&w.app, "di@example.com").await).contains("Payments down"));
    let html = my_work(&w.app, "owner@example.com").await;
    assert!(
        html.contains("in review, waiting for di@example.com to approve it"),
        "{html}"
    );

    // The bar raiser sends it back: the owner's move, with what was asked.
    let (status, _) = w
        .send(
            &di,
            "POST",
            &format!("/api/v1/coes/{id}/request-changes"),
            None,
            Some(json!({"comment": "Say which check was missing."})),
        )
        .await;
    assert_eq!(status, 200);
    let html = my_work(&w.app, "owner@example.com").await;
    assert!(
        moves(&html).contains("with changes asked: “Say which check was missing.”"),
        "{html}"
    );
    assert!(moves(&my_work(&w.app, "di@example.com").await).is_empty());

    // Submitted again and approved by both: the owner's move is gone.
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
    assert!(moves(&my_work(&w.app, "owner@example.com").await).is_empty());
    for token in [&di, &w.reviewer] {
        let (status, doc) = w.send(token, "POST", &approve, None, None).await;
        assert_eq!(status, 200, "{doc}");
    }
    assert_eq!(read(&w, &id).await["state"], "approved");

    // Dev does the action: the reviewer's move, to verify it.
    let action = read(&w, &id).await["actions"][0]["id"]
        .as_str()
        .expect("action")
        .to_owned();
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{action}/complete"),
            None,
            Some(json!({"note": "CI checks it", "evidence_url": "https://ci.example.com/1"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let html = my_work(&w.app, "reviewer@example.com").await;
    assert!(moves(&html).contains("does what it promised"), "{html}");

    // Sent back at verification: Dev's move, with the reason.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/actions/{action}/verify"),
            None,
            Some(json!({"verified": false, "reason": "The CI run is red."})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let html = my_work(&w.app, "dev@example.com").await;
    assert!(
        moves(&html).contains("was sent back at verification")
            && moves(&html).contains("The CI run is red."),
        "{html}"
    );
    assert!(
        !moves(&my_work(&w.app, "reviewer@example.com").await).contains("does what it promised")
    );
    // The action's page says why too (item 6), not only the email.
    let cookie = sign_in(&w.app, "dev@example.com").await;
    let page = get_page(&w.app, &format!("/actions/{action}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        page.contains("sent it back: not done yet: “The CI run is red.”"),
        "{page}"
    );
}

/// Done actions waiting for verification reach their reviewer by email too: one a
/// day at most, listing them all, and none once they are verified (issue 51, item 3).
#[tokio::test]
async fn a_reviewer_is_emailed_once_a_day_while_done_actions_wait_for_verification() {
    use crate::email::SmtpServer;
    let (w, _) = review_world().await;
    let (id, action) = crate::attacks::approved_sev1(&w).await;
    let dev = person_token(&w.app, "dev", "dev@example.com");
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{action}/complete"),
            None,
            Some(json!({"note": "CI checks it", "evidence_url": "https://ci.example.com/1"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let smtp = SmtpServer::start();
    let waiting = |smtp: &SmtpServer| {
        smtp.to("reviewer@example.com")
            .into_iter()
            .filter(|m| m.subject.contains("for your verification"))
            .collect::<Vec<_>>()
    };
    let now = chrono::Utc::now();
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now);
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now);
    // Both sweeps got that far: every verification email they queued was handed to
    // the SMTP server before they exited, so what the server holds is all there is.
    let queued: Vec<(String, String)> = {
        use coe::db::schema::outbox_emails;
        use diesel::prelude::*;
        let mut conn = w.app.pool.get().expect("conn");
        outbox_emails::table
            .filter(outbox_emails::kind.eq("verifications_waiting"))
            .select((outbox_emails::recipient, outbox_emails::state))
            .load(&mut conn)
            .expect("outbox")
    };
    assert_eq!(
        queued,
        vec![("reviewer@example.com".to_owned(), "sent".to_owned())],
        "one queued, and sent"
    );
    crate::eventually::try_until_async(std::time::Duration::from_secs(60), || async {
        !waiting(&smtp).is_empty()
    })
    .await;
    let emails = waiting(&smtp);
    assert_eq!(
        emails.len(),
        1,
        "one a day: {:?}",
        emails.iter().map(|m| &m.subject).collect::<Vec<_>>()
    );
    assert!(
        emails[0]
            .subject
            .contains("1 done action waits for your verification (Payments down)"),
        "{}",
        emails[0].subject
    );
    // Verified: the next day's sweep (which delivers what it queued before it exits)
    // tells the reviewer nothing.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/actions/{action}/verify"),
            None,
            Some(json!({"verified": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&w, &id).await["state"], "closed");
    crate::mechanism::sweep_at(&w.app, &smtp.url(), now + chrono::Duration::days(1));
    assert_eq!(waiting(&smtp).len(), 1, "no second email once verified");
}

/// Merging an owned, reviewed draft into an unowned one (issue 51, item 5): the COE
/// kept takes its owner and reviewer (and says so), the page confirms the merge, and
/// the merged draft leaves its owner's work.
#[tokio::test]
async fn a_merge_keeps_the_owner_and_reviewer_and_the_merged_draft_leaves_my_work() {
    let app = crate::helpers::spawn_app().await;
    let admin = app.admin_token();
    let ana = person_token(&app, "ana", "ana@example.com");
    let boss = crate::actions::person_token_with_role(
        &app,
        "boss",
        coe::domain::Role::Admin,
        "boss@example.com",
    );
    let create = |title: &str| json!({"title": title, "severity": "sev2"});
    let unowned = crate::helpers::json(
        app.post_json("/api/v1/coes", Some(&admin), &create("Checkout failing"))
            .await,
    )
    .await;
    let theirs = crate::helpers::json(
        app.post_json("/api/v1/coes", Some(&admin), &create("Payments failing"))
            .await,
    )
    .await;
    let (kept, draft) = (
        unowned["id"].as_str().expect("id").to_owned(),
        theirs["id"].as_str().expect("id").to_owned(),
    );
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/coes/{draft}")))
        .bearer_auth(&boss)
        .header("If-Match", format!("\"{}\"", theirs["version"]))
        .json(&json!({"owner": "ana@example.com", "reviewer": "lee@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        res.status(),
        200,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert!(moves_or_coes(&my_work(&app, "ana@example.com").await).contains("Payments failing"));

    // Ana merges her draft into the unowned COE from its page.
    let cookie = sign_in(&app, "ana@example.com").await;
    let page = format!("/coes/{kept}");
    let res = crate::pages::post_form(
        &app,
        &cookie,
        &page,
        &format!("{page}/merge"),
        &[("coe_id", draft.as_str())],
    )
    .await;
    let html = res.text().await.expect("html");
    assert!(
        html.contains("Merged into this COE: “Payments failing”. It had no owner: ana@example.com owns it now. It had no reviewer: lee@example.com reviews it now."),
        "{html}"
    );
    let doc = app.get_json(&format!("/api/v1/coes/{kept}"), &ana).await;
    assert_eq!(doc["owner"], "ana@example.com", "{doc}");
    assert_eq!(doc["reviewer"], "lee@example.com", "{doc}");
    let history = app
        .get_json(&format!("/api/v1/coes/{kept}/history"), &ana)
        .await;
    assert!(history.to_string().contains("lee@example.com"), "{history}");
    // The History page names what changed, from what to what (item 9).
    let page = get_page(&app, &format!("/coes/{kept}/history"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        page.contains("named ana@example.com owner; named lee@example.com reviewer"),
        "{page}"
    );
    // The merged draft is no one's work, and its page asks for nothing.
    let work = my_work(&app, "ana@example.com").await;
    assert!(!moves_or_coes(&work).contains("Payments failing"), "{work}");
    assert!(moves_or_coes(&work).contains("Checkout failing"), "{work}");
    let merged = get_page(&app, &format!("/coes/{draft}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(!merged.contains("Still missing"), "{merged}");
}

/// "My work" below its heading.
fn moves_or_coes(html: &str) -> &str {
    html.find("<h1>My work</h1>").map_or(html, |at| &html[at..])
}

/// The bar-raiser rule never lapses unseen (issue 51, item 4): with nobody marked bar
/// raiser, a sev1's review panel and the admin People page say its reviewer alone
/// approves it, and the approval text says closing waits for each verification.
#[tokio::test]
async fn a_sev1_without_a_bar_raiser_says_so() {
    let w = crate::actions::World::new().await;
    let (id, doc) = crate::mechanism::submitted_sev1(&w).await;
    assert_eq!(doc["bar_raiser"], serde_json::Value::Null, "{doc}");
    let html = {
        let cookie = sign_in(&w.app, "reviewer@example.com").await;
        get_page(&w.app, &format!("/coes/{id}"), Some(&cookie))
            .await
            .text()
            .await
            .expect("html")
    };
    assert!(
        html.contains(
            "nobody in the directory is marked bar raiser, so its reviewer alone approves it"
        ),
        "{html}"
    );
    assert!(
        html.contains("each action is done and you verified it against its success criteria"),
        "{html}"
    );
    crate::ownership::person(&w.app, "root@example.com", true).await;
    let cookie = sign_in(&w.app, "root@example.com").await;
    let people = get_page(&w.app, "/admin/people", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(
        people.contains("No bar raiser marked: sev1 COEs are approved by their reviewer alone"),
        "{people}"
    );
    // Once someone is marked, the People page says nothing of it.
    let admin = w.app.admin_token();
    let (status, _) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/di@example.com",
            None,
            Some(json!({"team": "search", "bar_raiser": true})),
        )
        .await;
    assert_eq!(status, 200);
    let people = get_page(&w.app, "/admin/people", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert!(!people.contains("No bar raiser marked"), "{people}");
}

/// A "Mark it done" that does not go through keeps what was typed (issue 51, item 6).
#[tokio::test]
async fn a_refused_mark_it_done_keeps_the_note_typed() {
    let w = crate::actions::World::new().await;
    let (id, _) = w.written_coe().await;
    let action = w
        .action(&id, "Validate config in CI", "dev@example.com")
        .await;
    let action = action["id"].as_str().expect("id").to_owned();
    let cookie = sign_in(&w.app, "dev@example.com").await;
    let page = format!("/actions/{action}");
    // A prevent action is done with evidence: a note of three words is not.
    let res = crate::pages::post_form(
        &w.app,
        &cookie,
        &page,
        &format!("{page}/complete"),
        &[("note", "Done <now>"), ("evidence_url", "")],
    )
    .await;
    assert_eq!(res.status(), 422);
    let html = res.text().await.expect("html");
    assert!(html.contains(">Done &lt;now&gt;</textarea>"), "{html}");
    let doc = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "open", "{doc}");
}

/// Item 11: a team the directory does not know, typed on the board, is said to be
/// unknown, with the team it is a slip away from, not "Nothing is overdue".
#[tokio::test]
async fn the_board_names_an_unknown_team_and_offers_the_nearest() {
    let (w, _) = review_world().await;
    let lead = sign_in(&w.app, "owner@example.com").await;
    let page = |path: &'static str| {
        let (app, lead) = (&w.app, lead.clone());
        async move {
            let res = get_page(app, path, Some(&lead)).await;
            assert_eq!(res.status(), 200, "{path}");
            res.text().await.expect("html")
        }
    };
    let html = page("/board?team=paymnts").await;
    assert!(
        html.contains("No team in the directory is called “paymnts”: did you mean <a href=\"/board?team=payments\">payments</a>?"),
        "{html}"
    );
    let html = page("/board?team=zzzz").await;
    assert!(
        html.contains(
            "No team in the directory is called “zzzz”. <a href=\"/board\">See every team</a>."
        ),
        "{html}"
    );
    for known in ["/board?team=payments", "/board?team=Payments", "/board"] {
        assert!(
            !page(known).await.contains("id=\"unknown-team\""),
            "{known}"
        );
    }
}

/// Item 11: a leader (anyone's manager, or an admin) finds on their home what waits
/// across the organisation, with links; someone who leads nobody does not.
#[tokio::test]
async fn a_leaders_home_shows_what_waits_across_the_organisation() {
    use coe::db::schema::{coes, corrective_actions};
    use diesel::prelude::*;
    let (w, admin) = review_world().await;
    let (status, body) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/owner@example.com",
            None,
            Some(json!({"team": "payments", "manager_email": "lead@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // In review: a COE written and submitted. Past its deadline: a draft resolved a
    // month ago. Overdue: an action due a week ago.
    let (reviewed, _) = w.written_coe().await;
    let action = w
        .action(&reviewed, "Validate config in CI", "dev@example.com")
        .await;
    let (status, body) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{reviewed}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (late, _) = w.written_coe().await;
    {
        let mut conn = w.app.pool.get().expect("conn");
        let month_ago = (chrono::Utc::now() - chrono::Duration::days(30)).naive_utc();
        diesel::update(coes::table.find(&late))
            .set(coes::resolved_at.eq(Some(month_ago)))
            .execute(&mut conn)
            .expect("resolved long ago");
        let week_ago = chrono::Utc::now().date_naive() - chrono::Duration::days(7);
        diesel::update(corrective_actions::table.find(action["id"].as_str().expect("id")))
            .set(corrective_actions::due_date.eq(week_ago))
            .execute(&mut conn)
            .expect("overdue");
    }
    let lead = sign_in(&w.app, "lead@example.com").await;
    let html = get_page(&w.app, "/", Some(&lead))
        .await
        .text()
        .await
        .expect("html");
    let at = html
        .find("id=\"organisation\"")
        .expect("the organisation's figures");
    let part = &html[at..at + html[at..].find("</section>").expect("its end")];
    assert!(
        part.contains("<a href=\"/board\"><strong>1</strong> corrective action overdue</a>"),
        "{part}"
    );
    assert!(
        part.contains("<strong>1</strong> draft past the writeup deadline"),
        "{part}"
    );
    assert!(part.contains(&format!("href=\"/coes/{late}\"")), "{part}");
    assert!(
        part.contains("<strong>1</strong> COE waiting for review"),
        "{part}"
    );
    assert!(
        part.contains(&format!("href=\"/coes/{reviewed}\"")),
        "{part}"
    );
    let owner = sign_in(&w.app, "owner@example.com").await;
    let html = get_page(&w.app, "/", Some(&owner))
        .await
        .text()
        .await
        .expect("html");
    assert!(!html.contains("id=\"organisation\""), "leads nobody");
}

/// Item 5: "Merge other drafts" offers the drafts probably of the same outage first,
/// marked so, before newer drafts of other outages.
#[tokio::test]
async fn merging_offers_the_probable_drafts_first() {
    let app = crate::helpers::spawn_app().await;
    let ingest = app.token("ingest", coe::domain::Role::Ingest);
    let admin = app.admin_token();
    // Checkout and payments-db fail in one cluster within a minute; search, later
    // and elsewhere, is the newest draft.
    for (group, at, labels) in [
        (
            "checkout",
            "2026-11-30T10:00:00Z",
            json!({"cluster": "eu-1"}),
        ),
        (
            "payments-db",
            "2026-11-30T10:01:00Z",
            json!({"cluster": "eu-1"}),
        ),
        ("search", "2026-11-30T16:00:00Z", json!({})),
    ] {
        let event = json!({"dedup_key": format!("{group}-alert"), "group_key": group,
                           "severity": "sev2", "service": group, "started_at": at,
                           "title": format!("{group} failing"), "labels": labels});
        let res = app.post_json("/api/v1/events", Some(&ingest), &event).await;
        assert_eq!(res.status(), 202);
    }
    let list = app.get_json("/api/v1/coes?sort=oldest", &admin).await;
    let checkout = list["coes"][0]["id"].as_str().expect("a draft").to_owned();
    let eve = sign_in(&app, "eve@example.com").await;
    let html = get_page(&app, &format!("/coes/{checkout}"), Some(&eve))
        .await
        .text()
        .await
        .expect("html");
    let at = html.find("id=\"merge\"").expect("the merge form");
    let form = &html[at..at + html[at..].find("</fieldset>").expect("its end")];
    let payments = form
        .find("payments-db failing")
        .expect("payments-db offered");
    let search = form.find("search failing").expect("search offered");
    assert!(payments < search, "the probable one first: {form}");
    assert_eq!(
        form.matches("probably the same outage").count(),
        1,
        "{form}"
    );
    assert!(
        form[payments..search].contains("probably the same outage"),
        "{form}"
    );
}

/// A sev1 whose outage still goes on is approved only when each approver says they
/// know (issue 51, item 4): the approval is refused naming the open incident, goes
/// through with the acknowledgment, and the history says so. A sev2 needs none.
#[tokio::test]
async fn a_sev1_whose_outage_goes_on_is_approved_only_when_the_approver_acknowledges_it() {
    use crate::mechanism::{failover, prepare};
    let (w, admin) = review_world().await;
    let ingest = w.app.token("ingest", coe::domain::Role::Ingest);
    let started = (chrono::Utc::now() - chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    crate::outage::send(&w.app, &ingest, failover(&started, None)).await;
    let list = w.app.get_json("/api/v1/coes", &admin).await;
    let id = list["coes"][0]["id"].as_str().expect("id").to_owned();
    prepare(&w, &admin, &id, "sev1").await;
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
    assert_eq!(doc["bar_raiser"], "di@example.com", "{doc}");
    let di = person_token(&w.app, "di", "di@example.com");
    let approve = format!("/api/v1/coes/{id}/approve");

    for (token, after) in [(&w.reviewer, "in_review"), (&di, "approved")] {
        // Without the acknowledgment: refused, naming the incident; nothing recorded.
        for body in [None, Some(json!({"acknowledge_open_incidents": false}))] {
            let (status, refused) = w.send(token, "POST", &approve, None, body).await;
            assert_eq!(status, 422, "{refused}");
            let field = &refused["error"]["fields"][0];
            assert_eq!(field["field"], "acknowledge_open_incidents", "{refused}");
            let problem = field["problem"].as_str().unwrap_or_default();
            assert!(
                problem.contains("its incident “Payments database failed over” is still open"),
                "{problem}"
            );
        }
        let doc = read(&w, &id).await;
        assert_eq!(doc["state"], "in_review", "{doc}");
        // With it: the approval goes through.
        let (status, doc) = w
            .send(
                token,
                "POST",
                &approve,
                None,
                Some(json!({"acknowledge_open_incidents": true})),
            )
            .await;
        assert_eq!(status, 200, "{doc}");
        assert_eq!(doc["state"], after, "{doc}");
    }
    let cookie = sign_in(&w.app, "owner@example.com").await;
    let history = get_page(&w.app, &format!("/coes/{id}/history"), Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    assert_eq!(
        history
            .matches("approved it knowing its incidents were still open")
            .count(),
        2,
        "{history}"
    );

    // A wrong type is a clear 422, not a 500.
    let (status, body) = w
        .send(
            &w.reviewer,
            "POST",
            &approve,
            None,
            Some(json!({"acknowledge_open_incidents": "yes"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");

    // A sev2 whose alert still fires is approved by its reviewer as before.
    let later = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut other = failover(&later, None);
    other["group_key"] = json!("search-down");
    other["dedup_key"] = json!("search-down");
    other["title"] = json!("Search is down");
    other["service"] = json!("search");
    crate::outage::send(&w.app, &ingest, other).await;
    let list = w.app.get_json("/api/v1/coes?sort=newest", &admin).await;
    let sev2 = list["coes"][0]["id"].as_str().expect("id").to_owned();
    assert_ne!(sev2, id);
    prepare(&w, &admin, &sev2, "sev2").await;
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            &format!("/api/v1/coes/{sev2}/submit"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    let (status, doc) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{sev2}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved", "{doc}");
}

/// The coverage audit lists the COEs approved without the bar raiser their severity
/// needed (issue 51, item 4): a sev1 approved while nobody was marked bar raiser is
/// counted and marked, a sev1 approved by its bar raiser too is not.
#[tokio::test]
async fn the_coverage_audit_names_coes_approved_without_the_bar_raiser_they_needed() {
    let w = crate::actions::World::new().await;
    let admin = w.app.admin_token();
    for (email, team) in [
        ("owner@example.com", "payments"),
        ("reviewer@example.com", "search"),
    ] {
        let (status, _) = w
            .send(
                &admin,
                "PUT",
                &format!("/api/v1/people/{email}"),
                None,
                Some(json!({ "team": team })),
            )
            .await;
        assert_eq!(status, 200);
    }
    // Nobody is marked bar raiser: the reviewer alone approves it.
    let (alone, _) = crate::mechanism::submitted_sev1(&w).await;
    let (status, doc) = w
        .send(
            &w.reviewer,
            "POST",
            &format!("/api/v1/coes/{alone}/approve"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["state"], "approved", "{doc}");
    // Now someone is: the next sev1 gets a bar raiser, and both approve it.
    let (status, _) = w
        .send(
            &admin,
            "PUT",
            "/api/v1/people/di@example.com",
            None,
            Some(json!({"team": "search", "bar_raiser": true})),
        )
        .await;
    assert_eq!(status, 200);
    let (raised, doc) = crate::mechanism::submitted_sev1(&w).await;
    assert_eq!(doc["bar_raiser"], "di@example.com", "{doc}");
    let di = person_token(&w.app, "di", "di@example.com");
    for token in [&w.reviewer, &di] {
        let (status, doc) = w
            .send(
                token,
                "POST",
                &format!("/api/v1/coes/{raised}/approve"),
                None,
                None,
            )
            .await;
        assert_eq!(status, 200, "{doc}");
    }

    let stats = w.app.get_json("/api/v1/stats", &admin).await;
    let overall = &stats["coverage"]["overall"];
    assert_eq!(overall["approved_without_bar_raiser"], 1, "{overall}");
    let approved = overall["approved"].as_array().expect("approved");
    let flag = |id: &str| {
        approved
            .iter()
            .find(|a| a["coe_id"] == id)
            .map(|a| a["without_bar_raiser"].clone())
    };
    assert_eq!(flag(&alone), Some(json!(true)), "{overall}");
    assert_eq!(flag(&raised), Some(json!(false)), "{overall}");

    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = get_page(&w.app, "/dashboard", Some(&cookie))
        .await
        .text()
        .await
        .expect("html");
    let coverage = &html[html.find("id=\"cov-approved\"").expect("the approved list")..];
    let row = |id: &str| {
        let at = coverage
            .find(&format!("/coes/{id}"))
            .unwrap_or_else(|| panic!("{id} not listed: {coverage}"));
        let end = coverage[at..]
            .find("</tr>")
            .map_or(coverage.len(), |e| at + e);
        coverage[at..end].to_owned()
    };
    assert!(row(&alone).contains("needed, none"), "{}", row(&alone));
    assert!(!row(&raised).contains("needed, none"), "{}", row(&raised));
    assert!(
        html.contains("Approved without the bar raiser needed"),
        "the audit's table has the column"
    );
}
