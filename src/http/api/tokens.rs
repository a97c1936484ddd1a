//! `/api/v1/tokens` and `/api/v1/me`.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::{EmailAddress, Role, TokenName};
use crate::error::{ApiError, ErrorBody, FieldProblem};
use crate::http::bearer::Admin;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::{with_conn, AppState};
use crate::services::directory::tokens::{self, Caller, TokenError, TokenInfo};

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::NameTaken(name) => ApiError::Conflict {
                message: format!("a token named `{name}` already exists"),
                fields: vec![FieldProblem::new(
                    "name",
                    "is already taken by an active token",
                )],
            },
            TokenError::NotFound(name) => {
                ApiError::NotFound(format!("no active token named `{name}`"))
            }
            TokenError::Database(e) => e.into(),
        }
    }
}

/// Body of `POST /api/v1/tokens`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// Letters, digits, `-`, `_`, `.`; 1 to 64 characters; unique among active tokens.
    #[schema(value_type = String, example = "alertmanager-prod")]
    pub name: TokenName,
    pub role: Role,
    /// The person the token acts for.
    #[schema(value_type = Option<String>, example = "alice@example.com")]
    #[serde(default)]
    pub email: Option<EmailAddress>,
}

/// A new token. `secret` is shown this once and cannot be retrieved again.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    pub token: TokenInfo,
    pub secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListTokensQuery {
    /// Include revoked tokens.
    #[serde(default)]
    pub include_revoked: bool,
}

/// Who am I: the token's name, role and person.
#[utoipa::path(operation_id = "whoami", get, path = "/api/v1/me", tag = "tokens", security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller", body = Caller),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
    ))]
pub async fn me(caller: Caller) -> HttpResponse {
    HttpResponse::Ok().json(caller)
}

/// Lists API tokens (never their secrets). Admin only.
#[utoipa::path(operation_id = "list_tokens", get, path = "/api/v1/tokens", tag = "tokens", security(("bearer" = [])),
    params(ListTokensQuery),
    responses(
        (status = 200, description = "Tokens by name", body = TokenList),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn list(
    _: Admin,
    query: ApiQuery<ListTokensQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let include_revoked = query.0.include_revoked;
    let tokens = with_conn(&state, move |conn, _| {
        Ok(tokens::list(conn, include_revoked)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(TokenList { tokens }))
}

/// Creates an API token. Admin only. The secret is in the answer, once.
#[utoipa::path(operation_id = "create_token", post, path = "/api/v1/tokens", tag = "tokens", security(("bearer" = [])),
    request_body = CreateToken,
    responses(
        (status = 201, description = "Created; the secret is shown once", body = CreatedToken),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 409, description = "An active token has this name", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
pub async fn create(
    Admin(caller): Admin,
    body: ApiJson<CreateToken>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let CreateToken { name, role, email } = body.0;
    let by = caller.actor();
    let (token, secret) = with_conn(&state, move |conn, _| {
        Ok(tokens::create_by(
            conn,
            &name,
            role,
            email.as_ref(),
            Some(&by),
        )?)
    })
    .await?;
    tracing::info!(token = %token.name, role = %token.role, by = %caller.actor(), "token created");
    Ok(HttpResponse::Created().json(CreatedToken {
        token,
        secret: secret.expose().to_owned(),
    }))
}

/// Revokes the active token with this name. Admin only.
#[utoipa::path(operation_id = "revoke_token", delete, path = "/api/v1/tokens/{name}", tag = "tokens", security(("bearer" = [])),
    params(("name" = String, Path, description = "The token's name")),
    responses(
        (status = 200, description = "Revoked", body = TokenInfo),
        (status = 401, description = "Missing, unknown or revoked token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No active token has this name", body = ErrorBody),
    ))]
pub async fn revoke(
    Admin(caller): Admin,
    name: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    let token = crate::http::bearer::revoke(&state, name).await?;
    tracing::info!(token = %token.name, by = %caller.actor(), "token revoked");
    Ok(HttpResponse::Ok().json(token))
}
