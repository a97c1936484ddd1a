//! Who owns a COE from the first minute, and who reviews it by default. The chain,
//! first answer wins:
//!
//! 1. the alert's `owner` label, when it names a person in the directory;
//! 2. the alert's `team` label, when an admin set that team's default owner;
//! 3. the service map: the service's owner, else its team's default owner (the map
//!    admins keep on the admin page, then the settings file's `[ownership.services]`);
//! 4. `ownership.default_owner`.
//!
//! A COE no rule gives an owner to opens unowned, and the admins are told.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use serde_json::json;

use crate::config::Settings;
use crate::db::schema::{people, service_owners, team_changes, team_owners};
use crate::db::{lower, DbConnection};
use crate::domain::EmailAddress;
use crate::services::directory::people::PeopleError;

/// Who a new COE goes to, and which rule said so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assigned {
    pub owner: Option<String>,
    /// The service map's default reviewer (never the owner).
    pub reviewer: Option<String>,
    /// The rule that named the owner, in words (for the COE's history and the log).
    pub by: Option<String>,
}

/// One service of the map as admins keep it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ServiceOwner {
    pub service: String,
    pub owner: Option<String>,
    pub team: Option<String>,
    pub reviewer: Option<String>,
    /// The services it depends on: incidents of the two close in time are probably
    /// one outage (`coes::same_outage`).
    pub depends_on: Vec<String>,
    pub updated_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
}

/// A row of `service_owners` as stored (`depends_on` a JSON list).
type ServiceOwnerRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    NaiveDateTime,
    String,
);

impl From<ServiceOwnerRow> for ServiceOwner {
    fn from(row: ServiceOwnerRow) -> Self {
        let (service, owner, team, reviewer, updated_by, updated_at, depends_on) = row;
        ServiceOwner {
            service,
            owner,
            team,
            reviewer,
            depends_on: serde_json::from_str(&depends_on).unwrap_or_default(),
            updated_by,
            updated_at,
        }
    }
}

/// The columns of a `ServiceOwnerRow`.
type ServiceOwnerColumns = (
    service_owners::service,
    service_owners::owner_email,
    service_owners::team,
    service_owners::reviewer_email,
    service_owners::updated_by,
    service_owners::updated_at,
    service_owners::depends_on,
);

const SERVICE_OWNER_COLUMNS: ServiceOwnerColumns = (
    service_owners::service,
    service_owners::owner_email,
    service_owners::team,
    service_owners::reviewer_email,
    service_owners::updated_by,
    service_owners::updated_at,
    service_owners::depends_on,
);

/// One team's default COE owner.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Queryable)]
pub struct TeamOwner {
    pub team: String,
    pub owner: String,
    pub updated_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
}

/// The owner (and default reviewer) of a COE about alerts with `labels` (the first
/// alert's first) on `service`, by the chain above.
pub fn for_alerts(
    conn: &mut DbConnection,
    settings: &Settings,
    labels: &[BTreeMap<String, String>],
    service: Option<&str>,
) -> QueryResult<Assigned> {
    let mapped = service.map(|s| service_row(conn, s)).transpose()?.flatten();
    let reviewer = mapped.as_ref().and_then(|m| m.reviewer.clone());
    let with = |owner: String, by: String| Assigned {
        reviewer: reviewer.clone().filter(|r| {
            !crate::domain::email::same_person(r, &owner, &settings.auth.dotless_domains)
        }),
        owner: Some(owner),
        by: Some(by),
    };
    for label in labels.iter().filter_map(|l| l.get("owner")) {
        let Ok(address) = EmailAddress::parse(label) else {
            continue;
        };
        let known: i64 = people::table
            .filter(people::email.eq(address.as_str()))
            .filter(people::active.eq(true))
            .count()
            .get_result(conn)?;
        if known > 0 {
            return Ok(with(address.into(), "the alert's owner label".into()));
        }
    }
    // Someone who left owns nothing new: the chain goes on past them.
    for team in labels.iter().filter_map(|l| l.get("team")) {
        if let Some(owner) = team_owner(conn, team)? {
            if crate::services::directory::people::works_here(conn, &owner)? {
                return Ok(with(owner, format!("team {team}'s default owner")));
            }
        }
    }
    if let Some(mapped) = &mapped {
        if let Some(owner) = &mapped.owner {
            if crate::services::directory::people::works_here(conn, owner)? {
                return Ok(with(owner.clone(), "the service map".into()));
            }
        }
        if let Some(team) = &mapped.team {
            if let Some(owner) = team_owner(conn, team)? {
                if crate::services::directory::people::works_here(conn, &owner)? {
                    return Ok(with(owner, format!("team {team}'s default owner")));
                }
            }
        }
    }
    let configured = service.and_then(|s| settings.ownership.services.get(s));
    if let Some(owner) = configured.and_then(|e| EmailAddress::parse(e).ok()) {
        return Ok(with(owner.into(), "the settings' service map".into()));
    }
    let default = settings.ownership.default_owner.as_deref();
    if let Some(owner) = default.and_then(|e| EmailAddress::parse(e).ok()) {
        return Ok(with(
            owner.into(),
            "the organisation's default owner".into(),
        ));
    }
    Ok(Assigned {
        reviewer,
        ..Assigned::default()
    })
}

