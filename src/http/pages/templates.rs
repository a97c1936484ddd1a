//! How pages are made: the templates (embedded from `templates/pages/`, compiled once
//! at start-up, HTML-escaped), their helpers, and the headers every page answers with.
//! A leaf: nothing else of the pages is reached from here but the text helpers.

use std::fmt;

use actix_web::http::header;
use handlebars::Handlebars;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::html::escape_html;
use super::{diff, highlight, markdown};

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
    "notifications",
    "admin_tabs",
    "admin_people",
    "admin_tokens",
    "admin_outbox",
    "admin_email",
    "admin_sessions",
    "admin_chat",
    "admin_trackers",
    "admin_connection",
    "admin_templates",
    "admin_template",
    "summary",
    "public_layout",
    "notice",
    "summary_gone",
    "publish_preview",
    "admin_published",
    "chat_import",
    "admin_ownership",
    "form_errors",
    "nav_links",
);

/// The templates other templates include (`{{> layout}}`), not pages of their own.
const PARTIALS: &[&str] = &[
    "layout",
    "public_layout",
    "notice",
    "admin_tabs",
    "form_errors",
    "nav_links",
];

pub(super) const APP_CSS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/templates/static/app.css"
));

pub(super) const APP_JS: &str = include_str!(concat!(
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

/// `{{time at}}`: a stored time as a person reads it, in the reader's time zone (the
/// page's `zone`: theirs, else the organisation's), the zone named.
struct Time;

impl handlebars::HelperDef for Time {
    fn call_inner<'reg: 'rc, 'rc>(
        &self,
        h: &handlebars::Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        ctx: &'rc handlebars::Context,
        _: &mut handlebars::RenderContext<'reg, 'rc>,
    ) -> Result<handlebars::ScopedJson<'rc>, handlebars::RenderError> {
        let at = h
            .param(0)
            .and_then(|p| p.value().as_str())
            .ok_or_else(|| handlebars::RenderErrorReason::ParamNotFoundForIndex("time", 0))?;
        let zone = ctx
            .data()
            .get("zone")
            .and_then(Value::as_str)
            .and_then(|z| z.parse::<chrono_tz::Tz>().ok())
            .unwrap_or(chrono_tz::Tz::UTC);
        Ok(handlebars::ScopedJson::Derived(Value::String(
            readable_time(at, zone),
        )))
    }
}
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
// A timeline entry's kind in words ("started" → "The outage started").
handlebars::handlebars_helper!(timeline_kind: |v: str| crate::domain::coe::TimelineKind::parse(v)
    .map_or_else(|| state_words(v), |k| k.words().to_owned()));
handlebars::handlebars_helper!(why_question: |v: str| as_question(v));
// A 5-whys answer after "Because": "The cart service…" reads "because the cart service…".
handlebars::handlebars_helper!(because: |v: str| after_because(v));

/// An answer as it reads after "Because ": its first word in lower case when it is an
/// ordinary capitalised word ("The" → "the"), not a name in capitals ("CPU"), "I"
/// or an already lower-case word.
fn after_because(answer: &str) -> String {
    let text = answer.trim();
    let text = text
        .strip_prefix("Because ")
        .or_else(|| text.strip_prefix("because "))
        .unwrap_or(text);
    let first_word = text.split_whitespace().next().unwrap_or("");
    let mut chars = first_word.chars();
    let ordinary = chars.next().is_some_and(char::is_uppercase)
        && first_word.chars().count() > 1
        && chars.all(char::is_lowercase);
    if ordinary {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars();
        out.extend(chars.next().map(|c| c.to_lowercase()).into_iter().flatten());
        out.extend(chars);
        out
    } else {
        text.to_owned()
    }
}
// An email's kind in words ("sign_in" → "sign-in link").
handlebars::handlebars_helper!(email_kind: |v: str| crate::email::Kind::parse(v)
    .map_or_else(|| state_words(v), |k| k.words().to_owned()));
// How long something has waited, in words: "since today", "for a day", "for 3 days".
handlebars::handlebars_helper!(waited: |days: i64| waited_words(days));
// How long ago, in words: "today", "yesterday", "3 days ago".
handlebars::handlebars_helper!(ago: |days: i64| ago_words(days));

/// Days waited, as a person says it (never "0 days").
pub(super) fn waited_words(days: i64) -> String {
    match days {
        ..=0 => "since today".to_owned(),
        1 => "for a day".to_owned(),
        n => format!("for {n} days"),
    }
}

/// Days ago, as a person says it.
fn ago_words(days: i64) -> String {
    match days {
        ..=0 => "today".to_owned(),
        1 => "yesterday".to_owned(),
        n => format!("{n} days ago"),
    }
}

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
fn readable_time(at: &str, zone: chrono_tz::Tz) -> String {
    chrono::DateTime::parse_from_rfc3339(at).map_or_else(
        |_| at.to_owned(),
        |t| {
            t.with_timezone(&zone)
                .format("%Y-%m-%d %H:%M %Z")
                .to_string()
        },
    )
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
        registry.register_helper("time", Box::new(Time));
        registry.register_helper(
            "markdown",
            Box::new(WritesHtml("markdown", |text, _| markdown::to_html(text))),
        );
        registry.register_helper(
            "highlight",
            Box::new(WritesHtml("highlight", |text, query| {
                highlight::highlight(text, &highlight::terms(query))
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
        registry.register_helper("timeline_kind", Box::new(timeline_kind));
        registry.register_helper("why_question", Box::new(why_question));
        registry.register_helper("waited", Box::new(waited));
        registry.register_helper("after_because", Box::new(because));
        registry.register_helper("email_kind", Box::new(email_kind));
        registry.register_helper("ago", Box::new(ago));
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

    /// Page `name` filled with `data`; the error names the page.
    pub fn render(&self, name: &str, data: &Value) -> Result<String, String> {
        self.registry
            .render(name, data)
            .map_err(|e| format!("page {name}: {e}"))
    }

    /// The templates compiled, if `load` ran: for the error page, which answers where
    /// no state is at hand (`ResponseError::error_response`).
    pub fn loaded() -> Option<std::sync::Arc<PageTemplates>> {
        LOADED.get().cloned()
    }
}

pub(super) fn secure_headers(res: &mut actix_web::HttpResponseBuilder) {
    res.insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::CACHE_CONTROL, "no-store"));
}

#[cfg(test)]
mod tests {
    use super::{after_because, as_question, state_words, waited_words};

    #[test]
    fn an_answer_reads_on_after_because_and_days_read_as_words() {
        assert_eq!(
            after_because("The cart service ran out of connections"),
            "the cart service ran out of connections"
        );
        assert_eq!(after_because("CPU was saturated"), "CPU was saturated");
        assert_eq!(after_because("I restarted it"), "I restarted it");
        assert_eq!(
            after_because("Because the pool was small"),
            "the pool was small"
        );
        assert_eq!(after_because("PgBouncer capped it"), "PgBouncer capped it");
        assert_eq!(waited_words(0), "since today");
        assert_eq!(waited_words(1), "for a day");
        assert_eq!(waited_words(3), "for 3 days");
    }

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
