//! The completeness report: the checks of `domain::assessment` over a COE's parts,
//! the section written for customers and the incident's times.

use std::collections::BTreeMap;

use diesel::prelude::*;

use super::parts::{chains_of, sections_of};
use super::WhyChain;
use super::{load_row, template_of, CoeError};
use crate::db::models::CoeRow;
use crate::db::schema::timeline_entries;
use crate::db::DbConnection;
use crate::domain::assessment::{self, Assessment, CoeContent, Finding, WhyStep};
use crate::domain::template::Template;
use crate::services::coe::actions::{self, ActionView};
use crate::services::Env;

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
pub fn assessment(conn: &mut DbConnection, id: &str, env: Env<'_>) -> Result<Assessment, CoeError> {
    let settings = env.settings;
    let row = load_row(conn, id)?;
    let template = template_of(&row);
    let sections = sections_of(conn, id)?;
    let timeline_entries: i64 = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .count()
        .get_result(conn)?;
    let five_whys = chains_of(conn, id)?;
    let actions = actions::for_coe(conn, id, settings.clock())?;
    let parts = Parts {
        template: &template,
        sections: &sections,
        timeline_entries: usize::try_from(timeline_entries).unwrap_or(0),
        five_whys: &five_whys,
        actions: &actions,
    };
    of_parts(conn, env, &row, &parts)
}

/// The parts of a COE the checks read.
pub(super) struct Parts<'a> {
    pub template: &'a Template,
    pub sections: &'a BTreeMap<String, String>,
    pub timeline_entries: usize,
    pub five_whys: &'a [WhyChain],
    pub actions: &'a [ActionView],
}

/// The completeness report of COE `row` from its `parts`: the checks of
/// `domain::assessment`, the section for customers, the incident's times.
pub(super) fn of_parts(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    parts: &Parts<'_>,
) -> Result<Assessment, CoeError> {
    let settings = env.settings;
    let mut completeness = assess(
        parts.template,
        parts.sections,
        parts.timeline_entries,
        parts.five_whys,
        parts.actions,
        &settings.coe.intention_phrases,
    );
    for_customers(conn, env, parts.template, parts.sections, &mut completeness)?;
    burned_budget(conn, env, row, parts, &mut completeness)?;
    crate::services::coe::coes::times::check_times(conn, row, parts.template, &mut completeness)?;
    Ok(completeness)
}

/// The error budget decides: an outage whose incidents burned more than
/// `policy.error_budget_share` of an SLO's error budget needs a high-priority action
/// to prevent it (one not given up) before its COE is submitted.
fn burned_budget(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    parts: &Parts<'_>,
    completeness: &mut Assessment,
) -> QueryResult<()> {
    use crate::db::schema::{coe_incidents, incidents};
    use crate::domain::action::{ActionKind, ActionState, Priority};
    let policy = env.settings.incident_policy();
    let mut ids: Vec<String> = coe_incidents::table
        .filter(coe_incidents::coe_id.eq(&row.id))
        .select(coe_incidents::incident_id)
        .load(conn)?;
    ids.extend(row.incident_id.clone());
    if ids.is_empty() {
        return Ok(());
    }
    let burned: Vec<(Option<f64>, Option<String>)> = incidents::table
        .filter(incidents::id.eq_any(&ids))
        .filter(incidents::budget_burned.is_not_null())
        .select((incidents::budget_burned, incidents::slo))
        .load(conn)?;
    let Some((Some(worst), slo)) = burned
        .into_iter()
        .max_by(|a, b| a.0.unwrap_or(0.0).total_cmp(&b.0.unwrap_or(0.0)))
    else {
        return Ok(());
    };
    let prevented = parts.actions.iter().any(|a| {
        a.priority == Priority::High
            && a.kind == ActionKind::Prevent
            && a.state != ActionState::WontDo
    });
    if !policy.burned_too_much(Some(worst)) || prevented {
        return Ok(());
    }
    let key = parts
        .template
        .sections
        .iter()
        .find(|s| s.kind == crate::domain::template::SectionKind::Actions)
        .map_or_else(|| "actions".to_owned(), |s| s.key.clone());
    let slo = slo.map(|s| format!(" of {s}")).unwrap_or_default();
    completeness.missing.push(Finding {
        at: key,
        problem: format!(
            "this outage burned {}% of the error budget{slo}, more than the {}% that requires a \
             high-priority corrective action to prevent it: add one (or make one high priority)",
            crate::domain::distribution::percent(worst),
            crate::domain::distribution::percent(policy.budget_share)
        ),
    });
    completeness.complete = false;
    Ok(())
}

/// The section written for customers, when the template has one and it is written:
/// what names a person or an internal host is missing work, like an empty section; a
/// given name that is also an ordinary word is a warning (`customers::check`).
fn for_customers(
    conn: &mut DbConnection,
    env: Env<'_>,
    template: &crate::domain::template::Template,
    sections: &BTreeMap<String, String>,
    completeness: &mut Assessment,
) -> QueryResult<()> {
    let Some(spec) = template.for_customers() else {
        return Ok(());
    };
    let text = sections.get(&spec.key).map_or("", String::as_str);
    let found = crate::services::coe::coes::customers::check(conn, env, text)?;
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
