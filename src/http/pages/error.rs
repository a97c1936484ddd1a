//! Why a page is not shown: `PageError`, each kind answering as a page of its own (the
//! error page, in the layout, with the pages' headers) or, for `SignIn`, a redirect to
//! the sign-in page that comes back.

use std::fmt;

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

use super::templates::{secure_headers, PageTemplates};
use crate::error::ApiError;

/// Why a page is not shown; each answers as a page of its own (or, for `SignIn`, a
/// redirect to the sign-in page that comes back here).
#[derive(Debug)]
pub enum PageError {
    SignIn {
        next: String,
    },
    BadRequest(String),
    Unauthorized(String),
    Forbidden(String),
    NotFound(String),
    Conflict(String),
    /// A form sent without the version its page was loaded with, or with one that
    /// is no longer current where nothing typed can be kept.
    Precondition(String),
    TooMany(String),
    Unavailable(String),
    Internal(String),
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageError::SignIn { next } => write!(f, "sign in to see {next}"),
            PageError::BadRequest(m)
            | PageError::Unauthorized(m)
            | PageError::Forbidden(m)
            | PageError::NotFound(m)
            | PageError::Conflict(m)
            | PageError::Precondition(m)
            | PageError::TooMany(m)
            | PageError::Unavailable(m)
            | PageError::Internal(m) => f.write_str(m),
        }
    }
}

impl From<crate::services::access::AccessError> for PageError {
    fn from(e: crate::services::access::AccessError) -> Self {
        ApiError::from(e).into()
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::Unavailable(m) => PageError::Unavailable(m),
            ApiError::Database(fault) => PageError::Unavailable(fault.message().to_owned()),
            ApiError::TooManyRequests { message, .. } => PageError::TooMany(message),
            ApiError::NotFound(m) => PageError::NotFound(m),
            ApiError::Forbidden(m) => PageError::Forbidden(m),
            ApiError::Unauthorized(m) => PageError::Unauthorized(m),
            ApiError::Conflict { message, .. } => PageError::Conflict(message),
            ApiError::PreconditionFailed(m) | ApiError::PreconditionRequired(m) => {
                PageError::Precondition(format!(
                    "{m}. The page was out of date: reload it and make the change again."
                ))
            }
            e @ (ApiError::BadRequest(_)
            | ApiError::Validation(_)
            | ApiError::MalformedJson { .. }
            | ApiError::PayloadTooLarge(_)
            | ApiError::RequestTimeout(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::MethodNotAllowed(_)) => PageError::BadRequest(e.to_string()),
            // The detail, for the log (the page does not show it).
            ApiError::Internal(detail) => PageError::Internal(detail),
            other => PageError::Internal(other.to_string()),
        }
    }
}

impl PageError {
    fn heading(&self) -> &'static str {
        match self {
            PageError::SignIn { .. } | PageError::Unauthorized(_) => "Sign in first",
            PageError::BadRequest(_) => "That did not work",
            PageError::Forbidden(_) => "Not yours to see or change",
            PageError::NotFound(_) => "Not found",
            PageError::Conflict(_) => "That clashed with another change",
            PageError::Precondition(_) => "This page was out of date",
            PageError::TooMany(_) => "Too many tries",
            PageError::Unavailable(_) => "Unavailable for a moment",
            PageError::Internal(_) => "Something went wrong on our side",
        }
    }
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        match self {
            PageError::SignIn { .. } => StatusCode::SEE_OTHER,
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            PageError::Forbidden(_) => StatusCode::FORBIDDEN,
            PageError::NotFound(_) => StatusCode::NOT_FOUND,
            PageError::Conflict(_) => StatusCode::CONFLICT,
            PageError::Precondition(_) => StatusCode::PRECONDITION_FAILED,
            PageError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            PageError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            PageError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let PageError::SignIn { next } = self {
            let query = serde_urlencoded::to_string([("next", next.as_str())]).unwrap_or_default();
            return HttpResponse::SeeOther()
                .insert_header((header::LOCATION, format!("/sign-in?{query}")))
                .finish();
        }
        if let PageError::Internal(detail) = self {
            tracing::error!(error = %detail, "a page failed");
        }
        let message = match self {
            PageError::Internal(_) => "The error is in the server's log. Try again; if it persists, tell the people who run this service.".to_owned(),
            other => other.to_string(),
        };
        let sign_in = matches!(self, PageError::Unauthorized(_));
        let data = json!({
            "heading": self.heading(),
            "message": message,
            "sign_in": sign_in,
        });
        let body = PageTemplates::loaded()
            .ok_or_else(|| "the page templates are not loaded".to_owned())
            .and_then(|pages| {
                let mut data = data;
                data["asset_version"] = json!(pages.asset_version);
                pages.render("error", &data)
            })
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "the error page cannot be rendered");
                // Small and fixed: what is left when the templates fail.
                format!(
                    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
                     <title>{heading} · coe</title></head><body><main id=\"main\"><h1>{heading}</h1>\
                     <p role=\"alert\">{message}</p><p><a href=\"/\">Back to my work</a></p>\
                     </main></body></html>",
                    heading = self.heading(),
                    message = handlebars::html_escape(&message),
                )
            });
        let mut res = HttpResponse::build(self.status_code());
        secure_headers(&mut res);
        res.content_type("text/html; charset=utf-8").body(body)
    }
}
