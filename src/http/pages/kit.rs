//! The kit every page handler takes from: what a handler answers (`Page`), the state
//! it takes (`State`), and `render`, which fills a template for the person signed in.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::error::PageError;
use super::templates::secure_headers;
use crate::http::session::SignedIn;
use crate::http::state::AppState;

/// What a page handler answers.
pub type Page = Result<HttpResponse, PageError>;

/// The app's state, as a page handler takes it.
pub type State = web::Data<AppState>;

/// Renders page `name` with `data`, adding who is signed in (`me`, with the CSRF
/// token forms carry) and the security headers.
pub fn render(
    state: &AppState,
    who: Option<&SignedIn>,
    status: StatusCode,
    name: &str,
    mut data: Value,
) -> Page {
    if let Value::Object(map) = &mut data {
        map.insert("asset_version".into(), json!(state.pages.asset_version));
        if let Some(who) = who {
            let p = &who.person;
            map.insert(
                "me".into(),
                json!({"email": p.email, "name": p.name, "is_admin": p.is_admin, "csrf": p.csrf}),
            );
        }
    }
    let body = state
        .pages
        .render(name, &data)
        .map_err(PageError::Internal)?;
    let mut res = HttpResponse::build(status);
    secure_headers(&mut res);
    if let Some(cookie) = who.and_then(|w| w.new_cookie.clone()) {
        res.cookie(cookie);
    }
    Ok(res.content_type("text/html; charset=utf-8").body(body))
}

/// The names of the people a page shows, by address (`names`, for
/// `{{person address}}`). No page carries the directory: a field for a person finds
/// people as they are typed (`pages::people_find`).
pub fn names_data(directory: &[(String, Option<String>)]) -> Value {
    let names: serde_json::Map<String, Value> = directory
        .iter()
        .filter_map(|(email, name)| Some((email.clone(), json!(name.as_ref()?))))
        .collect();
    Value::Object(names)
}

/// A link shown as a link only when it is http(s): anything else is shown as text.
pub fn safe_href(url: Option<&str>) -> Option<String> {
    crate::domain::timeline::web_href(url)
}
