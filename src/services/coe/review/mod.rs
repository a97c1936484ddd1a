//! The review step: a draft is submitted when it is complete, a reviewer who is not
//! its owner approves it or sends it back with comments. Who may take which step from
//! which state is `domain::review::review`; this module loads the facts, checks the
//! writeup's completeness on submit, and records the step.

use diesel::prelude::*;

use crate::db::models::{CoeRow, ReviewCommentRow};
use crate::db::schema::{coes, review_comments};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::bar_raiser;
use crate::domain::coe::CoeState;
use crate::domain::review::{self as rules, ReviewFacts, ReviewRefusal};
use crate::services::coe::coes::{self as coe_service, CoeError};
use crate::services::outbound::spine::{Fact, ReviewStepped};
use crate::services::outbound::{self, ReviewEvent};
use crate::services::Env;
use crate::services::{access, coe::lifecycle, directory::people as people_service};

mod bar_raisers;
pub mod meeting;

pub use bar_raisers::{name_bar_raiser, replace_bar_raiser, SEVERITY_REMEMBERED_DAYS};

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
pub fn approval_needs_closed_incidents(severity: crate::domain::Severity, env: Env<'_>) -> bool {
    let settings = env.settings;
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
            may_submit(conn, id, who)?;
        }
        let state: CoeState = types::read("coes.state", &row.state)?;
        let severity = types::severity("coes.severity", row.severity)?;
        let (mut bar_raiser, approved_by) = standing(conn, &row)?;
        let by = who.person();
        let comment = checked_comment(said.comment)?;
        // The reviewer's comments still waiting for an answer: a submit lists them
        // with what the writeup lacks; a request for changes may stand on them alone.
        let waiting = coe_service::unanswered(conn, id)?;
        let gaps = match step {
            Step::Submit => gaps(conn, id, &waiting, env)?,
            _ => Vec::new(),
        };
        let facts = ReviewFacts {
            state,
            owner: row.owner_email.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            // The person who answers for the step (a token made by someone else for
            // them answers as its maker; a token for nobody, as nobody).
            by,
            submitted_by: row.submitted_by.as_deref(),
            reviewer_named_by: row.reviewer_named_by.as_deref(),
            has_comment: comment.is_some() || (step == Step::RequestChanges && !waiting.is_empty()),
            bar_raiser: bar_raiser.as_deref(),
            approved_by: approved_by.as_deref(),
            dotless_domains: &env.settings.auth.dotless_domains,
        };
        let next = rules::review(step, &facts, gaps)?;
        if step == Step::Approve {
            approves_what_was_read(expected, row.version)?;
        }
        let open = match step {
            Step::Approve => unacknowledged_open(conn, id, severity, said, env)?,
            _ => Vec::new(),
        };
        let now = db::now();
        if !open.is_empty() {
            let acknowledged = Fact::OpenIncidentsAcknowledged {
                coe_id: id,
                incidents: &open,
            };
            outbound::noted(conn, who.actor, acknowledged, now)?;
        }
        // The first of two approvals keeps the COE in review; it is recorded, and a
        // submit or a request for changes starts the next round with none.
        let first_of_two = step == Step::Approve && next == CoeState::InReview;
        let approval = if first_of_two {
            by.map(|b| (b, row.version))
        } else {
            None
        };
        if !first_of_two {
            lifecycle::move_to(conn, id, state, next, who.actor, comment, now)?;
        }
        diesel::update(coes::table.find(id))
            .set((
                coes::approved_by.eq(approval.map(|a| a.0)),
                coes::approved_version.eq(approval.map(|a| a.1)),
            ))
            .execute(conn)?;
        if step == Step::Submit {
            bar_raiser = submitted(conn, &row, severity, bar_raiser, who, env, now)?;
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
        // Sent back: the email holds the section comments too, each under its section.
        let template = coe_service::template_of(&row);
        let stepped = ReviewStepped {
            coe: &row,
            severity,
            step,
            first_of_two,
            comment,
            waiting: waiting
                .iter()
                .map(|c| (section_title(&template, &c.section), c.body.as_str()))
                .collect(),
            by,
            told_as: who.email.unwrap_or(who.actor),
            bar_raiser: bar_raiser.as_deref(),
            step_id: &step_id,
        };
        outbound::happened(conn, env, who.actor, ReviewEvent::Stepped(stepped), now)?;
        // Approved with every action already closed: it closes at once.
        if next == CoeState::Approved {
            let verify_from = env.settings.coe.verify_actions_from;
            lifecycle::settle(conn, id, verify_from, who.actor, now)?;
        }
        Ok(())
    })
}

