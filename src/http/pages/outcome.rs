//! How a page runs a service and what a form's change comes to. Every page handler
//! reaches the database through [`as_person`] or [`as_service`], and the service's
//! error is turned into an answer inside, on the thread that holds the connection (a
//! database fault is noted there and the connection leaves the pool). A form's change
//! comes to one [`Outcome`], answered the same way on every page: done → 303 to the
//! page and the place on it; someone saved first → 409 with both versions; no version
//! → 412; invalid → 422, the page again with the problems and everything typed kept;
//! refused in the state it is in → 409, the same.

use std::future::Future;

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::error::PageError;
use super::kit::Page;
use crate::db::DbConnection;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::access::Editor;
use crate::services::coe::coes::CoeError;

/// What a form's change came to.
#[derive(Debug)]
pub enum Outcome {
    Done,
    /// Someone saved first: the form named version `expected`, it is at `current`.
    Stale {
        expected: i32,
        current: i32,
    },
    /// The form named no version, or one of another kind of page.
    OutOfDate(String),
    /// Fields with their problems.
    Invalid(Vec<(String, String)>),
    /// Not in the state it is in (a closed COE, a step an action cannot take).
    Refused(String),
}

/// What to show again when a change did not go through.
#[derive(Debug)]
pub struct Again {
    pub status: StatusCode,
    /// Each as "field: problem", or the reason.
    pub problems: Vec<String>,
    /// For `Stale`: the versions (expected, current).
    pub stale: Option<(i32, i32)>,
    /// For `Invalid`: each field with its problem, as the service named them.
    pub fields: Vec<(String, String)>,
}

/// A service's error, as a form's outcome sees it: what the API answers, and for a
/// COE that someone saved first, the two versions.
pub trait FormError: Into<ApiError> {
    /// (the version the form named, the version now), when someone saved first.
    fn stale(&self) -> Option<(i32, i32)> {
        None
    }
}

impl FormError for CoeError {
    fn stale(&self) -> Option<(i32, i32)> {
        match self {
            CoeError::Stale { expected, current } => Some((*expected, *current)),
            _ => None,
        }
    }
}

impl FormError for crate::services::coe::actions::ActionError {}
impl FormError for crate::services::directory::people::PeopleError {}
impl FormError for crate::services::directory::tokens::TokenError {}
impl FormError for ApiError {}

impl Outcome {
    /// The outcome of a service's answer; an error that is not about the form (not
    /// found, forbidden, a database fault) stays an error.
    pub fn of<E: FormError>(result: Result<(), E>) -> Result<Outcome, ApiError> {
        let error = match result {
            Ok(()) => return Ok(Outcome::Done),
            Err(e) => e,
        };
        if let Some((expected, current)) = error.stale() {
            return Ok(Outcome::Stale { expected, current });
        }
        match error.into() {
            ApiError::Validation(fields) => Ok(Outcome::Invalid(
                fields.into_iter().map(|f| (f.field, f.problem)).collect(),
            )),
            ApiError::Conflict { message, .. } => Ok(Outcome::Refused(message)),
            ApiError::PreconditionFailed(m) | ApiError::PreconditionRequired(m) => {
                Ok(Outcome::OutOfDate(m))
            }
            other => Err(other),
        }
    }

    /// Answers it: a 303 to `done` when it worked; a 412 when the form was out of
    /// date; otherwise the page again, from `again`.
    pub async fn answer<F, Fut>(self, done: &str, again: F) -> Page
    where
        F: FnOnce(Again) -> Fut,
        Fut: Future<Output = Result<HttpResponse, PageError>>,
    {
        let shown = match self {
            Outcome::Done => return Ok(see_other(done)),
            Outcome::OutOfDate(m) => {
                return Err(PageError::Precondition(format!(
                    "{m}. The page was out of date: reload it and make the change again."
                )))
            }
            Outcome::Stale { expected, current } => Again {
                status: StatusCode::CONFLICT,
                problems: Vec::new(),
                stale: Some((expected, current)),
                fields: Vec::new(),
            },
            Outcome::Invalid(problems) => Again {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                problems: problems
                    .iter()
                    .map(|(field, p)| {
                        // A problem of the whole form (no field) is a sentence of its own.
                        if field.is_empty() {
                            p.clone()
                        } else {
                            format!("{}: {p}", label_of(field))
                        }
                    })
                    .collect(),
                stale: None,
                fields: problems,
            },
            Outcome::Refused(m) => Again {
                status: StatusCode::CONFLICT,
                problems: vec![m],
                stale: None,
                fields: Vec::new(),
            },
        };
        again(shown).await
    }
}

/// A `303 See Other` to `location`: where a form that worked sends the browser.
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// Runs `work` on a pooled connection as the signed-in person: the same `Editor` the
/// API's callers become, so the services' access rules decide.
pub async fn as_person<T: Send + 'static>(
    state: &web::Data<AppState>,
    who: &SignedIn,
    work: impl PersonsWork<T>,
) -> Result<T, PageError> {
    Ok(with_conn(state, acting_as(who, work)).await?)
}

