//! Signing in with an emailed one-time link, and signing out (through the provider's
//! own sign-out after an OpenID sign-in).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::error::PageError;
use super::guard::{CsrfForm, Fields, SameOrigin};
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::config::AuthMode;
use crate::domain::auth::{safe_next, LinkAllowance, LINK_LIFETIME_MINUTES};
use crate::domain::EmailAddress;
use crate::http::session::{client_ip, removal_cookie, session_cookie, session_secret};
use crate::services::accounts::auth;

#[derive(Debug, Deserialize)]
pub struct NextQuery {
    #[serde(default)]
    next: Option<String>,
}

fn next_of(next: Option<&str>) -> String {
    next.and_then(safe_next).unwrap_or("/").to_owned()
}

/// `GET /sign-in`: the form.
pub async fn form(query: web::Query<NextQuery>, state: State) -> Page {
    render(
        &state,
        None,
        StatusCode::OK,
        "sign_in",
        json!({
            "next": next_of(query.next.as_deref()),
            "email": "",
            "error": null,
            "minutes": LINK_LIFETIME_MINUTES,
            "proxy": state.settings.auth.mode == AuthMode::Proxy,
            "oidc": oidc_name(&state),
            "email_link": state.settings.auth.email_links(),
        }),
    )
}

/// The provider's name for the sign-in button, when people sign in through one.
fn oidc_name(state: &State) -> Option<&str> {
    (state.settings.auth.mode == AuthMode::Oidc).then_some(state.settings.auth.oidc.name.as_str())
}

/// Refuses an emailed link where people sign in otherwise.
fn email_links_only(state: &State) -> Result<(), PageError> {
    match state.settings.auth.mode {
        _ if state.settings.auth.email_links() => Ok(()),
        AuthMode::Proxy => Err(PageError::BadRequest(
            "sign-in is through the organisation's proxy here, not by email".into(),
        )),
        _ => Err(PageError::BadRequest(format!(
            "sign-in is through {} here, not by email: use the button on the sign-in page",
            state.settings.auth.oidc.name
        ))),
    }
}

#[derive(Debug, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /sign-in`: sends a link, if the address may sign in. The answer is the same
/// either way, so the page tells nobody who is in the directory.
pub async fn request(form: SameOrigin<SignInForm>, req: HttpRequest, state: State) -> Page {
    let form = form.fields;
    let next = next_of(form.next.as_deref());
    email_links_only(&state)?;
    let email = match EmailAddress::parse(form.email.trim()) {
        Ok(email) => email,
        Err(problem) => {
            return render(
                &state,
                None,
                StatusCode::UNPROCESSABLE_ENTITY,
                "sign_in",
                json!({
                    "next": next,
                    "email": form.email,
                    "minutes": LINK_LIFETIME_MINUTES,
                    "error": format!("That is not an email address: {problem}."),
                    "proxy": false,
                    "oidc": oidc_name(&state),
                    "email_link": true,
                }),
            );
        }
    };
    let client = client_ip(&req, &state.proxies);
    let address = email.as_str().to_owned();
    // While the person waits: only what is the same for everyone (the request counted,
    // the limits checked). Whether the address may sign in, and the link and its email,
    // come after the answer: it takes as long for the directory as for a stranger.
    let allowance = {
        let (email, client) = (email.clone(), client.clone());
        as_service(&state, move |conn, state| {
            Ok(auth::count_request(conn, &email, &client, state.env())?)
        })
        .await?
    };
    // Links are written to the log only on a local trial (loopback, no SMTP server).
    let development = state.settings.local_trial();
    if allowance == LinkAllowance::Send {
        let (state, to, logged_as) = (state.clone(), next.clone(), address.clone());
        actix_web::rt::spawn(async move {
            let sent = as_service(&state, move |conn, state| {
                Ok(auth::send_link(
                    conn,
                    &email,
                    &client,
                    Some(&to),
                    state.env(),
                )?)
            })
            .await;
            match sent {
                Ok(Some(link)) if development => tracing::info!(
                    email = %logged_as,
                    link = %link,
                    "sign-in link (a local trial: mode = development, loopback only, no SMTP server; written here so that you can sign in without one)"
                ),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "cannot send a sign-in link"),
            }
        });
    }
    render(
        &state,
        None,
        StatusCode::OK,
        "sign_in_sent",
        json!({
            "email": address,
            "next": if next == "/" { String::new() } else { next },
            "minutes": LINK_LIFETIME_MINUTES,
            "development": development,
        }),
    )
}

