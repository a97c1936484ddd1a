//! How a COE page answers its forms: a change that went through lands back on the
//! part of the page it came from; one that did not — and a preview — is kept for the
//! person (`forms::keep`) and shown by the `GET` its `303` leads to, with the problems
//! at their part, what was typed, or a notice naming who saved first.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::coes::{change_words, load, section_of};
use super::{see_other, Outcome, Page, PageError};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::coes::{HistoryEntry, SectionConflict, SectionView};
use crate::services::forms;

/// What a page shows besides the document after a change that did not go through
/// (kept between the POST and the GET after it, `forms::keep`): a notice, and per part
/// of the page (a text section's key, or `timeline`, `five_whys`, `related`, `actions`,
/// `details`, `review`) the problems and what the person typed.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Kept {
    pub notice: Option<String>,
    pub texts: BTreeMap<String, String>,
    pub problems: BTreeMap<String, Vec<String>>,
    pub forms: BTreeMap<String, Value>,
    /// Text sections to show rendered, not saved (the preview button).
    pub previews: BTreeMap<String, String>,
    /// Text sections someone else saved meanwhile: their text beside what was typed.
    pub conflicts: BTreeMap<String, SectionConflict>,
    /// The revision each typed section is based on, where it is not the one stored
    /// (what was typed before a preview; theirs after a conflict, to save the merge).
    pub seen: BTreeMap<String, String>,
    /// The sections saved by the same save.
    pub saved: Vec<String>,
}

/// Who changed the COE lately, in words: "ana@example.com wrote Impact at 10:03 UTC".
fn changed_by(history: &[HistoryEntry], count: usize, titles: &[SectionView]) -> String {
    let recent: Vec<String> = history
        .iter()
        .rev()
        .take(count.max(1))
        .map(|h| {
            format!(
                "{} {} at {}",
                h.actor,
                change_words(&h.action, titles),
                h.at.format("%H:%M UTC")
            )
        })
        .collect();
    recent.join("; ")
}

/// Keeps `kept` for the person and answers with a `303` to the COE's page showing it
/// (with `status`), at `anchor`: a form that did not go through, and a preview, are
/// answered like one that did, so Back and reload never post it again.
pub(super) async fn keep(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    status: StatusCode,
    kept: &Kept,
    anchor: &str,
) -> Page {
    let body = serde_json::to_value(kept).map_err(|e| PageError::Internal(e.to_string()))?;
    let (person, coe) = (who.person.email.as_str().to_owned(), id.to_owned());
    let kept_id = super::as_service(state, move |conn, _| {
        Ok(forms::keep(conn, &person, &coe, status.as_u16(), &body)?)
    })
    .await?;
    Ok(see_other(&format!("/coes/{id}?kept={kept_id}#{anchor}")))
}

/// The part of the page (`anchor`) a form of part `part` is in.
pub(super) fn anchor_of(part: &str) -> String {
    if matches!(part, "timeline" | "five_whys" | "related" | "actions") {
        format!("part-{part}")
    } else {
        part.to_owned()
    }
}

/// The answer to a change of COE `id` made from the part `part` of its page: back
/// to that part when it worked; otherwise (through `keep`) the page again, with the
/// problems next to the part and what the person typed (`kept`), or — when someone
/// saved first — a notice saying who.
pub(super) async fn answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    part: &str,
    outcome: Outcome,
    mut kept: Kept,
) -> Page {
    let anchor = anchor_of(part);
    outcome
        .answer(&format!("/coes/{id}#{anchor}"), |again| async move {
            if let Some((expected, current)) = again.stale {
                let loaded = load(state, id, who, false).await?;
                let count = usize::try_from(current - expected).unwrap_or(1);
                kept.notice = Some(format!(
                    "Someone saved this COE after you opened it (version {expected} → {current}): {}. \
                     What you typed is kept below, not saved; compare it with theirs and save again.",
                    changed_by(&loaded.history, count, &loaded.doc.sections)
                ));
            } else if part == "review" && !again.fields.is_empty() {
                // What a submit lacks, named as the checklist names the sections.
                let loaded = load(state, id, who, false).await?;
                let named = again
                    .fields
                    .iter()
                    .map(|(field, problem)| {
                        let title = loaded
                            .doc
                            .sections
                            .iter()
                            .find(|s| s.key == section_of(field))
                            .map_or_else(|| field.replace('_', " "), |s| s.title.clone());
                        format!("{title}: {problem}")
                    })
                    .collect();
                kept.problems.insert(part.to_owned(), named);
            } else {
                kept.problems.insert(part.to_owned(), again.problems);
            }
            keep(state, who, id, again.status, &kept, &anchor).await
        })
        .await
}
