//! The HTTP layer: routes, extractors, middleware. Handlers call `services`.

pub mod api;
pub mod bearer;
pub mod deadline;
pub mod extract;
pub mod health;
pub mod known_tokens;
pub mod metrics;
pub mod observe;
pub mod openapi;
pub mod pages;
pub mod pagination;
pub mod routes;
pub mod scim;
pub mod session;
pub mod slack;
pub mod state;
pub mod teams;

use crate::error::ApiError;

/// Errors of actix's own path extractor, in our shape: a path that does not parse
/// names nothing that exists.
pub fn path_error(
    err: actix_web::error::PathError,
    _: &actix_web::HttpRequest,
) -> actix_web::Error {
    ApiError::NotFound(format!("no such resource: {err}")).into()
}

/// A query string a page cannot read: an HTML page (in the layout, with the pages'
/// security headers) naming the problem, never the API's JSON. (The API reads its
/// queries with `extract::ApiQuery`.)
pub fn page_query_error(
    err: actix_web::error::QueryPayloadError,
    _: &actix_web::HttpRequest,
) -> actix_web::Error {
    pages::error::PageError::BadRequest(format!("this page's address is not understood: {err}"))
        .into()
}

/// An optional RFC 3339 query parameter.
pub fn time_param(
    name: &str,
    raw: Option<&str>,
) -> Result<Option<chrono::NaiveDateTime>, ApiError> {
    match raw {
        None => Ok(None),
        Some(raw) => crate::domain::event::parse_time(raw).map_err(|p| ApiError::field(name, p)),
    }
}
