//! A person's own page: who they are in the directory, and their calendar feed (the
//! feed's URL carries a secret: it is shown once, when made; making a new one stops
//! the old one).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use diesel::prelude::*;
use serde_json::json;

use super::{render, Fields, PageError};
use crate::db::schema::people;
use crate::domain::EmailAddress;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
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
) -> Result<HttpResponse, PageError> {
    let email = who.person.email.clone();
    let person: Option<Person> = with_conn(state, move |conn, _| {
        Ok(people::table
            .find(&email)
            .select((
                people::name,
                people::team,
                people::manager_email,
                people::timezone,
                people::feed_token_hash.is_not_null(),
            ))
            .first(conn)
            .optional()?)
    })
    .await?;
    let (name, team, manager, timezone, has_feed) =
        person.unwrap_or((None, None, None, None, false));
    let data = json!({
        "person": {"email": who.person.email, "name": name, "team": team, "manager": manager,
                   "timezone": timezone},
        "has_feed": has_feed,
        "feed_url": feed_url,
    });
    render(state, Some(who), StatusCode::OK, "me", data)
}

/// `GET /me`.
pub async fn show(who: SignedIn, state: web::Data<AppState>) -> Result<HttpResponse, PageError> {
    page(&state, &who, None).await
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
    page(&state, &who, Some(url)).await
}
