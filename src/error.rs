//! The one error type of the HTTP API and its single JSON shape:
//! `{"error":{"code":"…","message":"…","fields":[{"field":"…","problem":"…"}]}}`.

use actix_web::body::MessageBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::ErrorHandlerResponse;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `validation_failed`, `not_found`.
    pub code: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// For validation errors: every field with a problem.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldProblem>,
}

/// One problem with one field of the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldProblem {
    /// Path of the field in the request, e.g. `actions[0].due_date`.
    pub field: String,
    pub problem: String,
}

impl FieldProblem {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        FieldProblem {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Everything the API can answer other than success.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("malformed JSON at line {line} column {column}: {message}")]
    MalformedJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("the request has invalid fields")]
    Validation(Vec<FieldProblem>),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{message}")]
    Conflict {
        message: String,
        fields: Vec<FieldProblem>,
    },
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Too many failed attempts from this client; retry after the given seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after: u64 },
    /// The request (its body) did not arrive in time.
    #[error("{0}")]
    RequestTimeout(String),
    /// A write based on a version that is no longer current.
    #[error("{0}")]
    PreconditionFailed(String),
    /// A write that does not say which version it is based on.
    #[error("{0}")]
    PreconditionRequired(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Unavailable(String),
    /// The database cannot serve: read-only, full, or gone.
    #[error("{}", .0.message())]
    Database(crate::db::fault::Fault),
    /// A service we depend on (outside the database) failed.
    #[error("{0}")]
    BadGateway(String),
    /// A refusal of the SCIM endpoints (`/scim/v2`), answered in SCIM's own shape.
    #[error("{}", .0.detail)]
    Scim(crate::scim::ScimError),
    /// A fault of ours. The detail is logged, never sent.
    #[error("internal error")]
    Internal(String),
}

impl From<crate::services::accounts::scim::ProvisioningError> for ApiError {
    fn from(e: crate::services::accounts::scim::ProvisioningError) -> Self {
        match e {
            crate::services::accounts::scim::ProvisioningError::Refused(e) => ApiError::Scim(e),
            crate::services::accounts::scim::ProvisioningError::Database(e) => e.into(),
        }
    }
}

impl From<crate::scim::ScimError> for ApiError {
    fn from(e: crate::scim::ScimError) -> Self {
        ApiError::Scim(e)
    }
}

impl ApiError {
    /// A validation error about a single field.
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        ApiError::Validation(vec![FieldProblem::new(field, problem)])
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::MalformedJson { .. } => "malformed_json",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Validation(_) => "validation_failed",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::Conflict { .. } => "conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::RequestTimeout(_) => "request_timeout",
            ApiError::TooManyRequests { .. } => "too_many_requests",
            ApiError::PreconditionFailed(_) => "version_conflict",
            ApiError::PreconditionRequired(_) => "version_required",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Database(fault) => fault.code(),
            ApiError::BadGateway(_) => "bad_gateway",
            ApiError::Scim(_) => "scim",
            ApiError::Internal(_) => "internal",
        }
    }

    pub fn body(&self) -> ErrorBody {
        let fields = match self {
            ApiError::Validation(fields) | ApiError::Conflict { fields, .. } => fields.clone(),
            _ => Vec::new(),
        };
        let message = match self {
            ApiError::Validation(fields) => summarize(fields),
            other => other.to_string(),
        };
        ErrorBody {
            error: ErrorDetail {
                code: self.code(),
                message,
                fields,
            },
        }
    }
}

/// "field `due_date`: must be a date in the future; field `owner`: …"
fn summarize(fields: &[FieldProblem]) -> String {
    if fields.is_empty() {
        return "the request has invalid fields".into();
    }
    fields
        .iter()
        .map(|f| format!("field `{}`: {}", f.field, f.problem))
        .collect::<Vec<_>>()
        .join("; ")
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::MalformedJson { .. } | ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::PreconditionRequired(_) => StatusCode::PRECONDITION_REQUIRED,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) | ApiError::Database(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Scim(e) => StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST),
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(detail) = self {
            tracing::error!(error = %detail, "internal error");
        }
        let mut response = HttpResponse::build(self.status_code());
        if self.status_code() == StatusCode::SERVICE_UNAVAILABLE {
            response.insert_header((header::RETRY_AFTER, "5"));
        }
        if let ApiError::TooManyRequests { retry_after, .. } = self {
            response.insert_header((header::RETRY_AFTER, retry_after.to_string()));
        }
        if matches!(self, ApiError::Unauthorized(_)) {
            // Basic too: AWS SNS sends its credentials only after a Basic challenge.
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            response.append_header((header::WWW_AUTHENTICATE, "Basic realm=\"coe\""));
        }
        if let ApiError::Scim(e) = self {
            if e.status == 429 {
                response.insert_header((header::RETRY_AFTER, "1"));
            }
            return response
                .content_type("application/scim+json")
                .body(e.body().to_string());
        }
        response.json(self.body())
    }
}

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        if crate::db::search::timed_out(&e) {
            return ApiError::Unavailable(
                "the search took longer than the server allows: search for fewer or \
                 rarer words"
                    .into(),
            );
        }
        match crate::db::fault::note(&e) {
            Some(fault) => ApiError::Database(fault),
            None => ApiError::Internal(format!("database: {e}")),
        }
    }
}

