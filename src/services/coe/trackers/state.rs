//! Each tracker's health, as the admin page shows it: the last delivery out and in,
//! the last error, the statuses coe could not map, what waits; and the admin's check
//! of the connection.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use crate::config::TrackerSettings;
use crate::db::schema::{tickets, tracker_jobs, tracker_states};
use crate::db::DbConnection;
use crate::services::connections::Tried;
use crate::services::outbound::tickets::{FAILED, PENDING, SENDING};
use crate::services::Env;
use crate::trackers::{Client, Failure};

fn ensure(conn: &mut DbConnection, name: &str) -> QueryResult<()> {
    crate::insert_or_ignore!(
        conn,
        diesel::insert_into(tracker_states::table).values(tracker_states::name.eq(name)),
        tracker_states::name
    )?;
    Ok(())
}

/// The tracker took a request: its last error is over.
pub fn delivered_out(conn: &mut DbConnection, name: &str, now: NaiveDateTime) -> QueryResult<()> {
    ensure(conn, name)?;
    diesel::update(tracker_states::table.find(name))
        .set((
            tracker_states::last_out_at.eq(now),
            tracker_states::last_error.eq(None::<String>),
        ))
        .execute(conn)?;
    Ok(())
}

/// A webhook delivery came in.
pub fn delivered_in(conn: &mut DbConnection, name: &str, now: NaiveDateTime) -> QueryResult<()> {
    ensure(conn, name)?;
    diesel::update(tracker_states::table.find(name))
        .set(tracker_states::last_in_at.eq(now))
        .execute(conn)?;
    Ok(())
}

