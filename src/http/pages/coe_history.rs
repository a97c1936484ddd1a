//! A COE's history in words: each audit action as a person says it ("wrote Impact",
//! "changed the reviewer from maria@example.com to lee@example.com"), a section's text
//! as it was at a person's last look, and the history page.

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::NaiveDateTime;
use serde_json::{json, Value};

use super::kit::{render, Page, State};
use crate::http::session::SignedIn;
use crate::services::coe::coes::{HistoryEntry, SectionView};

/// What a change in a COE's history did, in words: its audit action (`change_words`),
/// and for a change of its details, each field from what to what ("changed the
/// reviewer from maria@example.com to lee@example.com").
pub(super) fn history_words(
    h: &HistoryEntry,
    titles: &[SectionView],
    actions: &[crate::services::coe::actions::ActionView],
) -> String {
    let words = what_changed(h, titles, actions);
    // A change made from chat says so: "marked … done, from Slack".
    match h
        .via
        .as_deref()
        .and_then(crate::services::from_chat::Platform::read)
    {
        Some(platform) => format!("{words}, from {}", platform.name()),
        None => words,
    }
}

fn what_changed(
    h: &HistoryEntry,
    titles: &[SectionView],
    actions: &[crate::services::coe::actions::ActionView],
) -> String {
    if let Some(step) = h.action.strip_prefix("action:") {
        return action_words(h, step, actions);
    }
    if h.action == crate::services::outbound::chat::import::READ_ACTION {
        if let Some(words) = super::chat_import::read_words(h.after.as_ref()) {
            return words;
        }
    }
    if h.action != "update" {
        return change_words(&h.action, titles);
    }
    let shown = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Null) | None => "nobody".to_owned(),
        Some(other) => other.to_string(),
    };
    let fields: Vec<String> = h
        .after
        .as_ref()
        .and_then(Value::as_object)
        .map(|after| {
            after
                .iter()
                .map(|(field, to)| {
                    let from = h.before.as_ref().and_then(|b| b.get(field));
                    let (from, to) = (shown(from), shown(Some(to)));
                    match field.as_str() {
                        "owner" | "reviewer" if from == "nobody" => format!("named {to} {field}"),
                        _ => format!("changed the {field} from {from} to {to}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        change_words(&h.action, titles)
    } else {
        fields.join("; ")
    }
}

/// What step `step` of a corrective action did, naming the action (by its title now,
/// else as the step recorded it).
fn action_words(
    h: &HistoryEntry,
    step: &str,
    actions: &[crate::services::coe::actions::ActionView],
) -> String {
    let recorded = |v: &Option<Value>, key: &str| {
        v.as_ref()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let title = h
        .action_id
        .as_ref()
        .and_then(|id| actions.iter().find(|a| a.id == *id))
        .map(|a| a.title.clone())
        .or_else(|| recorded(&h.after, "title"))
        .or_else(|| recorded(&h.before, "title"))
        .map_or_else(|| "a corrective action".to_owned(), |t| format!("“{t}”"));
    match step {
        "create" => format!("added the corrective action {title}"),
        "update" => format!("changed the corrective action {title}"),
        "delete" => format!("deleted the corrective action {title}"),
        "start" => format!("started {title}"),
        "complete" => format!("marked {title} done"),
        "wont_do" => format!("marked {title} as not to be done"),
        "reopen" => format!("reopened {title}"),
        "verify" => format!("verified {title}"),
        "refuse" => format!("sent {title} back at verification"),
        "unverified" => format!("took back the verification of {title}"),
        "reassign" => match recorded(&h.after, "owner") {
            Some(owner) => format!("gave {title} to {owner}"),
            None => format!("gave {title} to someone else"),
        },
        "ticket_closed" => format!("closed {title} from its ticket"),
        "risk_asked" => format!("asked to accept the risk of {title}"),
        "risk_accepted" => format!("accepted the risk of {title}"),
        "risk_refused" => format!("did not accept the risk of {title}"),
        "drill_alarm" => format!("named the alert that proves {title}"),
        "drill_waiting" => format!("asked for a drill to prove {title}"),
        "drill_proven" => format!("saw the alarm of {title} fire in a drill"),
        "drill_missed" => format!("found no drill proving {title} by its day"),
        "drill_confirmed" => format!("confirmed {title} stands without a drill"),
        "drill_reopened" => format!("reopened {title} after a missed drill"),
        other => format!("{} {title}", other.replace('_', " ")),
    }
}

/// What an audit action (`section:impact`, `timeline:add`) means, in words.
pub(super) fn change_words(action: &str, titles: &[SectionView]) -> String {
    let (what, detail) = action.split_once(':').unwrap_or((action, ""));
    let section = |key: &str| {
        titles
            .iter()
            .find(|s| s.key == key)
            .map_or_else(|| key.to_owned(), |s| s.title.clone())
    };
    match (what, detail) {
        ("section", key) => format!("wrote {}", section(key)),
        ("timeline", "add") => "added a timeline entry".into(),
        ("timeline", "edit") => "changed a timeline entry".into(),
        ("timeline", "delete") => "deleted a timeline entry".into(),
        ("timeline", "import") => "added timeline entries from chat".into(),
        ("chat", "read") => "read messages of a chat channel".into(),
        ("five_whys", "add") => "added a 5-whys chain".into(),
        ("five_whys", "edit") => "changed a 5-whys chain".into(),
        ("five_whys", _) => "deleted a 5-whys chain".into(),
        ("update", _) => "changed its title, owner, reviewer, severity or service".into(),
        ("merge", _) => "merged drafts of the same outage into it".into(),
        ("template", _) => "switched its template".into(),
        ("publication", "published") => "published its summary for customers".into(),
        ("publication", "updated") => {
            "replaced its public summary with the approved change, at the same address".into()
        }
        ("publication", "change_proposed") => {
            "asked the reviewer to approve a change of its summary for customers".into()
        }
        ("publication", "change_approved") => {
            "approved the change of its summary for customers".into()
        }
        ("publication", "change_sent_back") => {
            "sent back the change of its summary for customers".into()
        }
        ("publication", _) => "took its public summary down".into(),
        ("incident", "attach") => "attached an incident".into(),
        ("incident", "detach") => "detached an incident".into(),
        ("comment", key) => format!("commented on {}", section(key)),
        ("answer", key) => format!("answered a comment on {}", section(key)),
        ("opened", _) => "opened it".into(),
        ("meeting", _) => "invited its readers to the review meeting".into(),
        ("meeting_cancelled", _) => "cancelled its review meeting".into(),
        ("open_incidents", _) => "approved it knowing its incidents were still open".into(),
        ("related", "add") => "linked a related item".into(),
        ("related", _) => "removed a related item".into(),
        ("state", to) => format!("moved it to {}", to.replace('_', " ")),
        _ => action.replace([':', '_'], " "),
    }
}

/// Section `key`'s text as it was at `seen` (from its history: the last save before
/// then, else what the first save after then replaced; empty when never written).
pub(super) fn text_at(history: &[HistoryEntry], key: &str, seen: NaiveDateTime) -> String {
    let action = format!("section:{key}");
    let body = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|v| v.get("body"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut saves = history.iter().filter(|h| h.action == action);
    let before = saves.clone().rfind(|h| h.at <= seen);
    match before {
        Some(h) => body(&h.after),
        None => saves.find(|h| h.at > seen).and_then(|h| body(&h.before)),
    }
    .unwrap_or_default()
}

/// `GET /coes/{id}/history`: every change, newest first, in words.
pub async fn history(who: SignedIn, path: web::Path<String>, state: State) -> Page {
    let loaded = super::coe_load::load(&state, &path, &who, false).await?;
    let entries: Vec<Value> = loaded
        .history
        .iter()
        .rev()
        .map(|h| {
            let text = h
                .after
                .as_ref()
                .and_then(|a| a.get("body").or_else(|| a.get("text")))
                .and_then(Value::as_str);
            json!({
                "at": crate::json::format_utc(&h.at),
                "actor": h.actor,
                "what": history_words(h, &loaded.doc.sections, &loaded.doc.actions),
                "text": text,
            })
        })
        .collect();
    let names = super::kit::names_data(&loaded.directory);
    let data = json!({"coe": {"id": loaded.doc.id, "title": loaded.doc.title}, "entries": entries,
                      "names": names});
    render(&state, Some(&who), StatusCode::OK, "coe_history", data)
}
