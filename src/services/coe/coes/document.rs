//! The assembled COE: sections with guidance and completeness, timeline, 5 whys,
//! related items, recurrence, actions, review, and the history of changes.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{load_row, template_of, CoeError};
use crate::config::Settings;
use crate::db::models::{RelatedRow, ReviewCommentRow, TimelineRow, WhyChainRow};
use crate::db::schema::{
    coe_reads, coe_recurrences, coe_sections, coes, corrective_actions, related_items,
    review_comments, timeline_entries, why_chains,
};
use crate::db::{types, DbConnection};
use crate::domain::action::ActionState;
use crate::domain::assessment::{self, Assessment, CoeContent, Finding, WhyStep};
use crate::domain::coe::{CoeState, RelatedKind, TimelineKind};
use crate::domain::template::SectionKind;
use crate::domain::Severity;
use crate::services::audit;
use crate::services::coe::actions::{self, ActionView};

/// One section as the document shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SectionView {
    pub key: String,
    pub title: String,
    pub kind: SectionKind,
    pub required: bool,
    pub guidance: String,
    /// Written for customers: checked to name no person and no internal host, and
    /// once the COE is approved, the one part of it that may be published.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub for_customers: bool,
    /// Markdown as written; empty until someone writes it. Text sections only.
    pub body: String,
    /// The body's revision (a short hash of it): a save based on it
    /// (`PUT …/sections/{key}` with `based_on`) is checked against this section only.
    pub revision: String,
    pub complete: bool,
    /// Why it is not complete.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TimelineEntry {
    pub id: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
    pub kind: TimelineKind,
    pub text: String,
    pub source: Option<String>,
    /// The first event this entry counts (events stay on the incident).
    pub event_id: Option<String>,
    /// How many events of the alert this entry counts (1 for entries people wrote).
    pub occurrences: i32,
    /// On how many hosts (by the instance, host, hostname, node, pod or server label,
    /// else distinct alerts).
    pub hosts: i32,
    /// The latest of the events it counts; `at` is the earliest.
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, ToSchema)]
pub struct Why {
    pub why: String,
    pub because: String,
}

/// A why is read from a JSON object only: derived structs also accept an array of
/// their fields in order (`["a", "b"]`), which the schema does not allow.
impl<'de> Deserialize<'de> for Why {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            why: String,
            because: String,
        }

        struct ObjectOnly;

        impl<'de> serde::de::Visitor<'de> for ObjectOnly {
            type Value = Why;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object with `why` and `because`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Why, A::Error> {
                let Fields { why, because } =
                    Fields::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Why { why, because })
            }
        }

        deserializer.deserialize_map(ObjectOnly)
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhyChain {
    pub id: String,
    pub position: i32,
    pub steps: Vec<Why>,
    /// The contributing factor it ends in (one of the template's), once tagged.
    pub factor: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelatedItem {
    pub id: String,
    pub kind: RelatedKind,
    pub title: Option<String>,
    pub url: Option<String>,
    pub coe_id: Option<String>,
}

/// An earlier COE this one recurs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Recurrence {
    pub coe_id: String,
    pub title: String,
    pub state: CoeState,
    pub matched_on: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    /// Its corrective actions: how many, and how many are still open.
    pub total_actions: usize,
    pub open_actions: usize,
}

/// A step of the review.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReviewComment {
    pub author: String,
    /// submitted, changes_requested, approved or comment.
    pub verdict: String,
    pub body: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateRef {
    pub name: String,
    pub version: i32,
    /// What a 5-whys chain is tagged with (`factor`).
    pub contributing_factors: Vec<String>,
}