pub fn failed(
    conn: &mut DbConnection,
    name: &str,
    error: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    ensure(conn, name)?;
    diesel::update(tracker_states::table.find(name))
        .set((
            tracker_states::last_error.eq(error),
            tracker_states::last_error_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// Notes a status coe could not map (once per name).
pub fn unmapped_seen(conn: &mut DbConnection, name: &str, status: &str) -> QueryResult<()> {
    ensure(conn, name)?;
    let seen: String = tracker_states::table
        .find(name)
        .select(tracker_states::unmapped)
        .first(conn)?;
    let mut list: Vec<String> = serde_json::from_str(&seen).unwrap_or_default();
    if list.iter().any(|s| s == status) || list.len() >= 50 {
        return Ok(());
    }
    list.push(status.to_owned());
    diesel::update(tracker_states::table.find(name))
        .set(tracker_states::unmapped.eq(serde_json::to_string(&list).unwrap_or_default()))
        .execute(conn)?;
    Ok(())
}

/// Takes the tracker's reconcile round when it is due (one replica does each).
pub fn take_round(
    conn: &mut DbConnection,
    name: &str,
    every_secs: u64,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    ensure(conn, name)?;
    let due_before = now - chrono::Duration::seconds(i64::try_from(every_secs).unwrap_or(900));
    let taken = diesel::update(
        tracker_states::table.find(name).filter(
            tracker_states::reconciled_at
                .is_null()
                .or(tracker_states::reconciled_at.le(due_before)),
        ),
    )
    .set(tracker_states::reconciled_at.eq(now))
    .execute(conn)?;
    Ok(taken == 1)
}

/// A tracker as the admin page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct TrackerStatus {
    pub name: String,
    pub kind: &'static str,
    pub base_url: String,
    /// Where actions go: the default place and the routes' places.
    pub places: Vec<String>,
    pub automatic: bool,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_out_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_in_at: Option<NaiveDateTime>,
    pub last_error: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_error_at: Option<NaiveDateTime>,
    pub unmapped: Vec<String>,
    /// Tickets waiting to be made.
    pub waiting_to_create: i64,
    /// Other changes waiting to be told.
    pub waiting: i64,
    /// Jobs the tracker refused for good.
    pub failed: i64,
    pub tickets: i64,
    /// Where the tracker is to send its webhooks.
    pub webhook_url: String,
    pub signed: bool,
    /// Who saved it last, when it is kept in coe (none: the settings file's).
    pub saved_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub saved_at: Option<NaiveDateTime>,
}

type StateRow = (
    String,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
    Option<String>,
    Option<NaiveDateTime>,
    String,
);

/// Every tracker in the settings with its health.
pub fn statuses(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<TrackerStatus>> {
    let settings = env.settings;
    let rows: Vec<StateRow> = tracker_states::table
        .select((
            tracker_states::name,
            tracker_states::last_out_at,
            tracker_states::last_in_at,
            tracker_states::last_error,
            tracker_states::last_error_at,
            tracker_states::unmapped,
        ))
        .load(conn)?;
    let mut out = Vec::new();
    for t in &env.connections.trackers {
        let row = rows.iter().find(|r| r.0 == t.name);
        let jobs = |conn: &mut DbConnection, states: &[&str], create: Option<bool>| {
            let mut q = tracker_jobs::table
                .filter(tracker_jobs::tracker.eq(&t.name))
                .filter(tracker_jobs::state.eq_any(states.to_vec()))
                .into_boxed();
            q = match create {
                Some(true) => q.filter(tracker_jobs::what.eq("create")),
                Some(false) => q.filter(tracker_jobs::what.ne("create")),
                None => q,
            };
            q.count().get_result::<i64>(conn)
        };
        let mut places: Vec<String> = t.place.iter().cloned().collect();
        places.extend(t.routes.iter().map(|r| r.place.clone()));
        places.dedup();
        let kept = env
            .connections
            .kept(crate::services::connections::Kind::Tracker, &t.name);
        out.push(TrackerStatus {
            saved_by: kept.map(|k| k.updated_by.clone()),
            saved_at: kept.map(|k| k.updated_at),
            name: t.name.clone(),
            kind: t.kind.label(),
            base_url: t.base_url().to_owned(),
            places,
            automatic: t.create == crate::config::CreateWhen::Automatic,
            last_out_at: row.and_then(|r| r.1),
            last_in_at: row.and_then(|r| r.2),
            last_error: row.and_then(|r| r.3.clone()),
            last_error_at: row.and_then(|r| r.4),
            unmapped: row
                .and_then(|r| serde_json::from_str(&r.5).ok())
                .unwrap_or_default(),
            waiting_to_create: jobs(conn, &[PENDING, SENDING], Some(true))?,
            waiting: jobs(conn, &[PENDING, SENDING], Some(false))?,
            failed: jobs(conn, &[FAILED], None)?,
            tickets: tickets::table
                .filter(tickets::tracker.eq(&t.name))
                .count()
                .get_result(conn)?,
            webhook_url: format!(
                "{}/api/v1/trackers/{}/webhook",
                settings.public_url.trim_end_matches('/'),
                t.name
            ),
            signed: t.webhook_secret.is_some(),
        });
    }
    Ok(out)
}

/// What the admin's check found: for each place, its statuses and what coe reads
/// them as, or the tracker's error.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub place: String,
    pub ok: bool,
    pub error: Option<String>,
    /// Each status: its name and what coe reads it as (`None`: unmapped).
    pub statuses: Vec<(String, Option<&'static str>)>,
}

/// What "Check the connection" found for a tracker not yet saved, each in a sentence:
/// each place read with what its statuses mean here, a status coe cannot read named
/// as something to fix. No database connection is held.
pub fn try_tracker(tracker: &TrackerSettings) -> Vec<Tried> {
    let mut tried = Vec::new();
    for place in check(tracker) {
        if !place.ok {
            tried.push(Tried::failed(format!(
                "coe cannot read {}: {}.",
                place.place,
                place.error.as_deref().unwrap_or("no reason given")
            )));
            continue;
        }
        let (read, unread): (Vec<_>, Vec<_>) =
            place.statuses.iter().partition(|(_, m)| m.is_some());
        let read: Vec<String> = read
            .iter()
            .map(|(name, meaning)| {
                let words = match meaning.unwrap_or_default() {
                    "in_progress" => "in progress",
                    "wont_do" => "will not be done",
                    "ignore" => "left alone",
                    other => other,
                };
                format!("{name} = {words}")
            })
            .collect();
        tried.push(Tried::worked(format!(
            "coe can read {} and its statuses: {}.",
            place.place,
            if read.is_empty() {
                "none yet".to_owned()
            } else {
                read.join(", ")
            }
        )));
        for (name, _) in unread {
            tried.push(Tried::failed(format!(
                "{}'s status {name} means nothing to coe yet: say what it means under \
                 Statuses (such as {name} = done, or {name} = ignore).",
                place.place
            )));
        }
    }
    if tried.is_empty() {
        tried.push(Tried::failed(
            "There is no place to read: give where actions go, or a route.".into(),
        ));
    }
    tried
}

/// Reads each place of `tracker` and its statuses now (not through the queue): call
/// it with no database connection held, then `record_check`.
pub fn check(tracker: &TrackerSettings) -> Vec<Checked> {
    let client = Client::new(tracker);
    let mut places: Vec<String> = tracker.place.iter().cloned().collect();
    places.extend(tracker.routes.iter().map(|r| r.place.clone()));
    places.dedup();
    let mut out = Vec::new();
    for place in places {
        match client.check(&place) {
            Ok(statuses) => {
                let statuses = statuses
                    .iter()
                    .map(|s| {
                        let shown = match &s.reason {
                            Some(r) => format!("{} ({r})", s.name),
                            None => s.name.clone(),
                        };
                        (
                            shown,
                            crate::trackers::meaning(tracker, s).map(|m| m.as_str()),
                        )
                    })
                    .collect();
                out.push(Checked {
                    place,
                    ok: true,
                    error: None,
                    statuses,
                });
            }
            Err(f) => {
                let error = match &f {
                    Failure::Broken(e) | Failure::Refused(e) | Failure::Retry { error: e, .. } => {
                        e.clone()
                    }
                };
                out.push(Checked {
                    place,
                    ok: false,
                    error: Some(error),
                    statuses: Vec::new(),
                });
            }
        }
    }
    out
}

/// Records what the admin's check found: a place that answers clears the tracker's
/// error; one that does not records it.
pub fn record_check(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    checked: &[Checked],
) -> QueryResult<()> {
    let now = crate::db::now();
    match checked.iter().find(|c| !c.ok) {
        Some(bad) => failed(
            conn,
            &tracker.name,
            &format!("{}: {}", bad.place, bad.error.as_deref().unwrap_or("")),
            now,
        ),
        None if !checked.is_empty() => delivered_out(conn, &tracker.name, now),
        None => Ok(()),
    }
}
