//! Bearer-token authentication as extractors: `Caller` for any valid token, and
//! `Member`, `Admin`, `Ingest` for a token whose role allows that much.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use crate::domain::{Role, TokenSecret};
use crate::error::ApiError;
use crate::http::state::{with_conn, AppState};
use crate::services::tokens::{self, Caller};

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
        let presented = presented_secret(req);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::Internal("app state missing".into()))?;
            authenticate(presented?, state).await
        })
    }
}

/// Declares, in a handler's signature, the role it needs: the extractor
/// authenticates (401 without a valid token) and checks the role (403), in that order.
macro_rules! role_extractors {
    ($($(#[$doc:meta])* $name:ident => $role:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub Caller);

        impl FromRequest for $name {
            type Error = ApiError;
            type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

            fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
                let caller = Caller::from_request(req, payload);
                Box::pin(async move {
                    let caller = caller.await?;
                    caller.require($role)?;
                    Ok($name(caller))
                })
            }
        }
    )*};
}

role_extractors! {
    /// A caller whose token may read and write COEs, actions and the directory: a
    /// `member` or `admin` token.
    Member => Role::Member;
    /// A caller with an `admin` token: tokens and the outbox.
    Admin => Role::Admin;
    /// A caller whose token may post events: an `ingest` or `admin` token.
    Ingest => Role::Ingest;
}

/// The caller behind a presented secret, or 401.
pub async fn authenticate(
    secret: TokenSecret,
    state: web::Data<AppState>,
) -> Result<Caller, ApiError> {
    let caller = with_conn(&state, move |conn, _| {
        tokens::authenticate(conn, &secret).map_err(|e| match e {
            tokens::TokenError::Database(e) => ApiError::from(e),
            other => ApiError::Internal(other.to_string()),
        })
    })
    .await?;
    caller.ok_or_else(|| ApiError::Unauthorized("the token is unknown or revoked".into()))
}

/// The token in `Authorization: Bearer <token>`, or the password of HTTP basic auth
/// (for senders that can do nothing else; the user name is ignored).
pub fn presented_secret(req: &HttpRequest) -> Result<TokenSecret, ApiError> {
    let missing = || {
        ApiError::Unauthorized(
            "send a token in the header `Authorization: Bearer <token>` (or as the basic-auth password)"
                .into(),
        )
    };
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    let (scheme, credentials) = value.trim().split_once(' ').ok_or_else(missing)?;
    let credentials = credentials.trim();
    if scheme.eq_ignore_ascii_case("bearer") && !credentials.is_empty() {
        return Ok(TokenSecret::from_presented(credentials));
    }
    if scheme.eq_ignore_ascii_case("basic") {
        use base64::Engine;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .map_err(|_| missing())?;
        let text = String::from_utf8(decoded).map_err(|_| missing())?;
        let (_, password) = text.split_once(':').ok_or_else(missing)?;
        if !password.is_empty() {
            return Ok(TokenSecret::from_presented(password));
        }
    }
    Err(missing())
}
