//! The admin pages: the people directory (CSV import with its per-line report, admin
//! flags, signing someone out everywhere), API tokens (made, shown once, revoked), the
//! outbox (emails by state, the SMTP server's answer for failures, retry) and the
//! browser sessions. Only people the directory marks as admins see them; each calls
//! the service its API endpoint calls.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{render, see_other, Fields, PageError};
use crate::domain::{EmailAddress, Role, TokenName};
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::{auth, outbox, people, tokens};

/// The signed-in person, when they are an admin.
fn admin(who: &SignedIn) -> Result<(), PageError> {
    if who.person.is_admin {
        Ok(())
    } else {
        Err(PageError::Forbidden(
            "only admins see the admin pages; an admin token makes someone an admin with \
             PUT /api/v1/people/{email}/admin"
                .into(),
        ))
    }
}

/// Renders an admin page with its tab marked.
fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    name: &str,
    tab: &str,
    mut data: Value,
) -> Result<HttpResponse, PageError> {
    data["tab"] = json!({ tab: true });
    render(state, Some(who), status, name, data)
}

#[derive(Debug, Default, Deserialize)]
pub struct PeopleQuery {
    #[serde(default)]
    team: Option<String>,
}

async fn people_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    team: Option<String>,
    status: StatusCode,
    report: Option<Value>,
) -> Result<HttpResponse, PageError> {
    let filter = team.clone();
    let everyone = with_conn(state, move |conn, _| {
        Ok(people::list(conn, filter.as_deref())?)
    })
    .await?;
    let data = json!({"people": everyone, "team": team, "report": report});
    page(state, who, status, "admin_people", "people", data)
}

/// `GET /admin/people`.
pub async fn people_list(
    who: SignedIn,
    query: web::Query<PeopleQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let team = query.into_inner().team.filter(|t| !t.trim().is_empty());
    people_page(&state, &who, team, StatusCode::OK, None).await
}

/// `POST /admin/people/import`: CSV pasted into the form; the answer lists what was
/// created and updated and every rejected line with why.
pub async fn people_import(
    who: SignedIn,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let form = Fields::new(form);
    form.check(&who)?;
    let csv = form.text("csv");
    let imported = with_conn(&state, move |conn, _| Ok(people::import_csv(conn, &csv))).await?;
    let (status, report) = match imported {
        Ok(report) => (StatusCode::OK, json!(report)),
        Err(people::PeopleError::Invalid(problems)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"problems": problems.into_iter().map(|(f, p)| format!("{f}: {p}")).collect::<Vec<_>>()}),
        ),
        Err(e) => return Err(crate::error::ApiError::from(e).into()),
    };
    people_page(&state, &who, None, status, Some(report)).await
}

/// `POST /admin/people/{email}/admin`: sets or clears the admin flag (`is_admin` =
/// `true` or `false`).
pub async fn people_admin(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let form = Fields::new(form);
    form.check(&who)?;
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let is_admin = form.text("is_admin") == "true";
    if !is_admin && email.as_str() == who.person.email {
        return Err(PageError::BadRequest(
            "you cannot remove your own admin flag here; ask another admin".into(),
        ));
    }
    with_conn(&state, move |conn, _| {
        Ok(people::set_admin(conn, &email, is_admin)?)
    })
    .await?;
    Ok(see_other("/admin/people"))
}

/// `POST /admin/people/{email}/sign-out`: ends every session of the person.
pub async fn people_sign_out(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    Fields::new(form).check(&who)?;
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let by = format!("admin {}", who.person.email);
    with_conn(&state, move |conn, _| {
        Ok(auth::end_all(conn, email.as_str(), &by)?)
    })
    .await?;
    Ok(see_other("/admin/sessions"))
}

async fn tokens_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    status: StatusCode,
    extra: Value,
) -> Result<HttpResponse, PageError> {
    let list = with_conn(state, |conn, _| Ok(tokens::list(conn, true)?)).await?;
    let mut data = json!({"tokens": list, "roles": ["member", "ingest", "admin"]});
    if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
        data.extend(extra);
    }
    page(state, who, status, "admin_tokens", "tokens", data)
}

/// `GET /admin/tokens`.
pub async fn tokens_list(
    who: SignedIn,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    tokens_page(&state, &who, StatusCode::OK, json!({})).await
}

