//! 5-whys chains: from the symptom down to the root cause, several per COE.

use crate::services::Env;
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::edit::{with_change, Recorded};
use super::{child_of_coe, template_of, CoeError, Why};
use crate::db::models::CoeRow;
use crate::db::models::WhyChainRow;
use crate::db::schema::why_chains;
use crate::db::{self, DbConnection};
use crate::services::access::Editor;

/// A 5-whys chain as people write it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyChainInput {
    /// From the symptom down to the root cause.
    pub steps: Vec<Why>,
    /// The contributing factor it ends in: one of the template's
    /// `contributing_factors` (any case). Left out when replacing a chain, the chain
    /// keeps its factor.
    #[serde(default)]
    pub factor: Option<String>,
}

/// The factor `input` names, as the COE's template writes it; the problem, listing
/// the template's factors, when it names none of them.
fn check_factor(row: &CoeRow, input: &WhyChainInput) -> Result<Option<String>, CoeError> {
    let Some(asked) = input.factor.as_deref().filter(|f| !f.trim().is_empty()) else {
        return Ok(None);
    };
    let template = template_of(row);
    match template.factor(asked) {
        Some(f) => Ok(Some(f.to_owned())),
        None if template.contributing_factors.is_empty() => Err(CoeError::invalid(
            "factor",
            "this COE's template tags no contributing factors: leave it out",
        )),
        None => Err(CoeError::invalid(
            "factor",
            format!(
                "must be one of the template's contributing factors: {} (got {asked:?})",
                template.contributing_factors.join(", ")
            ),
        )),
    }
}

fn check_steps(input: &WhyChainInput) -> Result<String, CoeError> {
    if input.steps.is_empty() {
        return Err(CoeError::invalid("steps", "must hold at least one why"));
    }
    if input.steps.len() > 50 {
        return Err(CoeError::invalid("steps", "must hold at most 50 whys"));
    }
    for (i, step) in input.steps.iter().enumerate() {
        if step.why.trim().is_empty() {
            return Err(CoeError::invalid(
                format!("steps[{i}].why"),
                "must not be empty",
            ));
        }
        if step.because.trim().is_empty() {
            return Err(CoeError::invalid(
                format!("steps[{i}].because"),
                "must not be empty",
            ));
        }
        if step.why.len() + step.because.len() > 10_000 {
            return Err(CoeError::invalid(
                format!("steps[{i}]"),
                "must be at most 10000 bytes",
            ));
        }
    }
    Ok(serde_json::to_string(&input.steps).unwrap_or_else(|_| "[]".into()))
}

/// Adds a 5-whys chain at the end; returns its id.
pub fn add_why_chain(
    conn: &mut DbConnection,
    id: &str,
    input: &WhyChainInput,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<String, CoeError> {
    with_change(conn, id, expected, who, env, |conn, coe, now| {
        let steps = check_steps(input)?;
        let factor = check_factor(coe, input)?;
        let position: Option<i32> = why_chains::table
            .filter(why_chains::coe_id.eq(id))
            .select(diesel::dsl::max(why_chains::position))
            .first(conn)?;
        let row = WhyChainRow {
            id: db::new_id(),
            coe_id: id.to_owned(),
            position: position.map_or(0, |p| p + 1),
            steps,
            created_at: now,
            updated_at: now,
            factor,
        };
        diesel::insert_into(why_chains::table)
            .values(&row)
            .execute(conn)?;
        let recorded = Recorded {
            action: "five_whys:add".into(),
            before: None,
            after: Some(json!({"id": row.id, "steps": input.steps, "factor": row.factor})),
        };
        Ok((row.id, Some(recorded)))
    })
}

/// Replaces a chain's steps.
pub fn replace_why_chain(
    conn: &mut DbConnection,
    id: &str,
    chain_id: &str,
    input: &WhyChainInput,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, coe, now| {
        let steps = check_steps(input)?;
        let factor = check_factor(coe, input)?;
        let before: String =
            child_of_coe!(conn, why_chains, why_chains::steps, id, chain_id, "whys")?;
        diesel::update(why_chains::table.find(chain_id))
            .set((why_chains::steps.eq(&steps), why_chains::updated_at.eq(now)))
            .execute(conn)?;
        if factor.is_some() {
            diesel::update(why_chains::table.find(chain_id))
                .set(why_chains::factor.eq(&factor))
                .execute(conn)?;
        }
        let recorded = Recorded {
            action: "five_whys:edit".into(),
            before: Some(
                json!({"id": chain_id, "steps": serde_json::from_str::<Value>(&before).unwrap_or(Value::Null)}),
            ),
            after: Some(json!({"id": chain_id, "steps": input.steps, "factor": factor})),
        };
        Ok(((), Some(recorded)))
    })
}

/// Deletes a chain.
pub fn delete_why_chain(
    conn: &mut DbConnection,
    id: &str,
    chain_id: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, env, |conn, _, _| {
        let before: String =
            child_of_coe!(conn, why_chains, why_chains::steps, id, chain_id, "whys")?;
        diesel::delete(why_chains::table.find(chain_id)).execute(conn)?;
        let recorded = Recorded {
            action: "five_whys:delete".into(),
            before: Some(
                json!({"id": chain_id, "steps": serde_json::from_str::<Value>(&before).unwrap_or(Value::Null)}),
            ),
            after: None,
        };
        Ok(((), Some(recorded)))
    })
}
