//! The bar raiser of a COE under review: chosen on submit when its worst severity
//! lately needs one (`assign`), chosen again when one leaves (`replace_bar_raiser`),
//! or named by an admin (`name_bar_raiser`).

use diesel::prelude::*;

use super::{locked, team_of, Reviewer};
use crate::db::models::CoeRow;
use crate::db::schema::{coes, people};
use crate::db::{self, types, DbConnection};
use crate::domain::bar_raiser::{self, Candidate, Exclusions, NoBarRaiser};
use crate::domain::coe::CoeState;
use crate::services::coe::coes::{self as coe_service, CoeError};
use crate::services::outbound::spine::Fact;
use crate::services::outbound::{self, ReviewEvent};
use crate::services::Env;

/// Days before a submit in which a COE's worst severity still decides whether it needs
/// a bar raiser.
pub const SEVERITY_REMEMBERED_DAYS: i64 = 14;

/// The worst of `now` (COE `id`'s severity) and every severity it had since `since`
/// (its history's changes of severity).
pub(super) fn worst_severity_since(
    conn: &mut DbConnection,
    id: &str,
    now: crate::domain::Severity,
    since: chrono::NaiveDateTime,
) -> QueryResult<crate::domain::Severity> {
    use crate::db::schema::audit_log;
    let befores: Vec<Option<String>> = audit_log::table
        .filter(audit_log::entity.eq("coe"))
        .filter(audit_log::entity_id.eq(id))
        .filter(audit_log::action.eq("update"))
        .filter(audit_log::at.ge(since))
        .select(audit_log::before)
        .load(conn)?;
    Ok(befores
        .iter()
        .flatten()
        .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
        .filter_map(|b| {
            b["severity"]
                .as_str()
                .and_then(|s| s.parse::<crate::domain::Severity>().ok())
        })
        .fold(
            now,
            |worst: crate::domain::Severity, s| {
                if s.rank() < worst.rank() {
                    s
                } else {
                    worst
                }
            },
        ))
}

/// Chooses the bar raiser of submitted COE `row` (`domain::bar_raiser::choose`) and
/// records it; `None` when the directory has nobody eligible (the audit says why,
/// when there are bar raisers but none fits).
pub(super) fn assign(
    conn: &mut DbConnection,
    row: &CoeRow,
    submitted_by: Option<&str>,
    settings_dotless: &[String],
    now: chrono::NaiveDateTime,
) -> Result<Option<String>, CoeError> {
    let marked: Vec<(String, Option<String>)> = people::table
        .filter(people::bar_raiser.eq(true))
        .filter(people::active.eq(true))
        .select((people::email, people::team))
        .load(conn)?;
    let emails: Vec<&str> = marked.iter().map(|(e, _)| e.as_str()).collect();
    let last: Vec<(Option<String>, Option<chrono::NaiveDateTime>)> = coes::table
        .filter(coes::bar_raiser_email.eq_any(&emails))
        .group_by(coes::bar_raiser_email)
        .select((
            coes::bar_raiser_email,
            diesel::dsl::max(coes::bar_raiser_assigned_at),
        ))
        .load(conn)?;
    let candidates: Vec<Candidate> = marked
        .into_iter()
        .map(|(email, team)| Candidate {
            last_assigned: last
                .iter()
                .find(|(e, _)| e.as_deref() == Some(email.as_str()))
                .and_then(|(_, at)| *at),
            email,
            team,
        })
        .collect();
    let owner_team = team_of(conn, row.owner_email.as_deref())?;
    let chosen = bar_raiser::choose(
        &candidates,
        Exclusions {
            owner: row.owner_email.as_deref(),
            owner_team: owner_team.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            submitted_by,
            dotless_domains: settings_dotless,
        },
    );
    let (chosen, after) = match chosen {
        Ok(email) => {
            diesel::update(coes::table.find(&row.id))
                .set((
                    coes::bar_raiser_email.eq(&email),
                    coes::bar_raiser_assigned_at.eq(now),
                ))
                .execute(conn)?;
            (
                Some(email.clone()),
                serde_json::json!({ "bar_raiser": email }),
            )
        }
        Err(NoBarRaiser::NoneInDirectory) => return Ok(None),
        Err(NoBarRaiser::NoneEligible(why)) => (None, serde_json::json!({ "none": why })),
    };
    let chose = Fact::BarRaiserChosen {
        coe_id: &row.id,
        chosen: &after,
    };
    outbound::noted(conn, coe_service::SYSTEM_ACTOR, chose, now)?;
    Ok(chosen)
}

