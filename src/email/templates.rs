//! Email templates: `templates/email/<kind>/{subject,body.txt,body.html}.hbs` with shared
//! header and footer partials. The defaults are embedded in the binary; an operator's
//! folder (`email.templates_dir`) overrides any of them file by file. Both registries
//! run in strict mode: a missing variable is an error, never an empty string in a mail.

use std::path::Path;

use handlebars::Handlebars;
use serde_json::Value;

use super::content::Kind;
use super::{clean_line, clean_text};

/// The templates as shipped, by their path under `templates/email/`.
macro_rules! embedded {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../templates/email/", $path)))),*]
    };
}

const DEFAULTS: &[(&str, &str)] = embedded!(
    "partials/header.txt.hbs",
    "partials/footer.txt.hbs",
    "partials/header.html.hbs",
    "partials/footer.html.hbs",
    "overdue_digest/subject.hbs",
    "overdue_digest/body.txt.hbs",
    "overdue_digest/body.html.hbs",
    "escalation/subject.hbs",
    "escalation/body.txt.hbs",
    "escalation/body.html.hbs",
    "coe_opened/subject.hbs",
    "coe_opened/body.txt.hbs",
    "coe_opened/body.html.hbs",
    "writeup_overdue/subject.hbs",
    "writeup_overdue/body.txt.hbs",
    "writeup_overdue/body.html.hbs",
    "review_requested/subject.hbs",
    "review_requested/body.txt.hbs",
    "review_requested/body.html.hbs",
    "changes_requested/subject.hbs",
    "changes_requested/body.txt.hbs",
    "changes_requested/body.html.hbs",
    "approved/subject.hbs",
    "approved/body.txt.hbs",
    "approved/body.html.hbs",
    "inspection_digest/subject.hbs",
    "inspection_digest/body.txt.hbs",
    "inspection_digest/body.html.hbs",
    "action_assigned/subject.hbs",
    "action_assigned/body.txt.hbs",
    "action_assigned/body.html.hbs",
    "coe_assigned/subject.hbs",
    "coe_assigned/body.txt.hbs",
    "coe_assigned/body.html.hbs",
    "sign_in/subject.hbs",
    "sign_in/body.txt.hbs",
    "sign_in/body.html.hbs",
    "coe_merged/subject.hbs",
    "coe_merged/body.txt.hbs",
    "coe_merged/body.html.hbs",
    "action_recurred/subject.hbs",
    "action_recurred/body.txt.hbs",
    "action_recurred/body.html.hbs",
    "action_verification/subject.hbs",
    "action_verification/body.txt.hbs",
    "action_verification/body.html.hbs",
    "verifications_waiting/subject.hbs",
    "verifications_waiting/body.txt.hbs",
    "verifications_waiting/body.html.hbs",
    "work_handed_over/subject.hbs",
    "work_handed_over/body.txt.hbs",
    "work_handed_over/body.html.hbs",
    "ticket_closed/subject.hbs",
    "ticket_closed/body.txt.hbs",
    "ticket_closed/body.html.hbs",
    "risk_acceptance/subject.hbs",
    "risk_acceptance/body.txt.hbs",
    "risk_acceptance/body.html.hbs",
    "drill_recheck/subject.hbs",
    "drill_recheck/body.txt.hbs",
    "drill_recheck/body.html.hbs",
    "review_meeting/subject.hbs",
    "review_meeting/body.txt.hbs",
    "review_meeting/body.html.hbs",
);

/// Longest subject, in characters; longer ones are cut with an ellipsis.
const MAX_SUBJECT_CHARS: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("email template {path}: {message}")]
    Load { path: String, message: String },
    #[error("email template {name}: {message}")]
    Render { name: String, message: String },
}

/// One email, rendered and cleaned, ready for the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// The compiled templates; cheap to share, safe to use from any thread.
pub struct EmailTemplates {
    /// Subjects and text bodies: not HTML-escaped.
    text: Handlebars<'static>,
    /// HTML bodies: every value HTML-escaped.
    html: Handlebars<'static>,
    public_url: String,
}

impl std::fmt::Debug for EmailTemplates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailTemplates").finish_non_exhaustive()
    }
}

impl EmailTemplates {
    /// The embedded templates, overridden file by file from `dir`; each one is
    /// compiled and rendered once with sample data, so a broken override stops start-up.
    pub fn load(dir: Option<&Path>, public_url: &str) -> Result<EmailTemplates, TemplateError> {
        let mut text = Handlebars::new();
        text.set_strict_mode(true);
        text.register_escape_fn(handlebars::no_escape);
        let mut html = Handlebars::new();
        html.set_strict_mode(true);
        for (path, default) in DEFAULTS {
            let source = match dir.map(|d| d.join(path)).filter(|p| p.is_file()) {
                Some(file) => std::fs::read_to_string(&file).map_err(|e| TemplateError::Load {
                    path: file.display().to_string(),
                    message: e.to_string(),
                })?,
                None => (*default).to_owned(),
            };
            let (registry, name) = registry_name(path, &mut text, &mut html);
            let result = if let Some(partial) = name.strip_prefix("partials/") {
                registry.register_partial(partial, source)
            } else {
                registry.register_template_string(&name, source)
            };
            result.map_err(|e| TemplateError::Load {
                path: (*path).to_owned(),
                message: e.to_string(),
            })?;
        }
        let templates = EmailTemplates {
            text,
            html,
            public_url: public_url.trim_end_matches('/').to_owned(),
        };
        for kind in Kind::ALL {
            templates.render(kind, &kind.sample(false))?;
        }
        Ok(templates)
    }

