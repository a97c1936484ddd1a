//! The chat channels and trackers (`GET /api/v1/connections`), and those kept in coe
//! added, changed (`PUT /api/v1/connections/{kind}/{name}`) and removed (`DELETE`),
//! as Admin → Chat and Admin → Trackers do. Admins only.

use actix_web::{web, HttpResponse};
use serde_json::Value;

use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Admin;
use crate::http::extract::ApiJson;
use crate::http::state::{with_conn, AppState};
use crate::services::connections::Kind;
use crate::services::outbound::connections::{self as store, ConnectionList};

/// Every chat channel and tracker: the settings file's and those kept in coe, each
/// secret shown by its end alone.
#[utoipa::path(operation_id = "list_connections", get, path = "/api/v1/connections", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "The connections", body = ConnectionList),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn list(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let now = state.connections.current();
    Ok(HttpResponse::Ok().json(ConnectionList {
        connections: store::list(now),
    }))
}

fn kind_of(kind: &str) -> Result<Kind, ApiError> {
    Kind::parse(kind).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no such kind of connection `{}`: chat or tracker",
            kind.escape_default()
        ))
    })
}

/// Adds or changes the chat channel (`chat`) or tracker (`tracker`) `name` kept in
/// coe: the body is its settings as the settings file writes them, in JSON (a secret
/// left out or empty keeps the one saved), with `version` (the one read) to change
/// one. Checked with every other connection as the file is; secrets are sealed.
#[utoipa::path(operation_id = "save_connection", put, path = "/api/v1/connections/{kind}/{name}", tag = "admin", security(("bearer" = [])),
    params(
        ("kind" = String, Path, description = "`chat` or `tracker`"),
        ("name" = String, Path, description = "The connection's name"),
    ),
    request_body(content = Object, description = "Its settings (as `[[chat.channels]]` or `[[trackers]]` in JSON), and `version` to change one"),
    responses(
        (status = 200, description = "Saved: the connection as read back", body = Object),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such kind", body = ErrorBody),
        (status = 409, description = "Changed since `version`, declared in the settings file, or coe has no secret key", body = ErrorBody),
        (status = 422, description = "A field the settings file would refuse (named)", body = ErrorBody),
    ))]
pub async fn save(
    Admin(caller): Admin,
    path: web::Path<(String, String)>,
    body: ApiJson<Value>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.into_inner();
    let kind = kind_of(&kind)?;
    let mut input = body.0;
    let based_on = match input.as_object_mut().and_then(|o| o.remove("version")) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().filter(|v| *v >= 0).ok_or_else(|| {
            ApiError::field("version", "expected the version read, a whole number")
        })?),
    };
    let by = caller.actor();
    let saved = with_conn(&state, move |conn, state| {
        Ok(store::save(
            conn,
            &state.connections,
            kind,
            &name,
            input,
            based_on,
            &by,
            crate::db::now(),
        )?)
    })
    .await?;
    // As read back; should reading it back have failed (logged), what was saved.
    let listed = store::list(state.connections.current())
        .into_iter()
        .find(|l| {
            l.kind == kind.as_str() && l.name == saved.name && l.version == Some(saved.version)
        })
        .map_or_else(
            || {
                serde_json::json!({"kind": kind.as_str(), "name": saved.name, "kept_in": "coe",
                                  "version": saved.version, "updated_by": saved.updated_by,
                                  "updated_at": saved.updated_at})
            },
            |l| serde_json::to_value(l).unwrap_or_default(),
        );
    Ok(HttpResponse::Ok().json(listed))
}

/// Removes the chat channel or tracker `name` kept in coe.
#[utoipa::path(operation_id = "remove_connection", delete, path = "/api/v1/connections/{kind}/{name}", tag = "admin", security(("bearer" = [])),
    params(
        ("kind" = String, Path, description = "`chat` or `tracker`"),
        ("name" = String, Path, description = "The connection's name"),
    ),
    responses(
        (status = 200, description = "Removed: what was removed", body = Object),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "None of that name is kept in coe", body = ErrorBody),
        (status = 409, description = "Declared in the settings file", body = ErrorBody),
    ))]
pub async fn remove(
    Admin(caller): Admin,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.into_inner();
    let kind = kind_of(&kind)?;
    let (by, asked) = (caller.actor(), name.clone());
    with_conn(&state, move |conn, state| {
        Ok(store::remove(
            conn,
            &state.connections,
            kind,
            &asked,
            &by,
            crate::db::now(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({"removed": {"kind": kind.as_str(), "name": name}})))
}
