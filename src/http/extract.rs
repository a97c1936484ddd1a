//! Request extractors that answer bad input in the API's own error shape.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::json::{self, JsonError};

mod path_id;

pub use path_id::{ids, plausible_id, IdOf, PathId};

/// A JSON body. Malformed JSON is a 400 naming line and column; a body of the wrong
/// shape is a 422 naming the field by its path (`actions[2].owner`); a body over
/// `server.max_body_bytes` is a 413; a non-JSON content type is a 415.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for ApiJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let content_type_ok = req
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| is_json_content_type(v.to_str().unwrap_or("")))
            .unwrap_or(true);
        let limit = req
            .app_data::<BodyLimit>()
            .map_or(BodyLimit::DEFAULT, |l| l.0);
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            if !content_type_ok {
                return Err(ApiError::UnsupportedMediaType(
                    "send the body as JSON with `Content-Type: application/json`".into(),
                ));
            }
            let bytes = body.await.map_err(|e| {
                if e.as_response_error().status_code()
                    == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE
                {
                    ApiError::PayloadTooLarge(format!(
                        "the request body is larger than the limit of {limit} bytes"
                    ))
                } else {
                    ApiError::BadRequest(format!("cannot read the request body: {e}"))
                }
            })?;
            parse_json(&bytes).map(ApiJson)
        })
    }
}

/// A JSON body that may be left out entirely (an empty body is `None`); a body that
/// is there must be valid, with the same errors as `ApiJson`.
#[derive(Debug)]
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned + 'static> FromRequest for OptionalJson<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req
            .app_data::<BodyLimit>()
            .map_or(BodyLimit::DEFAULT, |l| l.0);
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            let bytes = body.await.map_err(|e| {
                if e.as_response_error().status_code()
                    == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE
                {
                    ApiError::PayloadTooLarge(format!(
                        "the request body is larger than the limit of {limit} bytes"
                    ))
                } else {
                    ApiError::BadRequest(format!("cannot read the request body: {e}"))
                }
            })?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(OptionalJson(None));
            }
            parse_json(&bytes).map(|v| OptionalJson(Some(v)))
        })
    }
}

/// A query string. A value of the wrong type is a 422 naming the parameter.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for ApiQuery<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(parse_query(req.query_string()).map(ApiQuery))
    }
}

/// The version a write is based on, from `If-Match`: `"3"`, `W/"3"` or `3`. `None`
/// when the header is absent (the service answers 428 where it needs one); anything
/// else is a 400.
#[derive(Debug, Clone, Copy)]
pub struct IfMatch(pub Option<i32>);

impl FromRequest for IfMatch {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(parse_if_match(req.headers().get(header::IF_MATCH)).map(IfMatch))
    }
}

fn parse_if_match(value: Option<&header::HeaderValue>) -> Result<Option<i32>, ApiError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    let bare = text.trim_start_matches("W/").trim_matches('"');
    bare.parse::<i32>().map(Some).map_err(|_| {
        ApiError::BadRequest(format!(
            "If-Match must be the COE's version as its ETag gives it, e.g. \"3\" (got {text:?})"
        ))
    })
}

/// Reads a raw body up to `limit` bytes (the setting `limit_setting`); 413 past it.
pub async fn read_body(
    payload: web::Payload,
    limit: usize,
    limit_setting: &str,
) -> Result<web::Bytes, ApiError> {
    match payload.to_bytes_limited(limit).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(ApiError::BadRequest(format!(
            "cannot read the request body: {e}"
        ))),
        Err(_) => Err(ApiError::PayloadTooLarge(format!(
            "the request body is larger than the limit of {limit} bytes ({limit_setting})"
        ))),
    }
}

/// The body size limit, as app data, so that extractors can name it in errors.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl BodyLimit {
    pub const DEFAULT: usize = 2 * 1024 * 1024;
}

fn is_json_content_type(value: &str) -> bool {
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Whether a JSON text holds the escape of a NUL character. Text stored in the
/// database may not hold NUL (PostgreSQL refuses it), so the API refuses it up front
/// with a 422 rather than failing later with a 500. (Webhooks replace it instead:
/// senders cannot be asked to change.)
fn has_escaped_nul(bytes: &[u8]) -> bool {
    bytes
        .windows(6)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && w[2..].iter().all(|b| *b == b'0'))
}

/// Parses `bytes` as JSON into `T`, as an API error. Every request body of the API
/// is a JSON object: serde would also fill a struct from an array, field by field in
/// order (`[]` for a struct whose fields all have defaults), which the API refuses.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value = json::parse(bytes).map_err(ApiError::from)?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::field("body", "must be a JSON object"));
    }
    if has_escaped_nul(bytes) {
        return Err(ApiError::field(
            "body",
            "must not contain NUL characters (\\u0000)",
        ));
    }
    Ok(value)
}

