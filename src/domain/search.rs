//! What a person may search for. A search is words, each matched as itself, all of
//! them required: `SearchText::parse` takes the text typed into a search box and
//! keeps its words, each once, or refuses a text that no person types and that would
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
/// the order typed. May be empty (only punctuation was typed): it then finds nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchText {
    words: Vec<String>,
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

impl SearchText {
    pub fn parse(text: &str) -> Result<SearchText, SearchRefusal> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars > MAX_SEARCH_CHARS {
            return Err(SearchRefusal::TooLong(chars));
        }
        let mut words: Vec<String> = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if word.is_empty() {
                continue;
            }
            let length = word.chars().count();
            if length > MAX_WORD_CHARS {
                return Err(SearchRefusal::WordTooLong(length));
            }
            let word = word.to_lowercase();
            if !words.contains(&word) {
                words.push(word);
            }
        }
        if words.len() > MAX_SEARCH_WORDS {
            return Err(SearchRefusal::TooManyWords(words.len()));
        }
        Ok(SearchText { words })
    }

    /// The words, each once, lower-cased.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

/// The words, separated by spaces.
impl fmt::Display for SearchText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words.join(" "))
    }
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
    fn punctuation_alone_is_an_empty_search() {
        let text = SearchText::parse(" \"*\" -- ( ) ").expect("parsed");
        assert!(text.is_empty());
        assert_eq!(text.to_string(), "");
    }
}
