//! "Report a failure" (`/report`): anyone signed in pulls the cord for a failure no
//! alert caught. The form opens a manual incident and, at or above the COE policy, its
//! draft (`services::intake::report`); it carries a one-time key, so a double click reports
//! once, and a report that does not go through comes back (303) with what was typed.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::{NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{json, Value};

use super::guard::CsrfForm;
use super::guard::Fields;
use super::kit::render;
use super::kit::{Page, State};
use super::outcome::Outcome;
use super::outcome::{as_service, keep_form, kept_form, see_other, write_as_person};
use crate::domain::Severity;
use crate::http::session::SignedIn;
use crate::services::coe::coes::{self, CoeError};
use crate::services::directory::people;
use crate::services::forms::{self, Once};
use crate::services::intake::report::{self, FailureReport};

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
    let me = who.person.email.clone();
    let (services, zone) = as_service(&state, move |conn, state| {
        let zone = people::time_zone(conn, &me, state.settings.org_timezone())?;
        Ok((coes::services(conn, 500)?, zone))
    })
    .await?;
    let policy = state.settings.incident_policy().coe_at_or_above.to_string();
    let severities: Vec<Value> = Severity::ALL
        .iter()
        .map(|s| json!({"value": s.to_string(), "meaning": s.meaning()}))
        .collect();
    let data = json!({
        "zone": zone.name(),
        "form": shown,
        "problems": problems,
        "services": services,
        "severities": severities,
        "policy": policy,
        "form_key": forms::new_key(),
    });
    render(&state, Some(&who), status, "report", data)
}

/// A `datetime-local` field, typed in the person's time zone `zone`, when filled:
/// `None` when empty, else the time in UTC or the problem.
fn time_field(
    fields: &Fields,
    name: &str,
    zone: Tz,
) -> Result<Option<NaiveDateTime>, (String, String)> {
    let Some(text) = fields.filled(name) else {
        return Ok(None);
    };
    let local = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&text, f).ok())
        .ok_or_else(|| {
            (
                name.to_owned(),
                format!("must be a date and time such as 2026-12-01T14:30 (got {text:?})"),
            )
        })?;
    // A time the clocks skipped (spring forward) is named; one they passed twice is
    // taken the first time.
    zone.from_local_datetime(&local)
        .earliest()
        .map(|t| Some(t.naive_utc()))
        .ok_or_else(|| {
            (
                name.to_owned(),
                format!("{text} did not happen in {zone}: the clocks moved forward then"),
            )
        })
}

/// The time fields a "Now" button may fill.
const TIMES: [&str; 3] = ["started_at", "detected_at", "resolved_at"];

/// `POST /report`: files the report; lands on its COE (or, below the policy, on its
/// incident), or back on the form with every problem named.
pub async fn submit(form: CsrfForm<Fields>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let me = who.person.email.clone();
    let zone = as_service(&state, move |conn, state| {
        Ok(people::time_zone(conn, &me, state.settings.org_timezone())?)
    })
    .await?;
    // "Now" beside a time: the form again, with that time set to now in the person's
    // time zone and everything typed kept; nothing is reported.
    if let Some(field) = fields.filled("now").filter(|f| TIMES.contains(&f.as_str())) {
        let mut typed = fields.to_json();
        let now = crate::domain::clock::now().with_timezone(&zone);
        typed[field.as_str()] = json!(now.format("%Y-%m-%dT%H:%M").to_string());
        let body = json!({"typed": typed, "problems": []});
        let kept = keep_form(&state, &who, PAGE, StatusCode::OK, body).await?;
        let anchor = field.trim_end_matches("_at");
        return Ok(see_other(&format!("{PAGE}?kept={kept}#r-{anchor}")));
    }
    let mut problems = Vec::new();
    let mut time = |name: &str| {
        time_field(&fields, name, zone).unwrap_or_else(|p| {
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
                    Some(coe) => format!("/coes/{coe}?reported=1#notice"),
                    None => format!("/incidents/{}", reported.incident_id),
                })
            });
            match made {
                Ok(Once::Made(path)) => Ok(Ok(path)),
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

/// What a draft just opened by "Report a failure" says: that it is reported, who owns
/// it, and the sections to write first (the first three still missing).
pub(super) fn reported_notice(doc: &crate::services::coe::coes::CoeDocument) -> String {
    let mut first: Vec<&str> = Vec::new();
    for finding in &doc.completeness.missing {
        let key = super::coe_load::section_of(&finding.at);
        if let Some(s) = doc.sections.iter().find(|s| s.key == key) {
            if !first.contains(&s.title.as_str()) && first.len() < 3 {
                first.push(&s.title);
            }
        }
    }
    let owner = doc
        .owner
        .as_deref()
        .map_or_else(|| "nobody yet".to_owned(), str::to_owned);
    let mut notice =
        format!("Reported: the incident is open, and this is its COE draft (owner: {owner}). ");
    if !first.is_empty() {
        notice.push_str(&format!(
            "Write these first, while it is fresh: {}. The rest can follow.",
            first.join(", ")
        ));
    }
    notice
}
