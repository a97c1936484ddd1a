//! A person's own page: who they are in the directory, their calendar feed (the
//! feed's URL carries a secret: it is shown once, when made; making a new one stops
//! the old one), and where they are signed in (and signing the other places out).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use diesel::prelude::*;
use serde_json::json;

use super::{render, Fields, PageError};
use crate::db::schema::people;
use crate::domain::EmailAddress;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::auth;
use crate::services::people as directory;

type Person = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
);

async fn page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    feed_url: Option<String>,
    notice: Option<String>,
) -> Result<HttpResponse, PageError> {
    let email = who.person.email.clone();
    let (person, sessions): (Option<Person>, Vec<auth::SessionView>) =
        with_conn(state, move |conn, _| {
            let person = people::table
                .find(&email)
                .select((
                    people::name,
                    people::team,
                    people::manager_email,
                    people::timezone,
                    people::feed_token_hash.is_not_null(),
                ))
                .first(conn)
                .optional()?;
            Ok((person, auth::sessions_of(conn, Some(&email), 100)?))
        })
        .await?;
    let current = &who.person.session_id;
    let sessions: Vec<_> = sessions
        .iter()
        .map(|s| {
            json!({"method": s.method, "client": s.client, "created_at": s.created_at.and_utc().to_rfc3339(),
                   "last_seen_at": s.last_seen_at.and_utc().to_rfc3339(), "current": &s.id == current})
        })
        .collect();
    let (name, team, manager, timezone, has_feed) =
        person.unwrap_or((None, None, None, None, false));
    let data = json!({
        "person": {"email": who.person.email, "name": name, "team": team, "manager": manager,
                   "timezone": timezone},
        "has_feed": has_feed,
        "feed_url": feed_url,
        "others": sessions.len() > 1,
        "sessions": sessions,
        "notice": notice,
    });
    render(state, Some(who), StatusCode::OK, "me", data)
}

/// `GET /me`.
pub async fn show(who: SignedIn, state: web::Data<AppState>) -> Result<HttpResponse, PageError> {
    page(&state, &who, None, None).await
}

/// `POST /me/calendar`: a new calendar feed URL, shown once; the old one stops working.
pub async fn new_calendar(
    who: SignedIn,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    Fields::new(form).check(&who)?;
    let email = EmailAddress::parse(&who.person.email).map_err(PageError::BadRequest)?;
    let target = email.clone();
    let secret = with_conn(&state, move |conn, _| {
        Ok(directory::new_feed_token(conn, &target)?)
    })
    .await?;
    let url = format!(
        "{}/api/v1/people/{}/actions.ics?token={}",
        state.settings.public_url.trim_end_matches('/'),
        email.as_str(),
        secret.expose()
    );
    page(&state, &who, Some(url), None).await
}

/// `POST /me/sign-out-others`: ends every other session of mine (a browser left
/// signed in elsewhere); this one stays.
pub async fn sign_out_others(
    who: SignedIn,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    Fields::new(form).check(&who)?;
    let (email, keep) = (who.person.email.clone(), who.person.session_id.clone());
    let ended = with_conn(&state, move |conn, _| {
        Ok(auth::end_others(conn, &email, &keep)?)
    })
    .await?;
    let notice = match ended {
        0 => "You were signed in nowhere else.".to_owned(),
        1 => "Signed out of 1 other session.".to_owned(),
        n => format!("Signed out of {n} other sessions."),
    };
    page(&state, &who, None, Some(notice)).await
}
