//! Incidents: the list with filters, one incident with its alerts collapsed, and
//! opening a COE for it by hand.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::safe_href;
use super::kit::{render, Page, State};
use super::outcome::{as_service, see_other, write_as_person};
use super::query::{filled, pages, word};
use crate::domain::incident::IncidentState;
use crate::domain::timeline::{self, EventFacts};
use crate::domain::Severity;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::services::coes::{self, CoeError, NewCoe};
use crate::services::incidents::{self, Event, IncidentFilter};

const PAGE: i64 = 50;

/// How many of an incident's events its page collapses.
const COLLAPSED: i64 = 500;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    min_severity: Option<String>,
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    offset: Option<i64>,
}

/// `GET /incidents`.
pub async fn list(who: SignedIn, query: web::Query<ListQuery>, state: State) -> Page {
    let q = query.into_inner();
    let status = word::<IncidentState>(&q.status, "incident state", "open or resolved")?;
    let min_severity = word::<Severity>(&q.min_severity, "severity", "sev1 to sev5")?;
    let offset = q.offset.unwrap_or(0).max(0);
    let filter = IncidentFilter {
        state: status,
        min_severity,
        service: filled(&q.service),
        ..IncidentFilter::default()
    };
    let (found, total, coes) = as_service(&state, move |conn, _| {
        let (found, total) = incidents::list(conn, &filter, PAGE, offset)?;
        let ids: Vec<String> = found.iter().map(|i| i.id.clone()).collect();
        let coes = incidents::coes_of(conn, &ids)?;
        Ok((found, total, coes))
    })
    .await?;
    // Each incident with its COE, and the COE's state, where it has one.
    let found: Vec<Value> = found
        .into_iter()
        .map(|incident| {
            let coe = coes
                .get(&incident.id)
                .map(|(id, state)| json!({"id": id, "state": state}));
            let mut v = json!(incident);
            v["coe"] = json!(coe);
            v
        })
        .collect();
    let here = |offset: i64| {
        let mut params = vec![];
        for (k, v) in [
            ("status", &q.status),
            ("min_severity", &q.min_severity),
            ("service", &q.service),
        ] {
            if let Some(v) = filled(v) {
                params.push((k, v));
            }
        }
        params.push(("offset", offset.to_string()));
        format!(
            "/incidents?{}",
            serde_urlencoded::to_string(params).unwrap_or_default()
        )
    };
    let (previous, next) = pages(offset, PAGE, total, here);
    render(
        &state,
        Some(&who),
        StatusCode::OK,
        "incidents",
        json!({
            "incidents": found,
            "total": total,
            "filter": {"status": filled(&q.status), "min_severity": filled(&q.min_severity), "service": filled(&q.service)},
            "severities": Severity::ALL.map(|s| s.to_string()),
            "previous": previous,
            "next": next,
        }),
    )
}

fn facts(event: &Event) -> EventFacts {
    let at = match event.kind.as_str() {
        "resolved" => event.ended_at.unwrap_or(event.received_at),
        "fired" => event.started_at,
        _ => event.received_at,
    };
    let labels: &BTreeMap<String, String> = &event.labels;
    EventFacts {
        event_id: event.id.clone(),
        kind: event.kind.as_str().to_owned(),
        title: event.title.clone(),
        name: timeline::alert_name(&event.title, labels).to_owned(),
        host: timeline::host(labels, &event.dedup_key),
        at,
    }
}

/// How many distinct alerts the incident page shows the labels and annotations of.
const ALERTS_DESCRIBED: usize = 20;

