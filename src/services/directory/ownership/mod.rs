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

use crate::db::schema::{people, service_owners, team_owners};
use crate::db::{lower, DbConnection};
use crate::domain::EmailAddress;
use crate::services::Env;

mod map;
mod seen;
mod suggestions;
mod teams;

pub use map::{put_service, put_team_owner, ServiceInput, MAX_DEPENDENCIES};
pub use seen::{services_seen, SeenService};
pub use suggestions::{hand_over_suggestions, reviewer_suggestions, Suggestion};
pub use teams::{team_of_coe, TeamHistory, Teams};

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
    /// What customers call it, if admins named it so.
    pub customer_name: Option<String>,
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
    Option<String>,
);

impl From<ServiceOwnerRow> for ServiceOwner {
    fn from(row: ServiceOwnerRow) -> Self {
        let (service, owner, team, reviewer, updated_by, updated_at, depends_on, customer_name) =
            row;
        ServiceOwner {
            service,
            owner,
            team,
            reviewer,
            depends_on: serde_json::from_str(&depends_on).unwrap_or_default(),
            customer_name,
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
    service_owners::customer_name,
);

const SERVICE_OWNER_COLUMNS: ServiceOwnerColumns = (
    service_owners::service,
    service_owners::owner_email,
    service_owners::team,
    service_owners::reviewer_email,
    service_owners::updated_by,
    service_owners::updated_at,
    service_owners::depends_on,
    service_owners::customer_name,
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
    env: Env<'_>,
    labels: &[BTreeMap<String, String>],
    service: Option<&str>,
) -> QueryResult<Assigned> {
    let settings = env.settings;
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
    env: Env<'_>,
    service: Option<&str>,
) -> QueryResult<Assigned> {
    for_alerts(conn, env, &[], service)
}

fn service_row(conn: &mut DbConnection, service: &str) -> QueryResult<Option<ServiceOwner>> {
    service_owners::table
        .filter(lower(service_owners::service.nullable()).eq(service.to_lowercase()))
        .select(SERVICE_OWNER_COLUMNS)
        .first::<ServiceOwnerRow>(conn)
        .optional()
        .map(|row| row.map(ServiceOwner::from))
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
