//! Corrective actions kept in step with Jira, Linear and GitHub (`[[trackers]]`):
//! `deliver` tells the trackers what `services::tickets` queued; `incoming` takes
//! their webhooks and reads the linked tickets back (`reconcile`); `state` keeps
//! each tracker's health for the admin page. Here: making or linking an action's
//! ticket on request, and the ticket's row as the tracker last said it.

mod deliver;
mod incoming;
pub mod state;

pub use deliver::{deliver, reclaim, TrackerReport};
pub use incoming::{receive, reconcile, Received};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::config::TrackerSettings;
use crate::db::schema::{corrective_actions, tickets};
use crate::db::{self, DbConnection};
use crate::services::access::{self, Editor};
use crate::services::actions::ActionError;
use crate::services::tickets::{self as queue, UNMAPPED};
use crate::services::Env;
use crate::trackers::{self as api, Client, Failure, Remote, Status};

/// What `POST /api/v1/actions/{id}/ticket` asks: a new ticket (in `tracker`, else
/// the one that takes the action), or an existing one linked by its `key`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketRequest {
    /// The tracker's name in the settings.
    #[serde(default)]
    pub tracker: Option<String>,
    /// An existing ticket to link: `OPS-12`, `ENG-12`, `acme/api#12`.
    #[serde(default)]
    pub key: Option<String>,
}

fn invalid(field: &str, problem: impl Into<String>) -> ActionError {
    ActionError::Invalid(vec![(field.to_owned(), problem.into())])
}

/// Makes or links action `action_id`'s ticket. Making is queued (the answer says
/// it waits); linking reads the ticket from the tracker first.
pub fn request(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    ask: &TicketRequest,
    who: &Editor<'_>,
) -> Result<(), ActionError> {
    let settings = env.settings;
    access::action(conn, action_id, who)?;
    if settings.trackers.is_empty() {
        return Err(ActionError::Conflict(
            "no tracker is set up: an admin adds one to the settings ([[trackers]])".into(),
        ));
    }
    let state: String = corrective_actions::table
        .find(action_id)
        .select(corrective_actions::state)
        .first(conn)?;
    if matches!(state.as_str(), "done" | "wont_do") {
        return Err(ActionError::Conflict(
            "the action is closed: a ticket is for work still to do (reopen it first)".into(),
        ));
    }
    if let Some(existing) = queue::of(conn, &settings.trackers, action_id)? {
        if existing.stuck && ask.key.is_none() {
            // It could not be made: asked again, it is tried again.
            db::write_transaction(conn, |conn| queue::retry_making(conn, action_id, db::now()))?;
            return Ok(());
        }
        return Err(ActionError::Conflict(format!(
            "the action has a ticket already{}",
            existing
                .key
                .map(|k| format!(": {k}"))
                .unwrap_or_else(|| " (being made)".into())
        )));
    }
    let named = match ask.tracker.as_deref() {
        Some(name) => Some(
            settings
                .trackers
                .iter()
                .find(|t| t.name == name)
                .ok_or_else(|| {
                    invalid(
                        "tracker",
                        format!(
                            "no tracker is named {name}; there are: {}",
                            names(&settings.trackers)
                        ),
                    )
                })?,
        ),
        None => None,
    };
    match ask.key.as_deref().map(str::trim) {
        Some(key) => {
            let tracker = named.unwrap_or(&settings.trackers[0]);
            link(conn, tracker, action_id, key)
        }
        None => {
            let destination = match named {
                Some(t) => {
                    let (team, service) = queue::team_and_service(conn, action_id)?;
                    t.destination(team.as_deref(), service.as_deref())
                        .ok_or_else(|| {
                            invalid(
                                "tracker",
                                format!("{} takes no action of this team or service, and has no place for the rest", t.name),
                            )
                        })?
                }
                None => queue::destination(conn, settings, action_id)?.ok_or_else(|| {
                    invalid(
                        "tracker",
                        "no tracker takes actions of this team or service: name one",
                    )
                })?,
            };
            db::write_transaction(conn, |conn| {
                queue::start(conn, &destination, action_id, db::now())?;
                Ok(())
            })
        }
    }
}

