//! Reading a COE's parts as the document shows them: its sections, timeline, 5
//! whys, related items, earlier COEs it recurred from, review comments and hand-overs.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{
    EarlierSection, HandedOver, Recurrence, RelatedItem, ReviewComment, SectionView, TimelineEntry,
    WhyChain,
};
use crate::db::models::{RelatedRow, ReviewCommentRow, TimelineRow, WhyChainRow};
use crate::db::schema::{
    coe_recurrences, coe_sections, coes, corrective_actions, related_items, review_comments,
    timeline_entries, why_chains,
};
use crate::db::{types, DbConnection};
use crate::domain::action::ActionState;
use crate::domain::assessment::{Assessment, Finding};
use crate::domain::template::SectionKind;
use crate::domain::template::Template;

/// A COE's text sections by key.
pub(super) fn sections_of(
    conn: &mut DbConnection,
    id: &str,
) -> QueryResult<BTreeMap<String, String>> {
    Ok(coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select((coe_sections::key, coe_sections::body))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect())
}

/// A COE's 5-whys chains, in order.
pub(super) fn chains_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<WhyChain>> {
    Ok(why_chains::table
        .filter(why_chains::coe_id.eq(id))
        .order((why_chains::position.asc(), why_chains::created_at.asc()))
        .select(WhyChainRow::as_select())
        .load(conn)?
        .into_iter()
        .map(WhyChain::from)
        .collect())
}

impl From<WhyChainRow> for WhyChain {
    fn from(c: WhyChainRow) -> Self {
        WhyChain {
            steps: serde_json::from_str(&c.steps).unwrap_or_default(),
            id: c.id,
            position: c.position,
            factor: c.factor,
        }
    }
}

/// A COE's timeline, oldest first.
pub(super) fn timeline_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<TimelineEntry>> {
    let rows: Vec<TimelineRow> = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .order((
            timeline_entries::at.asc(),
            timeline_entries::created_at.asc(),
        ))
        .select(TimelineRow::as_select())
        .load(conn)?;
    rows.into_iter()
        .map(|t| {
            Ok(TimelineEntry {
                kind: types::read("timeline_entries.kind", &t.kind)?,
                id: t.id,
                at: t.at,
                text: t.text,
                source: t.source,
                event_id: t.event_id,
                occurrences: t.occurrences,
                hosts: t.hosts,
                last_at: t.last_at,
            })
        })
        .collect()
}

/// What a COE links to (tickets, dashboards, other COEs), oldest first.
pub(super) fn related_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<RelatedItem>> {
    let rows: Vec<RelatedRow> = related_items::table
        .filter(related_items::coe_id.eq(id))
        .order(related_items::created_at.asc())
        .select(RelatedRow::as_select())
        .load(conn)?;
    rows.into_iter()
        .map(|r| {
            Ok(RelatedItem {
                kind: types::read("related_items.kind", &r.kind)?,
                id: r.id,
                title: r.title,
                url: r.url,
                coe_id: r.related_coe_id,
            })
        })
        .collect()
}

/// The review's comments, oldest first.
pub(super) fn review_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<ReviewComment>> {
    Ok(review_comments::table
        .filter(review_comments::coe_id.eq(id))
        .order((review_comments::created_at.asc(), review_comments::id.asc()))
        .select(ReviewCommentRow::as_select())
        .load(conn)?
        .into_iter()
        .map(|r| ReviewComment {
            author: r.author,
            verdict: r.verdict,
            body: r.body,
            at: r.created_at,
        })
        .collect())
}

/// The earlier COEs this outage recurred from, with how many of their actions are
/// still to be done.
pub(super) fn recurrences_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<Recurrence>> {
    let recurrences: Vec<(String, String, String, String, NaiveDateTime)> = coe_recurrences::table
        .inner_join(coes::table.on(coes::id.eq(coe_recurrences::earlier_coe_id)))
        .filter(coe_recurrences::coe_id.eq(id))
        .select((
            coes::id,
            coes::title,
            coes::state,
            coe_recurrences::matched_on,
            coes::created_at,
        ))
        .load(conn)?;
    let mut views = Vec::new();
    for (coe_id, title, state, matched_on, created_at) in recurrences {
        let states: Vec<String> = corrective_actions::table
            .filter(corrective_actions::coe_id.eq(&coe_id))
            .select(corrective_actions::state)
            .load(conn)?;
        let open = states
            .iter()
            .map(|s| types::read::<ActionState>("corrective_actions.state", s))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|s| s.is_active())
            .count();
        views.push(Recurrence {
            coe_id,
            title,
            state: types::read("coes.state", &state)?,
            matched_on,
            created_at,
            total_actions: states.len(),
            open_actions: open,
        });
    }
    Ok(views)
}

/// Whom the COE's owner or reviewer was handed over from, when someone left.
pub(super) fn handed_over_of(conn: &mut DbConnection, id: &str) -> QueryResult<Option<HandedOver>> {
    type Was = (
        Option<String>,
        Option<NaiveDateTime>,
        Option<String>,
        Option<NaiveDateTime>,
    );
    let was: Was = coes::table
        .find(id)
        .select((
            coes::owner_handed_over_from,
            coes::owner_handed_over_at,
            coes::reviewer_handed_over_from,
            coes::reviewer_handed_over_at,
        ))
        .first(conn)?;
    Ok((was.0.is_some() || was.2.is_some()).then_some(HandedOver {
        owner_from: was.0,
        owner_at: was.1,
        reviewer_from: was.2,
        reviewer_at: was.3,
    }))
}

/// The template's sections with what is written in each and what is missing there.
pub(super) fn section_views(
    template: &Template,
    sections: &BTreeMap<String, String>,
    completeness: &Assessment,
) -> Vec<SectionView> {
    let problems_of = |key: &str| -> Vec<String> {
        completeness
            .missing
            .iter()
            .filter(|f: &&Finding| f.at == key)
            .map(|f| f.problem.clone())
            .collect()
    };
    template
        .sections
        .iter()
        .map(|s| {
            let problems = problems_of(&s.key);
            SectionView {
                key: s.key.clone(),
                title: s.title.clone(),
                kind: s.kind,
                required: s.required,
                guidance: s.guidance.clone(),
                for_customers: s.for_customers,
                revision: crate::services::coe::coes::revision(
                    sections.get(&s.key).map_or("", String::as_str),
                ),
                body: sections.get(&s.key).cloned().unwrap_or_default(),
                complete: problems.is_empty(),
                problems,
            }
        })
        .collect()
}

/// Text kept from a template a draft switched away from: what is written under a
/// key the template has no text section for.
pub(super) fn from_previous_template(
    template: &Template,
    sections: &BTreeMap<String, String>,
) -> Vec<EarlierSection> {
    sections
        .iter()
        .filter(|(key, body)| {
            !body.trim().is_empty()
                && template
                    .section(key)
                    .is_none_or(|s| s.kind != SectionKind::Text)
        })
        .map(|(key, body)| EarlierSection {
            key: key.clone(),
            body: body.clone(),
        })
        .collect()
}
