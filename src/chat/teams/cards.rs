//! Adaptive Cards (schema 1.4, as Teams renders them) for working from Teams: the forms
//! of "Report a failure" and "Add a follow-up", and an action's buttons — **Mark
//! done** (what was done, the evidence), **Move the due date** (the date, why),
//! **Verify**, **Send back** (why), **Open in coe**. A button sends back its data
//! (`coe`: the move, `action`: its id, `once`: the card's own mark, so that a second
//! press of the same button is the same move) with the card's inputs, by their
//! service names.

use chrono::NaiveDate;
use serde_json::{json, Value};

/// A message of `text` (Markdown as Teams reads it).
pub fn said(text: &str) -> Value {
    json!({"type": "message", "text": text})
}

/// A message carrying `card`.
pub fn with_card(card: Value) -> Value {
    json!({"type": "message", "attachments": [
        {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
    ]})
}

/// An Adaptive Card of `body` and `actions`.
pub fn card(body: Vec<Value>, actions: Vec<Value>) -> Value {
    let mut card = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": body,
    });
    if !actions.is_empty() {
        card["actions"] = json!(actions);
    }
    card
}

pub fn text(words: &str) -> Value {
    json!({"type": "TextBlock", "text": words, "wrap": true})
}

pub fn heading(words: &str) -> Value {
    json!({"type": "TextBlock", "text": words, "wrap": true, "weight": "Bolder", "size": "Medium"})
}

fn input(id: &str, label: &str, required: bool, multiline: bool) -> Value {
    json!({"type": "Input.Text", "id": id, "label": label, "isRequired": required,
           "isMultiline": multiline, "errorMessage": format!("{label}: say it")})
}

fn choice(id: &str, label: &str, choices: &[(&str, &str)], value: Option<&str>) -> Value {
    let mut c = json!({"type": "Input.ChoiceSet", "id": id, "label": label, "style": "compact",
        "choices": choices.iter().map(|(v, t)| json!({"title": t, "value": v})).collect::<Vec<_>>()});
    if let Some(v) = value {
        c["value"] = json!(v);
    }
    c
}

fn submit(title: &str, data: Value) -> Value {
    json!({"type": "Action.Submit", "title": title, "data": data})
}

fn show(title: &str, body: Vec<Value>, submit_with: Value) -> Value {
    json!({"type": "Action.ShowCard", "title": title, "card": card(body, vec![submit_with])})
}

pub fn open(url: &str) -> Value {
    json!({"type": "Action.OpenUrl", "title": "Open in coe", "url": url})
}

use crate::chat::{KINDS, PRIORITIES, SEVERITIES};

/// "Report a failure": what is broken, service, severity, when it started (UTC), what
/// customers saw. No start is proposed: the person gives it.
pub fn report(once: &str) -> Value {
    card(
        vec![
            heading("Report a failure"),
            input("title", "What is broken", true, false),
            input("service", "Service", false, false),
            choice("severity", "Severity", &SEVERITIES, None),
            json!({"type": "Input.Date", "id": "started_date", "label": "Started on (UTC)"}),
            json!({"type": "Input.Time", "id": "started_time", "label": "Started at (UTC)"}),
            input("customers_saw", "What customers saw", false, true),
        ],
        vec![submit("Report", json!({"coe": "report", "once": once}))],
    )
}

/// "Add a follow-up" to COE `coe` (`title`): title, owner (their email), due date,
/// priority, kind, done when.
pub fn follow_up(coe: &str, title: &str, due: NaiveDate, once: &str) -> Value {
    card(
        vec![
            heading(&format!("Add a follow-up to “{title}”")),
            input("title", "What will be done", true, false),
            input("owner", "Owner (their email)", true, false),
            json!({"type": "Input.Date", "id": "due_date", "label": "Due", "value": due.to_string()}),
            choice("priority", "Priority", &PRIORITIES, Some("medium")),
            choice("kind", "Kind", &KINDS, Some("prevent")),
            input("success_criteria", "Done when", true, true),
        ],
        vec![submit(
            "Add it",
            json!({"coe": "follow_up", "coe_id": coe, "once": once}),
        )],
    )
}

/// The buttons of an action its owner does.
pub fn owner_buttons(action: &str, due: NaiveDate, url: &str, once: &str) -> Vec<Value> {
    vec![
        show(
            "Mark done",
            vec![
                input("note", "What was done", true, true),
                input(
                    "evidence_url",
                    "The evidence that it works (a link)",
                    true,
                    false,
                ),
            ],
            submit(
                "Mark done",
                json!({"coe": "done", "action": action, "once": once}),
            ),
        ),
        show(
            "Move the due date",
            vec![
                json!({"type": "Input.Date", "id": "due_date", "label": "New due date", "value": due.to_string()}),
                input("reason", "Why", true, true),
            ],
            submit(
                "Move it",
                json!({"coe": "move_due", "action": action, "once": once}),
            ),
        ),
        open(url),
    ]
}

/// The buttons of an action its reviewer verifies.
pub fn reviewer_buttons(action: &str, url: &str, once: &str) -> Vec<Value> {
    vec![
        submit(
            "Verify",
            json!({"coe": "verify", "action": action, "once": once}),
        ),
        show(
            "Send back",
            vec![input("reason", "Why it goes back", true, true)],
            submit(
                "Send back",
                json!({"coe": "send_back", "action": action, "once": once}),
            ),
        ),
        open(url),
    ]
}

/// A container of `lines` with `buttons` below them.
pub fn item(lines: &str, buttons: Vec<Value>) -> Value {
    json!({"type": "Container", "separator": true, "items": [
        text(lines),
        {"type": "ActionSet", "actions": buttons}
    ]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_button_sends_its_move_and_the_inputs_have_service_names() {
        let due = NaiveDate::from_ymd_opt(2027, 1, 15).unwrap();
        let owner = owner_buttons("a1", due, "https://coe/actions/a1", "n1").to_vec();
        let shown = serde_json::to_string(&owner).unwrap();
        for needed in [
            "\"coe\":\"done\"",
            "\"coe\":\"move_due\"",
            "evidence_url",
            "\"note\"",
            "2027-01-15",
        ] {
            assert!(shown.contains(needed), "{needed} in {shown}");
        }
        let review = serde_json::to_string(&reviewer_buttons("a1", "u", "n1")).unwrap();
        assert!(review.contains("\"coe\":\"verify\"") && review.contains("\"coe\":\"send_back\""));
        let form = report("n1").to_string();
        assert!(form.contains("\"severity\"") && form.contains("started_date"));
        assert!(follow_up("c1", "t", due, "n1")
            .to_string()
            .contains("\"coe_id\":\"c1\""));
        assert!(shown.contains("\"once\":\"n1\""));
    }
}