/// A bar raiser who left during COE `id`'s review (a person leaving): another is
/// chosen as on submit, told as on submit, and recorded; `None` when nobody is
/// eligible (as on submit: the reviewer's approval then suffices, and the audit says
/// why).
pub fn replace_bar_raiser(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    now: chrono::NaiveDateTime,
) -> Result<Option<String>, CoeError> {
    let row = locked(conn, id)?;
    let chosen = assign(
        conn,
        &row,
        row.submitted_by.as_deref(),
        &env.settings.auth.dotless_domains,
        now,
    )?;
    if let Some(email) = &chosen {
        let asked = ReviewEvent::BarRaiserAsked {
            coe: &row,
            bar_raiser: email,
            told_as: coe_service::SYSTEM_ACTOR,
        };
        outbound::happened(conn, env, coe_service::SYSTEM_ACTOR, asked, now)?;
    }
    Ok(chosen)
}

/// Names another bar raiser for COE `id` (an admin's: the one chosen is away, say).
/// They must be marked bar raiser, outside the owner's team, and have no part in the
/// COE. An approval the former bar raiser gave is withdrawn; in review, the new one
/// is emailed.
pub fn name_bar_raiser(
    conn: &mut DbConnection,
    id: &str,
    email: &str,
    who: &Reviewer<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        let row = locked(conn, id)?;
        let state: CoeState = types::read("coes.state", &row.state)?;
        if !matches!(state, CoeState::Draft | CoeState::InReview) {
            return Err(CoeError::Conflict(format!(
                "the COE is {}: its review is over",
                state.as_str().replace('_', " ")
            )));
        }
        if let Some(left) = crate::services::directory::people::has_left(conn, email)? {
            return Err(CoeError::Invalid(vec![("bar_raiser".into(), left)]));
        }
        let person: Option<(bool, Option<String>)> = people::table
            .find(email)
            .select((people::bar_raiser, people::team))
            .first(conn)
            .optional()?;
        let invalid = |p: String| CoeError::Invalid(vec![("bar_raiser".into(), p)]);
        // Whoever names a bar raiser is not one: nobody bar-raises their own choice
        // of themselves.
        let dotless = &env.settings.auth.dotless_domains;
        if who.is_same_person(email, dotless) {
            return Err(invalid(
                "nobody names themselves bar raiser: name another person".to_owned(),
            ));
        }
        let Some((true, team)) = person else {
            return Err(invalid(format!(
                "{email} is not marked bar raiser in the directory (an admin marks them first)"
            )));
        };
        let owner_team = team_of(conn, row.owner_email.as_deref())?;
        let candidate = Candidate {
            email: email.to_owned(),
            team,
            last_assigned: None,
        };
        let not = Exclusions {
            owner: row.owner_email.as_deref(),
            owner_team: owner_team.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            submitted_by: row.submitted_by.as_deref(),
            dotless_domains: dotless,
        };
        if let Err(NoBarRaiser::NoneEligible(_)) = bar_raiser::choose(&[candidate], not) {
            return Err(invalid(format!(
                "{email} is in the owner's team or has a part in this COE: a bar raiser comes \
                 from outside"
            )));
        }
        let (former, approved_by): (Option<String>, Option<String>) = coes::table
            .find(id)
            .select((coes::bar_raiser_email, coes::approved_by))
            .first(conn)?;
        let now = db::now();
        diesel::update(coes::table.find(id))
            .set((
                coes::bar_raiser_email.eq(email),
                coes::bar_raiser_assigned_at.eq(now),
                coes::version.eq(coes::version + 1),
                coes::updated_at.eq(now),
            ))
            .execute(conn)?;
        if approved_by.is_some() && approved_by == former {
            diesel::update(coes::table.find(id))
                .set((
                    coes::approved_by.eq(None::<String>),
                    coes::approved_version.eq(None::<i32>),
                ))
                .execute(conn)?;
        } else if approved_by.is_some() {
            // The reviewer's approval stands: naming a bar raiser changes nothing they
            // read, so it follows the version on (unless it was stale already).
            diesel::update(
                coes::table
                    .find(id)
                    .filter(coes::approved_version.eq(row.version)),
            )
            .set(coes::approved_version.eq(coes::version.nullable()))
            .execute(conn)?;
        }
        let named = ReviewEvent::BarRaiserNamed {
            coe: &row,
            former: former.as_deref(),
            bar_raiser: email,
            in_review: state == CoeState::InReview,
            told_as: who.email.unwrap_or(who.actor),
        };
        outbound::happened(conn, env, who.actor, named, now)?;
        Ok(())
    })
}
