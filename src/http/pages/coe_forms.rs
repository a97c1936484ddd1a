//! The forms of a COE's page: a text section (save or preview), the COE's details
//! (title, owner, reviewer, severity, service), timeline entries, 5-whys chains,
//! related items and new corrective actions. Each calls the service the API calls,
//! with the version the page was loaded with; `coes::answer` turns the outcome into
//! the next page.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::coes::{self, answer, change, Kept};
use super::{as_person, Fields, PageError};
use crate::domain::{EmailAddress, Severity};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::actions::{self, ActionError, NewAction};
use crate::services::coes::{
    self as service, CoeError, CoePatch, RelatedInput, TimelineInput, Why, WhyChainInput,
};

type Form = web::Form<Vec<(String, String)>>;

/// `POST /coes/{id}/sections/{key}`: saves a text section, or — with the preview
/// button — shows it rendered without saving.
pub async fn save_section(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let (id, key) = path.into_inner();
    let body = form.text("body");
    let mut kept = Kept::default();
    kept.texts.insert(key.clone(), body.clone());
    if form.filled("preview").is_some() {
        kept.previews.insert(key.clone(), body);
        let loaded = coes::load(&state, &id, &who, false).await?;
        return coes::page(&state, &who, StatusCode::OK, loaded, kept);
    }
    let (coe_id, section, version) = (id.clone(), key.clone(), form.version());
    let result = change(&state, &who, move |conn, state, editor| {
        service::put_section(
            conn,
            &coe_id,
            &section,
            &body,
            version,
            editor,
            &state.coe_context(),
        )
    })
    .await?;
    answer(&state, &who, &id, &key, result, kept).await
}

/// An email address field: the value, or the problem with it.
fn email_field(
    form: &Fields,
    name: &str,
    problems: &mut Vec<(String, String)>,
) -> Option<EmailAddress> {
    let value = form.filled(name)?;
    EmailAddress::parse(&value)
        .map_err(|p| problems.push((name.to_owned(), p)))
        .ok()
}

/// `POST /coes/{id}/details`: title, owner, reviewer, severity and service; only
/// what differs from the COE as it is is sent, so nobody is told of an assignment
/// that did not change.
pub async fn details(
    who: SignedIn,
    path: web::Path<String>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let id = path.into_inner();
    let mut problems = Vec::new();
    let owner = email_field(&form, "owner", &mut problems);
    let reviewer = email_field(&form, "reviewer", &mut problems);
    let severity = form.filled("severity").and_then(|s| {
        s.parse::<Severity>()
            .map_err(|e| problems.push(("severity".into(), e.to_string())))
            .ok()
    });
    let (title, service_name) = (form.filled("title"), form.filled("service"));
    let (coe_id, version) = (id.clone(), form.version());
    let kept = Kept {
        forms: [("details".to_owned(), form.to_json())].into(),
        ..Kept::default()
    };
    let result = change(&state, &who, move |conn, state, editor| {
        if !problems.is_empty() {
            return Err(CoeError::Invalid(problems));
        }
        let now = service::load(conn, &coe_id, &state.settings)?;
        let patch = CoePatch {
            title: title.filter(|t| *t != now.title),
            owner: owner.filter(|o| now.owner.as_deref() != Some(o.as_str())),
            reviewer: reviewer.filter(|r| now.reviewer.as_deref() != Some(r.as_str())),
            severity: severity.filter(|s| *s != now.severity),
            service: service_name.filter(|s| now.service.as_deref() != Some(s.as_str())),
        };
        service::patch(conn, &coe_id, patch, version, editor, state.mailer())
    })
    .await?;
    answer(&state, &who, &id, "details", result, kept).await
}

/// A timeline entry from the form: a `datetime-local` time is UTC.
fn timeline_input(form: &Fields) -> TimelineInput {
    let at = form.text("at");
    let at = match at.len() {
        16 => format!("{at}:00Z"),
        19 => format!("{at}Z"),
        _ => at,
    };
    TimelineInput {
        at,
        kind: form.text("kind"),
        text: form.text("text"),
    }
}

/// `POST /coes/{id}/timeline`: adds an entry.
pub async fn add_timeline(
    who: SignedIn,
    path: web::Path<String>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let id = path.into_inner();
    let (coe_id, input, version) = (id.clone(), timeline_input(&form), form.version());
    let result = change(&state, &who, move |conn, _, editor| {
        service::add_timeline(conn, &coe_id, &input, version, editor).map(drop)
    })
    .await?;
    let kept = Kept {
        forms: [("timeline".to_owned(), form.to_json())].into(),
        ..Kept::default()
    };
    answer(&state, &who, &id, "timeline", result, kept).await
}

/// `GET /coes/{id}/timeline/{entry}`: the form that changes or deletes one entry (a
/// page of its own, so that a COE with a hundred entries does not carry a hundred
/// forms).
pub async fn timeline_entry(
    who: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let (id, entry_id) = path.into_inner();
    let loaded = coes::load(&state, &id, &who, false).await?;
    let doc = &loaded.doc;
    let entry = doc
        .timeline
        .iter()
        .find(|t| t.id == entry_id)
        .ok_or_else(|| PageError::NotFound(format!("the COE has no timeline entry {entry_id}")))?;
    let kinds: Vec<serde_json::Value> = crate::domain::coe::TimelineKind::ALL
        .iter()
        .map(|k| serde_json::json!({"value": k.as_str(), "milestone": k.is_milestone()}))
        .collect();
    let data = serde_json::json!({
        "coe": {"id": doc.id, "title": doc.title, "version": doc.version},
        "entry": {"id": entry.id, "kind": entry.kind, "text": entry.text,
                  "at_input": entry.at.format("%Y-%m-%dT%H:%M").to_string()},
        "kinds": kinds,
    });
    super::render(&state, Some(&who), StatusCode::OK, "timeline_entry", data)
}

