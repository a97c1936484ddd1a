//! A notice in each platform's own format: Slack Block Kit, a Teams Adaptive Card (for
//! a Workflows webhook), Google Chat `cardsV2`, Mattermost Markdown, Matrix
//! `m.room.message` with HTML. Text from people (titles, names, services) is escaped
//! for each format, so that it can neither format nor mention (`<!channel>`,
//! `@here`), and every platform's size limits are kept: a long list ends with "and N
//! more". Pure: the bodies are JSON values, sent by `chat::send`.

use serde_json::{json, Value};

use crate::config::ChatKind;

/// The most items a notice lists; the rest are counted ("and N more").
pub const MAX_ITEMS: usize = 10;

/// A notice, whatever the platform: a headline, a few labelled facts, a list, and
/// one link to the page it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What happened, e.g. "COE opened: Checkout errors after the deploy".
    pub headline: String,
    /// Label and value, e.g. ("Severity", "sev2").
    pub facts: Vec<(String, String)>,
    /// Lines of a list (the oldest overdue actions …), at most `MAX_ITEMS` shown.
    pub items: Vec<String>,
    /// How many items there were in all (more than `items.len()` when cut).
    pub total_items: usize,
    /// The button's label and the page it opens.
    pub link_label: String,
    pub link_url: String,
}

impl Notice {
    /// The items shown, and the "and N more" line when there were more.
    fn shown_items(&self) -> (Vec<&str>, Option<String>) {
        let shown: Vec<&str> = self
            .items
            .iter()
            .take(MAX_ITEMS)
            .map(String::as_str)
            .collect();
        let total = self.total_items.max(self.items.len());
        let more = (total > shown.len()).then(|| format!("and {} more", total - shown.len()));
        (shown, more)
    }

    /// A one-line summary, for notifications and clients that show no cards.
    fn summary(&self) -> String {
        self.headline.clone()
    }
}

/// The body to send for `notice` on `kind`.
pub fn render(kind: ChatKind, notice: &Notice) -> Value {
    match kind {
        ChatKind::Slack => slack(notice),
        ChatKind::Teams => teams(notice),
        ChatKind::GoogleChat => google_chat(notice),
        ChatKind::Mattermost => mattermost(notice),
        ChatKind::Matrix => matrix(notice),
        // Where summaries are published hears only them (`publication`); what else
        // reaches it is an admin's test, said plainly.
        ChatKind::Statuspage | ChatKind::Webhook => json!({
            "test": true,
            "text": notice.headline,
            "url": notice.link_url,
        }),
    }
}

/// What happened to a summary for customers, as a Statuspage channel or a webhook
/// is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicationEvent {
    /// First published.
    Published,
    /// Its text replaced by an approved change, at the same address.
    Updated,
    /// Taken down.
    Withdrawn,
}

impl PublicationEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            PublicationEvent::Published => "published",
            PublicationEvent::Updated => "updated",
            PublicationEvent::Withdrawn => "withdrawn",
        }
    }
}

/// A summary for customers, as a Statuspage channel or a webhook is sent it: what
/// happened (`event`), the Statuspage incident it is the postmortem of (when one was
/// named), its title and Markdown (not when withdrawn), the public page's address
/// (which shows it as HTML) and when it happened (`published_at`, `updated_at` or
/// `withdrawn_at`).
pub fn publication(
    event: PublicationEvent,
    incident: Option<&str>,
    text: Option<(&str, &str)>,
    public_url: &str,
    at: &str,
) -> Value {
    let mut body = json!({
        "event": event.as_str(),
        "statuspage_incident": incident,
        "url": public_url,
    });
    if let Some((title, markdown)) = text {
        body["title"] = json!(title);
        body["markdown"] = json!(markdown);
    }
    let when = match event {
        PublicationEvent::Published => "published_at",
        PublicationEvent::Updated => "updated_at",
        PublicationEvent::Withdrawn => "withdrawn_at",
    };
    body[when] = json!(at);
    body
}

