//! Emails: what they say (`content`), how they look (`templates`) and how they leave
//! (`transport`). Deciding to send one is the reminder and review services' job;
//! queueing and delivering is `services::outbound::outbox`.

pub mod content;
pub mod invitation;
mod samples;
pub mod templates;
pub mod transport;

pub use content::Kind;
pub use templates::{EmailTemplates, Rendered, TemplateError};
pub use transport::{SendError, Transport};

/// One line with no control characters (CR and LF included: in a header they would
/// start a new header, and lettre panics on them in a display name), whitespace runs
/// collapsed.
pub fn clean_line(s: &str) -> String {
    s.split(|c: char| c.is_control() || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text with line feeds and tabs kept, other control characters (CR included) removed.
pub fn clean_text(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_control_characters() {
        assert_eq!(clean_line("a\r\nBcc: x@y\u{0}  z\t"), "a Bcc: x@y z");
        assert_eq!(clean_text("a\r\nb\u{7}\tc"), "a\nb\tc");
    }
}
