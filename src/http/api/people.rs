//! The people directory: `/api/v1/people`.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::{EmailAddress, Role};
use crate::error::{ApiError, ErrorBody, FieldProblem};
use crate::http::bearer::{Admin, Member};
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::{with_conn, AppState};
use crate::services::access;
use crate::services::accounts::auth::{self, SessionView};
use crate::services::directory::people::{self, ImportReport, PeopleError, Person, PersonInput};

impl From<PeopleError> for ApiError {
    fn from(e: PeopleError) -> Self {
        match e {
            PeopleError::Invalid(problems) => ApiError::Validation(
                problems
                    .into_iter()
                    .map(|(f, p)| FieldProblem::new(f, p))
                    .collect(),
            ),
            PeopleError::Forbidden(m) => ApiError::Forbidden(m),
            PeopleError::Provisioned(field, problem) => ApiError::Conflict {
                message: problem.clone(),
                fields: vec![FieldProblem::new(field, problem)],
            },
            PeopleError::Database(e) => e.into(),
        }
    }
}

/// Creates or replaces a person in the directory (admins); a member may set their own
/// name and time zone (their team, manager and `bar_raiser` flag are an admin's to
/// change). `bar_raiser` left out keeps it as it is.
#[utoipa::path(operation_id = "put_person", put, path = "/api/v1/people/{email}", tag = "people", security(("bearer" = [])),
    params(("email" = String, Path, description = "The person's email address")),
    request_body = PersonInput,
    responses(
        (status = 200, description = "The person as stored", body = Person),
        (status = 403, description = "Not an admin, and not the caller's own entry, or a member changing their team, manager or bar raiser flag", body = ErrorBody),
        (status = 422, description = "A bad email, manager or time zone", body = ErrorBody),
    ))]
pub async fn put(
    Member(caller): Member,
    email: web::Path<String>,
    body: ApiJson<PersonInput>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let email =
        EmailAddress::parse(&email.into_inner()).map_err(|p| ApiError::field("email", p))?;
    let input = body.0;
    // The directory decides who may sign in and where escalations go: only admins
    // write it; a member may change their own name and time zone.
    let admin = access::directory_entry(
        caller.email.as_deref(),
        caller.role == Role::Admin,
        email.as_str(),
        "only an admin may change another person's entry in the directory",
    )
    .map_err(|e| ApiError::Forbidden(e.to_string()))?
        == access::EntryAccess::Any;
    let person = with_conn(&state, move |conn, state| {
        let teams_from_groups = !state.settings.scim.team_groups.is_empty();
        Ok(if admin {
            people::put(conn, &email, &input, teams_from_groups)?
        } else {
            people::put_own(conn, &email, &input)?
        })
    })
    .await?;
    Ok(HttpResponse::Ok().json(person))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PeopleQuery {
    /// Only this team.
    pub team: Option<String>,
    /// A part of a name, an address or a team (any case; at most 100 characters): the
    /// people who match, those whose address or name starts with it first, at most
    /// `limit`. Answers `found` instead of `people`.
    #[param(max_length = 100)]
    pub q: Option<String>,
    /// With `q`: 1 to 50, default 20.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PeopleList {
    /// Everyone, or one team's (without `q`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub people: Option<Vec<Person>>,
    /// The people matching `q`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<Vec<people::Found>>,
}

/// Lists the directory, by email.
#[utoipa::path(operation_id = "list_people", get, path = "/api/v1/people", tag = "people", security(("bearer" = [])),
    params(PeopleQuery),
    responses(
        (status = 200, description = "Everyone, or one team; with `q`, the people found", body = PeopleList),
        (status = 422, description = "`q` too long, or `limit` out of range", body = ErrorBody),
    ))]
