//! The page of one timeline entry (`/coes/{id}/timeline/{entry}`): the form that
//! changes or deletes it, on a page of its own so that a COE with a hundred entries
//! does not carry a hundred forms; and how a timeline form's fields read.

use actix_web::http::StatusCode;
use actix_web::web;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::CoeForm;
use super::guard::Fields;
use super::kit::{Page, State};
use super::outcome::change;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::coe::coes::{self as service, TimelineInput};

/// A timeline entry from the form: a `datetime-local` time is UTC.
pub(super) fn timeline_input(form: &Fields, zone: chrono_tz::Tz) -> TimelineInput {
    // Typed in the person's time zone (the field's label names it).
    let at = super::kit::from_local_input(form.text("at").trim(), zone);
    TimelineInput {
        at,
        kind: form.text("kind"),
        text: form.text("text"),
    }
}

/// Refuses, saying what would move and how to go on, when `moves` is not empty.
pub(super) fn refuse_unasked_moves(
    moves: Vec<service::MilestoneMove>,
    zone: chrono_tz::Tz,
) -> Result<(), crate::services::coe::coes::CoeError> {
    if moves.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = moves.iter().map(|m| m.sentence(zone)).collect();
    Err(crate::services::coe::coes::CoeError::Invalid(vec![(
        String::new(),
        format!(
            "{} Nothing is saved yet: tick “Yes, change the COE's time” to save it so, or make it \
             a note to keep the times as they are.",
            said.join(" ")
        ),
    )]))
}

/// The kinds a timeline form offers, in words: a note first, then what happened, then
/// the milestones (which set the COE's own times) in a group of their own.
pub(super) fn kind_options() -> Vec<Value> {
    crate::domain::coe::TimelineKind::OFFERED
        .iter()
        .map(|k| json!({"value": k.as_str(), "label": k.words(), "milestone": k.is_milestone()}))
        .collect()
}

/// `GET /coes/{id}/timeline/{entry}`: the form that changes or deletes one entry (a
/// page of its own, so that a COE with a hundred entries does not carry a hundred
/// forms).
pub async fn timeline_entry(
    who: SignedIn,
    path: web::Path<(String, String)>,
    query: web::Query<KeptQuery>,
    state: State,
) -> Page {
    let (id, entry_id) = path.into_inner();
    let page = format!("/coes/{id}/timeline/{entry_id}");
    let kept = super::outcome::kept_form(&state, &who, &page, query.into_inner().kept).await?;
    let (status, typed, problems) = match kept {
        Some((status, body)) => (
            status,
            Some(body["typed"].clone()),
            serde_json::from_value(body["problems"].clone()).unwrap_or_default(),
        ),
        None => (StatusCode::OK, None, Vec::new()),
    };
    entry_page(&state, &who, &id, &entry_id, status, typed, problems).await
}

/// What a page's address may carry: a form that did not go through, kept.
#[derive(Debug, serde::Deserialize)]
pub struct KeptQuery {
    kept: Option<String>,
}

/// The page of one timeline entry: as it is, or as `typed` with `problems`.
async fn entry_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    entry_id: &str,
    status: StatusCode,
    typed: Option<Value>,
    problems: Vec<String>,
) -> Page {
    let loaded = super::coe_load::load(state, id, who, false).await?;
    let doc = &loaded.doc;
    let entry = doc
        .timeline
        .iter()
        .find(|t| t.id == entry_id)
        .ok_or_else(|| PageError::NotFound(format!("the COE has no timeline entry {entry_id}")))?;
    let kinds = kind_options();
    let zone = super::kit::zone_of(state, Some(who));
    let shown = super::kit::local_input(&entry.at, zone);
    let stored = crate::json::format_utc(&entry.at);
    let mut entry =
        typed.unwrap_or_else(|| json!({"kind": entry.kind, "text": entry.text, "at": shown}));
    entry["at_shown"] = json!(shown);
    entry["at_was"] = json!(stored);
    entry["milestone"] = json!(entry["kind"]
        .as_str()
        .and_then(crate::domain::coe::TimelineKind::parse)
        .is_some_and(crate::domain::coe::TimelineKind::is_milestone));
    let data = json!({
        "coe": {"id": doc.id, "title": doc.title, "version": doc.version},
        "entry_id": entry_id,
        "entry": entry,
        "kinds": kinds,
        "problems": problems,
    });
    super::kit::render(state, Some(who), status, "timeline_entry", data)
}

/// `POST /coes/{id}/timeline/{entry}`: changes an entry, or deletes it (the delete
/// button). When it does not go through, the entry's page again with what was typed.
pub async fn edit_timeline(form: CoeForm) -> Page {
    let CoeForm {
        who,
        state,
        id,
        item: entry,
        fields,
    } = form;
    let (coe_id, entry_id) = (id.clone(), entry.clone());
    let zone = super::kit::zone_of(&state, Some(&who));
    let (mut input, version) = (timeline_input(&fields, zone), fields.version());
    // Left as shown, the time stays as it is stored (a time of the hour a clock
    // repeats reads the same twice).
    if fields.text("at").trim() == fields.text("at_shown") {
        if let Some(stored) = fields.filled("at_was") {
            input.at = stored;
        }
    }
    let delete = fields.filled("delete").is_some();
    let may_move = fields.filled("move").is_some();
    let outcome = change(&state, &who, move |conn, state, editor| {
        if !delete && !may_move {
            refuse_unasked_moves(
                service::milestone_moves(conn, &coe_id, &input, Some(&entry_id))?,
                zone,
            )?;
        }
        if delete {
            service::delete_timeline(conn, &coe_id, &entry_id, version, editor, state.env())
        } else {
            service::edit_timeline(
                conn,
                &coe_id,
                &entry_id,
                &input,
                version,
                editor,
                state.env(),
            )
        }
    })
    .await?;
    outcome
        .answer(&format!("/coes/{id}#part-timeline"), |again| {
            let mut problems = again.problems;
            if let Some((expected, current)) = again.stale {
                problems.push(format!(
                    "Someone saved this COE after you opened it (version {expected} → {current}); \
                     what you typed is kept below, not saved: check the entry and save again."
                ));
            }
            let typed = json!({"kind": fields.text("kind"), "text": fields.text("text"),
                               "at": fields.text("at")});
            let page = format!("/coes/{id}/timeline/{entry}");
            let body = json!({"typed": typed, "problems": problems});
            async move {
                let kept =
                    super::outcome::keep_form(&state, &who, &page, again.status, body).await?;
                Ok(super::outcome::see_other(&format!("{page}?kept={kept}")))
            }
        })
        .await
}
