//! The reviewer's comments on a COE's sections, and the answers. They are not part of
//! the writeup: no `If-Match`, and the version stays.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::coes::write_then_show;
use crate::error::{ApiError, ErrorBody};
use crate::http::bearer::Member;
use crate::http::extract::{ids, ApiJson, PathId};
use crate::http::state::AppState;
use crate::services::coe::coes::{self, AnswerInput, CoeDocument, CommentInput};

/// Comments on a section of a COE in review (its reviewer only). Comments are not
/// part of the writeup: no `If-Match`, and the version stays.
#[utoipa::path(operation_id = "add_coe_comment", post, path = "/api/v1/coes/{id}/comments", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id")),
    request_body = CommentInput,
    responses(
        (status = 201, description = "The document, with the comment in `comments`", body = CoeDocument),
        (status = 403, description = "Only the COE's reviewer comments", body = ErrorBody),
        (status = 404, description = "No such COE", body = ErrorBody),
        (status = 409, description = "The COE is not in review", body = ErrorBody),
        (status = 422, description = "Unknown section, or an empty or too long comment", body = ErrorBody),
    ))]
pub async fn add_comment(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    body: ApiJson<CommentInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let input = body.0;
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::CREATED,
        move |conn, id, who, _| coes::add_comment(conn, id, &input, who),
    )
    .await
}

/// Answers a reviewer's comment (whoever may change the COE, while it is a draft or
/// sent back). Answering again replaces the answer.
#[utoipa::path(operation_id = "answer_coe_comment", post, path = "/api/v1/coes/{id}/comments/{comment_id}/answer", tag = "coes", security(("bearer" = [])),
    params(("id" = String, Path, description = "The COE's id"), ("comment_id" = String, Path, description = "The comment's id")),
    request_body = AnswerInput,
    responses(
        (status = 200, description = "The document, with the answer in `comments`", body = CoeDocument),
        (status = 403, description = "Not someone who may change the COE", body = ErrorBody),
        (status = 404, description = "No such COE or comment", body = ErrorBody),
        (status = 409, description = "The COE is in review or approved", body = ErrorBody),
        (status = 422, description = "An empty or too long answer", body = ErrorBody),
    ))]
pub async fn answer_comment(
    Member(caller): Member,
    id: PathId<ids::Coe>,
    comment: PathId<ids::Comment>,
    body: ApiJson<AnswerInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (input, comment) = (body.0, comment.into_inner());
    write_then_show(
        &state,
        &caller,
        id,
        StatusCode::OK,
        move |conn, id, who, _| coes::answer_comment(conn, id, &comment, &input, who),
    )
    .await
}