pub async fn list(
    _: Member,
    query: ApiQuery<PeopleQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let PeopleQuery { team, q, limit } = query.0;
    // Checked whenever given, so that a wrong one is never silently ignored.
    let limit = match limit {
        None => 20,
        Some(n) if (1..=people::MAX_FOUND).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::field(
                "limit",
                format!("must be from 1 to {}", people::MAX_FOUND),
            ))
        }
    };
    if let Some(text) = q {
        let found = with_conn(&state, move |conn, _| Ok(people::find(conn, &text, limit)?)).await?;
        return Ok(HttpResponse::Ok().json(PeopleList {
            people: None,
            found: Some(found),
        }));
    }
    let people = with_conn(&state, move |conn, _| {
        Ok(people::list(conn, team.as_deref())?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(PeopleList {
        people: Some(people),
        found: None,
    }))
}

/// Imports people from CSV (admins only): a header `email,name,team,manager_email,timezone`
/// (and optionally `bar_raiser`, yes or no; empty leaves it), then a line per person. Good lines are stored; every rejected line is reported with why.
#[utoipa::path(operation_id = "import_people", post, path = "/api/v1/people/import", tag = "people", security(("bearer" = [])),
    request_body(content = String, content_type = "text/csv"),
    responses(
        (status = 200, description = "What was created, updated and rejected", body = ImportReport),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "No usable header", body = ErrorBody),
    ))]
pub async fn import(
    _: Admin,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let limit = state.settings.server.max_body_bytes;
    let bytes = crate::http::extract::read_body(payload, limit, "server.max_body_bytes").await?;
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|e| ApiError::field("body", format!("must be UTF-8 text ({e})")))?;
    let report = with_conn(&state, move |conn, state| {
        let teams_from_groups = !state.settings.scim.team_groups.is_empty();
        Ok(people::import_csv(conn, &text, teams_from_groups)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(report))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FeedUrl {
    /// Subscribe to this URL in a calendar. It carries a secret: shown once.
    pub url: String,
}

/// Makes a new calendar feed URL for a person (the person themselves, or an admin).
/// The previous URL stops working.
#[utoipa::path(operation_id = "new_feed_url", post, path = "/api/v1/people/{email}/feed-token", tag = "people", security(("bearer" = [])),
    params(("email" = String, Path, description = "The person's email address")),
    responses(
        (status = 201, description = "The feed URL, with its secret", body = FeedUrl),
        (status = 403, description = "Neither that person nor an admin", body = ErrorBody),
    ))]
pub async fn new_feed_token(
    Member(caller): Member,
    email: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let email =
        EmailAddress::parse(&email.into_inner()).map_err(|p| ApiError::field("email", p))?;
    access::directory_entry(
        caller.email.as_deref(),
        caller.role == Role::Admin,
        email.as_str(),
        "only the person themselves or an admin may make their calendar feed URL",
    )
    .map_err(|e| ApiError::Forbidden(e.to_string()))?;
    let base = state.settings.public_url.trim_end_matches('/').to_owned();
    let target = email.clone();
    let secret = with_conn(&state, move |conn, _| {
        Ok(people::new_feed_token(conn, &target)?)
    })
    .await?;
    Ok(HttpResponse::Created().json(FeedUrl {
        url: format!(
            "{base}/api/v1/people/{}/actions.ics?token={}",
            email.as_str(),
            secret.expose()
        ),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// The feed secret from the feed URL.
    pub token: Option<String>,
}

/// A person's open corrective actions as an iCalendar feed, authenticated by the
/// feed secret in the URL (calendars cannot send headers).
#[utoipa::path(operation_id = "actions_calendar", get, path = "/api/v1/people/{email}/actions.ics", tag = "people",
    params(("email" = String, Path, description = "The person's email address"), FeedQuery),
    responses(
        (status = 200, description = "iCalendar", content_type = "text/calendar", body = String),
        (status = 401, description = "Missing or wrong feed secret", body = ErrorBody),
    ))]
pub async fn calendar(
    email: web::Path<String>,
    query: ApiQuery<FeedQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let refused =
        || ApiError::Unauthorized("the calendar feed URL is not valid (make a new one)".into());
    let email = EmailAddress::parse(&email.into_inner()).map_err(|_| refused())?;
    let secret =
        crate::domain::TokenSecret::from_presented(query.0.token.as_deref().ok_or_else(refused)?);
    let body = with_conn(&state, move |conn, state| {
        if !people::feed_token_matches(conn, email.as_str(), &secret)? {
            return Err(refused());
        }
        let clock = state.settings.clock();
        let mut open = Vec::new();
        for state_filter in crate::domain::action::ActionState::ACTIVE {
            let filter = crate::services::coe::actions::ActionFilter {
                owner: Some(email.as_str().to_owned()),
                state: Some(state_filter),
                ..Default::default()
            };
            let (page, _) = crate::services::coe::actions::list(
                conn,
                &filter,
                crate::services::coe::actions::ActionSort::DueDate,
                500,
                0,
                clock,
            )?;
            open.extend(page);
        }
        open.sort_by_key(|a| a.due_date);
        Ok(crate::services::figures::calendar::feed(
            email.as_str(),
            &open,
            &state.settings.public_url,
        ))
    })
    .await?;
    Ok(HttpResponse::Ok()
        .content_type("text/calendar; charset=utf-8")
        .body(body))
}

/// Body of `PUT /api/v1/people/{email}/admin`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminFlag {
    /// Whether the person is an admin of the web pages.
    pub is_admin: bool,
}