/// At most `max` characters of `text`, ending in "…" when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Slack's mrkdwn escaping: `&`, `<`, `>` (so no `<!channel>`, `<@U…>` or link can
/// be formed from text); formatting characters become look-alikes that format
/// nothing.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn slack(n: &Notice) -> Value {
    // Block Kit limits: header 150, section text 3000, a field 2000 and 10 fields,
    // button text 75, URL 3000, 50 blocks.
    let mut blocks = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": cut(&n.headline, 150), "emoji": false},
    })];
    if !n.facts.is_empty() {
        let fields: Vec<Value> = n
            .facts
            .iter()
            .take(10)
            .map(|(label, value)| {
                json!({"type": "mrkdwn", "verbatim": true,
                       "text": cut(&format!("*{}*\n{}", slack_escape(label), slack_escape(value)), 2000)})
            })
            .collect();
        blocks.push(json!({"type": "section", "fields": fields}));
    }
    let (items, more) = n.shown_items();
    if !items.is_empty() {
        let mut text: String = items
            .iter()
            .map(|i| format!("• {}", slack_escape(i)))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(more) = more {
            text.push_str(&format!("\n_{more}_"));
        }
        blocks.push(json!({"type": "section",
                           "text": {"type": "mrkdwn", "verbatim": true, "text": cut(&text, 3000)}}));
    }
    blocks.push(json!({
        "type": "actions",
        "elements": [{"type": "button", "text": {"type": "plain_text", "text": cut(&n.link_label, 75)},
                      "url": cut(&n.link_url, 3000)}],
    }));
    json!({"text": slack_escape(&cut(&n.summary(), 3000)), "blocks": blocks})
}

/// Markdown escaping for Mattermost: formatting characters get a backslash, and a
/// mention (`@channel`, `@here`, `@all`, `@someone`) is broken by a zero-width space.
pub fn markdown_escape(text: &str) -> String {
    let text = unmention(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '#' | '+' | '-' | '!'
            | '|' | '>' | '<' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn mattermost(n: &Notice) -> Value {
    // Mattermost ignores Block Kit; a post holds at most 16,383 characters.
    let mut text = format!("#### {}\n", markdown_escape(&n.headline));
    for (label, value) in &n.facts {
        text.push_str(&format!(
            "**{}:** {}\n",
            markdown_escape(label),
            markdown_escape(value)
        ));
    }
    let (items, more) = n.shown_items();
    for item in items {
        text.push_str(&format!("* {}\n", markdown_escape(item)));
    }
    if let Some(more) = more {
        text.push_str(&format!("_{more}_\n"));
    }
    text.push_str(&format!(
        "[{}]({})",
        markdown_escape(&n.link_label),
        n.link_url.replace(')', "%29")
    ));
    json!({"text": cut(&text, 16_000)})
}

fn teams(n: &Notice) -> Value {
    // Text from people goes in TextRuns, which Teams shows as they are (no Markdown).
    let run = |text: &str, bold: bool| {
        let mut r = json!({"type": "TextRun", "text": cut(text, 2000)});
        if bold {
            r["weight"] = json!("Bolder");
        }
        r
    };
    let mut body = vec![json!({
        "type": "RichTextBlock",
        "inlines": [{"type": "TextRun", "text": cut(&n.headline, 300), "weight": "Bolder", "size": "Medium"}],
    })];
    for (label, value) in n.facts.iter().take(10) {
        body.push(json!({"type": "RichTextBlock",
                         "inlines": [run(&format!("{label}: "), true), run(value, false)]}));
    }
    let (items, more) = n.shown_items();
    for item in items {
        body.push(json!({"type": "RichTextBlock", "inlines": [run(&format!("• {item}"), false)]}));
    }
    if let Some(more) = more {
        body.push(json!({"type": "RichTextBlock",
                         "inlines": [{"type": "TextRun", "text": more, "italic": true}]}));
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": body,
                "actions": [{"type": "Action.OpenUrl", "title": cut(&n.link_label, 75), "url": n.link_url}],
            },
        }],
    })
}