/// `POST /coes/{id}/timeline/{entry}`: changes an entry, or deletes it (the delete
/// button).
pub async fn edit_timeline(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let (id, entry) = path.into_inner();
    let (coe_id, input, version) = (id.clone(), timeline_input(&form), form.version());
    let delete = form.filled("delete").is_some();
    let result = change(&state, &who, move |conn, _, editor| {
        if delete {
            service::delete_timeline(conn, &coe_id, &entry, version, editor)
        } else {
            service::edit_timeline(conn, &coe_id, &entry, &input, version, editor)
        }
    })
    .await?;
    answer(&state, &who, &id, "timeline", result, Kept::default()).await
}

/// The steps of a chain from the form's repeated `why` and `because` fields; rows
/// left empty are skipped.
fn why_steps(form: &Fields) -> WhyChainInput {
    let steps = form
        .all("why")
        .zip(form.all("because"))
        .filter(|(w, b)| !w.trim().is_empty() || !b.trim().is_empty())
        .map(|(w, b)| Why {
            why: w.trim().to_owned(),
            because: b.trim().to_owned(),
        })
        .collect();
    WhyChainInput { steps }
}

/// `POST /coes/{id}/whys`: adds a chain.
pub async fn add_whys(
    who: SignedIn,
    path: web::Path<String>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let id = path.into_inner();
    let (coe_id, input, version) = (id.clone(), why_steps(&form), form.version());
    let result = change(&state, &who, move |conn, _, editor| {
        service::add_why_chain(conn, &coe_id, &input, version, editor).map(drop)
    })
    .await?;
    answer(&state, &who, &id, "five_whys", result, Kept::default()).await
}

/// `POST /coes/{id}/whys/{chain}`: replaces a chain, or deletes it.
pub async fn edit_whys(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let (id, chain) = path.into_inner();
    let (coe_id, input, version) = (id.clone(), why_steps(&form), form.version());
    let delete = form.filled("delete").is_some();
    let result = change(&state, &who, move |conn, _, editor| {
        if delete {
            service::delete_why_chain(conn, &coe_id, &chain, version, editor)
        } else {
            service::replace_why_chain(conn, &coe_id, &chain, &input, version, editor)
        }
    })
    .await?;
    answer(&state, &who, &id, "five_whys", result, Kept::default()).await
}

/// `POST /coes/{id}/related`: links an item (a web page, or another COE by its id or
/// its page's address).
pub async fn add_related(
    who: SignedIn,
    path: web::Path<String>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let id = path.into_inner();
    let kind = form.text("kind");
    let target = form.filled("target");
    let (url, coe_id) = if kind == "coe" {
        let other = target.map(|t| {
            let t = t.trim_end_matches('/');
            t.rsplit_once("/coes/").map_or(t, |(_, id)| id).to_owned()
        });
        (None, other)
    } else {
        (target, None)
    };
    let input = RelatedInput {
        kind,
        title: form.filled("title"),
        url,
        coe_id,
    };
    let (key, version) = (id.clone(), form.version());
    let result = change(&state, &who, move |conn, _, editor| {
        service::add_related(conn, &key, &input, version, editor).map(drop)
    })
    .await?;
    let kept = Kept {
        forms: [("related".to_owned(), form.to_json())].into(),
        ..Kept::default()
    };
    answer(&state, &who, &id, "related", result, kept).await
}

/// `POST /coes/{id}/related/{item}/delete`.
pub async fn delete_related(
    who: SignedIn,
    path: web::Path<(String, String)>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let (id, item) = path.into_inner();
    let (key, version) = (id.clone(), form.version());
    let result = change(&state, &who, move |conn, _, editor| {
        service::delete_related(conn, &key, &item, version, editor)
    })
    .await?;
    answer(&state, &who, &id, "related", result, Kept::default()).await
}

/// `POST /coes/{id}/actions`: a new corrective action; every missing or invalid
/// field is named at once and what was typed stays in the form.
pub async fn add_action(
    who: SignedIn,
    path: web::Path<String>,
    form: Form,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let form = Fields::new(form);
    form.check(&who)?;
    let id = path.into_inner();
    let input = NewAction {
        title: form.filled("title"),
        description: form.filled("description"),
        owner: form.filled("owner"),
        due_date: form.filled("due_date"),
        priority: form.filled("priority"),
        kind: form.filled("kind"),
        success_criteria: form.filled("success_criteria"),
        external_url: form.filled("external_url"),
    };
    let key = id.clone();
    let created = as_person(&state, &who, move |conn, state, editor| {
        Ok(actions::create(
            conn,
            &key,
            &input,
            editor,
            state.settings.clock(),
            state.mailer(),
        ))
    })
    .await?;
    let result = match created {
        Ok(_) => Ok(()),
        Err(ActionError::Invalid(problems)) => Err(CoeError::Invalid(problems)),
        Err(ActionError::CoeNotFound(coe)) => Err(CoeError::NotFound(coe)),
        Err(ActionError::Forbidden(m)) => Err(CoeError::Forbidden(m)),
        Err(e @ ActionError::CoeClosed(_)) => Err(CoeError::Conflict(e.to_string())),
        Err(e) => return Err(crate::error::ApiError::from(e).into()),
    };
    let kept = Kept {
        forms: [("actions".to_owned(), form.to_json())].into(),
        ..Kept::default()
    };
    answer(&state, &who, &id, "actions", result, kept).await
}
