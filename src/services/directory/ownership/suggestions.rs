//! Whom to offer for a part of a COE: its reviewer, or whoever takes a leaver's work.

use diesel::prelude::*;
use serde::Serialize;

use super::{service_row, team_owner};
use crate::db::schema::people;
use crate::db::{lower, DbConnection};
use crate::services::Env;

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
    env: Env<'_>,
    owner: Option<&str>,
    service: Option<&str>,
) -> QueryResult<Vec<Suggestion>> {
    let settings = env.settings;
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
