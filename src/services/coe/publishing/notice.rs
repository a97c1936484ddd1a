//! What customers read: a notice at its address (or that it was withdrawn), with the
//! facts around its text (the outage's start and end, the services as customers
//! know them), where a publication goes, and the list of what was published (Admin
//! → Published, the Atom feed).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use super::{public_url, view, PublicationRow, PublicationView, PUBLICATION_COLUMNS};
use crate::db::schema::{coe_incidents, coes, incidents, publications, service_owners};
use crate::db::DbConnection;
use crate::services::outbound::chat::publications::{self as told, Told};
use crate::services::Env;

/// The facts a notice shows beside its text.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// When the outage started and ended (the COE's times, else its incidents').
    #[serde(serialize_with = "crate::json::utc_option")]
    pub started: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub ended: Option<NaiveDateTime>,
    /// The affected services by the names customers know them by.
    pub services: Vec<String>,
    /// The affected services with no such name: not shown to customers.
    pub unnamed: Vec<String>,
}

/// COE `coe_id`'s outage as customers are told of it.
pub fn facts(conn: &mut DbConnection, coe_id: &str) -> QueryResult<Facts> {
    let (service, started, resolved): (
        Option<String>,
        Option<NaiveDateTime>,
        Option<NaiveDateTime>,
    ) = coes::table
        .find(coe_id)
        .select((coes::service, coes::started_at, coes::resolved_at))
        .first(conn)?;
    let linked: Vec<(Option<String>, NaiveDateTime, Option<NaiveDateTime>)> = coe_incidents::table
        .inner_join(incidents::table)
        .filter(coe_incidents::coe_id.eq(coe_id))
        .select((
            incidents::service,
            incidents::started_at,
            incidents::resolved_at,
        ))
        .load(conn)?;
    let first_alert = linked.iter().map(|(_, s, _)| *s).min();
    // Ended when every incident did.
    let all_resolved = linked
        .iter()
        .map(|(_, _, r)| *r)
        .collect::<Option<Vec<_>>>()
        .and_then(|r| r.into_iter().max());
    let mut names: Vec<String> = Vec::new();
    for name in service
        .into_iter()
        .chain(linked.into_iter().filter_map(|(s, _, _)| s))
    {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            names.push(name);
        }
    }
    let mut facts = Facts {
        started: started.or(first_alert),
        ended: resolved.or(all_resolved),
        ..Facts::default()
    };
    let mapped: Vec<(String, Option<String>)> = service_owners::table
        .select((service_owners::service, service_owners::customer_name))
        .load(conn)?;
    for name in names {
        let known = mapped
            .iter()
            .find(|(s, _)| s.eq_ignore_ascii_case(&name))
            .and_then(|(_, c)| c.clone());
        match known {
            Some(known) if !facts.services.contains(&known) => facts.services.push(known),
            Some(_) => {}
            None => facts.unnamed.push(name),
        }
    }
    Ok(facts)
}

/// A notice as customers read it.
#[derive(Debug, Clone, Serialize)]
pub struct PublicNotice {
    pub title: String,
    pub body: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub published_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub updated_at: Option<NaiveDateTime>,
    pub facts: Facts,
}

/// What an address shows.
#[derive(Debug, Clone)]
pub enum Notice {
    Live(PublicNotice),
    /// Taken down, when: its text is not shown.
    Withdrawn(NaiveDateTime),
}

/// A publication as its address reads it: COE, title, text, published, updated,
/// withdrawn.
type NoticeRow = (
    String,
    String,
    String,
    NaiveDateTime,
    Option<NaiveDateTime>,
    Option<NaiveDateTime>,
);

/// The notice published at `token`, or that it was withdrawn.
pub fn public(conn: &mut DbConnection, token: &str) -> QueryResult<Option<Notice>> {
    let found: Option<NoticeRow> = publications::table
        .find(token)
        .select((
            publications::coe_id,
            publications::title,
            publications::body,
            publications::published_at,
            publications::updated_at,
            publications::revoked_at,
        ))
        .first(conn)
        .optional()?;
    let Some((coe_id, title, body, published_at, updated_at, revoked_at)) = found else {
        return Ok(None);
    };
    if let Some(at) = revoked_at {
        return Ok(Some(Notice::Withdrawn(at)));
    }
    Ok(Some(Notice::Live(PublicNotice {
        title,
        body,
        published_at,
        updated_at,
        facts: facts(conn, &coe_id)?,
    })))
}

/// Where a publication of COE `coe_id` would go besides its page: each channel's
/// name and kind in words.
pub fn destinations(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe_id: &str,
    with_incident: bool,
) -> QueryResult<Vec<(String, &'static str)>> {
    Ok(told::channels_for(conn, env, coe_id, with_incident)?
        .into_iter()
        .map(|c| {
            let kind = match c.kind {
                crate::config::ChatKind::Statuspage => "Statuspage",
                _ => "webhook",
            };
            (c.name.clone(), kind)
        })
        .collect())
}

/// A channel a publication was sent to: what it was sent last, and whether it got
/// there.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WentTo {
    pub channel: String,
    /// `published`, `updated` or `withdrawn`.
    pub what: String,
    /// `sent`, `pending`, `sending` or `failed`.
    pub state: String,
}

/// One publication as Admin → Published and the feed list it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Published {
    pub coe_id: String,
    pub coe_title: String,
    #[serde(flatten)]
    pub publication: PublicationView,
    /// Each channel it was sent to, with whether it got there.
    pub went_to: Vec<WentTo>,
}

/// What was published, newest first (at most `limit`); `live_only`: those customers
/// can read now.
pub fn published(
    conn: &mut DbConnection,
    env: Env<'_>,
    live_only: bool,
    limit: i64,
) -> QueryResult<Vec<Published>> {
    let mut query = publications::table
        .inner_join(coes::table)
        .select((publications::coe_id, coes::title, PUBLICATION_COLUMNS))
        .order((
            diesel::dsl::sql::<diesel::sql_types::Timestamp>(
                "COALESCE(publications.updated_at, publications.published_at)",
            )
            .desc(),
            publications::token.asc(),
        ))
        .limit(limit)
        .into_boxed();
    if live_only {
        query = query.filter(publications::revoked_at.is_null());
    }
    let rows: Vec<(String, String, PublicationRow)> = query.load(conn)?;
    let mut list = Vec::with_capacity(rows.len());
    for (coe_id, coe_title, row) in rows {
        let url = public_url(env, &row.token);
        // Only admins read where it went (the feed is public and needs none of it).
        let went_to = if live_only {
            Vec::new()
        } else {
            told::went_to(
                conn,
                &Told {
                    coe_id: &coe_id,
                    token: &row.token,
                    url: &url,
                    statuspage_incident: None,
                },
            )?
            .into_iter()
            .map(|(channel, what, state)| WentTo {
                channel,
                what: what.to_owned(),
                state,
            })
            .collect()
        };
        let publication = view(env, row);
        list.push(Published {
            coe_id,
            coe_title,
            publication,
            went_to,
        });
    }
    Ok(list)
}
