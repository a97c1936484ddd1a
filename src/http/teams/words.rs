//! What coe says in Teams about a person's work: "My work" as an Adaptive Card, each
//! item with the buttons of its moves.

use serde_json::Value;

use crate::chat::teams::cards;
use crate::services::figures::work::MoveKind;
use crate::services::from_chat::Mine;

/// Teams' Markdown link.
fn link(url: &str, text: &str) -> String {
    let text: String = text.chars().filter(|c| !matches!(c, '[' | ']')).collect();
    format!("[{text}]({url})")
}

/// The person's moves and open actions as a card; `said` (what just happened) first.
pub(super) fn mine(public_url: &str, mine: &Mine, said: Option<&str>, once: &str) -> Value {
    let base = public_url.trim_end_matches('/');
    let coe = |id: &str| format!("{base}/coes/{id}");
    let action = |id: &str| format!("{base}/actions/{id}");
    let mut body = Vec::new();
    if let Some(said) = said {
        body.push(cards::text(said));
    }
    body.push(cards::heading("What waits on you in coe"));
    let mut redone = Vec::new();
    for m in &mine.moves {
        let of_coe = link(&coe(&m.coe_id), &m.coe_title);
        let by = m.by.as_deref().unwrap_or_default();
        let title = m.action_title.as_deref().unwrap_or("an action");
        match (m.kind, m.action_id.as_deref()) {
            (MoveKind::Verify, Some(id)) => body.push(cards::item(
                &format!(
                    "**Verify** {} of {of_coe}: marked done by {by}.",
                    link(&action(id), title)
                ),
                cards::reviewer_buttons(id, &action(id), once),
            )),
            (MoveKind::RedoAction, Some(id)) => {
                redone.push(id.to_owned());
                let due = mine
                    .actions
                    .iter()
                    .find(|a| a.id == id)
                    .map(|a| a.due_date)
                    .unwrap_or_default();
                let said = m
                    .said
                    .as_deref()
                    .map(|s| format!(": “{s}”"))
                    .unwrap_or_default();
                body.push(cards::item(
                    &format!(
                        "**Do again** {} of {of_coe}: sent back by {by}{said}.",
                        link(&action(id), title)
                    ),
                    cards::owner_buttons(id, due, &action(id), once),
                ));
            }
            (MoveKind::Review | MoveKind::BarRaiserReview, _) => body.push(cards::item(
                &format!("**Review** {of_coe}, written by {by}."),
                vec![cards::open(&coe(&m.coe_id))],
            )),
            (MoveKind::AnswerChanges, _) => body.push(cards::item(
                &format!("**Answer the changes asked** on {of_coe} by {by}."),
                vec![cards::open(&coe(&m.coe_id))],
            )),
            _ => {}
        }
    }
    for a in mine.actions.iter().filter(|a| !redone.contains(&a.id)) {
        let when = if a.overdue {
            format!(
                "**overdue** by {} day{} (due {})",
                a.days_overdue,
                if a.days_overdue == 1 { "" } else { "s" },
                a.due_date
            )
        } else {
            format!("due {}", a.due_date)
        };
        body.push(cards::item(
            &format!(
                "{} of {}: {when}.",
                link(&action(&a.id), &a.title),
                link(&coe(&a.coe_id), &a.coe_title)
            ),
            cards::owner_buttons(&a.id, a.due_date, &action(&a.id), once),
        ));
    }
    if body.len() == 1 + usize::from(said.is_some()) {
        body.push(cards::text("Nothing waits on you in coe."));
    }
    body.push(cards::text(&format!(
        "More on {}: {} open action{} in all.",
        link(&format!("{base}/"), "My work"),
        mine.open_count,
        if mine.open_count == 1 { "" } else { "s" }
    )));
    cards::with_card(cards::card(body, Vec::new()))
}