fn names(trackers: &[TrackerSettings]) -> String {
    trackers
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Links the existing ticket `key` of `tracker` to the action, after reading it
/// there; a ticket is one action's.
fn link(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    action_id: &str,
    key: &str,
) -> Result<(), ActionError> {
    if key.is_empty() || key.len() > 200 {
        return Err(invalid("key", "a ticket's key, such as OPS-12"));
    }
    let taken = |conn: &mut DbConnection, key: &str| -> QueryResult<Option<String>> {
        tickets::table
            .filter(tickets::tracker.eq(&tracker.name))
            .filter(tickets::ticket_key.eq(key))
            .select(tickets::action_id)
            .first(conn)
            .optional()
    };
    let refuse = |other: String| {
        ActionError::Conflict(format!(
            "{key} is already the ticket of another action ({other}): a ticket follows one action"
        ))
    };
    if let Some(other) = taken(conn, key)? {
        return Err(refuse(other));
    }
    let remote = Client::new(tracker).get(key).map_err(|f| match f {
        Failure::Broken(e) | Failure::Refused(e) => invalid(
            "key",
            format!("{} could not find {key}: {e}", tracker.kind.label()),
        ),
        Failure::Retry { error, .. } => ActionError::Conflict(format!(
            "{} did not answer ({error}): try again later",
            tracker.kind.label()
        )),
    })?;
    // Only a ticket in one of the tracker's places: coe writes to what it links.
    let place = match tracker.kind {
        crate::config::TrackerKind::Github => remote.key.rsplit_once('#').map(|(r, _)| r),
        _ => remote.key.rsplit_once('-').map(|(p, _)| p),
    }
    .unwrap_or_default()
    .to_owned();
    if !tracker
        .places()
        .iter()
        .any(|p| p.eq_ignore_ascii_case(&place))
    {
        return Err(invalid(
            "key",
            format!(
                "{} is not in a place {} sends actions to ({})",
                remote.key,
                tracker.name,
                tracker.places().join(", ")
            ),
        ));
    }
    if let Some(other) = taken(conn, &remote.key)? {
        return Err(refuse(other));
    }
    let now = db::now();
    let inserted = db::write_transaction(conn, |conn| {
        diesel::insert_into(tickets::table)
            .values((
                tickets::action_id.eq(action_id),
                tickets::tracker.eq(&tracker.name),
                tickets::place.eq(place),
                tickets::created_at.eq(now),
                tickets::updated_at.eq(now),
            ))
            .execute(conn)?;
        save_remote(conn, tracker, action_id, &remote, None)
    });
    match inserted {
        Ok(()) => Ok(()),
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Err(ActionError::Conflict(format!(
            "{key} was linked to another action meanwhile, or this action got a ticket"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The ticket of action `action_id` as coe last knew it, when it was made.
pub(crate) fn load_remote(conn: &mut DbConnection, action_id: &str) -> QueryResult<Option<Remote>> {
    let row: Option<(Option<String>, Option<String>, Option<String>)> = tickets::table
        .find(action_id)
        .select((tickets::ticket_key, tickets::remote_id, tickets::url))
        .first(conn)
        .optional()?;
    Ok(match row {
        Some((Some(key), id, url)) => Some(Remote {
            id: id.unwrap_or_else(|| key.clone()),
            key,
            url: url.unwrap_or_default(),
            status: Status::default(),
        }),
        _ => None,
    })
}

/// Records what the tracker says of action `action_id`'s ticket: its key, its link,
/// its status and what coe reads it as (an unmapped status is noted for the admin
/// page); `assignee_note`, when given, replaces the last.
pub(crate) fn save_remote(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    action_id: &str,
    remote: &Remote,
    assignee_note: Option<Option<String>>,
) -> QueryResult<()> {
    let now = db::now();
    save_status(conn, tracker, action_id, &remote.status, now)?;
    diesel::update(tickets::table.find(action_id))
        .set((
            tickets::ticket_key.eq(&remote.key),
            tickets::remote_id.eq(&remote.id),
            tickets::url.eq(&remote.url),
        ))
        .execute(conn)?;
    if let Some(note) = assignee_note {
        diesel::update(tickets::table.find(action_id))
            .set(tickets::assignee_note.eq(note))
            .execute(conn)?;
    }
    Ok(())
}

/// Records a ticket's status and what coe reads it as; gives the meaning (`None`:
/// unmapped, noted for the admin page).
pub(crate) fn save_status(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    action_id: &str,
    status: &Status,
    now: NaiveDateTime,
) -> QueryResult<Option<crate::config::Meaning>> {
    if status.name.is_empty() {
        return Ok(None);
    }
    let meaning = api::meaning(tracker, status);
    if meaning.is_none() {
        state::unmapped_seen(conn, &tracker.name, &status.name)?;
    }
    diesel::update(tickets::table.find(action_id))
        .set((
            tickets::status.eq(&status.name),
            tickets::meaning.eq(meaning.map_or(UNMAPPED, |m| m.as_str())),
            tickets::synced_at.eq(now),
            tickets::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(meaning)
}
