//! The figures about the past as the figures job counted them (`jobs::figures`): a
//! row of `figure_snapshots` per name, which the views read with the live counters
//! and date ("as of 14:05"). A view finds none of today, or none recent enough, and
//! counts the figures itself.

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{first_day, history, History, Scope, WEEKS};
use crate::db::schema::figure_snapshots;
use crate::db::DbConnection;
use crate::domain::Clock;
use crate::services::figures::coverage::{self, ClosedByTeam};

/// Figures and when the count that made them read the actions.
#[derive(Debug, Clone)]
pub struct Counted<T> {
    pub at: NaiveDateTime,
    pub figures: T,
}

/// Everyone's figures about the past over the default weeks.
const PAST: &str = "past";

/// The name of the actions closed from `from` to `to`, by team.
fn closed_name(from: NaiveDate, to: NaiveDate) -> String {
    format!("closed {from} {to}")
}

/// The period the coverage audit covers unless asked otherwise: the default weeks.
pub fn default_period(clock: Clock) -> (NaiveDate, NaiveDate) {
    (first_day(clock, WEEKS), clock.today())
}

/// Counts everyone's figures about the past and the default period's closings, and
/// keeps both (the figures job's work). A count older than one already kept (another
/// replica's, finished later) is not kept.
pub fn count(conn: &mut DbConnection, clock: Clock) -> QueryResult<()> {
    let at = clock.now.naive_utc();
    let (from, to) = default_period(clock);
    let ((past, closed), _) = crate::db::read_snapshot(conn, |conn| {
        let past = history(conn, clock, &Scope::default())?;
        let closed = coverage::closed_by_team(conn, clock, from, to)?;
        Ok::<_, diesel::result::Error>((past, closed))
    })?;
    keep(conn, PAST, at, &past)?;
    keep(conn, &closed_name(from, to), at, &by_team_rows(&closed))?;
    // The periods of earlier days are no longer read.
    diesel::delete(
        figure_snapshots::table
            .filter(figure_snapshots::name.like("closed %"))
            .filter(figure_snapshots::name.ne(closed_name(from, to))),
    )
    .execute(conn)?;
    Ok(())
}

/// Everyone's figures about the past over the default weeks, as counted today less
/// than `max_age` ago.
pub fn past(
    conn: &mut DbConnection,
    clock: Clock,
    max_age: Duration,
) -> QueryResult<Option<Counted<History>>> {
    read(conn, clock, PAST, max_age)
}

/// The actions closed in the default period by team, as counted today less than
/// `max_age` ago.
pub fn closed(
    conn: &mut DbConnection,
    clock: Clock,
    (from, to): (NaiveDate, NaiveDate),
    max_age: Duration,
) -> QueryResult<Option<Counted<ClosedByTeam>>> {
    let rows: Option<Counted<ByTeamRows>> = read(conn, clock, &closed_name(from, to), max_age)?;
    Ok(rows.map(|c| Counted {
        at: c.at,
        figures: c.figures.into_iter().collect(),
    }))
}

/// `ClosedByTeam` as JSON holds it (a map's keys are strings; a team may be none).
type ByTeamRows = Vec<(Option<String>, coverage::ClosedActions)>;

fn by_team_rows(closed: &ClosedByTeam) -> ByTeamRows {
    closed.iter().map(|(t, c)| (t.clone(), c.clone())).collect()
}

fn keep(
    conn: &mut DbConnection,
    name: &str,
    at: NaiveDateTime,
    figures: &impl Serialize,
) -> QueryResult<()> {
    let json = serde_json::to_string(figures)
        .map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))?;
    crate::db::snapshots::keep_if_newer(conn, name, at, &json)
}

fn read<T: DeserializeOwned>(
    conn: &mut DbConnection,
    clock: Clock,
    name: &str,
    max_age: Duration,
) -> QueryResult<Option<Counted<T>>> {
    let now = clock.now.naive_utc();
    let row: Option<(NaiveDateTime, String)> = figure_snapshots::table
        .find(name)
        .select((figure_snapshots::counted_at, figure_snapshots::figures))
        .first(conn)
        .optional()?;
    let Some((at, json)) = row else {
        return Ok(None);
    };
    // Of another day, from the future (a clock moved back), or too old: counted again.
    if clock.local_date(at) != clock.today() || at > now || now - at > max_age {
        return Ok(None);
    }
    match serde_json::from_str(&json) {
        Ok(figures) => Ok(Some(Counted { at, figures })),
        Err(error) => {
            // Written by another version: counted again, and kept right by the next job.
            tracing::warn!(%error, name, "kept figures cannot be read; counting them again");
            Ok(None)
        }
    }
}
