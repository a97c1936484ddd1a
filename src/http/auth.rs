//! Bearer-token authentication as an extractor.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use crate::domain::{Role, TokenSecret};
use crate::error::ApiError;
use crate::services::tokens::{self, Caller};
use crate::startup::AppState;

impl Caller {
    /// Refuses with 403 unless this caller's role allows `role`.
    pub fn require(&self, role: Role) -> Result<(), ApiError> {
        if self.role.allows(role) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "this needs a token with the {role} role; token `{}` has the {} role",
                self.token_name, self.role
            )))
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let presented = bearer_secret(req);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let secret = presented?;
            let state = state.ok_or_else(|| ApiError::Internal("app state missing".into()))?;
            let caller = web::block(move || {
                let mut conn = state.pool.get()?;
                tokens::authenticate(&mut conn, &secret).map_err(|e| match e {
                    tokens::TokenError::Database(e) => ApiError::from(e),
                    other => ApiError::Internal(other.to_string()),
                })
            })
            .await??;
            caller.ok_or_else(|| ApiError::Unauthorized("the token is unknown or revoked".into()))
        })
    }
}

fn bearer_secret(req: &HttpRequest) -> Result<TokenSecret, ApiError> {
    let missing = || {
        ApiError::Unauthorized("send a token in the header `Authorization: Bearer <token>`".into())
    };
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    let (scheme, secret) = value.trim().split_once(' ').ok_or_else(missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") || secret.trim().is_empty() {
        return Err(missing());
    }
    Ok(TokenSecret::from_presented(secret))
}
