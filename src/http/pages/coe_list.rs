//! Every COE, as a table: filtered by state, service, severity and team, sorted,
//! a page at a time, with the filters in the address (a list a leader can share).

use actix_web::http::StatusCode;
use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::kit::{render, Page, State};
use super::outcome::as_service;
use super::query::{filled, pages_at, word, CoeFilters};
use crate::domain::coe::CoeState;
use crate::domain::Severity;
use crate::http::session::SignedIn;
use crate::services::coe::coes::{self, CoeFilter, CoeSort};

/// COEs per page.
const PAGE: i64 = 50;

/// How many services and teams the filters offer.
const OFFERED: i64 = 500;

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct ListQuery {
    #[serde(flatten)]
    filters: CoeFilters,
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    offset: Option<i64>,
}

/// `GET /coes`.
pub async fn list(who: SignedIn, query: web::Query<ListQuery>, state: State) -> Page {
    let q = query.into_inner();
    let filter = CoeFilter {
        team: filled(&q.team),
        sort: word::<CoeSort>(&q.sort, "order", "newest, oldest, updated or severity")?
            .unwrap_or_default(),
        ..q.filters.filter()?
    };
    let offset = q.offset.unwrap_or(0).max(0);
    let (found, total, services, teams, names) = as_service(&state, move |conn, _| {
        let (found, total) = coes::list(conn, &filter, PAGE, offset)?;
        let owners: Vec<String> = found.iter().filter_map(|c| c.owner.clone()).collect();
        Ok((
            found,
            total,
            coes::services(conn, OFFERED)?,
            crate::services::directory::people::teams(conn)?,
            crate::services::directory::people::names_of(conn, &owners)?,
        ))
    })
    .await?;
    let names = super::kit::names_data(&names);
    let at = |q: &mut ListQuery, offset| q.offset = Some(offset);
    let (previous, next) = pages_at("/coes", &q, at, (offset, PAGE, total));
    let data = json!({
        "query": q,
        "coes": found,
        "total": total,
        "first": offset + 1,
        "last": offset + i64::try_from(found.len()).unwrap_or(0),
        "states": CoeState::ALL.map(|s| s.as_str()),
        "severities": Severity::ALL.map(|s| s.to_string()),
        "sorts": CoeSort::ALL.map(|s| s.as_str()),
        "services": services,
        "teams": teams,
        "names": names,
        "previous": previous,
        "next": next,
    });
    render(&state, Some(&who), StatusCode::OK, "coe_list", data)
}
