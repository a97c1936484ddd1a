//! Markdown as the pages show it: CommonMark with tables and strikethrough, where
//! raw HTML is shown as text, links are kept only when they are http(s), mailto or
//! within this site, and images become their description (the page loads nothing
//! from elsewhere). The one place user text becomes HTML; templates reach it through
//! the `markdown` helper, never through a triple-stash.

use pulldown_cmark::{Event, HeadingLevel, LinkType, Parser, Tag, TagEnd};

use crate::domain::customer_summary::MARKDOWN_OPTIONS;

/// Whether a link target may be followed from a page.
fn allowed_link(dest: &str) -> bool {
    if dest.starts_with('/') && !dest.starts_with("//") || dest.starts_with('#') {
        return true;
    }
    url::Url::parse(dest).is_ok_and(|u| matches!(u.scheme(), "http" | "https" | "mailto"))
}

/// A heading two levels down (h1 → h3), h6 at most.
fn lower(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

/// Whether a line reads like a line of a log: it starts with a date or a time, names
/// a log level, or is a frame of a stack trace.
fn log_line(line: &str) -> bool {
    let t = line.trim_start();
    let digits = |s: &str, pattern: &str| {
        s.len() >= pattern.len()
            && s.bytes().zip(pattern.bytes()).all(|(c, p)| {
                if p == b'9' {
                    c.is_ascii_digit()
                } else {
                    c == p
                }
            })
    };
    let stamp = t.trim_start_matches('[');
    digits(stamp, "9999-99-99")
        || digits(stamp, "99:99:99")
        || [
            "ERROR",
            "WARN",
            "INFO",
            "DEBUG",
            "TRACE",
            "FATAL",
            "Traceback",
            "Exception",
        ]
        .iter()
        .any(|level| t.contains(level))
        || (line.starts_with(char::is_whitespace)
            && (t.starts_with("at ") || t.starts_with("File \"")))
}

/// `text` with each paragraph that reads as a pasted log (two lines or more, two
/// thirds of them log lines) fenced as code, so that it shows as it was pasted, line
/// by line, not run together as prose. Text already fenced is left as it is.
fn fence_logs(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = String::with_capacity(text.len() + 16);
    let (mut fenced, mut changed) = (false, false);
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, out: &mut String, changed: &mut bool| {
        let logs = paragraph.iter().filter(|l| log_line(l)).count();
        // Markdown's own blocks (a list, a table, a quote, a heading) stay Markdown.
        let markdown = paragraph.iter().any(|l| {
            let t = l.trim_start();
            ["- ", "* ", "+ ", "|", ">", "#"]
                .iter()
                .any(|m| t.starts_with(m))
                || t.split_once(". ")
                    .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        });
        let is_log = !markdown && paragraph.len() >= 2 && logs * 3 >= paragraph.len() * 2;
        if is_log {
            out.push_str("```\n");
            *changed = true;
        }
        for line in paragraph.drain(..) {
            out.push_str(line);
            out.push('\n');
        }
        if is_log {
            out.push_str("```\n");
        }
    };
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut paragraph, &mut out, &mut changed);
            fenced = !fenced;
            out.push_str(line);
            out.push('\n');
        } else if fenced || line.trim().is_empty() {
            flush(&mut paragraph, &mut out, &mut changed);
            out.push_str(line);
            out.push('\n');
        } else {
            paragraph.push(line);
        }
    }
    flush(&mut paragraph, &mut out, &mut changed);
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// `text` rendered as safe HTML (a pasted log as a preformatted block).
pub fn to_html(text: &str) -> String {
    let text = &*fence_logs(text);
    let options = MARKDOWN_OPTIONS;
    // Links that may not be followed and images lose their tag and keep their text;
    // raw HTML becomes text.
    let mut dropped = Vec::new();
    let events = Parser::new_ext(text, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            ref dest_url,
            link_type,
            ..
        }) => {
            // An autolinked address (`<ana@example.com>`) becomes a mailto link.
            let keep = link_type == LinkType::Email || allowed_link(dest_url);
            dropped.push(!keep);
            keep.then_some(event)
        }
        Event::End(TagEnd::Link) => (!dropped.pop().unwrap_or(false)).then_some(event),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        Event::DisplayMath(s) | Event::InlineMath(s) => Some(Event::Text(s)),
        // The page's own headings are h1 (the COE) and h2 (its sections): headings in
        // a section's text start below them.
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Some(Event::Start(Tag::Heading {
            level: lower(level),
            id,
            classes,
            attrs,
        })),
        Event::End(TagEnd::Heading(level)) => Some(Event::End(TagEnd::Heading(lower(level)))),
        other => Some(other),
    });
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// `text`'s words without its Markdown: what a search result quotes (no `**`, no
/// `[…](…)`, no `#`); blocks and line breaks become one space.
pub fn to_plain(text: &str) -> String {
    let options = MARKDOWN_OPTIONS;
    let mut plain = String::with_capacity(text.len());
    let space = |plain: &mut String| {
        if !plain.is_empty() && !plain.ends_with(' ') {
            plain.push(' ');
        }
    };
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Text(t)
            | Event::Code(t)
            | Event::Html(t)
            | Event::InlineHtml(t)
            | Event::DisplayMath(t)
            | Event::InlineMath(t) => plain.push_str(&t),
            Event::SoftBreak | Event::HardBreak | Event::Rule => space(&mut plain),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock,
            ) => space(&mut plain),
            _ => {}
        }
    }
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_log_shows_line_by_line_and_prose_stays_prose() {
        let log = "The pool ran dry:\n\n2026-12-01T10:02:11Z ERROR pool exhausted (50/50)\n\
                   2026-12-01T10:02:12Z WARN retrying in 2s\n2026-12-01T10:02:14Z ERROR pool exhausted (50/50)";
        let html = to_html(log);
        assert!(html.contains("<p>The pool ran dry:</p>"), "{html}");
        assert!(
            html.contains("<pre><code>2026-12-01T10:02:11Z ERROR pool exhausted (50/50)\n2026-12-01T10:02:12Z WARN"),
            "{html}"
        );
        let trace =
            "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: bad";
        assert!(
            to_html(trace).contains("<pre><code>Traceback"),
            "{}",
            to_html(trace)
        );
        // Prose, lists and logs already fenced are left alone.
        for text in [
            "We saw an ERROR rate of 5%.\nIt fell after the rollback.\nThen it rose.",
            "- ERROR rate rose\n- WARN count doubled",
            "```\n10:02:11 ERROR x\n10:02:12 ERROR y\n```",
        ] {
            assert!(
                matches!(fence_logs(text), std::borrow::Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn plain_text_keeps_the_words_and_drops_the_markdown() {
        assert_eq!(
            to_plain(
                "# Impact\n\n**2,000** checkouts [failed](https://x.example/a)\n\n- one\n- `two`"
            ),
            "Impact 2,000 checkouts failed one two"
        );
        assert_eq!(
            to_plain("<b>raw</b> stays as text"),
            "<b>raw</b> stays as text"
        );
    }

    #[test]
    fn markdown_renders_and_raw_html_and_foreign_links_stay_text() {
        let html = to_html("# Impact\n\n**2,000** checkouts failed\n\n- one\n- two");
        assert!(html.contains("<h3>Impact</h3>"), "{html}");
        assert!(html.contains("<strong>2,000</strong>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");

        let html = to_html("<script>alert(1)</script> and <b onclick=x>bold</b>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<b "), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");

        let html = to_html("[x](javascript:alert(1)) [y](https://example.com/a) [z](/coes/1)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains(">x<") || html.contains("x "), "{html}");
        assert!(html.contains("href=\"https://example.com/a\""), "{html}");
        assert!(html.contains("href=\"/coes/1\""), "{html}");

        let html = to_html("![tracker](https://evil.example.com/t.png) [n](//evil.example.com)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("tracker"), "{html}");
        assert!(!html.contains("evil"), "{html}");
    }
}
