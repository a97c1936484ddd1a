//! `/scim/v2`: the identity provider's SCIM client provisions people and groups
//! (RFC 7644). Every request needs a token with the `scim` role (or `admin`); answers
//! and refusals are `application/scim+json`, refusals in SCIM's error shape. The
//! protocol is `crate::scim`, what it means to coe `services::scim`.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::http::bearer::Scim;
use crate::http::state::{with_conn, with_write, AppState};
use crate::scim::{schema, ListQuery, ScimError};
use crate::services::scim::{groups, users, Ctx};

fn scim_json(status: actix_web::http::StatusCode, body: &Value) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/scim+json")
        .body(body.to_string())
}

fn ok(body: Value) -> HttpResponse {
    scim_json(actix_web::http::StatusCode::OK, &body)
}

fn base(state: &AppState) -> String {
    format!(
        "{}/scim/v2",
        state.settings.public_url.trim_end_matches('/')
    )
}

fn body_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ScimError::bad(
            "invalidSyntax",
            format!(
                "malformed JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        )
        .into()
    })
}

/// The query string of a list (`filter`, `startIndex`, `count`, `attributes`,
/// `excludedAttributes`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    filter: Option<String>,
    start_index: Option<String>,
    count: Option<String>,
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

fn list_query(req: &HttpRequest) -> Result<ListQuery, ApiError> {
    let p = web::Query::<ListParams>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .map_err(|e| ScimError::bad("invalidValue", format!("the query string: {e}")))?;
    Ok(ListQuery::parse(
        p.filter.as_deref(),
        p.start_index.as_deref(),
        p.count.as_deref(),
        p.attributes.as_deref(),
        p.excluded_attributes.as_deref(),
    )?)
}

/// A search body (RFC 7644 section 3.4.3) as a list query.
fn search_query(body: &[u8]) -> Result<ListQuery, ApiError> {
    let v = body_json(body)?;
    let text = |k: &str| -> Option<String> {
        match crate::scim::filter::get(&v, k)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Array(items) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        }
    };
    Ok(ListQuery::parse(
        text("filter").as_deref(),
        text("startIndex").as_deref(),
        text("count").as_deref(),
        text("attributes").as_deref(),
        text("excludedAttributes").as_deref(),
    )?)
}

/// A single resource, projected by the query string's `attributes` /
/// `excludedAttributes`.
fn one(req: &HttpRequest, resource: Value) -> Result<HttpResponse, ApiError> {
    let q = list_query(req)?;
    Ok(ok(crate::scim::project(
        resource,
        &q.attributes,
        &q.excluded,
    )))
}

pub async fn service_provider_config(_: Scim, state: web::Data<AppState>) -> HttpResponse {
    let docs = format!(
        "{}/docs/operations.md#people-from-the-identity-provider",
        state.settings.public_url.trim_end_matches('/')
    );
    ok(schema::service_provider_config(&base(&state), &docs))
}

pub async fn resource_types(_: Scim, state: web::Data<AppState>) -> HttpResponse {
    let all = schema::resource_types(&base(&state));
    ok(crate::scim::list_response(all.len(), 1, all))
}

pub async fn resource_type(
    _: Scim,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    by_id(schema::resource_types(&base(&state)), &id, "resource type")
}

pub async fn schemas(_: Scim, state: web::Data<AppState>) -> HttpResponse {
    let all = schema::schemas(&base(&state));
    ok(crate::scim::list_response(all.len(), 1, all))
}

pub async fn schema_one(
    _: Scim,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    by_id(schema::schemas(&base(&state)), &id, "schema")
}

/// The discovery resource of `all` whose id is `id`, else a SCIM 404 naming `what`.
fn by_id(all: Vec<Value>, id: &str, what: &str) -> Result<HttpResponse, ApiError> {
    all.into_iter()
        .find(|r| r["id"] == id)
        .map(ok)
        .ok_or_else(|| ScimError::not_found(format!("no {what} {id:?}")).into())
}

/// Reads on a connection.
async fn read(
    state: web::Data<AppState>,
    work: impl FnOnce(&mut crate::db::DbConnection, &Ctx) -> Result<Value, ApiError> + Send + 'static,
) -> Result<Value, ApiError> {
    with_conn(&state, move |conn, state| {
        let ctx = Ctx {
            base: base(state),
            env: state.env(),
            now: crate::db::now(),
            someone_left: Default::default(),
        };
        work(conn, &ctx)
    })
    .await
}

/// Writes in a transaction: a refusal leaves nothing half-written. When a person left,
/// their tokens were revoked: the tokens this replica remembers are then forgotten, so
/// theirs is refused at once here (and within `KNOWN_FOR` on the others); other
/// writes (a provider pushing thousands of users) keep them.
async fn write<T: Send + 'static>(
    state: web::Data<AppState>,
    work: impl FnOnce(&mut crate::db::DbConnection, &Ctx) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let known = state.known_tokens.clone();
    let (done, someone_left) = with_write(&state, move |conn, state| {
        let ctx = Ctx {
            base: base(state),
            env: state.env(),
            now: crate::db::now(),
            someone_left: Default::default(),
        };
        let done = work(conn, &ctx)?;
        Ok((done, ctx.someone_left.get()))
    })
    .await?;
    if someone_left {
        known.forget_all();
    }
    Ok(done)
}

macro_rules! resource_handlers {
    ($name:ident, $kind:ident) => {
        pub mod $name {
            use super::*;

            pub async fn list(
                _: Scim,
                req: HttpRequest,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let q = list_query(&req)?;
                Ok(ok(
                    read(state, move |conn, ctx| $kind::list(conn, ctx, &q)).await?
                ))
            }

            pub async fn search(
                _: Scim,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let q = search_query(&body)?;
                Ok(ok(
                    read(state, move |conn, ctx| $kind::list(conn, ctx, &q)).await?
                ))
            }

            pub async fn create(
                _: Scim,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let body = body_json(&body)?;
                let made = write(state, move |conn, ctx| $kind::create(conn, ctx, &body)).await?;
                Ok(scim_json(actix_web::http::StatusCode::CREATED, &made))
            }

            pub async fn get(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let id = id.into_inner();
                let found = read(state, move |conn, ctx| $kind::get_one(conn, ctx, &id)).await?;
                one(&req, found)
            }

            pub async fn replace(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let (id, body) = (id.into_inner(), body_json(&body)?);
                let done = write(state, move |conn, ctx| {
                    $kind::replace(conn, ctx, &id, &body)
                })
                .await?;
                one(&req, done)
            }

            pub async fn patch(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let (id, body) = (id.into_inner(), body_json(&body)?);
                let done =
                    write(state, move |conn, ctx| $kind::patch(conn, ctx, &id, &body)).await?;
                one(&req, done)
            }

            pub async fn delete(
                _: Scim,
                id: web::Path<String>,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let id = id.into_inner();
                write(state, move |conn, ctx| $kind::delete(conn, ctx, &id)).await?;
                Ok(HttpResponse::NoContent().finish())
            }
        }
    };
}

resource_handlers!(user_routes, users);
resource_handlers!(group_routes, groups);

/// `POST /scim/v2/.search`: searching several resource types at once is not offered.
pub async fn search_all(_: Scim) -> Result<HttpResponse, ApiError> {
    Err(ScimError::status(501, "search /Users/.search or /Groups/.search instead").into())
}

/// Any other path under `/scim/v2`.
pub async fn not_found(_: Scim, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ScimError::not_found(format!("nothing is at {}", req.path())).into())
}
