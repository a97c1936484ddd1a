//! A COE's summary for customers, published: once the COE is approved (or closed),
//! its owner, reviewer or an admin publishes the section its template writes for
//! customers under a title written for them — a public, read-only notice at an
//! unguessable address, and a post to each Statuspage or webhook channel
//! (`[[chat.channels]]`, delivered like chat notices). A change of it after approval
//! waits for the reviewer (`changes`) and, approved, replaces the published text at
//! the same address. Taken down, the address says the notice was withdrawn. Nothing
//! else of the COE is public.

pub mod changes;
mod notice;

use base64::Engine;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::coes::{self, CoeError};
use crate::db::schema::publications;
use crate::db::DbConnection;
use crate::domain::coe::CoeState;
use crate::services::access::{self, Editor};
use crate::services::outbound::{self, CoeEvent};
use crate::services::Env;

pub use notice::{
    destinations, facts, public, published, Facts, Notice, PublicNotice, Published, WentTo,
};

/// Longest title for customers, in characters.
pub const MAX_TITLE_CHARS: usize = 150;

/// What publishing asks for besides the COE.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    /// The notice's title, written for customers ("Checkout was unavailable for 40
    /// minutes"); checked like the text.
    #[serde(default)]
    pub title: Option<String>,
    /// The Statuspage incident (its id) whose postmortem the summary becomes; left
    /// out, Statuspage channels are not posted to.
    #[serde(default)]
    pub statuspage_incident: Option<String>,
}

/// A COE's publication as its people see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicationView {
    /// The public page's address (after it was taken down, it says so).
    pub url: String,
    pub title: String,
    /// The text customers read (or read, before it was taken down).
    pub body: String,
    pub published_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub published_at: NaiveDateTime,
    /// Who last replaced its text with an approved change, and when.
    pub updated_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub updated_at: Option<NaiveDateTime>,
    pub statuspage_incident: Option<String>,
    pub revoked_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub revoked_at: Option<NaiveDateTime>,
}

