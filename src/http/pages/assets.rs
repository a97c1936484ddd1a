//! The files of `/static`: the stylesheet and the script, embedded in the binary.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};

use super::kit::State;
use super::templates::{APP_CSS, APP_JS};
use crate::http::state::AppState;

/// The stylesheet.
pub(super) async fn stylesheet(req: HttpRequest, state: State) -> HttpResponse {
    asset(&req, &state, "text/css; charset=utf-8", APP_CSS)
}

/// The script: what only script can add to the pages (`templates/static/app.js`).
pub(super) async fn script(req: HttpRequest, state: State) -> HttpResponse {
    asset(&req, &state, "text/javascript; charset=utf-8", APP_JS)
}

/// A file of `/static`: cached by browsers for a day (its URL carries the assets'
/// hash, so a new version is fetched at once), with an ETag for revalidation.
fn asset(
    req: &HttpRequest,
    state: &AppState,
    content_type: &str,
    body: &'static str,
) -> HttpResponse {
    let etag = format!("\"{}\"", state.pages.asset_version);
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut res = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    res.insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .insert_header((
            header::ETAG,
            HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"\"")),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if fresh {
        return res.finish();
    }
    res.content_type(content_type).body(body)
}