/// HTML escaping, for Google Chat's card text and Matrix's `formatted_body`.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn google_chat(n: &Notice) -> Value {
    // Card widgets take a little HTML: text from people is escaped. The message's
    // own text is left out (it has no escaping, and `<users/all>` would mention all).
    let mut widgets: Vec<Value> = n
        .facts
        .iter()
        .take(20)
        .map(|(label, value)| {
            json!({"decoratedText": {"topLabel": cut(label, 200), "text": html_escape(&cut(value, 2000))}})
        })
        .collect();
    let (items, more) = n.shown_items();
    if !items.is_empty() {
        let mut text: String = items
            .iter()
            .map(|i| format!("• {}", html_escape(&cut(i, 400))))
            .collect::<Vec<_>>()
            .join("<br>");
        if let Some(more) = more {
            text.push_str(&format!("<br><i>{more}</i>"));
        }
        widgets.push(json!({"textParagraph": {"text": text}}));
    }
    widgets.push(json!({"buttonList": {"buttons": [{
        "text": cut(&n.link_label, 75),
        "onClick": {"openLink": {"url": n.link_url}},
    }]}}));
    json!({
        "cardsV2": [{
            "cardId": "coe-notice",
            "card": {
                "header": {"title": cut(&n.headline, 200)},
                "sections": [{"widgets": widgets}],
            },
        }],
    })
}

/// Breaks a mention in text (`@room`, `@here`, `@someone`: an `@` that starts a
/// word) with a zero-width space after the `@`; an address (`ana@example.com`) is
/// left whole.
pub fn unmention(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous: Option<char> = None;
    for c in text.chars() {
        out.push(c);
        if c == '@' && !previous.is_some_and(char::is_alphanumeric) {
            out.push('\u{200b}');
        }
        previous = Some(c);
    }
    out
}