/// COE `row`'s bar raiser, and who approved it, when the approval stands: it stands
/// only for the version its approver read.
fn standing(
    conn: &mut DbConnection,
    row: &CoeRow,
) -> Result<(Option<String>, Option<String>), CoeError> {
    let (bar_raiser, approved_by, approved_version): (Option<String>, Option<String>, Option<i32>) =
        coes::table
            .find(&row.id)
            .select((
                coes::bar_raiser_email,
                coes::approved_by,
                coes::approved_version,
            ))
            .first(conn)?;
    Ok((
        bar_raiser,
        approved_by.filter(|_| approved_version == Some(row.version)),
    ))
}

/// What a step says, trimmed (nothing when blank), at most `MAX_COMMENT_BYTES`.
fn checked_comment(comment: Option<&str>) -> Result<Option<&str>, CoeError> {
    let comment = comment.map(str::trim).filter(|c| !c.is_empty());
    if comment.is_some_and(|c| c.len() > MAX_COMMENT_BYTES) {
        return Err(CoeError::Invalid(vec![(
            "comment".into(),
            format!("must be at most {MAX_COMMENT_BYTES} bytes"),
        )]));
    }
    Ok(comment)
}

/// Whether `who` may submit COE `id`: the right to change it, and a person who can be
/// held to it (the submitter may not approve the round), not a token for nobody.
fn may_submit(conn: &mut DbConnection, id: &str, who: &Reviewer<'_>) -> Result<(), CoeError> {
    access::coe(conn, id, who)?;
    if !who.is_person() {
        return Err(CoeError::Forbidden(
            "a token that stands for no person cannot submit a COE for review: use a \
             token of your own (one that names you) or the COE's page"
                .into(),
        ));
    }
    Ok(())
}

/// What COE `id` lacks for a submit: the writeup's missing parts and the reviewer's
/// comments `waiting` for an answer.
fn gaps(
    conn: &mut DbConnection,
    id: &str,
    waiting: &[coe_service::SectionComment],
    env: Env<'_>,
) -> Result<Vec<(String, String)>, CoeError> {
    let doc = coe_service::load(conn, id, env)?;
    Ok(doc
        .completeness
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
        .collect())
}

/// An approval names the version approved: the one the approver read.
fn approves_what_was_read(expected: Option<i32>, current: i32) -> Result<(), CoeError> {
    match expected {
        None => Err(CoeError::VersionRequired { current }),
        Some(v) if v != current => Err(CoeError::Stale {
            expected: v,
            current,
        }),
        Some(_) => Ok(()),
    }
}

/// The open incidents an approval of COE `id` acknowledges: a COE of the worst
/// outages approved while its outage may go on only when the approver says they know
/// (its timeline and impact may still change). Refused when not acknowledged.
fn unacknowledged_open(
    conn: &mut DbConnection,
    id: &str,
    severity: crate::domain::Severity,
    said: Said<'_>,
    env: Env<'_>,
) -> Result<Vec<String>, CoeError> {
    if !approval_needs_closed_incidents(severity, env) {
        return Ok(Vec::new());
    }
    let open = open_incidents(conn, id)?;
    if open.is_empty() || said.open_incidents_acknowledged {
        return Ok(open.into_iter().map(|(id, _)| id).collect());
    }
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
    Err(CoeError::Invalid(vec![(
        OPEN_INCIDENTS_FIELD.into(),
        format!(
            "{its} {names} {is} still open, so its timeline and impact may still change: a \
             {severity} COE is approved before its outage ends only when you acknowledge that"
        ),
    )]))
}

/// Records who submitted COE `row` and gives it a bar raiser when its worst severity
/// lately needs one and it has none yet. Returns its bar raiser.
fn submitted(
    conn: &mut DbConnection,
    row: &CoeRow,
    severity: crate::domain::Severity,
    bar_raiser: Option<String>,
    who: &Reviewer<'_>,
    env: Env<'_>,
    now: chrono::NaiveDateTime,
) -> Result<Option<String>, CoeError> {
    diesel::update(coes::table.find(&row.id))
        .set(coes::submitted_by.eq(who.principal))
        .execute(conn)?;
    // A severity lowered shortly before the submit keeps the bar raiser the worst of
    // them needed: lowering sev1 to sev3 is no way round one.
    let since = now - chrono::Duration::days(bar_raisers::SEVERITY_REMEMBERED_DAYS);
    let judged = bar_raisers::worst_severity_since(conn, &row.id, severity, since)?;
    if bar_raiser.is_some() || !bar_raiser::needed(judged, env.settings.coe.bar_raiser_from) {
        return Ok(bar_raiser);
    }
    // Whoever submitted it is no bar raiser of it (`domain::bar_raiser::Exclusions`).
    let submitter = who.email;
    bar_raisers::assign(
        conn,
        row,
        submitter,
        &env.settings.auth.dotless_domains,
        now,
    )
}

/// The title of section `key` in `template` (the key, for a section it lacks).
fn section_title(template: &crate::domain::template::Template, key: &str) -> String {
    template
        .section(key)
        .map_or_else(|| key.to_owned(), |s| s.title.clone())
}