/// Parses a query string into `T`, as an API error.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    if query.to_ascii_lowercase().contains("%00") {
        return Err(ApiError::field(
            "query",
            "must not contain NUL characters (%00)",
        ));
    }
    json::parse_query(query).map_err(ApiError::from)
}

impl From<JsonError> for ApiError {
    fn from(e: JsonError) -> Self {
        match e {
            JsonError::Malformed {
                line,
                column,
                message,
            } => ApiError::MalformedJson {
                line,
                column,
                message,
            },
            JsonError::Field { field, problem } => ApiError::field(field, problem),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        inner: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    fn fields(err: ApiError) -> Vec<(String, String)> {
        match err {
            ApiError::Validation(f) => f.into_iter().map(|f| (f.field, f.problem)).collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = parse_json::<Outer>(b"{\n  \"name\": \"x\",\n  oops }").unwrap_err();
        match err {
            ApiError::MalformedJson { line, column, .. } => assert_eq!((line, column), (3, 3)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn trailing_garbage_is_malformed() {
        let err = parse_json::<Inner>(b"{\"count\":1} x").unwrap_err();
        assert!(matches!(err, ApiError::MalformedJson { .. }), "{err:?}");
    }

    #[test]
    fn wrong_types_name_the_nested_field() {
        let err = parse_json::<Outer>(br#"{"name":"x","inner":[{"count":1},{"count":"two"}]}"#)
            .unwrap_err();
        let f = fields(err);
        assert_eq!(f[0].0, "inner[1].count");
        assert!(f[0].1.contains("expected u32"), "{}", f[0].1);
    }

    #[test]
    fn missing_and_unknown_fields_are_named() {
        let f = fields(parse_json::<Outer>(br#"{"inner":[]}"#).unwrap_err());
        assert_eq!(f[0], ("name".into(), "is required".into()));
        let f = fields(parse_json::<Outer>(br#"{"inner":[{}], "name":"x"}"#).unwrap_err());
        assert_eq!(f[0], ("inner[0].count".into(), "is required".into()));
        let f = fields(parse_json::<Outer>(br#"{"name":"x","inner":[],"colour":1}"#).unwrap_err());
        assert_eq!(f[0].0, "colour");
        assert!(f[0].1.starts_with("is not a known field"), "{}", f[0].1);
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Filter {
        #[serde(default)]
        limit: Option<u32>,
        #[serde(default)]
        all: bool,
    }

    #[test]
    fn a_body_must_be_an_object_even_where_an_array_would_fill_the_struct() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct AllDefault {
            #[serde(default)]
            name: Option<String>,
        }
        assert!(parse_json::<AllDefault>(b" {}").is_ok());
        for body in [&b"[]"[..], b" [null]", b"[\"x\"]"] {
            let f = fields(parse_json::<AllDefault>(body).unwrap_err());
            assert_eq!(f, vec![("body".into(), "must be a JSON object".into())]);
        }
    }

    #[test]
    fn a_why_is_an_object_not_a_pair() {
        use crate::services::coe::coes::Why;
        let why: Why = serde_json::from_str(r#"{"why":"a","because":"b"}"#).unwrap();
        assert_eq!((why.why.as_str(), why.because.as_str()), ("a", "b"));
        assert!(serde_json::from_str::<Why>(r#"["a","b"]"#).is_err());
        let err = serde_json::from_str::<Why>(r#"{"why":"a"}"#).unwrap_err();
        assert!(err.to_string().contains("because"), "{err}");
        assert!(serde_json::from_str::<Why>(r#"{"why":"a","because":"b","x":1}"#).is_err());
    }

    #[test]
    fn query_errors_name_the_parameter() {
        assert!(parse_query::<Filter>("limit=5&all=true").is_ok());
        let f = fields(parse_query::<Filter>("limit=five").unwrap_err());
        assert_eq!(f[0].0, "limit");
        let f = fields(parse_query::<Filter>("all=maybe").unwrap_err());
        assert_eq!(f[0].0, "all");
        let f = fields(parse_query::<Filter>("colour=red").unwrap_err());
        assert_eq!(f[0].0, "colour");
    }

    #[test]
    fn if_match_takes_a_strong_weak_or_bare_version() {
        let parse = |v: &'static str| parse_if_match(Some(&header::HeaderValue::from_static(v)));
        assert_eq!(parse("\"3\"").unwrap(), Some(3));
        assert_eq!(parse("W/\"4\"").unwrap(), Some(4));
        assert_eq!(parse(" 5 ").unwrap(), Some(5));
        assert_eq!(parse_if_match(None).unwrap(), None);
        match parse("*") {
            Err(ApiError::BadRequest(m)) => assert!(m.contains("(got \"*\")"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_content_types() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(is_json_content_type("application/vnd.api+json"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/x-www-form-urlencoded"));
    }
}
