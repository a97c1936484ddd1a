//! What a person may search for. A search is words, each matched as itself or a form
//! of it ("failing" finds "failed"), all of them required; a phrase in double quotes
//! ("timed out") matches those words exactly, together and in that order.
//! `SearchText::parse` takes the text typed into a search box and keeps its words,
//! each once, and its phrases, or refuses a text that no person types and that would
//! make the database's full-text engine work for minutes (a word repeated a thousand
//! times was once a thousand phrases, each matched against every COE).

use std::fmt;

/// Longest search text, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most different words in one search.
pub const MAX_SEARCH_WORDS: usize = 10;
/// Longest word, in characters (the longest English words are under 50).
pub const MAX_WORD_CHARS: usize = 64;

/// A search text, parsed: its words (letters and digits), lower-cased, each once, in
/// the order typed, and the quoted phrases among them. May be empty (only
/// punctuation was typed): it then finds nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchText {
    words: Vec<String>,
    /// The quoted phrases of two words or more, each its words in order. A quoted
    /// single word is a word like any other.
    phrases: Vec<Vec<String>>,
    /// Every word as typed, in order (repeats kept): what "the words together" means.
    sequence: Vec<String>,
}

/// Why a search text is refused; the text says what to type instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchRefusal {
    #[error("must be at most {MAX_SEARCH_CHARS} characters (got {0}): search for a few words")]
    TooLong(usize),
    #[error(
        "must be at most {MAX_SEARCH_WORDS} different words (got {0}): search for the few \
         that matter"
    )]
    TooManyWords(usize),
    #[error("a word must be at most {MAX_WORD_CHARS} characters (one has {0})")]
    WordTooLong(usize),
}

/// The words of `text` (split at anything but a letter or a digit), lower-cased.
fn words_of(text: &str) -> Result<Vec<String>, SearchRefusal> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|word| {
            let length = word.chars().count();
            if length > MAX_WORD_CHARS {
                return Err(SearchRefusal::WordTooLong(length));
            }
            Ok(word.to_lowercase())
        })
        .collect()
}

impl SearchText {
    pub fn parse(text: &str) -> Result<SearchText, SearchRefusal> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars > MAX_SEARCH_CHARS {
            return Err(SearchRefusal::TooLong(chars));
        }
        let mut parsed = SearchText {
            words: Vec::new(),
            phrases: Vec::new(),
            sequence: Vec::new(),
        };
        // Between quotes (the odd pieces) a phrase; an unclosed quote quotes to the end.
        for (i, piece) in text.split('"').enumerate() {
            let words = words_of(piece)?;
            if i % 2 == 1 && words.len() > 1 && !parsed.phrases.contains(&words) {
                parsed.phrases.push(words.clone());
            }
            for word in words {
                if !parsed.words.contains(&word) {
                    parsed.words.push(word.clone());
                }
                parsed.sequence.push(word);
            }
        }
        if parsed.words.len() > MAX_SEARCH_WORDS {
            return Err(SearchRefusal::TooManyWords(parsed.words.len()));
        }
        Ok(parsed)
    }

    /// The words, each once, lower-cased.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The quoted phrases (two words or more each), which must match exactly.
    pub fn phrases(&self) -> &[Vec<String>] {
        &self.phrases
    }

    /// Every word in the order typed: COEs holding them together rank first.
    pub fn sequence(&self) -> &[String] {
        &self.sequence
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The same search with `word` put in place of `typo` (a did-you-mean), quotes
    /// kept where they were.
    pub fn replaced(&self, typo: &str, word: &str) -> String {
        let mut out = Vec::new();
        let mut used = std::collections::BTreeSet::new();
        for phrase in &self.phrases {
            used.extend(phrase.iter().cloned());
            let said: Vec<&str> = phrase
                .iter()
                .map(|w| if w == typo { word } else { w.as_str() })
                .collect();
            out.push(format!("\"{}\"", said.join(" ")));
        }
        for w in &self.words {
            if !used.contains(w) {
                out.push(if w == typo {
                    word.to_owned()
                } else {
                    w.clone()
                });
            }
        }
        out.join(" ")
    }
}

/// The words, separated by spaces; phrases in quotes.
impl fmt::Display for SearchText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.replaced("", ""))
    }
}

