//! A COE's summary for customers: the public notice at its unguessable address
//! (`/summaries/{token}`, no sign-in, only that section under the organisation's
//! name; withdrawn, it says so; an unknown address is a plain 404 for customers),
//! its Markdown, the feed of current notices, the organisation's logo, the exports a
//! signed-in person takes once the COE is approved, the preview before publishing,
//! and the COE page's buttons that publish it, take it down, and change it after
//! approval with the reviewer's say.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::NaiveDateTime;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::CoeForm;
use super::guard::Fields;
use super::kit::{render, Page, State};
use super::outcome::{as_person, as_service, change, see_other, Outcome};
use crate::http::session::SignedIn;
use crate::services::coe::publishing::changes::{self, ChangeDecision, ChangeRequest};
use crate::services::coe::publishing::{self, Notice, PublicNotice, PublishRequest};

/// The title of a notice published before notices had one.
const UNTITLED: &str = "Incident summary";

/// A time as customers read it: in UTC, said so, and machine-readable.
fn when(t: &NaiveDateTime) -> Value {
    json!({
        "iso": t.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "words": t.format("%-d %B %Y, %H:%M UTC").to_string(),
    })
}

/// A notice as the `notice` partial shows it.
fn notice_data(notice: &PublicNotice) -> Value {
    json!({
        // Published before notices had titles.
        "title": if notice.title.is_empty() { UNTITLED } else { notice.title.as_str() },
        "body": notice.body,
        "services": notice.facts.services,
        "started": notice.facts.started.as_ref().map(when),
        "ended": notice.facts.ended.as_ref().map(when),
        "published": when(&notice.published_at),
        "updated": notice.updated_at.as_ref().map(when),
    })
}

/// The organisation as its notices name it (`[org]`).
fn org_data(state: &State) -> Value {
    let org = &state.env().settings.org;
    json!({"name": org.name, "logo": org.logo_type().is_some(), "feed": org.notice_feed})
}

/// A page for customers (`public_layout`): never cached, so a notice taken down is
/// gone for every reader at once.
fn public_page(state: &State, status: StatusCode, name: &str, mut data: Value) -> Page {
    data["org"] = org_data(state);
    let mut page = render(state, None, status, name, data)?;
    page.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(page)
}

/// The plain page of an address with no notice: no link into coe.
fn no_notice(state: &State) -> Page {
    public_page(
        state,
        StatusCode::NOT_FOUND,
        "summary_gone",
        json!({"heading": "No notice here", "withdrawn": null}),
    )
}

/// The page of a notice taken down: when, not what it said.
fn withdrawn(state: &State, at: &NaiveDateTime) -> Page {
    public_page(
        state,
        StatusCode::GONE,
        "summary_gone",
        json!({"heading": "This notice was withdrawn", "withdrawn": when(at)}),
    )
}

async fn found(state: &State, token: String) -> Result<Option<Notice>, PageError> {
    as_service(state, move |conn, _| Ok(publishing::public(conn, &token)?)).await
}

/// `GET /summaries/{token}`: the notice; withdrawn, a page that says when.
pub async fn public(path: web::Path<String>, state: State) -> Page {
    match found(&state, path.into_inner()).await? {
        Some(Notice::Live(notice)) => public_page(
            &state,
            StatusCode::OK,
            "summary",
            json!({"notice": notice_data(&notice)}),
        ),
        Some(Notice::Withdrawn(at)) => withdrawn(&state, &at),
        None => no_notice(&state),
    }
}

/// `GET /summaries/{token}/summary.md`: the same, as Markdown (its title a heading).
pub async fn public_markdown(path: web::Path<String>, state: State) -> Page {
    match found(&state, path.into_inner()).await? {
        Some(Notice::Live(notice)) => Ok(markdown(format!(
            "# {}\n\n{}",
            notice.title.replace('\n', " "),
            notice.body
        ))),
        Some(Notice::Withdrawn(at)) => withdrawn(&state, &at),
        None => no_notice(&state),
    }
}

/// Any other address under `/summaries/`: the customers' 404.
pub async fn unknown(state: State) -> Page {
    no_notice(&state)
}

/// `GET /summaries/logo`: the organisation's logo (`org.logo_file`).
pub async fn logo(state: State) -> Page {
    let org = state.env().settings.org.clone();
    let (Some(path), Some(kind)) = (org.logo_file.clone(), org.logo_type()) else {
        return no_notice(&state);
    };
    let Ok(Ok(bytes)) = web::block(move || std::fs::read(path)).await else {
        return no_notice(&state);
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header(("X-Content-Type-Options", "nosniff"))
        // An SVG opened on its own runs nothing.
        .insert_header((
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; sandbox",
        ))
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(bytes))
}

