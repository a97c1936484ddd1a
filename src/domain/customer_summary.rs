//! The section written for customers, read the way a customer will read it: its
//! Markdown rendered as the public page renders it (entities decoded, emphasis and
//! escapes gone) and its raw text both, by whole words and possessives ("Maria Lopez's
//! team"), against the directory's addresses, full names and given names, and against
//! `coe.internal_patterns` in the text and in the host of every link.
//!
//! Pure: the caller loads the directory once and compiles the patterns once per check,
//! and the work is linear in the text and the directory (sets of the text's words, one
//! look-up per person; no expression per person).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;

/// The Markdown the pages render: CommonMark with tables and strikethrough. The
/// public page (`http::pages::markdown`) and this check read text the same way.
pub const MARKDOWN_OPTIONS: Options = Options::ENABLE_TABLES.union(Options::ENABLE_STRIKETHROUGH);

/// Longest run of words a directory name is looked for as ("Ana Maria da Silva").
pub const NAME_WORDS: usize = 4;

/// Given names that are also ordinary English words (and words of our trade: "max",
/// "ping", "dev", "ruby"). A directory person's given name found in the text refuses
/// it, unless the name is one of these: then it is a warning, and only where the word
/// is written with a capital (the verb "will" is no one's name; "Will" may be).
/// Lower case, sorted (a test keeps it so).
pub const COMMON_WORDS: &[&str] = &[
    "a", "about", "ace", "ada", "after", "all", "also", "am", "amber", "an", "and", "any", "april",
    "are", "art", "as", "ash", "at", "august", "bay", "be", "been", "bill", "bin", "blake",
    "brook", "but", "by", "can", "candy", "carol", "chance", "chase", "chip", "cliff", "crystal",
    "dale", "dawn", "dean", "dev", "did", "do", "don", "drew", "dusty", "each", "eve", "faith",
    "fern", "for", "ford", "forest", "frank", "from", "gang", "gene", "glen", "go", "grace",
    "grant", "gray", "grey", "guy", "had", "has", "have", "hazel", "he", "heath", "her", "him",
    "his", "holly", "honey", "hope", "how", "hung", "hunter", "i", "if", "in", "into", "iris",
    "is", "it", "its", "ivy", "jack", "jade", "jay", "jewel", "job", "joy", "julia", "june",
    "justice", "king", "lan", "lance", "lane", "lily", "long", "march", "mark", "max", "may", "me",
    "mercy", "miles", "min", "misty", "more", "most", "my", "new", "nick", "no", "nor", "norm",
    "not", "now", "ocean", "of", "off", "olive", "on", "once", "one", "only", "or", "our", "out",
    "over", "own", "page", "pat", "patience", "pearl", "penny", "per", "pierce", "ping", "price",
    "ram", "ray", "reed", "rich", "river", "rob", "robin", "rock", "rocky", "rose", "ruby",
    "rusty", "sage", "same", "sandy", "see", "she", "skip", "sky", "so", "some", "sonny", "spring",
    "stone", "storm", "sue", "summer", "sun", "sunny", "tan", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "too", "two", "up", "us",
    "very", "violet", "wade", "wan", "ward", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "why", "will", "win", "winter", "with", "wood", "woody", "yet", "you", "your",
];

/// Words written before a name that are not its given name.
const HONORIFICS: &[&str] = &["dame", "dr", "miss", "mr", "mrs", "ms", "mx", "prof", "sir"];

/// Whether `word` (lower case) is an ordinary word as well as a given name.
pub fn is_common_word(word: &str) -> bool {
    COMMON_WORDS.binary_search(&word).is_ok()
}

/// The text of a section as a reader of the rendered page sees it, and where its
/// links and images point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The words shown: entities decoded, escapes resolved, emphasis and link syntax
    /// gone, raw HTML kept as the text it is shown as; blocks and breaks on lines, and
    /// the links' titles last.
    pub text: String,
    /// Each link's and image's target, as the parser read it (entities decoded).
    pub links: Vec<String>,
}

