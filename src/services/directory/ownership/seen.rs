//! The services the incidents name, so that an admin maps owners from a list, not
//! from memory (Admin → Ownership).

use chrono::NaiveDateTime;
use diesel::dsl::{count_star, max, sum};
use diesel::prelude::*;
use serde::Serialize;

use crate::db::schema::{incidents, service_owners};
use crate::db::{lower, DbConnection};
use crate::services::Env;

/// A service some incident named: how many incidents and alerts, when last, and
/// whether the service map has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeenService {
    pub service: String,
    pub incidents: i64,
    /// The failure events (alerts) its incidents gathered.
    pub alerts: i64,
    #[serde(serialize_with = "crate::json::utc")]
    pub last_started_at: NaiveDateTime,
    pub mapped: bool,
}

/// A service, its incidents, their events, and the last one's start, as counted.
type Counted = (Option<String>, i64, Option<i64>, Option<NaiveDateTime>);

/// The services incidents named, most incidents first, at most `limit`; mapped as
/// the ownership chain finds them (`for_service`): in the page's map or the settings
/// file's, whatever the case of their letters.
pub fn services_seen(
    conn: &mut DbConnection,
    env: Env<'_>,
    limit: i64,
) -> QueryResult<Vec<SeenService>> {
    let rows: Vec<Counted> = incidents::table
        .filter(incidents::service.is_not_null())
        .group_by(incidents::service)
        .select((
            incidents::service,
            count_star(),
            sum(incidents::event_count),
            max(incidents::started_at),
        ))
        .order((count_star().desc(), incidents::service.asc()))
        .limit(limit)
        .load(conn)?;
    let names: Vec<String> = rows
        .iter()
        .filter_map(|r| r.0.as_deref().map(str::to_lowercase))
        .collect();
    let mut mapped: Vec<String> = service_owners::table
        .filter(lower(service_owners::service.nullable()).eq_any(&names))
        .select(service_owners::service)
        .load(conn)?;
    mapped.extend(env.settings.ownership.services.keys().cloned());
    let mapped: Vec<String> = mapped.iter().map(|s| s.to_lowercase()).collect();
    Ok(rows
        .into_iter()
        .filter_map(|(service, incidents, alerts, last)| {
            let service = service?;
            Some(SeenService {
                mapped: mapped.contains(&service.to_lowercase()),
                service,
                incidents,
                alerts: alerts.unwrap_or(0),
                last_started_at: last?,
            })
        })
        .collect())
}
