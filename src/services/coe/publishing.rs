//! A COE's summary for customers, published: once the COE is approved (or closed),
//! its owner, reviewer or an admin publishes the section its template writes for
//! customers — a public, read-only page at an unguessable address, revocable, and a
//! post to each Statuspage or webhook channel (`[[chat.channels]]`, delivered like
//! chat notices). Nothing else of the COE is public.

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

/// What publishing asks for besides the COE.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    /// The Statuspage incident (its id) whose postmortem the summary becomes; left
    /// out, Statuspage channels are not posted to.
    #[serde(default)]
    pub statuspage_incident: Option<String>,
}

/// A COE's publication as its people see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicationView {
    /// The public page's address, while it is published.
    pub url: Option<String>,
    pub published_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub published_at: NaiveDateTime,
    pub statuspage_incident: Option<String>,
    pub revoked_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub revoked_at: Option<NaiveDateTime>,
}

/// What the public page shows: the summary as published, and when.
#[derive(Debug, Clone, Serialize)]
pub struct PublicSummary {
    pub body: String,
    pub published_at: NaiveDateTime,
}

/// The summary for customers of COE `id` that may be published now: the text of its
/// template's section for customers, once the COE is approved and the text is fit.
/// Refused (naming why) otherwise.
pub fn publishable(conn: &mut DbConnection, env: Env<'_>, id: &str) -> Result<String, CoeError> {
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
    if section.body.trim().is_empty() {
        return Err(CoeError::invalid(
            section.key.clone(),
            "is empty: there is nothing to publish",
        ));
    }
    let found = coes::customers::check(conn, env, &section.body)?;
    if let Some(problem) = found.refusals.into_iter().next() {
        return Err(CoeError::invalid(section.key.clone(), problem));
    }
    Ok(section.body.clone())
}

/// The public page's address for `token`.
pub fn public_url(env: Env<'_>, token: &str) -> String {
    let settings = env.settings;
    format!(
        "{}/summaries/{token}",
        settings.public_url.trim_end_matches('/')
    )
}

/// Publishes COE `id`'s summary for customers (see `publishable`): a new public
/// address (a publication revoked before keeps its dead one), and a post to each
/// Statuspage (when an incident is named) and webhook channel, queued in this
/// transaction.
pub fn publish(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    ask: &PublishRequest,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<PublicationView, CoeError> {
    let incident = ask
        .statuspage_incident
        .as_deref()
        .map(str::trim)
        .filter(|i| !i.is_empty());
    if incident.is_some_and(|i| i.len() > 64 || !i.chars().all(|c| c.is_ascii_alphanumeric())) {
        return Err(CoeError::invalid(
            "statuspage_incident",
            "a Statuspage incident's id: letters and digits, as its address shows it",
        ));
    }
    crate::db::write_transaction(conn, |conn| {
        access::coe(conn, id, editor)?;
        // One publication at a time for this COE: the row lock, on PostgreSQL.
        crate::db::locks::lock_coe(conn, id)?;
        let body = publishable(conn, env, id)?;
        let current = of(conn, env, id)?;
        if current.as_ref().is_some_and(|p| p.revoked_at.is_none()) {
            return Err(CoeError::Conflict(
                "its summary is published already: revoke it first to publish it again".into(),
            ));
        }
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        diesel::delete(publications::table.find(id)).execute(conn)?;
        diesel::insert_into(publications::table)
            .values((
                publications::coe_id.eq(id),
                publications::token.eq(&token),
                publications::body.eq(&body),
                publications::statuspage_incident.eq(incident),
                publications::published_by.eq(editor.actor),
                publications::published_at.eq(now),
            ))
            .execute(conn)?;
        let published = CoeEvent::Published {
            coe_id: id,
            token: &token,
            url: &public_url(env, &token),
            body: &body,
            statuspage_incident: incident,
        };
        outbound::happened(conn, env, editor.actor, published, now)?;
        Ok(of(conn, env, id)?.unwrap_or_else(|| unreachable!("written above")))
    })
}

/// Takes COE `id`'s public page down: its address answers 404 from now on.
pub fn revoke(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    editor: &Editor<'_>,
    now: NaiveDateTime,
) -> Result<PublicationView, CoeError> {
    crate::db::write_transaction(conn, |conn| {
        access::coe(conn, id, editor)?;
        let token: Option<String> = publications::table
            .find(id)
            .filter(publications::revoked_at.is_null())
            .select(publications::token)
            .first(conn)
            .optional()?;
        let taken = diesel::update(
            publications::table
                .find(id)
                .filter(publications::revoked_at.is_null()),
        )
        .set((
            publications::revoked_at.eq(now),
            publications::revoked_by.eq(editor.actor),
        ))
        .execute(conn)?;
        let (Some(token), 1) = (token, taken) else {
            return Err(CoeError::Conflict("its summary is not published".into()));
        };
        let revoked = CoeEvent::PublicationRevoked {
            coe_id: id,
            token: &token,
        };
        outbound::happened(conn, env, editor.actor, revoked, now)?;
        Ok(of(conn, env, id)?.unwrap_or_else(|| unreachable!("written above")))
    })
}

/// A publication as read: token, by, Statuspage incident, at, revoked by, revoked at.
type PublicationRow = (
    String,
    String,
    Option<String>,
    NaiveDateTime,
    Option<String>,
    Option<NaiveDateTime>,
);

/// COE `id`'s publication, if it was ever published.
pub fn of(conn: &mut DbConnection, env: Env<'_>, id: &str) -> QueryResult<Option<PublicationView>> {
    let row: Option<PublicationRow> = publications::table
        .find(id)
        .select((
            publications::token,
            publications::published_by,
            publications::statuspage_incident,
            publications::published_at,
            publications::revoked_by,
            publications::revoked_at,
        ))
        .first(conn)
        .optional()?;
    Ok(row.map(
        |(token, published_by, statuspage_incident, published_at, revoked_by, revoked_at)| {
            PublicationView {
                url: revoked_at.is_none().then(|| public_url(env, &token)),
                published_by,
                published_at,
                statuspage_incident,
                revoked_by,
                revoked_at,
            }
        },
    ))
}

/// The summary published at `token`, unless it was revoked.
pub fn public(conn: &mut DbConnection, token: &str) -> QueryResult<Option<PublicSummary>> {
    publications::table
        .filter(publications::token.eq(token))
        .filter(publications::revoked_at.is_null())
        .select((publications::body, publications::published_at))
        .first::<(String, NaiveDateTime)>(conn)
        .optional()
        .map(|found| found.map(|(body, published_at)| PublicSummary { body, published_at }))
}
