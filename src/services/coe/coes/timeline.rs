//! The timeline: entries from events and entries people write. Milestone entries
//! (started, detected, mitigated, resolved) also set the COE's own times.

use crate::services::Env;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::edit::{with_change, Recorded};
use super::{child_of_coe, CoeError};
use crate::chat::read::Said;
use crate::db::models::{IncidentRow, TimelineRow};
use crate::db::schema::{coe_incidents, coes, incidents, timeline_entries};
use crate::db::{self, types, DbConnection};
use crate::domain::coe::TimelineKind;
use crate::services::access::Editor;

/// A timeline entry as people write it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineInput {
    /// RFC 3339.
    pub at: String,
    /// started, detected, diagnosed, mitigated, resolved, fired, acknowledged, updated or note.
    pub kind: String,
    pub text: String,
}

fn check_timeline(input: &TimelineInput) -> Result<(NaiveDateTime, TimelineKind), CoeError> {
    let at = crate::domain::event::parse_time(&input.at)
        .map_err(|p| CoeError::invalid("at", p))?
        .ok_or_else(|| {
            CoeError::invalid("at", format!("must be a real time (got {:?})", input.at))
        })?;
    let kind = TimelineKind::from_input(&input.kind).map_err(|p| CoeError::invalid("kind", p))?;
    if input.text.trim().is_empty() {
        return Err(CoeError::invalid("text", "must not be empty"));
    }
    if input.text.len() > 10_000 {
        return Err(CoeError::invalid("text", "must be at most 10000 bytes"));
    }
    Ok((at, kind))
}

/// Milestone kinds also set the COE's own times (see `recompute_milestone`).
fn set_milestone(
    conn: &mut DbConnection,
    id: &str,
    kind: TimelineKind,
    at: Option<NaiveDateTime>,
) -> QueryResult<()> {
    let target = coes::table.find(id);
    match kind {
        TimelineKind::Started => diesel::update(target)
            .set(coes::started_at.eq(at))
            .execute(conn)?,
        TimelineKind::Detected => diesel::update(target)
            .set(coes::detected_at.eq(at))
            .execute(conn)?,
        TimelineKind::Mitigated => diesel::update(target)
            .set(coes::mitigated_at.eq(at))
            .execute(conn)?,
        TimelineKind::Resolved => diesel::update(target)
            .set(coes::resolved_at.eq(at))
            .execute(conn)?,
        _ => 0,
    };
    Ok(())
}

/// Sets the COE's time for milestone `kind`: from the timeline entries people wrote,
/// the earliest (started, detected, mitigated) or the latest (resolved); with none,
/// the incident's time (started, detected, resolved: its alerts decide it, all of
/// them together), else none. Called after every timeline change of that kind, and
/// by `follow_incident` when the incident's resolution changes.
pub(super) fn recompute_milestone(
    conn: &mut DbConnection,
    id: &str,
    kind: TimelineKind,
) -> QueryResult<()> {
    if !kind.is_milestone() {
        return Ok(());
    }
    let at = milestone_time(conn, id, kind, None)?;
    set_milestone(conn, id, kind, at)
}

/// An entry as it would be: `entry` (none: a new one) at `at` of `kind` (none: deleted).
#[derive(Debug, Clone, Copy)]
struct Supposed<'a> {
    entry: Option<&'a str>,
    at: NaiveDateTime,
    kind: Option<TimelineKind>,
}

