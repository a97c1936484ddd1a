//! A COE as its pages load it (`load`: the document, its history, what the person may
//! do with it) and the small readings of it the COE's pages share.

use std::collections::BTreeMap;

use actix_web::web;
use chrono::NaiveDateTime;
use serde_json::{json, Value};

use super::error::PageError;
use super::kit::safe_href;
use super::outcome::as_person;
use crate::domain::coe::CoeState;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::access;
use crate::services::coe::coes::{self, CoeDocument, CoeError, HistoryEntry};

/// The section a finding is about: `five_whys[1].steps[0]` is in `five_whys`.
pub(super) fn section_of(at: &str) -> &str {
    at.split(['[', '.']).next().unwrap_or(at)
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

/// What the page of a COE needs: the document and what the person may do with it.
pub(super) struct Loaded {
    pub(super) doc: CoeDocument,
    pub(super) history: Vec<HistoryEntry>,
    /// The open actions of the earlier COEs this one recurs, by COE id.
    pub(super) earlier_open: BTreeMap<String, Vec<Value>>,
    pub(super) may_edit: bool,
    /// For the reviewer: what others changed since their last look, and when that was.
    pub(super) since_last_look: Option<(NaiveDateTime, Vec<HistoryEntry>)>,
    /// The incidents it covers: (id, title, state).
    pub(super) incidents: Vec<(String, String, String)>,
    /// Other drafts that someone who may edit could merge into it: those probably of
    /// the same outage first, then the newest.
    pub(super) drafts: Vec<coes::CoeSummary>,
    /// The document's `same_outage`, each with the merge this person may make of it
    /// in one click: `merge_here` (it into this COE) or `merge_there` (this draft
    /// into it).
    pub(super) same_outage: Vec<Value>,
    /// (address, name): the directory, offered in the fields that name people, for
    /// someone who may edit; else the people the page shows.
    pub(super) directory: Vec<(String, Option<String>)>,
    /// People marked bar raiser in the directory.
    pub(super) bar_raisers: i64,
    /// For a draft: the names of the templates it may switch to.
    pub(super) template_choices: Vec<String>,
    /// Its summary for customers' publication, if it was ever published.
    pub(super) publication: Option<crate::services::coe::publishing::PublicationView>,
    /// The newest change of its summary for customers after approval (waiting, or
    /// how it was decided), and the title its next publication would have.
    pub(super) summary_change: Option<crate::services::coe::publishing::changes::ChangeView>,
    pub(super) customer_title: Option<String>,
    /// Whether "Import from chat" is offered to this person (`chat::import::offered`).
    pub(super) chat_import: bool,
    /// On a draft with no chat channel to import from: who can connect one
    /// (`kit::who_connects`).
    pub(super) chat_missing: Option<serde_json::Value>,
    /// For a draft someone may submit: who could review it, best first.
    pub(super) reviewer_suggestions: Vec<crate::services::directory::ownership::Suggestion>,
    /// For a draft this person owns because no rule named an owner: whom it could be
    /// handed to (`Some`, maybe empty, only then).
    pub(super) hand_over: Option<Vec<crate::services::directory::ownership::Suggestion>>,
    /// Its review meeting, when one was ever set.
    pub(super) meeting: Option<crate::services::coe::review::meeting::MeetingView>,
}

/// How many other drafts a COE's page offers to merge into it.
const MERGE_OFFERED: i64 = 20;

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
        let doc = match coes::load(conn, &key, state.env()) {
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
            let open: Vec<Value> =
                crate::services::coe::actions::for_coe(conn, &earlier.coe_id, clock)?
                    .into_iter()
                    .filter(|a| a.state.is_active())
                    .map(|a| {
                        json!({"id": a.id, "title": a.title, "owner": a.owner,
                                "due_date": a.due_date, "overdue": a.overdue,
                                "days_overdue": a.days_overdue})
                    })
                    .collect();
            earlier_open.insert(earlier.coe_id.clone(), open);
        }
        let me = editor.actor;
        let reviews = doc.reviewer.as_deref() == Some(me) || doc.bar_raiser.as_deref() == Some(me);
        let since_last_look = if remember_look && reviews {
            coes::note_look(conn, &key, me, doc.version)?.map(|seen| {
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
        // The names of the people the page shows (a field for a person finds the
        // others as they are typed).
        let directory = {
            let shown: Vec<String> = [&doc.owner, &doc.reviewer, &doc.bar_raiser]
                .into_iter()
                .flatten()
                .cloned()
                .chain(doc.actions.iter().map(|a| a.owner.clone()))
                .chain(doc.review.iter().map(|r| r.author.clone()))
                .chain(doc.comments.iter().map(|c| c.author.clone()))
                .chain(history.iter().map(|h| h.actor.clone()))
                .chain(doc.same_outage.iter().filter_map(|o| o.owner.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            crate::services::directory::people::names_of(conn, &shown)?
        };
        let incidents = crate::services::incidents::titles(conn, &doc.incident_ids)?;
        let drafts = if may_edit && doc.state.is_editable() {
            let filter = coes::CoeFilter {
                state: Some(CoeState::Draft),
                ..coes::CoeFilter::default()
            };
            let (found, _) = coes::list(conn, &filter, MERGE_OFFERED, 0)?;
            // Only the drafts this person may change: a merge ends the draft.
            let mut offered = Vec::new();
            for c in found.into_iter().filter(|c| c.id != key) {
                if access::coe(conn, &c.id, editor).is_ok() {
                    offered.push(c);
                }
            }
            // The drafts probably of the same outage first (a COE reported by hand
            // has no alert to match, but its times and service do).
            offered.sort_by_key(|c| !doc.same_outage.iter().any(|o| o.coe_id == c.id));
            offered
        } else {
            Vec::new()
        };
        let mut same_outage = Vec::new();
        for other in &doc.same_outage {
            let here = other.merge_into == key;
            // A merge changes both COEs: it needs the right to change each.
            let may_merge = may_edit && access::coe(conn, &other.coe_id, editor).is_ok();
            let mut value = json!(other);
            value["merge_here"] = json!(may_merge && here);
            value["merge_there"] = json!(may_merge && !here);
            value["merge_ask"] = json!(may_edit && !may_merge);
            value["state_words"] = json!(other.state.as_str().replace('_', " "));
            same_outage.push(value);
        }
        let bar_raisers = crate::services::directory::people::bar_raiser_count(conn)?;
        let template_choices = if doc.state == CoeState::Draft {
            crate::services::coe::templates::names(conn, state.env())?
        } else {
            Vec::new()
        };
        let publication = crate::services::coe::publishing::of(conn, state.env(), &key)?;
        let summary_change = crate::services::coe::publishing::changes::latest(conn, &key)?;
        let customer_title = match publication.as_ref().filter(|p| p.live()) {
            Some(live) => Some(live.title.clone()),
            None => crate::services::coe::publishing::suggested_title(conn, &key)?,
        };
        let chat_import = doc.state == CoeState::Draft
            && crate::services::outbound::chat::import::offered(conn, state.env(), &key, editor)?;
        let draft = may_edit && doc.state == CoeState::Draft;
        let chat_missing = match draft && !chat_import {
            true => Some(super::kit::who_connects(conn, editor.is_admin)?),
            false => None,
        };
        let reviewer_suggestions = if draft {
            crate::services::directory::ownership::reviewer_suggestions(
                conn,
                state.env(),
                doc.owner.as_deref(),
                doc.service.as_deref(),
            )?
        } else {
            Vec::new()
        };
        let mine = doc.owner.as_deref() == Some(me);
        let hand_over = if draft && mine {
            let service = doc.service.as_deref();
            let ruled =
                crate::services::directory::ownership::for_service(conn, state.env(), service)?;
            match ruled.owner {
                None => Some(
                    crate::services::directory::ownership::hand_over_suggestions(
                        conn, service, me,
                    )?,
                ),
                Some(_) => None,
            }
        } else {
            None
        };
        let meeting = crate::services::coe::review::meeting::get(conn, &doc.id)?;
        Ok(Some(Loaded {
            meeting,
            reviewer_suggestions,
            hand_over,
            chat_import,
            chat_missing,
            publication,
            summary_change,
            customer_title,
            template_choices,
            bar_raisers,
            incidents,
            drafts,
            same_outage,
            doc,
            history,
            earlier_open,
            may_edit,
            since_last_look,
            directory,
        }))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no COE {id}")))
}

/// Findings with the section they are about, named as the template names it.
pub(super) fn findings(
    list: &[crate::domain::assessment::Finding],
    sections: &[crate::services::coe::coes::SectionView],
) -> Vec<Value> {
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

/// The people a draft lacks before it can be submitted, as the checklist lists them
/// first: its owner, its reviewer.
pub(super) fn who_is_missing(doc: &crate::services::coe::coes::CoeDocument) -> Vec<Value> {
    if doc.state != CoeState::Draft {
        return Vec::new();
    }
    let mut missing = Vec::new();
    if doc.owner.is_none() {
        missing.push(json!({"at": "Owner", "section": "details",
            "problem": "nobody owns it yet: take it, or name its owner in its details"}));
    }
    if doc.reviewer.is_none() {
        missing.push(json!({"at": "Reviewer", "section": "submit",
            "problem": "nobody reviews it yet: name one beside “Submit for review”"}));
    }
    missing
}