/// Whether `word` is one the index offers as a did-you-mean: letters only, three to
/// 32 of them (numbers, ids and hashes are not words a person mistypes).
pub fn is_vocabulary(word: &str) -> bool {
    (3..=32).contains(&word.chars().count()) && word.chars().all(char::is_alphabetic)
}

/// The words of `text` that the index offers as did-you-means, lower-cased, each once.
pub fn vocabulary_of(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| is_vocabulary(w))
        .map(str::to_lowercase)
        .collect()
}

/// The word of `known` a typo `typed` was probably meant as: one slip away (two for
/// words of eight letters or more), the nearest, then the shortest, then the first in
/// order. `None` for a word that is itself known.
pub fn did_you_mean<'a>(typed: &str, known: &'a [String]) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    if known.contains(&typed) {
        return None;
    }
    let most = if typed.chars().count() >= 8 { 2 } else { 1 };
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&typed, k), k))
        .filter(|(d, _)| (1..=most).contains(d))
        .min_by(|(d1, a), (d2, b)| d1.cmp(d2).then(a.len().cmp(&b.len())).then(a.cmp(b)))
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_repeated_is_searched_once() {
        let text = SearchText::parse(&"zz ".repeat(60)).expect("parsed");
        assert_eq!(text.words(), ["zz"]);
        let text = SearchText::parse("Failover FAILOVER failover, db-01").expect("parsed");
        assert_eq!(text.words(), ["failover", "db", "01"]);
    }

    #[test]
    fn what_no_person_types_is_refused_by_name() {
        assert_eq!(
            SearchText::parse(&"zz ".repeat(1000)),
            Err(SearchRefusal::TooLong(2999))
        );
        let eleven = "a b c d e f g h i j k";
        assert_eq!(
            SearchText::parse(eleven),
            Err(SearchRefusal::TooManyWords(11))
        );
        assert!(SearchText::parse("a b c d e f g h i j").is_ok());
        assert_eq!(
            SearchText::parse(&"x".repeat(65)),
            Err(SearchRefusal::WordTooLong(65))
        );
        assert!(SearchRefusal::TooManyWords(11)
            .to_string()
            .contains("at most 10 different words"));
    }

    #[test]
    fn quoted_words_are_a_phrase_and_the_rest_are_words() {
        let text = SearchText::parse(r#"pool "Timed out" "db" "retry"#).expect("parsed");
        assert_eq!(text.words(), ["pool", "timed", "out", "db", "retry"]);
        assert_eq!(text.phrases(), [vec!["timed".to_owned(), "out".to_owned()]]);
        assert_eq!(text.sequence(), ["pool", "timed", "out", "db", "retry"]);
        assert_eq!(text.to_string(), r#""timed out" pool db retry"#);
        // An unclosed quote quotes to the end.
        let text = SearchText::parse(r#"checkout "ran out of"#).expect("parsed");
        assert_eq!(text.phrases().len(), 1);
        assert_eq!(text.phrases()[0], ["ran", "out", "of"]);
        assert_eq!(
            text.replaced("checkout", "checkouts"),
            r#""ran out of" checkouts"#
        );
    }

    #[test]
    fn a_typo_is_answered_with_the_nearest_known_word() {
        let known: Vec<String> = ["memory", "memo", "member", "timeout", "retries"]
            .map(String::from)
            .to_vec();
        assert_eq!(did_you_mean("memroy", &known), Some("memory"));
        assert_eq!(did_you_mean("Memroy", &known), Some("memory"));
        assert_eq!(did_you_mean("memory", &known), None, "known already");
        assert_eq!(did_you_mean("xyz", &known), None, "nothing near");
        assert_eq!(did_you_mean("timeuot", &known), Some("timeout"));
        assert_eq!(did_you_mean("retreis", &known), Some("retries"));
        assert!(is_vocabulary("memory") && !is_vocabulary("db01") && !is_vocabulary("of"));
        assert_eq!(
            vocabulary_of("The pool, db-01 ran OUT of memory"),
            ["memory", "out", "pool", "ran", "the"]
                .map(String::from)
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn punctuation_alone_is_an_empty_search() {
        let text = SearchText::parse(" \"*\" -- ( ) ").expect("parsed");
        assert!(text.phrases().is_empty());
        assert!(text.is_empty());
        assert_eq!(text.to_string(), "");
    }
}