fn matrix(n: &Notice) -> Value {
    // `formatted_body` is HTML made here of escaped text and a few tags (b, ul, li, a,
    // i, br): nothing from people is markup. An empty `m.mentions` says the notice
    // mentions nobody (clients then ignore `@room` in the text); older clients that
    // read the body find `@room` broken.
    let n = &Notice {
        headline: unmention(&n.headline),
        facts: n
            .facts
            .iter()
            .map(|(l, v)| (l.clone(), unmention(v)))
            .collect(),
        items: n.items.iter().map(|i| unmention(i)).collect(),
        ..n.clone()
    };
    let mut plain = format!("{}\n", n.headline);
    let mut html = format!("<b>{}</b><br>", html_escape(&n.headline));
    for (label, value) in &n.facts {
        plain.push_str(&format!("{label}: {value}\n"));
        html.push_str(&format!(
            "<b>{}:</b> {}<br>",
            html_escape(label),
            html_escape(value)
        ));
    }
    let (items, more) = n.shown_items();
    if !items.is_empty() {
        html.push_str("<ul>");
        for item in &items {
            plain.push_str(&format!("• {item}\n"));
            html.push_str(&format!("<li>{}</li>", html_escape(item)));
        }
        html.push_str("</ul>");
    }
    if let Some(more) = more {
        plain.push_str(&format!("{more}\n"));
        html.push_str(&format!("<i>{more}</i><br>"));
    }
    plain.push_str(&format!("{}: {}", n.link_label, n.link_url));
    html.push_str(&format!(
        "<a href=\"{}\">{}</a>",
        html_escape(&n.link_url),
        html_escape(&n.link_label)
    ));
    json!({
        "msgtype": "m.notice",
        "m.mentions": {},
        "body": cut(&plain, 30_000),
        "format": "org.matrix.custom.html",
        "formatted_body": cut(&html, 30_000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(items: usize) -> Notice {
        Notice {
            headline: "COE opened: <!channel> @here *bold* & <a href=x>".into(),
            facts: vec![
                ("Severity".into(), "sev2".into()),
                ("Owner".into(), "nobody yet — take it".into()),
            ],
            items: (0..items).map(|i| format!("Action {i} <@U123>")).collect(),
            total_items: items,
            link_label: "Open the COE".into(),
            link_url: "https://coe.example.com/coes/01".into(),
        }
    }

    #[test]
    fn slack_text_cannot_mention_or_link_and_long_lists_are_cut() {
        let v = render(ChatKind::Slack, &notice(25));
        // Mentions are read in mrkdwn and the top-level text, never in plain_text.
        let top = v["text"].as_str().expect("text");
        assert!(top.contains("&lt;!channel&gt;"), "{top}");
        let list = v["blocks"][2]["text"]["text"].as_str().expect("the list");
        assert!(!list.contains("<@U123>"), "{list}");
        assert!(list.contains("and 15 more"), "{list}");
        assert_eq!(v["blocks"][0]["text"]["type"], "plain_text");
        assert!(v["blocks"].as_array().expect("blocks").len() <= 50);
        assert!(
            v["blocks"][0]["text"]["text"]
                .as_str()
                .expect("header")
                .chars()
                .count()
                <= 150
        );
    }

    #[test]
    fn mattermost_mentions_are_broken_and_markdown_escaped() {
        let text = render(ChatKind::Mattermost, &notice(2))["text"]
            .as_str()
            .expect("text")
            .to_owned();
        assert!(!text.contains("@here"), "{text}");
        assert!(text.contains("@\u{200b}here"), "{text}");
        assert!(text.contains("\\*bold\\*"), "{text}");
        assert!(text.contains("[Open the COE](https://coe.example.com/coes/01)"));
    }

    #[test]
    fn teams_is_an_adaptive_card_1_4_in_a_message_with_one_attachment() {
        let v = render(ChatKind::Teams, &notice(12));
        assert_eq!(v["type"], "message");
        assert_eq!(v["attachments"].as_array().map(Vec::len), Some(1));
        let card = &v["attachments"][0]["content"];
        assert_eq!(card["type"], "AdaptiveCard");
        assert_eq!(card["version"], "1.4");
        assert_eq!(card["actions"][0]["type"], "Action.OpenUrl");
        assert!(v.to_string().contains("and 2 more"));
    }

    #[test]
    fn google_chat_and_matrix_escape_html() {
        let g = render(ChatKind::GoogleChat, &notice(1));
        // Widgets take HTML: escaped there; the header's title is plain text.
        let widgets = g["cardsV2"][0]["card"]["sections"][0]["widgets"].to_string();
        assert!(widgets.contains("&lt;@U123&gt;"), "{widgets}");
        assert!(g.get("text").is_none());
        let m = render(ChatKind::Matrix, &notice(1));
        let html = m["formatted_body"].as_str().expect("html");
        assert!(html.contains("&lt;a href=x&gt;"), "{html}");
        assert!(!html.contains("<a href=x>"), "{html}");
        assert_eq!(m["format"], "org.matrix.custom.html");
        assert_eq!(m["m.mentions"], json!({}));
        assert!(!m["body"].as_str().expect("body").contains("@here"));
        assert!(m["body"].as_str().expect("body").contains("<a href=x>"));
    }

    #[test]
    fn mentions_are_broken_and_addresses_kept() {
        assert_eq!(unmention("@room hi"), "@\u{200b}room hi");
        assert_eq!(
            unmention("to @here, ana@example.com"),
            "to @\u{200b}here, ana@example.com"
        );
    }

    #[test]
    fn cutting_keeps_whole_characters() {
        assert_eq!(cut("héllo wörld", 5), "héll…");
        assert_eq!(cut("short", 10), "short");
    }
}
