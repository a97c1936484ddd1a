//! Rendering a COE as Markdown through the handlebars template
//! `templates/coe/export.md.hbs` (embedded in the binary).

use std::ops::Range;

use handlebars::{handlebars_helper, Handlebars};
use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};
use serde_json::{json, Value};

use crate::domain::action::ActionState;
use crate::domain::coe::CoeState;
use crate::services::coe::coes::CoeDocument;

const EXPORT_TEMPLATE: &str = include_str!("../../../templates/coe/export.md.hbs");

handlebars_helper!(add: |a: i64, b: i64| a + b);

/// A character nobody types on purpose and that can hide or reorder text: control
/// characters (but line breaks and tabs where `keep_lines`) and the bidirectional
/// overrides.
fn unwanted(c: char, keep_lines: bool) -> bool {
    (c.is_control() && !(keep_lines && (c == '\n' || c == '\t')))
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text from a person or an alert sender as inline Markdown that says only what it
/// says: unwanted characters dropped, line breaks as spaces, and every character
/// Markdown or HTML would read as markup escaped with a backslash. The template's
/// escape function: every `{{value}}` of the export goes through it.
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if unwanted(c, false) => {}
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A link target the export writes: http(s) only, as the URL parser writes it (spaces,
/// angle brackets and quotes percent-encoded), so it cannot end its link early.
fn link_target(url: &str) -> Option<String> {
    crate::domain::event::web_links([url.to_owned()])
        .into_iter()
        .next()
}

/// A section's Markdown as its author wrote it, made safe to render: unwanted
/// characters dropped, raw HTML shown as text, and links or images to anything but
/// http(s), mailto or a same-site path shown as the text they were written as.
pub fn section_body(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| *c != '\r' && !unwanted(*c, true))
        .collect();
    let safe_dest = |dest: &str| {
        let lower = dest.trim().to_ascii_lowercase();
        lower.starts_with("https://")
            || lower.starts_with("http://")
            || lower.starts_with("mailto:")
            || (lower.starts_with('/') && !lower.starts_with("//"))
            || lower.starts_with('#')
    };
    let mut unsafe_ranges: Vec<Range<usize>> = Vec::new();
    for (event, range) in Parser::new_ext(&text, Options::ENABLE_TABLES).into_offset_iter() {
        let bad = match event {
            Event::Html(_) | Event::InlineHtml(_) => true,
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => link_type != LinkType::Email && !safe_dest(&dest_url),
            _ => false,
        };
        if bad {
            unsafe_ranges.push(range);
        }
    }
    unsafe_ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for range in unsafe_ranges {
        if range.start < at {
            continue; // inside one already shown as text
        }
        out.push_str(&text[at..range.start]);
        for c in text[range.clone()].chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '\\' | '`' | '*' | '_' | '[' | ']' | '!' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// "fired" → "Fired".
fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An entry's text without the "Fired: " that its kind already says.
fn without_kind(kind: &str, text: &str) -> String {
    let prefix = format!("{}:", capitalized(kind));
    text.strip_prefix(&prefix)
        .map(str::trim_start)
        .unwrap_or(text)
        .to_owned()
}

/// A why as a question: "Why did it fail?", whatever way it was typed.
fn question(why: &str) -> String {
    let why = why.trim();
    let asked = if why.to_lowercase().starts_with("why") {
        why.to_owned()
    } else {
        format!("Why {why}")
    };
    if asked.ends_with('?') {
        asked
    } else {
        format!("{}?", asked.trim_end_matches(['.', '!']))
    }
}

/// An answer starting with "Because".
fn answer(because: &str) -> String {
    let because = because.trim();
    if because.to_lowercase().starts_with("because") {
        return because.to_owned();
    }
    // "The pool ran out" → "Because the pool ran out"; "DNS failed" stays as written.
    let mut chars = because.chars();
    let first_word_is_ordinary = chars.nth(1).is_none_or(char::is_lowercase);
    match because.chars().next() {
        Some(c) if first_word_is_ordinary => {
            format!("Because {}{}", c.to_lowercase(), &because[c.len_utf8()..])
        }
        _ => format!("Because {because}"),
    }
}

fn duration_text(seconds: i64) -> String {
    let (h, m) = (seconds / 3600, seconds % 3600 / 60);
    match (h, m) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

/// The whole COE as Markdown. Titles, names and texts come from people and from alert
/// senders, so every value is escaped as inline Markdown (`inline`); the sections'
/// own Markdown is kept but made safe (`section_body`), and links are http(s) only.
pub fn markdown(doc: &CoeDocument) -> Result<String, String> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(inline);
    hb.register_helper("add", Box::new(add));
    hb.register_template_string("export", EXPORT_TEMPLATE)
        .map_err(|e| format!("export template: {e}"))?;
    let mut data: Value = serde_json::to_value(doc).map_err(|e| e.to_string())?;
    data["duration"] = match doc.duration_seconds {
        Some(s) => json!(duration_text(s)),
        None => Value::Null,
    };
    // Words for people, computed here so the template stays a layout.
    for (entry, written) in data["timeline"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.timeline)
    {
        if written.occurrences > 1 {
            // "HighCPU fired 412 times between …" says its kind itself.
            entry["label"] = Value::Null;
            entry["what"] = json!(written.text);
        } else {
            entry["label"] = json!(capitalized(written.kind.as_str()));
            entry["what"] = json!(without_kind(written.kind.as_str(), &written.text));
        }
    }
    for (chain, written) in data["five_whys"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.five_whys)
    {
        for (step, why) in chain["steps"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .zip(&written.steps)
        {
            step["question"] = json!(question(&why.why));
            step["answer"] = json!(answer(&why.because));
        }
    }
    for (action, view) in data["actions"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.actions)
    {
        action["state_text"] = json!(
            match (view.state, &view.resolution_note, &view.wont_do_reason) {
                (ActionState::Done, Some(note), _) => format!("done: {note}"),
                (ActionState::WontDo, _, Some(reason)) => format!("won't do: {reason}"),
                (ActionState::Open, ..) if view.overdue => {
                    format!("open, {} days overdue", view.days_overdue)
                }
                (ActionState::InProgress, ..) if view.overdue => {
                    format!("in progress, {} days overdue", view.days_overdue)
                }
                (state, ..) => state.as_str().replace('_', " "),
            }
        );
    }
    for step in data["review"].as_array_mut().into_iter().flatten() {
        let verdict = step["verdict"].as_str().unwrap_or_default();
        step["verdict_text"] = json!(match verdict {
            "submitted" => "submitted it for review",
            "changes_requested" => "requested changes",
            "approved" => "approved it",
            _ => "commented",
        });
    }
    // The template writes these three unescaped: each is made safe here.
    for section in data["sections"].as_array_mut().into_iter().flatten() {
        if let Some(body) = section["body"].as_str() {
            section["body"] = json!(section_body(body));
        }
    }
    for item in data["related"].as_array_mut().into_iter().flatten() {
        item["url"] = match item["url"].as_str().and_then(link_target) {
            Some(url) => json!(url),
            None => Value::Null,
        };
    }
    data["links"] = json!(doc
        .links
        .iter()
        .filter_map(|l| link_target(l))
        .collect::<Vec<_>>());
    // A closed COE is done: it does not end with a list of open findings.
    data["open_findings"] = json!(doc.state != CoeState::Closed);
    hb.render("export", &data)
        .map_err(|e| format!("export: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whys_read_as_questions_and_answers_and_kinds_are_not_said_twice() {
        assert_eq!(question("Why did it fail?"), "Why did it fail?");
        assert_eq!(question("did the config ship."), "Why did the config ship?");
        assert_eq!(answer("The pool ran out."), "Because the pool ran out.");
        assert_eq!(answer("DNS failed"), "Because DNS failed");
        assert_eq!(
            answer("because nothing checked it"),
            "because nothing checked it"
        );
        assert_eq!(without_kind("fired", "Fired: CPU hot"), "CPU hot");
        assert_eq!(without_kind("note", "Fired: CPU hot"), "Fired: CPU hot");
    }

    #[test]
    fn alert_text_cannot_become_markup() {
        assert_eq!(
            inline(
                "# Fake\n<script>alert(1)</script> [x](javascript:alert(1)) *a* | b\u{7}\u{202e}"
            ),
            "\\# Fake \\<script\\>alert(1)\\</script\\> \\[x\\](javascript:alert(1)) \\*a\\* \\| b"
        );
        // Rendered, it is the text it was, and nothing else.
        let html = |md: &str| {
            let mut out = String::new();
            pulldown_cmark::html::push_html(&mut out, Parser::new_ext(md, Options::ENABLE_TABLES));
            out
        };
        let shown = html(&inline(
            "<img src=x onerror=alert(1)> [a](javascript:x) `c` &amp;",
        ));
        assert!(
            !shown.contains("<img") && !shown.contains("href") && !shown.contains("<code"),
            "{shown}"
        );
        assert!(
            shown.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{shown}"
        );
        assert!(shown.contains("&amp;amp;"), "{shown}");
    }

    #[test]
    fn section_markdown_keeps_its_form_but_not_html_or_script_links() {
        let body = section_body(
            "## Impact\n\n**Bold** and [the runbook](https://wiki.example.com/r) and \
             [click](javascript:alert(1)) and <b onclick=x>hi</b> and ![i](data:image/png;base64,AA) \
             and <javascript:alert(2)> and <https://ok.example.com> and [rel](/coes/1)\n\n<script>alert(3)</script>\u{0}\n",
        );
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, Parser::new(&body));
        assert!(html.contains("<strong>Bold</strong>"), "{html}");
        assert!(
            html.contains(r#"<a href="https://wiki.example.com/r">the runbook</a>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<a href="https://ok.example.com">"#),
            "{html}"
        );
        assert!(html.contains(r#"<a href="/coes/1">rel</a>"#), "{html}");
        assert!(!html.contains("javascript:alert(1)\""), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(
            !html.contains("<script") && !html.contains("<b ") && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(3)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!body.contains('\u{0}'));
    }

    #[test]
    fn links_are_http_and_cannot_leave_their_brackets() {
        assert_eq!(link_target("javascript:alert(1)"), None);
        assert_eq!(link_target("https://x.example.com/a b"), None);
        assert_eq!(
            link_target("https://x.example.com/a>b<c\"d").as_deref(),
            Some("https://x.example.com/a%3Eb%3Cc%22d")
        );
        assert_eq!(
            link_target("https://x.example.com/q?a=(1)").as_deref(),
            Some("https://x.example.com/q?a=(1)")
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration_text(42 * 60), "42 min");
        assert_eq!(duration_text(2 * 3600), "2 h");
        assert_eq!(duration_text(3600 + 5 * 60), "1 h 5 min");
    }
}