/// The owner (and default reviewer) of a COE opened by hand for `service`.
pub fn for_service(
    conn: &mut DbConnection,
    settings: &Settings,
    service: Option<&str>,
) -> QueryResult<Assigned> {
    for_alerts(conn, settings, &[], service)
}

fn service_row(conn: &mut DbConnection, service: &str) -> QueryResult<Option<ServiceOwner>> {
    service_owners::table
        .filter(lower(service_owners::service.nullable()).eq(service.to_lowercase()))
        .select(SERVICE_OWNER_COLUMNS)
        .first::<ServiceOwnerRow>(conn)
        .optional()
        .map(|row| row.map(ServiceOwner::from))
}

/// A person offered for a part of a COE, and why them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    pub email: String,
    /// Why them, in words ("the owner's manager").
    pub why: String,
}

/// Who could review a COE of `owner` on `service`, best first: the reviewer the
/// service map names, the owner's manager, the service team's default owner, the
/// owner's team's default owner. Never the owner; only people who work here.
pub fn reviewer_suggestions(
    conn: &mut DbConnection,
    settings: &Settings,
    owner: Option<&str>,
    service: Option<&str>,
) -> QueryResult<Vec<Suggestion>> {
    let mapped = service.map(|s| service_row(conn, s)).transpose()?.flatten();
    let mut offered: Vec<(Option<String>, String)> = Vec::new();
    if let Some(m) = &mapped {
        offered.push((
            m.reviewer.clone(),
            format!("the reviewer the service map names for {}", m.service),
        ));
    }
    let (owner_team, manager): (Option<String>, Option<String>) = match owner {
        Some(owner) => people::table
            .find(owner)
            .select((people::team, people::manager_email))
            .first(conn)
            .optional()?
            .unwrap_or_default(),
        None => (None, None),
    };
    offered.push((manager, "the owner's manager".to_owned()));
    for team in [mapped.and_then(|m| m.team), owner_team]
        .into_iter()
        .flatten()
    {
        offered.push((
            team_owner(conn, &team)?,
            format!("team {team}'s default owner"),
        ));
    }
    let mut suggestions: Vec<Suggestion> = Vec::new();
    for (email, why) in offered {
        let Some(email) = email else { continue };
        let is_owner = owner.is_some_and(|o| {
            crate::domain::email::same_person(o, &email, &settings.auth.dotless_domains)
        });
        if is_owner || suggestions.iter().any(|s| s.email == email) {
            continue;
        }
        if crate::services::directory::people::works_here(conn, &email)? {
            suggestions.push(Suggestion { email, why });
        }
    }
    Ok(suggestions)
}

/// Who a COE on `service` that no rule gave an owner to could be handed to: the
/// service's team (from the service map) and the people who lead it (someone of the
/// team whom others of the team report to). None when the map says nothing of it.
pub fn hand_over_suggestions(
    conn: &mut DbConnection,
    service: Option<&str>,
    me: &str,
) -> QueryResult<Vec<Suggestion>> {
    let Some(team) = service
        .map(|s| service_row(conn, s))
        .transpose()?
        .flatten()
        .and_then(|m| m.team)
    else {
        return Ok(Vec::new());
    };
    let members: Vec<(String, Option<String>)> = people::table
        .filter(lower(people::team).eq(team.to_lowercase()))
        .filter(people::active.eq(true))
        .select((people::email, people::manager_email))
        .load(conn)?;
    let mut leads: Vec<Suggestion> = Vec::new();
    for (_, manager) in &members {
        let Some(manager) = manager else { continue };
        let in_team = members.iter().any(|(e, _)| e == manager);
        if in_team && manager != me && !leads.iter().any(|s| s.email == *manager) {
            leads.push(Suggestion {
                email: manager.clone(),
                why: format!("who leads team {team}"),
            });
        }
    }
    Ok(leads)
}

