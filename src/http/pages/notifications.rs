//! A person's notification settings: which email coe sends them, and a pause. Reached
//! signed in (`/me/notifications`) or from the unsubscribe link in a reminder or a
//! digest (`/notifications/{token}`), which works without signing in; a POST to that
//! link with `List-Unsubscribe=One-Click` (RFC 8058, sent by mail providers) leaves
//! only what needs them, without a page.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::error::PageError;
use super::guard::{CsrfForm, Fields, LinkForm};
use super::kit::{render, Page, State};
use super::outcome::see_other;
use crate::domain::notifications::{Choice, Mode, Reach, MAX_PAUSE_DAYS};
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, with_write};
use crate::services::directory::notifications;

/// The pauses offered, in days.
const PAUSES: [i64; 6] = [1, 3, 7, 14, 30, MAX_PAUSE_DAYS];

/// Whose settings a page shows, and where its form goes.
struct Holder {
    email: String,
    action: String,
}

async fn page(
    state: &State,
    who: Option<&SignedIn>,
    holder: Holder,
    notice: Option<&str>,
    problem: Option<String>,
) -> Page {
    let email = holder.email.clone();
    let choice = with_conn(state, move |conn, _| {
        Ok(notifications::choice(conn, &email)?)
    })
    .await?;
    let now = crate::db::now();
    let paused_until = choice.paused_until.filter(|until| *until > now);
    let modes: Vec<_> = Mode::ALL
        .into_iter()
        .map(|m| {
            let (label, says) = match m {
                Mode::Every => ("Every email", "Reminders, digests and notices as they come."),
                Mode::Digests => (
                    "Reminders and digests only",
                    "No single notices (a COE approved or merged, an incident that came back): they stay on your pages.",
                ),
                Mode::Essential => (
                    "Only what needs me",
                    "No reminders, digests or notices.",
                ),
            };
            json!({"value": m.name(), "label": label, "says": says, "chosen": m == choice.mode})
        })
        .collect();
    // Slack is offered when a Slack app is set up (a channel with its signing secret).
    let slack = crate::services::outbound::outbox::direct::app(state.env()).is_some();
    let reaches: Vec<_> = Reach::ALL
        .into_iter()
        .map(|r| {
            let (label, says) = match r {
                Reach::Email => ("By email", "As it has always come."),
                Reach::Chat => (
                    "In Slack instead",
                    "A direct message from coe, with buttons to mark an action done, move its due date or verify it. If it cannot be delivered within half an hour, the email comes instead.",
                ),
                Reach::Both => ("Both", "The email, and the Slack message with its buttons."),
            };
            json!({"value": r.name(), "label": label, "says": says, "chosen": r == choice.reach})
        })
        .collect();
    let settings = &state.settings;
    let data = json!({
        "slack": slack,
        "reaches": reaches,
        "email": holder.email,
        "action": holder.action,
        "by_session": holder.action == "/me/notifications",
        "modes": modes,
        "paused_until": paused_until.map(|t| t.and_utc().to_rfc3339()),
        "pauses": PAUSES,
        "escalate_after_days": settings.reminders.escalate_after_days,
        "on_inspection_list": settings.digest.recipients.iter().any(|r| r.eq_ignore_ascii_case(&holder.email)),
        "notice": notice,
        "problem": problem,
    });
    let status = if data["problem"].is_null() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    render(state, who, status, "notifications", data)
}

/// The choice a form asks for, or what is wrong with it (in the page's words).
fn chosen(fields: &Fields, had: Choice) -> Result<Choice, String> {
    let mode = Mode::parse(&fields.text("mode"))
        .ok_or("Choose which emails you want: one of the three.")?;
    let now = crate::db::now();
    let paused_until = match fields.text("pause").as_str() {
        "" | "keep" => had.paused_until.filter(|until| *until > now),
        days => {
            let days: i64 = days
                .parse()
                .map_err(|_| "Choose a pause from the list.".to_owned())?;
            Choice::pause_for(days, now)?
        }
    };
    // Offered only while a Slack app is set up: without the field, it stays as it was.
    let reach = match fields.text("reach").as_str() {
        "" => had.reach,
        word => Reach::parse(word).ok_or("Choose where reminders reach you: one of the three.")?,
    };
    Ok(Choice {
        mode,
        paused_until,
        reach,
    })
}

