//! COE writeups: opening drafts (by themselves, from incidents, or by hand), reading
//! the whole document with its completeness report, and editing it with optimistic
//! concurrency (every write names the version it was based on). Every change is
//! written to the audit log in the same transaction.
//!
//! One module per concern: `draft` opens drafts and files events into them,
//! `document` assembles what readers see, `edit` holds the version check and the
//! COE's own fields and sections, `timeline`, `whys` and `related` their parts, and
//! `search` the full-text index and the list; `comments` the reviewer's comments on
//! sections and their answers.

mod alert_entries;
mod comments;
mod covered;
pub mod customers;
mod document;
mod draft;
mod edit;
mod merge;
mod recurred;
mod related;
mod same_outage;
mod search;
mod sections;
mod timeline;
mod times;
mod whys;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::Value;

use crate::db;
use crate::db::models::CoeRow;
use crate::db::schema::coes;
use crate::db::DbConnection;
use crate::domain::coe::CoeState;
use crate::domain::template::Template;
use crate::services::access::AccessError;
use crate::services::outbound::{self, Fact};
use crate::services::Env;

pub use crate::services::search_index::action_texts;
pub use comments::{
    add_comment, answer_comment, unanswered, AnswerInput, CommentInput, SectionComment,
};
pub use covered::{attach_incident, detach_incident, incidents_of};
pub use document::{
    assessment, history, load, note_look, CoeDocument, HistoryEntry, Recurrence, RelatedItem,
    ReviewComment, SectionView, TemplateRef, TimelineEntry, Why, WhyChain,
};
pub use draft::{
    coe_of_incident, coes_of_incidents, create, follow_incident, open_draft_for_incident,
    record_events, NewCoe,
};
pub use edit::{patch, take_ownership, CoePatch};
pub use merge::{merge, MAX_MERGED};
pub use recurred::{meant_to_prevent, of_earlier_coe, RecurredAction};
pub use related::{add_related, delete_related, RelatedInput};
pub use same_outage::SameOutage;
pub use search::{
    did_you_mean, list, section_texts, services, unowned, CoeFilter, CoeSort, CoeSummary,
};
pub use sections::{
    put_section, put_sections, write_approved_change, SavedSections, SectionConflict, SectionEdit,
};
pub use timeline::{
    add_timeline, delete_timeline, edit_timeline, import_timeline, milestone_moves, MilestoneMove,
    TimelineInput,
};
pub use whys::{add_why_chain, delete_why_chain, replace_why_chain, WhyChainInput};

/// Rebuilds COE `id`'s row in the full-text index, after a change written outside
/// this module's edits (a reported failure's first text).
pub fn reindex_coe(conn: &mut DbConnection, id: &str) -> QueryResult<()> {
    reindex(conn, id)
}

/// The search reads COE `id`'s words again (`Fact::CoeWritten`).
fn reindex(conn: &mut DbConnection, id: &str) -> QueryResult<()> {
    outbound::noted(
        conn,
        SYSTEM_ACTOR,
        Fact::CoeWritten { coe_id: id },
        db::now(),
    )
}

/// Who is changing things: the token's person, or `token:<name>`, or `coe` itself.
pub type Actor<'a> = &'a str;

pub use crate::services::audit::SYSTEM_ACTOR;

#[derive(Debug, thiserror::Error)]
pub enum CoeError {
    #[error("no COE with id `{0}`")]
    NotFound(String),
    #[error("the COE changed since version {expected}: it is now at version {current}")]
    Stale { expected: i32, current: i32 },
    #[error(
        "section `{key}` changed since revision {based_on}: it is now at revision {current}; \
         read it again, merge, and save based on {current}"
    )]
    SectionChanged {
        key: String,
        based_on: String,
        current: String,
    },
    #[error(
        "send the version this change is based on in `If-Match` (the COE is at version {current})"
    )]
    VersionRequired { current: i32 },
    #[error("the COE is {state}: its writeup can no longer be edited")]
    NotEditable { state: CoeState },
    #[error("invalid input")]
    Invalid(Vec<(String, String)>),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl CoeError {
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        CoeError::Invalid(vec![(field.into(), problem.into())])
    }
}

impl From<AccessError> for CoeError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::NotFound(id) => CoeError::NotFound(id),
            AccessError::Forbidden(m) => CoeError::Forbidden(m),
            AccessError::Database(d) => CoeError::Database(d),
        }
    }
}

/// A text section's revision: the first 16 hex digits of its body's SHA-256 (an
/// empty section's too), its line ends as `\n` (a browser's form sends `\r\n`, its
/// script `\n`). Two bodies with one revision are the same text.
pub fn revision(body: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(body.replace("\r\n", "\n").as_bytes())[..8])
}

/// Writes the history row of a change to COE `coe_id` (`Fact::CoeEdited`).
fn record_change(
    conn: &mut DbConnection,
    coe_id: &str,
    actor: Actor<'_>,
    action: &str,
    before: Option<Value>,
    after: Option<Value>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let edited = Fact::CoeEdited {
        coe_id,
        what: action,
        before,
        after,
    };
    outbound::noted(conn, actor, edited, now)
}

/// Checks that `email` may be named in `field` (owner, reviewer): see
/// `people::check_assignable`.
fn check_person(
    conn: &mut DbConnection,
    env: Env<'_>,
    field: &str,
    email: &str,
) -> Result<(), CoeError> {
    match crate::services::directory::people::check_assignable(conn, env, email)? {
        Some(problem) => Err(CoeError::invalid(field, problem)),
        None => Ok(()),
    }
}

/// Incident `incident_id`, or a refusal of the field `incident_id` naming it.
fn incident_named(
    conn: &mut DbConnection,
    incident_id: &str,
) -> Result<crate::db::models::IncidentRow, CoeError> {
    use crate::db::schema::incidents;
    incidents::table
        .find(incident_id)
        .select(crate::db::models::IncidentRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| {
            CoeError::invalid(
                "incident_id",
                format!("no incident with id `{incident_id}`"),
            )
        })
}

/// The COE's version now: what a change that adds to it (an entry, a chain, a link)
/// is based on, when nothing it changes can conflict with another's change.
pub fn version(conn: &mut DbConnection, id: &str) -> Result<i32, CoeError> {
    Ok(load_row(conn, id)?.version)
}

/// The stored row of COE `id`, or `NotFound`.
pub(crate) fn load_row(conn: &mut DbConnection, id: &str) -> Result<CoeRow, CoeError> {
    coes::table
        .find(id)
        .select(CoeRow::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| CoeError::NotFound(id.to_owned()))
}

pub(crate) fn template_of(row: &CoeRow) -> Template {
    serde_json::from_str(&row.template).unwrap_or_else(|_| Template::default_template())
}

/// One child row of COE `$coe` (a timeline entry, a 5-whys chain, a related item) by
/// its id, as `$select`: `NotFound` naming `$coe/$what/$child` when it does not exist
/// or belongs to another COE.
macro_rules! child_of_coe {
    ($conn:expr, $table:ident, $select:expr, $coe:expr, $child:expr, $what:literal) => {
        $table::table
            .filter($table::id.eq($child))
            .filter($table::coe_id.eq($coe))
            .select($select)
            .first($conn)
            .optional()?
            .ok_or_else(|| CoeError::NotFound(format!("{}/{}/{}", $coe, $what, $child)))
    };
}

use child_of_coe;
