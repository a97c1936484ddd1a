//! Who is signed in to the pages: the session cookie (`auth.mode = "email-link"`) or
//! the header of a trusted authenticating proxy (`auth.mode = "proxy"`). The page
//! counterpart of `http::bearer`'s token extractors; both end in the same
//! `services::access::Editor`, so the access rules exist once.

use std::net::IpAddr;

use actix_web::cookie::{time, Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use subtle::ConstantTimeEq;

use crate::config::AuthMode;
use crate::domain::{EmailAddress, TokenSecret};
use crate::error::ApiError;
use crate::http::pages::error::PageError;
use crate::http::state::{with_conn, AppState};
use crate::services::accounts::auth::{self, AuthError, SessionPerson};

/// The session cookie's name.
pub const COOKIE: &str = "coe_session";

/// The session cookie's name under https: the `__Host-` prefix makes the browser
/// refuse it unless it is `Secure`, for this host only (no `Domain`) and for `/`, so
/// that a sibling subdomain cannot set or shadow it.
pub const SECURE_COOKIE: &str = "__Host-coe_session";

/// The session cookie's name for this service: prefixed under https (browsers refuse
/// a `__Host-` cookie that is not `Secure`, which needs https).
pub fn cookie_name(state: &AppState) -> &'static str {
    if state.settings.public_url.starts_with("https://") {
        SECURE_COOKIE
    } else {
        COOKIE
    }
}

/// The session secret the request's cookie carries, if any.
pub fn session_secret(req: &HttpRequest, state: &AppState) -> Option<String> {
    req.cookie(cookie_name(state)).map(|c| c.value().to_owned())
}

/// The client's address: the peer, or — when the peer is a trusted proxy — the
/// nearest address in `X-Forwarded-For` that is not one (never a header from
/// anyone else: it is the sender's to write).
pub fn client_ip(req: &HttpRequest, trusted: &[ipnet::IpNet]) -> String {
    let Some(mut ip) = req.peer_addr().map(|a| a.ip()) else {
        return "unknown".into();
    };
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if is_trusted(&ip) {
        let forwarded = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        for hop in forwarded.rsplit(',') {
            let Ok(hop) = hop.trim().parse::<IpAddr>() else {
                break;
            };
            ip = hop;
            if !is_trusted(&hop) {
                break;
            }
        }
    }
    ip.to_string()
}

/// Refuses a cross-site request to a sign-in form (login CSRF: another site's page
/// posting its own link token would sign the visitor in as the attacker). The
/// browser's `Sec-Fetch-Site: cross-site`, or an `Origin` other than `public_url`'s
/// (or, when `public_url` is plain http, than `http://` and the host the request was
/// sent to), is refused with 403; a request without either header (an old browser,
/// curl) passes.
pub fn same_origin_only(req: &HttpRequest, public_url: &str) -> Result<(), PageError> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let refused = || {
        tracing::warn!(
            origin = header("origin").unwrap_or("-"),
            fetch_site = header("sec-fetch-site").unwrap_or("-"),
            "a sign-in form was posted from another site: refused"
        );
        Err(PageError::Forbidden(
            "this sign-in form was sent from another site; open coe's own sign-in page and try again"
                .into(),
        ))
    };
    if header("sec-fetch-site") == Some("cross-site") {
        return refused();
    }
    let Some(origin) = header("origin") else {
        return Ok(());
    };
    let ours = url::Url::parse(public_url)
        .ok()
        .map(|u| u.origin().ascii_serialization());
    // Without https (a local trial, a test on another port) the page may have been
    // served under another name than `public_url`'s: the host the request was sent to,
    // over plain http, counts too. Under https only `public_url`'s origin does (a page
    // injected over plain http must not pass).
    let to_host = !public_url.starts_with("https://")
        && origin
            .strip_prefix("http://")
            .is_some_and(|host| header("host") == Some(host));
    if ours.as_deref() == Some(origin) || to_host {
        Ok(())
    } else {
        refused()
    }
}

/// The session cookie for `secret`: HttpOnly, SameSite=Lax, Secure when the service
/// is reached over https, and as long-lived as the longest session.
pub fn session_cookie(state: &AppState, secret: &str) -> Cookie<'static> {
    let secure = state.settings.public_url.starts_with("https://");
    let max = i64::try_from(state.settings.auth.session_max_secs).unwrap_or(i64::MAX);
    Cookie::build(cookie_name(state), secret.to_owned())
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(time::Duration::seconds(max))
        .finish()
}

/// A cookie that removes the session cookie.
pub fn removal_cookie(state: &AppState) -> Cookie<'static> {
    let secure = state.settings.public_url.starts_with("https://");
    let mut cookie = Cookie::build(cookie_name(state), "")
        .path("/")
        .secure(secure)
        .finish();
    cookie.make_removal();
    cookie
}