/// Makes a person an admin of the web pages, or not. Admin tokens only: roles on the
/// pages come from the directory, and only admins change them.
#[utoipa::path(operation_id = "set_person_admin", put, path = "/api/v1/people/{email}/admin", tag = "people", security(("bearer" = [])),
    params(("email" = String, Path, description = "The person's email address")),
    request_body = AdminFlag,
    responses(
        (status = 200, description = "The person as stored", body = Person),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 422, description = "A bad email or body", body = ErrorBody),
    ))]
pub async fn set_admin(
    Admin(caller): Admin,
    email: web::Path<String>,
    body: ApiJson<AdminFlag>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let email =
        EmailAddress::parse(&email.into_inner()).map_err(|p| ApiError::field("email", p))?;
    let is_admin = body.0.is_admin;
    if !is_admin {
        let me = caller.email.as_deref();
        access::not_from_oneself(me, email.as_str(), "you cannot remove your own admin flag")?;
    }
    let person = with_conn(&state, move |conn, _| {
        Ok(people::set_admin(conn, &email, is_admin)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(person))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

/// A person's browser sessions that have not ended.
#[utoipa::path(operation_id = "list_person_sessions", get, path = "/api/v1/people/{email}/sessions", tag = "people", security(("bearer" = [])),
    params(("email" = String, Path, description = "The person's email address")),
    responses(
        (status = 200, description = "The sessions, newest first", body = SessionList),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn sessions(
    _: Admin,
    email: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let email =
        EmailAddress::parse(&email.into_inner()).map_err(|p| ApiError::field("email", p))?;
    let sessions = with_conn(&state, move |conn, _| {
        Ok(auth::sessions_of(conn, Some(email.as_str()), 1000)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(SessionList { sessions }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionsEnded {
    /// How many sessions were ended.
    pub ended: usize,
}

/// Signs a person out everywhere: ends every browser session of theirs (a lost laptop,
/// someone who left). Every replica refuses the sessions at their next request.
#[utoipa::path(operation_id = "end_person_sessions", delete, path = "/api/v1/people/{email}/sessions", tag = "people", security(("bearer" = [])),
    params(("email" = String, Path, description = "The person's email address")),
    responses(
        (status = 200, description = "How many sessions ended", body = SessionsEnded),
        (status = 403, description = "Not an admin token", body = ErrorBody),
    ))]
pub async fn end_sessions(
    Admin(caller): Admin,
    email: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let email =
        EmailAddress::parse(&email.into_inner()).map_err(|p| ApiError::field("email", p))?;
    let by = format!("admin {}", caller.actor());
    let ended = with_conn(&state, move |conn, _| {
        Ok(auth::end_all(conn, email.as_str(), &by)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(SessionsEnded { ended }))
}