/// `markdown` rendered as the public page renders it, as text.
pub fn render(markdown: &str) -> Rendered {
    let mut out = Rendered::default();
    let mut titles = String::new();
    for event in Parser::new_ext(markdown, MARKDOWN_OPTIONS) {
        match event {
            Event::Text(t)
            | Event::Code(t)
            | Event::Html(t)
            | Event::InlineHtml(t)
            | Event::InlineMath(t)
            | Event::DisplayMath(t) => out.text.push_str(&t),
            Event::SoftBreak | Event::HardBreak | Event::Rule => out.text.push('\n'),
            Event::Start(
                Tag::Link {
                    dest_url, title, ..
                }
                | Tag::Image {
                    dest_url, title, ..
                },
            ) => {
                out.links.push(dest_url.into_string());
                // A link's title shows when the pointer rests on it.
                titles.push_str(&title);
                titles.push('\n');
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock,
            ) => out.text.push('\n'),
            _ => {}
        }
    }
    out.text.push('\n');
    out.text.push_str(&titles);
    out
}

/// A character as a reader sees it: curly and modifier apostrophes are `'`,
/// full-width letters are their ASCII twins, and invisible characters (a zero-width
/// space, a soft hyphen) are nothing.
fn seen(c: char) -> Option<char> {
    match c {
        '\u{00AD}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}' => None,
        '\u{2018}' | '\u{2019}' | '\u{02BC}' | '\u{FF07}' => Some('\''),
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0),
        c => Some(c),
    }
}

/// One word of a text: its key (lower case, without a possessive) and whether it was
/// written with a capital.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    key: String,
    capital: bool,
}

/// `word` without a possessive ending: "lopez's" and "james'" are "lopez" and "james";
/// "o'brien" stays.
fn without_possessive(word: &str) -> &str {
    let word = word.strip_suffix("'s").unwrap_or(word);
    word.trim_end_matches('\'')
}

/// The words of `text`, split where `inside` says a word ends.
fn words(text: &str, inside: impl Fn(char) -> bool) -> Vec<Word> {
    let seen: String = text.chars().filter_map(seen).collect();
    seen.split(|c: char| !inside(c))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '\'' | '-' | '_' | '+')))
        .filter(|w| !w.is_empty())
        .filter_map(|w| {
            let lower = w.to_lowercase();
            let key = without_possessive(&lower).trim_end_matches(['.', '-']);
            (!key.is_empty()).then(|| Word {
                key: key.to_owned(),
                capital: w.chars().next().is_some_and(char::is_uppercase),
            })
        })
        .collect()
}

/// Words as a name or an address is written: "jean-luc", "o'brien", "ana@example.com".
fn name_like(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '\'' | '-' | '.' | '@' | '_' | '+')
}

/// Words split at anything but a letter or an apostrophe too: "Maria-Lopez",
/// "maria.lopez@example.com" and "omar_db" show their names.
fn letters_only(c: char) -> bool {
    c.is_alphanumeric() || c == '\''
}

/// The words of a directory name, as the text's words are keyed.
pub fn name_words(name: &str) -> Vec<String> {
    words(name, name_like).into_iter().map(|w| w.key).collect()
}

/// The given name in a name's words (`name_words`): the first word that is not an
/// honorific, when it is more than an initial.
pub fn given_name(words: &[String]) -> Option<&str> {
    words
        .iter()
        .map(String::as_str)
        .find(|w| !HONORIFICS.contains(w))
        .filter(|w| w.chars().count() >= 2)
}

/// Every run of one to `NAME_WORDS` words of some texts, keyed, and the words that
/// were written with a capital somewhere.
#[derive(Debug, Default)]
pub struct Words {
    runs: HashSet<String>,
    capitalized: HashSet<String>,
}

impl Words {
    /// The words of each of `texts`, split both ways (`name_like`, `letters_only`);
    /// runs never cross from one text to the next.
    pub fn of(texts: &[&str]) -> Words {
        let mut all = Words::default();
        for text in texts {
            for split in [words(text, name_like), words(text, letters_only)] {
                for w in split.iter().filter(|w| w.capital) {
                    all.capitalized.insert(w.key.clone());
                }
                for n in 1..=NAME_WORDS {
                    for run in split.windows(n) {
                        let keys: Vec<&str> = run.iter().map(|w| w.key.as_str()).collect();
                        all.runs.insert(keys.join(" "));
                    }
                }
            }
        }
        all
    }

    /// Whether the words `run` (keyed, one space between) occur in the texts.
    pub fn has(&self, run: &str) -> bool {
        self.runs.contains(run)
    }

    /// Whether `word` (keyed) was written with a capital somewhere.
    pub fn capitalized(&self, word: &str) -> bool {
        self.capitalized.contains(word)
    }
}

