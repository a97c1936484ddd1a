//! Bearer-token authentication as extractors: `Caller` for any valid token, and
//! `Member`, `Admin`, `Ingest` for a token whose role allows that much.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};

use crate::domain::{Role, TokenSecret};
use crate::error::ApiError;
use crate::http::state::{with_conn, AppState};
use crate::services::directory::tokens::{self, Caller, TokenInfo};

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
        let req = req.clone();
        Box::pin(async move {
            let state = req
                .app_data::<web::Data<AppState>>()
                .cloned()
                .ok_or_else(|| ApiError::Internal("app state missing".into()))?;
            authenticate(&req, state).await
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
    /// The identity provider's SCIM client: a `scim` or `admin` token.
    Scim => Role::Scim;
}

/// The caller behind the request's token: 401 without a known one, 429 for a client
/// that presented `auth.failed_tokens_per_client` different unknown ones this minute
/// (so a token cannot be guessed by trying many). A sender that repeats one wrong
/// token (a mistyped setting) is refused each time but never locks out the other
/// senders of its address.
pub async fn authenticate(
    req: &HttpRequest,
    state: web::Data<AppState>,
) -> Result<Caller, ApiError> {
    if let Some(caller) = req.extensions().get::<Caller>() {
        return Ok(caller.clone()); // authenticated before the handler (`authenticate_first`)
    }
    let client = crate::http::session::client_ip(req, &state.proxies);
    let limit = usize::try_from(state.settings.auth.failed_tokens_per_client).unwrap_or(usize::MAX);
    let secret = presented_secret(req)?;
    let hash = secret.hash();
    let refused = state.token_failures.get(&client);
    let guessing = refused.as_ref().is_some_and(|seen| {
        let seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.len() >= limit && !seen.contains(&hash)
    });
    if guessing {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "too many different unknown tokens from this client ({limit} a minute, \
                 auth.failed_tokens_per_client); try again in a minute"
            ),
            retry_after: 60,
        });
    }
    let result = caller_of(secret, state.clone()).await;
    if let Err(ApiError::Unauthorized(_)) = &result {
        let seen = state
            .token_failures
            .get_with(client, || Arc::new(std::sync::Mutex::new(HashSet::new())));
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() < limit {
            seen.insert(hash);
        }
    }
    result
}

/// Middleware: a request to the API that carries a token is authenticated before its
/// handler's extractors run, so an unknown token is 401 (and a guessing client 429)
/// whatever the body, the path or the query hold: nobody learns what the API
/// validates without a token. (The extractors run side by side: a body checked
/// while the token is looked up would answer first.) Webhooks authenticate in their
/// handler, after their signature.
pub async fn authenticate_first(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let api = req.path().starts_with("/api/v1/") && !req.path().starts_with("/api/v1/webhooks/");
    if api && req.headers().contains_key(header::AUTHORIZATION) {
        if let Some(state) = req.app_data::<web::Data<AppState>>().cloned() {
            match authenticate(req.request(), state.clone()).await {
                Ok(caller) => {
                    req.extensions_mut().insert(caller);
                }
                Err(error) => {
                    if req.path() == "/api/v1/events" {
                        // An event sender with a wrong token: what operators alert on.
                        state.metrics.refused("api", error.code());
                    }
                    return Ok(req.error_response(error).map_into_right_body());
                }
            }
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// The caller behind a presented secret, or 401: remembered for `KNOWN_FOR` once
/// looked up (`KnownTokens`).
async fn caller_of(secret: TokenSecret, state: web::Data<AppState>) -> Result<Caller, ApiError> {
    let hash = secret.hash();
    let known = &state.known_tokens;
    if let Some(caller) = known.get(&hash) {
        return Ok(caller);
    }
    let generation = known.generation();
    let caller = with_conn(&state, move |conn, _| {
        tokens::authenticate(conn, &secret).map_err(|e| match e {
            tokens::TokenError::Database(e) => ApiError::from(e),
            other => ApiError::Internal(other.to_string()),
        })
    })
    .await?;
    let caller =
        caller.ok_or_else(|| ApiError::Unauthorized("the token is unknown or revoked".into()))?;
    known.remember(hash, caller.clone(), generation);
    Ok(caller)
}

/// Revokes the active token `name` and forgets every remembered token at once: the one
/// way the API and the pages revoke, so neither leaves a revoked token remembered.
pub async fn revoke(state: &web::Data<AppState>, name: String) -> Result<TokenInfo, ApiError> {
    let token = with_conn(state, move |conn, _| Ok(tokens::revoke(conn, &name)?)).await?;
    state.known_tokens.forget_all();
    Ok(token)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::known_tokens::KnownTokens;

    fn caller() -> Caller {
        Caller {
            token_id: "t1".into(),
            token_name: "grafana".into(),
            role: Role::Ingest,
            email: None,
            created_by: None,
        }
    }

    #[test]
    fn a_lookup_is_remembered_until_a_revocation_here() {
        let known = KnownTokens::new();
        known.remember("h".into(), caller(), known.generation());
        assert_eq!(
            known.callers.get("h").map(|c| c.token_name),
            Some("grafana".into())
        );
        known.forget_all();
        assert!(known.callers.get("h").is_none());
    }

    /// A lookup that read the token before a revocation here, and finishes after it,
    /// leaves nothing behind.
    #[test]
    fn a_lookup_under_way_during_a_revocation_is_not_remembered() {
        let known = KnownTokens::new();
        let before = known.generation();
        known.forget_all();
        known.remember("h".into(), caller(), before);
        assert!(known.callers.get("h").is_none());
        // A lookup begun after the revocation is.
        known.remember("h".into(), caller(), known.generation());
        assert!(known.callers.get("h").is_some());
    }
}
