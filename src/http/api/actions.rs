//! Corrective actions: `POST /api/v1/coes/{id}/actions`, `/api/v1/actions…`, and the
//! review steps of a COE.

use actix_web::{http::StatusCode, web, HttpResponse};
use chrono::NaiveDate;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::domain::action::{ActionKind, ActionState, Priority, Transition};
use crate::error::{ApiError, ErrorBody, FieldProblem};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::{ids, ApiJson, ApiQuery, IfMatch, OptionalJson, PathId};
use crate::http::pagination::{self, Listed, Page};
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::coe::actions::risk::{RiskDecision, RiskRequest, RiskView};
use crate::services::coe::actions::{
    self, ActionDetail, ActionError, ActionFilter, ActionPatch, ActionSort, ActionView, NewAction,
    TransitionInput, VerifyInput,
};
use crate::services::coe::coes::CoeDocument;
use crate::services::coe::review::meeting::{MeetingInput, MeetingView};

use super::coes::{document, document_response};
use crate::services::coe::review::{self, Step};
use crate::services::directory::tokens::Caller;

impl From<ActionError> for ApiError {
    fn from(e: ActionError) -> Self {
        match e {
            e @ (ActionError::NotFound(_) | ActionError::CoeNotFound(_)) => {
                ApiError::NotFound(e.to_string())
            }
            e @ (ActionError::CoeClosed(_) | ActionError::NotDeletable(_)) => ApiError::Conflict {
                message: e.to_string(),
                fields: vec![],
            },
            ActionError::Transition(t) => ApiError::Conflict {
                message: t.to_string(),
                fields: vec![],
            },
            ActionError::Invalid(problems) => ApiError::Validation(
                problems
                    .into_iter()
                    .map(|(f, p)| FieldProblem::new(f, p))
                    .collect(),
            ),
            ActionError::Forbidden(m) => ApiError::Forbidden(m),
            ActionError::Conflict(message) => ApiError::Conflict {
                message,
                fields: vec![],
            },
            ActionError::Database(e) => e.into(),
        }
    }
}

/// Adds a corrective action to a COE.
#[utoipa::path(operation_id = "create_action", post, path = "/api/v1/coes/{id}/actions", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = NewAction,
    responses(
        (status = 201, description = "The new action", body = ActionDetail),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The COE is closed", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid (due date in the past, bad owner…)", body = ErrorBody),
    ))]
pub async fn create(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<NewAction>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (coe_id, input, acting) = (id.into_inner(), body.0, caller.acting());
    // Checked and its email composed on a connection of the pool; written by the
    // writer (with the writes that wait with it), which gives it back as stored.
    let prepared = with_conn(&state, move |conn, state| {
        let clock = state.settings.clock();
        Ok(actions::prepare(
            conn,
            &coe_id,
            &input,
            &acting.editor(),
            clock,
            state.env(),
        )?)
    })
    .await?;
    let detail = with_write(&state, move |conn, state| {
        Ok(actions::add(conn, prepared, state.env())?)
    })
    .await?;
    Ok(HttpResponse::Created().json(detail))
}

/// One action with the history of its due date.
#[utoipa::path(operation_id = "get_action", get, path = "/api/v1/actions/{id}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    responses(
        (status = 200, description = "The action", body = ActionDetail),
        (status = 404, description = "No such action", body = ErrorBody),
    ))]
pub async fn get(
    _: Member,
    id: PathId<ids::Action>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let detail = with_conn(&state, move |conn, state| {
        Ok(actions::get(
            conn,
            &id,
            state.settings.clock(),
            &state.env().connections.trackers,
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(detail))
}

/// Changes an action. Moving the due date needs a `reason`; each move is kept.
#[utoipa::path(operation_id = "patch_action", patch, path = "/api/v1/actions/{id}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    request_body = ActionPatch,
    responses(
        (status = 200, description = "The updated action", body = ActionDetail),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 422, description = "A field is invalid, or a due date moves without a reason", body = ErrorBody),
    ))]
