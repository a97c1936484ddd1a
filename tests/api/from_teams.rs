//! Working from Microsoft Teams: a loopback Bot Framework (OpenID metadata and keys,
//! the token endpoint, the Bot Connector's members and activities, as published:
//! tests/fixtures/teams/README.md) posts activities signed as the Bot Connector signs
//! them; people report, add a follow-up, list their work, mark done with evidence and
//! verify from cards; each refusal is said in Teams and changes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use coe::config::{ChannelSettings, ChatEvent, ChatKind};
use serde_json::{json, Value};

use crate::actions::World;
use crate::eventually::eventually_async;

const APP_ID: &str = "6f6b1c1e-0000-4000-8000-00000000c0e0";
const APP_PASSWORD: &str = "bot-client-secret";
const CHANNEL: &str = "19:incident@thread.tacv2";

/// What the loopback Bot Framework was asked.
#[derive(Default)]
struct Framework {
    /// Replies, in order: (the activity answered, what was said).
    replies: Mutex<Vec<(String, Value)>>,
    /// Cards changed: (the message, what it became).
    updates: Mutex<Vec<(String, Value)>>,
    tokens: Mutex<usize>,
    keys: Mutex<Value>,
    /// The Graph paths read.
    read: Mutex<Vec<String>>,
}

/// Teams members and the email Teams gives for them.
fn member(id: &str) -> Option<Value> {
    let email = match id {
        "29:owner" => "owner@example.com",
        "29:dev" => "dev@example.com",
        "29:reviewer" => "reviewer@example.com",
        "29:stranger" => "someone@elsewhere.example.org",
        "29:nomail" => return Some(json!({"id": id, "name": "No Mail"})),
        _ => return None,
    };
    Some(
        json!({"id": id, "name": email, "aadObjectId": format!("aad-{id}"), "email": email,
                "userPrincipalName": email, "tenantId": "tenant-1"}),
    )
}

