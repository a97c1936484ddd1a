//! The OpenAPI document lists every JSON endpoint the app serves, by the same method and
//! path as the route table, and every reference in it resolves.

use std::collections::BTreeSet;

use coe::http::routes::{Route, ROUTES};
use serde_json::Value;

use crate::helpers::{json, spawn_app};

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

    for Route { method, path, .. } in ROUTES.iter().filter(|r| r.documented) {
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

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The operations of the document, as (method, path).
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if METHODS.contains(&method.as_str()) {
                operations.insert((method.clone(), path.clone()));
            }
        }
    }
    operations
}

#[tokio::test]
async fn every_route_is_documented_by_the_same_method_and_path_and_nothing_else_is() {
    let app = spawn_app().await;
    let doc = json(app.get("/api/openapi.json", None).await).await;
    let documented = operations(&doc);
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .filter(|r| r.documented)
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    let unserved: Vec<_> = documented.difference(&routed).collect();
    assert!(
        unserved.is_empty(),
        "documented but not routed: {unserved:?}"
    );
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "routed but not documented (check the #[utoipa::path] of its handler): {undocumented:?}"
    );
    for route in ROUTES.iter().filter(|r| !r.documented) {
        assert!(
            doc["paths"][route.path].is_null(),
            "{} {} is marked undocumented but is in the document",
            route.method,
            route.path
        );
    }
}

#[tokio::test]
async fn every_route_in_the_table_is_served_by_its_method() {
    // A tracker named as the paths' `{name}` is, so that its webhook answers too.
    let mut tracker =
        crate::trackers::tracker(coe::config::TrackerKind::Jira, "http://127.0.0.1:9");
    tracker.name = "x".into();
    let app = crate::helpers::spawn_app_with(move |s| s.trackers = vec![tracker]).await;
    for Route { method, path, .. } in ROUTES {
        let concrete = path
            .replace("{name}", "x")
            .replace("{id}", "x")
            .replace("{source}", "alertmanager")
            .replace("{key}", "summary")
            .replace("{entry_id}", "x")
            .replace("{chain_id}", "x")
            .replace("{item_id}", "x")
            .replace("{comment_id}", "x")
            .replace("{incident_id}", "x")
            .replace("{transition}", "start")
            .replace("{decision}", "accept")
            .replace("{kind}", "chat")
            .replace("{email}", "x@example.com")
            .replace("{rest:.*}", "Nothing");
        assert!(!concrete.contains('{'), "no example value for {path}");
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
    // Times are written as RFC 3339 in UTC with their `Z`, and the schema says so.
    let created = &doc["components"]["schemas"]["TokenInfo"]["properties"]["created_at"];
    assert_eq!(created["format"], "date-time", "{created}");
    let page = app.get_json("/api/v1/tokens", &app.admin_token()).await;
    let written = page["tokens"][0]["created_at"].as_str().expect("a time");
    let parsed = chrono::DateTime::parse_from_rfc3339(written).expect("RFC 3339");
    assert_eq!(parsed.offset().local_minus_utc(), 0, "{written}");
    assert!(written.ends_with('Z'), "{written}");
}