/// Saves the form's choice for `email`; `None` when it was saved, else the problem.
async fn save(state: &State, email: String, fields: Fields) -> Result<Option<String>, PageError> {
    Ok(with_write(state, move |conn, _| {
        let had = notifications::choice(conn, &email)?;
        match chosen(&fields, had) {
            Ok(choice) => {
                notifications::save(conn, &email, choice, crate::db::now())?;
                Ok(None)
            }
            Err(problem) => Ok(Some(problem)),
        }
    })
    .await?)
}

fn own(who: &SignedIn) -> Holder {
    Holder {
        email: who.person.email.clone(),
        action: "/me/notifications".into(),
    }
}

/// `GET /me/notifications`.
pub async fn show(who: SignedIn, state: State, query: web::Query<Saved>) -> Page {
    let notice = query.saved.is_some().then_some("Saved.");
    page(&state, Some(&who), own(&who), notice, None).await
}

/// `?saved=1` after a form that worked.
#[derive(serde::Deserialize)]
pub struct Saved {
    saved: Option<String>,
}

/// `POST /me/notifications`.
pub async fn change(form: CsrfForm<Fields>, state: State) -> Page {
    let who = form.who;
    match save(&state, who.person.email.clone(), form.fields).await? {
        None => Ok(see_other("/me/notifications?saved=1")),
        Some(problem) => page(&state, Some(&who), own(&who), None, Some(problem)).await,
    }
}

/// The address an unsubscribe link was made for; a 404 page for one unknown or too old.
async fn link_owner(state: &State, token: String) -> Result<Holder, PageError> {
    let action = format!("/notifications/{token}");
    let email = with_conn(state, move |conn, _| {
        Ok(notifications::link_owner(conn, &token)?)
    })
    .await?;
    match email {
        Some(email) => Ok(Holder { email, action }),
        None => Err(PageError::NotFound(
            "This link to your email settings is unknown or too old (links work for 90 days). \
             Sign in and open My page, or use the link in a newer email."
                .into(),
        )),
    }
}

/// `GET /notifications/{token}`: the settings of the link's owner, without signing in.
pub async fn show_by_link(
    token: web::Path<String>,
    state: State,
    who: Option<SignedIn>,
    query: web::Query<Saved>,
) -> Page {
    let holder = link_owner(&state, token.into_inner()).await?;
    let notice = query.saved.is_some().then_some("Saved.");
    page(&state, who.as_ref(), holder, notice, None).await
}

/// `POST /notifications/{token}`: the one-click unsubscribe (RFC 8058), or the form.
pub async fn change_by_link(
    form: LinkForm<Fields>,
    token: web::Path<String>,
    state: State,
    who: Option<SignedIn>,
) -> Page {
    let token = token.into_inner();
    if form.fields.text("List-Unsubscribe") == "One-Click" {
        let done = with_write(&state, move |conn, _| {
            Ok(notifications::unsubscribe(conn, &token)?)
        })
        .await?;
        return match done {
            Some(_) => Ok(HttpResponse::Ok()
                .content_type("text/plain; charset=utf-8")
                .body("Unsubscribed: coe sends you only what needs you now.\n")),
            None => Err(PageError::NotFound(
                "unknown or expired unsubscribe link".into(),
            )),
        };
    }
    let holder = link_owner(&state, token).await?;
    match save(&state, holder.email.clone(), form.fields).await? {
        None => Ok(see_other(&format!("{}?saved=1", holder.action))),
        Some(problem) => page(&state, who.as_ref(), holder, None, Some(problem)).await,
    }
}
