//! Which team a COE belongs to, and who was in which team when (the coverage
//! audit's teams).

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::{people, service_owners, team_changes};
use crate::db::DbConnection;

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
