//! The COE list and its full-text search. The index (`db::search`, written by
//! `services::search_index`) holds each COE's title and, as its body, the sections,
//! timeline, 5 whys and corrective actions.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::models::CoeRow;
use crate::db::schema::{coe_sections, coes, people};
use crate::db::{self, types, DbConnection};
use crate::domain::coe::CoeState;
use crate::domain::search::SearchText;
use crate::domain::Severity;

/// A COE in a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoeSummary {
    pub id: String,
    pub incident_id: Option<String>,
    pub title: String,
    pub service: Option<String>,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: CoeState,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
    /// Search rank when `q` was given (higher is better).
    pub rank: Option<f64>,
}

/// The search `text` with each word the index does not hold put right, when a word
/// it holds is a slip away ("memroy" → "memory"): what a search that found nothing
/// offers instead. `None` when no word is near.
pub fn did_you_mean(conn: &mut DbConnection, text: &SearchText) -> QueryResult<Option<String>> {
    let fixes = db::search::did_you_mean(conn, text)?;
    if fixes.is_empty() {
        return Ok(None);
    }
    let mut fixed = text.clone();
    for (typed, meant) in &fixes {
        fixed = SearchText::parse(&fixed.replaced(typed, meant)).unwrap_or(fixed);
    }
    Ok(Some(fixed.to_string()))
}

/// Filters of the COE list. `text` searches titles and writeups, ranked, for at most
/// `search_within` (else `DEFAULT_SEARCH_WITHIN`).
#[derive(Debug, Clone, Default)]
pub struct CoeFilter {
    pub text: Option<SearchText>,
    pub search_within: Option<Duration>,
    pub state: Option<CoeState>,
    pub service: Option<String>,
    pub severity: Option<Severity>,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    pub since: Option<NaiveDateTime>,
    pub until: Option<NaiveDateTime>,
    /// Owned by someone of this team (the directory's teams, any case).
    pub team: Option<String>,
    /// The order without `text` (with it, best match first).
    pub sort: CoeSort,
}

/// The order of a list of COEs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CoeSort {
    /// Newest first.
    #[default]
    Newest,
    Oldest,
    /// Most recently changed first.
    Updated,
    /// Worst first (sev1 before sev2), newest first within one severity.
    Severity,
}

impl CoeSort {
    pub const ALL: [CoeSort; 4] = [
        CoeSort::Newest,
        CoeSort::Oldest,
        CoeSort::Updated,
        CoeSort::Severity,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CoeSort::Newest => "newest",
            CoeSort::Oldest => "oldest",
            CoeSort::Updated => "updated",
            CoeSort::Severity => "severity",
        }
    }
}

/// Most search hits ranked before filtering.
const MAX_SEARCH_HITS: i64 = 1_000;

/// How long a search may run when its filter does not say (`server.search_timeout_ms`
/// is what the HTTP handlers pass).
pub const DEFAULT_SEARCH_WITHIN: Duration = Duration::from_secs(2);

fn summary(row: CoeRow, rank: Option<f64>) -> QueryResult<CoeSummary> {
    Ok(CoeSummary {
        severity: types::severity("coes.severity", row.severity)?,
        state: types::read("coes.state", &row.state)?,
        id: row.id,
        incident_id: row.incident_id,
        title: row.title,
        service: row.service,
        owner: row.owner_email,
        reviewer: row.reviewer_email,
        created_at: row.created_at,
        updated_at: row.updated_at,
        rank,
    })
}

/// The COEs nobody owns that are not closed, oldest first (they wait longest): what
/// heads the admins' work and the dashboard, for someone to take.
pub fn unowned(conn: &mut DbConnection, limit: i64) -> QueryResult<Vec<CoeSummary>> {
    let rows: Vec<CoeRow> = coes::table
        .filter(coes::owner_email.is_null())
        .filter(coes::state.ne_all([CoeState::Closed.as_str(), CoeState::Merged.as_str()]))
        .order((coes::created_at.asc(), coes::id.asc()))
        .limit(limit)
        .select(CoeRow::as_select())
        .load(conn)?;
    rows.into_iter().map(|row| summary(row, None)).collect()
}

