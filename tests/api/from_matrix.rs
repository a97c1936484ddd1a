//! Working from Matrix, against the real Synapse (`tests/matrix/`): people in the room
//! report, add a follow-up, list their work, mark done with evidence, move a due date
//! and verify with commands, replies and reactions; coe's bot answers in the room;
//! each refusal is said there and changes nothing; a re-read does nothing twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use coe::config::{ChannelSettings, ChatEvent, ChatKind};
use serde_json::{json, Value};

use crate::chat::Synapse;
use crate::eventually::eventually_async;
use crate::helpers::TestApp;

const BOT: &str = "@bot:localhost";

struct Room<'a> {
    app: &'a TestApp,
    synapse: &'a Synapse,
    n: AtomicUsize,
}

fn segment(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Room<'_> {
    fn token(&self, who: &str) -> String {
        self.synapse
            .members
            .get(who)
            .cloned()
            .unwrap_or_else(|| panic!("{who} is a member"))
    }

    /// `who` sends `content` of type `kind` to `room`; its event id.
    async fn send_to(&self, room: &str, who: &str, kind: &str, content: Value) -> String {
        let n = self.n.fetch_add(1, Ordering::Relaxed);
        let sent: Value = reqwest::Client::new()
            .put(format!(
                "{}/_matrix/client/v3/rooms/{}/send/{kind}/t{n}",
                self.synapse.base,
                segment(room)
            ))
            .bearer_auth(self.token(who))
            .json(&content)
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        sent["event_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{sent}"))
            .to_owned()
    }

    async fn say(&self, who: &str, body: &str) -> String {
        let room = self.synapse.room_id.clone();
        self.send_to(
            &room,
            who,
            "m.room.message",
            json!({"msgtype": "m.text", "body": body}),
        )
        .await
    }

    async fn reply(&self, who: &str, to: &str, body: &str) -> String {
        let room = self.synapse.room_id.clone();
        self.send_to(
            &room,
            who,
            "m.room.message",
            json!({"msgtype": "m.text", "body": body,
                   "m.relates_to": {"m.in_reply_to": {"event_id": to}}}),
        )
        .await
    }

    async fn react(&self, who: &str, to: &str, key: &str) -> String {
        let room = self.synapse.room_id.clone();
        self.send_to(
            &room,
            who,
            "m.reaction",
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": to, "key": key}}),
        )
        .await
    }

    /// One read of the rooms by coe, as its job does (no waiting).
    async fn pass(&self) -> coe::services::from_chat::matrix::Heard {
        let (pool, runtime, metrics) = (
            self.app.pool.clone(),
            self.app.runtime.clone(),
            self.app.metrics.clone(),
        );
        tokio::task::spawn_blocking(move || {
            coe::jobs::matrix::pass(&pool, &runtime, &metrics, Duration::ZERO)
        })
        .await
        .expect("the pass")
    }

    /// The room's messages, oldest first, as owner@ reads them.
    async fn messages_in(&self, room: &str) -> Vec<Value> {
        let page: Value = reqwest::Client::new()
            .get(format!(
                "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=500",
                self.synapse.base,
                segment(room)
            ))
            .bearer_auth(self.token("owner"))
            .send()
            .await
            .expect("read")
            .json()
            .await
            .expect("JSON");
        let mut events: Vec<Value> = page["chunk"].as_array().cloned().unwrap_or_default();
        events.retain(|e| e["type"] == "m.room.message");
        events.reverse();
        events
    }

    /// coe's answers to event `to`, once coe has read the room and said at least `n`.
    async fn answers(&self, to: &str, n: usize) -> Vec<Value> {
        let room = self.synapse.room_id.clone();
        eventually_async(
            Duration::from_secs(30),
            &format!("coe answers {to}"),
            || {
                let room = room.clone();
                async move {
                    let heard = self.pass().await;
                    assert!(heard.failures.is_empty(), "{:?}", heard.failures);
                    let said: Vec<Value> = self
                        .messages_in(&room)
                        .await
                        .into_iter()
                        .filter(|m| m["sender"] == BOT)
                        .filter(|m| m["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == to)
                        .collect();
                    (said.len() >= n).then_some(said)
                }
            },
        )
        .await
    }

    async fn answer(&self, to: &str) -> (String, Value) {
        let said = self.answers(to, 1).await;
        assert_eq!(said.len(), 1, "one answer: {said:?}");
        (
            said[0]["content"]["body"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            said[0].clone(),
        )
    }
}

/// Where coe's bot stands in its rooms.
fn position(app: &TestApp) -> String {
    use coe::db::schema::chat_cursors;
    use diesel::prelude::*;
    let mut conn = app.pool.get().expect("conn");
    chat_cursors::table
        .select(chat_cursors::position)
        .first(&mut conn)
        .expect("a position kept")
}

async fn count_coes(app: &TestApp, token: &str, title: &str) -> Vec<Value> {
    let listed = app.get_json("/api/v1/coes?limit=100", token).await;
    listed["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .filter(|c| c["title"] == title)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_reported_followed_up_done_and_verified_from_matrix() {
    let synapse = Synapse::start_with(&["owner", "dev", "reviewer", "stranger"]);
    let channel = ChannelSettings {
        name: "incidents-matrix".into(),
        kind: ChatKind::Matrix,
        url: None,
        homeserver: Some(synapse.base.clone()),
        room_id: Some(synapse.room_id.clone()),
        access_token: Some(synapse.bot_token.clone().into()),
        page_id: None,
        api_url: None,
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: Some("example.com".into()),
        app_id: None,
        app_password: None,
        tenant_id: None,
        teams: Vec::new(),
        services: Vec::new(),
        events: vec![ChatEvent::Published],
    };
    let (w, _admin) = crate::attacks::review_world_with(move |s| {
        s.chat.channels = vec![channel];
        s.server.connections_on_loopback = true;
    })
    .await;
    crate::ownership::person(&w.app, "dev@example.com", false).await;
    let (submitted, _) = crate::mechanism::submitted_sev1(&w).await;
    let room = Room {
        app: &w.app,
        synapse: &synapse,
        n: AtomicUsize::new(0),
    };
    // What was said before coe listened is not taken as said to it.
    let early = room
        .say(
            "owner",
            "!coe report Said before coe listened\nseverity: sev1",
        )
        .await;
    let heard = room.pass().await;
    assert!(
        heard.failures.is_empty() && heard.moves.is_empty(),
        "{heard:?}"
    );
    let first_position = position(&w.app);

    // The owner links the room to the COE in review: its review steps are told there.
    let asked = room
        .say(
            "owner",
            &format!("!coe link {}/coes/{submitted}", w.app.address),
        )
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("This room is now linked to the COE"),
        "{said}"
    );
    let (approved, action) = crate::attacks::approve_sev1(&w, submitted).await;
    crate::chat::deliver_with(&w.app, w.app.runtime.env());
    let told = room.messages_in(&synapse.room_id).await;
    assert!(
        told.iter().any(|m| m["sender"] == BOT
            && m["content"]["body"]
                .as_str()
                .unwrap_or_default()
                .contains("COE approved")),
        "the linked room hears the COE approved: {told:?}"
    );

    // Someone the directory does not know is told so; nothing changes.
    let asked = room.say("stranger", "!coe mine").await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("not in coe's directory as stranger@example.com"),
        "{said}"
    );
    assert!(said.contains("ask an admin"), "{said}");

    // A report without its severity is refused in words; nothing filed.
    let title = "Checkout answers 502 to card payments";
    let asked = room
        .say(
            "owner",
            &format!("!coe report {title}\nservice: checkout\nstarted: banana"),
        )
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("the start:") && said.contains("Nothing was changed"),
        "{said}"
    );
    let asked = room
        .say("owner", &format!("!coe report {title}\nservice: checkout"))
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("severity") && said.contains("Nothing was changed"),
        "{said}"
    );
    assert!(count_coes(&w.app, &w.owner, title).await.is_empty());
    // With it: reported, the COE opened, the room linked to it.
    let started = (chrono::Utc::now() - chrono::Duration::minutes(30)).format("%Y-%m-%d %H:%M");
    let reported = room
        .say(
            "owner",
            &format!("!coe report {title} | service: checkout | severity: sev2 | started: {started} | customers saw: Card payments failed."),
        )
        .await;
    let (said, _) = room.answer(&reported).await;
    assert!(
        said.contains("owner@example.com reported a failure: Checkout answers 502"),
        "{said}"
    );
    let coes = count_coes(&w.app, &w.owner, title).await;
    assert_eq!(coes.len(), 1, "{coes:?}");
    let coe = coes[0]["id"].as_str().expect("id").to_owned();
    assert!(said.contains(&format!("/coes/{coe}")), "{said}");
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}/history"), &w.owner)
        .await;
    assert!(
        history["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .any(|h| h["via"] == "matrix"),
        "the report is in the history as from Matrix: {history}"
    );
    assert!(count_coes(&w.app, &w.owner, "Said before coe listened")
        .await
        .is_empty());
    let _ = early;

    // A follow-up in the linked room: the owner as a Matrix user of the homeserver.
    let due = (chrono::Utc::now() + chrono::Duration::days(20)).date_naive();
    let asked = room
        .say(
            "owner",
            &format!("!coe follow-up Page on checkout's 5xx rate\nowner: @dev:localhost\ndue: {due}\npriority: high\nkind: detect\ndone when: a 5xx burst pages within 5 minutes"),
        )
        .await;
    let (said, added) = room.answer(&asked).await;
    assert!(
        said.contains("Added Page on checkout's 5xx rate, owned by dev@example.com"),
        "{said}"
    );
    let new_action = added["content"]["io.coe"]["action"]
        .as_str()
        .expect("about the action")
        .to_owned();
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{new_action}"), &w.owner)
        .await;
    assert_eq!(a["coe_id"], coe.as_str(), "{a}");
    assert_eq!(a["owner"], "dev@example.com", "{a}");
    // An owner of another homeserver is refused.
    let asked = room
        .say(
            "owner",
            "!coe follow-up Another\nowner: @dev:evil.example\ndue: 2099-01-01",
        )
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("is not of this homeserver") && said.contains("Nothing was changed"),
        "{said}"
    );

    // dev@'s work: one message per action, each to reply to.
    let asked = room.say("dev", "!coe mine").await;
    let said = room.answers(&asked, 3).await;
    let summary = said[0]["content"]["body"].as_str().unwrap_or_default();
    assert!(
        summary.contains("What waits on dev@example.com"),
        "{summary}"
    );
    let item = said
        .iter()
        .find(|m| m["content"]["io.coe"]["action"] == action.as_str())
        .unwrap_or_else(|| panic!("a message about {action}: {said:?}"));
    let item_id = item["event_id"].as_str().expect("id").to_owned();
    assert!(
        item["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Validate config in CI"),
        "{item}"
    );

    // Done without evidence: refused, nothing changed.
    let asked = room.reply("dev", &item_id, "done").await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("what was done:") && said.contains("Nothing was changed"),
        "{said}"
    );
    let asked = room
        .reply("dev", &item_id, "done: fixed it, trust me")
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("the evidence link") && said.contains("Nothing was changed"),
        "{said}"
    );
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(a["state"], "open", "{a}");
    // The same due date is no move; a new one with a reason is.
    let current = a["due_date"].as_str().expect("due").to_owned();
    let asked = room
        .reply("dev", &item_id, &format!("due {current} same"))
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains("already") && said.contains("Nothing was changed"),
        "{said}"
    );
    let later = (chrono::Utc::now() + chrono::Duration::days(40)).date_naive();
    let asked = room
        .reply(
            "dev",
            &item_id,
            &format!("due {later} the vendor ships the fix that week"),
        )
        .await;
    let (said, _) = room.answer(&asked).await;
    assert!(
        said.contains(&format!("now due {later}, moved by dev@example.com")),
        "{said}"
    );
    // Words coe does not know: it says what it knows.
    let asked = room.reply("dev", &item_id, "thanks coe").await;
    let (said, _) = room.answer(&asked).await;
    assert!(said.contains("Reply to this message with"), "{said}");
    // Done with what was done and the evidence.
    let marked = room
        .reply(
            "dev",
            &item_id,
            "done: CI validates the config now https://git.example.com/ci/pull/7",
        )
        .await;
    let (said, _) = room.answer(&marked).await;
    assert!(said.contains("marked done by dev@example.com"), "{said}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(a["state"], "done", "{a}");
    assert_eq!(
        a["evidence_url"], "https://git.example.com/ci/pull/7",
        "{a}"
    );

    // The reviewer's list asks to verify it; dev@ reacting ✅ is refused (not the reviewer).
    let asked = room.say("reviewer", "!coe mine").await;
    let said = room.answers(&asked, 2).await;
    let verify = said
        .iter()
        .find(|m| m["content"]["io.coe"]["action"] == action.as_str())
        .unwrap_or_else(|| panic!("a message to verify {action}: {said:?}"));
    let verify_id = verify["event_id"].as_str().expect("id").to_owned();
    assert!(
        verify["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Verify"),
        "{verify}"
    );
    let wrong = room.react("dev", &verify_id, "✅").await;
    let (said, _) = room.answer(&wrong).await;
    assert!(said.contains("Nothing was changed"), "{said}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(a["state"], "done", "still waiting: {a}");
    // The reviewer's ✅ verifies it, and the approved COE closes.
    let verified = room.react("reviewer", &verify_id, "✅").await;
    let (said, _) = room.answer(&verified).await;
    assert!(said.contains("verified by reviewer@example.com"), "{said}");
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{approved}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed", "{doc}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    let steps = a.to_string();
    assert!(
        steps.contains("\"via\":\"matrix\""),
        "marked done from Matrix, in its history: {a}"
    );
    let cookie = crate::pages::sign_in(&w.app, "owner@example.com").await;
    let page = crate::pages::get_page(&w.app, &format!("/actions/{action}"), Some(&cookie))
        .await
        .text()
        .await
        .expect("page");
    assert!(
        page.contains("from Matrix"),
        "the action's steps say so: {page}"
    );

    // Invited to an incident room by someone in the directory, coe joins; !coe link.
    let created: Value = reqwest::Client::new()
        .post(format!("{}/_matrix/client/v3/createRoom", synapse.base))
        .bearer_auth(room.token("owner"))
        .json(&json!({"preset": "private_chat", "name": "inc-2", "invite": [BOT]}))
        .send()
        .await
        .expect("created")
        .json()
        .await
        .expect("JSON");
    let incident_room = created["room_id"].as_str().expect("room").to_owned();
    let asked = eventually_async(
        Duration::from_secs(30),
        "coe joins the room it was invited to",
        || {
            let incident_room = incident_room.clone();
            let room = &room;
            async move {
                room.pass().await;
                let members: Value = reqwest::Client::new()
                    .get(format!(
                        "{}/_matrix/client/v3/rooms/{}/joined_members",
                        room.synapse.base,
                        segment(&incident_room)
                    ))
                    .bearer_auth(room.token("owner"))
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                members["joined"].get(BOT).map(|_| ())
            }
        },
    )
    .await;
    let () = asked;
    let link = room
        .send_to(
            &incident_room,
            "owner",
            "m.room.message",
            json!({"msgtype": "m.text", "body": format!("!coe link {}/coes/{coe}", w.app.address)}),
        )
        .await;
    let said = eventually_async(Duration::from_secs(30), "coe links the room", || {
        let (incident_room, link) = (incident_room.clone(), link.clone());
        let room = &room;
        async move {
            room.pass().await;
            room.messages_in(&incident_room)
                .await
                .into_iter()
                .find(|m| {
                    m["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == link.as_str()
                })
        }
    })
    .await;
    assert!(
        said["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("now linked to the COE Checkout answers 502"),
        "{said}"
    );

    // Each move counted.
    let metrics = w
        .app
        .client
        .get(w.app.url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for line in [
        r#"coe_chat_moves_total{platform="matrix",move="report",outcome="done"} 1"#,
        r#"coe_chat_moves_total{platform="matrix",move="report",outcome="refused"} 2"#,
        r#"coe_chat_moves_total{platform="matrix",move="done",outcome="done"} 1"#,
        r#"coe_chat_moves_total{platform="matrix",move="verify",outcome="refused"} 1"#,
        r#"coe_chat_moves_total{platform="matrix",move="verify",outcome="done"} 1"#,
        r#"coe_chat_moves_total{platform="matrix",move="mine",outcome="not_in_directory"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }

    // Read again from where coe first stood (a restart that lost its place, another
    // replica): nothing is done twice, nothing said twice.
    let before = room.messages_in(&synapse.room_id).await.len();
    {
        use coe::db::schema::chat_cursors;
        use diesel::prelude::*;
        let mut conn = w.app.pool.get().expect("conn");
        diesel::update(chat_cursors::table)
            .set(chat_cursors::position.eq(&first_position))
            .execute(&mut conn)
            .expect("put back");
    }
    let heard = room.pass().await;
    assert!(heard.failures.is_empty(), "{heard:?}");
    assert!(!heard.moves.is_empty(), "read again: {heard:?}");
    assert!(
        heard.moves.iter().all(|(_, outcome)| *outcome != "done"),
        "nothing made twice: {heard:?}"
    );
    assert_ne!(position(&w.app), first_position);
    assert_eq!(count_coes(&w.app, &w.owner, title).await.len(), 1);
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{approved}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed");
    assert_eq!(
        room.messages_in(&synapse.room_id).await.len(),
        before,
        "nothing said twice"
    );
}