/// `text` with each `%XX` decoded (invalid UTF-8 shown as �).
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// What of a link target is checked against the internal patterns: the target
/// percent-decoded, and the host a browser would go to (IDNA, percent escapes and
/// number forms of IPv4 resolved: `10.0.0.1`, not `0x0a000001`).
pub fn link_hosts(dest: &str) -> Vec<String> {
    let dest = dest.trim();
    let mut out = vec![percent_decoded(dest)];
    let parsed = url::Url::parse(dest).or_else(|e| {
        if dest.starts_with("//") || dest.starts_with("\\\\") {
            url::Url::parse(&format!("https:{dest}"))
        } else if dest.to_ascii_lowercase().starts_with("www.") {
            url::Url::parse(&format!("https://{dest}"))
        } else {
            Err(e)
        }
    });
    if let Some(host) = parsed.ok().and_then(|u| u.host_str().map(str::to_owned)) {
        out.push(host);
    }
    out
}

/// The addresses written out in `text` without Markdown's link syntax
/// ("see https://x.example/a" or "www.x.example").
pub fn bare_urls(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for token in text.split(|c: char| c.is_whitespace() || "<>()[]{}\"'`|".contains(c)) {
        let token = token.trim_end_matches(['.', ',', ';', ':', '!', '?', '*', '_', '~']);
        let lower = token.to_ascii_lowercase();
        if let Some(at) = lower.find("://") {
            let scheme = lower[..at]
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                .last()
                .map_or(at, |(i, _)| i);
            found.push(token[scheme..].to_owned());
        } else if let Some(at) = lower.find("www.") {
            found.push(token[at..].to_owned());
        }
    }
    found
}

/// What the check found: refusals block submitting and publishing; warnings are
/// shown to the writer and the reviewer ("Worth a second look").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    pub refusals: Vec<String>,
    pub warnings: Vec<String>,
}

/// "Omar Haddad", or "Omar Haddad and 2 more people".
fn who(names: &BTreeSet<String>) -> String {
    let mut names = names.iter();
    let first = names.next().cloned().unwrap_or_default();
    match names.count() {
        0 => format!("{first}, a person"),
        1 => format!("{first} and 1 more person"),
        more => format!("{first} and {more} more people"),
    }
}

/// The directory as the check reads it: each person's address and name.
pub type Directory = [(String, Option<String>)];

/// What is wrong with `text` for customers' eyes: a person of `directory` named by
/// address, full name or given name, or something `internal` matches in the text
/// (raw or rendered) or in a link's host. Each finding in words, naming what matched.
/// `coe.internal_patterns` compiled (any case); one that does not compile was
/// refused at start.
pub fn internal_patterns(patterns: &[String]) -> Vec<Regex> {
    patterns
        .iter()
        .filter_map(|p| {
            regex::RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .ok()
        })
        .collect()
}