/// A page of COEs: ranked by relevance with `text`, else newest first.
pub fn list(
    conn: &mut DbConnection,
    filter: &CoeFilter,
    limit: i64,
    offset: i64,
) -> QueryResult<(Vec<CoeSummary>, i64)> {
    let hits = match &filter.text {
        Some(text) => Some(db::search::find(
            conn,
            text,
            MAX_SEARCH_HITS,
            filter.search_within.unwrap_or(DEFAULT_SEARCH_WITHIN),
        )?),
        None => None,
    };
    let filtered = || {
        let mut query = coes::table.into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(coes::state.eq(state.as_str()));
        }
        if let Some(service) = &filter.service {
            query = query.filter(coes::service.eq(service.clone()));
        }
        if let Some(severity) = filter.severity {
            query = query.filter(coes::severity.eq(severity.rank()));
        }
        if let Some(owner) = &filter.owner {
            query = query.filter(coes::owner_email.eq(owner.clone()));
        }
        if let Some(reviewer) = &filter.reviewer {
            query = query.filter(coes::reviewer_email.eq(reviewer.clone()));
        }
        if let Some(since) = filter.since {
            query = query.filter(coes::created_at.ge(since));
        }
        if let Some(until) = filter.until {
            query = query.filter(coes::created_at.lt(until));
        }
        if let Some(team) = &filter.team {
            query = query.filter(
                coes::owner_email.eq_any(
                    people::table
                        .filter(db::lower(people::team).eq(team.to_lowercase()))
                        .select(people::email.nullable()),
                ),
            );
        }
        if let Some(hits) = &hits {
            let ids: Vec<String> = hits.iter().map(|(id, _)| id.clone()).collect();
            query = query.filter(coes::id.eq_any(ids));
        }
        query
    };
    match &hits {
        None => {
            let total: i64 = filtered().count().get_result(conn)?;
            let ordered = match filter.sort {
                CoeSort::Newest => filtered().order((coes::created_at.desc(), coes::id.desc())),
                CoeSort::Oldest => filtered().order((coes::created_at.asc(), coes::id.asc())),
                CoeSort::Updated => filtered().order((coes::updated_at.desc(), coes::id.desc())),
                // Severity 1 is the worst: the lowest number first.
                CoeSort::Severity => filtered().order((
                    coes::severity.asc(),
                    coes::created_at.desc(),
                    coes::id.desc(),
                )),
            };
            let rows: Vec<CoeRow> = ordered
                .limit(limit)
                .offset(offset)
                .select(CoeRow::as_select())
                .load(conn)?;
            let page = rows
                .into_iter()
                .map(|r| summary(r, None))
                .collect::<QueryResult<_>>()?;
            Ok((page, total))
        }
        Some(hits) => {
            let rows: Vec<CoeRow> = filtered().select(CoeRow::as_select()).load(conn)?;
            let rank: BTreeMap<String, f64> = hits.iter().cloned().collect();
            let mut found: Vec<CoeSummary> = rows
                .into_iter()
                .map(|r| {
                    let score = rank.get(&r.id).copied();
                    summary(r, score)
                })
                .collect::<QueryResult<_>>()?;
            found.sort_by(|a, b| {
                b.rank
                    .partial_cmp(&a.rank)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| b.created_at.cmp(&a.created_at))
            });
            let total = i64::try_from(found.len()).unwrap_or(i64::MAX);
            let page = found
                .into_iter()
                .skip(usize::try_from(offset).unwrap_or(0))
                .take(usize::try_from(limit).unwrap_or(0))
                .collect();
            Ok((page, total))
        }
    }
}

/// The services COEs were opened for, in order (at most `limit`): what a filter offers.
pub fn services(conn: &mut DbConnection, limit: i64) -> QueryResult<Vec<String>> {
    coes::table
        .filter(coes::service.is_not_null())
        .select(coes::service.assume_not_null())
        .distinct()
        .order(coes::service.assume_not_null().asc())
        .limit(limit)
        .load(conn)
}

/// The section texts of each of `ids`, by COE, in the order of their keys: what a
/// search result quotes its passage from (one query for a page of results).
pub fn section_texts(
    conn: &mut DbConnection,
    ids: &[String],
) -> QueryResult<BTreeMap<String, Vec<String>>> {
    let rows: Vec<(String, String)> = coe_sections::table
        .filter(coe_sections::coe_id.eq_any(ids))
        .order((coe_sections::coe_id.asc(), coe_sections::key.asc()))
        .select((coe_sections::coe_id, coe_sections::body))
        .load(conn)?;
    let mut texts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, body) in rows {
        texts.entry(id).or_default().push(body);
    }
    Ok(texts)
}