/// The whole COE document.
/// Who held a COE before they left the organisation and it passed on.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HandedOver {
    /// Its owner before, and when it passed to the present owner.
    pub owner_from: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub owner_at: Option<NaiveDateTime>,
    /// Its reviewer before, and when the review passed on.
    pub reviewer_from: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub reviewer_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoeDocument {
    pub id: String,
    /// Its first incident.
    pub incident_id: Option<String>,
    /// Every incident it covers, the first attached first.
    pub incident_ids: Vec<String>,
    /// For a merged draft: the COE it was merged into.
    pub merged_into: Option<String>,
    /// Other open COEs probably about the same outage (an incident of each started
    /// close in time, on a service, a dependency or a label value they share): merge
    /// them (`POST /api/v1/coes/{merge_into}/merge`); nothing merges by itself.
    pub same_outage: Vec<super::SameOutage>,
    /// Actions of earlier COEs (kinds prevent, detect, mitigate) done before this
    /// outage came back: meant to prevent this.
    pub meant_to_prevent: Vec<super::RecurredAction>,
    /// This COE's actions whose outage came back after they were done.
    pub recurred_after_done: Vec<super::RecurredAction>,
    pub title: String,
    pub service: Option<String>,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: CoeState,
    pub owner: Option<String>,
    pub reviewer: Option<String>,
    /// Who named the current reviewer (a person's email, or `token:NAME`).
    pub reviewer_named_by: Option<String>,
    /// Whose the COE (its writing, its review) was before they left and it passed on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handed_over: Option<HandedOver>,
    /// For the worst outages (`coe.bar_raiser_from`): a second reviewer from outside
    /// the owner's team, chosen on submit. Both must approve.
    pub bar_raiser: Option<String>,
    /// In review with a bar raiser: who approved this round already (the other's
    /// approval is awaited).
    pub approved_by: Option<String>,
    /// Who submitted the review round under way, or the last one. Nobody approves a
    /// COE they own, a round they submitted or a COE they named themselves reviewer of.
    pub submitted_by: Option<String>,
    /// Bumped by every change; send it back in `If-Match`.
    pub version: i32,
    pub template: TemplateRef,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub started_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub detected_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub mitigated_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub resolved_at: Option<NaiveDateTime>,
    pub duration_seconds: Option<i64>,
    /// Links gathered from the events (runbooks, dashboards).
    pub links: Vec<String>,
    pub sections: Vec<SectionView>,
    /// Text written under sections its template (switched while a draft) no longer
    /// has: kept, shown apart, to be moved by hand.
    pub from_previous_template: Vec<EarlierSection>,
    pub timeline: Vec<TimelineEntry>,
    pub five_whys: Vec<WhyChain>,
    pub related: Vec<RelatedItem>,
    /// Earlier COEs for the same service and alert or group.
    pub recurrence: Vec<Recurrence>,
    /// The corrective actions, oldest first.
    pub actions: Vec<ActionView>,
    /// Submissions, requests for changes and approvals, oldest first.
    pub review: Vec<ReviewComment>,
    /// The reviewers' comments on its sections, with the owner's answers, oldest first.
    pub comments: Vec<super::SectionComment>,
    pub completeness: Assessment,
    pub created_by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc")]
    pub updated_at: NaiveDateTime,
}

/// The checks of `domain::assessment` over a COE's parts.
fn assess(
    template: &crate::domain::template::Template,
    sections: &BTreeMap<String, String>,
    timeline_entries: usize,
    five_whys: &[WhyChain],
    actions: &[ActionView],
    phrases: &[String],
) -> Assessment {
    let content = CoeContent {
        sections: sections
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        timeline_entries,
        why_chains: five_whys
            .iter()
            .map(|c| {
                c.steps
                    .iter()
                    .map(|s| WhyStep {
                        why: s.why.clone(),
                        because: s.because.clone(),
                    })
                    .collect()
            })
            .collect(),
        why_factors: five_whys.iter().map(|c| c.factor.clone()).collect(),
        action_count: Some(actions.len()),
        other_texts: actions
            .iter()
            .enumerate()
            .flat_map(|(i, a)| {
                [
                    (format!("actions[{i}].title"), a.title.clone()),
                    (
                        format!("actions[{i}].description"),
                        a.description.clone().unwrap_or_default(),
                    ),
                ]
            })
            .collect(),
    };
    assessment::assess(template, &content, phrases)
}

