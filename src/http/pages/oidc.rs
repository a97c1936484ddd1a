//! Signing in through the organisation's OpenID Provider (`auth.mode = "oidc"`): the
//! button that sends the browser there, and the callback it comes back to. The
//! protocol is `crate::oidc`; who may come in, `services::accounts::auth::oidc_session`. Every
//! failure is a page saying what happened, with a way to try again, and a log line
//! with the reason.

use actix_web::cookie::{time, Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::error::PageError;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::domain::auth::{admin_by_groups, safe_next, vouched_address};
use crate::http::session::{client_ip, session_cookie, session_secret};
use crate::http::state::AppState;
use crate::oidc::{OidcError, Pending, Provider};
use crate::services::accounts::auth::{self, Vouched};

/// The cookie that carries a sign-in from its start to the callback.
const PENDING: &str = "coe_oidc";
/// Its name under https (`__Host-`: Secure, this host only, path `/`).
const SECURE_PENDING: &str = "__Host-coe_oidc";
/// How long a person has at the provider before the sign-in must start again.
const PENDING_MINUTES: i64 = 15;
/// The longest page to come back to that the cookie carries (else `/`).
const MAX_NEXT: usize = 512;

fn pending_name(state: &AppState) -> &'static str {
    if state.settings.public_url.starts_with("https://") {
        SECURE_PENDING
    } else {
        PENDING
    }
}

fn pending_cookie(state: &AppState, value: String, minutes: i64) -> Cookie<'static> {
    Cookie::build(pending_name(state), value)
        .path("/")
        .http_only(true)
        // Lax: sent when the provider sends the browser back (a top-level GET).
        .same_site(SameSite::Lax)
        .secure(state.settings.public_url.starts_with("https://"))
        .max_age(time::Duration::minutes(minutes))
        .finish()
}

fn provider(state: &AppState) -> Result<&Provider, PageError> {
    state.oidc.as_deref().ok_or_else(|| {
        PageError::NotFound("single sign-on is not set up here (auth.mode is not \"oidc\")".into())
    })
}

#[derive(Debug, Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    next: Option<String>,
}

/// `GET /sign-in/oidc?next=…`: sends the browser to the provider, remembering the
/// sign-in (its `state`, nonce and PKCE verifier) in a cookie of this browser. A link,
/// not a form: the pages' `form-action 'self'` would stop a form's redirect to the
/// provider, and starting a sign-in changes nothing but this browser's cookie.
pub async fn start(query: web::Query<StartQuery>, state: State) -> Page {
    let provider = provider(&state)?;
    // Kept in the cookie: a page to come back to, and not so long that the browser
    // would drop the cookie.
    let next = query
        .next
        .as_deref()
        .and_then(safe_next)
        .filter(|n| n.len() <= MAX_NEXT)
        .unwrap_or("/")
        .to_owned();
    match provider.begin(next.clone()).await {
        Ok((url, pending)) => Ok(HttpResponse::SeeOther()
            .cookie(pending_cookie(&state, pending.to_cookie(), PENDING_MINUTES))
            .insert_header(("cache-control", "no-store"))
            .insert_header(("location", url.to_string()))
            .finish()),
        Err(e) => failed(&state, &e, &next),
    }
}

#[derive(Debug, Deserialize)]
pub struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
    /// The issuer that answers (RFC 9207), when the provider says.
    #[serde(default)]
    iss: Option<String>,
}

/// `GET /sign-in/oidc/callback`: the provider sends the browser back here. The
/// callback must end a sign-in this browser began (`state`), once; the code is
/// exchanged and the ID token checked; the person the provider vouches for is signed
/// in if the directory lets them.
pub async fn callback(req: HttpRequest, query: web::Query<Callback>, state: State) -> Page {
    let provider = provider(&state)?;
    let query = query.into_inner();
    let pending = req
        .cookie(pending_name(&state))
        .and_then(|c| Pending::from_cookie(c.value()));
    let next = pending
        .as_ref()
        .and_then(|p| safe_next(&p.next))
        .unwrap_or("/")
        .to_owned();
    // Whatever happens, this sign-in is over: its cookie goes.
    let mut gone = pending_cookie(&state, String::new(), 0);
    gone.make_removal();
    let outcome = finish(&req, &state, provider, query, pending).await;
    let mut response = match outcome {
        Ok(secret) => HttpResponse::SeeOther()
            .cookie(session_cookie(&state, &secret))
            .insert_header(("cache-control", "no-store"))
            .insert_header(("location", next))
            .finish(),
        Err(e) => failed(&state, &e, &next)?,
    };
    response
        .add_cookie(&gone)
        .map_err(|e| PageError::Internal(format!("cannot remove the sign-in cookie: {e}")))?;
    Ok(response)
}