    /// Renders one email from its data; the data gets `public_url` added.
    pub fn render(&self, kind: Kind, data: &Value) -> Result<Rendered, TemplateError> {
        let name = kind.name();
        let failed = |e: handlebars::RenderError| TemplateError::Render {
            name: name.to_owned(),
            message: e.to_string(),
        };
        let mut data = data.clone();
        if let Value::Object(map) = &mut data {
            map.insert("public_url".into(), Value::String(self.public_url.clone()));
            map.insert(
                "essential".into(),
                Value::Bool(kind.class() == crate::domain::notifications::Class::Essential),
            );
            map.insert(
                "notifications_link".into(),
                Value::String(format!(
                    "{}/me/notifications",
                    self.public_url.trim_end_matches('/')
                )),
            );
        }
        let subject = self
            .text
            .render(&format!("{name}/subject"), &data)
            .map_err(failed)?;
        let subject = truncate(&clean_line(&subject), MAX_SUBJECT_CHARS);
        if let Value::Object(map) = &mut data {
            map.insert("subject".into(), Value::String(subject.clone()));
        }
        let text = self
            .text
            .render(&format!("{name}/body.txt"), &data)
            .map_err(failed)?;
        let html = self
            .html
            .render(&format!("{name}/body.html"), &data)
            .map_err(failed)?;
        Ok(Rendered {
            subject,
            text: clean_text(&text),
            html: clean_text(&html),
        })
    }
}

/// `overdue_digest/body.txt.hbs` → the text registry, `overdue_digest/body.txt`;
/// `partials/header.html.hbs` → the HTML registry, `partials/header`.
fn registry_name<'a>(
    path: &str,
    text: &'a mut Handlebars<'static>,
    html: &'a mut Handlebars<'static>,
) -> (&'a mut Handlebars<'static>, String) {
    let stem = path.trim_end_matches(".hbs");
    if let Some(base) = stem.strip_suffix(".html") {
        if base.starts_with("partials/") {
            return (html, base.to_owned());
        }
        return (html, stem.to_owned());
    }
    if let Some(base) = stem.strip_suffix(".txt") {
        if base.starts_with("partials/") {
            return (text, base.to_owned());
        }
    }
    (text, stem.to_owned())
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut cut: String = s.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded(public_url: &str) -> EmailTemplates {
        EmailTemplates::load(None, public_url).expect("the built-in templates load")
    }

    #[test]
    fn every_template_renders_in_strict_mode() {
        let t = embedded("https://coe.example.com/");
        for kind in Kind::ALL {
            let r = t.render(kind, &kind.sample(false)).expect("renders");
            assert!(!r.subject.is_empty(), "{kind:?} subject");
            assert!(r.text.contains("Hello"), "{kind:?} text: {}", r.text);
            assert!(
                r.html.contains("https://coe.example.com"),
                "{kind:?} html has the footer link"
            );
            assert!(!r.text.contains("&lt;"), "{kind:?} text is not escaped");
        }
    }

    #[test]
    fn an_action_due_today_says_today() {
        let t = embedded("https://coe.example.com");
        let mut data = Kind::OverdueDigest.sample(false);
        data["due_soon"][0]["days_until_due"] = 0.into();
        let r = t.render(Kind::OverdueDigest, &data).unwrap();
        assert!(r.text.contains("(today)"), "{}", r.text);
        assert!(r.html.contains("(today)"));
    }

    #[test]
    fn a_missing_variable_is_an_error() {
        let t = embedded("https://coe.example.com");
        let mut data = Kind::OverdueDigest.sample(false);
        data.as_object_mut().unwrap().remove("actions_link");
        assert!(matches!(
            t.render(Kind::OverdueDigest, &data),
            Err(TemplateError::Render { .. })
        ));
    }

    #[test]
    fn hostile_titles_are_safe_everywhere() {
        let t = embedded("https://coe.example.com");
        for kind in Kind::ALL {
            let r = t.render(kind, &kind.sample(true)).expect("renders");
            assert!(
                !r.subject.contains(['\r', '\n']),
                "{kind:?} subject: {:?}",
                r.subject
            );
            assert!(r.subject.chars().count() <= MAX_SUBJECT_CHARS);
            assert!(!r.html.contains("<script>"), "{kind:?} html is escaped");
            assert!(!r.text.contains('\r'), "{kind:?} text has no CR");
        }
        let r = t
            .render(Kind::CoeOpened, &Kind::CoeOpened.sample(true))
            .unwrap();
        assert!(r.html.contains("&lt;script&gt;"));
        assert!(r.text.contains("<script>alert('x')</script>"));
    }

    #[test]
    fn an_override_folder_replaces_single_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("approved")).unwrap();
        std::fs::write(
            dir.path().join("approved/subject.hbs"),
            "LGTM: {{coe.title}}",
        )
        .unwrap();
        let t = EmailTemplates::load(Some(dir.path()), "https://x.example").unwrap();
        let r = t
            .render(Kind::Approved, &Kind::Approved.sample(false))
            .unwrap();
        assert!(r.subject.starts_with("LGTM: "));
        assert!(r.text.contains("approved your COE"));

        std::fs::write(
            dir.path().join("approved/subject.hbs"),
            "{{coe.no_such_field}}",
        )
        .unwrap();
        let err = EmailTemplates::load(Some(dir.path()), "https://x.example").unwrap_err();
        assert!(err.to_string().contains("approved"), "{err}");
    }
}
