//! The assembled COE: sections with guidance and completeness, timeline, 5 whys,
//! related items, recurrence, actions, review, and the history of changes.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{load_row, template_of, CoeError};
use crate::db::schema::coes;
use crate::db::{types, DbConnection};
use crate::domain::assessment::Assessment;
use crate::domain::coe::{CoeState, RelatedKind, TimelineKind};
use crate::domain::template::SectionKind;
use crate::domain::Severity;
use crate::services::coe::actions::{self, ActionView};
use crate::services::Env;

mod completeness;
mod history;
mod parts;

pub use completeness::assessment;
pub use history::{history, note_look, HistoryEntry};

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

/// Text kept from a template a draft switched away from.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EarlierSection {
    pub key: String,
    pub body: String,
}

/// The whole document, with its completeness report.
pub fn load(conn: &mut DbConnection, id: &str, env: Env<'_>) -> Result<CoeDocument, CoeError> {
    let settings = env.settings;
    let clock = settings.clock();
    let row = load_row(conn, id)?;
    let template = template_of(&row);
    let sections = parts::sections_of(conn, id)?;
    let timeline = parts::timeline_of(conn, id)?;
    let related = parts::related_of(conn, id)?;
    let action_views = actions::for_coe(conn, id, clock)?;
    let review = parts::review_of(conn, id)?;
    let recurrence_views = parts::recurrences_of(conn, id)?;
    let five_whys = parts::chains_of(conn, id)?;
    let parts = completeness::Parts {
        template: &template,
        sections: &sections,
        timeline_entries: timeline.len(),
        five_whys: &five_whys,
        actions: &action_views,
    };
    let completeness = completeness::of_parts(conn, env, &row, &parts)?;
    let section_views = parts::section_views(&template, &sections, &completeness);
    let from_previous_template = parts::from_previous_template(&template, &sections);
    let extra: (Option<String>, Option<String>, Option<String>) = coes::table
        .find(id)
        .select((coes::merged_into, coes::bar_raiser_email, coes::approved_by))
        .first(conn)?;
    let handed_over = parts::handed_over_of(conn, id)?;
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
        timeline,
        five_whys,
        related,
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
            env,
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