/// `GET /summaries/feed.atom`: the current notices, newest update first.
pub async fn feed(state: State) -> Page {
    if !state.env().settings.org.notice_feed {
        return no_notice(&state);
    }
    let list = as_service(&state, |conn, state| {
        Ok(publishing::published(conn, state.env(), true, 50)?)
    })
    .await?;
    let settings = &state.env().settings;
    let base = settings.public_url.trim_end_matches('/');
    let org = settings.org.name.clone();
    let title = match &org {
        Some(name) => format!("{name}: incident notices"),
        None => "Incident notices".to_owned(),
    };
    let entries: Vec<atom_syndication::Entry> = list
        .iter()
        .map(|p| {
            let at = p
                .publication
                .updated_at
                .unwrap_or(p.publication.published_at);
            let content = atom_syndication::ContentBuilder::default()
                .content_type(Some("html".to_owned()))
                .value(Some(super::markdown::to_html(&p.publication.body)))
                .build();
            atom_syndication::EntryBuilder::default()
                .id(p.publication.url.clone())
                .title(if p.publication.title.is_empty() {
                    UNTITLED.to_owned()
                } else {
                    p.publication.title.clone()
                })
                .updated(at.and_utc().fixed_offset())
                .published(Some(p.publication.published_at.and_utc().fixed_offset()))
                .link(
                    atom_syndication::LinkBuilder::default()
                        .href(p.publication.url.clone())
                        .rel("alternate")
                        .build(),
                )
                .content(Some(content))
                .build()
        })
        .collect();
    let updated = list
        .iter()
        .map(|p| {
            p.publication
                .updated_at
                .unwrap_or(p.publication.published_at)
        })
        .max()
        .unwrap_or_default();
    let feed = atom_syndication::FeedBuilder::default()
        .id(format!("{base}/summaries/feed.atom"))
        .title(title)
        .updated(updated.and_utc().fixed_offset())
        .author(
            atom_syndication::PersonBuilder::default()
                .name(org.unwrap_or_else(|| "Incident notices".to_owned()))
                .build(),
        )
        .link(
            atom_syndication::LinkBuilder::default()
                .href(format!("{base}/summaries/feed.atom"))
                .rel("self")
                .build(),
        )
        .entries(entries)
        .build();
    Ok(HttpResponse::Ok()
        .content_type("application/atom+xml; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Cache-Control", "no-store"))
        .body(feed.to_string()))
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

/// What the preview shows: the COE, the title typed (checked), the notice as it would
/// read, where it would go.
#[derive(serde::Deserialize)]
pub struct PreviewQuery {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    statuspage_incident: Option<String>,
}

/// The preview's data for COE `id` with `title` and `incident` as typed; `problems`
/// from a publish that did not go through.
async fn preview_data(
    state: &State,
    who: &SignedIn,
    id: String,
    title: Option<String>,
    incident: Option<String>,
    mut problems: Vec<String>,
    as_publisher: bool,
) -> Result<Value, PageError> {
    let (typed_title, coe_id) = (title.clone(), id.clone());
    let typed_incident = incident.clone().unwrap_or_default();
    let (coe_title, live, body, facts, title_check, destinations, statuspage, suggested) =
        as_person(state, who, move |conn, state, editor| {
            if as_publisher {
                crate::services::access::coe(conn, &id, editor)?;
            }
            let env = state.env();
            let body = publishing::publishable(conn, env, &id)?;
            let live = publishing::of(conn, env, &id)?
                .filter(|p| p.live())
                .map(|p| p.url);
            let suggested = publishing::suggested_title(conn, &id)?;
            let title = title.or_else(|| suggested.clone());
            let title_check = match publishing::check_title(conn, env, title.as_deref()) {
                Ok((_, warnings)) => Ok(warnings),
                Err(crate::services::coe::coes::CoeError::Invalid(found)) => Err(found),
                Err(other) => return Err(other.into()),
            };
            let with_incident = incident.as_deref().is_some_and(|i| !i.trim().is_empty());
            // Every channel that hears its publications; Statuspage ones only get it
            // with an incident named.
            let mut destinations = publishing::destinations(conn, env, &id, true)?;
            let statuspage = destinations.iter().any(|(_, kind)| *kind == "Statuspage");
            destinations.retain(|(_, kind)| with_incident || *kind != "Statuspage");
            let coe_title = crate::services::coe::coes::load_row(conn, &id)?.title;
            let facts = publishing::facts(conn, &id)?;
            Ok((
                coe_title,
                live,
                body,
                facts,
                title_check,
                destinations,
                statuspage,
                suggested,
            ))
        })
        .await?;
    let title = typed_title.or(suggested).unwrap_or_default();
    let (warnings, may_publish) = match title_check {
        Ok(warnings) => (warnings, problems.is_empty()),
        Err(found) => {
            // A title not typed yet is asked for below the form, not shouted.
            if !title.trim().is_empty() {
                problems.extend(found.into_iter().map(|(_, p)| format!("Title: {p}")));
            }
            (Vec::new(), false)
        }
    };
    let notice = PublicNotice {
        title: if title.trim().is_empty() {
            "(the title for customers)".to_owned()
        } else {
            title.trim().to_owned()
        },
        body,
        published_at: crate::db::now(),
        updated_at: None,
        facts: facts.clone(),
    };
    Ok(json!({
        "coe": {"id": coe_id, "title": coe_title},
        "live": live,
        "typed": {"title": title, "statuspage_incident": typed_incident},
        "problems": problems,
        "warnings": warnings,
        "notice": notice_data(&notice),
        "unnamed": facts.unnamed,
        "destinations": destinations.iter().map(|(name, kind)| json!({"name": name, "kind": kind})).collect::<Vec<_>>(),
        "statuspage": statuspage,
        "may_publish": may_publish,
        "org": org_data(state),
    }))
}