/// The callback's checks and the session; the session's secret when it began.
async fn finish(
    req: &HttpRequest,
    state: &State,
    provider: &Provider,
    query: Callback,
    pending: Option<Pending>,
) -> Result<String, SignInFailure> {
    let Some(pending) = pending else {
        return Err(OidcError::Callback(
            "this sign-in was not started in this browser, or it is over already (a sign-in \
             comes back once, within 15 minutes); start again"
                .into(),
        )
        .into());
    };
    if !query
        .state
        .as_deref()
        .is_some_and(|s| pending.state_matches(s))
    {
        return Err(OidcError::Callback(
            "this answer from the provider is not for the sign-in this browser began (its \
             state differs); start again"
                .into(),
        )
        .into());
    }
    // Only now is the provider's own refusal believed: before, anyone could have
    // written it into a link.
    if let Some(error) = query.error {
        let detail = query
            .error_description
            .map(|d| format!("{error}: {d}"))
            .unwrap_or(error);
        return Err(OidcError::Refused(detail).into());
    }
    if let Some(iss) = query.iss.as_deref().filter(|i| *i != provider.issuer()) {
        return Err(OidcError::Callback(format!(
            "the answer names another issuer ({iss}) than auth.oidc.issuer"
        ))
        .into());
    }
    let code = query
        .code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| OidcError::Callback("the provider's answer carries no code".into()))?;
    let identity = provider.finish(&code, &pending).await?;
    let oidc = &state.settings.auth.oidc;
    let email = vouched_address(
        identity.email.as_deref(),
        identity.email_verified,
        oidc.require_verified_email,
    )
    .map_err(|e| SignInFailure::Refused {
        reason: e.to_string(),
        subject: identity.subject.clone(),
    })?;
    // Groups the token does not carry (too many: Entra ID's overage) cannot make
    // anyone an admin, and an admin who lost the group must not stay one.
    let groups = identity.groups.clone().unwrap_or_else(|| {
        if !oidc.admin_groups.is_empty() {
            tracing::warn!(
                subject = %identity.subject,
                "the provider left the groups out of the ID token (too many: Entra ID's overage): not an admin by groups this time"
            );
        }
        Vec::new()
    });
    let admin = admin_by_groups(&groups, &oidc.admin_groups);
    let client = client_ip(req, &state.proxies);
    let previous = session_secret(req, state);
    let address = email.as_str().to_owned();
    let secret = as_service(state, move |conn, state| {
        let vouched = Vouched {
            email: &email,
            name: identity.name.as_deref(),
            admin,
            id_token: &identity.id_token,
            subject: &identity.subject,
            provider_session: identity.session.as_deref(),
        };
        Ok(auth::oidc_session(
            conn,
            &vouched,
            &client,
            previous.as_deref(),
            state.env(),
        )?)
    })
    .await
    .map_err(SignInFailure::Page)?;
    secret
        .map(|s| s.expose().to_owned())
        .ok_or_else(|| SignInFailure::Refused {
            reason: format!(
            "{address} may not sign in to coe: only the people in its directory and addresses of \
             its allowed domains may; ask an admin to add you"
        ),
            subject: address.clone(),
        })
}

/// Why the callback did not sign anyone in.
enum SignInFailure {
    Oidc(OidcError),
    /// The provider vouched for someone coe does not let in.
    Refused {
        reason: String,
        subject: String,
    },
    /// The database, as any page meets it.
    Page(PageError),
}

impl From<OidcError> for SignInFailure {
    fn from(e: OidcError) -> Self {
        SignInFailure::Oidc(e)
    }
}

/// The page for a sign-in that did not work, and its log line.
fn failed(state: &AppState, failure: &dyn Describe, next: &str) -> Page {
    let (status, heading, message) = failure.describe();
    // Debug-formatted: text from a query string cannot forge a log line.
    tracing::warn!(status = status.as_u16(), reason = ?message, "a sign-in through the provider did not work");
    let mut chars = message.chars();
    let message: String = chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    render(
        state,
        None,
        status,
        "sign_in_failed",
        json!({
            "heading": heading,
            "message": message,
            "next": next,
            "provider": state.settings.auth.oidc.name,
            "email_link": state.settings.auth.email_links(),
        }),
    )
    .map(|mut res| {
        if status == StatusCode::SERVICE_UNAVAILABLE {
            res.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from_static("30"),
            );
        }
        res
    })
}

/// A failure as its page says it: status, heading, message.
trait Describe {
    fn describe(&self) -> (StatusCode, &'static str, String);
}

impl Describe for OidcError {
    fn describe(&self) -> (StatusCode, &'static str, String) {
        match self {
            OidcError::Unreachable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The sign-in provider cannot be reached",
                format!("{self}. Try again in a moment; if it persists, tell the people who run this service."),
            ),
            OidcError::Refused(_) => (
                StatusCode::FORBIDDEN,
                "The sign-in provider did not sign you in",
                self.to_string(),
            ),
            OidcError::Callback(_) => (
                StatusCode::BAD_REQUEST,
                "This sign-in cannot be finished",
                self.to_string(),
            ),
            OidcError::Token(_) | OidcError::LogoutToken(_) => (
                StatusCode::UNAUTHORIZED,
                "The sign-in provider's answer was refused",
                format!("{self}. Nobody was signed in."),
            ),
        }
    }
}

impl Describe for SignInFailure {
    fn describe(&self) -> (StatusCode, &'static str, String) {
        match self {
            SignInFailure::Oidc(e) => e.describe(),
            SignInFailure::Refused { reason, subject } => (
                StatusCode::FORBIDDEN,
                "You may not sign in here",
                format!("{reason} (the provider's account: {subject})."),
            ),
            // The database, as the sign-in met it: a page like the others, the detail
            // in the log only.
            SignInFailure::Page(e) => {
                tracing::error!(error = %e, "a sign-in through the provider could not be recorded");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unavailable for a moment",
                    "The sign-in could not be recorded. Try again in a moment.".into(),
                )
            }
        }
    }
}
