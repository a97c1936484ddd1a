//! "Report a failure" (`/report`): anyone signed in pulls the cord for a failure no
//! alert caught. The form opens a manual incident and, at or above the COE policy, its
//! draft (`services::report`); it carries a one-time key, so a double click reports
//! once, and a report that does not go through comes back (303) with what was typed.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{as_service, keep_form, kept_form, render, see_other, write_as_person, CsrfForm};
use super::{Fields, Outcome, Page, State};
use crate::domain::Severity;
use crate::http::session::SignedIn;
use crate::services::coes::{self, CoeError};
use crate::services::forms::{self, Once};
use crate::services::report::{self, FailureReport};

/// The page's own address: where what a report kept is shown.
const PAGE: &str = "/report";

/// What `GET /report` may carry: a report that did not go through, kept.
#[derive(Debug, Deserialize)]
pub struct ReportQuery {
    kept: Option<String>,
}

/// The fields of the form, each empty or as typed.
const FIELDS: [&str; 7] = [
    "title",
    "service",
    "severity",
    "started_at",
    "detected_at",
    "resolved_at",
    "customers_saw",
];

/// `GET /report`: the form, empty or as typed with its problems.
pub async fn form(who: SignedIn, query: web::Query<ReportQuery>, state: State) -> Page {
    let kept = kept_form(&state, &who, PAGE, query.into_inner().kept).await?;
    let (status, typed, problems) = match kept {
        Some((status, body)) => (status, body["typed"].clone(), body["problems"].clone()),
        None => (StatusCode::OK, json!({}), json!([])),
    };
    let mut shown = serde_json::Map::new();
    for field in FIELDS {
        shown.insert(
            field.to_owned(),
            typed.get(field).cloned().unwrap_or(json!("")),
        );
    }
    let services = as_service(&state, |conn, _| Ok(coes::services(conn, 500)?)).await?;
    let policy = state.settings.incident_policy().coe_at_or_above.to_string();
    let data = json!({
        "form": shown,
        "problems": problems,
        "services": services,
        "severities": Severity::ALL.map(|s| s.to_string()),
        "policy": policy,
        "form_key": forms::new_key(),
    });
    render(&state, Some(&who), status, "report", data)
}

/// A `datetime-local` field (UTC), when filled: `None` when empty, else the time or
/// the problem.
fn time_field(fields: &Fields, name: &str) -> Result<Option<NaiveDateTime>, (String, String)> {
    let Some(text) = fields.filled(name) else {
        return Ok(None);
    };
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&text, f).ok())
        .map(Some)
        .ok_or_else(|| {
            (
                name.to_owned(),
                format!("must be a date and time such as 2026-12-01T14:30 (got {text:?})"),
            )
        })
}

/// `POST /report`: files the report; lands on its COE (or, below the policy, on its
/// incident), or back on the form with every problem named.
pub async fn submit(form: CsrfForm<Fields>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let mut problems = Vec::new();
    let mut time = |name: &str| {
        time_field(&fields, name).unwrap_or_else(|p| {
            problems.push(p);
            None
        })
    };
    let (started_at, detected_at, resolved_at) =
        (time("started_at"), time("detected_at"), time("resolved_at"));
    let severity = fields.filled("severity").and_then(|s| {
        let parsed = serde_json::from_value::<Severity>(json!(s)).ok();
        if parsed.is_none() {
            problems.push((
                "severity".into(),
                format!("no severity {s:?}: sev1 to sev5"),
            ));
        }
        parsed
    });
    let input = FailureReport {
        title: fields.text("title"),
        service: fields.filled("service"),
        severity,
        started_at,
        detected_at,
        resolved_at,
        customers_saw: fields.filled("customers_saw"),
    };
    // Every problem at once: what could not be read, and what the report lacks.
    if !problems.is_empty() {
        for (field, problem) in report::problems(&input) {
            if !problems.iter().any(|(f, _)| *f == field) {
                problems.push((field, problem));
            }
        }
    }
    let (key, print) = (
        forms::form_key(fields.filled("form_key")),
        fields.fingerprint(),
    );
    let made = if problems.is_empty() {
        write_as_person(&state, &who, move |conn, state, editor| {
            let made = forms::once(conn, key.as_deref(), editor.actor, &print, |conn| {
                let reported = report::report(conn, &input, editor, state.env())?;
                Ok::<_, CoeError>(match reported.coe_id {
                    Some(coe) => format!("/coes/{coe}"),
                    None => format!("/incidents/{}", reported.incident_id),
                })
            });
            match made {
                Ok(Once::Landed(path)) => Ok(Ok(path)),
                Ok(Once::Reused) => Ok(Err(Outcome::Refused(
                    "This form was sent before with other contents: nothing was reported. \
                     What you typed is kept: send it again to report it."
                        .into(),
                ))),
                Err(e) => Outcome::of::<CoeError>(Err(e)).map(Err),
            }
        })
        .await?
    } else {
        Err(Outcome::Invalid(problems))
    };
    let outcome = match made {
        Ok(landed) => return Ok(see_other(&landed)),
        Err(outcome) => outcome,
    };
    let typed: Value = fields.to_json();
    outcome
        .answer(PAGE, |again| {
            let (state, who) = (&state, &who);
            let body = json!({"typed": typed, "problems": again.problems});
            async move {
                let kept = keep_form(state, who, PAGE, again.status, body).await?;
                Ok(see_other(&format!("{PAGE}?kept={kept}")))
            }
        })
        .await
}