/// A signed-in person. Pages that need one take it as an argument; without one, a
/// page answers with the way to sign in.
pub struct SignedIn {
    pub person: SessionPerson,
    /// A cookie to set with the response (a proxy session that just began).
    pub new_cookie: Option<Cookie<'static>>,
}

impl SignedIn {
    /// Checks a form's CSRF token against the session's (in constant time).
    pub fn check_csrf(&self, presented: &str) -> Result<(), PageError> {
        let expected = self.person.csrf.as_bytes();
        if bool::from(expected.ct_eq(presented.as_bytes())) {
            Ok(())
        } else {
            Err(PageError::BadRequest(
                "this form is out of date or came from another site; reload the page and try again"
                    .into(),
            ))
        }
    }
}

/// The path and query of a request, to come back to after signing in.
fn here(req: &HttpRequest) -> String {
    req.uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned())
}

impl FromRequest for SignedIn {
    type Error = PageError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = req
                .app_data::<web::Data<AppState>>()
                .cloned()
                .ok_or_else(|| PageError::Internal("no application state".into()))?;
            let cookie = session_secret(&req, &state);
            match state.settings.auth.mode {
                // The provider's part ends at the callback (`http::pages::oidc`): from
                // then on an OpenID sign-in is a session cookie like an emailed link's.
                AuthMode::EmailLink | AuthMode::Oidc => {
                    let Some(secret) = cookie else {
                        return Err(PageError::SignIn { next: here(&req) });
                    };
                    let person = with_conn(&state, move |conn, state| {
                        Ok(auth::session(conn, &secret, state.env())?)
                    })
                    .await?;
                    person
                        .map(|person| SignedIn {
                            person,
                            new_cookie: None,
                        })
                        .ok_or_else(|| PageError::SignIn { next: here(&req) })
                }
                AuthMode::Proxy => from_proxy(&req, state, cookie).await,
            }
        })
    }
}

async fn from_proxy(
    req: &HttpRequest,
    state: web::Data<AppState>,
    cookie: Option<String>,
) -> Result<SignedIn, PageError> {
    let header = &state.settings.auth.proxy_header;
    let peer = req.peer_addr().map(|a| a.ip());
    let trusted = peer.is_some_and(|ip| state.proxies.iter().any(|n| n.contains(&ip)));
    let named = req.headers().get(header.as_str());
    if !trusted {
        tracing::warn!(peer = ?peer, header = %header, "a page request did not come through a trusted proxy");
        return Err(PageError::Forbidden(format!(
            "sign-in is through the organisation's proxy, and this request did not come through it \
             (from {}; auth.trusted_proxies does not name it)",
            peer.map_or_else(|| "an unknown address".to_owned(), |p| p.to_string())
        )));
    }
    // Two copies: the proxy added its own beside one the client sent, instead of
    // replacing it. Which is whose cannot be told: refuse both.
    if req.headers().get_all(header.as_str()).count() > 1 {
        tracing::warn!(header = %header, "a page request carried the proxy header more than once");
        return Err(PageError::Forbidden(format!(
            "the request carries {header} more than once: the proxy must replace any copy a \
             client sends, not add its own beside it"
        )));
    }
    let Some(named) = named.and_then(|v| v.to_str().ok()) else {
        return Err(PageError::Unauthorized(format!(
            "the proxy did not name a person (no {header} header)"
        )));
    };
    let email = EmailAddress::parse(named).map_err(|e| {
        PageError::Unauthorized(format!(
            "the proxy's {header} header is not an email address: {e}"
        ))
    })?;
    let client = client_ip(req, &state.proxies);
    let address = email.as_str().to_owned();
    let (person, secret) = with_conn(&state, move |conn, state| {
        Ok(auth::proxy_session(
            conn,
            &email,
            cookie.as_deref(),
            &client,
            state.env(),
        )?)
    })
    .await?
    .ok_or_else(|| {
        PageError::Forbidden(format!(
            "{address} may not sign in to coe: only the people in its directory and addresses of \
             its allowed domains may; ask an admin to add you"
        ))
    })?;
    let new_cookie = secret.map(|s: TokenSecret| session_cookie(&state, s.expose()));
    Ok(SignedIn { person, new_cookie })
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::TooMany(ref too_many) => ApiError::TooManyRequests {
                retry_after: u64::try_from(too_many.retry_after_secs).unwrap_or(0),
                message: e.to_string(),
            },
            e @ AuthError::LinkUsedOrExpired => ApiError::BadRequest(e.to_string()),
            e @ AuthError::Template(_) => ApiError::Internal(e.to_string()),
            AuthError::Database(e) => e.into(),
        }
    }
}
