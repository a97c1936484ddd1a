//! The names the pages show: who is called what, a name two people share told apart
//! by the address, and a name a member may not take because it would pass for
//! another's.

use diesel::prelude::*;

use crate::db::schema::people;
use crate::db::DbConnection;

/// (address, name), by address; at most `limit`.
pub fn names(conn: &mut DbConnection, limit: i64) -> QueryResult<Vec<(String, Option<String>)>> {
    people::table
        .order(people::email.asc())
        .select((people::email, people::name))
        .limit(limit)
        .load(conn)
}

/// The admins who may sign in, (address, name) by address, at most `limit`: whom a
/// page names when something only an admin sets up is missing (a chat channel to
/// import from, a tracker for tickets).
pub fn admins(conn: &mut DbConnection, limit: i64) -> QueryResult<Vec<(String, Option<String>)>> {
    people::table
        .filter(people::is_admin.eq(true))
        .filter(people::active.eq(true))
        .order(people::email.asc())
        .select((people::email, people::name))
        .limit(limit)
        .load(conn)
}

/// The names of the people at `emails` who are in the directory: (address, name).
/// A name another person in the directory also has comes with the address, "Dana
/// Okafor (dana.o@example.com)": a page never lets one person pass for another.
pub fn names_of(
    conn: &mut DbConnection,
    emails: &[String],
) -> QueryResult<Vec<(String, Option<String>)>> {
    let found: Vec<(String, Option<String>)> = people::table
        .filter(people::email.eq_any(emails))
        .select((people::email, people::name))
        .load(conn)?;
    // Compared without case or surrounding spaces: "dana okafor" passes for "Dana
    // Okafor" to a reader.
    let key = |name: &str| name.trim().to_lowercase();
    let names: Vec<String> = found
        .iter()
        .filter_map(|(_, n)| n.as_deref().map(key))
        .collect();
    let holders: Vec<String> = people::table
        .filter(crate::db::lower(people::name).eq_any(&names))
        .select(people::name.assume_not_null())
        .load(conn)?;
    // How many hold each name: counted once (a page may name thousands of people).
    let mut holding: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for name in &holders {
        *holding.entry(key(name)).or_default() += 1;
    }
    let shared = |name: &str| holding.get(&key(name)).is_some_and(|n| *n > 1);
    Ok(found
        .into_iter()
        .map(|(email, name)| {
            let name = name.map(|n| {
                if shared(&n) {
                    format!("{n} ({email})")
                } else {
                    n
                }
            });
            (email, name)
        })
        .collect())
}

/// The name of someone else in the directory that `name` would pass for on a page
/// (`domain::names::look_alike_key`: case, spaces and confusable letters aside). A
/// member choosing their own name is refused one; the directory's own namesakes (from
/// an admin, a CSV or the identity provider) are shown with their addresses instead.
pub(super) fn look_alike(
    conn: &mut DbConnection,
    email: &str,
    name: &str,
) -> QueryResult<Option<String>> {
    let key = crate::domain::names::look_alike_key(name);
    let others: Vec<String> = people::table
        .filter(people::email.ne(email))
        .filter(people::name.is_not_null())
        .select(people::name.assume_not_null())
        .load(conn)?;
    Ok(others
        .into_iter()
        .find(|other| crate::domain::names::look_alike_key(other) == key))
}
