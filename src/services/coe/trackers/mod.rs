//! Corrective actions kept in step with Jira, Linear and GitHub (`[[trackers]]`):
//! `deliver` tells the trackers what `services::outbound::tickets` queued; `incoming` takes
//! their webhooks and reads the linked tickets back (`reconcile`); `state` keeps
//! each tracker's health for the admin page. Here: making or linking an action's
//! ticket on request, and the ticket's row as the tracker last said it.

mod deliver;
mod incoming;
pub mod state;

pub use deliver::{deliver, reclaim, TrackerReport};
pub use incoming::{reconcile, settle, take, Received, Taken};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::config::TrackerSettings;
use crate::db::schema::{corrective_actions, tickets};
use crate::db::{self, DbConnection};
use crate::services::access::{self, Editor};
use crate::services::coe::actions::ActionError;
use crate::services::outbound::tickets::{self as queue, UNMAPPED};
use crate::services::Env;
use crate::trackers::{self as api, Answer, Client, Failure, Remote, Status, TicketKey};

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

/// Why a delivery pass or a reconcile stopped: no connection, or the database.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("no database connection: {0}")]
    NoConnection(#[from] diesel::r2d2::PoolError),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
    #[error(transparent)]
    Action(#[from] ActionError),
}

fn invalid(field: &str, problem: impl Into<String>) -> ActionError {
    ActionError::Invalid(vec![(field.to_owned(), problem.into())])
}

/// What a ticket request comes to before any tracker is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Queued to be made (or made again): the delivery job asks the tracker.
    Queued,
    /// An existing ticket to link: `tracker` (as it was when asked) is asked for `key`
    /// with no database connection held (`read`), then `link` records what it said.
    Link {
        tracker: Box<crate::config::TrackerSettings>,
        key: TicketKey,
    },
}

/// Makes or links action `action_id`'s ticket. Making is queued; linking checks the
/// key by the tracker's grammar (a key that is not one is refused before any
/// request) and says which tracker to read it from.
pub fn request(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    ask: &TicketRequest,
    who: &Editor<'_>,
) -> Result<Asked, ActionError> {
    let Some(typed) = ask.key.as_deref().map(str::trim) else {
        make(conn, env, action_id, ask.tracker.as_deref(), who)?;
        return Ok(Asked::Queued);
    };
    let trackers = &env.connections.trackers;
    may_ask(conn, trackers, action_id, who, true)?;
    let index = match ask.tracker.as_deref() {
        Some(name) => named(trackers, name)?.0,
        None => 0,
    };
    let tracker = &trackers[index];
    let key = TicketKey::parse(tracker.kind, typed).ok_or_else(|| {
        invalid(
            "key",
            format!(
                "expected {} (got {:?})",
                TicketKey::shape(tracker.kind),
                crate::chat::format::cut(typed, 60)
            ),
        )
    })?;
    if let Some(other) = taken(conn, tracker, key.as_str())? {
        return Err(refuse_taken(key.as_str(), &other));
    }
    Ok(Asked::Link {
        tracker: Box::new(tracker.clone()),
        key,
    })
}

