//! `POST /sign-in/oidc/back-channel-logout`: OpenID Connect Back-Channel Logout 1.0.
//! The provider posts a signed logout token (`logout_token`, form-encoded) when a
//! person signs out there or is removed; coe ends their sessions begun through it
//! (`services::auth::end_provider_sessions`). Answers 200, or 400 with
//! `invalid_request` and why (section 2.8); never cached.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use serde_json::json;

use crate::http::state::{with_conn, AppState};
use crate::services::auth;

fn answer(status: StatusCode, body: serde_json::Value) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

fn refused(why: &str) -> HttpResponse {
    answer(
        StatusCode::BAD_REQUEST,
        json!({"error": "invalid_request", "error_description": why}),
    )
}

pub async fn logout(body: web::Bytes, state: web::Data<AppState>) -> HttpResponse {
    let Some(provider) = state.oidc.clone() else {
        return refused(
            "sign-in is not through an OpenID Provider here (auth.mode): nothing to sign out of",
        );
    };
    let token = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body)
        .ok()
        .and_then(|fields| {
            fields
                .into_iter()
                .find(|(name, _)| name == "logout_token")
                .map(|(_, value)| value)
        });
    let Some(token) = token else {
        return refused("the body must be a form with `logout_token`");
    };
    let logout = match provider.logout(&token).await {
        Ok(logout) => logout,
        Err(e) => {
            tracing::warn!(error = %e, "a back-channel logout was refused");
            return refused(&e.to_string());
        }
    };
    let ended = with_conn(&state, move |conn, _| {
        Ok(auth::end_provider_sessions(
            conn,
            logout.subject.as_deref(),
            logout.session.as_deref(),
            &logout.token_id,
        )?)
    })
    .await;
    match ended {
        Ok(Some(n)) => answer(StatusCode::OK, json!({"sessions_ended": n})),
        Ok(None) => refused("this logout token was taken already (its `jti` is not new)"),
        Err(e) => e.error_response(),
    }
}
