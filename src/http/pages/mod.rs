//! The web pages, rendered on the server with handlebars from `templates/pages/`
//! (embedded in the binary, HTML-escaped). Every page that shows or changes something
//! takes a `SignedIn` person; every form that changes something carries the session's
//! CSRF token. The pages call the same services as the API.

mod actions;
mod admin;
mod board;
mod coe_answer;
mod coe_forms;
mod coe_history;
mod coe_list;
mod coe_timeline;
mod coes;
mod dashboard;
mod diff;
mod extract;
mod home;
mod incidents;
mod markdown;
mod me;
mod meeting;
mod oidc;
mod outcome;
mod people_find;
mod query;
mod report;
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

use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::AppState;

use extract::form;
pub use extract::{Admin, CsrfForm, Fields, SameOrigin};
/// What a page handler answers.
pub type Page = Result<HttpResponse, PageError>;

/// The app's state, as a page handler takes it.
pub type State = web::Data<AppState>;

pub use outcome::{
    as_person, as_service, change, keep_form, kept_form, see_other, write_as_person, Again,
    FormError, Outcome,
};

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
    "sign_in_failed",
    "signed_out",
    "home",
    "incidents",
    "incident",
    "coe",
    "action",
    "coe_print",
    "coe_history",
    "coe_list",
    "report",
    "timeline_entry",
    "board",
    "dashboard",
    "review_meeting",
    "search",
    "me",
    "admin_tabs",
    "admin_people",
    "admin_tokens",
    "admin_outbox",
    "admin_email",
    "admin_sessions",
    "admin_chat",
    "admin_ownership",
    "form_errors",
    "nav_links",
);

/// The templates other templates include (`{{> layout}}`), not pages of their own.
const PARTIALS: &[&str] = &["layout", "admin_tabs", "form_errors", "nav_links"];

const APP_CSS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/templates/static/app.css"
));

const APP_JS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/templates/static/app.js"
));

/// What a page response carries besides its body: no caching of pages (they show
/// who is signed in), and a content security policy that allows nothing from
/// elsewhere and no inline script or style (the script may ask this site only: the
/// people picker's `/people/find`).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; \
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
handlebars::handlebars_helper!(words: |v: str| state_words(v));
handlebars::handlebars_helper!(why_question: |v: str| as_question(v));

/// A state or verdict as words: `changes_requested` → "changes requested",
/// `wont_do` → "won't do".
fn state_words(value: &str) -> String {
    match value {
        "wont_do" => "won't do".to_owned(),
        other => other.replace('_', " "),
    }
}

/// A 5-whys step's question as a question, whether it was typed as one or not:
/// "checkout failed" → "Why checkout failed?"; "Why did checkout fail?" stays.
fn as_question(why: &str) -> String {
    let text = why.trim().trim_end_matches(['?', ' ']);
    let asked = text
        .get(..4)
        .is_some_and(|start| start.eq_ignore_ascii_case("why "));
    if asked {
        format!("Why {}?", &text[4..])
    } else {
        format!("Why {text}?")
    }
}

handlebars::handlebars_helper!(segment: |v: str| percent_encoding::utf8_percent_encode(v, PATH_SEGMENT).to_string());

/// `{{csrf_field}}`: the hidden field with the session's CSRF token that every form
/// of a signed-in page carries; the one way a template reaches the token. A form on a
/// page without a signed-in person is a bug, and fails to render.
fn csrf_field(
    _: &handlebars::Helper<'_>,
    _: &Handlebars<'_>,
    ctx: &handlebars::Context,
    _: &mut handlebars::RenderContext<'_, '_>,
    out: &mut dyn handlebars::Output,
) -> handlebars::HelperResult {
    let token = ctx
        .data()
        .get("me")
        .and_then(|me| me.get("csrf"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            handlebars::RenderErrorReason::Other(
                "{{csrf_field}} on a page without a signed-in person".into(),
            )
        })?;
    out.write(&format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape_html(token)
    ))?;
    Ok(())
}

/// `{{person address}}`: a person as the pages show them, by name (the address in
/// the title) when the page's `names` (address → name, `people::names`) has one,
/// else by address.
fn person(
    h: &handlebars::Helper<'_>,
    _: &Handlebars<'_>,
    ctx: &handlebars::Context,
    _: &mut handlebars::RenderContext<'_, '_>,
    out: &mut dyn handlebars::Output,
) -> handlebars::HelperResult {
    let email = h
        .param(0)
        .and_then(|p| p.value().as_str())
        .unwrap_or_default();
    let name = ctx
        .data()
        .get("names")
        .and_then(|names| names.get(email))
        .and_then(Value::as_str);
    match name {
        Some(name) => out.write(&format!(
            "<span class=\"person\" title=\"{}\">{}</span>",
            escape_html(email),
            escape_html(name)
        ))?,
        None => out.write(&escape_html(email))?,
    }
    Ok(())
}

