//! One COE as a document: its sections with their guidance and completeness, the
//! timeline, 5 whys, actions, related items, recurrence and review, with what is
//! still missing listed at the top and linked to its section.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::{render, PageError};
use crate::domain::rules::Finding;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::coes::{self, CoeError, SectionView};

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

/// `GET /coes/{id}`.
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let id = path.into_inner();
    let key = id.clone();
    let doc = with_conn(&state, move |conn, state| {
        match coes::load(conn, &key, &state.settings) {
            Ok(doc) => Ok(Some(doc)),
            Err(CoeError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no COE {id}")))?;
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
    let data = json!({
        "state": doc.state.as_str().replace('_', " "),
        "missing": findings(&doc.completeness.missing, &doc.sections),
        "warnings": findings(&doc.completeness.warnings, &doc.sections),
        "related": related,
        "coe": doc,
    });
    render(&state, Some(&who), StatusCode::OK, "coe", data)
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
