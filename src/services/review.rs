//! The review step: a draft is submitted when it is complete, a reviewer who is not
//! its owner approves it or sends it back with comments. Who may take which step from
//! which state is `domain::review::review`; this module loads the facts, checks the
//! writeup's completeness on submit, and records the step.

use crate::services::Env;
use diesel::prelude::*;

use crate::db::models::{CoeRow, ReviewCommentRow};
use crate::db::schema::{coes, people, review_comments};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::bar_raiser::{self, Candidate, Exclusions, NoBarRaiser};
use crate::domain::coe::CoeState;
use crate::domain::review::{self as rules, ReviewFacts, ReviewRefusal};
use crate::email::Kind;
use crate::services::audit::{self, Change, Subject};
use crate::services::coes::{self as coe_service, CoeError};
use crate::services::outbound::notify::{self, CoeFacts};
use crate::services::{access, lifecycle, people as people_service};

pub use crate::domain::coe::MAX_COMMENT_BYTES;

pub use crate::domain::review::ReviewStep as Step;

/// Whether `person` may approve `doc` now: the review's own rule
/// (`domain::review::review`) asked with the document's facts, so that the COE's page
/// offers the approval exactly when the step would be taken.
pub fn may_approve(doc: &coe_service::CoeDocument, person: &str, dotless: &[String]) -> bool {
    let facts = ReviewFacts {
        state: doc.state,
        owner: doc.owner.as_deref(),
        reviewer: doc.reviewer.as_deref(),
        by: Some(person),
        submitted_by: doc.submitted_by.as_deref(),
        reviewer_named_by: doc.reviewer_named_by.as_deref(),
        has_comment: false,
        bar_raiser: doc.bar_raiser.as_deref(),
        approved_by: doc.approved_by.as_deref(),
        dotless_domains: dotless,
    };
    rules::review(Step::Approve, &facts, Vec::new()).is_ok()
}

/// Who takes a review step: submitting needs the right to change the COE
/// (`services::access`), approving and sending back are the reviewer's.
pub use crate::services::access::Editor as Reviewer;

impl From<ReviewRefusal> for CoeError {
    fn from(r: ReviewRefusal) -> Self {
        match r {
            ReviewRefusal::WrongState(m) => CoeError::Conflict(m),
            ReviewRefusal::NotReviewer(m) => CoeError::Forbidden(m),
            ReviewRefusal::Invalid(problems) => CoeError::Invalid(problems),
        }
    }
}

/// COE `id`, locked for the rest of the transaction.
fn locked(conn: &mut DbConnection, id: &str) -> Result<CoeRow, CoeError> {
    locks::lock_coe(conn, id)?;
    coe_service::load_row(conn, id)
}

/// The directory's team of `person`, if any.
fn team_of(conn: &mut DbConnection, person: Option<&str>) -> QueryResult<Option<String>> {
    person.map_or(Ok(None), |person| people_service::team_of(conn, person))
}

/// What a person says with a review step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Said<'a> {
    /// Required to request changes (unless comments at the sections wait); kept and
    /// shown with the COE.
    pub comment: Option<&'a str>,
    /// The approver knows that the COE's incidents are still open: a COE of the worst
    /// outages (`coe.bar_raiser_from`) is approved while its outage may go on only so.
    pub open_incidents_acknowledged: bool,
}

