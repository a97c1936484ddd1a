//! One COE as a document: its sections with their guidance and completeness, the
//! timeline, 5 whys, actions, related items, recurrence and review, with what is
//! still missing listed at the top and linked to its section. Everything is edited in
//! place (`coe_forms`); every change names the version the page was loaded with, and
//! when someone saved first the page says who and keeps what the person typed.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Value};

use super::{as_person, render, see_other, PageError};
use crate::db::schema::coe_reads;
use crate::db::{self, DbConnection};
use crate::domain::coe::{CoeState, TimelineKind};
use crate::domain::rules::Finding;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
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

/// A link shown as a link only when it is http(s): anything else is shown as text.
pub(super) fn safe_href(url: Option<&str>) -> Option<String> {
    let parsed = url::Url::parse(url?).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| parsed.to_string())
}

/// A COE's related items as the pages show them: another COE links to its page, a URL
/// only when it is http(s); the label is the title, else the URL or the COE's id.
pub(super) fn related_links(doc: &CoeDocument) -> Vec<Value> {
    doc.related
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
            json!({"id": r.id, "kind": r.kind, "href": href, "label": label})
        })
        .collect()
}

/// What a page shows besides the document after a change that did not go through:
/// a notice, and per part of the page (a text section's key, or `timeline`,
/// `five_whys`, `related`, `actions`, `details`, `review`) the problems and what the
/// person typed.
#[derive(Default)]
pub(super) struct Kept {
    pub notice: Option<String>,
    pub texts: BTreeMap<String, String>,
    pub problems: BTreeMap<String, Vec<String>>,
    pub forms: BTreeMap<String, Value>,
    /// Text sections to show rendered, not saved (the preview button).
    pub previews: BTreeMap<String, String>,
}

/// What the page of a COE needs: the document and what the person may do with it.
pub(super) struct Loaded {
    pub doc: CoeDocument,
    pub history: Vec<HistoryEntry>,
    /// The open actions of the earlier COEs this one recurs, by COE id.
    earlier_open: BTreeMap<String, Vec<Value>>,
    may_edit: bool,
    /// For the reviewer: what others changed since their last look, and when that was.
    since_last_look: Option<(NaiveDateTime, Vec<HistoryEntry>)>,
}

/// Notes that `who` looked at the COE now; returns their previous look.
fn note_look(
    conn: &mut DbConnection,
    id: &str,
    who: &str,
    version: i32,
) -> QueryResult<Option<NaiveDateTime>> {
    let previous: Option<NaiveDateTime> = coe_reads::table
        .find((id, who))
        .select(coe_reads::read_at)
        .first(conn)
        .optional()?;
    let now = db::now();
    if previous.is_some() {
        diesel::update(coe_reads::table.find((id, who)))
            .set((coe_reads::version.eq(version), coe_reads::read_at.eq(now)))
            .execute(conn)?;
    } else {
        crate::insert_or_ignore!(
            conn,
            diesel::insert_into(coe_reads::table).values((
                coe_reads::coe_id.eq(id),
                coe_reads::person_email.eq(who),
                coe_reads::version.eq(version),
                coe_reads::read_at.eq(now),
            )),
            (coe_reads::coe_id, coe_reads::person_email)
        )?;
    }
    Ok(previous)
}