async fn framework(
    req: HttpRequest,
    body: web::Bytes,
    asked: web::Data<Arc<Framework>>,
) -> HttpResponse {
    let path = req.path().to_owned();
    let base = format!("http://{}", req.connection_info().host());
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    match (req.method().as_str(), path.as_str()) {
        ("GET", "/v1/.well-known/openidconfiguration") => HttpResponse::Ok().json(json!({
            "issuer": "https://api.botframework.com",
            "authorization_endpoint": "https://invalid.botframework.com",
            "jwks_uri": format!("{base}/v1/.well-known/keys"),
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["private_key_jwt"]
        })),
        ("GET", "/v1/.well-known/keys") => {
            HttpResponse::Ok().json(asked.keys.lock().unwrap().clone())
        }
        ("POST", "/tenant-1/oauth2/v2.0/token") => {
            let form: Vec<(String, String)> =
                serde_urlencoded::from_bytes(&body).unwrap_or_default();
            let has = |k: &str, v: &str| form.iter().any(|(a, b)| a == k && b == v);
            if !(has("grant_type", "client_credentials")
                && has("client_id", APP_ID)
                && has("client_secret", APP_PASSWORD)
                && (has("scope", "https://api.botframework.com/.default")
                    || has("scope", "https://graph.microsoft.com/.default")))
            {
                return HttpResponse::BadRequest().json(json!({"error": "invalid_client"}));
            }
            *asked.tokens.lock().unwrap() += 1;
            let token = if has("scope", "https://graph.microsoft.com/.default") {
                "graph-token"
            } else {
                "bot-token"
            };
            HttpResponse::Ok().json(json!({"token_type": "Bearer", "expires_in": 3599,
                                           "ext_expires_in": 3599, "access_token": token}))
        }
        ("GET", p) if p.starts_with("/graph/v1.0/teams/") => {
            if bearer != "Bearer graph-token" {
                return HttpResponse::Unauthorized()
                    .json(json!({"error": {"code": "InvalidAuthenticationToken"}}));
            }
            asked.read.lock().unwrap().push(
                percent_encoding::percent_decode_str(p)
                    .decode_utf8_lossy()
                    .into_owned(),
            );
            let at = |minutes: i64| {
                (chrono::Utc::now() - chrono::Duration::minutes(minutes)).to_rfc3339()
            };
            HttpResponse::Ok().json(json!({
                "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#teams('g1')/channels('19%3Aincident%40thread.tacv2')/messages",
                "value": [
                    {"id": "1", "messageType": "message", "createdDateTime": at(10), "deletedDateTime": null,
                     "from": {"user": {"id": "u1", "displayName": "Ana Owner"}, "application": null},
                     "body": {"contentType": "html", "content": "<p>Rolled back <b>checkout</b> 1.42</p>"},
                     "replies": [
                        {"id": "2", "messageType": "message", "createdDateTime": at(8), "deletedDateTime": null,
                         "from": {"user": {"id": "u2", "displayName": "Dev One"}}, "body": {"contentType": "text", "content": "502s are gone"}}
                     ]},
                    {"id": "3", "messageType": "systemEventMessage", "createdDateTime": at(9),
                     "from": null, "body": {"contentType": "html", "content": "<systemEventMessage/>"}},
                    {"id": "4", "messageType": "message", "createdDateTime": at(7),
                     "from": {"user": null, "application": {"id": "a", "displayName": "coe"}},
                     "body": {"contentType": "html", "content": "a notice"}},
                    {"id": "5", "messageType": "message", "createdDateTime": at(6), "deletedDateTime": at(5),
                     "from": {"user": {"id": "u1", "displayName": "Ana Owner"}}, "body": {"contentType": "html", "content": ""}}
                ]
            }))
        }
        ("GET", p) if p.starts_with("/teams/v3/teams/") => {
            if bearer != "Bearer bot-token" {
                return HttpResponse::Unauthorized().finish();
            }
            let team = percent_encoding::percent_decode_str(&p["/teams/v3/teams/".len()..])
                .decode_utf8_lossy()
                .into_owned();
            HttpResponse::Ok().json(json!({"id": team, "name": "Checkout", "aadGroupId": "g1"}))
        }
        _ if path.starts_with("/teams/v3/conversations/") => {
            if bearer != "Bearer bot-token" {
                return HttpResponse::Unauthorized()
                    .json(json!({"message": "Authorization has been denied for this request."}));
            }
            let rest = &path["/teams/v3/conversations/".len()..];
            let parts: Vec<String> = rest
                .split('/')
                .map(|p| {
                    percent_encoding::percent_decode_str(p)
                        .decode_utf8_lossy()
                        .into_owned()
                })
                .collect();
            match (req.method().as_str(), parts.get(1).map(String::as_str)) {
                ("GET", Some("members")) => match member(&parts[2]) {
                    Some(m) => HttpResponse::Ok().json(m),
                    None => HttpResponse::NotFound()
                        .json(json!({"error": {"code": "MemberNotFoundInConversation"}})),
                },
                ("POST", Some("activities")) => {
                    let said: Value = serde_json::from_slice(&body).expect("JSON");
                    let mut replies = asked.replies.lock().unwrap();
                    replies.push((parts[2].clone(), said));
                    HttpResponse::Ok().json(json!({"id": format!("reply-{}", replies.len())}))
                }
                ("PUT", Some("activities")) => {
                    let said: Value = serde_json::from_slice(&body).expect("JSON");
                    asked.updates.lock().unwrap().push((parts[2].clone(), said));
                    HttpResponse::Ok().json(json!({"id": parts[2]}))
                }
                _ => HttpResponse::NotFound().finish(),
            }
        }
        _ => HttpResponse::NotFound().finish(),
    }
}

/// An RSA key made for this run: its PEM, and its public half as a JWKS.
fn signing_key() -> (Vec<u8>, Value) {
    let dir = tempfile::tempdir().expect("a folder");
    let pem = dir.path().join("key.pem");
    let made = std::process::Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&pem)
        .arg("2048")
        .output()
        .expect("openssl runs (scripts/setup)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let modulus = std::process::Command::new("openssl")
        .args(["rsa", "-noout", "-modulus", "-in"])
        .arg(&pem)
        .output()
        .expect("openssl");
    let hexed = String::from_utf8_lossy(&modulus.stdout);
    let n = hex::decode(hexed.trim().trim_start_matches("Modulus=")).expect("hex");
    use base64::Engine as _;
    let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(n);
    let keys = json!({"keys": [
        {"kty": "RSA", "use": "sig", "kid": "k1", "n": n, "e": "AQAB", "endorsements": ["msteams", "skype"]},
        {"kty": "RSA", "use": "sig", "kid": "k3", "n": n, "e": "AQAB"}
    ]});
    (std::fs::read(&pem).expect("pem"), keys)
}