/// Only the completeness report of COE `id` (what is missing, what the checks warn
/// of): the parts the checks read, not the whole document.
pub fn assessment(
    conn: &mut DbConnection,
    id: &str,
    settings: &Settings,
) -> Result<Assessment, CoeError> {
    let row = load_row(conn, id)?;
    let template = template_of(&row);
    let sections = sections_of(conn, id)?;
    let timeline_entries: i64 = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .count()
        .get_result(conn)?;
    let five_whys = chains_of(conn, id)?;
    let actions = actions::for_coe(conn, id, settings.clock())?;
    let mut completeness = assess(
        &template,
        &sections,
        usize::try_from(timeline_entries).unwrap_or(0),
        &five_whys,
        &actions,
        &settings.coe.intention_phrases,
    );
    for_customers(conn, settings, &template, &sections, &mut completeness)?;
    super::times::check_times(conn, &row, &template, &mut completeness)?;
    Ok(completeness)
}

/// The section written for customers, when the template has one and it is written:
/// what names a person or an internal host is missing work, like an empty section; a
/// given name that is also an ordinary word is a warning (`customers::check`).
fn for_customers(
    conn: &mut DbConnection,
    settings: &Settings,
    template: &crate::domain::template::Template,
    sections: &BTreeMap<String, String>,
    completeness: &mut Assessment,
) -> QueryResult<()> {
    let Some(spec) = template.for_customers() else {
        return Ok(());
    };
    let text = sections.get(&spec.key).map_or("", String::as_str);
    let found = super::customers::check(conn, settings, text)?;
    for problem in found.refusals {
        completeness.missing.push(Finding {
            at: spec.key.clone(),
            problem,
        });
        completeness.complete = false;
    }
    for problem in found.warnings {
        completeness.warnings.push(Finding {
            at: spec.key.clone(),
            problem,
        });
    }
    Ok(())
}

/// Text kept from a template a draft switched away from.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EarlierSection {
    pub key: String,
    pub body: String,
}

/// A COE's text sections by key.
fn sections_of(conn: &mut DbConnection, id: &str) -> QueryResult<BTreeMap<String, String>> {
    Ok(coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select((coe_sections::key, coe_sections::body))
        .load::<(String, String)>(conn)?
        .into_iter()
        .collect())
}