impl From<crate::services::access::AccessError> for ApiError {
    fn from(e: crate::services::access::AccessError) -> Self {
        use crate::services::access::AccessError;
        match e {
            AccessError::NotFound(what) => ApiError::NotFound(format!("no such {what}")),
            AccessError::Forbidden(why) => ApiError::Forbidden(why),
            AccessError::Database(e) => e.into(),
        }
    }
}

impl From<crate::services::directory::people::FindError> for ApiError {
    fn from(e: crate::services::directory::people::FindError) -> Self {
        use crate::services::directory::people::FindError;
        match e {
            FindError::Refused(refused) => ApiError::field("q", refused.to_string()),
            FindError::Database(e) => e.into(),
        }
    }
}

impl From<crate::services::coe::templates::SaveError> for ApiError {
    fn from(e: crate::services::coe::templates::SaveError) -> Self {
        use crate::services::coe::templates::SaveError;
        match e {
            SaveError::Invalid(field, problem) => ApiError::field(field, problem),
            SaveError::Conflict(message) => ApiError::Conflict {
                message,
                fields: vec![],
            },
            SaveError::Database(e) => e.into(),
        }
    }
}

impl From<crate::services::outbound::connections::SaveError> for ApiError {
    fn from(e: crate::services::outbound::connections::SaveError) -> Self {
        use crate::services::outbound::connections::SaveError;
        match e {
            SaveError::Invalid(field, problem) => ApiError::field(field, problem),
            SaveError::Conflict(message) | SaveError::NoKey(message) => ApiError::Conflict {
                message,
                fields: vec![],
            },
            SaveError::NotFound(message) => ApiError::NotFound(message),
            SaveError::Database(e) => e.into(),
        }
    }
}

impl From<crate::services::outbound::chat::import::ImportError> for ApiError {
    fn from(e: crate::services::outbound::chat::import::ImportError) -> Self {
        use crate::services::outbound::chat::import::ImportError;
        match e {
            ImportError::Invalid(field, problem) => ApiError::field(field, problem),
            ImportError::Forbidden(why) => ApiError::Forbidden(why),
            ImportError::Platform(said) => ApiError::BadGateway(format!(
                "the chat platform did not answer as it should: {said}"
            )),
        }
    }
}

impl From<crate::services::intake::ingest::writer::WriteError> for ApiError {
    fn from(e: crate::services::intake::ingest::writer::WriteError) -> Self {
        use crate::services::intake::ingest::writer::WriteError;
        match e {
            WriteError::Busy(message) => ApiError::Unavailable(message),
            WriteError::Fault(fault) => ApiError::Database(fault),
            WriteError::Failed(detail) => ApiError::Internal(detail),
        }
    }
}

impl From<diesel::r2d2::PoolError> for ApiError {
    fn from(_: diesel::r2d2::PoolError) -> Self {
        // `db::checkout` logged it (or the outage it belongs to).
        ApiError::Unavailable("the database is not reachable; try again shortly".into())
    }
}

impl From<actix_web::error::BlockingError> for ApiError {
    fn from(e: actix_web::error::BlockingError) -> Self {
        ApiError::Internal(format!("blocking task: {e}"))
    }
}

/// Gives every error response that is not already ours (actix's own 404, 405, 413,
/// extractor errors) the same JSON shape, keeping its status and headers.
pub fn render_foreign_error<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = res
        .response()
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            ["application/json", "text/html", "application/scim+json"]
                .iter()
                .any(|ours| v.starts_with(ours))
        });
    // JSON is the API's, HTML the pages' own error page, SCIM's the SCIM endpoints':
    // all are ours already.
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let detail = res.response().error().map(|e| e.to_string());
    let (method, path) = (
        res.request().method().clone(),
        res.request().path().to_owned(),
    );
    let error = match status {
        StatusCode::NOT_FOUND => ApiError::NotFound(format!("no such resource: {method} {path}")),
        StatusCode::METHOD_NOT_ALLOWED => {
            ApiError::MethodNotAllowed(format!("{path} does not accept {method}"))
        }
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(
            detail.unwrap_or_else(|| "the request body is too large".into()),
        ),
        s if s.is_server_error() => ApiError::Internal(detail.unwrap_or_else(|| s.to_string())),
        _ => ApiError::BadRequest(detail.unwrap_or_else(|| status.to_string())),
    };
    let body = serde_json::to_string(&error.body()).unwrap_or_default();
    let (req, mut response) = res.into_parts();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().remove(header::CONTENT_LENGTH);
    let code = error.code();
    let response = response.set_body(body);
    let res = ServiceResponse::new(req, response)
        .map_into_boxed_body()
        .map_into_right_body();
    tracing::trace!(code, "rendered a foreign error");
    Ok(ErrorHandlerResponse::Response(res))
}
