//! `POST /sign-in/oidc/back-channel-logout`: OpenID Connect Back-Channel Logout 1.0.
//! The provider posts a signed logout token (`logout_token`, form-encoded) when a
//! person signs out there or is removed; coe ends their sessions begun through it
//! (`services::accounts::auth::end_provider_sessions`). Answers 200, or 400 with
//! `invalid_request` and why (section 2.8); never cached.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use serde_json::json;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::http::state::{with_conn, AppState};
use crate::services::accounts::auth;

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

/// The refusals of this process, for a warning a minute at most.
static REFUSALS: Throttle = Throttle::new(60);

/// Counts what happens and lets a warning through once per `every_secs`, saying how
/// many happened since the last one: a flood of bad requests is one line a minute in
/// the log, not one line each.
pub struct Throttle {
    every_secs: i64,
    last: AtomicI64,
    since: AtomicU64,
}

impl Throttle {
    pub const fn new(every_secs: i64) -> Throttle {
        Throttle {
            every_secs,
            last: AtomicI64::new(i64::MIN),
            since: AtomicU64::new(0),
        }
    }

    /// Notes one at `now` (seconds); `Some(how many since the last warning, this one
    /// included)` when a warning may be written now.
    pub fn note(&self, now: i64) -> Option<u64> {
        let count = self.since.fetch_add(1, Ordering::Relaxed) + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != i64::MIN && now - last < self.every_secs {
            return None;
        }
        if self
            .last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        self.since.fetch_sub(count, Ordering::Relaxed);
        Some(count)
    }
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
            // Anyone can post garbage here: each refusal is a debug line, and a warning
            // at most once a minute says how many there were.
            tracing::debug!(error = %e, "a back-channel logout token was refused");
            if let Some(refusals) = REFUSALS.note(crate::domain::clock::now().timestamp()) {
                tracing::warn!(
                    refusals,
                    last = %e,
                    "back-channel logout tokens were refused (one warning a minute at most)"
                );
            }
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

#[cfg(test)]
mod tests {
    use super::Throttle;

    #[test]
    fn a_flood_of_refusals_is_one_warning_a_minute() {
        let throttle = Throttle::new(60);
        assert_eq!(throttle.note(1_000), Some(1), "the first is told at once");
        let told: Vec<Option<u64>> = (0..299).map(|i| throttle.note(1_000 + i / 10)).collect();
        assert!(told.iter().all(Option::is_none), "none within the minute");
        assert_eq!(throttle.note(1_060), Some(300), "then how many since");
        assert_eq!(throttle.note(1_061), None);
    }
}
