//! Who may be given work: a person who works here (in the directory, not gone), as
//! an action's owner, a COE's owner or reviewer, or a bar raiser.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::people;
use crate::db::DbConnection;
use crate::services::Env;

/// Whether `email` still works here: in the directory and active, or not in it at
/// all (someone outside the directory has not left it).
pub fn works_here(conn: &mut DbConnection, email: &str) -> QueryResult<bool> {
    let active: Option<bool> = people::table
        .find(email)
        .select(people::active)
        .first(conn)
        .optional()?;
    Ok(active.unwrap_or(true))
}

/// The refusal for naming someone who left the organisation, if `email` has.
pub fn has_left(conn: &mut DbConnection, email: &str) -> QueryResult<Option<String>> {
    let left: Option<Option<NaiveDateTime>> = people::table
        .find(email)
        .filter(people::active.eq(false))
        .select(people::left_at)
        .first(conn)
        .optional()?;
    Ok(left.map(|at| {
        let on = at.map_or_else(String::new, |t| format!(" on {}", t.date()));
        format!("{email} left the organisation{on}: name someone who works here")
    }))
}

/// Whether `email` may be named a COE's owner or reviewer, or an action's owner: the
/// problem, naming the known address nearest to it, when it may not. People in the
/// directory may, and addresses of `auth.allowed_domains`; others are refused (where
/// anyone may sign in, a local trial, only an address whose domain is a slip away
/// from a known one: `maria@exmaple.com`).
/// Whether `email` may own a corrective action: as `check_assignable`, and in
/// production mode only a person of the directory (one nobody manages would get no
/// escalation when the action goes overdue). Returns the problem in words.
pub fn check_action_owner(
    conn: &mut DbConnection,
    env: Env<'_>,
    email: &str,
) -> QueryResult<Option<String>> {
    let settings = env.settings;
    if let Some(problem) = check_assignable(conn, env, email)? {
        return Ok(Some(problem));
    }
    if settings.mode != crate::config::Mode::Production {
        return Ok(None);
    }
    let known: i64 = people::table
        .filter(people::email.eq(email))
        .count()
        .get_result(conn)?;
    Ok((known == 0).then(|| {
        format!(
            "{email} is not in the directory: nobody manages them, so nobody would be told if \
             the action went overdue. Pick a person of the directory, or ask an admin to add \
             them (Admin → People)"
        )
    }))
}

pub fn check_assignable(
    conn: &mut DbConnection,
    env: Env<'_>,
    email: &str,
) -> QueryResult<Option<String>> {
    let settings = env.settings;
    use crate::domain::auth::{nearest_address, with_nearest_domain};
    let allowed = &settings.auth.allowed_domains;
    let domain = email.rsplit_once('@').map_or("", |(_, d)| d);
    if let Some(left) = has_left(conn, email)? {
        return Ok(Some(left));
    }
    let in_directory: i64 = people::table
        .filter(people::email.eq(email))
        .count()
        .get_result(conn)?;
    if in_directory > 0 || allowed.iter().any(|d| d.eq_ignore_ascii_case(domain)) {
        return Ok(None);
    }
    let directory: Vec<String> = people::table.select(people::email).load(conn)?;
    let mut domains: Vec<String> = directory
        .iter()
        .filter_map(|e| e.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase()))
        .chain(allowed.iter().map(|d| d.to_ascii_lowercase()))
        .collect();
    domains.sort();
    domains.dedup();
    let slip = with_nearest_domain(email, &domains);
    if settings.anyone_may_sign_in() {
        return Ok(
            slip.map(|meant| format!("nobody at `{domain}` is known: did you mean {meant}?"))
        );
    }
    let meant = nearest_address(email, &directory)
        .map(str::to_owned)
        .or(slip)
        .map_or_else(String::new, |m| format!("; did you mean {m}?"));
    Ok(Some(format!(
        "`{email}` is not in the directory and not of an allowed domain \
         (auth.allowed_domains){meant}"
    )))
}

/// How many people the directory marks bar raiser.
pub fn bar_raiser_count(conn: &mut DbConnection) -> QueryResult<i64> {
    people::table
        .filter(people::bar_raiser.eq(true))
        .count()
        .get_result(conn)
}

/// Whether `email` may review COEs, beyond being assignable: once the directory
/// holds teams (it was imported or kept by admins), a reviewer is a person in it with
/// a team, not an address that only signed in (a second mailbox of the owner's, say);
/// the problem when not.
pub fn check_reviewer(conn: &mut DbConnection, email: &str) -> QueryResult<Option<String>> {
    if let Some(left) = has_left(conn, email)? {
        return Ok(Some(left));
    }
    let directory_kept: i64 = people::table
        .filter(people::team.is_not_null())
        .count()
        .get_result(conn)?;
    if directory_kept == 0 {
        return Ok(None);
    }
    let team: Option<Option<String>> = people::table
        .find(email)
        .select(people::team)
        .first(conn)
        .optional()?;
    if let Some(Some(_)) = team {
        return Ok(None);
    }
    // A slip of a person's address is answered with theirs.
    let with_teams: Vec<String> = people::table
        .filter(people::team.is_not_null())
        .select(people::email)
        .load(conn)?;
    let meant = crate::domain::auth::nearest_address(email, &with_teams)
        .map_or_else(String::new, |m| format!("; did you mean {m}?"));
    Ok(Some(format!(
        "`{email}` is not in the directory with a team: a reviewer is a person the \
         directory knows (an admin adds them first){meant}"
    )))
}
