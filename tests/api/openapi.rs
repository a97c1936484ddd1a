//! The OpenAPI document lists every JSON endpoint, and every reference in it resolves.

use serde_json::Value;

use crate::helpers::{json, spawn_app};

/// Every JSON endpoint the service serves. A new endpoint goes here and in the document.
const ENDPOINTS: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/api/v1/me"),
    ("get", "/api/v1/tokens"),
    ("post", "/api/v1/tokens"),
    ("delete", "/api/v1/tokens/{name}"),
    ("post", "/api/v1/events"),
    ("get", "/api/v1/events/{id}"),
    ("post", "/api/v1/webhooks/{source}"),
    ("get", "/api/v1/incidents"),
    ("get", "/api/v1/incidents/{id}"),
    ("get", "/api/v1/coes"),
    ("post", "/api/v1/coes"),
    ("get", "/api/v1/coes/{id}"),
    ("patch", "/api/v1/coes/{id}"),
    ("put", "/api/v1/coes/{id}/sections/{key}"),
    ("post", "/api/v1/coes/{id}/timeline"),
    ("put", "/api/v1/coes/{id}/timeline/{entry_id}"),
    ("delete", "/api/v1/coes/{id}/timeline/{entry_id}"),
    ("post", "/api/v1/coes/{id}/whys"),
    ("put", "/api/v1/coes/{id}/whys/{chain_id}"),
    ("delete", "/api/v1/coes/{id}/whys/{chain_id}"),
    ("post", "/api/v1/coes/{id}/related"),
    ("delete", "/api/v1/coes/{id}/related/{item_id}"),
    ("get", "/api/v1/coes/{id}/history"),
    ("get", "/api/v1/coes/{id}/export.md"),
    ("post", "/api/v1/coes/{id}/actions"),
    ("post", "/api/v1/coes/{id}/submit"),
    ("post", "/api/v1/coes/{id}/approve"),
    ("post", "/api/v1/coes/{id}/request-changes"),
    ("get", "/api/v1/actions"),
    ("get", "/api/v1/actions/{id}"),
    ("patch", "/api/v1/actions/{id}"),
    ("post", "/api/v1/actions/{id}/{transition}"),
    ("put", "/api/v1/people/{email}"),
    ("get", "/api/v1/people"),
    ("post", "/api/v1/people/import"),
    ("get", "/api/v1/stats"),
    ("post", "/api/v1/people/{email}/feed-token"),
    ("get", "/api/v1/people/{email}/actions.ics"),
    ("get", "/api/v1/outbox"),
    ("post", "/api/v1/outbox/{id}/retry"),
];

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_openapi_document_is_openapi_3_and_lists_every_endpoint() {
    let app = spawn_app().await;
    let res = app.get("/api/openapi.json", None).await;
    assert_eq!(res.status(), 200);
    let doc = json(res).await;
    let version = doc["openapi"].as_str().expect("openapi version");
    assert!(version.starts_with("3."), "{version}");
    assert!(doc["info"]["title"].is_string());
    assert!(doc["info"]["version"].is_string());

    for (method, path) in ENDPOINTS {
        let operation = &doc["paths"][path][method];
        assert!(
            operation.is_object(),
            "{method} {path} is not in the document"
        );
        let responses = operation["responses"].as_object().expect("responses");
        assert!(
            !responses.is_empty(),
            "{method} {path} documents no response"
        );
        for (status, response) in responses {
            let content = response["content"].as_object().expect("content");
            assert!(
                !content.is_empty() && content.values().all(|c| c["schema"].is_object()),
                "{method} {path} {status} has no schema"
            );
        }
    }

    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {r}");
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

#[tokio::test]
async fn every_documented_path_is_served() {
    let app = spawn_app().await;
    let doc = json(app.get("/api/openapi.json", None).await).await;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            assert!(
                ENDPOINTS.contains(&(method.as_str(), path.as_str())),
                "{method} {path} is documented but not in the endpoint list"
            );
            let concrete = path
                .replace("{name}", "x")
                .replace("{id}", "x")
                .replace("{source}", "alertmanager")
                .replace("{key}", "summary")
                .replace("{entry_id}", "x")
                .replace("{chain_id}", "x")
                .replace("{item_id}", "x")
                .replace("{transition}", "start")
                .replace("{email}", "x@example.com");
            let res = app
                .client
                .request(
                    method.to_uppercase().parse().expect("method"),
                    app.url(&concrete),
                )
                .send()
                .await
                .expect("sent");
            assert_ne!(res.status(), 404, "{method} {path} is not served");
            assert_ne!(res.status(), 405, "{method} {path} is not served");
        }
    }
}

#[tokio::test]
async fn every_protected_operation_documents_401_and_times_are_described_as_written() {
    let app = spawn_app().await;
    let doc = json(app.get("/api/openapi.json", None).await).await;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            if secured {
                assert!(
                    op["responses"]["401"].is_object(),
                    "{method} {path} documents no 401"
                );
            }
            if op["requestBody"].is_object() {
                assert!(op["responses"]["400"].is_object(), "{method} {path}: 400");
            }
            if path.contains('{') {
                assert!(op["responses"]["404"].is_object(), "{method} {path}: 404");
            }
        }
    }
    // The service writes `2026-11-29T10:00:00.123456` (UTC, no offset), which is not
    // RFC 3339's date-time: the schema must not claim it is.
    let created = &doc["components"]["schemas"]["TokenInfo"]["properties"]["created_at"];
    assert_ne!(created["format"], "date-time", "{created}");
    assert!(created["pattern"].is_string(), "{created}");
    let page = app.get_json("/api/v1/tokens", &app.admin_token()).await;
    let written = page["tokens"][0]["created_at"].as_str().expect("a time");
    // What the pattern describes: date, `T`, time, optional fraction, no offset.
    assert!(
        written.len() >= 19 && written.as_bytes()[10] == b'T' && !written.contains(['Z', '+']),
        "{written}"
    );
}
