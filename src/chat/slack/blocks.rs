//! What coe shows in Slack, in Block Kit (api.slack.com/reference/block-kit): the
//! modals of each move, whose input blocks are named as the fields coe checks (so
//! that a refusal lands under its field), and the messages with buttons. Free of
//! storage: the words come from `services::from_chat`.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde_json::{json, Value};

/// The buttons a line of a message may carry; each names what it acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Button {
    /// Mark an action done (opens a modal asking what was done and the evidence).
    Done(String),
    /// Move an action's due date (opens a modal asking the new date and why).
    MoveDue(String),
    /// The reviewer verifies a done action.
    Verify(String),
    /// The reviewer sends a done action back (opens a modal asking why).
    SendBack(String),
    /// A link into coe.
    Open(String),
}

/// The `action_id` of each button, as Slack posts it back.
pub const DONE: &str = "coe_done";
pub const MOVE_DUE: &str = "coe_move_due";
pub const VERIFY: &str = "coe_verify";
pub const SEND_BACK: &str = "coe_send_back";
pub const OPEN: &str = "coe_open";

impl Button {
    fn block(&self) -> Value {
        let button = |action_id: &str, text: &str, value: &str| {
            json!({"type": "button", "action_id": action_id, "value": value,
                   "text": {"type": "plain_text", "text": text}})
        };
        match self {
            Button::Done(id) => {
                let mut b = button(DONE, "Mark done", id);
                b["style"] = json!("primary");
                b
            }
            Button::MoveDue(id) => button(MOVE_DUE, "Move the due date", id),
            Button::Verify(id) => {
                let mut b = button(VERIFY, "Verify", id);
                b["style"] = json!("primary");
                b
            }
            Button::SendBack(id) => button(SEND_BACK, "Send back", id),
            Button::Open(url) => {
                json!({"type": "button", "action_id": OPEN, "url": url,
                       "text": {"type": "plain_text", "text": "Open in coe"}})
            }
        }
    }
}

/// One line of a message: its words (Slack's mrkdwn) and its buttons.
#[derive(Debug, Clone)]
pub struct Line {
    pub text: String,
    pub buttons: Vec<Button>,
}

/// Slack's `&`, `<` and `>` escaped, so that a title is read as written.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Most lines in one message (Slack takes 50 blocks).
pub const MOST_LINES: usize = 20;

/// A message of `heading` and `lines` (at most `MOST_LINES`, then `more`, a line saying
/// where the rest are). `text` is what notifications show.
pub fn message(heading: &str, lines: &[Line], more: Option<&str>) -> Value {
    let mut blocks = vec![json!({"type": "section", "text": {"type": "mrkdwn", "text": heading}})];
    for line in lines.iter().take(MOST_LINES) {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": line.text}}));
        if !line.buttons.is_empty() {
            blocks.push(json!({"type": "actions",
                "elements": line.buttons.iter().map(Button::block).collect::<Vec<_>>()}));
        }
    }
    if let Some(more) = more.filter(|_| lines.len() > MOST_LINES) {
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": more}]}));
    }
    json!({"text": heading, "blocks": blocks})
}