pub async fn patch(
    Member(caller): Member,
    id: PathId<ids::Action>,
    body: ApiJson<ActionPatch>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, patch, acting) = (id.into_inner(), body.0, caller.acting());
    let written = id.clone();
    with_write(&state, move |conn, state| {
        let clock = state.settings.clock();
        Ok(actions::patch(
            conn,
            &written,
            &patch,
            &acting.editor(),
            clock,
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(read_back(&state, id).await?))
}

/// Deletes an action added by mistake: only while its COE is a draft, by the COE's
/// owner or an admin (recorded in the COE's history).
#[utoipa::path(operation_id = "delete_action", delete, path = "/api/v1/actions/{id}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    responses(
        (status = 200, description = "Deleted: which action, of which COE", body = DeletedAction),
        (status = 403, description = "Not the COE's owner", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 409, description = "The COE is no longer a draft", body = ErrorBody),
    ))]
pub async fn delete(
    Member(caller): Member,
    id: PathId<ids::Action>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, acting) = (id.into_inner(), caller.acting());
    let key = id.clone();
    let coe_id = with_write(&state, move |conn, state| {
        Ok(actions::delete(conn, &key, &acting.editor(), state.env())?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(DeletedAction { id, coe_id }))
}

/// The answer to deleting an action.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DeletedAction {
    pub id: String,
    pub coe_id: String,
}

/// The COE's reviewer verifies a done action against its success criteria
/// (`{"verified": true}`), or refuses it with the reason (`{"verified": false,
/// "reason"}`: back to in progress). A COE at or above `coe.verify_actions_from`
/// closes only when every action is verified or won't be done.
#[utoipa::path(operation_id = "verify_action", post, path = "/api/v1/actions/{id}/verify", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    request_body = VerifyInput,
    responses(
        (status = 200, description = "The action, verified or back in progress", body = ActionDetail),
        (status = 403, description = "Not the COE's reviewer", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 409, description = "The action is not done", body = ErrorBody),
        (status = 422, description = "`verified` missing, or a refusal without its reason", body = ErrorBody),
    ))]
pub async fn verify(
    Member(caller): Member,
    id: PathId<ids::Action>,
    body: ApiJson<VerifyInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, input, acting) = (id.into_inner(), body.0, caller.acting());
    let written = id.clone();
    with_write(&state, move |conn, state| {
        Ok(actions::verify(
            conn,
            &written,
            &input,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(read_back(&state, id).await?))
}

/// Asks to accept an action's risk until a day instead of moving its due date again:
/// what interim control is in place, what risk remains. The owner's manager or the
/// COE's bar raiser (emailed) decides (`…/risk/accept`, `…/risk/refuse`).
#[utoipa::path(operation_id = "ask_risk", post, path = "/api/v1/actions/{id}/risk", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id")),
    request_body = RiskRequest,
    responses(
        (status = 201, description = "Asked: the request, waiting for a decision", body = RiskView),
        (status = 403, description = "Not someone who may change the action", body = ErrorBody),
        (status = 404, description = "No such action", body = ErrorBody),
        (status = 409, description = "The action is closed, or a request already waits", body = ErrorBody),
        (status = 422, description = "A field missing or out of range (named)", body = ErrorBody),
    ))]
pub async fn ask_risk(
    Member(caller): Member,
    id: PathId<ids::Action>,
    body: ApiJson<RiskRequest>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, input, acting) = (id.into_inner(), body.0, caller.acting());
    let asked = with_write(&state, move |conn, state| {
        let clock = state.settings.clock();
        Ok(actions::risk::ask(
            conn,
            &id,
            &input,
            &acting.editor(),
            clock,
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Created().json(asked))
}

/// The owner's manager or the COE's bar raiser accepts (`accept`) or refuses
/// (`refuse`, with a note) the request waiting on an action. Accepted, the action is
/// due on the day asked for and shown apart until then; after it, it is overdue and
/// escalated as usual.
#[utoipa::path(operation_id = "decide_risk", post, path = "/api/v1/actions/{id}/risk/{decision}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id"),
           ("decision" = String, Path, description = "accept or refuse")),
    request_body = RiskDecision,
    responses(
        (status = 200, description = "Decided", body = RiskView),
        (status = 403, description = "Not the owner's manager or the COE's bar raiser, or the owner or asker themselves", body = ErrorBody),
        (status = 404, description = "No such action or decision", body = ErrorBody),
        (status = 409, description = "Nothing waits for a decision", body = ErrorBody),
        (status = 422, description = "A refusal without its note", body = ErrorBody),
    ))]