struct Teams<'a> {
    w: &'a World,
    base: String,
    asked: Arc<Framework>,
    pem: Vec<u8>,
    n: Mutex<usize>,
}

impl Teams<'_> {
    fn token(&self, claims: Value, kid: &str) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(kid.into());
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(&self.pem).expect("key");
        jsonwebtoken::encode(&header, &claims, &key).expect("signed")
    }

    fn claims(&self) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({"iss": "https://api.botframework.com", "aud": APP_ID, "nbf": now - 10,
               "exp": now + 3600, "serviceurl": format!("{}/teams/", self.base)})
    }

    fn activity(
        &self,
        from: &str,
        text: Option<&str>,
        value: Option<Value>,
        conversation: &str,
    ) -> Value {
        let mut n = self.n.lock().unwrap();
        *n += 1;
        let channel = conversation.starts_with("19:");
        let mut a = json!({
            "type": "message", "id": format!("17{:011}", *n), "timestamp": "2026-12-07T10:00:00Z",
            "serviceUrl": format!("{}/teams/", self.base), "channelId": "msteams",
            "from": {"id": from, "aadObjectId": format!("aad-{from}")},
            "conversation": {"id": if channel { format!("{conversation};messageid=1") } else { conversation.to_owned() },
                             "conversationType": if channel { "channel" } else { "personal" }, "tenantId": "tenant-1"},
            "recipient": {"id": format!("28:{APP_ID}"), "name": "coe"},
            "channelData": if channel { json!({"teamsChannelId": conversation, "team": {"id": "19:team@thread.tacv2"}, "tenant": {"id": "tenant-1"}}) } else { json!({"tenant": {"id": "tenant-1"}}) },
        });
        if let Some(text) = text {
            a["text"] = json!(format!("<at>coe</at> {text}"));
        }
        if let Some(value) = value {
            a["value"] = value;
            a["replyToId"] = json!("card-1");
        }
        a
    }

    async fn post(&self, activity: &Value, token: Option<&str>) -> (u16, Value) {
        let mut req = self
            .w
            .app
            .client
            .post(self.w.app.url("/chat/teams/messages"))
            .json(activity);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.expect("posted");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    fn replies_to(&self, id: &str) -> Vec<Value> {
        self.asked
            .replies
            .lock()
            .unwrap()
            .iter()
            .filter(|(to, _)| to == id)
            .map(|(_, said)| said.clone())
            .collect()
    }

    /// Posts `activity` signed as the Bot Connector signs; what coe answered it with
    /// (coe answers after the activity is taken: waited for).
    async fn send(&self, activity: &Value) -> Vec<Value> {
        let token = self.token(self.claims(), "k1");
        let (status, said) = self.post(activity, Some(&token)).await;
        assert_eq!(status, 200, "{said}");
        let id = activity["id"].as_str().unwrap().to_owned();
        eventually_async(Duration::from_secs(10), "coe answers in Teams", || {
            let said = self.replies_to(&id);
            async move { (!said.is_empty()).then_some(said) }
        })
        .await
    }

    /// Posts `activity`, which is to be answered with nothing: what it was answered
    /// with once a later command's answer has come.
    async fn send_unanswered(&self, activity: &Value) -> Vec<Value> {
        let token = self.token(self.claims(), "k1");
        let (status, said) = self.post(activity, Some(&token)).await;
        assert_eq!(status, 200, "{said}");
        self.say("29:owner", "help", "a:personal-chat").await;
        self.replies_to(activity["id"].as_str().unwrap())
    }

    async fn say(&self, from: &str, text: &str, conversation: &str) -> Value {
        let activity = self.activity(from, Some(text), None, conversation);
        let said = self.send(&activity).await;
        assert_eq!(said.len(), 1, "one answer to {text}: {said:?}");
        said[0].clone()
    }

    async fn press(&self, from: &str, value: Value) -> (Value, Value) {
        let activity = self.activity(from, None, Some(value), "a:personal-chat");
        let said = self.send(&activity).await;
        assert_eq!(said.len(), 1, "one answer: {said:?}");
        (said[0].clone(), activity)
    }
}

