//! The check on the section written for customers: it names no person of the
//! directory (by name or address) and no internal host (`coe.internal_patterns`).
//! Its findings block submitting, like a missing section, so what is approved with
//! the COE is fit to publish.

use std::collections::BTreeSet;

use diesel::prelude::*;

use crate::config::Settings;
use crate::db::schema::people;
use crate::db::{lower, DbConnection};

/// Longest run of words a directory name is looked for as ("Ana Maria da Silva").
const NAME_WORDS: usize = 4;

/// What is wrong with `text` for customers' eyes, each in words ("names Ana Lima, a
/// person in the directory"); nothing when it is fit.
pub fn problems(
    conn: &mut DbConnection,
    settings: &Settings,
    text: &str,
) -> QueryResult<Vec<String>> {
    let mut found = Vec::new();
    if text.trim().is_empty() {
        return Ok(found);
    }
    // Each run of one to four words, as a directory name would be written.
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-' || c == '.' || c == '@'))
        .map(|w| {
            w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut runs: BTreeSet<String> = BTreeSet::new();
    for n in 1..=NAME_WORDS {
        for run in words.windows(n) {
            runs.insert(run.join(" "));
        }
    }
    let addresses: Vec<&String> = runs.iter().filter(|r| r.contains('@')).collect();
    let runs: Vec<Option<String>> = runs.iter().cloned().map(Some).collect();
    let mut named: Vec<String> = Vec::new();
    for chunk in runs.chunks(500) {
        let hits: Vec<(String, Option<String>)> = people::table
            .filter(lower(people::name.nullable()).eq_any(chunk))
            .select((people::email, people::name))
            .load(conn)?;
        named.extend(hits.into_iter().filter_map(|(_, name)| name));
    }
    for chunk in addresses.chunks(500) {
        let hits: Vec<String> = people::table
            .filter(people::email.eq_any(chunk.iter().map(|a| a.as_str())))
            .select(people::email)
            .load(conn)?;
        named.extend(hits);
    }
    named.sort();
    named.dedup();
    for who in named {
        found.push(format!(
            "names {who}, a person in the directory: customers read this section; say what happened, not who"
        ));
    }
    for pattern in &settings.coe.internal_patterns {
        let Ok(re) = regex::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .build()
        else {
            continue; // checked at start
        };
        if let Some(m) = re.find(text) {
            found.push(format!(
                "names {}, an internal host or address: customers read this section",
                m.as_str()
            ));
        }
    }
    Ok(found)
}
