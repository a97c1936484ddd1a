//! One corrective action's page: what, why (its COE), by when, whose move it is; its
//! forms are answered by `action_forms` (and its ticket made here), and a form that did
//! not go through comes back here with what was typed.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{CsrfForm, Fields};
use super::kit::safe_href;
use super::kit::{render, Page, State};
use super::outcome::{as_person, keep_form, kept_form, Outcome};
use crate::domain::action::{self, Transition};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::access;
use crate::services::coe::actions::{self, ActionDetail, ActionError};

/// What each step's form asks for.
fn step(t: Transition) -> Value {
    let (button, note_label) = match t {
        Transition::Start => ("Start it", None),
        Transition::Complete => ("Mark it done", Some("What was done")),
        Transition::WontDo => (
            "Confirm: it will not be done",
            Some("Why it will not be done (the COE's owner and reviewer read this)"),
        ),
        Transition::Reopen => ("Reopen it", Some("Why it reopens")),
    };
    json!({
        "verb": t.name(),
        "button": button,
        "note_label": note_label,
        "evidence": t == Transition::Complete,
        // Giving up is a step apart, opened on purpose and confirmed.
        "secondary": t == Transition::WontDo,
        // What was typed into it when it did not go through (`page` fills them).
        "typed_note": "",
        "typed_evidence": "",
        "typed": false,
    })
}

