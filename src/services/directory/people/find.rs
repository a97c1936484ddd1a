//! Finding people in the directory by a part of their name, address or team: what
//! the people picker offers while a person types (`GET /people/find` for the pages'
//! script, `GET /api/v1/people?q=`). No page carries the directory: in an
//! organisation of 10,000 people that was 400 KB on every COE page.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::schema::people;
use crate::db::{self, DbConnection};

/// Longest text a search for people takes, in characters.
pub const MAX_FIND_CHARS: usize = 100;
/// Most people one search answers.
pub const MAX_FOUND: i64 = 50;

/// A person found: what the picker shows and fills in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Found {
    pub email: String,
    pub name: Option<String>,
    pub team: Option<String>,
}

/// Why a search for people is refused (the text says what to do instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FindRefusal {
    #[error("must be at most {MAX_FIND_CHARS} characters (got {0}): type a part of a name or an address")]
    TooLong(usize),
}

/// `text` as a LIKE pattern's body: its wildcards taken literally (escaped with `\`).
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The people whose address, name or team holds `text` (any case), at most `limit`
/// (up to `MAX_FOUND`): those whose address or name (or a word of it) starts with it
/// first, then the rest, each by address. An empty text finds nobody.
pub fn find(conn: &mut DbConnection, text: &str, limit: i64) -> Result<Vec<Found>, FindError> {
    let chars = text.chars().count();
    if chars > MAX_FIND_CHARS {
        return Err(FindError::Refused(FindRefusal::TooLong(chars)));
    }
    let text = text.trim().to_lowercase();
    let limit = limit.clamp(1, MAX_FOUND);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let body = literal(&text);
    let (starts, word_starts, holds) = (
        format!("{body}%"),
        format!("% {body}%"),
        format!("%{body}%"),
    );
    let email = || db::lower(people::email.nullable());
    let name = || db::lower(people::name);
    let team = || db::lower(people::team);
    let columns = (people::email, people::name, people::team);
    // Someone who left cannot be named: they are not offered.
    let first: Vec<(String, Option<String>, Option<String>)> = people::table
        .filter(people::active.eq(true))
        .filter(
            email()
                .like(starts.clone())
                .escape('\\')
                .or(name().like(starts).escape('\\'))
                .or(name().like(word_starts).escape('\\')),
        )
        .order(people::email.asc())
        .limit(limit)
        .select(columns)
        .load(conn)?;
    let mut found: Vec<Found> = first.into_iter().map(Found::from).collect();
    let more = limit - i64::try_from(found.len()).unwrap_or(limit);
    if more > 0 {
        let seen: Vec<String> = found.iter().map(|f| f.email.clone()).collect();
        let rest: Vec<(String, Option<String>, Option<String>)> = people::table
            .filter(people::active.eq(true))
            .filter(people::email.ne_all(seen))
            .filter(
                email()
                    .like(holds.clone())
                    .escape('\\')
                    .or(name().like(holds.clone()).escape('\\'))
                    .or(team().like(holds).escape('\\')),
            )
            .order(people::email.asc())
            .limit(more)
            .select(columns)
            .load(conn)?;
        found.extend(rest.into_iter().map(Found::from));
    }
    Ok(found)
}

/// The directory's teams whose name holds `text` (any case), those starting with it
/// first, at most `limit` (up to `MAX_FOUND`), each once whatever its spellings.
pub fn find_teams(
    conn: &mut DbConnection,
    text: &str,
    limit: i64,
) -> Result<Vec<String>, FindError> {
    let chars = text.chars().count();
    if chars > MAX_FIND_CHARS {
        return Err(FindError::Refused(FindRefusal::TooLong(chars)));
    }
    let text = text.trim().to_lowercase();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let limit = usize::try_from(limit.clamp(1, MAX_FOUND)).unwrap_or(10);
    let mut teams: Vec<String> = people::table
        .filter(
            db::lower(people::team)
                .like(format!("%{}%", literal(&text)))
                .escape('\\'),
        )
        .select(people::team.assume_not_null())
        .distinct()
        .load(conn)?;
    teams.sort_by_key(|t| (!t.to_lowercase().starts_with(&text), t.to_lowercase()));
    teams.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    teams.truncate(limit);
    Ok(teams)
}

impl From<(String, Option<String>, Option<String>)> for Found {
    fn from((email, name, team): (String, Option<String>, Option<String>)) -> Self {
        Found { email, name, team }
    }
}

/// A search for people that did not go through.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("{0}")]
    Refused(FindRefusal),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_taken_literally() {
        assert_eq!(literal("a_b%c\\d"), "a\\_b\\%c\\\\d");
        assert_eq!(literal("maria"), "maria");
    }
}