#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    #[serde(default)]
    token: String,
}

/// `GET /sign-in/confirm?token=…`: a button that signs in. The link itself changes
/// nothing, so a mail scanner that opens it does not use it up. When the browser is
/// signed in as someone else already, the page says who, and whom the link is for,
/// and asks before switching.
pub async fn confirm_form(req: HttpRequest, query: web::Query<TokenQuery>, state: State) -> Page {
    email_links_only(&state)?;
    let token = query.into_inner().token;
    let cookie = session_secret(&req, &state);
    let presented = token.clone();
    let (current, link_for) = as_service(&state, move |conn, state| {
        let current = match cookie {
            Some(secret) => auth::session(conn, &secret, state.env())?.map(|p| p.email),
            None => None,
        };
        Ok((current, auth::link_email(conn, &presented)?))
    })
    .await?;
    let switching = current
        .as_ref()
        .filter(|c| link_for.as_ref().is_none_or(|l| l != *c));
    render(
        &state,
        None,
        StatusCode::OK,
        "sign_in_confirm",
        json!({"token": token, "signed_in_as": switching, "link_for": link_for}),
    )
}

/// `POST /sign-in/confirm`: redeems the link, sets the session cookie and goes on.
pub async fn confirm(form: SameOrigin<TokenQuery>, req: HttpRequest, state: State) -> Page {
    email_links_only(&state)?;
    let token = form.fields.token;
    let client = client_ip(&req, &state.proxies);
    // A session this browser held for someone else ends: it is switching person.
    let previous = session_secret(&req, &state);
    let (secret, next) = as_service(&state, move |conn, state| {
        let redeemed = auth::redeem(conn, &token, &client)?;
        if let Some(secret) = previous {
            if let Some(before) = auth::session(conn, &secret, state.env())? {
                auth::end(conn, &before.session_id, "signed in as another person")?;
            }
        }
        Ok(redeemed)
    })
    .await?;
    Ok(HttpResponse::SeeOther()
        .cookie(session_cookie(&state, secret.expose()))
        // The answer that sets the cookie is never kept by a cache.
        .insert_header(("cache-control", "no-store"))
        .insert_header(("location", next_of(next.as_deref())))
        .finish())
}

/// `POST /sign-out`: ends the session; after an OpenID sign-in, goes on through the
/// provider's sign-out (when it offers one), which comes back to the sign-in page.
pub async fn sign_out(form: CsrfForm<Fields>, state: State) -> Page {
    let id = form.who.person.session_id.clone();
    let through_provider = form.who.person.method == "oidc";
    let id_token = as_service(&state, move |conn, _| {
        let id_token = if through_provider {
            auth::id_token_of(conn, &id)?
        } else {
            None
        };
        auth::end(conn, &id, "sign-out")?;
        Ok(id_token)
    })
    .await?;
    let provider_sign_out = match (&state.oidc, through_provider) {
        (Some(provider), true) => provider.logout_url(id_token.as_deref()).await,
        _ => None,
    };
    let Some(provider_sign_out) = provider_sign_out else {
        return Ok(HttpResponse::SeeOther()
            .cookie(removal_cookie(&state))
            .insert_header(("location", "/sign-in"))
            .finish());
    };
    // On to the provider's sign-out by a page that refreshes to it, not a redirect:
    // the pages' `form-action 'self'` stops a form's redirect to another site.
    let mut page = render(
        &state,
        None,
        StatusCode::OK,
        "signed_out",
        json!({"refresh": provider_sign_out, "provider": state.settings.auth.oidc.name}),
    )?;
    page.add_cookie(&removal_cookie(&state))
        .map_err(|e| PageError::Internal(format!("cannot remove the session cookie: {e}")))?;
    Ok(page)
}