/// `POST /admin/tokens`: makes a token and shows its secret, once.
pub async fn tokens_create(
    who: SignedIn,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let form = Fields::new(form);
    form.check(&who)?;
    let mut problems = Vec::new();
    let name = TokenName::parse(&form.text("name"))
        .map_err(|p| problems.push(format!("name: {p}")))
        .ok();
    let role = form
        .text("role")
        .parse::<Role>()
        .map_err(|p| problems.push(format!("role: {p}")))
        .ok();
    let email = form.filled("email").and_then(|e| {
        EmailAddress::parse(&e)
            .map_err(|p| problems.push(format!("email: {p}")))
            .ok()
    });
    let (Some(name), Some(role), true) = (name, role, problems.is_empty()) else {
        let extra = json!({"problems": problems, "form": form.to_json()});
        return tokens_page(&state, &who, StatusCode::UNPROCESSABLE_ENTITY, extra).await;
    };
    let by = who.person.email.clone();
    let made = with_conn(&state, move |conn, _| {
        Ok(tokens::create_by(
            conn,
            &name,
            role,
            email.as_ref(),
            Some(&by),
        ))
    })
    .await?;
    match made {
        Ok((info, secret)) => {
            let extra = json!({"made": {"name": info.name, "secret": secret.expose()}});
            tokens_page(&state, &who, StatusCode::CREATED, extra).await
        }
        Err(e @ tokens::TokenError::NameTaken(_)) => {
            let extra = json!({"problems": [e.to_string()], "form": form.to_json()});
            tokens_page(&state, &who, StatusCode::CONFLICT, extra).await
        }
        Err(e) => Err(crate::error::ApiError::from(e).into()),
    }
}

/// `POST /admin/tokens/{name}/revoke`.
pub async fn tokens_revoke(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    Fields::new(form).check(&who)?;
    let name = path.into_inner();
    let revoked = with_conn(&state, move |conn, _| Ok(tokens::revoke(conn, &name))).await?;
    match revoked {
        Ok(_) => Ok(see_other("/admin/tokens")),
        Err(e @ tokens::TokenError::NotFound(_)) => Err(PageError::NotFound(e.to_string())),
        Err(e) => Err(crate::error::ApiError::from(e).into()),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct OutboxQuery {
    #[serde(default)]
    state: Option<String>,
}

/// `GET /admin/outbox`: counts by state and the newest 100 emails (of one state).
pub async fn outbox_list(
    who: SignedIn,
    query: web::Query<OutboxQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let filter = query
        .into_inner()
        .state
        .filter(|s| ["pending", "sending", "sent", "failed"].contains(&s.as_str()));
    let shown = filter.clone();
    let (counts, emails) = with_conn(&state, move |conn, _| {
        Ok((
            outbox::counts(conn)?,
            outbox::list(conn, shown.as_deref(), None, None, 100)?,
        ))
    })
    .await?;
    let data = json!({"counts": counts, "emails": emails, "state": filter});
    page(&state, &who, StatusCode::OK, "admin_outbox", "outbox", data)
}

/// `POST /admin/outbox/{id}/retry`.
pub async fn outbox_retry(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    Fields::new(form).check(&who)?;
    let id = path.into_inner();
    let retried = with_conn(&state, move |conn, _| Ok(outbox::retry(conn, &id))).await?;
    match retried {
        Ok(_) => Ok(see_other("/admin/outbox?state=pending")),
        Err(e @ outbox::RetryError::NotFound(_)) => Err(PageError::NotFound(e.to_string())),
        Err(e @ outbox::RetryError::NotFailed(_)) => Err(PageError::Conflict(e.to_string())),
        Err(outbox::RetryError::Db(e)) => Err(crate::error::ApiError::from(e).into()),
    }
}

/// `GET /admin/sessions`: every session that has not ended, newest first.
pub async fn sessions_list(
    who: SignedIn,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    let sessions = with_conn(&state, |conn, _| Ok(auth::sessions_of(conn, None, 500)?)).await?;
    let data = json!({"sessions": sessions, "mine": who.person.session_id});
    page(
        &state,
        &who,
        StatusCode::OK,
        "admin_sessions",
        "sessions",
        data,
    )
}

/// `POST /admin/sessions/{id}/end`.
pub async fn sessions_end(
    who: SignedIn,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    admin(&who)?;
    Fields::new(form).check(&who)?;
    let id = path.into_inner();
    let by = format!("admin {}", who.person.email);
    with_conn(&state, move |conn, _| Ok(auth::end(conn, &id, &by)?)).await?;
    Ok(see_other("/admin/sessions"))
}
