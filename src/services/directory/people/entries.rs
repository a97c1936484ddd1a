//! Writing the directory's entries: an admin's, a person's own, those made on first
//! sight of an address, and the admin and bar raiser flags; a team change is kept
//! in the team history.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use utoipa::ToSchema;

use super::names;
use super::provider::set_by_provider;
use super::Person;
use crate::db::models::PersonRow;
use crate::db::schema::people;
use crate::db::{self, DbConnection};
use crate::domain::EmailAddress;

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

pub(super) fn clean(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
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