/// A helper that writes the HTML it makes of its first parameter (with the second,
/// if any): `{{markdown text}}`, `{{highlight text query}}`. What it makes is escaped
/// by the function itself, never by a triple-stash in a template.
struct WritesHtml(&'static str, fn(&str, &str) -> String);

impl handlebars::HelperDef for WritesHtml {
    fn call<'reg: 'rc, 'rc>(
        &self,
        h: &handlebars::Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc handlebars::Context,
        _: &mut handlebars::RenderContext<'reg, 'rc>,
        out: &mut dyn handlebars::Output,
    ) -> handlebars::HelperResult {
        let text = h
            .param(0)
            .ok_or(handlebars::RenderErrorReason::ParamNotFoundForIndex(
                self.0, 0,
            ))?;
        let with = h.param(1).and_then(|q| q.value().as_str()).unwrap_or("");
        if let Some(text) = text.value().as_str() {
            out.write(&(self.1)(text, with))?;
        }
        Ok(())
    }
}

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

/// The templates the first `load` compiled, for the error page: an error answers
/// where no state is at hand (`ResponseError::error_response`).
static LOADED: std::sync::OnceLock<std::sync::Arc<PageTemplates>> = std::sync::OnceLock::new();

impl PageTemplates {
    /// Compiles the templates (once per process; later calls share them).
    pub fn load() -> Result<std::sync::Arc<PageTemplates>, String> {
        if let Some(loaded) = LOADED.get() {
            return Ok(loaded.clone());
        }
        let loaded = std::sync::Arc::new(Self::compile()?);
        Ok(LOADED.get_or_init(|| loaded).clone())
    }

