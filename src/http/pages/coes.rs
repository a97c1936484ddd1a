//! One COE as a document: its sections with their guidance and completeness, the
//! timeline, 5 whys, actions, related items, recurrence and review, with what is
//! still missing listed at the top and linked to its section. Its text sections are
//! edited in place; a save names the version the page was loaded with, and when
//! someone saved first the page says who and keeps what the person typed.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{render, PageError};
use crate::domain::coe::CoeState;
use crate::domain::rules::Finding;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::access::{self, Editor};
use crate::services::coes::{self, CoeDocument, CoeError, HistoryEntry, SectionView};

/// The section a finding is about: `five_whys[1].steps[0]` is in `five_whys`.
fn section_of(at: &str) -> &str {
    at.split(['[', '.']).next().unwrap_or(at)
}

/// Findings with the section they are about, named as the template names it.
fn findings(list: &[Finding], sections: &[SectionView]) -> Vec<Value> {
    list.iter()
        .map(|f| {
            let section = section_of(&f.at);
            let name = sections
                .iter()
                .find(|s| s.key == section)
                .map_or(f.at.as_str(), |s| s.title.as_str());
            json!({"at": name, "problem": f.problem, "section": section})
        })
        .collect()
}

/// A related item's link, only when it is http(s): anything else is shown as text.
fn safe_href(url: Option<&str>) -> Option<String> {
    let parsed = url::Url::parse(url?).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| parsed.to_string())
}

/// What a page shows besides the document: a notice, and text a person typed that
/// was not saved (by section key), with the problem it had.
#[derive(Default)]
struct Kept {
    notice: Option<String>,
    texts: BTreeMap<String, String>,
    problems: BTreeMap<String, String>,
}

/// The document, its history, and whether `who` may change it (the services'
/// access rule, asked, not copied).
async fn load(
    state: &web::Data<AppState>,
    id: &str,
    who: &SignedIn,
) -> Result<(CoeDocument, Vec<HistoryEntry>, bool), PageError> {
    let key = id.to_owned();
    let (email, is_admin) = (who.person.email.clone(), who.person.is_admin);
    with_conn(state, move |conn, state| {
        let doc = match coes::load(conn, &key, &state.settings) {
            Ok(doc) => doc,
            Err(CoeError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let editor = Editor {
            actor: &email,
            email: Some(&email),
            is_admin,
        };
        let may_edit = access::coe(conn, &key, &editor).is_ok();
        Ok(Some((doc, coes::history(conn, &key)?, may_edit)))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no COE {id}")))
}

fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    (doc, may_edit): (CoeDocument, bool),
    kept: Kept,
) -> Result<HttpResponse, PageError> {
    let related: Vec<Value> = doc
        .related
        .iter()
        .map(|r| {
            let href = match (&r.coe_id, r.url.as_deref()) {
                (Some(coe), _) => Some(format!("/coes/{coe}")),
                (None, url) => safe_href(url),
            };
            let label = r
                .title
                .clone()
                .or_else(|| r.url.clone())
                .or_else(|| r.coe_id.clone())
                .unwrap_or_default();
            json!({"kind": r.kind, "href": href, "label": label})
        })
        .collect();
    let may_edit = may_edit && doc.state == CoeState::Draft;
    let sections: Vec<Value> = doc
        .sections
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).unwrap_or_default();
            v["text"] = json!(kept.texts.get(&s.key).unwrap_or(&s.body));
            v["save_problem"] = json!(kept.problems.get(&s.key));
            v
        })
        .collect();
    let data = json!({
        "state": doc.state.as_str().replace('_', " "),
        "may_edit": may_edit,
        "missing": findings(&doc.completeness.missing, &doc.sections),
        "warnings": findings(&doc.completeness.warnings, &doc.sections),
        "related": related,
        "sections": sections,
        "notice": kept.notice,
        "coe": doc,
    });
    render(state, Some(who), status, "coe", data)
}

/// `GET /coes/{id}`.
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let (doc, _, may_edit) = load(&state, &path, &who).await?;
    page(
        &state,
        &who,
        StatusCode::OK,
        (doc, may_edit),
        Kept::default(),
    )
}

#[derive(Debug, Deserialize)]
pub struct SectionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: i32,
    #[serde(default)]
    body: String,
}

/// Who changed the COE after version `since`, in words: "ana@example.com (section
/// impact) and bo@example.com (timeline:add)".
fn changed_by(history: &[HistoryEntry], count: usize) -> String {
    let recent: Vec<String> = history
        .iter()
        .rev()
        .take(count.max(1))
        .map(|h| format!("{} ({} at {})", h.actor, h.action, h.at.format("%H:%M UTC")))
        .collect();
    recent.join(", ")
}

/// `POST /coes/{id}/sections/{key}`.
pub async fn save_section(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: web::Form<SectionForm>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    who.check_csrf(&form.csrf)?;
    let (id, key) = path.into_inner();
    let form = form.into_inner();
    let (coe_id, section, body, version) =
        (id.clone(), key.clone(), form.body.clone(), form.version);
    let (email, is_admin) = (who.person.email.clone(), who.person.is_admin);
    let saved = with_conn(&state, move |conn, state| {
        let editor = Editor {
            actor: &email,
            email: Some(&email),
            is_admin,
        };
        Ok(coes::put_section(
            conn,
            &coe_id,
            &section,
            &body,
            Some(version),
            &editor,
            &state.coe_context(),
        ))
    })
    .await?;
    let mut kept = Kept::default();
    let status = match saved {
        Ok(()) => {
            return Ok(HttpResponse::SeeOther()
                .insert_header(("location", format!("/coes/{id}#{key}")))
                .finish());
        }
        Err(CoeError::Stale { expected, current }) => {
            let (doc, history, may_edit) = load(&state, &id, &who).await?;
            let count = usize::try_from(current - expected).unwrap_or(1);
            kept.notice = Some(format!(
                "Someone saved this COE after you opened it (version {expected} → {current}): {}. \
                 Your text for this section is kept below, not saved; compare it with theirs and save again.",
                changed_by(&history, count)
            ));
            kept.texts.insert(key.clone(), form.body);
            return page(&state, &who, StatusCode::CONFLICT, (doc, may_edit), kept);
        }
        Err(CoeError::Invalid(problems)) => {
            let problem = problems
                .into_iter()
                .map(|(field, p)| format!("{field}: {p}"))
                .collect::<Vec<_>>()
                .join("; ");
            kept.problems.insert(key.clone(), problem);
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(CoeError::NotFound(_)) => {
            return Err(PageError::NotFound(format!("there is no COE {id}")));
        }
        Err(CoeError::Forbidden(m)) => return Err(PageError::Forbidden(m)),
        Err(e @ CoeError::NotEditable { .. }) => return Err(PageError::BadRequest(e.to_string())),
        Err(e) => return Err(crate::error::ApiError::from(e).into()),
    };
    kept.texts.insert(key, form.body);
    let (doc, _, may_edit) = load(&state, &id, &who).await?;
    page(&state, &who, status, (doc, may_edit), kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_link_to_their_section_and_only_web_links_are_links() {
        assert_eq!(section_of("five_whys[1].steps[0]"), "five_whys");
        assert_eq!(section_of("impact"), "impact");
        assert_eq!(safe_href(Some("javascript:alert(1)")), None);
        assert_eq!(safe_href(Some("data:text/html,x")), None);
        assert_eq!(
            safe_href(Some("https://example.com/a b")).as_deref(),
            Some("https://example.com/a%20b")
        );
    }
}