pub fn team_owner(conn: &mut DbConnection, team: &str) -> QueryResult<Option<String>> {
    team_owners::table
        .filter(lower(team_owners::team.nullable()).eq(team.to_lowercase()))
        .select(team_owners::owner_email)
        .first(conn)
        .optional()
}

/// The service map as admins keep it, by service.
pub fn service_map(conn: &mut DbConnection) -> QueryResult<Vec<ServiceOwner>> {
    service_owners::table
        .order(service_owners::service.asc())
        .select(SERVICE_OWNER_COLUMNS)
        .load::<ServiceOwnerRow>(conn)
        .map(|rows| rows.into_iter().map(ServiceOwner::from).collect())
}

/// Every team's default owner, by team.
pub fn team_owners(conn: &mut DbConnection) -> QueryResult<Vec<TeamOwner>> {
    team_owners::table
        .order(team_owners::team.asc())
        .select((
            team_owners::team,
            team_owners::owner_email,
            team_owners::updated_by,
            team_owners::updated_at,
        ))
        .load(conn)
}

/// A service's entry of the map as an admin typed it.
#[derive(Debug, Clone, Default)]
pub struct ServiceInput {
    pub service: String,
    pub owner: Option<String>,
    pub team: Option<String>,
    pub reviewer: Option<String>,
    /// The services it depends on, as typed: names separated by commas.
    pub depends_on: Option<String>,
}

/// Most services one service of the map names as its dependencies.
pub const MAX_DEPENDENCIES: usize = 50;

/// Why an entry of the map was refused: (field, problem) pairs.
type Problems = Vec<(String, String)>;