/// Queues the making of action `action_id`'s ticket in `tracker` (by name), else in
/// the tracker that takes it; a ticket that could not be made is tried again.
pub fn make(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    tracker: Option<&str>,
    who: &Editor<'_>,
) -> Result<(), ActionError> {
    if may_ask(conn, &env.connections.trackers, action_id, who, false)?.is_some() {
        // It could not be made: asked again, it is tried again.
        db::write_transaction(conn, |conn| queue::retry_making(conn, action_id, db::now()))?;
        return Ok(());
    }
    let destination = match tracker {
        Some(name) => {
            let t = named(&env.connections.trackers, name)?.1;
            let (team, service) = queue::team_and_service(conn, action_id)?;
            t.destination(team.as_deref(), service.as_deref())
                .ok_or_else(|| {
                    invalid(
                        "tracker",
                        format!("{} takes no action of this team or service, and has no place for the rest", t.name),
                    )
                })?
        }
        None => queue::destination(conn, env, action_id)?.ok_or_else(|| {
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

/// Whether `who` may ask for action `action_id`'s ticket now: a tracker is set up,
/// the action is open and has no ticket (`linking`), or none but one that could not
/// be made (given back, to be tried again).
fn may_ask(
    conn: &mut DbConnection,
    trackers: &[TrackerSettings],
    action_id: &str,
    who: &Editor<'_>,
    linking: bool,
) -> Result<Option<queue::TicketView>, ActionError> {
    access::action(conn, action_id, who)?;
    if trackers.is_empty() {
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
    match queue::of(conn, trackers, action_id)? {
        Some(existing) if existing.stuck && !linking => Ok(Some(existing)),
        Some(existing) => Err(ActionError::Conflict(format!(
            "the action has a ticket already{}",
            existing
                .key
                .map(|k| format!(": {k}"))
                .unwrap_or_else(|| " (being made)".into())
        ))),
        None => Ok(None),
    }
}

/// The tracker named `name`, and where it is in the settings.
fn named<'a>(
    trackers: &'a [TrackerSettings],
    name: &str,
) -> Result<(usize, &'a TrackerSettings), ActionError> {
    trackers
        .iter()
        .enumerate()
        .find(|(_, t)| t.name == name)
        .ok_or_else(|| {
            invalid(
                "tracker",
                format!("no tracker is named {name}; there are: {}", names(trackers)),
            )
        })
}

fn names(trackers: &[TrackerSettings]) -> String {
    trackers
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The action whose ticket `key` of `tracker` is, if any.
fn taken(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    key: &str,
) -> QueryResult<Option<String>> {
    tickets::table
        .filter(tickets::tracker.eq(&tracker.name))
        .filter(tickets::ticket_key.eq(key))
        .select(tickets::action_id)
        .first(conn)
        .optional()
}

fn refuse_taken(key: &str, other: &str) -> ActionError {
    ActionError::Conflict(format!(
        "{key} is already the ticket of another action ({other}): a ticket follows one action"
    ))
}

/// Reads ticket `key` from `tracker`: call it with no database connection held.
pub fn read(tracker: &TrackerSettings, key: &TicketKey) -> Answer<Remote> {
    Client::new(tracker).get(key)
}

/// Links ticket `key` of `tracker`, as the tracker answered for it (`read`), to the
/// action, checking again what may have changed while the tracker answered. The
/// member is told what failed in words; what the tracker said goes to the log.
pub fn link(
    conn: &mut DbConnection,
    tracker: &TrackerSettings,
    action_id: &str,
    key: &TicketKey,
    read: Answer<Remote>,
    who: &Editor<'_>,
) -> Result<(), ActionError> {
    let label = tracker.kind.label();
    let remote = read.map_err(|f| {
        tracing::warn!(tracker = %tracker.name, ticket = %key, error = f.text(), "a ticket to link could not be read");
        match (&f, f.status()) {
            (Failure::Retry { .. }, _) => ActionError::Conflict(format!(
                "{label} did not answer in time or asked coe to wait: try again later"
            )),
            (_, Some(401 | 403)) => ActionError::Conflict(format!(
                "{label} refused coe's credentials: an admin checks the tracker (Admin → Trackers)"
            )),
            _ => invalid("key", format!("{label} did not find {key}")),
        }
    })?;
    may_ask(conn, std::slice::from_ref(tracker), action_id, who, true)?;
    // The key as the tracker writes it, read by the same grammar.
    let Some(found) = TicketKey::parse(tracker.kind, &remote.key) else {
        tracing::warn!(tracker = %tracker.name, ticket = %key, answered = %remote.key, "a tracker answered with a key coe cannot read");
        return Err(invalid(
            "key",
            format!("{label} answered for {key} with a key coe cannot read"),
        ));
    };
    let remote = Remote {
        key: found.to_string(),
        ..remote
    };
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
    for asked in [key.as_str(), remote.key.as_str()] {
        if let Some(other) = taken(conn, tracker, asked)? {
            return Err(refuse_taken(asked, &other));
        }
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
        // The unique index answers a race: the ticket taken, or this action given one.
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
