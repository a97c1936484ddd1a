//! The admin page of the issue trackers (`[[trackers]]`): each one's health (what was
//! last sent to it and heard from it, its last error, statuses coe cannot read, what
//! waits), the webhook address to register there, and a check of the connection that
//! reads each project, team or repository and its statuses now.

use actix_web::http::StatusCode;
use actix_web::web;
use serde_json::{json, Value};

use super::admin::{page, AdminForm};
use super::guard::Admin;
use super::kit::{Page, State};
use super::outcome::as_service;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::coe::trackers::state::{self, Checked};

/// What coe does with a status that reads as `meaning`, in words.
fn in_words(meaning: Option<&str>) -> &'static str {
    match meaning {
        Some("open") => "open",
        Some("in_progress") => "in progress: starts the action",
        Some("done") => "done: asks the owner for the evidence",
        Some("wont_do") => "will not be done: asks the owner why",
        Some("ignore") => "left alone",
        _ => "coe cannot read it: say what it means in the settings (trackers.statuses)",
    }
}

/// The tracker just saved or removed in coe.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    saved: Option<String>,
    #[serde(default)]
    removed: Option<String>,
}

async fn show(
    state: &web::Data<AppState>,
    who: &SignedIn,
    checked: Option<(String, Vec<Checked>)>,
    query: ListQuery,
) -> Page {
    let trackers = as_service(state, |conn, state| Ok(state::statuses(conn, state.env())?)).await?;
    let checked = checked.map(|(name, places)| {
        let places: Vec<Value> = places
            .iter()
            .map(|c| {
                json!({
                    "place": c.place,
                    "ok": c.ok,
                    "error": c.error,
                    "statuses": c.statuses.iter().map(|(name, meaning)| json!({
                        "name": name,
                        "reads_as": in_words(*meaning),
                        "unmapped": meaning.is_none(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({"name": name, "ok": places.iter().all(|p| p["ok"] == true), "places": places})
    });
    let data = json!({"trackers": trackers, "checked": checked,
                      "saved": query.saved, "removed": query.removed,
                      "waiting": super::admin_connections::waiting(state, crate::services::connections::Kind::Tracker)});
    page(
        state,
        who,
        StatusCode::OK,
        "admin_trackers",
        "trackers",
        data,
    )
}

/// `GET /admin/trackers`.
pub async fn list(Admin(who): Admin, query: web::Query<ListQuery>, state: State) -> Page {
    show(&state, &who, None, query.into_inner()).await
}

/// `POST /admin/trackers/{name}/check`: reads the tracker's places and their
/// statuses now, and shows what came of it.
pub async fn check(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let name = path.into_inner();
    let asked = name.clone();
    let Some(tracker) = state
        .env()
        .connections
        .trackers
        .iter()
        .find(|t| t.name == asked)
    else {
        return Err(
            crate::error::ApiError::NotFound(format!("there is no tracker {asked}")).into(),
        );
    };
    // The tracker is asked with no database connection held.
    let tracker = tracker.clone();
    let (checked, tracker) = web::block(move || (state::check(&tracker), tracker))
        .await
        .map_err(crate::error::ApiError::from)?;
    let checked = as_service(&state, move |conn, _| {
        state::record_check(conn, &tracker, &checked)?;
        Ok(checked)
    })
    .await?;
    show(
        &state,
        &form.who.0,
        Some((name, checked)),
        ListQuery::default(),
    )
    .await
}