fn words(v: &Value) -> String {
    v.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_reported_followed_up_done_and_verified_from_teams() {
    let asked = Arc::new(Framework::default());
    let (pem, keys) = signing_key();
    *asked.keys.lock().unwrap() = keys;
    let data = web::Data::new(asked.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(framework))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let base = format!("http://127.0.0.1:{}", server.addrs()[0].port());
    tokio::spawn(server.run());
    let channel = ChannelSettings {
        name: "incidents-teams".into(),
        kind: ChatKind::Teams,
        url: Some(format!("{base}/workflow/unused").into()),
        homeserver: None,
        room_id: None,
        access_token: None,
        page_id: None,
        api_url: Some(base.clone()),
        read_token: None,
        read_channel: None,
        signing_secret: None,
        people_domain: None,
        app_id: Some(APP_ID.into()),
        app_password: Some(APP_PASSWORD.to_owned().into()),
        tenant_id: Some("tenant-1".into()),
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
    let (approved, action) = crate::attacks::approved_sev1(&w).await;
    let teams = Teams {
        w: &w,
        base: base.clone(),
        asked: asked.clone(),
        pem,
        n: Mutex::new(0),
    };

    // Only the Bot Connector's token is taken: none, another audience, expired, issued
    // for another serviceUrl, signed by a key not published.
    let mine = teams.activity("29:owner", Some("mine"), None, "a:personal-chat");
    let (status, said) = teams.post(&mine, None).await;
    assert_eq!(status, 401, "{said}");
    let mut other = teams.claims();
    other["aud"] = json!("another-bot");
    let mut expired = teams.claims();
    expired["exp"] = json!(chrono::Utc::now().timestamp() - 3600);
    expired["nbf"] = json!(chrono::Utc::now().timestamp() - 7200);
    let mut elsewhere = teams.claims();
    elsewhere["serviceurl"] = json!("https://smba.evil.example/");
    let mut early = teams.claims();
    early["nbf"] = json!(chrono::Utc::now().timestamp() + 3600);
    for (claims, kid) in [
        (other, "k1"),
        (expired, "k1"),
        (elsewhere, "k1"),
        (early, "k1"),
        (teams.claims(), "k2"),
        (teams.claims(), "k3"),
    ] {
        let token = teams.token(claims, kid);
        let (status, said) = teams.post(&mine, Some(&token)).await;
        assert_eq!(status, 401, "{said}");
        assert_eq!(said["error"]["code"], "unauthorized", "{said}");
    }
    // Another channel of the same bot (Web Chat, Direct Line: their users name
    // themselves) is not Teams.
    let mut webchat = mine.clone();
    webchat["channelId"] = json!("webchat");
    let token = teams.token(teams.claims(), "k1");
    let (status, said) = teams.post(&webchat, Some(&token)).await;
    assert_eq!(status, 401, "{said}");
    assert!(asked.replies.lock().unwrap().is_empty(), "nothing answered");
    // Malformed: not JSON, no type.
    let token = teams.token(teams.claims(), "k1");
    let res = w
        .app
        .client
        .post(w.app.url("/chat/teams/messages"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("sent");
    assert_eq!(res.status(), 400);

    // Someone the directory does not know, or whose email Teams does not give: told.
    let said = teams.say("29:stranger", "mine", "a:personal-chat").await;
    assert!(
        words(&said).contains("not in coe's directory as someone@elsewhere.example.org"),
        "{said}"
    );
    let said = teams.say("29:nomail", "mine", "a:personal-chat").await;
    assert!(words(&said).contains("ask an admin"), "{said}");
    // Another tenant's member (a shared channel, an external chat) changes nothing.
    let mut outsider = teams.activity("29:owner", Some("mine"), None, "a:personal-chat");
    outsider["channelData"]["tenant"]["id"] = json!("tenant-elsewhere");
    let said = teams.send(&outsider).await;
    assert!(
        words(&said[0]).contains("Microsoft tenant only"),
        "{said:?}"
    );
    // A person's list is not shown to a channel.
    let said = teams.say("29:owner", "mine", CHANNEL).await;
    assert!(words(&said).contains("yours alone"), "{said}");
    // A command delivered again is answered once.
    let again = teams.activity("29:owner", Some("help"), None, "a:personal-chat");
    teams.send(&again).await;
    assert_eq!(
        teams.send_unanswered(&again).await.len(),
        1,
        "answered once"
    );

    // "report" in the incident channel: the form; submitted without severity, refused.
    let said = teams.say("29:owner", "report", CHANNEL).await;
    assert_eq!(
        said["attachments"][0]["contentType"], "application/vnd.microsoft.card.adaptive",
        "{said}"
    );
    assert!(words(&said).contains("Report a failure"), "{said}");
    let title = "Checkout answers 502 to card payments";
    let started = chrono::Utc::now() - chrono::Duration::hours(1);
    let form = |severity: Option<&str>| {
        let mut v = json!({"coe": "report", "title": title, "service": "checkout",
                           "started_date": started.date_naive().to_string(),
            "started_time": started.format("%H:%M").to_string(),
                           "customers_saw": "Card payments failed."});
        if let Some(s) = severity {
            v["severity"] = json!(s);
        }
        v
    };
    let refused = teams.activity("29:owner", None, Some(form(None)), CHANNEL);
    let said = teams.send(&refused).await;
    assert!(
        words(&said[0]).contains("severity") && words(&said[0]).contains("Nothing was changed"),
        "{said:?}"
    );
    let reported = teams.activity("29:owner", None, Some(form(Some("sev2"))), CHANNEL);
    let said = teams.send(&reported).await;
    assert!(
        words(&said[0]).contains("owner@example.com reported a failure"),
        "{said:?}"
    );
    // Teams delivering it again files nothing twice.
    let said = teams.send_unanswered(&reported).await;
    assert_eq!(said.len(), 1, "answered once: {said:?}");
    let listed = w.app.get_json("/api/v1/coes?limit=100", &w.owner).await;
    let coes: Vec<&Value> = listed["coes"]
        .as_array()
        .expect("coes")
        .iter()
        .filter(|c| c["title"] == title)
        .collect();
    assert_eq!(coes.len(), 1, "{listed}");
    let coe = coes[0]["id"].as_str().expect("id").to_owned();
    let history = w
        .app
        .get_json(&format!("/api/v1/coes/{coe}/history"), &w.owner)
        .await;
    assert!(words(&history).contains("\"via\":\"teams\""), "{history}");

    // "Import from chat" reads the linked channel through Microsoft Graph: people's
    // messages and replies, not the system's, a bot's or a deleted one.
    let read = w
        .app
        .get_json(
            &format!("/api/v1/coes/{coe}/chat-messages?channel=incidents-teams"),
            &w.owner,
        )
        .await;
    assert_eq!(
        *asked.read.lock().unwrap(),
        vec![format!("/graph/v1.0/teams/g1/channels/{CHANNEL}/messages")]
    );
    let shown = words(&read);
    assert!(
        shown.contains("Rolled back checkout 1.42") && shown.contains("502s are gone"),
        "{read}"
    );
    assert!(
        shown.contains("Ana Owner")
            && !shown.contains("a notice")
            && !shown.contains("systemEventMessage"),
        "{read}"
    );

    // "follow-up" in the linked channel: the form, then the action added.
    let said = teams.say("29:owner", "follow-up", CHANNEL).await;
    assert!(
        words(&said).contains(&format!("\"coe_id\":\"{coe}\"")),
        "{said}"
    );
    let due = (chrono::Utc::now() + chrono::Duration::days(20))
        .date_naive()
        .to_string();
    let (said, _) = teams
        .press(
            "29:owner",
            json!({"coe": "follow_up", "coe_id": coe, "title": "Page on checkout's 5xx rate",
            "owner": "dev@example.com", "due_date": due, "priority": "high", "kind": "detect",
            "success_criteria": "a burst of 5xx pages within 5 minutes"}),
        )
        .await;
    assert!(words(&said).contains("owned by dev@example.com"), "{said}");

    // dev@'s list: a card with the buttons of the action.
    let said = teams.say("29:dev", "mine", "a:personal-chat").await;
    let card = words(&said);
    assert!(
        card.contains("Validate config in CI")
            && card.contains(&format!("\"action\":\"{action}\"")),
        "{card}"
    );
    assert!(
        card.contains("\"coe\":\"done\"") && card.contains("\"coe\":\"move_due\""),
        "{card}"
    );
    let once = card
        .split("\"once\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the card's mark")
        .to_owned();
    // A new date without a reason: refused, nothing changed.
    let later = (chrono::Utc::now() + chrono::Duration::days(40))
        .date_naive()
        .to_string();
    let (said, _) = teams
        .press(
            "29:dev",
            json!({"coe": "move_due", "action": action, "due_date": later, "once": once}),
        )
        .await;
    assert!(words(&said).contains("Nothing was changed"), "{said}");
    // Done without evidence: refused, nothing changed.
    let (said, _) = teams
        .press(
            "29:dev",
            json!({"coe": "done", "action": action, "note": "fixed it"}),
        )
        .await;
    assert!(
        words(&said).contains("the evidence link") && words(&said).contains("Nothing was changed"),
        "{said}"
    );
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert_eq!(a["state"], "open", "{a}");
    // With it: done, and the card says so.
    let (said, _) = teams
        .press(
            "29:dev",
            json!({"coe": "done", "action": action, "note": "CI validates the config",
                                "evidence_url": "https://git.example.com/ci/pull/7", "once": once}),
        )
        .await;
    assert!(
        words(&said).contains("marked done by dev@example.com"),
        "{said}"
    );
    let updated = eventually_async(Duration::from_secs(10), "the card changes", || {
        let last = asked.updates.lock().unwrap().last().cloned();
        async move { last.filter(|(_, said)| said.to_string().contains("marked done")) }
    })
    .await;
    assert_eq!(updated.0, "card-1");
    assert!(
        words(&updated.1).contains("marked done by dev@example.com"),
        "{updated:?}"
    );

    // The same button pressed again: one move.
    let again = teams.activity(
        "29:dev",
        None,
        Some(
            json!({"coe": "done", "action": action, "note": "CI validates the config",
                    "evidence_url": "https://git.example.com/ci/pull/7", "once": once}),
        ),
        "a:personal-chat",
    );
    assert!(
        teams.send_unanswered(&again).await.is_empty(),
        "pressed twice, done once"
    );

    // Verify: not by dev@ (not the reviewer); by the reviewer, and the COE closes.
    let (said, _) = teams
        .press("29:dev", json!({"coe": "verify", "action": action}))
        .await;
    assert!(words(&said).contains("Nothing was changed"), "{said}");
    let said = teams.say("29:reviewer", "mine", "a:personal-chat").await;
    assert!(words(&said).contains("\"coe\":\"verify\""), "{said}");
    let (said, _) = teams
        .press("29:reviewer", json!({"coe": "verify", "action": action}))
        .await;
    assert!(
        words(&said).contains("verified by reviewer@example.com"),
        "{said}"
    );
    let doc = w
        .app
        .get_json(&format!("/api/v1/coes/{approved}"), &w.owner)
        .await;
    assert_eq!(doc["state"], "closed", "{doc}");
    let a = w
        .app
        .get_json(&format!("/api/v1/actions/{action}"), &w.owner)
        .await;
    assert!(words(&a).contains("\"via\":\"teams\""), "{a}");
    assert_eq!(
        *asked.tokens.lock().unwrap(),
        2,
        "one token for the Bot Connector, one for Graph, each kept while it lasts"
    );

    let metrics = w
        .app
        .client
        .get(w.app.url("/metrics"))
        .send()
        .await
        .expect("m")
        .text()
        .await
        .expect("t");
    for line in [
        r#"coe_chat_moves_total{platform="teams",move="activity",outcome="unsigned"} 8"#,
        r#"coe_chat_moves_total{platform="teams",move="report",outcome="done"} 1"#,
        r#"coe_chat_moves_total{platform="teams",move="report",outcome="refused"} 1"#,
        r#"coe_chat_moves_total{platform="teams",move="report",outcome="repeated"} 1"#,
        r#"coe_chat_moves_total{platform="teams",move="done",outcome="done"} 1"#,
        r#"coe_chat_moves_total{platform="teams",move="verify",outcome="refused"} 1"#,
        r#"coe_chat_moves_total{platform="teams",move="verify",outcome="done"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}