/// A COE's 5-whys chains, in order.
fn chains_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<WhyChain>> {
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

/// The whole document, with its completeness report.
pub fn load(
    conn: &mut DbConnection,
    id: &str,
    settings: &Settings,
) -> Result<CoeDocument, CoeError> {
    let phrases = &settings.coe.intention_phrases;
    let clock = settings.clock();
    let row = load_row(conn, id)?;
    let template = template_of(&row);
    let sections = sections_of(conn, id)?;
    let timeline: Vec<TimelineRow> = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .order((
            timeline_entries::at.asc(),
            timeline_entries::created_at.asc(),
        ))
        .select(TimelineRow::as_select())
        .load(conn)?;
    let related: Vec<RelatedRow> = related_items::table
        .filter(related_items::coe_id.eq(id))
        .order(related_items::created_at.asc())
        .select(RelatedRow::as_select())
        .load(conn)?;
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

    let action_views = actions::for_coe(conn, id, clock)?;
    let review: Vec<ReviewComment> = review_comments::table
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
        .collect();
    let mut recurrence_views = Vec::new();
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
        recurrence_views.push(Recurrence {
            coe_id,
            title,
            state: types::read("coes.state", &state)?,
            matched_on,
            created_at,
            total_actions: states.len(),
            open_actions: open,
        });
    }
    let five_whys = chains_of(conn, id)?;
    let mut completeness = assess(
        &template,
        &sections,
        timeline.len(),
        &five_whys,
        &action_views,
        phrases,
    );
    for_customers(conn, settings, &template, &sections, &mut completeness)?;
    super::times::check_times(conn, &row, &template, &mut completeness)?;
    let problems_of = |key: &str| -> Vec<String> {
        completeness
            .missing
            .iter()
            .filter(|f: &&Finding| f.at == key)
            .map(|f| f.problem.clone())
            .collect()
    };
    let section_views = template
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
                revision: super::revision(sections.get(&s.key).map_or("", String::as_str)),
                body: sections.get(&s.key).cloned().unwrap_or_default(),
                complete: problems.is_empty(),
                problems,
            }
        })
        .collect();
    let from_previous_template: Vec<EarlierSection> = sections
        .iter()
        .filter(|(key, body)| {
            !body.trim().is_empty()
                && template
                    .section(key)
                    .is_none_or(|s| s.kind != crate::domain::template::SectionKind::Text)
        })
        .map(|(key, body)| EarlierSection {
            key: key.clone(),
            body: body.clone(),
        })
        .collect();
    let extra: (Option<String>, Option<String>, Option<String>) = coes::table
        .find(id)
        .select((coes::merged_into, coes::bar_raiser_email, coes::approved_by))
        .first(conn)?;
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
    let handed_over = (was.0.is_some() || was.2.is_some()).then_some(HandedOver {
        owner_from: was.0,
        owner_at: was.1,
        reviewer_from: was.2,
        reviewer_at: was.3,
    });
    Ok(CoeDocument {
        duration_seconds: match (row.started_at, row.resolved_at) {
            (Some(s), Some(r)) => Some((r - s).num_seconds().max(0)),
            _ => None,
        },
        severity: types::severity("coes.severity", row.severity)?,
        state: types::read("coes.state", &row.state)?,
        links: serde_json::from_str(&row.links).unwrap_or_default(),
        template: TemplateRef {
            contributing_factors: template.contributing_factors.clone(),
            name: row.template_name.clone(),
            version: row.template_version,
        },
        sections: section_views,
        from_previous_template,
        timeline: timeline
            .into_iter()
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
            .collect::<Result<_, diesel::result::Error>>()?,
        five_whys,
        related: related
            .into_iter()
            .map(|r| {
                Ok(RelatedItem {
                    kind: types::read("related_items.kind", &r.kind)?,
                    id: r.id,
                    title: r.title,
                    url: r.url,
                    coe_id: r.related_coe_id,
                })
            })
            .collect::<Result<_, diesel::result::Error>>()?,
        recurrence: recurrence_views,
        actions: action_views,
        review,
        comments: super::comments::of_coe(conn, id)?,
        incident_ids: super::covered::incidents_of(conn, id)?,
        merged_into: extra.0,
        handed_over,
        bar_raiser: extra.1,
        approved_by: extra.2,
        meant_to_prevent: super::meant_to_prevent(conn, id)?,
        recurred_after_done: super::of_earlier_coe(conn, id)?,
        same_outage: super::same_outage::of(
            conn,
            settings,
            id,
            types::read("coes.state", &row.state)?,
            row.created_at,
        )?,
        completeness,
        id: row.id,
        incident_id: row.incident_id,
        title: row.title,
        service: row.service,
        owner: row.owner_email,
        reviewer: row.reviewer_email,
        reviewer_named_by: row.reviewer_named_by,
        submitted_by: row.submitted_by,
        version: row.version,
        started_at: row.started_at,
        detected_at: row.detected_at,
        mitigated_at: row.mitigated_at,
        resolved_at: row.resolved_at,
        created_by: row.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// One audit record.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HistoryEntry {
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
    pub actor: String,
    pub action: String,
    /// What the change replaced; `null` when it created something.
    #[schema(value_type = Option<Value>)]
    pub before: Option<Value>,
    /// What the change made; `null` when it deleted something.
    #[schema(value_type = Option<Value>)]
    pub after: Option<Value>,
    /// For a change of one of its corrective actions: that action's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
}

/// Every change to a COE, oldest first.
pub fn history(conn: &mut DbConnection, id: &str) -> Result<Vec<HistoryEntry>, CoeError> {
    load_row(conn, id)?;
    let rows = audit::of_coe(conn, id)?;
    Ok(rows
        .into_iter()
        .map(|r| HistoryEntry {
            action_id: (r.entity == "action").then(|| r.entity_id.clone()),
            at: r.at,
            actor: r.actor,
            action: r.action,
            before: r.before.and_then(|b| serde_json::from_str(&b).ok()),
            after: r.after.and_then(|a| serde_json::from_str(&a).ok()),
        })
        .collect())
}

/// Notes that `who` looked at COE `id` (at `version`) now; returns when they looked
/// before, if they did. The reviewer's page shows what others changed since.
pub fn note_look(
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
    let now = crate::db::now();
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