impl PublicationView {
    /// Whether customers can read it now.
    pub fn live(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// The section written for customers of COE `id`: its key and text, once the COE is
/// approved (or closed). Refused (naming why) otherwise.
fn approved_section(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
) -> Result<(String, String), CoeError> {
    let doc = coes::load(conn, id, env)?;
    let Some(section) = doc.sections.iter().find(|s| s.for_customers) else {
        return Err(CoeError::Conflict(
            "its template has no section written for customers: there is nothing to publish".into(),
        ));
    };
    if !matches!(doc.state, CoeState::Approved | CoeState::Closed) {
        return Err(CoeError::Conflict(format!(
            "the COE is {}: its summary for customers is published once the COE is approved",
            doc.state.as_str().replace('_', " ")
        )));
    }
    Ok((section.key.clone(), section.body.clone()))
}

/// The summary for customers of COE `id` that may be published now: the text of its
/// template's section for customers, once the COE is approved and the text is fit.
/// Refused (naming why) otherwise.
pub fn publishable(conn: &mut DbConnection, env: Env<'_>, id: &str) -> Result<String, CoeError> {
    let (key, body) = approved_section(conn, env, id)?;
    check_text(conn, env, &key, &body)?;
    Ok(body)
}

/// Refuses a text for customers that is empty or names what it may not (under
/// `field`); returns its warnings, for the writer to weigh.
pub fn check_text(
    conn: &mut DbConnection,
    env: Env<'_>,
    field: &str,
    text: &str,
) -> Result<Vec<String>, CoeError> {
    if text.trim().is_empty() {
        return Err(CoeError::invalid(
            field,
            "is empty: there is nothing to publish",
        ));
    }
    let found = coes::customers::check(conn, env, text)?;
    if let Some(problem) = found.refusals.into_iter().next() {
        return Err(CoeError::invalid(field, problem));
    }
    Ok(found.warnings)
}

/// A title for customers, trimmed, checked like the text (`title`).
pub fn check_title(
    conn: &mut DbConnection,
    env: Env<'_>,
    title: Option<&str>,
) -> Result<(String, Vec<String>), CoeError> {
    let title = title.map(str::trim).unwrap_or_default();
    if title.is_empty() {
        return Err(CoeError::invalid(
            "title",
            "is missing: give the notice a title written for customers",
        ));
    }
    if title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(CoeError::invalid(
            "title",
            format!("must be at most {MAX_TITLE_CHARS} characters on one line"),
        ));
    }
    let warnings = check_text(conn, env, "title", title)?;
    Ok((title.to_owned(), warnings))
}

/// A Statuspage incident's id as typed: letters and digits, or none.
fn checked_incident(typed: Option<&str>) -> Result<Option<String>, CoeError> {
    let incident = typed.map(str::trim).filter(|i| !i.is_empty());
    if incident.is_some_and(|i| i.len() > 64 || !i.chars().all(|c| c.is_ascii_alphanumeric())) {
        return Err(CoeError::invalid(
            "statuspage_incident",
            "a Statuspage incident's id: letters and digits, as its address shows it",
        ));
    }
    Ok(incident.map(str::to_owned))
}

/// The public page's address for `token`.
pub fn public_url(env: Env<'_>, token: &str) -> String {
    let settings = env.settings;
    format!(
        "{}/summaries/{token}",
        settings.public_url.trim_end_matches('/')
    )
}

/// The title to offer for COE `id`'s next publication: its approved change's, else
/// its last publication's.
pub fn suggested_title(conn: &mut DbConnection, id: &str) -> QueryResult<Option<String>> {
    if let Some(title) = changes::approved_title(conn, id)? {
        return Ok(Some(title));
    }
    publications::table
        .filter(publications::coe_id.eq(id))
        .order(publications::published_at.desc())
        .select(publications::title)
        .first::<String>(conn)
        .optional()
        .map(|t| t.filter(|t| !t.is_empty()))
}

/// Publishes COE `id`'s summary for customers (see `publishable`) under its title: a
/// new public address (one taken down before keeps saying it was withdrawn), and a
/// post to each Statuspage (when an incident is named) and webhook channel, queued
/// in this transaction.
pub fn publish(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    ask: &PublishRequest,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<PublicationView, CoeError> {
    let incident = checked_incident(ask.statuspage_incident.as_deref())?;
    crate::db::write_transaction(conn, |conn| {
        access::coe(conn, id, editor)?;
        // One publication at a time for this COE: the row lock, on PostgreSQL.
        crate::db::locks::lock_coe(conn, id)?;
        let body = publishable(conn, env, id)?;
        if live(conn, id)?.is_some() {
            return Err(CoeError::Conflict(
                "its summary is published already: take it down first to publish it again".into(),
            ));
        }
        let (title, _) = check_title(conn, env, ask.title.as_deref())?;
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        diesel::insert_into(publications::table)
            .values((
                publications::token.eq(&token),
                publications::coe_id.eq(id),
                publications::title.eq(&title),
                publications::body.eq(&body),
                publications::statuspage_incident.eq(&incident),
                publications::published_by.eq(editor.actor),
                publications::published_at.eq(now),
            ))
            .execute(conn)?;
        let published = CoeEvent::Published {
            coe_id: id,
            token: &token,
            url: &public_url(env, &token),
            title: &title,
            body: &body,
            statuspage_incident: incident.as_deref(),
        };
        outbound::happened(conn, env, editor.actor, published, now)?;
        Ok(of(conn, env, id)?.unwrap_or_else(|| unreachable!("written above")))
    })
}

/// Takes COE `id`'s public page down: its address says the notice was withdrawn
/// from now on, and the channels it was sent to are told.
pub fn revoke(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<PublicationView, CoeError> {
    crate::db::write_transaction(conn, |conn| {
        access::coe(conn, id, editor)?;
        crate::db::locks::lock_coe(conn, id)?;
        let Some(PublicationRow {
            token,
            statuspage_incident: incident,
            ..
        }) = live(conn, id)?
        else {
            return Err(CoeError::Conflict("its summary is not published".into()));
        };
        diesel::update(publications::table.find(&token))
            .set((
                publications::revoked_at.eq(now),
                publications::revoked_by.eq(editor.actor),
            ))
            .execute(conn)?;
        let revoked = CoeEvent::PublicationRevoked {
            coe_id: id,
            token: &token,
            url: &public_url(env, &token),
            statuspage_incident: incident.as_deref(),
        };
        outbound::happened(conn, env, editor.actor, revoked, now)?;
        Ok(of(conn, env, id)?.unwrap_or_else(|| unreachable!("written above")))
    })
}

/// A publication as read.
#[derive(Queryable)]
struct PublicationRow {
    token: String,
    title: String,
    body: String,
    published_by: String,
    published_at: NaiveDateTime,
    updated_by: Option<String>,
    updated_at: Option<NaiveDateTime>,
    statuspage_incident: Option<String>,
    revoked_by: Option<String>,
    revoked_at: Option<NaiveDateTime>,
}

type PublicationColumns = (
    publications::token,
    publications::title,
    publications::body,
    publications::published_by,
    publications::published_at,
    publications::updated_by,
    publications::updated_at,
    publications::statuspage_incident,
    publications::revoked_by,
    publications::revoked_at,
);

const PUBLICATION_COLUMNS: PublicationColumns = (
    publications::token,
    publications::title,
    publications::body,
    publications::published_by,
    publications::published_at,
    publications::updated_by,
    publications::updated_at,
    publications::statuspage_incident,
    publications::revoked_by,
    publications::revoked_at,
);

fn view(env: Env<'_>, row: PublicationRow) -> PublicationView {
    PublicationView {
        url: public_url(env, &row.token),
        title: row.title,
        body: row.body,
        published_by: row.published_by,
        published_at: row.published_at,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
        statuspage_incident: row.statuspage_incident,
        revoked_by: row.revoked_by,
        revoked_at: row.revoked_at,
    }
}

/// COE `id`'s publication customers can read now, if any.
fn live(conn: &mut DbConnection, id: &str) -> QueryResult<Option<PublicationRow>> {
    publications::table
        .filter(publications::coe_id.eq(id))
        .filter(publications::revoked_at.is_null())
        .select(PUBLICATION_COLUMNS)
        .first(conn)
        .optional()
}

/// COE `id`'s newest publication, if it was ever published.
pub fn of(conn: &mut DbConnection, env: Env<'_>, id: &str) -> QueryResult<Option<PublicationView>> {
    let row = publications::table
        .filter(publications::coe_id.eq(id))
        .order(publications::published_at.desc())
        .select(PUBLICATION_COLUMNS)
        .first::<PublicationRow>(conn)
        .optional()?;
    Ok(row.map(|row| view(env, row)))
}
