//! The review of a COE from its page: submit (every missing piece listed at once),
//! approve, request changes with a comment; the whole COE as one printable document
//! for the start of the review meeting (its history is `coe_history`).

use actix_web::http::StatusCode;
use actix_web::web;
use serde_json::json;

use super::coe_answer;
use super::coe_load::related_links;
use super::error::PageError;
use super::guard::CoeForm;
use super::kit::{render, Page, State};
use crate::domain::coe::CoeState;
use crate::http::session::SignedIn;
use crate::services::coe::coes::{self as coes_service, CoeError, CommentInput, SectionEdit};
use crate::services::coe::review::{self, Step};

/// `POST /coes/{id}/review/{step}`: submit, approve or request-changes. What was typed
/// elsewhere on the page goes with the step it belongs to: submitting saves the
/// sections typed first (what is submitted is what the owner sees), requesting changes
/// adds the comments typed at the sections first; the rest is kept.
pub async fn step(form: CoeForm) -> Page {
    let name = form.item.clone();
    let step = [Step::Submit, Step::Approve, Step::RequestChanges]
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| PageError::NotFound(format!("no review step {name:?}")))?;
    let comment = form.fields.part("review").filled("comment");
    let acknowledged = form
        .fields
        .part("review")
        .filled(review::OPEN_INCIDENTS_FIELD)
        .is_some();
    let fields = &form.fields;
    // Submitting names its reviewer beside the button: one of the suggestions
    // (`reviewer_pick`, a button of its own), or the person typed.
    let reviewer = match step {
        Step::Submit => {
            let review = fields.part("review");
            review
                .filled("reviewer_pick")
                .or_else(|| review.filled("reviewer"))
        }
        _ => None,
    };
    let edits: Vec<SectionEdit> = match step {
        Step::Submit => coe_answer::section_edits(fields)
            .into_iter()
            .filter(coe_answer::changed)
            .collect(),
        _ => Vec::new(),
    };
    let comments: Vec<CommentInput> = match step {
        Step::RequestChanges => fields
            .parts("review")
            .into_iter()
            .filter_map(|part| part.strip_prefix("comment:"))
            .map(|section| CommentInput {
                section: section.to_owned(),
                body: fields.text(&format!("comment:{section}.body")),
            })
            .filter(|c| !c.body.trim().is_empty())
            .collect(),
        _ => Vec::new(),
    };
    // What the step takes along is part of it; nothing else is.
    let own = match step {
        Step::Submit if !edits.is_empty() => "sections",
        _ => "review",
    };
    // An approval names the version the approver read (the page's).
    form.change("review", own, move |conn, state, editor, coe, version| {
        let read = if step == Step::Approve { version } else { None };
        // The reviewer named stays named when the COE is not ready to submit: the
        // list of what is missing is what to do next, not the reviewer again.
        if let Some(reviewer) = &reviewer {
            crate::db::write_transaction(conn, |conn| {
                name_reviewer(conn, coe, reviewer, version, editor, state)
            })?;
        }
        crate::db::write_transaction(conn, |conn| {
            if !edits.is_empty() {
                let saved = coes_service::put_sections(conn, coe, &edits, editor, &state.env())?;
                let mut problems = saved.refused;
                problems.extend(saved.conflicts.into_iter().map(|c| {
                    (
                        c.key,
                        "someone else saved it while you were writing: merge theirs into yours, \
                         save it, then submit"
                            .to_owned(),
                    )
                }));
                if !problems.is_empty() {
                    return Err(CoeError::Invalid(problems));
                }
            }
            for c in &comments {
                coes_service::add_comment(conn, coe, c, editor)?;
            }
            review::step(
                conn,
                coe,
                step,
                review::Said {
                    comment: comment.as_deref(),
                    open_incidents_acknowledged: acknowledged,
                },
                read,
                editor,
                state.env(),
            )
        })
    })
    .await
}

/// Names `typed` the reviewer of COE `coe` as it is submitted, when it is not already.
fn name_reviewer(
    conn: &mut crate::db::DbConnection,
    coe: &str,
    typed: &str,
    version: Option<i32>,
    editor: &crate::services::access::Editor<'_>,
    state: &crate::http::state::AppState,
) -> Result<(), CoeError> {
    let reviewer = crate::domain::EmailAddress::parse(typed)
        .map_err(|p| CoeError::Invalid(vec![("reviewer".into(), p)]))?;
    let now = coes_service::load(conn, coe, state.env())?;
    if now.reviewer.as_deref() == Some(reviewer.as_str()) {
        return Ok(());
    }
    let patch = coes_service::CoePatch {
        reviewer: Some(reviewer),
        ..coes_service::CoePatch::default()
    };
    coes_service::patch(conn, coe, patch, version, editor, state.env())
}

