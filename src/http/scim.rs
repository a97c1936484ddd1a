//! `/scim/v2`: the identity provider's SCIM client provisions people and groups
//! (RFC 7644). Every request needs a token with the `scim` role (or `admin`); answers
//! and refusals are `application/scim+json`, refusals in SCIM's error shape. The
//! protocol is `crate::scim`, what it means to coe `services::accounts::scim`.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::http::bearer::Scim;
use crate::http::state::{with_conn, with_write, AppState};
use crate::scim::{schema, ListQuery, ScimError};
use crate::services::accounts::scim::{
    filtered_page, groups, users, Ctx, Listed, ProvisioningError,
};

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
    ok(schema::service_provider_config(&base(&state)))
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

/// A turn to talk to the database for the provider (`scim.requests_at_once`), waited
/// for as long as a pooled connection is; refused `429` with `Retry-After` when none
/// came, so that a provider pushing or searching hard never holds the connections
/// every other request needs.
async fn turn(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    let wait = std::time::Duration::from_secs(state.settings.database.connect_timeout_secs);
    match actix_web::rt::time::timeout(wait, state.scim_turns.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(ScimError::status(
            429,
            "coe is answering other SCIM requests: send this one again in a moment",
        )
        .into()),
    }
}

fn ctx_of(state: &AppState) -> Ctx<'_> {
    Ctx {
        base: base(state),
        env: state.env(),
        now: crate::db::now(),
        someone_left: Default::default(),
    }
}

/// Reads on a connection.
async fn read<T: Send + 'static>(
    state: &web::Data<AppState>,
    work: impl FnOnce(&mut crate::db::DbConnection, &Ctx) -> Result<T, ProvisioningError>
        + Send
        + 'static,
) -> Result<T, ApiError> {
    with_conn(state, move |conn, state| Ok(work(conn, &ctx_of(state))?)).await
}

/// Writes in a transaction: a refusal leaves nothing half-written. When a person left,
/// their tokens were revoked: the tokens this replica remembers are then forgotten, so
/// theirs is refused at once here (and within `KNOWN_FOR` on the others); other
/// writes (a provider pushing thousands of users) keep them.
async fn write<T: Send + 'static>(
    state: &web::Data<AppState>,
    work: impl FnOnce(&mut crate::db::DbConnection, &Ctx) -> Result<T, ProvisioningError>
        + Send
        + 'static,
) -> Result<T, ApiError> {
    let known = state.known_tokens.clone();
    let (done, someone_left) = with_write(state, move |conn, state| {
        let ctx = ctx_of(state);
        let done = work(conn, &ctx)?;
        Ok((done, ctx.someone_left.get()))
    })
    .await?;
    if someone_left {
        known.forget_all();
    }
    Ok(done)
}

/// A list's answer: the page the database made, or the candidates held against the
/// filter on a blocking thread with no connection, within `server.search_timeout_ms`.
async fn listed(state: &AppState, q: ListQuery, found: Listed) -> Result<HttpResponse, ApiError> {
    match found {
        Listed::Page(page) => Ok(ok(page)),
        Listed::Candidates(found) => {
            let until = std::time::Instant::now()
                + std::time::Duration::from_millis(state.settings.server.search_timeout_ms);
            let page = web::block(move || filtered_page(found, &q, until)).await??;
            Ok(ok(page))
        }
    }
}

/// How many times a PATCH is read and applied again when its resource changed
/// between the read and the write.
const PATCH_ATTEMPTS: usize = 3;

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
                let _turn = turn(&state).await?;
                let (found, q) = read(&state, move |conn, ctx| {
                    Ok(($kind::list(conn, ctx, &q)?, q))
                })
                .await?;
                listed(&state, q, found).await
            }

            pub async fn search(
                _: Scim,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let q = search_query(&body)?;
                let _turn = turn(&state).await?;
                let (found, q) = read(&state, move |conn, ctx| {
                    Ok(($kind::list(conn, ctx, &q)?, q))
                })
                .await?;
                listed(&state, q, found).await
            }

            pub async fn create(
                _: Scim,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let doc = $kind::clean(&body_json(&body)?)?;
                let _turn = turn(&state).await?;
                let made = write(&state, move |conn, ctx| $kind::create(conn, ctx, doc)).await?;
                Ok(scim_json(actix_web::http::StatusCode::CREATED, &made))
            }

            pub async fn get(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let id = id.into_inner();
                let _turn = turn(&state).await?;
                let found = read(&state, move |conn, ctx| $kind::get_one(conn, ctx, &id)).await?;
                one(&req, found)
            }

            pub async fn replace(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let id = id.into_inner();
                let doc = $kind::clean(&body_json(&body)?)?;
                let _turn = turn(&state).await?;
                let done = write(&state, move |conn, ctx| {
                    $kind::replace(conn, ctx, &id, doc)
                })
                .await?;
                one(&req, done)
            }

            /// Read, applied with no connection held and outside the writer's turn,
            /// then written only if the resource did not change meanwhile (else read
            /// and applied again).
            pub async fn patch(
                _: Scim,
                req: HttpRequest,
                id: web::Path<String>,
                body: web::Bytes,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let (id, body) = (id.into_inner(), std::sync::Arc::new(body_json(&body)?));
                let _turn = turn(&state).await?;
                for _ in 0..PATCH_ATTEMPTS {
                    let asked = id.clone();
                    let seen = read(&state, move |conn, _| $kind::seen(conn, &asked)).await?;
                    let ops = body.clone();
                    let (doc, stamp) = web::block(move || {
                        crate::services::accounts::scim::patched(&seen, &ops).map(|doc| (doc, seen.stamp))
                    })
                    .await??;
                    let asked = id.clone();
                    let done = write(&state, move |conn, ctx| {
                        $kind::write_patched(conn, ctx, &asked, &stamp, doc)
                    })
                    .await?;
                    if let Some(done) = done {
                        return one(&req, done);
                    }
                }
                Err(ScimError::conflict(format!(
                    "{id} changed {PATCH_ATTEMPTS} times while this PATCH was applied: send it again"
                ))
                .into())
            }

            pub async fn delete(
                _: Scim,
                id: web::Path<String>,
                state: web::Data<AppState>,
            ) -> Result<HttpResponse, ApiError> {
                let id = id.into_inner();
                let _turn = turn(&state).await?;
                write(&state, move |conn, ctx| $kind::delete(conn, ctx, &id)).await?;
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