/// The COE's time for milestone `kind` by the rule of `recompute_milestone`, with
/// `supposed` applied to the entries people wrote (none: as they are).
fn milestone_time(
    conn: &mut DbConnection,
    id: &str,
    kind: TimelineKind,
    supposed: Option<Supposed<'_>>,
) -> QueryResult<Option<NaiveDateTime>> {
    let mut written: Vec<(String, NaiveDateTime)> = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .filter(timeline_entries::kind.eq(kind.as_str()))
        .filter(timeline_entries::source.is_null())
        .select((timeline_entries::id, timeline_entries::at))
        .load(conn)?;
    if let Some(s) = supposed {
        if let Some(entry) = s.entry {
            written.retain(|(id, _)| id != entry);
        }
        if s.kind == Some(kind) {
            written.push((String::new(), s.at));
        }
    }
    let times = written.into_iter().map(|(_, at)| at);
    let mut at: Option<NaiveDateTime> = if kind == TimelineKind::Resolved {
        times.max()
    } else {
        times.min()
    };
    if at.is_none() {
        // Every incident the COE covers: the earliest start and detection; the latest
        // resolution, once all of them resolved.
        let covered: Vec<IncidentRow> = coe_incidents::table
            .inner_join(incidents::table)
            .filter(coe_incidents::coe_id.eq(id))
            .select(IncidentRow::as_select())
            .load(conn)?;
        at = match kind {
            TimelineKind::Started => covered.iter().map(|i| i.started_at).min(),
            TimelineKind::Detected => covered.iter().map(|i| i.detected_at).min(),
            TimelineKind::Resolved => covered
                .iter()
                .map(|i| i.resolved_at)
                .collect::<Option<Vec<_>>>()
                .and_then(|all| all.into_iter().max()),
            _ => None,
        };
    }
    Ok(at)
}

/// A milestone time of the COE an entry would change: what it is and what it would be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MilestoneMove {
    pub kind: TimelineKind,
    pub from: NaiveDateTime,
    pub to: Option<NaiveDateTime>,
}

impl MilestoneMove {
    /// In words, for the person about to make the change, in their time zone `zone`.
    pub fn sentence(&self, zone: chrono_tz::Tz) -> String {
        let what = match self.kind {
            TimelineKind::Started => "when the outage started",
            TimelineKind::Detected => "when it was noticed",
            TimelineKind::Mitigated => "when its impact was mitigated",
            _ => "when it was resolved",
        };
        let time = |t: NaiveDateTime| {
            t.and_utc()
                .with_timezone(&zone)
                .format("%Y-%m-%d %H:%M %Z")
                .to_string()
        };
        match self.to {
            Some(to) => format!(
                "This entry changes {what} from {} to {}.",
                time(self.from),
                time(to)
            ),
            None => format!("This entry takes away {what} ({}).", time(self.from)),
        }
    }
}

/// The COE's milestone times that adding `input` (or, with `entry`, changing that
/// entry to `input`) would move: each that is set and would become another. A
/// milestone set for the first time is not a move. Writes nothing.
pub fn milestone_moves(
    conn: &mut DbConnection,
    id: &str,
    input: &TimelineInput,
    entry: Option<&str>,
) -> Result<Vec<MilestoneMove>, CoeError> {
    let (at, kind) = check_timeline(input)?;
    let row = super::load_row(conn, id)?;
    let mut kinds = vec![kind];
    if let Some(entry) = entry {
        let before: Option<String> = timeline_entries::table
            .find(entry)
            .filter(timeline_entries::coe_id.eq(id))
            .select(timeline_entries::kind)
            .first(conn)
            .optional()?;
        if let Some(before) = before.and_then(|k| TimelineKind::parse(&k)) {
            if before != kind {
                kinds.push(before);
            }
        }
    }
    let mut moves = Vec::new();
    for k in kinds.into_iter().filter(|k| k.is_milestone()) {
        let now = match k {
            TimelineKind::Started => row.started_at,
            TimelineKind::Detected => row.detected_at,
            TimelineKind::Mitigated => row.mitigated_at,
            _ => row.resolved_at,
        };
        let Some(from) = now else { continue };
        let supposed = Supposed {
            entry,
            at,
            kind: Some(kind),
        };
        let to = milestone_time(conn, id, k, Some(supposed))?;
        if to != Some(from) {
            moves.push(MilestoneMove { kind: k, from, to });
        }
    }
    Ok(moves)
}

/// Adds a timeline entry; returns its id.
pub fn add_timeline(
    conn: &mut DbConnection,
    id: &str,
    input: &TimelineInput,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<String, CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, now| {
        let (at, kind) = check_timeline(input)?;
        let entry = TimelineRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            at,
            kind: kind.as_str().to_owned(),
            text: input.text.trim().to_owned(),
            source: None,
            event_id: None,
            created_at: now,
            alert_key: None,
            alert_name: None,
            occurrences: 1,
            hosts: 1,
            last_at: None,
        };
        diesel::insert_into(timeline_entries::table)
            .values(&entry)
            .execute(conn)?;
        recompute_milestone(conn, id, kind)?;
        let recorded = Recorded {
            action: "timeline:add".into(),
            before: None,
            after: Some(json!({"id": entry.id, "at": at, "kind": kind, "text": entry.text})),
        };
        Ok((entry.id, Some(recorded)))
    })
}

