//! What coe says in Slack about a person's work, in people's words, with the buttons
//! of each move.

use serde_json::Value;

use crate::chat::slack::blocks::{self, escape, Button, Line};
use crate::services::figures::work::MoveKind;
use crate::services::from_chat::Mine;

fn link(url: &str, text: &str) -> String {
    format!("<{url}|{}>", escape(text))
}

/// "My work" as a message: what waits on the person, then their open actions; `said`
/// (what just happened) first when there is.
pub(super) fn mine(public_url: &str, mine: &Mine, said: Option<&str>) -> Value {
    let base = public_url.trim_end_matches('/');
    let coe = |id: &str| format!("{base}/coes/{id}");
    let action = |id: &str| format!("{base}/actions/{id}");
    let mut lines = Vec::new();
    for m in &mine.moves {
        let of_coe = link(&coe(&m.coe_id), &m.coe_title);
        let by = m.by.as_deref().map(escape).unwrap_or_default();
        let said = m
            .said
            .as_deref()
            .map(|s| format!(": “{}”", escape(&s.chars().take(300).collect::<String>())))
            .unwrap_or_default();
        let (text, buttons) = match (m.kind, m.action_id.as_deref()) {
            (MoveKind::Verify, Some(id)) => (
                format!(
                    "*Verify* {} of {of_coe}: marked done by {by}.",
                    link(
                        &action(id),
                        m.action_title.as_deref().unwrap_or("an action")
                    )
                ),
                vec![
                    Button::Verify(id.to_owned()),
                    Button::SendBack(id.to_owned()),
                    Button::Open(action(id)),
                ],
            ),
            (MoveKind::RedoAction, Some(id)) => (
                format!(
                    "*Do again* {} of {of_coe}: sent back by {by}{said}.",
                    link(
                        &action(id),
                        m.action_title.as_deref().unwrap_or("an action")
                    )
                ),
                vec![
                    Button::Done(id.to_owned()),
                    Button::MoveDue(id.to_owned()),
                    Button::Open(action(id)),
                ],
            ),
            (MoveKind::Review, _) => (
                format!("*Review* {of_coe}, written by {by}."),
                vec![Button::Open(coe(&m.coe_id))],
            ),
            (MoveKind::BarRaiserReview, _) => (
                format!("*Review as bar raiser* {of_coe}, written by {by}."),
                vec![Button::Open(coe(&m.coe_id))],
            ),
            (MoveKind::AnswerChanges, _) => (
                format!("*Answer the changes asked* on {of_coe} by {by}{said}."),
                vec![Button::Open(coe(&m.coe_id))],
            ),
            _ => continue,
        };
        lines.push(Line { text, buttons });
    }
    let redone: Vec<&str> = mine
        .moves
        .iter()
        .filter(|m| m.kind == MoveKind::RedoAction)
        .filter_map(|m| m.action_id.as_deref())
        .collect();
    for a in mine
        .actions
        .iter()
        .filter(|a| !redone.contains(&a.id.as_str()))
    {
        let when = if a.overdue {
            format!(
                "*overdue* by {} day{} (due {})",
                a.days_overdue,
                if a.days_overdue == 1 { "" } else { "s" },
                a.due_date
            )
        } else {
            format!("due {}", a.due_date)
        };
        lines.push(Line {
            text: format!(
                "{} of {}: {when}.",
                link(&action(&a.id), &a.title),
                link(&coe(&a.coe_id), &a.coe_title)
            ),
            buttons: vec![
                Button::Done(a.id.clone()),
                Button::MoveDue(a.id.clone()),
                Button::Open(action(&a.id)),
            ],
        });
    }
    let heading = match (lines.is_empty(), said) {
        (true, Some(said)) => format!("{said}\nNothing else waits on you in coe."),
        (true, None) => "Nothing waits on you in coe.".to_owned(),
        (false, Some(said)) => format!("{said}\n*What waits on you in coe*"),
        (false, None) => "*What waits on you in coe*".to_owned(),
    };
    let more = format!(
        "More on {}: {} open action{} in all.",
        link(&format!("{base}/"), "My work"),
        mine.open_count,
        if mine.open_count == 1 { "" } else { "s" }
    );
    blocks::message(&heading, &lines, Some(&more))
}
