//! A direct message in Slack in place of (or beside) an email that needs its person:
//! an action given to them, a review asked, a verdict on their work, the actions
//! waiting for their verification, their overdue actions. Made from the email's own
//! data (`email::content`), with the buttons of each action: what the person would
//! otherwise open the email and then coe for.

use serde_json::Value;

use super::blocks::{self, escape, Button, Line};
use crate::email::Kind;

/// The kinds of email that may go as a direct message.
pub fn goes_direct(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::ActionAssigned
            | Kind::ActionVerification
            | Kind::VerificationsWaiting
            | Kind::OverdueDigest
            | Kind::ReviewRequested
            | Kind::ChangesRequested
            | Kind::CoeAssigned
            | Kind::WriteupOverdue
    )
}

/// What the buttons of an action line are in a message of `kind`.
fn buttons(kind: Kind, line: &Value, verified: Option<bool>) -> Vec<Button> {
    let id = line["action_id"].as_str().unwrap_or_default().to_owned();
    let open = Button::Open(line["link"].as_str().unwrap_or_default().to_owned());
    match (kind, verified) {
        (Kind::VerificationsWaiting, _) => {
            vec![Button::Verify(id.clone()), Button::SendBack(id), open]
        }
        (Kind::ActionVerification, Some(true)) => vec![open],
        _ => vec![Button::Done(id.clone()), Button::MoveDue(id), open],
    }
}

fn action_line(kind: Kind, line: &Value, verified: Option<bool>) -> Line {
    let text = |k: &str| escape(line[k].as_str().unwrap_or_default());
    let link = line["link"].as_str().unwrap_or_default();
    let when = match line["days_overdue"].as_i64() {
        Some(days) if days > 0 => format!(
            "*overdue* by {days} day{} (due {})",
            if days == 1 { "" } else { "s" },
            text("due_date")
        ),
        _ => format!("due {}", text("due_date")),
    };
    Line {
        text: format!(
            "<{link}|{}> of {}: {when}.",
            text("title"),
            text("coe_title")
        ),
        buttons: buttons(kind, line, verified),
    }
}

/// The message for an email of `kind` with `subject` and its template's `data`;
/// `None` for a kind that does not go direct.
pub fn message(kind: Kind, subject: &str, data: &Value) -> Option<Value> {
    if !goes_direct(kind) {
        return None;
    }
    let heading = format!("*{}*", escape(subject));
    let mut lines = Vec::new();
    let verified = data["verified"].as_bool();
    if data["action"].is_object() {
        let mut line = action_line(kind, &data["action"], verified);
        if let Some(reason) = data["reason"].as_str().filter(|r| !r.is_empty()) {
            line.text
                .push_str(&format!(" Sent back: “{}”", escape(reason)));
        }
        lines.push(line);
    }
    for list in ["overdue", "due_soon", "actions"] {
        for line in data[list].as_array().into_iter().flatten() {
            lines.push(action_line(kind, line, verified));
        }
    }
    // A COE: a review asked, changes asked, given to them, its writeup late.
    for coe in std::iter::once(&data["coe"])
        .chain(data["coes"].as_array().into_iter().flatten())
        .filter(|c| c.is_object())
    {
        let link = coe["link"].as_str().unwrap_or_default();
        lines.push(Line {
            text: format!(
                "<{link}|{}>",
                escape(coe["title"].as_str().unwrap_or_default())
            ),
            buttons: vec![Button::Open(link.to_owned())],
        });
    }
    let more = data["actions_link"]
        .as_str()
        .map(|l| format!("All of them: <{l}|in coe>."));
    Some(blocks::message(&heading, &lines, more.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_that_goes_direct_carries_its_buttons() {
        for kind in Kind::ALL {
            let sample = kind.sample(true);
            let made = message(kind, "A subject <b>", &sample);
            assert_eq!(made.is_some(), goes_direct(kind), "{kind:?}");
            let Some(made) = made else { continue };
            let shown = made.to_string();
            assert!(shown.contains("A subject &lt;b&gt;"), "{shown}");
            assert!(!shown.contains("<script>"), "escaped: {shown}");
            assert!(made["blocks"].as_array().expect("blocks").len() <= 50);
            match kind {
                Kind::VerificationsWaiting => assert!(shown.contains(blocks::VERIFY), "{shown}"),
                Kind::ActionAssigned | Kind::OverdueDigest => {
                    assert!(shown.contains(blocks::DONE), "{shown}")
                }
                Kind::ReviewRequested => assert!(shown.contains(blocks::OPEN), "{shown}"),
                _ => {}
            }
        }
    }
}