/// Replaces a timeline entry.
pub fn edit_timeline(
    conn: &mut DbConnection,
    id: &str,
    entry_id: &str,
    input: &TimelineInput,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, _| {
        let (at, kind) = check_timeline(input)?;
        let existing: TimelineRow = child_of_coe!(
            conn,
            timeline_entries,
            TimelineRow::as_select(),
            id,
            entry_id,
            "timeline"
        )?;
        diesel::update(timeline_entries::table.find(entry_id))
            .set((
                timeline_entries::at.eq(at),
                timeline_entries::kind.eq(kind.as_str()),
                timeline_entries::text.eq(input.text.trim()),
                // A person's words now: later events of its alert start a new entry
                // rather than rewrite them.
                timeline_entries::alert_key.eq(None::<String>),
            ))
            .execute(conn)?;
        let existing_kind = types::read("timeline_entries.kind", &existing.kind)?;
        recompute_milestone(conn, id, existing_kind)?;
        if existing_kind != kind {
            recompute_milestone(conn, id, kind)?;
        }
        let recorded = Recorded {
            action: "timeline:edit".into(),
            before: Some(
                json!({"id": entry_id, "at": existing.at, "kind": existing.kind, "text": existing.text}),
            ),
            after: Some(json!({"id": entry_id, "at": at, "kind": kind, "text": input.text.trim()})),
        };
        Ok(((), Some(recorded)))
    })
}

/// Deletes a timeline entry.
pub fn delete_timeline(
    conn: &mut DbConnection,
    id: &str,
    entry_id: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, _| {
        let existing: TimelineRow = child_of_coe!(
            conn,
            timeline_entries,
            TimelineRow::as_select(),
            id,
            entry_id,
            "timeline"
        )?;
        diesel::delete(timeline_entries::table.find(entry_id)).execute(conn)?;
        super::alert_entries::forget_hosts(conn, entry_id)?;
        recompute_milestone(
            conn,
            id,
            types::read("timeline_entries.kind", &existing.kind)?,
        )?;
        let recorded = Recorded {
            action: "timeline:delete".into(),
            before: Some(
                json!({"id": entry_id, "at": existing.at, "kind": existing.kind, "text": existing.text}),
            ),
            after: None,
        };
        Ok(((), Some(recorded)))
    })
}

/// Adds the messages the owner chose from channel `source` (its settings name) as
/// notes of the timeline, "author: text" at the time each was said, in one change.
/// `chosen` are the platform's messages as read again (`chat::import::kept`), never
/// what a form carried. Returns how many.
pub fn import_timeline(
    conn: &mut DbConnection,
    id: &str,
    chosen: &[Said],
    source: &str,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<usize, CoeError> {
    if chosen.is_empty() {
        return Err(CoeError::invalid(
            "keep",
            "tick the messages to add to the timeline",
        ));
    }
    super::edit::with_current(conn, id, who, env, |conn, _, now| {
        let mut added = Vec::new();
        for m in chosen {
            let text = format!("{}: {}", m.author.trim(), m.text.trim());
            if m.text.trim().is_empty() || text.len() > 10_000 {
                return Err(CoeError::invalid(
                    "keep",
                    "a message is empty or longer than 10,000 characters",
                ));
            }
            let entry = TimelineRow {
                id: db::new_id(),
                coe_id: id.to_owned(),
                at: m.at,
                kind: TimelineKind::Note.as_str().to_owned(),
                text,
                source: Some(format!("chat:{source}")),
                event_id: None,
                created_at: now,
                alert_key: None,
                alert_name: None,
                occurrences: 1,
                hosts: 1,
                last_at: None,
            };
            diesel::insert_into(timeline_entries::table)
                .values(&entry)
                .execute(conn)?;
            added.push(json!({"id": entry.id, "at": entry.at, "text": entry.text}));
        }
        let count = added.len();
        let recorded = Recorded {
            action: "timeline:import".into(),
            before: None,
            after: Some(json!({"from": source, "entries": added})),
        };
        Ok((count, Some(recorded)))
    })
}