pub fn check(text: &str, directory: &Directory, internal: &[Regex]) -> Findings {
    let mut found = Findings::default();
    if text.trim().is_empty() {
        return found;
    }
    let rendered = render(text);
    let words = Words::of(&[text, &rendered.text]);

    // The directory: one look-up per person in the sets of the text's runs.
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut named_given: HashSet<String> = HashSet::new();
    // A given name found → (as the directory writes it, whose it is).
    let mut given: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for (email, name) in directory {
        if words.has(&email.to_lowercase()) {
            named.insert(email.clone());
            continue;
        }
        let Some(name) = name.as_deref().map(str::trim).filter(|n| !n.is_empty()) else {
            continue;
        };
        let parts = name_words(name);
        if (2..=NAME_WORDS).contains(&parts.len()) && words.has(&parts.join(" ")) {
            named.insert(name.to_owned());
            named_given.extend(given_name(&parts).map(str::to_owned));
            continue;
        }
        let Some(first) = given_name(&parts) else {
            continue;
        };
        if !words.has(first) || is_common_word(first) && !words.capitalized(first) {
            continue;
        }
        let shown = name
            .split_whitespace()
            .find(|w| name_words(w).first().is_some_and(|k| k == first))
            .unwrap_or(first)
            .trim_matches(|c: char| !c.is_alphanumeric());
        given
            .entry(first.to_owned())
            .or_insert_with(|| (shown.to_owned(), BTreeSet::new()))
            .1
            .insert(name.to_owned());
    }
    for person in &named {
        found.refusals.push(format!(
            "names {person}, a person in the directory: customers read this section; say what \
             happened, not who"
        ));
    }
    for (key, (shown, whose)) in &given {
        if is_common_word(key) {
            if !named_given.contains(key) {
                found.warnings.push(format!(
                    "“{shown}” is also the first name of {} in the directory: if it names them, \
                     say what happened, not who (as an ordinary word it is fine)",
                    who(whose)
                ));
            }
        } else {
            found.refusals.push(format!(
                "names {shown}, the first name of {} in the directory: customers read this \
                 section; say what happened, not who",
                who(whose)
            ));
        }
    }

    // Internal hosts: in the text as written and as shown, and where links go.
    let mut hosts: BTreeSet<String> = BTreeSet::new();
    for re in internal {
        for t in [text, rendered.text.as_str()] {
            if let Some(m) = re.find(t) {
                hosts.insert(m.as_str().to_owned());
            }
        }
    }
    let mut linked: BTreeSet<String> = BTreeSet::new();
    let targets = rendered
        .links
        .iter()
        .cloned()
        .chain(bare_urls(text))
        .chain(bare_urls(&rendered.text));
    for target in targets {
        for candidate in link_hosts(&target) {
            for re in internal {
                if let Some(m) = re.find(&candidate) {
                    if !hosts.contains(m.as_str()) {
                        linked.insert(m.as_str().to_owned());
                    }
                }
            }
        }
    }
    for host in hosts {
        found.refusals.push(format!(
            "names {host}, an internal host or address: customers read this section"
        ));
    }
    for host in linked {
        found.refusals.push(format!(
            "links to {host}, an internal host or address: customers read this section; link \
             only to public pages"
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal() -> Vec<Regex> {
        [
            r"\b10\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
            r"\b[a-z0-9-]+(\.[a-z0-9-]+)*\.(internal|local|lan|corp|intranet)\b",
        ]
        .iter()
        .map(|p| {
            regex::RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .expect("pattern")
        })
        .collect()
    }

    fn directory() -> Vec<(String, Option<String>)> {
        [
            ("maria@example.com", Some("Maria Lopez")),
            ("omar@example.com", Some("Omar Haddad")),
            ("priya@example.com", Some("Priya Raman")),
            ("will@example.com", Some("Will Smith")),
            ("obrien@example.com", Some("Dr. Seán O’Brien")),
            ("bot@example.com", None),
            ("j@example.com", Some("J. Doe")),
        ]
        .into_iter()
        .map(|(e, n)| (e.to_owned(), n.map(str::to_owned)))
        .collect()
    }

    fn refusals(text: &str) -> Vec<String> {
        check(text, &directory(), &internal()).refusals
    }

    #[test]
    fn the_common_words_are_sorted_and_lower_case() {
        assert!(COMMON_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(COMMON_WORDS.iter().all(|w| w.to_lowercase() == *w));
        assert!(is_common_word("will") && !is_common_word("omar"));
    }

    #[test]
    fn rendering_decodes_entities_and_drops_emphasis_and_escapes() {
        assert_eq!(render("M*aria* Lopez").text.trim(), "Maria Lopez");
        assert_eq!(render("Maria&#32;Lopez").text.trim(), "Maria Lopez");
        assert_eq!(render("Ma&shy;ria").text.trim(), "Ma\u{AD}ria");
        assert_eq!(
            render(r"search-es-03\.internal").text.trim(),
            "search-es-03.internal"
        );
        let r = render("[status](https://search-es-03.internal/x) and <https://a.example/>");
        assert_eq!(
            r.links,
            vec!["https://search-es-03.internal/x", "https://a.example/"]
        );
        assert!(r.text.contains("status"), "{}", r.text);
    }

    #[test]
    fn names_are_words_without_possessives() {
        assert_eq!(name_words("Maria Lopez's"), vec!["maria", "lopez"]);
        assert_eq!(name_words("Priya’s"), vec!["priya"]);
        assert_eq!(name_words("O’Brien"), vec!["o'brien"]);
        assert_eq!(name_words("James'"), vec!["james"]);
        assert_eq!(name_words("Ｍａｒｉａ"), vec!["maria"]);
        assert_eq!(name_words("Ma\u{200B}ria"), vec!["maria"]);
        assert_eq!(
            given_name(&name_words("Dr. Seán O’Brien")),
            Some("seán"),
            "an honorific is not a given name"
        );
        assert_eq!(given_name(&name_words("J. Doe")), None, "an initial is not");
    }

    #[test]
    fn each_attack_is_refused_naming_what_it_names() {
        for (text, named) in [
            (
                "Our engineer Omar rolled it back.",
                "names Omar, the first name of Omar Haddad",
            ),
            (
                "It recovered, thanks to Priya.",
                "names Priya, the first name of Priya Raman",
            ),
            ("thanks to priya’s quick work", "names Priya"),
            (
                "Maria Lopez's team restarted it.",
                "names Maria Lopez, a person",
            ),
            ("M*aria* Lopez restarted it.", "names Maria Lopez, a person"),
            (
                "Maria&#32;Lopez restarted it.",
                "names Maria Lopez, a person",
            ),
            ("MARIA-LOPEZ restarted it.", "names Maria"),
            ("Seán’s fix", "names Seán"),
            ("mail maria@example.com", "names maria@example.com"),
            (
                "The host search-es-03\\.internal failed.",
                "names search-es-03.internal",
            ),
            (
                "See [status](https://search-es-03.internal/x).",
                "search-es-03.internal",
            ),
            (
                "See <https://search-es-03.internal/x>.",
                "search-es-03.internal",
            ),
            (
                "See https://search-es-03%2Einternal/x now",
                "search-es-03.internal",
            ),
            (
                "See [status](https://search&#45;es-03&#46;internal/x).",
                "search-es-03.internal",
            ),
            ("See [ip](http://0x0a000001/).", "links to 10.0.0.1"),
            (
                "See [status](https://a.example/ \"&#79;mar\").",
                "names Omar",
            ),
        ] {
            let found = refusals(text).join(" | ");
            assert!(found.contains(named), "{text}: {found}");
        }
    }

    #[test]
    fn a_given_name_that_is_a_common_word_is_a_warning() {
        let found = check("Will Jones fixed it.", &directory(), &internal());
        assert_eq!(found.refusals, Vec::<String>::new());
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(found.warnings[0].contains("“Will” is also the first name of Will Smith"));
        // The verb, in lower case, is no one's name.
        let found = check("We will test every change.", &directory(), &internal());
        assert_eq!(found, Findings::default());
        // A full name is refused, without a warning besides.
        let found = check("Will Smith fixed it.", &directory(), &internal());
        assert_eq!(found.refusals.len(), 1, "{found:?}");
        assert!(found.warnings.is_empty(), "{found:?}");
    }

    #[test]
    fn an_ordinary_summary_passes() {
        let text = "On 3 December from 14:02 to 14:48 UTC, 12% of card payments failed. A \
                    *configuration change* rejected valid cards; we rolled it back. We will test \
                    every such change first. See [our status page](https://status.example.com/).";
        assert_eq!(check(text, &directory(), &internal()), Findings::default());
        // Names inside other words are not names: "Omaric", "Priyanka".
        assert_eq!(
            refusals("Omaric and Priyanka libraries"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn bare_addresses_are_found_in_prose() {
        assert_eq!(
            bare_urls("see https://a.example/x. and (www.b.example), not c.example"),
            vec!["https://a.example/x", "www.b.example"]
        );
        assert!(
            link_hosts("//search-es-03.internal/x").contains(&"search-es-03.internal".to_owned())
        );
    }

    #[test]
    fn ten_thousand_people_are_checked_in_one_pass() {
        let mut people: Vec<(String, Option<String>)> = (0..10_000)
            .map(|i| {
                (
                    format!("p{i}@example.com"),
                    Some(format!("Person{i} Surname{i}")),
                )
            })
            .collect();
        people.push(("omar@example.com".into(), Some("Omar Haddad".into())));
        // A section at its largest (100 KB), with links and markup.
        let text = "Our *engineer* Omar fixed [it](https://a.example/x). ".repeat(1_900);
        let started = std::time::Instant::now();
        let found = check(&text, &people, &internal());
        let took = started.elapsed();
        eprintln!("10,000 people, {} KB of text: {took:?}", text.len() / 1024);
        assert_eq!(found.refusals.len(), 1, "{found:?}");
        // Generous: a debug build on a busy machine; quadratic work would take minutes.
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }
}
