//! Bad input gets a clear JSON error naming the field and the problem, and changes nothing.

use serde_json::json;

use crate::helpers::{error_of, json, spawn_app, spawn_app_with};

async fn token_count(app: &crate::helpers::TestApp, admin: &str) -> usize {
    let res = app.get("/api/v1/tokens", Some(admin)).await;
    assert_eq!(res.status(), 200);
    json(res).await["tokens"].as_array().expect("tokens").len()
}

#[tokio::test]
async fn malformed_json_is_400_naming_line_and_column_and_writes_nothing() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let before = token_count(&app, &admin).await;
    let res = app
        .post_raw(
            "/api/v1/tokens",
            Some(&admin),
            "{\n  \"name\": \"x\",\n  role: admin\n}",
        )
        .await;
    let (code, message, _) = error_of(res, 400).await;
    assert_eq!(code, "malformed_json");
    assert!(message.contains("line 3 column 3"), "{message}");
    assert_eq!(token_count(&app, &admin).await, before);
}

#[tokio::test]
async fn an_empty_body_is_malformed_json() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let (code, _, _) = error_of(app.post_raw("/api/v1/tokens", Some(&admin), "").await, 400).await;
    assert_eq!(code, "malformed_json");
}

#[tokio::test]
async fn a_wrong_type_is_422_naming_the_field() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "ok", "role": 7}),
        )
        .await;
    let (code, message, fields) = error_of(res, 422).await;
    assert_eq!(code, "validation_failed");
    assert_eq!(fields[0].0, "role");
    assert!(message.contains("role"), "{message}");
}

#[tokio::test]
async fn a_missing_field_is_422_naming_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json("/api/v1/tokens", Some(&admin), &json!({"role": "member"}))
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields, vec![("name".to_owned(), "is required".to_owned())]);
}

#[tokio::test]
async fn an_unknown_field_is_422_naming_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "x", "role": "member", "colour": "red"}),
        )
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "colour");
}

#[tokio::test]
async fn an_invalid_value_is_422_with_the_value_and_the_rule() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .post_json(
            "/api/v1/tokens",
            Some(&admin),
            &json!({"name": "x", "role": "member", "email": "not-an-address"}),
        )
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "email");
    assert!(fields[0].1.contains("not-an-address"), "{:?}", fields);
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_writes_nothing() {
    let app = spawn_app_with(|s| s.server.max_body_bytes = 1024).await;
    let admin = app.admin_token();
    let before = token_count(&app, &admin).await;
    let body = json!({"name": "big", "role": "member", "email": format!("{}@example.com", "a".repeat(4000))});
    let (code, message, _) = error_of(
        app.post_json("/api/v1/tokens", Some(&admin), &body).await,
        413,
    )
    .await;
    assert_eq!(code, "payload_too_large");
    assert!(message.contains("1024"), "{message}");
    assert_eq!(token_count(&app, &admin).await, before);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .client
        .post(app.url("/api/v1/tokens"))
        .bearer_auth(&admin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=x&role=member")
        .send()
        .await
        .expect("sent");
    let (code, message, _) = error_of(res, 415).await;
    assert_eq!(code, "unsupported_media_type");
    assert!(message.contains("application/json"), "{message}");
}

#[tokio::test]
async fn an_unknown_id_is_404() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .client
        .delete(app.url("/api/v1/tokens/no-such-token"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    let (code, message, _) = error_of(res, 404).await;
    assert_eq!(code, "not_found");
    assert!(message.contains("no-such-token"), "{message}");
}

#[tokio::test]
async fn an_unknown_route_is_404_in_the_same_shape() {
    let app = spawn_app().await;
    let (code, message, _) = error_of(app.get("/api/v1/nothing-here", None).await, 404).await;
    assert_eq!(code, "not_found");
    assert!(message.contains("/api/v1/nothing-here"), "{message}");
}

#[tokio::test]
async fn a_wrong_method_is_405_with_allow() {
    let app = spawn_app().await;
    let res = app
        .client
        .put(app.url("/api/v1/tokens"))
        .send()
        .await
        .expect("sent");
    let allow = res
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let (code, _, _) = error_of(res, 405).await;
    assert_eq!(code, "method_not_allowed");
    assert!(
        allow.contains("GET") && allow.contains("POST"),
        "Allow: {allow}"
    );

    let res = app
        .client
        .delete(app.url("/healthz"))
        .send()
        .await
        .expect("sent");
    error_of(res, 405).await;
}

#[tokio::test]
async fn a_bad_query_parameter_is_422_naming_it() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let res = app
        .get("/api/v1/tokens?include_revoked=maybe", Some(&admin))
        .await;
    let (_, _, fields) = error_of(res, 422).await;
    assert_eq!(fields[0].0, "include_revoked");
}

#[tokio::test]
async fn hostile_input_never_causes_a_500() {
    let app = spawn_app().await;
    let admin = app.admin_token();
    let bodies: Vec<String> = vec![
        "null".into(),
        "[]".into(),
        "\"string\"".into(),
        "{\"name\": null, \"role\": null}".into(),
        format!("{}", "[".repeat(10_000)),
        "{\"name\": \"\\u0000\", \"role\": \"admin\"}".into(),
        "{\"name\": \"a\", \"role\": \"admin\", \"email\": \"\\ud800@x.io\"}".into(),
        String::from_utf8_lossy(&[0xff, 0xfe, 0x00]).into_owned(),
    ];
    for body in bodies {
        let res = app
            .post_raw("/api/v1/tokens", Some(&admin), body.clone())
            .await;
        let status = res.status().as_u16();
        assert!((400..500).contains(&status), "{status} for {body:.40}");
        error_of(res, status).await;
    }
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/tokens/{}", "%FF%00".repeat(100))))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("sent");
    let status = res.status().as_u16();
    assert!((400..500).contains(&status), "{status}");
}

/// Sends `head` and `body` on a raw connection, then waits for the answer (at most
/// `wait`); returns what came back.
fn raw_exchange(address: &str, head: String, body: &[u8], wait: std::time::Duration) -> String {
    use std::io::{Read, Write};
    let host = address.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream.set_read_timeout(Some(wait)).expect("timeout");
    stream.write_all(head.as_bytes()).expect("head");
    stream.write_all(body).expect("body");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_408_and_the_connection_closes() {
    let app = spawn_app_with(|s| s.server.body_timeout_secs = 1).await;
    let token = app.token("slow", coe::domain::Role::Ingest);
    let address = app.url("");
    let answer = tokio::task::spawn_blocking(move || {
        let head = format!(
            "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        );
        // 10 of the 1,000 bytes promised, then nothing.
        raw_exchange(
            &address,
            head,
            b"{\"events\":",
            std::time::Duration::from_secs(20),
        )
    })
    .await
    .expect("joined");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("request_timeout") && answer.contains("server.body_timeout_secs"),
        "{answer}"
    );
    // The server closes the connection.
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    // And nothing was written.
    let events = app.get_json("/api/v1/incidents", &app.admin_token()).await;
    assert_eq!(events["total"], 0, "{events}");
}