pub async fn decide_risk(
    Member(caller): Member,
    id: PathId<ids::Action>,
    path: web::Path<(String, String)>,
    body: OptionalJson<RiskDecision>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (_, decision) = path.into_inner();
    let id = id.into_inner();
    let accept = match decision.as_str() {
        "accept" => true,
        "refuse" => false,
        other => {
            return Err(ApiError::NotFound(format!(
                "no decision `{}`: accept or refuse",
                other.escape_default()
            )))
        }
    };
    let (input, acting) = (body.0.unwrap_or_default(), caller.acting());
    let decided = with_write(&state, move |conn, state| {
        let clock = state.settings.clock();
        Ok(actions::risk::decide(
            conn,
            &id,
            accept,
            &input,
            &acting.editor(),
            clock,
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(decided))
}

/// Moves an action: `start`, `complete` (note = resolution, optional evidence_url),
/// `wont-do` (note = reason), `reopen` (note = why).
#[utoipa::path(operation_id = "transition_action", post, path = "/api/v1/actions/{id}/{transition}", tag = "actions", security(("bearer" = [])),
    params(("id" = String, Path, description = "The action's id"),
           ("transition" = String, Path, description = "start, complete, wont-do or reopen")),
    request_body = TransitionInput,
    responses(
        (status = 200, description = "The updated action", body = ActionDetail),
        (status = 404, description = "No such action or transition", body = ErrorBody),
        (status = 409, description = "Not allowed from the current state; the allowed ones are named", body = ErrorBody),
        (status = 422, description = "A note is required", body = ErrorBody),
    ))]
pub async fn transition(
    Member(caller): Member,
    id: PathId<ids::Action>,
    path: web::Path<(String, String)>,
    body: OptionalJson<TransitionInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (_, verb) = path.into_inner();
    let verb = match verb.as_str() {
        "start" => Transition::Start,
        "complete" => Transition::Complete,
        "wont-do" => Transition::WontDo,
        "reopen" => Transition::Reopen,
        other => {
            return Err(ApiError::NotFound(format!(
                "no action transition `{}`; they are start, complete, wont-do, reopen",
                other.escape_default()
            )))
        }
    };
    let (id, input, acting) = (id.into_inner(), body.0.unwrap_or_default(), caller.acting());
    let written = id.clone();
    with_write(&state, move |conn, state| {
        Ok(actions::transition(
            conn,
            &written,
            verb,
            &input,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(read_back(&state, id).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ActionQuery {
    /// The owner's email.
    pub owner: Option<String>,
    /// The owners' team, from the people directory.
    pub team: Option<String>,
    /// A COE's id.
    pub coe: Option<String>,
    /// open, in_progress, done or wont_do.
    #[param(value_type = Option<String>)]
    pub status: Option<ActionState>,
    /// Only overdue (true) or only not overdue (false) actions.
    pub overdue: Option<bool>,
    /// Due before this date (YYYY-MM-DD).
    #[param(value_type = Option<String>)]
    pub due_before: Option<NaiveDate>,
    #[param(value_type = Option<String>)]
    pub priority: Option<Priority>,
    #[param(value_type = Option<String>)]
    pub kind: Option<ActionKind>,
    /// `due_date` (default) or `days_overdue`.
    pub sort: Option<String>,
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// A page of actions.
pub type ActionPage = Page<ActionView>;

impl Listed for ActionView {
    const FIELD: &'static str = "actions";
    const PAGE: &'static str = "ActionPage";
}

/// Finds actions: by owner, team, COE, status, overdue, due date, priority, kind.
#[utoipa::path(operation_id = "list_actions", get, path = "/api/v1/actions", tag = "actions", security(("bearer" = [])),
    params(ActionQuery),
    responses(
        (status = 200, description = "A page of actions", body = ActionPage),
        (status = 422, description = "A bad query parameter", body = ErrorBody),
    ))]
pub async fn list(
    _: Member,
    query: ApiQuery<ActionQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = query.0;
    let (limit, offset) = pagination::limits(q.limit, q.offset)?;
    let sort = match q.sort.as_deref() {
        None | Some("due_date") => ActionSort::DueDate,
        Some("days_overdue") => ActionSort::DaysOverdue,
        Some(other) => {
            return Err(ApiError::field(
                "sort",
                format!("must be due_date or days_overdue (got {other:?})"),
            ))
        }
    };
    if let Some(date) = q.due_before {
        crate::domain::action::check_date(date).map_err(|p| ApiError::field("due_before", p))?;
    }
    let filter = ActionFilter {
        owner: q.owner.map(|o| o.trim().to_lowercase()),
        team: q.team,
        coe: q.coe,
        state: q.status,
        overdue: q.overdue,
        due_before: q.due_before,
        priority: q.priority,
        kind: q.kind,
        ..ActionFilter::default()
    };
    let found = with_conn(&state, move |conn, state| {
        let clock = state.settings.clock();
        // The exact total is counted once per change to actions or people (100,000
        // overdue of 1,000,000 take a count each), like the board's totals.
        let total =
            state
                .action_counts
                .get(conn, clock.today(), &format!("{filter:?}"), |conn| {
                    actions::count(conn, &filter, clock)
                })?;
        let page = actions::page(conn, &filter, sort, limit, offset, clock)?;
        Ok((page, total))
    })
    .await?;
    Ok(HttpResponse::Ok().json(ActionPage::new(found, limit, offset)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewInput {
    /// Required to request changes; kept and shown with the COE.
    #[serde(default)]
    pub comment: Option<String>,
    /// Approving a COE at or above `coe.bar_raiser_from` while one of its incidents is
    /// still open: `true` says the approver knows (refused with 422 otherwise).
    #[serde(default)]
    pub acknowledge_open_incidents: bool,
}

async fn review_step(
    caller: Caller,
    id: PathId<ids::Coe>,
    step: Step,
    expected: Option<i32>,
    body: OptionalJson<ReviewInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let body = body.0.unwrap_or_default();
    let written = id.clone();
    with_write(&state, move |conn, state| {
        let acting = caller.acting();
        let who = acting.editor();
        Ok(review::step(
            conn,
            &written,
            step,
            review::Said {
                comment: body.comment.as_deref(),
                open_incidents_acknowledged: body.acknowledge_open_incidents,
            },
            expected,
            &who,
            state.env(),
        )?)
    })
    .await?;
    Ok(document_response(
        StatusCode::OK,
        document(&state, id).await?,
    ))
}

/// Submits a draft for review. Refused with every missing piece at once when incomplete.
#[utoipa::path(operation_id = "submit_coe", post, path = "/api/v1/coes/{id}/submit", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Now in review", body = CoeDocument),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not a draft; the allowed steps are named", body = ErrorBody),
        (status = 422, description = "Incomplete: every missing piece is listed; or no reviewer, or the reviewer is the owner", body = ErrorBody),
    ))]
pub async fn submit(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: OptionalJson<ReviewInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    review_step(caller, id, Step::Submit, None, body, state).await
}

/// Sets or moves the review meeting of a COE in review: a time (`starts_at`), or the
/// organisation's weekly slot (`weekly_slot: true`). Its owner, reviewer, bar raiser
/// and action owners get an iCalendar invitation (`METHOD:REQUEST`); a move sends the
/// update (the same UID, the next SEQUENCE).
#[utoipa::path(operation_id = "set_review_meeting", put, path = "/api/v1/coes/{id}/review-meeting", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = MeetingInput,
    responses(
        (status = 200, description = "The meeting, and who was invited", body = MeetingView),
        (status = 403, description = "Not someone who may change the COE", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The COE is not in review", body = ErrorBody),
        (status = 422, description = "No time, a time past, or no weekly slot (named)", body = ErrorBody),
    ))]
pub async fn set_review_meeting(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<MeetingInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, input, acting) = (id.into_inner(), body.0, caller.acting());
    let meeting = with_write(&state, move |conn, state| {
        Ok(review::meeting::set(
            conn,
            &id,
            &input,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(meeting))
}

/// Cancels the review meeting of a COE: its attendees get the cancellation
/// (`METHOD:CANCEL`), which takes it off their calendars.
#[utoipa::path(operation_id = "cancel_review_meeting", delete, path = "/api/v1/coes/{id}/review-meeting", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    responses(
        (status = 200, description = "Cancelled", body = MeetingView),
        (status = 403, description = "Not someone who may change the COE", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "No meeting is set", body = ErrorBody),
    ))]
pub async fn cancel_review_meeting(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, acting) = (id.into_inner(), caller.acting());
    let meeting = with_write(&state, move |conn, state| {
        Ok(review::meeting::cancel(
            conn,
            &id,
            &acting.editor(),
            state.env(),
        )?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(meeting))
}

/// Body of `PUT /api/v1/coes/{id}/bar-raiser`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BarRaiserInput {
    /// A person marked bar raiser, outside the owner's team, with no part in the COE.
    #[schema(value_type = String)]
    pub bar_raiser: crate::domain::EmailAddress,
}

/// Names another bar raiser for a COE in draft or review (admins only: the one
/// chosen on submit is away, say). An approval the former one gave is withdrawn; in
/// review, the new one is emailed.
#[utoipa::path(operation_id = "name_bar_raiser", put, path = "/api/v1/coes/{id}/bar-raiser", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = BarRaiserInput,
    responses(
        (status = 200, description = "The COE with its new bar raiser", body = CoeDocument),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Approved, closed or merged: the review is over", body = ErrorBody),
        (status = 422, description = "Not a bar raiser, of the owner's team, or with a part in the COE", body = ErrorBody),
    ))]
pub async fn name_bar_raiser(
    Admin(caller): Admin,
    id: PathId<ids::Coe>,
    body: ApiJson<BarRaiserInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, email) = (id.into_inner(), body.0.bar_raiser);
    let written = id.clone();
    with_write(&state, move |conn, state| {
        let acting = caller.acting();
        let who = acting.editor();
        Ok(review::name_bar_raiser(
            conn,
            &written,
            email.as_str(),
            &who,
            state.env(),
        )?)
    })
    .await?;
    Ok(document_response(
        StatusCode::OK,
        document(&state, id).await?,
    ))
}

/// Approves a COE in review, as of the version read (`If-Match`, required): a COE is
/// approved only as its approvers read it. The reviewer or bar raiser only. A COE of the
/// worst outages (`coe.bar_raiser_from`) whose incidents are still open is approved only
/// with `acknowledge_open_incidents: true`.
#[utoipa::path(operation_id = "approve_coe", post, path = "/api/v1/coes/{id}/approve", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"),
           ("If-Match" = String, Header, description = "The version approved: the one read")),
    request_body(content = Option<ReviewInput>, description = "Optional: a comment, the acknowledgment of incidents still open"),
    responses(
        (status = 200, description = "Approved (closed at once when every action is already closed)", body = CoeDocument),
        (status = 403, description = "Not the reviewer", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not in review; the allowed steps are named", body = ErrorBody),
        (status = 412, description = "The COE changed since the version read: read it again", body = ErrorBody),
        (status = 422, description = "Its incidents are still open and the approval does not acknowledge it (`acknowledge_open_incidents`)", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub async fn approve(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    IfMatch(expected): IfMatch,
    body: OptionalJson<ReviewInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    review_step(caller, id, Step::Approve, expected, body, state).await
}

/// Sends a COE in review back to draft with a comment. The reviewer only (or an admin).
#[utoipa::path(operation_id = "request_coe_changes", post, path = "/api/v1/coes/{id}/request-changes", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = ReviewInput,
    responses(
        (status = 200, description = "Back to draft; the comment is kept", body = CoeDocument),
        (status = 403, description = "Not the reviewer", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "Not in review; the allowed steps are named", body = ErrorBody),
        (status = 422, description = "No comment", body = ErrorBody),
    ))]
pub async fn request_changes(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: OptionalJson<ReviewInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    review_step(caller, id, Step::RequestChanges, None, body, state).await
}

/// Action `id` as stored, read after the write that changed it committed (on a
/// connection of the pool: the writer reads nothing back).
async fn read_back(state: &web::Data<AppState>, id: String) -> Result<ActionDetail, ApiError> {
    with_conn(state, move |conn, state| {
        Ok(actions::get(
            conn,
            &id,
            state.settings.clock(),
            &state.env().connections.trackers,
        )?)
    })
    .await
}