async fn load(state: &web::Data<AppState>, id: &str, who: &SignedIn) -> Result<Loaded, PageError> {
    let key = id.to_owned();
    as_person(state, who, move |conn, state, editor| {
        let detail = match action_now(conn, state, &key) {
            Ok(d) => d,
            Err(ActionError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let may_change = access::action(conn, &key, editor).is_ok();
        let may_delete = actions::may_delete(conn, &key, editor)?;
        // The names of the people the page shows: the owner, and who moved it on.
        let shown: Vec<String> = std::iter::once(detail.action.owner.clone())
            .chain(detail.steps.iter().map(|s| s.by.clone()))
            .chain(detail.coe_reviewer.clone())
            .chain(detail.action.verified_by.clone())
            .chain(detail.risk_deciders.iter().cloned())
            .chain(
                detail
                    .risk_acceptances
                    .iter()
                    .flat_map(|r| std::iter::once(r.asked_by.clone()).chain(r.decided_by.clone())),
            )
            .collect();
        let names = crate::services::directory::people::names_of(conn, &shown)?;
        // Which tracker would take its ticket, when it has none and may get one.
        let takes = match &detail.ticket {
            None if may_change => {
                crate::services::outbound::ticket_destination(conn, state.env(), &key)?
                    .map(|d| d.tracker.kind.label().to_owned())
            }
            _ => None,
        };
        // An open action with no ticket and no tracker to take one: who can connect one.
        let open = matches!(
            detail.action.state,
            crate::domain::action::ActionState::Open
                | crate::domain::action::ActionState::InProgress
        );
        let ticketless = detail.ticket.is_none() && detail.action.external_url.is_none();
        let ticket_missing = match may_change && open && ticketless && takes.is_none() {
            true => Some(super::kit::who_connects(conn, editor.is_admin)?),
            false => None,
        };
        Ok(Some((
            detail,
            (may_change, may_delete, takes, ticket_missing),
            names,
        )))
    })
    .await?
    .ok_or_else(|| PageError::NotFound(format!("there is no corrective action {id}")))
}

/// The action, whether the person may change and delete it, the tracker that would
/// take its ticket (else, when none would, who can connect one), and the directory's
/// names.
type Loaded = (
    ActionDetail,
    (bool, bool, Option<String>, Option<Value>),
    Vec<(String, Option<String>)>,
);

fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    (detail, (may_change, may_delete, takes, ticket_missing), directory): Loaded,
    problems: Vec<String>,
    typed: Option<Value>,
    notice: Option<String>,
) -> Page {
    let a = &detail.action;
    let steps: Vec<Value> = detail
        .steps
        .iter()
        .map(|s| {
            let what = match s.step.as_str() {
                "create" => "added it",
                "start" => "started it",
                "complete" => "marked it done",
                "wont_do" => "said it will not be done",
                "reopen" => "reopened it",
                "verify" => "verified it",
                "refuse" => "sent it back: not done yet",
                "reassign" => "gave it to another owner",
                "risk_asked" => "asked to accept its risk",
                "risk_accepted" => "accepted its risk",
                "risk_refused" => "did not accept its risk",
                "drill_alarm" => "named the alert that proves it",
                "drill_waiting" => "asked for a drill to prove it",
                "drill_proven" => "saw its alarm fire in a drill",
                "drill_missed" => "found no drill by its day",
                "drill_confirmed" => "confirmed the fix without a drill",
                "drill_reopened" => "reopened it after a missed drill",
                _ => "changed it",
            };
            // A change says what it changed itself ("changed the title").
            let (what, note) = match (s.step.as_str(), &s.note) {
                ("update", Some(changed)) => (changed.as_str(), None),
                _ => (what, s.note.as_deref()),
            };
            // A step made from chat says so: "marked it done from Slack".
            let what = match s
                .via
                .as_deref()
                .and_then(crate::services::from_chat::Platform::read)
            {
                Some(platform) => format!("{what} from {}", platform.name()),
                None => what.to_owned(),
            };
            json!({"by": s.by, "what": what, "at": crate::json::format_utc(&s.at), "note": note})
        })
        .collect();
    let names = super::kit::names_data(&directory);
    // A step that did not go through shows again what was typed into it.
    let transitions: Vec<Value> = action::allowed(a.state)
        .iter()
        .map(|t| {
            let mut form = step(*t);
            if let Some(typed) = typed.as_ref().and_then(|k| k.get(t.name())) {
                form["typed_note"] = typed["note"].clone();
                form["typed_evidence"] = typed["evidence_url"].clone();
                form["typed"] = json!(true);
            }
            form
        })
        .collect();
    let open = a.state.is_active();
    let needs_verification = crate::domain::coe::needs_verification(
        a.coe_severity,
        state.settings.coe.verify_actions_from,
    );
    let completed_by = detail
        .steps
        .iter()
        .rev()
        .find(|s| s.step == "complete")
        .map(|s| s.by.as_str());
    let acting = who.person.acting();
    let may_verify = a.state == crate::domain::action::ActionState::Done
        && a.verified_at.is_none()
        && crate::services::access::verify_action(
            &acting.editor(),
            detail.coe_reviewer.as_deref(),
            &a.owner,
            completed_by,
            &state.settings.auth.dotless_domains,
        )
        .is_ok();
    // Whose move it is once it is done: the reviewer's, since it was marked done.
    let waiting_verify = (a.state == crate::domain::action::ActionState::Done
        && needs_verification
        && a.verified_at.is_none())
    .then(|| {
        let since = detail.steps.iter().rev().find(|s| s.step == "complete");
        json!({"who": detail.coe_reviewer,
               "since": since.map(|s| crate::json::format_utc(&s.at))})
    })
    .filter(|w| !w["who"].is_null());
    // A request to accept its risk: waiting on whom, and whether it is this person.
    let risk_waiting = detail
        .risk_acceptances
        .iter()
        .rev()
        .find(|r| r.state == "asked");
    let may_decide_risk = risk_waiting.is_some_and(|r| {
        access::decide_risk(
            &acting.editor(),
            &detail.risk_deciders,
            &a.owner,
            &r.asked_by,
            &state.settings.auth.dotless_domains,
        )
        .is_ok()
    });
    let risk_kept = typed.as_ref().and_then(|k| k.get("risk"));
    let kept_text = |part: Option<&Value>, field: &str| {
        part.and_then(|p| p.get(field))
            .cloned()
            .unwrap_or_else(|| json!(""))
    };
    let risk_typed = json!({
        "until": kept_text(risk_kept, "until"),
        "interim_control": kept_text(risk_kept, "interim_control"),
        "remaining_risk": kept_text(risk_kept, "remaining_risk"),
        "note": kept_text(typed.as_ref().and_then(|k| k.get("decide")), "note"),
    });
    let drill = drill_data(
        &detail,
        may_change,
        &acting.editor(),
        completed_by,
        state,
        typed.as_ref(),
    );
    let mut data = json!({
        "risk_waiting": risk_waiting,
        "risk_deciders": detail.risk_deciders,
        "may_decide_risk": may_decide_risk,
        "may_ask_risk": open && may_change && risk_waiting.is_none(),
        "risk_open": risk_kept.is_some(),
        "risk_typed": risk_typed,
        "risk_history": detail.risk_acceptances,
        "risk_max_day": (state.settings.clock().today()
            + chrono::Days::new(u64::from(state.settings.actions.risk_max_days))).to_string(),
        "waiting_verify": waiting_verify,
        "state": a.state.as_str().replace('_', " "),
        "ticket": safe_href(a.external_url.as_deref()),
        "tracked": tracked(&detail, state),
        "ticket_in": takes,
        "ticket_missing": ticket_missing,
        "evidence": safe_href(a.evidence_url.as_deref()),
        "may_change": may_change,
        "may_delete": may_delete,
        "transitions": transitions,
        "open": open,
        "history": detail.due_date_history,
        "steps": steps,
        "recurrences": detail.recurrences,
        "needs_evidence": a.kind.is_judged_by_recurrence(),
        "needs_verification": needs_verification,
        "may_verify": may_verify,
        "coe_reviewer": detail.coe_reviewer,
        "verified_at": a.verified_at.map(|t| crate::json::format_utc(&t)),
        "names": names,
        "problems": problems,
        "notice": notice,
        // What was typed in the verification's and the due date's forms, kept.
        "verify_typed": typed.as_ref().and_then(|k| k.get("verify")).map(|k| k["reason"].clone()),
        "due_typed": typed.as_ref().and_then(|k| k.get("due")).map(|k| {
            json!({"due_date": k.get("due_date").unwrap_or(&json!("")),
                   "reason": k.get("reason").unwrap_or(&json!(""))})
        }),
        "unsaved": typed.as_ref().is_some_and(|k| k.as_object().is_some_and(|o| !o.is_empty())),
        // The change forms: as typed when kept, else the action as it is.
        "edit": typed.as_ref().and_then(|k| k.get("edit")).cloned().unwrap_or_else(|| {
            json!({"title": a.title, "success_criteria": a.success_criteria,
                   "description": a.description, "priority": a.priority.as_str(),
                   "kind": a.kind.as_str(), "external_url": a.external_url})
        }),
        "edit_typed": typed.as_ref().is_some_and(|k| k.get("edit").is_some()),
        "reassign_open": typed.as_ref().is_some_and(|k| k.get("reassign").is_some()),
        "reassign_typed": typed.as_ref().and_then(|k| k.get("reassign")).map_or_else(
            || json!({"owner": "", "reason": ""}),
            |k| json!({"owner": k.get("owner").unwrap_or(&json!("")),
                       "reason": k.get("reason").unwrap_or(&json!(""))}),
        ),
        "priorities": crate::domain::action::Priority::ALL.map(|p| p.as_str()),
        "kinds": crate::domain::action::ActionKind::ALL.map(|k| k.as_str()),
        "action": a,
    });
    data["drill"] = drill;
    render(state, Some(who), status, "action", data)
}

/// The drill that proves the action, as its page says it: the alert named, the
/// re-check open and whose move it is, those before, and who may do what.
fn drill_data(
    detail: &ActionDetail,
    may_change: bool,
    editor: &access::Editor<'_>,
    completed_by: Option<&str>,
    state: &AppState,
    typed: Option<&Value>,
) -> Value {
    use crate::domain::drill;
    let a = &detail.action;
    let d = &detail.drill;
    let open = d
        .rechecks
        .iter()
        .rev()
        .find(|r| r.state == "waiting" || r.state == "missed");
    let missed = open.is_some_and(|r| r.state == "missed");
    let dotless = &state.settings.auth.dotless_domains;
    let may_decide = missed
        && access::decide_drill(
            editor,
            detail.coe_reviewer.as_deref(),
            &a.owner,
            completed_by,
            dotless,
        )
        .is_ok();
    // Who decides on a missed one: the reviewer, when they may; else an admin.
    let decider = access::drill_deciders(
        detail.coe_reviewer.as_deref(),
        &[],
        &a.owner,
        completed_by,
        dotless,
    )
    .pop();
    let words = |labels: &std::collections::BTreeMap<String, String>| drill::labels_words(labels);
    let rechecks: Vec<Value> = d
        .rechecks
        .iter()
        .rev()
        .map(|r| {
            let outcome = match r.state.as_str() {
                "waiting" => format!("waiting for the alarm until {}", r.last_day),
                "proven" => format!(
                    "proven: the alarm fired {}{}",
                    r.fired_at
                        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                        .unwrap_or_default(),
                    r.detected_seconds
                        .map(|s| format!(", detected in {}", drill::span_words(s)))
                        .unwrap_or_default()
                ),
                "missed" => format!("no alarm by {}: waiting for a decision", r.last_day),
                "confirmed" => "missed; the fix was confirmed to stand".to_owned(),
                "withdrawn" => "withdrawn: the action changed before a drill proved it".to_owned(),
                _ => "missed; the action was reopened".to_owned(),
            };
            json!({
                "opened_at": crate::json::format_utc(&r.opened_at),
                "opened_by": r.opened_by,
                "labels": words(&r.labels),
                "outcome": outcome,
                "proven": r.state == "proven",
                "late": matches!(r.state.as_str(), "missed" | "reopened"),
                "decided_by": r.decided_by,
                "note": r.note,
            })
        })
        .collect();
    let kept = typed.and_then(|k| k.get("drill"));
    json!({
        "applies": d.applies,
        "labels": d.labels.as_ref().map(words),
        "labels_text": kept.and_then(|k| k.get("labels")).cloned().unwrap_or_else(|| json!(
            d.labels.as_ref().map(|l| l.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n")).unwrap_or_default()
        )),
        "form_open": kept.is_some(),
        "note_typed": typed.and_then(|k| k.get("recheck")).and_then(|k| k.get("note")).cloned().unwrap_or_else(|| json!("")),
        "suggested": format!("coe_action={}", a.id),
        "mark": drill::MARK,
        "open": open.map(|r| json!({
            "last_day": r.last_day,
            "labels": words(&r.labels),
            "missed": r.state == "missed",
        })),
        "rechecks": rechecks,
        "decider": decider,
        "shown": d.applies || d.labels.is_some() || !d.rechecks.is_empty(),
        "may_set": may_change && (d.applies || d.labels.is_some()),
        "may_request": may_change && d.labels.is_some() && open.is_none()
            && a.state == crate::domain::action::ActionState::Done,
        "may_decide": may_decide,
        "after_days": state.settings.actions.drill_after_days,
        "window_days": state.settings.actions.drill_window_days,
    })
}

/// The action's ticket as the page says it: where it is, what its status there
/// means here, and whose move it is when the tracker closed it.
fn tracked(detail: &ActionDetail, state: &AppState) -> Option<Value> {
    let t = detail.ticket.as_ref()?;
    let reads_as = match t.meaning.as_deref() {
        Some("open") => "open",
        Some("in_progress") => "in progress",
        Some("done") => "done",
        Some("wont_do") => "will not be done",
        Some("ignore") => "left alone by coe",
        Some(_) => "a status coe cannot read: an admin maps it in the settings",
        None => "not read yet",
    };
    let href = t.url.as_deref().and_then(|u| safe_href(Some(u)));
    Some(json!({
        "kind": t.tracker_kind,
        "key": t.key,
        "href": href,
        "status": t.status,
        "reads_as": reads_as,
        "unmapped": t.meaning.as_deref() == Some(crate::services::outbound::tickets::UNMAPPED),
        "awaiting_evidence": t.awaiting.as_deref() == Some("evidence"),
        "awaiting_reason": t.awaiting.as_deref() == Some("reason"),
        "assignee_note": t.assignee_note,
        "waiting": t.waiting,
        "stuck": t.stuck,
        "last_error": t.last_error,
        "owner": detail.action.owner,
        "tracker_count": state.env().connections.trackers.len(),
    }))
}

/// `POST /actions/{id}/ticket`: makes the action's ticket in the tracker that takes
/// it (queued: the page says it is being made).
pub async fn make_ticket(form: CsrfForm<Fields>, path: web::Path<String>, state: State) -> Page {
    let CsrfForm { who, fields } = form;
    let id = path.into_inner();
    let key = id.clone();
    // Made through the queue: no tracker is asked while the connection is held.
    let outcome = as_person(&state, &who, move |conn, state, editor| {
        Outcome::of(crate::services::coe::trackers::make(
            conn,
            state.env(),
            &key,
            None,
            editor,
        ))
    })
    .await?;
    answer(&state, &who, &id, outcome, &fields, "ticket").await
}

/// What `GET /actions/{id}` may carry: a form that did not go through, kept.
#[derive(Debug, Deserialize)]
pub struct ShowQuery {
    kept: Option<String>,
    /// The move just made (`start`, `complete`, `due`, …): the page confirms it and
    /// says what comes next.
    did: Option<String>,
}

/// What the page says after move `did`, from the action as it is now.
fn confirmation(
    did: &str,
    detail: &ActionDetail,
    names: &[(String, Option<String>)],
) -> Option<String> {
    let a = &detail.action;
    let name = |email: &str| super::kit::display_name(names, email);
    let reviewer = detail.coe_reviewer.as_deref().map(name);
    let said = match did {
        "start" => format!(
            "Started. It is {}'s to finish by {}.",
            name(&a.owner),
            a.due_date
        ),
        "complete" => match (a.verified_at, reviewer) {
            (None, Some(reviewer)) if a.state == crate::domain::action::ActionState::Done => {
                format!(
                    "Marked done. It now waits for {reviewer} to verify it against what done \
                     means; you are told if it is sent back."
                )
            }
            _ => "Marked done: nothing more is needed.".to_owned(),
        },
        "wont-do" => {
            "Marked as not to be done; the COE's owner and reviewer can read why.".to_owned()
        }
        "reopen" => format!("Reopened: it is open again, due {}.", a.due_date),
        "due" => format!(
            "The due date is now {}; the board shows why it moved.",
            a.due_date
        ),
        "verify" => match a.state {
            crate::domain::action::ActionState::Done => {
                "Verified: it does what it was meant to.".to_owned()
            }
            _ => format!(
                "Sent back to {}, who is told what is missing.",
                name(&a.owner)
            ),
        },
        "edit" => "Saved.".to_owned(),
        "reassign" => format!("It is {}'s now; they are emailed.", name(&a.owner)),
        _ => return None,
    };
    Some(said)
}

/// `GET /actions/{id}`: where the emails' links land; with `?kept=…`, the problems of
/// a form that did not go through (answered with the status it came to).
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<ShowQuery>,
    state: State,
) -> Page {
    let ShowQuery { kept, did } = query.into_inner();
    let kept = kept_form(&state, &who, &format!("/actions/{path}"), kept).await?;
    let (status, problems, typed) =
        kept.map_or((StatusCode::OK, Vec::new(), None), |(status, body)| {
            let problems = serde_json::from_value(body["problems"].clone()).unwrap_or_default();
            let typed = Some(body["typed"].clone()).filter(|t| t.is_object());
            (status, problems, typed)
        });
    let loaded = load(&state, &path, &who).await?;
    let notice = did
        .as_deref()
        .filter(|_| problems.is_empty())
        .and_then(|did| confirmation(did, &loaded.0, &loaded.2));
    page(&state, &who, status, loaded, problems, typed, notice)
}

/// What was typed on an action's page in its parts other than `own` (the page is one
/// form: each step's note and evidence `{verb}.…`, the verification's reason
/// `verify.reason`, the due date's `due.…`): kept and shown again, so no button
/// loses what was typed for another.
fn typed_elsewhere(fields: &Fields, own: &str) -> serde_json::Map<String, Value> {
    let mut typed = serde_json::Map::new();
    for part in fields.parts(own) {
        let f = fields.part(part);
        // The due date starts filled in: typed when it differs, or a reason is given.
        // The change form starts filled in too: typed when a field differs from what
        // the page showed (`was_<field>`).
        let json = f.to_json();
        let shown_before: Vec<(&String, &Value)> = json
            .as_object()
            .map(|o| o.iter().filter(|(k, _)| k.starts_with("was_")).collect())
            .unwrap_or_default();
        let changed = match f.filled("shown") {
            Some(shown) => f.text("due_date").trim() != shown || f.filled("reason").is_some(),
            None if !shown_before.is_empty() => shown_before.iter().any(|(was, value)| {
                let field = was.trim_start_matches("was_");
                value.as_str().map(str::trim) != Some(f.text(field).trim())
            }),
            None => !f.is_blank(),
        };
        if changed {
            typed.insert(part.to_owned(), f.to_json());
        }
    }
    typed
}

/// The answer to the change of part `own` of action `id`'s page: back to the page,
/// with what was typed elsewhere kept when there is any; when it did not go through,
/// back to it too (303), showing the problems and all that was typed, `own` included.
pub(super) async fn answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    outcome: Outcome,
    fields: &Fields,
    own: &str,
) -> Page {
    let path = format!("/actions/{id}");
    let mut typed = typed_elsewhere(fields, own);
    if let Outcome::Done = outcome {
        // The page confirms the move and says what comes next (`confirmation`).
        if typed.is_empty() {
            return Ok(super::outcome::see_other(&format!("{path}?did={own}")));
        }
        let body = json!({"problems": [], "typed": typed});
        let kept = keep_form(state, who, &path, StatusCode::OK, body).await?;
        return Ok(super::outcome::see_other(&format!(
            "{path}?kept={kept}&did={own}"
        )));
    }
    let mine = fields.part(own);
    if !mine.is_blank() {
        typed.insert(own.to_owned(), mine.to_json());
    }
    outcome
        .answer(&path, |again| {
            let path = &path;
            async move {
                let body = json!({"problems": again.problems, "typed": typed});
                let kept = keep_form(state, who, path, again.status, body).await?;
                Ok(super::outcome::see_other(&format!(
                    "{path}?kept={kept}#state-h"
                )))
            }
        })
        .await
}

/// Action `key` as it is now, with its ticket (the trackers in use).
pub(super) fn action_now(
    conn: &mut crate::db::DbConnection,
    state: &crate::http::state::AppState,
    key: &str,
) -> Result<actions::ActionDetail, actions::ActionError> {
    let env = state.env();
    actions::get(conn, key, env.settings.clock(), &env.connections.trackers)
}
