//! What changed in a text, word by word, as HTML: `{{diff before after}}` shows the
//! reviewer what others wrote since their last look, removed words in `<del>`, added
//! ones in `<ins>`, long unchanged stretches cut to their ends.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use super::html::escape_html;

/// Unchanged words kept on each side of a change; a longer unchanged stretch between
/// two changes is cut to this many at each end, with " … " between.
const CONTEXT: usize = 30;

/// The longest a diff may take before it settles for a coarser answer.
const TIMEOUT: Duration = Duration::from_millis(100);

/// `after` as HTML, with what differs from `before` marked, everything escaped.
pub fn words(before: &str, after: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(TIMEOUT)
        .diff_words(before, after);
    // Runs of one tag, in order: (tag, words).
    let mut runs: Vec<(ChangeTag, Vec<&str>)> = Vec::new();
    for change in diff.iter_all_changes() {
        let tag = change.tag();
        match runs.last_mut() {
            Some((last, words)) if *last == tag => words.push(change.value()),
            _ => runs.push((tag, vec![change.value()])),
        }
    }
    let last = runs.len().saturating_sub(1);
    let mut out = String::new();
    for (i, (tag, words)) in runs.iter().enumerate() {
        match tag {
            ChangeTag::Equal => out.push_str(&escape_html(&elide(words, i == 0, i == last))),
            ChangeTag::Delete => {
                out.push_str("<del>");
                out.push_str(&escape_html(&words.concat()));
                out.push_str("</del>");
            }
            ChangeTag::Insert => {
                out.push_str("<ins>");
                out.push_str(&escape_html(&words.concat()));
                out.push_str("</ins>");
            }
        }
    }
    out
}

/// An unchanged stretch (words and the spaces between, as tokens): whole when short,
/// else only the ends next to a change (`first`: nothing before it; `last`: nothing
/// after it).
fn elide(tokens: &[&str], first: bool, last: bool) -> String {
    // Tokens alternate words and whitespace: a word is about two tokens.
    let keep = CONTEXT * 2;
    let head = if first { 0 } else { keep };
    let tail = if last { 0 } else { keep };
    if tokens.len() <= head + tail + keep {
        return tokens.concat();
    }
    let mut text = tokens[..head].concat();
    text.push_str(" … ");
    text.push_str(&tokens[tokens.len() - tail..].concat());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_words_are_marked_and_everything_is_escaped() {
        assert_eq!(
            words("The pool ran dry.", "The <b>pool</b> ran out."),
            "The <del>pool</del><ins>&lt;b&gt;pool&lt;/b&gt;</ins> ran <del>dry.</del><ins>out.</ins>"
        );
        assert_eq!(words("", "New text"), "<ins>New text</ins>");
        assert_eq!(words("Old text", ""), "<del>Old text</del>");
        assert_eq!(words("same", "same"), "same");
    }

    #[test]
    fn long_unchanged_stretches_are_cut_to_their_ends() {
        let filler = "word ".repeat(200);
        let html = words(
            &format!("start {filler}end"),
            &format!("begin {filler}finish"),
        );
        assert!(
            html.starts_with("<del>start</del><ins>begin</ins>"),
            "{html}"
        );
        assert!(html.ends_with("<del>end</del><ins>finish</ins>"), "{html}");
        assert!(html.contains(" … "), "{html}");
        assert!(html.len() < 1_000, "{}", html.len());
    }
}
