//! Search: the full-text search of COEs (`services::coe::coes::list` with text, ranked) as a
//! page, with filters in the URL and the matched words highlighted in each hit's title
//! and in a passage of its writeup.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::json;

use super::highlight::first_match;
use super::kit::{render, Page, State};
use super::markdown::to_plain;
use super::outcome::as_service;
use super::query::{filled, pages_at, CoeFilters};
use crate::domain::coe::CoeState;
use crate::domain::search::SearchText;
use crate::domain::Severity;
use crate::http::session::SignedIn;
use crate::services::coe::coes::{self, CoeFilter};

const PAGE: i64 = 20;

#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
pub struct SearchQuery {
    #[serde(default)]
    q: Option<String>,
    #[serde(flatten)]
    filters: CoeFilters,
    #[serde(default)]
    offset: Option<i64>,
}

/// A passage of `body` around the first term found, about 240 characters.
fn passage(body: &str, terms: &[String]) -> Option<String> {
    // The first match, as an offset of a character of `body` (see `fold`).
    let at = first_match(body, terms)?;
    let start = body[..at]
        .char_indices()
        .rev()
        .nth(100)
        .map_or(0, |(i, _)| i);
    let end = body[at..]
        .char_indices()
        .nth(140)
        .map_or(body.len(), |(i, _)| at + i);
    let mut text = body[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if start > 0 {
        text.insert_str(0, "… ");
    }
    if end < body.len() {
        text.push_str(" …");
    }
    Some(text)
}

/// The sentence of `body` that holds one of the quoted `phrases` (its words in
/// order, in any case), whole when it is short, else cut around the phrase: what a
/// quoted search quotes.
fn sentence_with(body: &str, phrases: &[Vec<String>]) -> Option<String> {
    let words_of = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let sentences = body
        .split_inclusive(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty());
    for sentence in sentences {
        let words = words_of(sentence);
        let holds = phrases.iter().any(|phrase| {
            !phrase.is_empty() && words.windows(phrase.len()).any(|w| w == phrase.as_slice())
        });
        if holds {
            let text = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.chars().count() <= 300 {
                return Some(text);
            }
            let first = phrases.first().and_then(|p| p.first()).cloned();
            return passage(&text, &first.into_iter().collect::<Vec<_>>());
        }
    }
    None
}

/// `GET /search`.
pub async fn search(who: SignedIn, query: web::Query<SearchQuery>, state: State) -> Page {
    let q = query.into_inner();
    let text = match filled(&q.q).map(|t| SearchText::parse(&t)).transpose() {
        Ok(text) => text,
        // Refused by name next to the field, the words kept to shorten.
        Err(refused) => {
            let data = json!({
                "query": q,
                "refused": refused.to_string(),
                "did_you_mean": null,
                "several_words": false,
                "searched": false,
                "hits": [],
                "names": {},
                "total": 0,
                "states": CoeState::ALL.map(|s| s.as_str()),
                "severities": Severity::ALL.map(|s| s.to_string()),
                "next": null,
                "previous": null,
            });
            return render(
                &state,
                Some(&who),
                StatusCode::UNPROCESSABLE_ENTITY,
                "search",
                data,
            );
        }
    };
    let chosen = q.filters.filter()?;
    let severity = chosen.severity;
    let words: Vec<String> = text.as_ref().map_or_else(Vec::new, |t| {
        t.words()
            .iter()
            .filter(|w| w.chars().count() >= 2)
            .cloned()
            .collect()
    });
    let several_words = words.len() > 1;
    let phrases: Vec<Vec<String>> = text.as_ref().map_or_else(Vec::new, |t| {
        t.phrases()
            .iter()
            .map(|p| p.iter().map(|w| w.to_lowercase()).collect())
            .collect()
    });
    let filter = CoeFilter {
        text: text.clone(),
        search_within: Some(std::time::Duration::from_millis(
            state.settings.server.search_timeout_ms,
        )),
        ..chosen
    };
    let offset = q.offset.unwrap_or(0).max(0);
    let searched =
        text.is_some() || filter.state.is_some() || filter.service.is_some() || severity.is_some();
    // A search waits for its turn, so that searches never hold every connection.
    let _turn = match text {
        Some(_) => Some(crate::http::state::search_turn(&state).await?),
        None => None,
    };
    let (hits, total, did_you_mean) = if searched {
        as_service(&state, move |conn, _| {
            let (page, total) = coes::list(conn, &filter, PAGE, offset)?;
            let ids: Vec<String> = page.iter().map(|c| c.id.clone()).collect();
            let texts = coes::section_texts(conn, &ids)?;
            let actions = coes::action_texts(conn, &ids)?;
            let hits = page
                .into_iter()
                .map(|coe| {
                    // Quoted from the writeup, else from the corrective action found.
                    // A quoted phrase is quoted in its sentence.
                    let found = texts.get(&coe.id).and_then(|bodies| {
                        let plain: Vec<String> = bodies.iter().map(|b| to_plain(b)).collect();
                        plain
                            .iter()
                            .find_map(|b| sentence_with(b, &phrases))
                            .or_else(|| plain.iter().find_map(|b| passage(b, &words)))
                    });
                    let action = found
                        .is_none()
                        .then(|| actions.get(&coe.id))
                        .flatten()
                        .and_then(|list| {
                            // Its title, and a passage of its other words when the
                            // match is there.
                            list.iter().find_map(|(id, title, text)| {
                                let quoted = passage(text, &words);
                                (quoted.is_some() || first_match(title, &words).is_some())
                                    .then(|| json!({"id": id, "title": title, "passage": quoted}))
                            })
                        });
                    json!({"coe": coe, "passage": found, "action": action})
                })
                .collect::<Vec<_>>();
            // Nothing found: a word the index does not hold may be a typo.
            let did_you_mean = match (&filter.text, total) {
                (Some(text), 0) => coes::did_you_mean(conn, text)?,
                _ => None,
            };
            Ok((hits, total, did_you_mean))
        })
        .await?
    } else {
        // Nothing asked yet: the newest COEs, to start from.
        as_service(&state, move |conn, _| {
            let (page, _) = coes::list(conn, &CoeFilter::default(), PAGE, 0)?;
            let hits = page
                .into_iter()
                .map(|coe| json!({"coe": coe, "passage": null}))
                .collect::<Vec<_>>();
            Ok((hits, 0, None))
        })
        .await?
    };
    let owners: Vec<String> = hits
        .iter()
        .filter_map(|h| h["coe"]["owner"].as_str().map(str::to_owned))
        .collect();
    let names = as_service(&state, move |conn, _| {
        Ok(crate::services::directory::people::names_of(conn, &owners)?)
    })
    .await?;
    let names = super::kit::names_data(&names);
    let at = |q: &mut SearchQuery, offset| q.offset = Some(offset);
    let (previous, next) = pages_at("/search", &q, at, (offset, PAGE, total));
    // The same search with the typo put right, filters kept.
    let did_you_mean = did_you_mean.map(|fixed| {
        let mut again = q.clone();
        again.q = Some(fixed.clone());
        again.offset = None;
        json!({
            "text": fixed,
            "link": format!(
                "/search?{}",
                serde_urlencoded::to_string(&again).unwrap_or_default()
            ),
        })
    });
    let data = json!({
        "did_you_mean": did_you_mean,
        // Several words: the order says the COEs holding them together come first.
        "several_words": several_words,
        "query": q,
        "searched": searched,
        "hits": hits,
        "names": names,
        "total": total,
        "states": CoeState::ALL.map(|s| s.as_str()),
        "severities": Severity::ALL.map(|s| s.to_string()),
        "next": next,
        "previous": previous,
    });
    render(&state, Some(&who), StatusCode::OK, "search", data)
}

#[cfg(test)]
mod tests {
    use super::super::highlight::{highlight, terms};
    use super::*;

    #[test]
    fn a_quoted_search_quotes_the_sentence_with_the_phrase() {
        let body = "The pool was small. Later the connection pool was exhausted by retries. \
                    Nobody noticed.";
        let phrase = vec![vec![
            "pool".to_owned(),
            "was".to_owned(),
            "exhausted".to_owned(),
        ]];
        assert_eq!(
            sentence_with(body, &phrase).as_deref(),
            Some("Later the connection pool was exhausted by retries.")
        );
        assert_eq!(sentence_with("Nothing here.", &phrase), None);
    }

    #[test]
    fn matches_are_marked_and_everything_else_escaped() {
        let t = terms("Pool <exhausted>");
        assert_eq!(t, vec!["pool", "exhausted"]);
        assert_eq!(
            highlight("The POOL was <b>exhausted</b>", &t),
            "The <mark>POOL</mark> was &lt;b&gt;<mark>exhausted</mark>&lt;/b&gt;"
        );
        let p = passage(
            &format!("{} the pool ran dry {}", "x ".repeat(200), "y ".repeat(200)),
            &t,
        )
        .expect("found");
        assert!(
            p.starts_with("… ") && p.ends_with(" …") && p.contains("the pool ran dry"),
            "{p}"
        );
    }

    #[test]
    fn only_whole_words_and_their_forms_are_marked() {
        let t = terms("\"timed out\"");
        assert_eq!(
            highlight("Checkout timed out; the timeout is outdated", &t),
            "Checkout <mark>timed</mark> <mark>out</mark>; the timeout is outdated"
        );
        assert_eq!(
            passage("a checkout, then it timed out", &t).as_deref(),
            Some("a checkout, then it timed out")
        );
        assert_eq!(first_match("checkout outage out", &t), Some(16));
    }

    #[test]
    fn word_forms_of_a_term_are_marked_whole() {
        let t = terms("failing pools");
        assert_eq!(
            highlight("Checkout failed: the pool ran dry", &t),
            "Checkout <mark>failed</mark>: the <mark>pool</mark> ran dry"
        );
        assert_eq!(
            passage("It **failed** twice", &t).as_deref(),
            Some("It **failed** twice")
        );
    }

    /// `İ` lower-cases to two characters and the Kelvin sign to one byte: offsets in
    /// the lower-cased text are not offsets in the text (this answered 500).
    #[test]
    fn letters_that_change_length_when_lower_cased_are_matched_in_place() {
        let body = "İ éé \u{212A} İ";
        let t = terms("éé");
        assert_eq!(highlight(body, &t), "İ <mark>éé</mark> \u{212A} İ",);
        assert!(passage(body, &t).expect("found").contains("éé"));
        // The Kelvin sign matches a k.
        assert_eq!(
            highlight("5 \u{212A}elvin", &terms("kelvin")),
            "5 <mark>\u{212A}elvin</mark>"
        );
    }

    proptest::proptest! {
        /// Any text and any query: no panic, and the highlight holds the text itself,
        /// escaped, once the marks are taken out.
        #[test]
        fn highlighting_never_panics_and_keeps_the_text(body in "\\PC{0,60}", query in "\\PC{0,12}") {
            let t = terms(&query);
            let html = highlight(&body, &t);
            let plain = html.replace("<mark>", "").replace("</mark>", "");
            proptest::prop_assert_eq!(plain, super::super::html::escape_html(&body));
            let _ = passage(&body, &t);
        }

        /// The same, from an alphabet rich in letters that change length.
        #[test]
        fn letters_that_change_length_never_cut_a_character(
            body in "[İıKkéÉßẞ ǅ a-z]{0,40}",
            query in "[İıKkéÉßẞǅ a-z]{1,6}",
        ) {
            let t = terms(&query);
            let _ = highlight(&body, &t);
            let _ = passage(&body, &t);
        }
    }
}
