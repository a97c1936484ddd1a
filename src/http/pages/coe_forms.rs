//! The forms of a COE's page: a text section (save or preview), the COE's details
//! (title, owner, reviewer, severity, service), timeline entries, 5-whys chains,
//! related items and new corrective actions. Each calls the service the API calls,
//! with the version the page was loaded with; `coes::answer` turns the outcome into
//! the next page, with what was typed kept when it did not go through.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::coes::{self, answer, Kept};
use super::{change, change_coe, CsrfForm, Fields, PageError};
use crate::domain::{EmailAddress, Severity};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::actions::{self, NewAction};
use crate::services::coes::{
    self as service, CoeError, CoePatch, RelatedInput, TimelineInput, Why, WhyChainInput,
};

type Form = CsrfForm<Fields>;

/// `kept` with the form of `part` as typed.
fn typed(part: &str, form: &Fields) -> Kept {
    Kept {
        forms: [(part.to_owned(), form.to_json())].into(),
        ..Kept::default()
    }
}

/// `POST /coes/{id}/sections/{key}`: saves a text section, or — with the preview
/// button — shows it rendered without saving.
pub async fn save_section(
    form: Form,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
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
    let result = change_coe(&state, &who, move |conn, state, editor| {
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
    form: Form,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
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
    let kept = typed("details", &form);
    let result = change_coe(&state, &who, move |conn, state, editor| {
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
    form: Form,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
    let id = path.into_inner();
    let (coe_id, input, version) = (id.clone(), timeline_input(&form), form.version());
    let result = change_coe(&state, &who, move |conn, _, editor| {
        service::add_timeline(conn, &coe_id, &input, version, editor).map(drop)
    })
    .await?;
    let kept = typed("timeline", &form);
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
    entry_page(
        &state,
        &who,
        &id,
        &entry_id,
        StatusCode::OK,
        None,
        Vec::new(),
    )
    .await
}

/// The page of one timeline entry: as it is, or as `typed` with `problems`.
async fn entry_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    entry_id: &str,
    status: StatusCode,
    typed: Option<Value>,
    problems: Vec<String>,
) -> Result<HttpResponse, PageError> {
    let loaded = coes::load(state, id, who, false).await?;
    let doc = &loaded.doc;
    let entry = doc
        .timeline
        .iter()
        .find(|t| t.id == entry_id)
        .ok_or_else(|| PageError::NotFound(format!("the COE has no timeline entry {entry_id}")))?;
    let kinds: Vec<Value> = crate::domain::coe::TimelineKind::ALL
        .iter()
        .map(|k| json!({"value": k.as_str(), "milestone": k.is_milestone()}))
        .collect();
    let entry = typed.unwrap_or_else(|| {
        json!({"kind": entry.kind, "text": entry.text,
               "at": entry.at.format("%Y-%m-%dT%H:%M").to_string()})
    });
    let data = json!({
        "coe": {"id": doc.id, "title": doc.title, "version": doc.version},
        "entry_id": entry_id,
        "entry": entry,
        "kinds": kinds,
        "problems": problems,
    });
    super::render(state, Some(who), status, "timeline_entry", data)
}

/// `POST /coes/{id}/timeline/{entry}`: changes an entry, or deletes it (the delete
/// button). When it does not go through, the entry's page again with what was typed.
pub async fn edit_timeline(
    form: Form,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
    let (id, entry) = path.into_inner();
    let (coe_id, entry_id) = (id.clone(), entry.clone());
    let (input, version) = (timeline_input(&form), form.version());
    let delete = form.filled("delete").is_some();
    let outcome = change_coe(&state, &who, move |conn, _, editor| {
        if delete {
            service::delete_timeline(conn, &coe_id, &entry_id, version, editor)
        } else {
            service::edit_timeline(conn, &coe_id, &entry_id, &input, version, editor)
        }
    })
    .await?;
    outcome
        .answer(&format!("/coes/{id}#part-timeline"), |again| {
            let mut problems = again.problems;
            if let Some((expected, current)) = again.stale {
                problems.push(format!(
                    "Someone saved this COE after you opened it (version {expected} → {current}); \
                     what you typed is kept below, not saved: check the entry and save again."
                ));
            }
            let typed = json!({"kind": form.text("kind"), "text": form.text("text"),
                               "at": form.text("at")});
            entry_page(
                &state,
                &who,
                &id,
                &entry,
                again.status,
                Some(typed),
                problems,
            )
        })
        .await
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

/// The rows of a 5-whys form as typed, to show again.
fn why_rows(form: &Fields) -> Value {
    form.all("why")
        .zip(form.all("because"))
        .map(|(why, because)| json!({"why": why, "because": because}))
        .collect()
}

/// `POST /coes/{id}/whys`: adds a chain.
pub async fn add_whys(
    form: Form,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
    let id = path.into_inner();
    let (coe_id, input, version) = (id.clone(), why_steps(&form), form.version());
    let outcome = change_coe(&state, &who, move |conn, _, editor| {
        service::add_why_chain(conn, &coe_id, &input, version, editor).map(drop)
    })
    .await?;
    let kept = Kept {
        forms: [("five_whys".to_owned(), json!({"rows": why_rows(&form)}))].into(),
        ..Kept::default()
    };
    answer(&state, &who, &id, "five_whys", outcome, kept).await
}

/// `POST /coes/{id}/whys/{chain}`: replaces a chain, or deletes it.
pub async fn edit_whys(
    form: Form,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
    let (id, chain) = path.into_inner();
    let (coe_id, chain_id) = (id.clone(), chain.clone());
    let (input, version) = (why_steps(&form), form.version());
    let delete = form.filled("delete").is_some();
    let outcome = change_coe(&state, &who, move |conn, _, editor| {
        if delete {
            service::delete_why_chain(conn, &coe_id, &chain_id, version, editor)
        } else {
            service::replace_why_chain(conn, &coe_id, &chain_id, &input, version, editor)
        }
    })
    .await?;
    let kept = Kept {
        forms: [(
            "five_whys".to_owned(),
            json!({"chain": chain, "steps": why_rows(&form)}),
        )]
        .into(),
        ..Kept::default()
    };
    answer(&state, &who, &id, "five_whys", outcome, kept).await
}

/// `POST /coes/{id}/related`: links an item (a web page, or another COE by its id or
/// its page's address).
pub async fn add_related(
    form: Form,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
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
    let outcome = change_coe(&state, &who, move |conn, _, editor| {
        service::add_related(conn, &key, &input, version, editor).map(drop)
    })
    .await?;
    answer(
        &state,
        &who,
        &id,
        "related",
        outcome,
        typed("related", &form),
    )
    .await
}

/// `POST /coes/{id}/related/{item}/delete`.
pub async fn delete_related(
    form: Form,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
    let (id, item) = path.into_inner();
    let (key, version) = (id.clone(), form.version());
    let outcome = change_coe(&state, &who, move |conn, _, editor| {
        service::delete_related(conn, &key, &item, version, editor)
    })
    .await?;
    answer(&state, &who, &id, "related", outcome, Kept::default()).await
}

/// `POST /coes/{id}/actions`: a new corrective action; every missing or invalid
/// field is named at once and what was typed stays in the form.
pub async fn add_action(
    form: Form,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let CsrfForm { who, fields: form } = form;
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
    let outcome = change(&state, &who, move |conn, state, editor| {
        actions::create(
            conn,
            &key,
            &input,
            editor,
            state.settings.clock(),
            state.mailer(),
        )
        .map(drop)
    })
    .await?;
    answer(
        &state,
        &who,
        &id,
        "actions",
        outcome,
        typed("actions", &form),
    )
    .await
}
