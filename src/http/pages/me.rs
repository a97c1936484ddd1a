//! A person's own page: who they are in the directory, their calendar feed (the
//! feed's URL carries a secret: it is shown once, when made; making a new one stops
//! the old one), and where they are signed in (and signing the other places out).

use actix_web::http::StatusCode;
use actix_web::web;
use serde_json::json;

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::{render, Page, State};
use super::outcome::{as_person, write_as_person};
use crate::domain::notifications::Mode;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::directory::people as directory;
use crate::services::{accounts::auth, directory::notifications};

async fn page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    feed_url: Option<String>,
    notice: Option<String>,
) -> Page {
    let (person, sessions, choice) = as_person(state, who, move |conn, _, me| {
        Ok((
            directory::get(conn, me.actor)?,
            auth::sessions_of(conn, Some(me.actor), 100)?,
            notifications::choice(conn, me.actor)?,
        ))
    })
    .await?;
    let paused = choice.paused_until.filter(|t| *t > crate::db::now());
    let notifications = match (paused, choice.mode) {
        (Some(until), _) => format!(
            "Paused until {} (then as you chose).",
            until
                .and_utc()
                .with_timezone(&super::kit::zone_of(state, Some(who)))
                .format("%-d %b %Y, %H:%M %Z")
        ),
        (None, Mode::Every) => "You get every email.".to_owned(),
        (None, Mode::Digests) => "You get reminders and digests, not single notices.".to_owned(),
        (None, Mode::Essential) => "You get only what needs you.".to_owned(),
    };
    let current = &who.person.session_id;
    let sessions: Vec<_> = sessions
        .iter()
        .map(|s| {
            json!({"method": s.method, "client": s.client, "created_at": s.created_at.and_utc().to_rfc3339(),
                   "last_seen_at": s.last_seen_at.and_utc().to_rfc3339(), "current": &s.id == current})
        })
        .collect();
    let has_feed = person.as_ref().is_some_and(|(_, feed)| *feed);
    let person = person.map(|(p, _)| p);
    let field =
        |f: fn(&directory::Person) -> &Option<String>| person.as_ref().and_then(|p| f(p).clone());
    let data = json!({
        "person": {"email": who.person.email, "name": field(|p| &p.name), "team": field(|p| &p.team),
                   "manager": field(|p| &p.manager_email), "timezone": field(|p| &p.timezone)},
        "has_feed": has_feed,
        "feed_url": feed_url,
        "others": sessions.len() > 1,
        "sessions": sessions,
        "notice": notice,
        "notifications": notifications,
        "zones": chrono_tz::TZ_VARIANTS.iter().map(|z| z.name()).collect::<Vec<_>>(),
    });
    render(state, Some(who), StatusCode::OK, "me", data)
}

/// `GET /me`.
pub async fn show(who: SignedIn, query: web::Query<SavedQuery>, state: State) -> Page {
    let notice = (query.into_inner().saved.as_deref() == Some("timezone"))
        .then(|| "Saved: the pages show and take times in your time zone.".to_owned());
    page(&state, &who, None, notice).await
}

/// What `GET /me` may carry: what was just saved.
#[derive(Debug, serde::Deserialize)]
pub struct SavedQuery {
    saved: Option<String>,
}

/// `POST /me/calendar`: a new calendar feed URL, shown once; the old one stops working.
pub async fn new_calendar(form: CsrfForm<Fields>, state: State) -> Page {
    let who = form.who;
    let email =
        crate::domain::EmailAddress::parse(&who.person.email).map_err(PageError::BadRequest)?;
    let target = email.clone();
    let secret = write_as_person(&state, &who, move |conn, _, _| {
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
pub async fn sign_out_others(form: CsrfForm<Fields>, state: State) -> Page {
    let who = form.who;
    let keep = who.person.session_id.clone();
    let ended = write_as_person(&state, &who, move |conn, _, me| {
        Ok(auth::end_others(conn, me.actor, &keep)?)
    })
    .await?;
    let notice = match ended {
        0 => "You were signed in nowhere else.".to_owned(),
        1 => "Signed out of 1 other session.".to_owned(),
        n => format!("Signed out of {n} other sessions."),
    };
    page(&state, &who, None, Some(notice)).await
}

/// `POST /me/timezone`: the person's own time zone (`timezone`, an IANA name such as
/// Europe/Berlin; empty: the organisation's), in which the pages show times and take
/// them. Their team and manager stay as they are.
pub async fn set_timezone(form: CsrfForm<Fields>, state: State) -> Page {
    let who = form.who;
    let typed = form.fields.filled("timezone");
    let email =
        crate::domain::EmailAddress::parse(&who.person.email).map_err(PageError::BadRequest)?;
    let refused = write_as_person(&state, &who, move |conn, _, _| {
        let current = directory::get(conn, email.as_str())?.map(|(p, _)| p);
        let input = directory::PersonInput {
            name: current.as_ref().and_then(|p| p.name.clone()),
            team: current.as_ref().and_then(|p| p.team.clone()),
            manager_email: current
                .as_ref()
                .and_then(|p| p.manager_email.as_deref())
                .and_then(|m| crate::domain::EmailAddress::parse(m).ok()),
            timezone: typed,
            bar_raiser: None,
        };
        match directory::put_own(conn, &email, &input) {
            Ok(_) => Ok(None),
            Err(directory::PeopleError::Forbidden(why)) => Ok(Some(why)),
            Err(directory::PeopleError::Invalid(problems)) => {
                Ok(Some(super::kit::problems_in_words(problems)))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    match refused {
        Some(problem) => {
            let notice = format!("Your time zone was not changed: {problem}.");
            page(&state, &who, None, Some(notice)).await
        }
        None => Ok(super::outcome::see_other("/me?saved=timezone")),
    }
}