/// What each alert said of itself, one entry per alert name, first seen first (an
/// alert storm of twenty `HighErrorRate`s is one entry naming its twenty instances,
/// not twenty entries of the same name): its summary and description, its links
/// (runbook, dashboard, the generator's URL; only http(s) ones are links), the labels
/// all its instances share, and for each instance the labels that set it apart.
fn alert_context(events: &[Event]) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    let mut groups: Vec<(String, Vec<&Event>)> = Vec::new();
    for e in events.iter().filter(|e| seen.insert(e.dedup_key.clone())) {
        let name = timeline::alert_name(&e.title, &e.labels);
        if let Some((_, instances)) = groups.iter_mut().find(|(n, _)| *n == name) {
            instances.push(e);
        } else if groups.len() < ALERTS_DESCRIBED {
            groups.push((name.to_owned(), vec![e]));
        }
    }
    groups
        .into_iter()
        .map(|(name, instances)| {
            let first = instances[0];
            let shared =
                |k: &String, v: &String| instances.iter().all(|i| i.labels.get(k) == Some(v));
            let labels: Vec<Value> = first
                .labels
                .iter()
                .filter(|(k, v)| shared(k, v))
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect();
            let apart: Vec<String> = if instances.len() > 1 {
                instances
                    .iter()
                    .map(|i| {
                        i.labels
                            .iter()
                            .filter(|(k, v)| !shared(k, v))
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let annotations: Vec<Value> = first
                .annotations
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "summary" | "description"))
                .map(|(k, v)| json!({"name": k, "value": v, "href": safe_href(Some(v))}))
                .collect();
            let links: Vec<String> = first
                .links
                .iter()
                .filter_map(|l| safe_href(Some(l)))
                .collect();
            json!({
                "name": name,
                "count": instances.len(),
                "instances": apart,
                "summary": first.annotations.get("summary"),
                "description": first.annotations.get("description").or(first.description.as_ref()),
                "labels": labels,
                "annotations": annotations,
                "links": links,
            })
        })
        .collect()
}

/// `GET /incidents/{id}`.
pub async fn show(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let key = id.clone();
    let found = as_service(&state, move |conn, _| {
        let Some(detail) = incidents::get(conn, &key)? else {
            return Ok(None);
        };
        let events = incidents::events(conn, &key, COLLAPSED, 0)?
            .map(|(events, _)| events)
            .unwrap_or_default();
        let coe = incidents::coe_of(conn, &key)?;
        Ok(Some((detail, events, coe)))
    })
    .await?;
    let (detail, events, coe_id) =
        found.ok_or_else(|| PageError::NotFound(format!("there is no incident {id}")))?;
    let all: Vec<EventFacts> = events.iter().map(facts).collect();
    let said = alert_context(&events);
    let alerts: Vec<_> = timeline::collapse(&all)
        .into_iter()
        .map(|c| {
            json!({
                "first": crate::json::format_utc(&c.tally.first),
                "last": crate::json::format_utc(&c.tally.last),
                "text": c.tally.text(),
            })
        })
        .collect();
    let shown = all.len();
    render(
        &state,
        Some(&who),
        StatusCode::OK,
        "incident",
        json!({
            "incident": detail.incident,
            "reported_by": detail.reported_by,
            "alerts": alerts,
            "said": said,
            "coe_id": coe_id,
            "shown": shown,
            "more": i64::from(detail.incident.event_count) > i64::try_from(shown).unwrap_or(0),
        }),
    )
}

/// `POST /incidents/{id}/coe`: opens its COE by hand (or goes to the one it has).
pub async fn open_coe(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let key = path.into_inner();
    let opened = write_as_person(&state, &form.who, move |conn, state, me| {
        if incidents::get(conn, &key)?.is_none() {
            return Err(ApiError::NotFound(format!("there is no incident {key}")));
        }
        let input = NewCoe {
            incident_id: Some(key.clone()),
            title: None,
            service: None,
            severity: None,
            owner: None,
        };
        match coes::create(conn, input, me.actor, &state.env()) {
            Ok(id) => Ok(id),
            // It has one already: go there.
            Err(CoeError::Conflict(m)) => {
                incidents::coe_of(conn, &key)?.ok_or(ApiError::Conflict {
                    message: m,
                    fields: Vec::new(),
                })
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    Ok(see_other(&format!("/coes/{opened}")))
}
