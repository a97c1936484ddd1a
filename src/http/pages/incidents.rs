//! Incidents: the list with filters, one incident with its alerts collapsed, and
//! opening a COE for it by hand.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::{render, Page, State};
use super::outcome::{as_service, see_other, write_as_person};
use super::query::{filled, pages, word};
use crate::domain::incident::IncidentState;
use crate::domain::Severity;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::services::coe::coes::{self, CoeError, NewCoe};
use crate::services::incidents::retention;
use crate::services::incidents::{self, IncidentFilter};

const PAGE: i64 = 50;

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

/// `GET /incidents/{id}`.
pub async fn show(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let key = id.clone();
    let found = as_service(&state, move |conn, _| {
        let Some(detail) = incidents::get(conn, &key)? else {
            return Ok(None);
        };
        // What the page shows of the events: kept when they were dropped, else read.
        let digest = match retention::kept_digest(conn, &key)? {
            Some(digest) => digest,
            None => {
                let events = incidents::events(conn, &key, retention::COLLAPSED, 0)?
                    .map(|(events, _)| events)
                    .unwrap_or_default();
                retention::digest(&events)
            }
        };
        let coe = incidents::coe_of(conn, &key)?;
        Ok(Some((detail, digest, coe)))
    })
    .await?;
    let (detail, digest, coe_id) =
        found.ok_or_else(|| PageError::NotFound(format!("there is no incident {id}")))?;
    let shown = digest.shown;
    let policy = state.settings.incident_policy();
    let percent = crate::domain::distribution::percent;
    render(
        &state,
        Some(&who),
        StatusCode::OK,
        "incident",
        json!({
            "burned_percent": detail.incident.budget_burned.map(percent),
            "burned_too_much": policy.burned_too_much(detail.incident.budget_burned),
            "budget_share_percent": percent(policy.budget_share),
            "incident": detail.incident,
            "reported_by": detail.reported_by,
            "alerts": digest.alerts,
            "said": digest.said,
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