/// `GET /coes/{id}/publish`: the page customers would read, with the title typed,
/// where else it would go, and the button that publishes it.
pub async fn preview(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<PreviewQuery>,
    state: State,
) -> Page {
    let PreviewQuery {
        title,
        statuspage_incident,
    } = query.into_inner();
    let data = preview_data(
        &state,
        &who,
        path.into_inner(),
        title,
        statuspage_incident,
        Vec::new(),
        true,
    )
    .await?;
    render(&state, Some(&who), StatusCode::OK, "publish_preview", data)
}

/// `GET /coes/{id}/for-customers.html`: the approved summary as the public page
/// would show it (its title as the last publication or approved change named it).
pub async fn export_html(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let data = preview_data(
        &state,
        &who,
        path.into_inner(),
        None,
        None,
        Vec::new(),
        false,
    )
    .await?;
    let mut page = render(
        &state,
        None,
        StatusCode::OK,
        "summary",
        json!({"notice": data["notice"], "org": data["org"]}),
    )?;
    page.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(page)
}

/// `POST /coes/{id}/publish`: publishes it, as previewed (title, Statuspage
/// incident); refused, the preview again with why.
pub async fn publish(form: CoeForm) -> Page {
    let fields = form.fields.part("publication");
    let (title, incident) = (fields.filled("title"), fields.filled("statuspage_incident"));
    let id = form.id.clone();
    let ask = PublishRequest {
        title: title.clone(),
        statuspage_incident: incident.clone(),
    };
    let outcome = change(&form.state, &form.who, {
        let id = id.clone();
        move |conn, state, editor| {
            publishing::publish(conn, state.env(), &id, &ask, editor, crate::db::now()).map(|_| ())
        }
    })
    .await?;
    let (status, problems) = match outcome {
        Outcome::Done => {
            return Ok(see_other(&format!(
                "/coes/{id}?did=published#for-customers"
            )))
        }
        Outcome::Invalid(found) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            found
                .into_iter()
                .map(|(field, p)| format!("{}: {p}", super::outcome::label_of(&field)))
                .collect(),
        ),
        Outcome::Refused(m) | Outcome::OutOfDate(m) => (StatusCode::CONFLICT, vec![m]),
        Outcome::Stale { .. } => (
            StatusCode::CONFLICT,
            vec!["The COE changed meanwhile: look again.".to_owned()],
        ),
    };
    let data = preview_data(&form.state, &form.who, id, title, incident, problems, true).await?;
    render(
        &form.state,
        Some(&form.who),
        status,
        "publish_preview",
        data,
    )
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

/// The change typed on the COE page (`customers.title`, `customers.body`).
fn change_typed(fields: &Fields) -> ChangeRequest {
    let typed = fields.part("customers");
    ChangeRequest {
        title: typed.text("title"),
        body: typed.text("body"),
    }
}

/// `POST /coes/{id}/summary-change`: asks the reviewer to approve a new title and
/// text for customers.
pub async fn propose_change(form: CoeForm) -> Page {
    let ask = change_typed(&form.fields);
    form.change(
        "customers",
        "customers",
        move |conn, state, editor, coe, _| {
            changes::propose(conn, state.env(), coe, &ask, editor, crate::db::now()).map(|_| ())
        },
    )
    .await
}

/// `POST /coes/{id}/summary-change/decision`: the reviewer approves the change
/// (`customers.decision` = `approve`) or sends it back with a note.
pub async fn decide_change(form: CoeForm) -> Page {
    let typed = form.fields.part("decision");
    let decision = ChangeDecision {
        approve: typed.filled("choice").as_deref() == Some("approve"),
        note: typed.filled("note"),
        change: typed.filled("change"),
    };
    // What the page confirms: `summary-approved` or `summary-sent-back`.
    let did = if decision.approve {
        "summary-approved"
    } else {
        "summary-sent-back"
    };
    let id = form.id.clone();
    let outcome = change(&form.state, &form.who, move |conn, state, editor| {
        changes::decide(conn, state.env(), &id, &decision, editor, crate::db::now()).map(|_| ())
    })
    .await?;
    match outcome {
        Outcome::Done => {
            let path = format!("/coes/{}?did={did}#for-customers", form.id);
            form.landed(&path, "decision").await
        }
        other => form.answer("customers", "decision", other).await,
    }
}
