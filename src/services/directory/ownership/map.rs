//! The service map and the teams' default owners as admins write them: each entry
//! checked as the directory's rules check an assignment.

use diesel::prelude::*;
use serde_json::json;

use crate::db::schema::{service_owners, team_owners};
use crate::db::DbConnection;
use crate::domain::EmailAddress;
use crate::services::directory::people::PeopleError;
use crate::services::Env;

/// A service's entry of the map as an admin typed it.
#[derive(Debug, Clone, Default)]
pub struct ServiceInput {
    pub service: String,
    pub owner: Option<String>,
    pub team: Option<String>,
    pub reviewer: Option<String>,
    /// The services it depends on, as typed: names separated by commas.
    pub depends_on: Option<String>,
    /// What customers call it (on a published summary); unset, it is not named there.
    pub customer_name: Option<String>,
}

/// Most services one service of the map names as its dependencies.
pub const MAX_DEPENDENCIES: usize = 50;

/// Why an entry of the map was refused: (field, problem) pairs.
type Problems = Vec<(String, String)>;

/// An address an admin typed for the map: a valid one the directory rule takes
/// (`people::check_assignable`).
fn checked_address(
    conn: &mut DbConnection,
    env: Env<'_>,
    field: &str,
    value: Option<&str>,
    problems: &mut Problems,
) -> QueryResult<Option<String>> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let address = match EmailAddress::parse(value) {
        Ok(address) => address,
        Err(problem) => {
            problems.push((field.to_owned(), problem));
            return Ok(None);
        }
    };
    if let Some(problem) =
        crate::services::directory::people::check_assignable(conn, env, address.as_str())?
    {
        problems.push((field.to_owned(), problem));
        return Ok(None);
    }
    Ok(Some(address.into()))
}

/// A name of a service or a team: 1 to 200 characters, no control characters.
fn checked_name(field: &str, value: &str, problems: &mut Problems) -> String {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > 200 || value.chars().any(char::is_control) {
        problems.push((
            field.to_owned(),
            "must be 1 to 200 characters, without control characters".into(),
        ));
    }
    value.to_owned()
}

/// Sets a service's owner, team, default reviewer and dependencies (`actor`
/// recorded); an entry with none of them is removed. Every problem is named at once, nothing written.
pub fn put_service(
    conn: &mut DbConnection,
    env: Env<'_>,
    input: &ServiceInput,
    actor: &str,
) -> Result<(), PeopleError> {
    let mut problems = Problems::new();
    let service = checked_name("service", &input.service, &mut problems);
    let owner = checked_address(conn, env, "owner", input.owner.as_deref(), &mut problems)?;
    let reviewer = checked_address(
        conn,
        env,
        "reviewer",
        input.reviewer.as_deref(),
        &mut problems,
    )?;
    let team = input
        .team
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| checked_name("team", t, &mut problems));
    let mut depends_on: Vec<String> = Vec::new();
    for name in input
        .depends_on
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let name = checked_name("depends_on", name, &mut problems);
        if name.eq_ignore_ascii_case(&service) {
            problems.push((
                "depends_on".into(),
                "a service does not depend on itself".into(),
            ));
        } else if !depends_on.iter().any(|d| d.eq_ignore_ascii_case(&name)) {
            depends_on.push(name);
        }
    }
    let customer_name = input
        .customer_name
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| checked_name("customer_name", t, &mut problems));
    if let Some(name) = &customer_name {
        // Customers read it: checked as the text written for them is.
        let directory: Vec<(String, Option<String>)> = crate::db::schema::people::table
            .select((
                crate::db::schema::people::email,
                crate::db::schema::people::name,
            ))
            .load(conn)?;
        let patterns =
            crate::domain::customer_summary::internal_patterns(&env.settings.coe.internal_patterns);
        let found = crate::domain::customer_summary::check(name, &directory, &patterns);
        if let Some(refusal) = found.refusals.into_iter().next() {
            problems.push(("customer_name".into(), refusal));
        }
    }
    if depends_on.len() > MAX_DEPENDENCIES {
        problems.push((
            "depends_on".into(),
            format!("at most {MAX_DEPENDENCIES} services"),
        ));
    }
    if owner.is_some() && owner == reviewer {
        problems.push((
            "reviewer".into(),
            "the owner and the reviewer must be two people".into(),
        ));
    }
    if !problems.is_empty() {
        return Err(PeopleError::Invalid(problems));
    }
    crate::db::write_transaction(conn, |conn| {
        diesel::delete(service_owners::table.find(&service)).execute(conn)?;
        let anything = owner.is_some()
            || team.is_some()
            || reviewer.is_some()
            || customer_name.is_some()
            || !depends_on.is_empty();
        if anything {
            diesel::insert_into(service_owners::table)
                .values((
                    service_owners::service.eq(&service),
                    service_owners::owner_email.eq(&owner),
                    service_owners::team.eq(&team),
                    service_owners::reviewer_email.eq(&reviewer),
                    service_owners::depends_on.eq(json!(depends_on).to_string()),
                    service_owners::customer_name.eq(&customer_name),
                    service_owners::updated_by.eq(actor),
                    service_owners::updated_at.eq(crate::db::now()),
                ))
                .execute(conn)?;
        }
        Ok::<_, diesel::result::Error>(())
    })?;
    tracing::info!(%service, ?owner, ?team, ?reviewer, ?depends_on, %actor, "service map changed");
    Ok(())
}

/// Sets a team's default COE owner (`None` removes it).
pub fn put_team_owner(
    conn: &mut DbConnection,
    env: Env<'_>,
    team: &str,
    owner: Option<&str>,
    actor: &str,
) -> Result<(), PeopleError> {
    let mut problems = Problems::new();
    let team = checked_name("team", team, &mut problems);
    let owner = checked_address(conn, env, "owner", owner, &mut problems)?;
    if !problems.is_empty() {
        return Err(PeopleError::Invalid(problems));
    }
    crate::db::write_transaction(conn, |conn| {
        diesel::delete(team_owners::table.find(&team)).execute(conn)?;
        if let Some(owner) = &owner {
            diesel::insert_into(team_owners::table)
                .values((
                    team_owners::team.eq(&team),
                    team_owners::owner_email.eq(owner),
                    team_owners::updated_by.eq(actor),
                    team_owners::updated_at.eq(crate::db::now()),
                ))
                .execute(conn)?;
        }
        Ok::<_, diesel::result::Error>(())
    })?;
    tracing::info!(%team, ?owner, %actor, "team owner changed");
    Ok(())
}
