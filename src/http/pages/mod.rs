//! The web pages, rendered on the server with handlebars from `templates/pages/`
//! (embedded in the binary, HTML-escaped). Every page that shows or changes something
//! takes a `SignedIn` person; every form that changes something carries the session's
//! CSRF token. The pages call the same services as the API.

mod actions;
mod admin;
mod board;
mod coe_forms;
mod coes;
mod dashboard;
mod home;
mod incidents;
mod markdown;
mod me;
mod review;
mod search;
mod sign_in;

use std::fmt;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use handlebars::Handlebars;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::db::DbConnection;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::access::Editor;

macro_rules! embedded {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/pages/", $name, ".hbs")))),*]
    };
}

/// The page templates, by name; `layout` is the partial every page fills.
const TEMPLATES: &[(&str, &str)] = embedded!(
    "layout",
    "error",
    "sign_in",
    "sign_in_sent",
    "sign_in_confirm",
    "home",
    "incidents",
    "incident",
    "coe",
    "action",
    "coe_print",
    "coe_history",
    "timeline_entry",
    "board",
    "dashboard",
    "search",
    "me",
    "admin_tabs",
    "admin_people",
    "admin_tokens",
    "admin_outbox",
    "admin_sessions",
);

const APP_CSS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/templates/static/app.css"
));

/// What a page response carries besides its body: no caching of pages (they show
/// who is signed in), and a content security policy that allows nothing from
/// elsewhere and no inline script or style.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

handlebars::handlebars_helper!(time: |at: str| readable_time(at));
handlebars::handlebars_helper!(query_value: |v: str| form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>());

/// What a path segment may not hold as it is: it would end the segment or the path
/// (`/ ? #`), start an escape (`%`), or is not allowed in a URL at all.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'\\')
    .add(b'`')
    .add(b'{')
    .add(b'}');

// `{{segment value}}`: a value percent-encoded as one path segment, for every path a
// template builds from data (`/admin/people/{{segment email}}/admin`).
handlebars::handlebars_helper!(segment: |v: str| percent_encoding::utf8_percent_encode(v, PATH_SEGMENT).to_string());

/// An RFC 3339 UTC time as people read it: `2026-11-29 10:03 UTC`.
fn readable_time(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at).map_or_else(
        |_| at.to_owned(),
        |t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        },
    )
}

/// Escapes text for HTML content and quoted attributes.
pub(super) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// The page templates, compiled once at start-up.
pub struct PageTemplates {
    registry: Handlebars<'static>,
    /// A short hash of the stylesheet, so that its URL changes when it does.
    pub asset_version: String,
}

impl fmt::Debug for PageTemplates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageTemplates").finish_non_exhaustive()
    }
}

impl PageTemplates {
    pub fn load() -> Result<PageTemplates, String> {
        let mut registry = Handlebars::new();
        registry.set_strict_mode(false);
        registry.set_dev_mode(false);
        // Every attribute in the templates is quoted, so `&`, `<`, `>`, `"` and `'` are
        // what must be escaped (handlebars' default also escapes `=` and backticks,
        // for unquoted attributes, which would make every link's query unreadable).
        registry.register_escape_fn(escape_html);
        registry.register_helper("time", Box::new(time));
        registry.register_helper("markdown", Box::new(markdown::helper));
        registry.register_helper("highlight", Box::new(search::helper));
        registry.register_helper("query_value", Box::new(query_value));
        registry.register_helper("segment", Box::new(segment));
        for (name, text) in TEMPLATES {
            let result = if *name == "layout" || *name == "admin_tabs" {
                registry.register_partial(name, *text)
            } else {
                registry.register_template_string(name, *text)
            };
            result.map_err(|e| format!("page template {name}: {e}"))?;
        }
        let digest = Sha256::digest(APP_CSS.as_bytes());
        let asset_version = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(PageTemplates {
            registry,
            asset_version,
        })
    }

    fn render(&self, name: &str, data: &Value) -> Result<String, PageError> {
        self.registry
            .render(name, data)
            .map_err(|e| PageError::Internal(format!("page {name}: {e}")))
    }
}

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
        // The error page cannot reach the templates from here: it is small and fixed.
        let body = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{heading} · coe</title><link rel=\"stylesheet\" href=\"/static/app.css\"></head>\
             <body><header class=\"top\"><a class=\"brand\" href=\"/\">coe</a></header>\
             <main id=\"main\"><h1>{heading}</h1><p role=\"alert\">{message}</p>\
             <p><a href=\"/\">Back to my work</a> · <a href=\"/sign-in\">Sign in</a></p></main></body></html>",
            heading = self.heading(),
            message = handlebars::html_escape(&message),
        );
        let mut res = HttpResponse::build(self.status_code());
        secure_headers(&mut res);
        res.content_type("text/html; charset=utf-8").body(body)
    }
}

fn secure_headers(res: &mut actix_web::HttpResponseBuilder) {
    res.insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::CACHE_CONTROL, "no-store"));
}

/// Renders page `name` with `data`, adding who is signed in (`me`, with the CSRF
/// token forms carry) and the security headers.
pub fn render(
    state: &AppState,
    who: Option<&SignedIn>,
    status: StatusCode,
    name: &str,
    mut data: Value,
) -> Result<HttpResponse, PageError> {
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
    let body = state.pages.render(name, &data)?;
    let mut res = HttpResponse::build(status);
    secure_headers(&mut res);
    if let Some(cookie) = who.and_then(|w| w.new_cookie.clone()) {
        res.cookie(cookie);
    }
    Ok(res.content_type("text/html; charset=utf-8").body(body))
}