/// The rules that decide how COE `doc` is approved and closed, as its review panel
/// says them, so that none of them vanishes silently: a sev1 with no bar raiser
/// (nobody in the directory is marked one, `bar_raisers`), the open incidents (of
/// `incidents`: id, title, state) its approver must acknowledge, and closing that
/// waits for each action's verification.
pub(super) fn rules(
    doc: &crate::services::coe::coes::CoeDocument,
    bar_raisers: i64,
    incidents: &[(String, String, String)],
    env: crate::services::Env<'_>,
) -> serde_json::Map<String, serde_json::Value> {
    use crate::domain::incident::IncidentState;
    let mut out = serde_json::Map::new();
    let coe = &env.settings.coe;
    let lacks_bar_raiser = doc.bar_raiser.is_none()
        && crate::domain::bar_raiser::needed(doc.severity, coe.bar_raiser_from)
        && matches!(doc.state, CoeState::Draft | CoeState::InReview);
    out.insert(
        "no_bar_raiser".into(),
        json!(lacks_bar_raiser && bar_raisers == 0),
    );
    out.insert(
        "no_eligible_bar_raiser".into(),
        json!(lacks_bar_raiser && bar_raisers > 0 && doc.state == CoeState::InReview),
    );
    // Approving the worst outages while an incident is still open: the approver
    // acknowledges it (`services::coe::review::step`).
    let open: Vec<&str> = incidents
        .iter()
        .filter(|(_, _, state)| state == IncidentState::Open.as_str())
        .map(|(_, title, _)| title.as_str())
        .collect();
    let acknowledge = doc.state == CoeState::InReview
        && crate::services::coe::review::approval_needs_closed_incidents(doc.severity, env);
    out.insert(
        "open_incidents".into(),
        json!(if acknowledge { open } else { Vec::new() }),
    );
    out.insert(
        "closes_when_verified".into(),
        json!(crate::domain::coe::needs_verification(
            doc.severity,
            coe.verify_actions_from
        )),
    );
    out
}

/// `GET /coes/{id}/print`: the whole COE as one document, without forms, laid out
/// for reading and printing.
pub async fn print(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let loaded = super::coe_load::load(&state, &path, &who, false).await?;
    let doc = &loaded.doc;
    let related = related_links(doc);
    let names = super::kit::names_data(&loaded.directory);
    let data = json!({
        "names": names,
        "state": doc.state.as_str().replace('_', " "),
        "closed": doc.state == CoeState::Closed,
        "related": related,
        "missing": super::coe_load::findings(&doc.completeness.missing, &doc.sections),
        "coe": doc,
    });
    render(&state, Some(&who), StatusCode::OK, "coe_print", data)
}

/// `POST /coes/{id}/meeting/{step}`: the review meeting set at a time (`set`,
/// `meeting.starts_at` in the person's own time zone, `meeting.minutes`), at the
/// organisation's weekly slot (`slot`), or cancelled (`cancel`).
pub async fn meeting(form: CoeForm) -> Page {
    use crate::services::coe::review::meeting::{self as meetings, MeetingInput};
    let step = form.item.clone();
    let mine = form.fields.part("meeting");
    let zone = super::kit::zone_of(&form.state, Some(&form.who));
    let input = MeetingInput {
        starts_at: mine
            .filled("starts_at")
            .map(|t| super::kit::from_local_input(&t, zone)),
        weekly_slot: step == "slot",
        minutes: mine.filled("minutes").and_then(|m| m.trim().parse().ok()),
    };
    if !["set", "slot", "cancel"].contains(&step.as_str()) {
        return Err(PageError::NotFound(format!("no meeting step {step:?}")));
    }
    form.change(
        "review",
        "meeting",
        move |conn, state, editor, coe, _| match step.as_str() {
            "cancel" => meetings::cancel(conn, coe, editor, state.env()).map(drop),
            _ => meetings::set(conn, coe, &input, editor, state.env()).map(drop),
        },
    )
    .await
}
