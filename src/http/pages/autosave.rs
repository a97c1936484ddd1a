//! A draft's sections saved as they are typed (`POST /coes/{id}/sections/autosave`,
//! asked by the page's script a few seconds after typing stops, and as the page is
//! left): each section against the revision its writer started from, as the Save
//! button does, so that nothing of another tab or person is overwritten. Answers JSON
//! for the script: what was saved (with its new revision), what was not and why, and
//! what the COE still lacks. Without script, the Save buttons do the same.

use actix_web::HttpResponse;
use serde_json::{json, Value};

use super::coe_answer;
use super::coe_load::{findings, who_is_missing};
use super::guard::CoeForm;
use super::kit::Page;
use super::outcome::write_as_person;
use crate::services::coe::coes as service;

/// `POST /coes/{id}/sections/autosave`: the sections typed (`text:{key}` with
/// `seen:{key}`), those changed saved.
pub async fn autosave(form: CoeForm) -> Page {
    let edits: Vec<service::SectionEdit> = coe_answer::section_edits(&form.fields)
        .into_iter()
        .filter(coe_answer::changed)
        .collect();
    let coe = form.id.clone();
    let me = form.who.person.email.as_str().to_owned();
    let page_version = form.fields.version();
    let answer = write_as_person(&form.state, &form.who, move |conn, state, editor| {
        let before = service::version(conn, &coe)?;
        let saved = service::put_sections(conn, &coe, &edits, editor, &state.env())?;
        let doc = service::load(conn, &coe, state.env())?;
        // The page's version moves on with this save only when the page was at the
        // COE's version: a change by someone else since stays for its other forms
        // to notice.
        let version = (page_version == Some(before)).then_some(doc.version);
        let names = crate::services::directory::people::names_of(
            conn,
            &saved
                .conflicts
                .iter()
                .map(|c| c.by.clone())
                .collect::<Vec<_>>(),
        )?;
        let saved_now: Vec<Value> = saved
            .saved
            .iter()
            .filter_map(|key| edits.iter().find(|e| e.key == *key))
            .map(|e| json!({"key": e.key, "revision": service::revision(&e.body)}))
            .collect();
        let conflicts: Vec<Value> = saved
            .conflicts
            .iter()
            .map(|c| {
                let by = if c.by == me {
                    "you, from another tab".to_owned()
                } else if let Some(client) = c.by.strip_prefix("token:") {
                    format!("the API client “{client}”")
                } else {
                    super::kit::display_name(&names, &c.by)
                };
                json!({"key": c.key, "by": by})
            })
            .collect();
        let refused: Vec<Value> = saved
            .refused
            .iter()
            .map(|(key, problem)| json!({"key": key, "problem": problem}))
            .collect();
        let missing: Vec<Value> = who_is_missing(&doc)
            .into_iter()
            .chain(findings(&doc.completeness.missing, &doc.sections))
            .collect();
        // What the checks now say of each section written (as the page shows them).
        let problems: serde_json::Map<String, Value> = doc
            .sections
            .iter()
            .map(|s| {
                let said = json!({"problems": s.problems, "complete": s.complete,
                                  "required": s.required});
                (s.key.clone(), said)
            })
            .collect();
        Ok(json!({
            "version": version,
            "problems": problems,
            "saved": saved_now,
            "conflicts": conflicts,
            "refused": refused,
            "missing": missing,
        }))
    })
    .await?;
    Ok(HttpResponse::Ok().json(answer))
}
