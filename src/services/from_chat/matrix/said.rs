//! What the Matrix bot says, as plain text and as the HTML clients show.

/// Words to say, plain and in HTML.
pub(super) struct Said {
    pub(super) text: String,
    pub(super) html: String,
}

impl Said {
    pub(super) fn new(text: &str) -> Said {
        Said {
            text: text.to_owned(),
            html: escape(text),
        }
    }

    pub(super) fn link(url: &str, words: &str) -> Said {
        Said {
            text: format!("{words} ({url})"),
            html: format!("<a href=\"{}\">{}</a>", escape(url), escape(words)),
        }
    }

    pub(super) fn bold(words: &str) -> Said {
        Said {
            text: words.to_owned(),
            html: format!("<strong>{}</strong>", escape(words)),
        }
    }

    pub(super) fn then(mut self, more: Said) -> Said {
        self.text.push_str(&more.text);
        self.html.push_str(&more.html);
        self
    }

    pub(super) fn and(self, text: &str) -> Said {
        self.then(Said::new(text))
    }

    pub(super) fn line(mut self) -> Said {
        self.text.push('\n');
        self.html.push_str("<br>");
        self
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