/// Runs `work` on a pooled connection as the signed-in person: the same `Editor` the
/// API's callers become, so the services' access rules decide.
pub async fn as_person<T: Send + 'static>(
    state: &web::Data<AppState>,
    who: &SignedIn,
    work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, PageError> {
    let (email, is_admin) = (who.person.email.clone(), who.person.is_admin);
    Ok(with_conn(state, move |conn, state| {
        let editor = Editor {
            actor: &email,
            email: Some(&email),
            is_admin,
            principal: &email,
        };
        work(conn, state, &editor)
    })
    .await?)
}

/// A submitted form's fields, in order (a name may repeat: the 5 whys' steps).
pub struct Fields(Vec<(String, String)>);

impl Fields {
    pub fn new(form: web::Form<Vec<(String, String)>>) -> Fields {
        Fields(form.into_inner())
    }

    /// The field's value as sent, or "".
    pub fn text(&self, name: &str) -> String {
        self.all(name).next().unwrap_or_default().to_owned()
    }

    /// The field's value, trimmed, when it is not empty.
    pub fn filled(&self, name: &str) -> Option<String> {
        self.all(name)
            .next()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    }

    /// Every value of a repeated field.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The COE version the page was loaded with.
    pub fn version(&self) -> Option<i32> {
        self.filled("version").and_then(|v| v.parse().ok())
    }

    /// The fields as a JSON object (the first value of each), to show again.
    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (name, value) in &self.0 {
            if name != "csrf" && !map.contains_key(name) {
                map.insert(name.clone(), Value::String(value.clone()));
            }
        }
        Value::Object(map)
    }

    /// Checks the form's CSRF token against the session's.
    pub fn check(&self, who: &SignedIn) -> Result<(), PageError> {
        who.check_csrf(&self.text("csrf"))
    }
}

/// A `303 See Other` to `location`: where a form that worked sends the browser.
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// The stylesheet: cached by browsers for a day (its URL carries its hash, so a new
/// version is fetched at once), with an ETag for revalidation.
async fn stylesheet(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
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
    res.content_type("text/css; charset=utf-8").body(APP_CSS)
}

/// The page routes (not part of the API's route table or its OpenAPI document).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home::home))
        .route("/sign-in", web::get().to(sign_in::form))
        .route("/sign-in", web::post().to(sign_in::request))
        .route("/sign-in/confirm", web::get().to(sign_in::confirm_form))
        .route("/sign-in/confirm", web::post().to(sign_in::confirm))
        .route("/sign-out", web::post().to(sign_in::sign_out))
        .route("/board", web::get().to(board::board))
        .route("/dashboard", web::get().to(dashboard::dashboard))
        .route("/search", web::get().to(search::search))
        .route("/me", web::get().to(me::show))
        .route("/me/calendar", web::post().to(me::new_calendar))
        .route("/me/sign-out-others", web::post().to(me::sign_out_others))
        .route(
            "/admin",
            web::get().to(|| async { see_other("/admin/people") }),
        )
        .route("/admin/people", web::get().to(admin::people_list))
        .route("/admin/people/import", web::post().to(admin::people_import))
        .route(
            "/admin/people/{email}/admin",
            web::post().to(admin::people_admin),
        )
        .route(
            "/admin/people/{email}/sign-out",
            web::post().to(admin::people_sign_out),
        )
        .route("/admin/tokens", web::get().to(admin::tokens_list))
        .route("/admin/tokens", web::post().to(admin::tokens_create))
        .route(
            "/admin/tokens/{name}/revoke",
            web::post().to(admin::tokens_revoke),
        )
        .route("/admin/outbox", web::get().to(admin::outbox_list))
        .route(
            "/admin/outbox/{id}/retry",
            web::post().to(admin::outbox_retry),
        )
        .route("/admin/sessions", web::get().to(admin::sessions_list))
        .route(
            "/admin/sessions/{id}/end",
            web::post().to(admin::sessions_end),
        )
        .route("/incidents", web::get().to(incidents::list))
        .route("/incidents/{id}", web::get().to(incidents::show))
        .route("/incidents/{id}/coe", web::post().to(incidents::open_coe))
        .route("/coes/{id}", web::get().to(coes::show))
        .route("/coes/{id}/print", web::get().to(review::print))
        .route("/coes/{id}/history", web::get().to(review::history))
        .route(
            "/coes/{id}/sections/{key}",
            web::post().to(coe_forms::save_section),
        )
        .route("/coes/{id}/details", web::post().to(coe_forms::details))
        .route(
            "/coes/{id}/timeline",
            web::post().to(coe_forms::add_timeline),
        )
        .route(
            "/coes/{id}/timeline/{entry}",
            web::get().to(coe_forms::timeline_entry),
        )
        .route(
            "/coes/{id}/timeline/{entry}",
            web::post().to(coe_forms::edit_timeline),
        )
        .route("/coes/{id}/whys", web::post().to(coe_forms::add_whys))
        .route(
            "/coes/{id}/whys/{chain}",
            web::post().to(coe_forms::edit_whys),
        )
        .route("/coes/{id}/related", web::post().to(coe_forms::add_related))
        .route(
            "/coes/{id}/related/{item}/delete",
            web::post().to(coe_forms::delete_related),
        )
        .route("/coes/{id}/actions", web::post().to(coe_forms::add_action))
        .route("/coes/{id}/review/{step}", web::post().to(review::step))
        .route("/actions/{id}", web::get().to(actions::show))
        .route(
            "/actions/{id}/due-date",
            web::post().to(actions::move_due_date),
        )
        .route("/actions/{id}/{verb}", web::post().to(actions::transition))
        .route("/static/app.css", web::get().to(stylesheet));
}