/// An address an admin typed for the map: a valid one the directory rule takes
/// (`people::check_assignable`).
fn checked_address(
    conn: &mut DbConnection,
    settings: &Settings,
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
    if let Some(problem) = super::people::check_assignable(conn, settings, address.as_str())? {
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
    settings: &Settings,
    input: &ServiceInput,
    actor: &str,
) -> Result<(), PeopleError> {
    let mut problems = Problems::new();
    let service = checked_name("service", &input.service, &mut problems);
    let owner = checked_address(
        conn,
        settings,
        "owner",
        input.owner.as_deref(),
        &mut problems,
    )?;
    let reviewer = checked_address(
        conn,
        settings,
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
        if owner.is_some() || team.is_some() || reviewer.is_some() || !depends_on.is_empty() {
            diesel::insert_into(service_owners::table)
                .values((
                    service_owners::service.eq(&service),
                    service_owners::owner_email.eq(&owner),
                    service_owners::team.eq(&team),
                    service_owners::reviewer_email.eq(&reviewer),
                    service_owners::depends_on.eq(json!(depends_on).to_string()),
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
    settings: &Settings,
    team: &str,
    owner: Option<&str>,
    actor: &str,
) -> Result<(), PeopleError> {
    let mut problems = Problems::new();
    let team = checked_name("team", team, &mut problems);
    let owner = checked_address(conn, settings, "owner", owner, &mut problems)?;
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

/// The one rule for which team a COE (or its incident) belongs to: its owner's team
/// in the directory, else its service's in the service map.
fn first_team<'a>(owner_team: Option<&'a str>, service_team: Option<&'a str>) -> Option<&'a str> {
    owner_team.or(service_team)
}

/// The team of a COE with this owner and service (`first_team`), as the directory
/// or the service map spells it; none when neither has one.
pub fn team_of_coe(
    conn: &mut DbConnection,
    owner: Option<&str>,
    service: Option<&str>,
) -> QueryResult<Option<String>> {
    let owner_team: Option<String> = match owner {
        Some(owner) => people::table
            .find(owner)
            .select(people::team)
            .first::<Option<String>>(conn)
            .optional()?
            .flatten(),
        None => None,
    };
    let service_team: Option<String> = match (&owner_team, service) {
        (None, Some(service)) => service_owners::table
            .find(service)
            .select(service_owners::team)
            .first::<Option<String>>(conn)
            .optional()?
            .flatten(),
        _ => None,
    };
    Ok(first_team(owner_team.as_deref(), service_team.as_deref()).map(str::to_owned))
}

/// Who is in which team: people by the directory, services by their owners (the
/// coverage audit's teams).
pub struct Teams {
    people: BTreeMap<String, String>,
    history: TeamHistory,
    services: BTreeMap<String, String>,
    /// Each team, lower-cased, as it is named: the first of its spellings.
    names: BTreeMap<String, String>,
}

impl Teams {
    pub fn load(conn: &mut DbConnection) -> QueryResult<Teams> {
        let mut teams = Teams {
            history: TeamHistory::load(conn)?,
            names: BTreeMap::new(),
            people: people::table
                .filter(people::team.is_not_null())
                .select((people::email, people::team.assume_not_null()))
                .load::<(String, String)>(conn)?
                .into_iter()
                .collect(),
            services: service_owners::table
                .filter(service_owners::team.is_not_null())
                .select((
                    service_owners::service,
                    service_owners::team.assume_not_null(),
                ))
                .load::<(String, String)>(conn)?
                .into_iter()
                .collect(),
        };
        for team in teams.people.values().chain(teams.services.values()) {
            let name = teams
                .names
                .entry(team.to_lowercase())
                .or_insert_with(|| team.clone());
            if team < name {
                name.clone_from(team);
            }
        }
        Ok(teams)
    }

    /// The team of a COE (or incident) with this owner and service (`team_of_coe`'s
    /// rule), named as the directory first wrote it, whatever the case.
    pub fn of(&self, owner: Option<&str>, service: Option<&str>) -> Option<String> {
        first_team(
            owner.and_then(|o| self.people.get(o)).map(String::as_str),
            service
                .and_then(|s| self.services.get(s))
                .map(String::as_str),
        )
        .map(|t| self.canonical(t))
    }

    /// `of`, with the owner's team as it was at `at` (a team change moves nothing
    /// done before it: `TeamHistory`).
    pub fn of_at(
        &self,
        owner: Option<&str>,
        service: Option<&str>,
        at: NaiveDateTime,
    ) -> Option<String> {
        let owner_team = owner.and_then(|o| {
            self.history
                .at(o, at, self.people.get(o).map(String::as_str))
        });
        first_team(
            owner_team.as_deref(),
            service
                .and_then(|s| self.services.get(s))
                .map(String::as_str),
        )
        .map(|t| self.canonical(t))
    }

    /// `team` as the directory first wrote it, whatever the case.
    pub fn canonical(&self, team: &str) -> String {
        self.names
            .get(&team.to_lowercase())
            .cloned()
            .unwrap_or_else(|| team.to_owned())
    }
}

/// Every team change (`people::team_changed`), by person and in order: a person's team
/// at a moment is the team they left at the first change after it, else their team
/// now. A first team (from none) is not a change, so it counts from the start.
#[derive(Debug, Default)]
pub struct TeamHistory {
    changes: BTreeMap<String, Vec<(NaiveDateTime, String)>>,
}

impl TeamHistory {
    pub fn load(conn: &mut DbConnection) -> QueryResult<TeamHistory> {
        let mut history = TeamHistory::default();
        let rows: Vec<(String, NaiveDateTime, String)> = team_changes::table
            .order((team_changes::person_email, team_changes::changed_at))
            .select((
                team_changes::person_email,
                team_changes::changed_at,
                team_changes::old_team,
            ))
            .load(conn)?;
        for (email, at, old) in rows {
            history.changes.entry(email).or_default().push((at, old));
        }
        Ok(history)
    }

    /// The team `email` was in at `at`, given their team `now`.
    pub fn at(&self, email: &str, at: NaiveDateTime, now: Option<&str>) -> Option<String> {
        match self
            .changes
            .get(email)
            .and_then(|changes| changes.iter().find(|(changed, _)| *changed > at))
        {
            Some((_, before)) => Some(before.clone()),
            None => now.map(str::to_owned),
        }
    }
}
