//! A COE's summary for customers: the public page at its unguessable address
//! (`/summaries/{token}`, no sign-in, only that section), its Markdown, the exports a
//! signed-in person takes once the COE is approved, and the COE page's buttons that
//! publish it and take it down.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::error::PageError;
use super::guard::CoeForm;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use crate::http::session::SignedIn;
use crate::services::coe::publishing::{self, PublicSummary, PublishRequest};

/// The summary page, for anyone: what was published and when, nothing else.
fn summary_page(state: &State, who: Option<&SignedIn>, body: &str, when: Option<String>) -> Page {
    render(
        state,
        who,
        StatusCode::OK,
        "summary",
        json!({"body": body, "published_at": when}),
    )
}

async fn published(state: &State, token: String) -> Result<PublicSummary, PageError> {
    as_service(state, move |conn, _| Ok(publishing::public(conn, &token)?))
        .await?
        .ok_or_else(|| PageError::NotFound("there is no such page".into()))
}

/// `GET /summaries/{token}`: the public page (404 once revoked).
pub async fn public(path: web::Path<String>, state: State) -> Page {
    let found = published(&state, path.into_inner()).await?;
    let mut page = summary_page(
        &state,
        None,
        &found.body,
        Some(crate::json::format_utc(&found.published_at)),
    )?;
    // Taken down means gone: no cache keeps serving it.
    page.headers_mut().insert(
        actix_web::http::header::CACHE_CONTROL,
        actix_web::http::header::HeaderValue::from_static("no-store"),
    );
    Ok(page)
}

/// `GET /summaries/{token}/summary.md`: the same, as Markdown.
pub async fn public_markdown(path: web::Path<String>, state: State) -> Page {
    let found = published(&state, path.into_inner()).await?;
    Ok(markdown(found.body))
}

fn markdown(body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/markdown; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Cache-Control", "no-store"))
        .body(body)
}

async fn publishable(state: &State, id: String) -> Result<String, PageError> {
    as_service(state, move |conn, state| {
        Ok(publishing::publishable(conn, state.env(), &id)?)
    })
    .await
}

/// `GET /coes/{id}/for-customers.md`: the approved summary as Markdown.
pub async fn export_markdown(_: SignedIn, path: web::Path<String>, state: State) -> Page {
    Ok(markdown(publishable(&state, path.into_inner()).await?))
}

/// `GET /coes/{id}/for-customers.html`: the approved summary as a page of its own.
pub async fn export_html(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let body = publishable(&state, path.into_inner()).await?;
    summary_page(&state, Some(&who), &body, None)
}

/// `POST /coes/{id}/publish`: publishes it (the Statuspage incident optional).
pub async fn publish(form: CoeForm) -> Page {
    let incident = form
        .fields
        .part("publication")
        .filled("statuspage_incident");
    form.change(
        "publication",
        "publication",
        move |conn, state, editor, coe, _| {
            let ask = PublishRequest {
                statuspage_incident: incident,
            };
            publishing::publish(conn, state.env(), coe, &ask, editor, crate::db::now()).map(|_| ())
        },
    )
    .await
}

/// `POST /coes/{id}/unpublish`: takes the public page down.
pub async fn unpublish(form: CoeForm) -> Page {
    form.change(
        "publication",
        "publication",
        |conn, state, editor, coe, _| {
            publishing::revoke(conn, state.env(), coe, editor, crate::db::now()).map(|_| ())
        },
    )
    .await
}
