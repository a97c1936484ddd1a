//! The people directory: who owns actions, their team, their manager, their time zone.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::models::PersonRow;
use crate::db::schema::people;
use crate::db::{self, DbConnection};
use crate::domain::{EmailAddress, TokenSecret};

mod find;
mod import;
mod names;
mod provider;
mod rename;
pub use find::{find, find_teams, FindError, FindRefusal, Found, MAX_FIND_CHARS, MAX_FOUND};
pub use import::{import_csv, ImportReport, RejectedLine};
pub use names::{names, names_of};
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

/// Body of `PUT /api/v1/people/{email}`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonInput {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub team: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub manager_email: Option<EmailAddress>,
    /// An IANA time zone name, e.g. Europe/Berlin.
    #[serde(default)]
    pub timezone: Option<String>,
    /// Makes them a bar raiser, or not (an admin's to set); absent leaves it as it is.
    #[serde(default)]
    pub bar_raiser: Option<bool>,
}

/// Checks a person's fields; returns the problems by field.
pub fn check(email: &EmailAddress, input: &PersonInput) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    if let Some(tz) = input.timezone.as_deref().filter(|t| !t.trim().is_empty()) {
        if tz.trim().parse::<chrono_tz::Tz>().is_err() {
            problems.push((
                "timezone".to_owned(),
                format!("must be an IANA time zone name such as Europe/Berlin (got {tz:?})"),
            ));
        }
    }
    if input.manager_email.as_ref() == Some(email) {
        problems.push((
            "manager_email".to_owned(),
            "must not be the person themselves".to_owned(),
        ));
    }
    for (field, value) in [("name", &input.name), ("team", &input.team)] {
        if value.as_deref().is_some_and(|v| v.len() > 200) {
            problems.push((field.to_owned(), "must be at most 200 bytes".to_owned()));
        } else if value
            .as_deref()
            .is_some_and(|v| v.chars().any(char::is_control))
        {
            problems.push((
                field.to_owned(),
                "must not hold control characters".to_owned(),
            ));
        }
    }
    problems
}