    fn compile() -> Result<PageTemplates, String> {
        let mut registry = Handlebars::new();
        registry.set_strict_mode(true);
        registry.set_dev_mode(false);
        // Every attribute in the templates is quoted, so `&`, `<`, `>`, `"` and `'` are
        // what must be escaped (handlebars' default also escapes `=` and backticks,
        // for unquoted attributes, which would make every link's query unreadable).
        registry.register_escape_fn(escape_html);
        registry.register_helper("time", Box::new(time));
        registry.register_helper(
            "markdown",
            Box::new(WritesHtml("markdown", |text, _| markdown::to_html(text))),
        );
        registry.register_helper(
            "highlight",
            Box::new(WritesHtml("highlight", |text, query| {
                search::highlight(text, &search::terms(query))
            })),
        );
        registry.register_helper(
            "diff",
            Box::new(WritesHtml("diff", |after, before| {
                diff::words(before, after)
            })),
        );
        registry.register_helper("query_value", Box::new(query_value));
        registry.register_helper("segment", Box::new(segment));
        registry.register_helper("csrf_field", Box::new(csrf_field));
        registry.register_helper("person", Box::new(person));
        registry.register_helper("words", Box::new(words));
        registry.register_helper("why_question", Box::new(why_question));
        for (name, text) in TEMPLATES {
            let result = if PARTIALS.contains(name) {
                registry.register_partial(name, *text)
            } else {
                registry.register_template_string(name, *text)
            };
            result.map_err(|e| format!("page template {name}: {e}"))?;
        }
        let digest = Sha256::digest([APP_CSS, APP_JS].concat().as_bytes());
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
        let body = LOADED
            .get()
            .ok_or_else(|| "the page templates are not loaded".to_owned())
            .and_then(|pages| {
                let mut data = data;
                data["asset_version"] = json!(pages.asset_version);
                pages.render("error", &data).map_err(|e| e.to_string())
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
    let body = state.pages.render(name, &data)?;
    let mut res = HttpResponse::build(status);
    secure_headers(&mut res);
    if let Some(cookie) = who.and_then(|w| w.new_cookie.clone()) {
        res.cookie(cookie);
    }
    Ok(res.content_type("text/html; charset=utf-8").body(body))
}

/// The stylesheet.
async fn stylesheet(req: HttpRequest, state: State) -> HttpResponse {
    asset(&req, &state, "text/css; charset=utf-8", APP_CSS)
}

/// The script: what only script can add to the pages (`templates/static/app.js`).
async fn script(req: HttpRequest, state: State) -> HttpResponse {
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

/// The page routes and `ROUTES`, their list (not part of the API's route table or its
/// OpenAPI document). A POST is registered through `extract::form`: its handler must
/// take a guarded form first.
macro_rules! page_routes {
    ($($method:ident $path:literal => $handler:path,)*) => {
        /// Every page route as (method, path), for the tests that walk them.
        pub const ROUTES: &[(&str, &str)] = &[$((page_routes!(@name $method), $path)),*];

        pub fn configure(cfg: &mut web::ServiceConfig) {
            $(cfg.route($path, page_routes!(@route $method $handler));)*
        }
    };
    (@name get) => { "GET" };
    (@name post) => { "POST" };
    (@route get $handler:path) => { web::get().to($handler) };
    (@route post $handler:path) => { form($handler) };
}

page_routes! {
    get "/" => home::home,
    get "/sign-in" => sign_in::form,
    post "/sign-in" => sign_in::request,
    get "/sign-in/confirm" => sign_in::confirm_form,
    post "/sign-in/confirm" => sign_in::confirm,
    post "/sign-out" => sign_in::sign_out,
    get "/sign-in/oidc" => oidc::start,
    get "/sign-in/oidc/callback" => oidc::callback,
    get "/board" => board::board,
    get "/dashboard" => dashboard::dashboard,
    get "/review-meeting" => meeting::review_meeting,
    get "/search" => search::search,
    get "/people/find" => people_find::find,
    get "/teams/find" => people_find::find_teams,
    get "/me" => me::show,
    post "/me/calendar" => me::new_calendar,
    post "/me/sign-out-others" => me::sign_out_others,
    get "/admin" => admin::home,
    get "/admin/people" => admin::people_list,
    post "/admin/people/import" => admin::people_import,
    post "/admin/people/{email}/admin" => admin::people_admin,
    post "/admin/people/{email}/bar-raiser" => admin::people_bar_raiser,
    post "/admin/people/{email}/sign-out" => admin::people_sign_out,
    get "/admin/tokens" => admin::tokens_list,
    post "/admin/tokens" => admin::tokens_create,
    post "/admin/tokens/{name}/revoke" => admin::tokens_revoke,
    get "/admin/outbox" => admin::outbox_list,
    get "/admin/outbox/{id}" => admin::outbox_email,
    post "/admin/outbox/{id}/retry" => admin::outbox_retry,
    get "/admin/sessions" => admin::sessions_list,
    get "/admin/ownership" => admin::ownership_list,
    post "/admin/ownership/services" => admin::ownership_service,
    post "/admin/ownership/teams" => admin::ownership_team,
    post "/admin/sessions/{id}/end" => admin::sessions_end,
    get "/admin/chat" => admin::chat_list,
    post "/admin/chat/{name}/test" => admin::chat_test,
    get "/report" => report::form,
    post "/report" => report::submit,
    get "/incidents" => incidents::list,
    get "/incidents/{id}" => incidents::show,
    post "/incidents/{id}/coe" => incidents::open_coe,
    get "/coes" => coe_list::list,
    get "/coes/{id}" => coes::show,
    get "/coes/{id}/print" => review::print,
    get "/coes/{id}/history" => coe_history::history,
    post "/coes/{id}/sections" => coe_forms::save_sections,
    post "/coes/{id}/details" => coe_forms::details,
    post "/coes/{id}/take" => coe_forms::take_ownership,
    post "/coes/{id}/timeline" => coe_forms::add_timeline,
    get "/coes/{id}/timeline/{entry}" => coe_timeline::timeline_entry,
    post "/coes/{id}/timeline/{entry}" => coe_timeline::edit_timeline,
    post "/coes/{id}/whys" => coe_forms::add_whys,
    post "/coes/{id}/whys/{chain}" => coe_forms::edit_whys,
    post "/coes/{id}/related" => coe_forms::add_related,
    post "/coes/{id}/related/{item}/delete" => coe_forms::delete_related,
    post "/coes/{id}/actions" => coe_forms::add_action,
    post "/coes/{id}/review/{step}" => review::step,
    post "/coes/{id}/comments" => coe_forms::add_comment,
    post "/coes/{id}/incidents" => coe_forms::attach_incident,
    post "/coes/{id}/merge" => coe_forms::merge,
    post "/coes/{id}/incidents/{incident}/detach" => coe_forms::detach_incident,
    post "/coes/{id}/comments/{comment}/answer" => coe_forms::answer_comment,
    get "/actions/{id}" => actions::show,
    post "/actions/{id}/due-date" => actions::move_due_date,
    post "/actions/{id}/delete" => actions::delete,
    post "/actions/{id}/verify" => actions::verify,
    post "/actions/{id}/{verb}" => actions::transition,
    get "/static/app.css" => stylesheet,
    get "/static/app.js" => script,
}

#[cfg(test)]
mod tests {
    use super::{as_question, state_words};

    #[test]
    fn a_why_reads_as_one_question_and_states_read_as_words() {
        assert_eq!(as_question("checkout failed"), "Why checkout failed?");
        assert_eq!(
            as_question("Why did checkout fail?"),
            "Why did checkout fail?"
        );
        assert_eq!(as_question("why did it fail ??"), "Why did it fail?");
        assert_eq!(as_question("Whyever not"), "Why Whyever not?");
        assert_eq!(state_words("changes_requested"), "changes requested");
        assert_eq!(state_words("wont_do"), "won't do");
    }
}
