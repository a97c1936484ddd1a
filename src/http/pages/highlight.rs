//! Where a search's words are in a text: the words a highlight marks (the word in any
//! case, or a form of it, as the databases' full-text search stems them).

use super::html::escape_html;

/// The words of a query that a highlight looks for (two letters or more).
pub fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// A word's stem (English, Porter's: "failing" and "failed" are "fail"), as both
/// databases' full-text search stem the words they index.
fn stem(word: &str) -> String {
    thread_local! {
        static STEMMER: rust_stemmers::Stemmer =
            rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    }
    STEMMER.with(|s| s.stem(&word.to_lowercase()).into_owned())
}

/// The words of `text` (runs of letters and digits) with their byte offsets.
fn words_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Whether `word` is a term or a form of one: the whole word, any case, or a word of
/// the same stem (the forms the search found it by). Never a part of a word: "out"
/// marks nothing in "checkout".
fn is_match(word: &str, terms: &[String], stems: &[String]) -> bool {
    if word.chars().count() < 2 {
        return false;
    }
    let lower = word.to_lowercase();
    terms.contains(&lower) || stems.contains(&stem(&lower))
}

/// The byte offsets in `text` of the characters of the words that match a term
/// (`is_match`).
fn matched_chars(text: &str, terms: &[String]) -> std::collections::BTreeSet<usize> {
    let stems: Vec<String> = terms.iter().map(|t| stem(t)).collect();
    words_at(text)
        .filter(|(_, w)| is_match(w, terms, &stems))
        .flat_map(|(at, w)| w.char_indices().map(move |(i, _)| at + i))
        .collect()
}

/// `text` as HTML with every word that matches a term (the word itself in any case,
/// or a form of it) in `<mark>`; everything else escaped.
pub fn highlight(text: &str, terms: &[String]) -> String {
    let marked = matched_chars(text, terms);
    let mut out = String::with_capacity(text.len() + 16);
    let mut open = false;
    for (i, c) in text.char_indices() {
        let inside = marked.contains(&i);
        if inside && !open {
            out.push_str("<mark>");
            open = true;
        } else if !inside && open {
            out.push_str("</mark>");
            open = false;
        }
        out.push_str(&escape_html(c.encode_utf8(&mut [0; 4])));
    }
    if open {
        out.push_str("</mark>");
    }
    out
}

/// The byte offset in `text` of the first word that matches a term (`is_match`),
/// reading no further than it must: a writeup may be a megabyte of the searched word.
pub(super) fn first_match(text: &str, terms: &[String]) -> Option<usize> {
    let stems: Vec<String> = terms.iter().map(|t| stem(t)).collect();
    words_at(text)
        .find(|(_, w)| is_match(w, terms, &stems))
        .map(|(at, _)| at)
}