impl<'a> Said<'a> {
    /// A step with `comment` alone.
    pub fn comment(comment: Option<&'a str>) -> Said<'a> {
        Said {
            comment,
            ..Said::default()
        }
    }
}

/// The field a refused approval names when the COE's incidents are still open.
pub const OPEN_INCIDENTS_FIELD: &str = "acknowledge_open_incidents";

/// The incidents of COE `id` that are still open: (id, title).
pub fn open_incidents(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<(String, String)>> {
    use crate::db::schema::{coe_incidents, incidents};
    use crate::domain::incident::IncidentState;
    coe_incidents::table
        .inner_join(incidents::table)
        .filter(coe_incidents::coe_id.eq(id))
        .filter(incidents::state.eq(IncidentState::Open.as_str()))
        .order(incidents::started_at.asc())
        .select((incidents::id, incidents::title))
        .load(conn)
}

/// Whether approving a COE of `severity` while its incidents are open needs the
/// approver's acknowledgment (`coe.bar_raiser_from`: the worst outages).
pub fn approval_needs_closed_incidents(
    severity: crate::domain::Severity,
    settings: &crate::config::Settings,
) -> bool {
    bar_raiser::needed(severity, settings.coe.bar_raiser_from)
}

/// Takes one review step in one transaction; returns nothing, the caller reloads.
pub fn step(
    conn: &mut DbConnection,
    id: &str,
    step: Step,
    said: Said<'_>,
    expected: Option<i32>,
    who: &Reviewer<'_>,
    env: Env<'_>,
) -> Result<(), CoeError> {
    db::write_transaction(conn, |conn| {
        let row = locked(conn, id)?;
        if step == Step::Submit {
            access::coe(conn, id, who)?;
            // The submitter may not approve the round: it must be a person who can be
            // held to it, not a token for nobody.
            if !who.is_person() {
                return Err(CoeError::Forbidden(
                    "a token that stands for no person cannot submit a COE for review: use a \
                     token of your own (one that names you) or the COE's page"
                        .into(),
                ));
            }
        }
        let state: CoeState = types::read("coes.state", &row.state)?;
        let severity = types::severity("coes.severity", row.severity)?;
        let (mut bar_raiser, approved_by, approved_version): (
            Option<String>,
            Option<String>,
            Option<i32>,
        ) = coes::table
            .find(id)
            .select((
                coes::bar_raiser_email,
                coes::approved_by,
                coes::approved_version,
            ))
            .first(conn)?;
        // An approval stands only for the version its approver read.
        let approved_by = approved_by.filter(|_| approved_version == Some(row.version));
        let by = who.person();
        let comment = said.comment.map(str::trim).filter(|c| !c.is_empty());
        if comment.is_some_and(|c| c.len() > MAX_COMMENT_BYTES) {
            return Err(CoeError::Invalid(vec![(
                "comment".into(),
                format!("must be at most {MAX_COMMENT_BYTES} bytes"),
            )]));
        }
        // The reviewer's comments still waiting for an answer: a submit lists them
        // with what the writeup lacks; a request for changes may stand on them alone.
        let waiting = coe_service::unanswered(conn, id)?;
        let template = coe_service::template_of(&row);
        let title_of = |key: &str| {
            template
                .section(key)
                .map_or_else(|| key.to_owned(), |s| s.title.clone())
        };
        let gaps = if step == Step::Submit {
            let doc = coe_service::load(conn, id, env.settings)?;
            doc.completeness
                .missing
                .into_iter()
                .map(|f| (f.at, f.problem))
                .chain(waiting.iter().map(|c| {
                    (
                        c.section.clone(),
                        format!(
                            "the comment by {} waits for an answer: “{}”",
                            c.author, c.body
                        ),
                    )
                }))
                .collect()
        } else {
            Vec::new()
        };
        let next = rules::review(
            step,
            &ReviewFacts {
                state,
                owner: row.owner_email.as_deref(),
                reviewer: row.reviewer_email.as_deref(),
                // The person who answers for the step (a token made by someone else
                // for them answers as its maker; a token for nobody, as nobody).
                by,
                submitted_by: row.submitted_by.as_deref(),
                reviewer_named_by: row.reviewer_named_by.as_deref(),
                has_comment: comment.is_some()
                    || (step == Step::RequestChanges && !waiting.is_empty()),
                bar_raiser: bar_raiser.as_deref(),
                approved_by: approved_by.as_deref(),
                dotless_domains: &env.settings.auth.dotless_domains,
            },
            gaps,
        )?;
        // An approval names the version approved: the one the approver read.
        if step == Step::Approve {
            match expected {
                None => {
                    return Err(CoeError::VersionRequired {
                        current: row.version,
                    })
                }
                Some(v) if v != row.version => {
                    return Err(CoeError::Stale {
                        expected: v,
                        current: row.version,
                    })
                }
                Some(_) => {}
            }
        }
        // A COE of the worst outages approved while its outage may go on: only when
        // the approver says they know (its timeline and impact may still change).
        let open =
            if step == Step::Approve && approval_needs_closed_incidents(severity, env.settings) {
                open_incidents(conn, id)?
            } else {
                Vec::new()
            };
        if !open.is_empty() && !said.open_incidents_acknowledged {
            let names = open
                .iter()
                .map(|(_, title)| format!("“{title}”"))
                .collect::<Vec<_>>()
                .join(", ");
            let (its, is) = if open.len() == 1 {
                ("its incident", "is")
            } else {
                ("its incidents", "are")
            };
            return Err(CoeError::Invalid(vec![(
                OPEN_INCIDENTS_FIELD.into(),
                format!(
                    "{its} {names} {is} still open, so its timeline and impact may still \
                     change: a {severity} COE is approved before its outage ends only when you \
                     acknowledge that"
                ),
            )]));
        }
        let now = db::now();
        if !open.is_empty() {
            audit::record(
                conn,
                Change {
                    subject: Subject::Coe(id),
                    actor: who.actor,
                    action: "open_incidents:acknowledged",
                    before: None,
                    after: Some(serde_json::json!({
                        "incidents": open.iter().map(|(i, _)| i).collect::<Vec<_>>()
                    })),
                },
                now,
            )?;
        }
        // The first of two approvals keeps the COE in review; it is recorded, and a
        // submit or a request for changes starts the next round with none.
        let first_of_two = step == Step::Approve && next == CoeState::InReview;
        if first_of_two {
            diesel::update(coes::table.find(id))
                .set((
                    coes::approved_by.eq(by),
                    coes::approved_version.eq(row.version),
                ))
                .execute(conn)?;
        } else {
            lifecycle::move_to(conn, id, state, next, who.actor, comment, now)?;
            diesel::update(coes::table.find(id))
                .set((
                    coes::approved_by.eq(None::<String>),
                    coes::approved_version.eq(None::<i32>),
                ))
                .execute(conn)?;
        }
        if step == Step::Submit {
            diesel::update(coes::table.find(id))
                .set(coes::submitted_by.eq(who.principal))
                .execute(conn)?;
            // A severity lowered shortly before the submit keeps the bar raiser the
            // worst of them needed: lowering sev1 to sev3 is no way round one.
            let judged = worst_severity_since(
                conn,
                id,
                severity,
                now - chrono::Duration::days(SEVERITY_REMEMBERED_DAYS),
            )?;
            if bar_raiser.is_none() && bar_raiser::needed(judged, env.settings.coe.bar_raiser_from)
            {
                bar_raiser = assign_bar_raiser(
                    conn,
                    &row,
                    who.email,
                    &env.settings.auth.dotless_domains,
                    now,
                )?;
            }
        }
        let step_id = db::new_id();
        diesel::insert_into(review_comments::table)
            .values(ReviewCommentRow {
                id: step_id.clone(),
                coe_id: id.to_owned(),
                author: who.actor.to_owned(),
                verdict: step.verdict().to_owned(),
                body: comment.unwrap_or("").to_owned(),
                created_at: now,
            })
            .execute(conn)?;
        let kind = match step {
            Step::Submit => Kind::ReviewRequested,
            Step::Approve => Kind::Approved,
            Step::RequestChanges => Kind::ChangesRequested,
        };
        // Sent back: the email holds the section comments too, each under its section.
        let mut said = comment.unwrap_or_default().to_owned();
        if step == Step::RequestChanges {
            for c in &waiting {
                said.push_str(&format!("\n\nOn {}: {}", title_of(&c.section), c.body));
            }
        }
        let said = said.trim().to_owned();
        let severity = severity.to_string();
        let facts = CoeFacts::of(&row, &severity);
        let actor = who.email.unwrap_or(who.actor);
        let waiting_for = first_of_two.then(|| {
            if by == row.reviewer_email.as_deref() {
                format!(
                    "{} (bar raiser)",
                    bar_raiser.as_deref().unwrap_or("the bar raiser")
                )
            } else {
                format!(
                    "{} (reviewer)",
                    row.reviewer_email.as_deref().unwrap_or("the reviewer")
                )
            }
        });
        notify::review_step(
            conn,
            env.settings,
            env.emails,
            kind,
            &facts,
            actor,
            Some(said.as_str()).filter(|s| !s.is_empty()),
            waiting_for.as_deref(),
            &step_id,
            now,
        )?;
        let what = match (step, first_of_two) {
            (Step::Submit, _) => "Review requested",
            (Step::RequestChanges, _) => "Changes requested",
            (Step::Approve, true) => "Approved once (waiting for the second approval)",
            (Step::Approve, false) => "COE approved",
        };
        crate::services::outbound::chat::coe_notice(
            conn,
            env.settings,
            crate::config::ChatEvent::Review,
            &facts,
            what,
            Some(actor),
            &format!("review:{}:{step_id}", row.id),
            now,
        )?;
        // The bar raiser is asked once per round, like the reviewer.
        if let (Step::Submit, Some(b)) = (step, bar_raiser.as_deref()) {
            notify::bar_raiser_requested(
                conn,
                env.settings,
                env.emails,
                &facts,
                b,
                actor,
                &step_id,
                now,
            )?;
        }
        // Approved with every action already closed: it closes at once.
        if next == CoeState::Approved {
            lifecycle::settle(
                conn,
                id,
                env.settings.coe.verify_actions_from,
                who.actor,
                now,
            )?;
        }
        Ok(())
    })
}

/// Days before a submit in which a COE's worst severity still decides whether it needs
/// a bar raiser.
pub const SEVERITY_REMEMBERED_DAYS: i64 = 14;

/// The worst of `now` (COE `id`'s severity) and every severity it had since `since`
/// (its history's changes of severity).
fn worst_severity_since(
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
fn assign_bar_raiser(
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
    audit::record(
        conn,
        Change {
            subject: Subject::Coe(&row.id),
            actor: coe_service::SYSTEM_ACTOR,
            action: "bar_raiser",
            before: None,
            after: Some(after),
        },
        now,
    )?;
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
    let chosen = assign_bar_raiser(
        conn,
        &row,
        row.submitted_by.as_deref(),
        &env.settings.auth.dotless_domains,
        now,
    )?;
    if let Some(email) = &chosen {
        let severity = types::severity("coes.severity", row.severity)?.to_string();
        notify::bar_raiser_requested(
            conn,
            env.settings,
            env.emails,
            &CoeFacts::of(&row, &severity),
            email,
            coe_service::SYSTEM_ACTOR,
            &db::new_id(),
            now,
        )?;
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
        if let Some(left) = crate::services::people::has_left(conn, email)? {
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
        audit::record(
            conn,
            Change {
                subject: Subject::Coe(id),
                actor: who.actor,
                action: "bar_raiser",
                before: Some(serde_json::json!({ "bar_raiser": former })),
                after: Some(serde_json::json!({ "bar_raiser": email })),
            },
            now,
        )?;
        if state == CoeState::InReview {
            let severity = types::severity("coes.severity", row.severity)?.to_string();
            notify::bar_raiser_requested(
                conn,
                env.settings,
                env.emails,
                &CoeFacts::of(&row, &severity),
                email,
                who.email.unwrap_or(who.actor),
                &db::new_id(),
                now,
            )?;
        }
        Ok(())
    })
}