/// A message of one paragraph.
pub fn said(text: &str) -> Value {
    json!({"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]})
}

fn plain(text: &str) -> Value {
    // Slack cuts a modal's title and buttons at 24 characters.
    json!({"type": "plain_text", "text": text.chars().take(24).collect::<String>()})
}

fn input(block: &str, label: &str, element: Value, optional: bool, hint: Option<&str>) -> Value {
    let mut b = json!({"type": "input", "block_id": block, "optional": optional,
        "label": {"type": "plain_text", "text": label}, "element": element});
    if let Some(hint) = hint {
        b["hint"] = json!({"type": "plain_text", "text": hint});
    }
    b
}

fn text_input(multiline: bool, max: usize) -> Value {
    json!({"type": "plain_text_input", "action_id": "answer", "multiline": multiline,
           "max_length": max.min(3000)})
}

fn select(options: &[(&str, &str)], initial: Option<&str>) -> Value {
    let option = |(value, text): &(&str, &str)| json!({"value": value, "text": {"type": "plain_text", "text": text}});
    let mut s = json!({"type": "static_select", "action_id": "answer",
        "options": options.iter().map(option).collect::<Vec<_>>()});
    if let Some(found) = options.iter().find(|(v, _)| Some(*v) == initial) {
        s["initial_option"] = option(found);
    }
    s
}

fn modal(callback_id: &str, title: &str, submit: &str, meta: &Value, blocks: Vec<Value>) -> Value {
    json!({"type": "modal", "callback_id": callback_id, "title": plain(title),
           "submit": plain(submit), "close": plain("Cancel"),
           "private_metadata": meta.to_string(), "blocks": blocks})
}

/// "Report a failure": what is broken, the service, the severity, when it started
/// (and what customers saw). The start is the person's to give: no time is proposed.
pub fn report_modal(meta: &Value) -> Value {
    modal(
        "report",
        "Report a failure",
        "Report it",
        meta,
        vec![
            input(
                "title",
                "What is broken",
                text_input(false, 500),
                false,
                Some("In a few words, as customers see it."),
            ),
            input(
                "service",
                "Service",
                text_input(false, 200),
                true,
                Some("As the alerts name it; its owners are asked to write the COE."),
            ),
            input(
                "severity",
                "Severity",
                select(&crate::chat::SEVERITIES, None),
                false,
                None,
            ),
            input(
                "started_at",
                "Started",
                json!({"type": "datetimepicker", "action_id": "answer"}),
                false,
                Some("When customers first saw it."),
            ),
            input(
                "customers_saw",
                "What customers saw",
                text_input(true, 3000),
                true,
                None,
            ),
        ],
    )
}

/// The choices of an action's priority and kind.
use crate::chat::{KINDS, PRIORITIES};

/// "Add a follow-up" to the COE `coe_title`: title, owner, due date, priority, kind,
/// done when.
pub fn follow_up_modal(coe_title: &str, due: NaiveDate, meta: &Value) -> Value {
    modal(
        "follow_up",
        "Add a follow-up",
        "Add it",
        meta,
        vec![
            json!({"type": "section", "text": {"type": "mrkdwn",
               "text": format!("A corrective action of *{}*.", escape(coe_title))}}),
            input(
                "title",
                "What will be done",
                text_input(false, 500),
                false,
                None,
            ),
            input(
                "owner",
                "Owner",
                json!({"type": "users_select", "action_id": "answer"}),
                false,
                Some("Someone in coe's directory."),
            ),
            input(
                "due_date",
                "Due",
                json!({"type": "datepicker", "action_id": "answer",
              "initial_date": due.to_string()}),
                false,
                None,
            ),
            input(
                "priority",
                "Priority",
                select(&PRIORITIES, Some("medium")),
                false,
                None,
            ),
            input("kind", "Kind", select(&KINDS, Some("prevent")), false, None),
            input(
                "success_criteria",
                "Done when",
                text_input(true, 3000),
                true,
                Some("How the reviewer will know it works."),
            ),
        ],
    )
}

/// "Mark done": what was done, and the evidence that it works.
pub fn done_modal(action_title: &str, needs_evidence: bool, meta: &Value) -> Value {
    let hint = if needs_evidence {
        "A link, or say in the note how it was checked: the reviewer verifies against it."
    } else {
        "A link, if there is one."
    };
    modal(
        "done",
        "Mark done",
        "Mark done",
        meta,
        vec![
            json!({"type": "section", "text": {"type": "mrkdwn",
               "text": format!("*{}*", escape(action_title))}}),
            input("note", "What was done", text_input(true, 3000), false, None),
            input(
                "evidence_url",
                "Evidence that it works",
                json!({"type": "url_text_input", "action_id": "answer"}),
                true,
                Some(hint),
            ),
        ],
    )
}

/// "Move the due date": the new date and why.
pub fn move_due_modal(action_title: &str, due: NaiveDate, meta: &Value) -> Value {
    modal(
        "move_due",
        "Move the due date",
        "Move it",
        meta,
        vec![
            json!({"type": "section", "text": {"type": "mrkdwn",
               "text": format!("*{}*, due {due}.", escape(action_title))}}),
            input(
                "due_date",
                "New due date",
                json!({"type": "datepicker", "action_id": "answer",
              "initial_date": due.to_string()}),
                false,
                None,
            ),
            input(
                "reason",
                "Why it moves",
                text_input(true, 3000),
                false,
                Some("Its history keeps every move and why."),
            ),
        ],
    )
}

/// "Send back": why the done action is not verified (its owner reads it).
pub fn send_back_modal(action_title: &str, meta: &Value) -> Value {
    modal(
        "send_back",
        "Send back",
        "Send it back",
        meta,
        vec![
            json!({"type": "section", "text": {"type": "mrkdwn",
               "text": format!("*{}* goes back to its owner, in progress.", escape(action_title))}}),
            input(
                "reason",
                "Why it is not verified",
                text_input(true, 3000),
                false,
                Some("Its owner reads it."),
            ),
        ],
    )
}

/// A modal's answer that shows `text` in place of the form.
pub fn finished(title: &str, text: &str) -> Value {
    json!({"response_action": "update", "view": {"type": "modal", "title": plain(title),
        "close": plain("Close"),
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}})
}

/// A modal's answer that keeps it open with each problem under its block.
pub fn errors(problems: &BTreeMap<String, String>) -> Value {
    json!({"response_action": "errors", "errors": problems})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_messages_lines_carry_their_buttons_and_stop_at_the_limit() {
        let line = |i: usize| Line {
            text: format!("*Action {i}*"),
            buttons: vec![
                Button::Done(format!("a{i}")),
                Button::Open("https://coe/x".into()),
            ],
        };
        let lines: Vec<Line> = (0..25).map(line).collect();
        let m = message("Your moves", &lines, Some("5 more on My work"));
        let blocks = m["blocks"].as_array().expect("blocks");
        assert_eq!(blocks.len(), 1 + 2 * MOST_LINES + 1, "at most 50 blocks");
        assert!(blocks.len() <= 50);
        assert_eq!(blocks[2]["elements"][0]["action_id"], DONE);
        assert_eq!(blocks[2]["elements"][0]["value"], "a0");
        assert_eq!(blocks[2]["elements"][1]["url"], "https://coe/x");
        assert_eq!(blocks.last().expect("last")["type"], "context");
    }

    #[test]
    fn modals_name_their_blocks_as_the_fields_and_keep_slacks_limits() {
        let meta = json!({"action": "a1"});
        let m = done_modal("A <b> & c", true, &meta);
        assert_eq!(m["private_metadata"], meta.to_string());
        assert_eq!(m["blocks"][0]["text"]["text"], "*A &lt;b&gt; &amp; c*");
        let blocks: Vec<&str> = m["blocks"]
            .as_array()
            .expect("blocks")
            .iter()
            .filter_map(|b| b["block_id"].as_str())
            .collect();
        assert_eq!(blocks, ["note", "evidence_url"]);
        let day = NaiveDate::from_ymd_opt(2027, 1, 31).expect("day");
        for modal in [
            report_modal(&meta),
            follow_up_modal("t", day, &meta),
            move_due_modal("t", day, &meta),
            send_back_modal("t", &meta),
        ] {
            for key in ["title", "submit", "close"] {
                assert!(modal[key]["text"].as_str().expect("text").chars().count() <= 24);
            }
        }
    }
}