/// The document, its history, and whether `who` may change it (the services'
/// access rule, asked, not copied). A reviewer's look is remembered.
pub(super) async fn load(
    state: &web::Data<AppState>,
    id: &str,
    who: &SignedIn,
    remember_look: bool,
) -> Result<Loaded, PageError> {
    let key = id.to_owned();
    as_person(state, who, move |conn, state, editor| {
        let doc = match coes::load(conn, &key, &state.settings) {
            Ok(doc) => doc,
            Err(CoeError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let may_edit = access::coe(conn, &key, editor).is_ok();
        let history = coes::history(conn, &key)?;
        let clock = state.settings.clock();
        let mut earlier_open = BTreeMap::new();
        for earlier in doc
            .recurrence
            .iter()
            .filter(|r| r.open_actions > 0)
            .take(10)
        {
            let open: Vec<Value> = crate::services::actions::for_coe(conn, &earlier.coe_id, clock)?
                .into_iter()
                .filter(|a| {
                    matches!(
                        a.state,
                        crate::domain::action::ActionState::Open
                            | crate::domain::action::ActionState::InProgress
                    )
                })
                .map(|a| {
                    json!({"id": a.id, "title": a.title, "owner": a.owner,
                                "due_date": a.due_date, "overdue": a.overdue,
                                "days_overdue": a.days_overdue})
                })
                .collect();
            earlier_open.insert(earlier.coe_id.clone(), open);
        }
        let me = editor.actor;
        let since_last_look = if remember_look && doc.reviewer.as_deref() == Some(me) {
            note_look(conn, &key, me, doc.version)
                .map_err(ApiError::from)?
                .map(|seen| {
                    let changes = history
                        .iter()
                        .filter(|h| h.at > seen && h.actor != me)
                        .cloned()
                        .collect();
                    (seen, changes)
                })
        } else {
            None
        };
        Ok(Some(Loaded {
            doc,
            history,
            earlier_open,
            may_edit,
            since_last_look,
        }))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no COE {id}")))
}

/// What an audit action (`section:impact`, `timeline:add`) means, in words.
pub(super) fn change_words(action: &str, titles: &[SectionView]) -> String {
    let (what, detail) = action.split_once(':').unwrap_or((action, ""));
    let section = |key: &str| {
        titles
            .iter()
            .find(|s| s.key == key)
            .map_or_else(|| key.to_owned(), |s| s.title.clone())
    };
    match (what, detail) {
        ("section", key) => format!("wrote {}", section(key)),
        ("timeline", "add") => "added a timeline entry".into(),
        ("timeline", "edit") => "changed a timeline entry".into(),
        ("timeline", "delete") => "deleted a timeline entry".into(),
        ("five_whys", "add") => "added a 5-whys chain".into(),
        ("five_whys", "edit") => "changed a 5-whys chain".into(),
        ("five_whys", _) => "deleted a 5-whys chain".into(),
        ("update", _) => "changed its title, owner, reviewer, severity or service".into(),
        ("opened", _) => "opened it".into(),
        ("related", "add") => "linked a related item".into(),
        ("related", _) => "removed a related item".into(),
        ("state", to) => format!("moved it to {}", to.replace('_', " ")),
        _ => action.replace([':', '_'], " "),
    }
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

/// An entry's time as a `datetime-local` field holds it (UTC).
fn local_input(at: &NaiveDateTime) -> String {
    at.format("%Y-%m-%dT%H:%M").to_string()
}

pub(super) fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    loaded: Loaded,
    kept: Kept,
) -> Result<HttpResponse, PageError> {
    let Loaded {
        doc,
        history,
        earlier_open,
        may_edit,
        since_last_look,
    } = loaded;
    let related = related_links(&doc);
    let may_write = may_edit && doc.state.is_editable();
    let may_add_actions = may_edit && doc.state != CoeState::Closed;
    let me = who.person.email.as_str();
    // Only the reviewer decides; they may not approve what they own, submitted or
    // named themselves reviewer of (`domain::coe::review` refuses it anyway).
    let is_reviewer = doc.reviewer.as_deref() == Some(me);
    let may_approve = is_reviewer
        && ![&doc.owner, &doc.submitted_by, &doc.reviewer_named_by]
            .iter()
            .any(|p| p.as_deref() == Some(me));
    let changed_keys: Vec<String> = since_last_look
        .as_ref()
        .map(|(_, changes)| {
            changes
                .iter()
                .filter_map(|h| h.action.strip_prefix("section:").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let sections: Vec<Value> = doc
        .sections
        .iter()
        .map(|s| {
            let kind = serde_json::to_value(s.kind).unwrap_or_default();
            let part = kind.as_str().unwrap_or_default();
            let mut v = serde_json::to_value(s).unwrap_or_default();
            v["text"] = json!(kept.texts.get(&s.key).unwrap_or(&s.body));
            v["preview"] = json!(kept.previews.get(&s.key));
            let problems = kept.problems.get(&s.key).or(kept.problems.get(part));
            v["save_problems"] = json!(problems);
            v["form"] = kept.forms.get(part).cloned().unwrap_or_else(|| json!({}));
            v["changed"] = json!(changed_keys.contains(&s.key));
            v
        })
        .collect();
    let timeline: Vec<Value> = doc
        .timeline
        .iter()
        .map(|t| {
            let mut v = serde_json::to_value(t).unwrap_or_default();
            v["at_input"] = json!(local_input(&t.at));
            v
        })
        .collect();
    let whys: Vec<Value> = doc
        .five_whys
        .iter()
        .enumerate()
        .map(|(i, chain)| json!({"id": chain.id, "number": i + 1, "steps": chain.steps}))
        .collect();
    let kinds: Vec<Value> = TimelineKind::ALL
        .iter()
        .map(|k| json!({"value": k.as_str(), "milestone": k.is_milestone()}))
        .collect();
    let last_look = since_last_look.map(|(seen, changes)| {
        let lines: Vec<Value> = changes
            .iter()
            .map(|h| {
                json!({"at": crate::json::format_utc(&h.at), "actor": h.actor,
                       "what": change_words(&h.action, &doc.sections)})
            })
            .collect();
        json!({"seen": crate::json::format_utc(&seen), "changes": lines})
    });
    let data = json!({
        "state": doc.state.as_str().replace('_', " "),
        "is_draft": doc.state == CoeState::Draft,
        "in_review": doc.state == CoeState::InReview,
        "may_edit": may_write,
        "may_add_actions": may_add_actions,
        "may_review": is_reviewer && doc.state == CoeState::InReview,
        "may_approve": may_approve,
        "may_submit": may_write && doc.state == CoeState::Draft,
        "missing": findings(&doc.completeness.missing, &doc.sections),
        "warnings": findings(&doc.completeness.warnings, &doc.sections),
        "related": related,
        "sections": sections,
        "timeline": timeline,
        "whys": whys,
        "timeline_kinds": kinds,
        "related_kinds": crate::domain::coe::RelatedKind::ALL.map(|k| k.as_str()),
        "severities": crate::domain::Severity::ALL.map(|s| s.to_string()),
        "priorities": ["high", "medium", "low"],
        "action_kinds": ["detect", "diagnose", "mitigate", "prevent", "process"],
        "why_rows": [1, 2, 3, 4, 5],
        "notice": kept.notice,
        "problems": kept.problems,
        "forms": kept.forms,
        "last_look": last_look,
        "changes": history.len(),
        "earlier_open": earlier_open,
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
    let loaded = load(&state, &path, &who, true).await?;
    page(&state, &who, StatusCode::OK, loaded, Kept::default())
}

/// The answer to a change of COE `id` made from the part `part` of its page:
/// back to that part when it worked; otherwise the page again, with the problems
/// next to the part and what the person typed (`kept`), or — when someone saved
/// first — a notice saying who.
pub(super) async fn answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    part: &str,
    result: Result<(), CoeError>,
    mut kept: Kept,
) -> Result<HttpResponse, PageError> {
    let status = match result {
        Ok(()) => {
            let anchor = if matches!(part, "timeline" | "five_whys" | "related" | "actions") {
                format!("part-{part}")
            } else {
                part.to_owned()
            };
            return Ok(see_other(&format!("/coes/{id}#{anchor}")));
        }
        Err(CoeError::Stale { expected, current }) => {
            let loaded = load(state, id, who, false).await?;
            let count = usize::try_from(current - expected).unwrap_or(1);
            kept.notice = Some(format!(
                "Someone saved this COE after you opened it (version {expected} → {current}): {}. \
                 What you typed is kept below, not saved; compare it with theirs and save again.",
                changed_by(&loaded.history, count, &loaded.doc.sections)
            ));
            return page(state, who, StatusCode::CONFLICT, loaded, kept);
        }
        Err(CoeError::Invalid(problems)) => {
            kept.problems.insert(
                part.to_owned(),
                problems
                    .into_iter()
                    .map(|(field, p)| format!("{}: {p}", field.replace('_', " ")))
                    .collect(),
            );
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(CoeError::NotFound(_)) => {
            return Err(PageError::NotFound(format!("there is no COE {id}")));
        }
        Err(CoeError::Forbidden(m)) => return Err(PageError::Forbidden(m)),
        Err(e @ CoeError::NotEditable { .. }) | Err(e @ CoeError::Conflict(_)) => {
            kept.problems.insert(part.to_owned(), vec![e.to_string()]);
            StatusCode::CONFLICT
        }
        Err(e) => return Err(ApiError::from(e).into()),
    };
    let loaded = load(state, id, who, false).await?;
    page(state, who, status, loaded, kept)
}

/// Runs a change of a COE as the signed-in person.
pub(super) async fn change(
    state: &web::Data<AppState>,
    who: &SignedIn,
    work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<(), CoeError>
        + Send
        + 'static,
) -> Result<Result<(), CoeError>, PageError> {
    as_person(state, who, move |conn, state, editor| {
        Ok(work(conn, state, editor))
    })
    .await
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