/// What a page does as the signed-in person (`as_person`, `write_as_person`): on a
/// connection, with the state, as the person's `Editor`.
pub trait PersonsWork<T>:
    FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<T, ApiError> + Send + 'static
{
}

impl<T, F> PersonsWork<T> for F where
    F: FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<T, ApiError> + Send + 'static
{
}

/// Runs `work` on a pooled connection for a page that reads, or for an admin's
/// change the service makes on its own terms (a directory import, a token).
pub async fn as_service<T: Send + 'static>(
    state: &web::Data<AppState>,
    work: impl FnOnce(&mut DbConnection, &AppState) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, PageError> {
    Ok(with_conn(state, work).await?)
}

/// Runs `work`, which writes, as the signed-in person through `with_write`, as the
/// API's changes do (on SQLite, the writer's next batch: one commit for the writes
/// that wait together).
pub async fn write_as_person<T: Send + 'static>(
    state: &web::Data<AppState>,
    who: &SignedIn,
    work: impl PersonsWork<T>,
) -> Result<T, PageError> {
    Ok(with_write(state, acting_as(who, work)).await?)
}

/// `work` as a work of `with_conn` or `with_write`, done as the signed-in person.
fn acting_as<T>(
    who: &SignedIn,
    work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<T, ApiError> + Send + 'static,
) -> impl FnOnce(&mut DbConnection, &AppState) -> Result<T, ApiError> + Send + 'static {
    let acting = who.person.acting();
    move |conn, state| work(conn, state, &acting.editor())
}

/// Runs a change as the signed-in person and says what it came to.
pub async fn change<E: FormError>(
    state: &web::Data<AppState>,
    who: &SignedIn,
    work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>) -> Result<(), E> + Send + 'static,
) -> Result<Outcome, PageError> {
    write_as_person(state, who, move |conn, state, editor| {
        Outcome::of(work(conn, state, editor))
    })
    .await
}

/// Keeps `body` for the signed-in person on page `page` (its path, or a COE's id) and
/// answers the id its address names (`?kept=…`): a form that did not go through is
/// answered `303` like one that did, so Back and reload never post it again.
pub async fn keep_form(
    state: &web::Data<AppState>,
    who: &SignedIn,
    page: &str,
    status: actix_web::http::StatusCode,
    body: serde_json::Value,
) -> Result<String, PageError> {
    let (person, page) = (who.person.email.as_str().to_owned(), page.to_owned());
    as_service(state, move |conn, _| {
        Ok(crate::services::forms::keep(
            conn,
            &person,
            &page,
            status.as_u16(),
            &body,
        )?)
    })
    .await
}

/// What `keep_form` kept as `id` for the signed-in person on page `page`, with the
/// status to answer with; `None` when there is nothing (gone, another's, another page's).
pub async fn kept_form(
    state: &web::Data<AppState>,
    who: &SignedIn,
    page: &str,
    id: Option<String>,
) -> Result<Option<(actix_web::http::StatusCode, serde_json::Value)>, PageError> {
    let Some(id) = id else { return Ok(None) };
    let (person, page) = (who.person.email.as_str().to_owned(), page.to_owned());
    let found = as_service(state, move |conn, _| {
        Ok(crate::services::forms::kept(conn, &id, &person, &page)?)
    })
    .await?;
    Ok(found.and_then(|(status, body)| {
        Some((actix_web::http::StatusCode::from_u16(status).ok()?, body))
    }))
}

/// A field as its form labels it, for a problem shown on a page: the API's names
/// (`success_criteria`, `evidence_url`) are not the person's words.
pub fn label_of(field: &str) -> String {
    let known = match field {
        "owner" => "Owner",
        "reviewer" => "Reviewer",
        "title" => "Title",
        "success_criteria" => "Done when",
        "description" => "Description",
        "priority" => "Priority",
        "kind" => "Kind",
        "external_url" => "Link to its ticket",
        "evidence_url" => "Link to the evidence",
        "due_date" => "Due date",
        "past_target_reason" => "Why later than the target",
        "until" => "Accept the risk until",
        "interim_control" => "Interim control in place",
        "remaining_risk" => "Risk that remains",
        "labels" => "The alert's labels",
        "decision" => "Decision",
        "reason" => "Why",
        "note" => "Note",
        "at" => "Time",
        "text" => "What happened",
        "severity" => "Severity",
        "service" => "Service",
        "started_at" => "When it started",
        "detected_at" => "When it was noticed",
        "resolved_at" => "When it ended",
        "body" => "The text",
        "customer_name" => "What customers call it",
        "statuspage_incident" => "The Statuspage incident",
        _ => "",
    };
    // A step of a 5-whys chain: `steps[1].because` is the second why's answer.
    if let Some((index, part)) = field
        .strip_prefix("steps[")
        .and_then(|rest| rest.split_once("]."))
    {
        if let Ok(i) = index.parse::<usize>() {
            let which = if part == "because" {
                "Because …"
            } else {
                "Why …?"
            };
            return format!("Why {}, “{which}”", i + 1);
        }
    }
    if known.is_empty() {
        let words = field.replace(['_', '.'], " ");
        let mut chars = words.chars();
        chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    } else {
        known.to_owned()
    }
}
