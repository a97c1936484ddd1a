//! The check on the section written for customers: it names no person of the
//! directory (by name or address) and no internal host (`coe.internal_patterns`).
//! Its findings block submitting, like a missing section, so what is approved with
//! the COE is fit to publish.

use std::collections::BTreeSet;

use diesel::prelude::*;

use crate::config::Settings;
use crate::db::schema::people;
use crate::db::DbConnection;

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
    // Each run of one to four words, as a directory name would be written, compared
    // in Rust (SQLite's lower() folds ASCII only: "Élodie" must match "élodie").
    let fold = |t: &str| t.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'");
    let words: Vec<String> = fold(text)
        .split(|c: char| {
            !(c.is_alphanumeric()
                || c == '\''
                || c == '-'
                || c == '.'
                || c == '@'
                || c == '_'
                || c == '+')
        })
        .map(|w| {
            w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-')
                .to_owned()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut runs: BTreeSet<String> = BTreeSet::new();
    for n in 1..=NAME_WORDS {
        for run in words.windows(n) {
            runs.insert(run.join(" "));
        }
    }
    let directory: Vec<(String, Option<String>)> = people::table
        .select((people::email, people::name))
        .load(conn)?;
    let mut named: Vec<String> = Vec::new();
    for (email, name) in directory {
        if runs.contains(&email.to_lowercase()) {
            named.push(email);
        } else if let Some(name) = name {
            let folded = fold(&name).split_whitespace().collect::<Vec<_>>().join(" ");
            if !folded.is_empty() && runs.contains(&folded) {
                named.push(name);
            }
        }
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
