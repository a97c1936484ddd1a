//! The people directory: who owns actions, their team, their manager, their time zone.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::models::PersonRow;
use crate::db::schema::people;
use crate::db::{self, DbConnection};
use crate::domain::{EmailAddress, TokenSecret};

mod assignable;
mod entries;
mod find;
mod import;
mod names;
mod provider;
mod rename;

pub use assignable::{
    bar_raiser_count, check_action_owner, check_assignable, check_reviewer, has_left, works_here,
};
pub use entries::{
    check, ensure, insert_if_missing, put, put_own, set_admin, set_bar_raiser, team_changed,
    PeopleError, PersonInput,
};
use entries::{clean, upsert_checked};
pub use find::{find, find_teams, FindError, FindRefusal, Found, MAX_FIND_CHARS, MAX_FOUND};
pub use import::{import_csv, ImportReport, RejectedLine};
pub use names::{admins, names, names_of};
use provider::set_by_provider;
pub use rename::rename;

/// A person as the API shows them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Person {
    pub email: String,
    pub name: Option<String>,
    pub team: Option<String>,
    pub manager_email: Option<String>,
    pub timezone: Option<String>,
    /// May change anything on the web pages, and sees the admin pages. Set with
    /// `PUT /api/v1/people/{email}/admin` (admin tokens only).
    pub is_admin: bool,
    /// Reviews the worst outages' COEs from outside their owner's team, beside the
    /// reviewer (`coe.bar_raiser_from`).
    pub bar_raiser: bool,
    /// The identity provider manages them (SCIM): their name, team, manager and time
    /// zone are changed there, not here.
    pub provisioned: bool,
    /// The manager the identity provider names when it is nobody in the directory (an
    /// id, externalId or address coe does not know): escalations and a leaver's work
    /// then go up the chain as if none were named.
    pub unknown_manager: Option<String>,
    /// Still works here; false once the identity provider (or an admin) says they left.
    pub active: bool,
    /// When they left.
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>)]
    pub left_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
}

impl From<PersonRow> for Person {
    fn from(r: PersonRow) -> Self {
        let unknown_manager = r.scim_manager_ref.filter(|_| r.manager_email.is_none());
        Person {
            email: r.email,
            name: r.name,
            team: r.team,
            manager_email: r.manager_email,
            timezone: r.timezone,
            is_admin: r.is_admin,
            bar_raiser: r.bar_raiser,
            provisioned: r.scim_id.is_some(),
            unknown_manager,
            active: r.active,
            left_at: r.left_at,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Makes a new secret for a person's calendar feed (the person is added to the
/// directory if needed); the old one stops working. Returns the secret, shown once.
pub fn new_feed_token(conn: &mut DbConnection, email: &EmailAddress) -> QueryResult<TokenSecret> {
    db::write_transaction(conn, |conn| {
        let now = db::now();
        ensure(conn, email.as_str(), now)?;
        let secret = TokenSecret::generate();
        diesel::update(people::table.find(email.as_str()))
            .set((
                people::feed_token_hash.eq(secret.hash()),
                people::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(secret)
    })
}

/// Whether `secret` is the person's current feed secret.
pub fn feed_token_matches(
    conn: &mut DbConnection,
    email: &str,
    secret: &TokenSecret,
) -> QueryResult<bool> {
    let stored: Option<Option<String>> = people::table
        .find(email)
        .select(people::feed_token_hash)
        .first(conn)
        .optional()?;
    // Both sides are hashes of 256-bit secrets: comparing them leaks nothing usable.
    Ok(stored.flatten().is_some_and(|h| h == secret.hash()))
}

/// One person, if the directory has them, and whether they have a calendar feed.
pub fn get(conn: &mut DbConnection, email: &str) -> QueryResult<Option<(Person, bool)>> {
    let found: Option<(PersonRow, bool)> = people::table
        .find(email)
        .select((
            PersonRow::as_select(),
            people::feed_token_hash.is_not_null(),
        ))
        .first(conn)
        .optional()?;
    Ok(found.map(|(row, has_feed)| (row.into(), has_feed)))
}

/// Everyone, by email; or one team.
pub fn list(conn: &mut DbConnection, team: Option<&str>) -> QueryResult<Vec<Person>> {
    let mut query = people::table.into_boxed();
    if let Some(team) = team {
        query = query.filter(people::team.eq(team.to_owned()));
    }
    Ok(query
        .order(people::email.asc())
        .select(PersonRow::as_select())
        .load(conn)?
        .into_iter()
        .map(Person::from)
        .collect())
}

/// The directory's people as the pages offer them in owner and reviewer fields:
/// The time zone `email` lives in, from the directory; `fallback` (the
/// organisation's) when the directory does not say or says something unknown.
pub fn time_zone(
    conn: &mut DbConnection,
    email: &str,
    fallback: chrono_tz::Tz,
) -> QueryResult<chrono_tz::Tz> {
    let zone: Option<Option<String>> = people::table
        .find(email)
        .select(people::timezone)
        .first(conn)
        .optional()?;
    Ok(zone
        .flatten()
        .and_then(|z| z.trim().parse().ok())
        .unwrap_or(fallback))
}

/// Whether anyone in the directory names `email` their manager (a leader, whose
/// home shows the organisation's figures).
pub fn manages_anyone(conn: &mut DbConnection, email: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        people::table.filter(people::manager_email.eq(email)),
    ))
    .get_result(conn)
}

/// The directory's teams, each once (as first written), by name.
/// The directory's team of `email`: none without one, or outside the directory.
pub fn team_of(conn: &mut DbConnection, email: &str) -> QueryResult<Option<String>> {
    Ok(people::table
        .find(email)
        .select(people::team)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten())
}

pub fn teams(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    let mut teams: Vec<String> = people::table
        .filter(people::team.is_not_null())
        .select(people::team.assume_not_null())
        .distinct()
        .load(conn)?;
    teams.sort_by_key(|t| t.to_lowercase());
    teams.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    Ok(teams)
}