fn clean(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Records that `email`'s team went from `before` to `after` at `at` (nothing for a
/// first team, or none changed): the coverage audit reads it
/// (`ownership::TeamHistory`).
pub fn team_changed(
    conn: &mut DbConnection,
    email: &str,
    before: Option<String>,
    after: Option<String>,
    at: NaiveDateTime,
) -> QueryResult<()> {
    use crate::db::schema::team_changes;
    let Some(old) = before.filter(|b| Some(b) != after.as_ref()) else {
        return Ok(());
    };
    diesel::insert_into(team_changes::table)
        .values((
            team_changes::id.eq(db::new_id()),
            team_changes::person_email.eq(email),
            team_changes::old_team.eq(old),
            team_changes::new_team.eq(after),
            team_changes::changed_at.eq(at),
        ))
        .execute(conn)?;
    Ok(())
}

/// Creates or replaces a person; returns true when they were new. The caller checked the input.
pub(super) fn upsert_checked(
    conn: &mut DbConnection,
    email: &EmailAddress,
    input: &PersonInput,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let fields = (
        people::name.eq(clean(&input.name)),
        people::team.eq(clean(&input.team)),
        people::manager_email.eq(input.manager_email.as_ref().map(|m| m.as_str().to_owned())),
        people::timezone.eq(clean(&input.timezone)),
        people::updated_at.eq(now),
    );
    let team_before: Option<Option<String>> = people::table
        .find(email.as_str())
        .select(people::team)
        .first(conn)
        .optional()?;
    let updated = diesel::update(people::table.find(email.as_str()))
        .set(fields.clone())
        .execute(conn)?;
    if let Some(before) = team_before {
        team_changed(conn, email.as_str(), before, clean(&input.team), now)?;
    }
    if let (true, Some(flag)) = (updated > 0, input.bar_raiser) {
        diesel::update(people::table.find(email.as_str()))
            .set(people::bar_raiser.eq(flag))
            .execute(conn)?;
    }
    if updated > 0 {
        return Ok(false);
    }
    let inserted = insert_if_missing(
        conn,
        &PersonRow {
            email: email.as_str().to_owned(),
            name: clean(&input.name),
            team: clean(&input.team),
            manager_email: input.manager_email.as_ref().map(|m| m.as_str().to_owned()),
            timezone: clean(&input.timezone),
            created_at: now,
            updated_at: now,
            feed_token_hash: None,
            is_admin: false,
            bar_raiser: input.bar_raiser.unwrap_or(false),
            scim_id: None,
            active: true,
            left_at: None,
            scim_manager_ref: None,
        },
    )?;
    if !inserted {
        // Someone added them between our update and our insert (PostgreSQL): update.
        diesel::update(people::table.find(email.as_str()))
            .set(fields)
            .execute(conn)?;
        if let Some(flag) = input.bar_raiser {
            diesel::update(people::table.find(email.as_str()))
                .set(people::bar_raiser.eq(flag))
                .execute(conn)?;
        }
    }
    Ok(inserted)
}

/// Adds `row` unless the person exists (also when a concurrent transaction adds them
/// first: no unique violation). Returns whether it was added.
pub fn insert_if_missing(conn: &mut DbConnection, row: &PersonRow) -> QueryResult<bool> {
    let n = crate::insert_or_ignore!(
        conn,
        diesel::insert_into(people::table).values(row),
        people::email
    )?;
    Ok(n == 1)
}

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
    settings: &crate::config::Settings,
    email: &str,
) -> QueryResult<Option<String>> {
    if let Some(problem) = check_assignable(conn, settings, email)? {
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
    settings: &crate::config::Settings,
    email: &str,
) -> QueryResult<Option<String>> {
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

/// Puts a person referenced by address (an action's owner, a feed's holder) into the
/// directory with just the address, unless they are there already.
pub fn ensure(conn: &mut DbConnection, email: &str, now: NaiveDateTime) -> QueryResult<()> {
    insert_if_missing(
        conn,
        &PersonRow {
            email: email.to_owned(),
            name: None,
            team: None,
            manager_email: None,
            timezone: None,
            created_at: now,
            updated_at: now,
            feed_token_hash: None,
            is_admin: false,
            bar_raiser: false,
            scim_id: None,
            active: true,
            left_at: None,
            scim_manager_ref: None,
        },
    )
    .map(|_| ())
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

#[derive(Debug, thiserror::Error)]
pub enum PeopleError {
    #[error("invalid input")]
    Invalid(Vec<(String, String)>),
    /// The caller may not make this change (the text says why).
    #[error("{0}")]
    Forbidden(String),
    /// The identity provider manages this field of this person (SCIM): the field, and
    /// where to change it.
    #[error("{1}")]
    Provisioned(String, String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// Creates or replaces one person. `teams_from_groups`: the identity provider's
/// groups set provisioned people's teams (`scim.team_groups`).
pub fn put(
    conn: &mut DbConnection,
    email: &EmailAddress,
    input: &PersonInput,
    teams_from_groups: bool,
) -> Result<Person, PeopleError> {
    let problems = check(email, input);
    if !problems.is_empty() {
        return Err(PeopleError::Invalid(problems));
    }
    db::write_transaction(conn, |conn| {
        if let Some((field, problem)) =
            set_by_provider(conn, email.as_str(), input, teams_from_groups)?
        {
            return Err(PeopleError::Provisioned(field, problem));
        }
        upsert_checked(conn, email, input, db::now())?;
        Ok(people::table
            .find(email.as_str())
            .select(PersonRow::as_select())
            .first(conn)?
            .into())
    })
}

/// A member's own entry: their name and time zone. Their team and manager (where
/// escalations go) stay an admin's to set: a member who names another team or manager
/// is refused, naming the field.
pub fn put_own(
    conn: &mut DbConnection,
    email: &EmailAddress,
    input: &PersonInput,
) -> Result<Person, PeopleError> {
    let problems = check(email, input);
    if !problems.is_empty() {
        return Err(PeopleError::Invalid(problems));
    }
    db::write_transaction(conn, |conn| {
        let current: Option<PersonRow> = people::table
            .find(email.as_str())
            .select(PersonRow::as_select())
            .first(conn)
            .optional()?;
        // Joining the directory, teams, managers and bar raisers are an admin's.
        let (asked_team, new_manager) = (
            clean(&input.team),
            input.manager_email.as_ref().map(|m| m.as_str().to_owned()),
        );
        crate::services::access::own_entry_change(
            email.as_str(),
            current
                .as_ref()
                .map(|c| crate::services::access::AdminFields {
                    team: c.team.as_deref(),
                    manager_email: c.manager_email.as_deref(),
                    bar_raiser: Some(c.bar_raiser),
                }),
            crate::services::access::AdminFields {
                team: asked_team.as_deref(),
                manager_email: new_manager.as_deref(),
                bar_raiser: input.bar_raiser,
            },
        )
        .map_err(|refused| PeopleError::Forbidden(refused.to_string()))?;
        // (Refused above when there is none.)
        let Some(current) = current else {
            return Err(PeopleError::Forbidden(format!(
                "{} is not in the directory",
                email.as_str()
            )));
        };
        let (team, manager) = (current.team.clone(), current.manager_email.clone());
        let own = PersonInput {
            bar_raiser: None,
            name: input.name.clone(),
            timezone: input.timezone.clone(),
            team,
            manager_email: match manager {
                Some(m) => Some(EmailAddress::parse(&m).map_err(|p| {
                    PeopleError::Invalid(vec![("manager_email".into(), p.to_string())])
                })?),
                None => None,
            },
        };
        if let Some((field, problem)) = set_by_provider(conn, email.as_str(), &own, false)? {
            return Err(PeopleError::Provisioned(field, problem));
        }
        if let Some(name) = clean(&own.name).filter(|n| current.name.as_ref() != Some(n)) {
            if let Some(taken) = names::look_alike(conn, email.as_str(), &name)? {
                return Err(PeopleError::Invalid(vec![(
                    "name".into(),
                    format!(
                        "{taken:?} is another person's name in the directory, and {name:?} would \
                         pass for it on a page: add what tells you apart (a family name, an initial)"
                    ),
                )]));
            }
        }
        upsert_checked(conn, email, &own, db::now())?;
        Ok(people::table
            .find(email.as_str())
            .select(PersonRow::as_select())
            .first(conn)?
            .into())
    })
}

/// Makes a person an admin of the web pages, or not (adding them to the directory
/// when they are not in it).
pub fn set_admin(
    conn: &mut DbConnection,
    email: &EmailAddress,
    is_admin: bool,
) -> QueryResult<Person> {
    set_flag(conn, email, people::is_admin, is_admin)
}

/// Makes a person a bar raiser, or not (adding them to the directory when they are
/// not in it).
pub fn set_bar_raiser(
    conn: &mut DbConnection,
    email: &EmailAddress,
    bar_raiser: bool,
) -> QueryResult<Person> {
    set_flag(conn, email, people::bar_raiser, bar_raiser)
}

/// Sets one of a person's yes/no columns, adding them to the directory first.
fn set_flag<C>(
    conn: &mut DbConnection,
    email: &EmailAddress,
    column: C,
    value: bool,
) -> QueryResult<Person>
where
    C: diesel::Column<Table = people::table, SqlType = diesel::sql_types::Bool>
        + diesel::ExpressionMethods
        + Copy,
{
    db::write_transaction(conn, |conn| {
        let now = db::now();
        ensure(conn, email.as_str(), now)?;
        diesel::update(people::table.find(email.as_str()))
            .set((column.eq(value), people::updated_at.eq(now)))
            .execute(conn)?;
        Ok(people::table
            .find(email.as_str())
            .select(PersonRow::as_select())
            .first(conn)?
            .into())
    })
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
