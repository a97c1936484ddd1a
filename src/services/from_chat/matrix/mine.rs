//! `!coe mine` in a room: a summary of what waits on the person, then one message for
//! each action, carrying the action it is about, to reply or react to.

use super::said::Said;
use super::{with, Room, ANSWERS, ITEMS};
use crate::chat::matrix::Event;
use crate::db;
use crate::services::access::Acting;
use crate::services::figures::work::MoveKind;
use crate::services::from_chat::{Mine, Platform};

impl Room<'_> {
    /// What waits on the person: a summary, then one message for each action, to
    /// reply or react to.
    pub(super) fn mine(&mut self, event: &Event, acting: &Acting) -> Result<(), String> {
        let (env, email, key) = (
            self.env,
            acting.actor.clone(),
            format!("event:{}", event.id),
        );
        let mine: Option<Mine> = with(self.pool, |conn| {
            if !db::write_transaction(conn, |conn| {
                crate::services::from_chat::fresh(conn, Platform::Matrix, &key, db::now())
            })? {
                return Ok(None);
            }
            crate::services::from_chat::mine(conn, env, &email).map(Some)
        })?;
        let Some(mine) = mine else {
            self.count("mine", "repeated");
            return Ok(());
        };
        self.count("mine", "done");
        let base = self.base();
        let coe = |id: &str| format!("{base}/coes/{id}");
        let action = |id: &str| format!("{base}/actions/{id}");
        let mut items: Vec<(Said, String)> = Vec::new();
        let mut others: Vec<Said> = Vec::new();
        for m in &mine.moves {
            let of_coe = Said::link(&coe(&m.coe_id), &m.coe_title);
            let by = m.by.clone().unwrap_or_default();
            let title = m.action_title.as_deref().unwrap_or("an action");
            match (m.kind, m.action_id.as_deref()) {
                (MoveKind::Verify, Some(id)) => items.push((
                    Said::bold("Verify ")
                        .then(Said::link(&action(id), title))
                        .and(" of ")
                        .then(of_coe)
                        .and(&format!(
                            ": marked done by {by}. React ✅ to verify, or reply send back <why>."
                        )),
                    id.to_owned(),
                )),
                (MoveKind::RedoAction, Some(id)) => items.push((
                    Said::bold("Do again ")
                        .then(Said::link(&action(id), title))
                        .and(" of ")
                        .then(of_coe)
                        .and(&format!(
                            ": sent back by {by}{}. {ANSWERS}",
                            m.said
                                .as_deref()
                                .map(|s| format!(": “{s}”"))
                                .unwrap_or_default()
                        )),
                    id.to_owned(),
                )),
                (MoveKind::Review | MoveKind::BarRaiserReview, _) => others.push(
                    Said::bold("Review ")
                        .then(of_coe)
                        .and(&format!(", written by {by}.")),
                ),
                (MoveKind::AnswerChanges, _) => others.push(
                    Said::bold("Answer the changes asked ")
                        .and("on ")
                        .then(of_coe)
                        .and(&format!(" by {by}.")),
                ),
                _ => {}
            }
        }
        let redone: Vec<String> = items.iter().map(|(_, id)| id.clone()).collect();
        for a in mine.actions.iter().filter(|a| !redone.contains(&a.id)) {
            let when = if a.overdue {
                format!(
                    "overdue by {} day{} (due {})",
                    a.days_overdue,
                    if a.days_overdue == 1 { "" } else { "s" },
                    a.due_date
                )
            } else {
                format!("due {}", a.due_date)
            };
            items.push((
                Said::link(&action(&a.id), &a.title)
                    .and(" of ")
                    .then(Said::link(&coe(&a.coe_id), &a.coe_title))
                    .and(&format!(": {when}. {ANSWERS}")),
                a.id.clone(),
            ));
        }
        let shown = items.len().min(ITEMS);
        let mut summary = Said::new(&format!("What waits on {} in coe", acting.actor));
        if items.is_empty() && others.is_empty() {
            summary = summary.and(": nothing.");
        } else {
            summary = summary.and(":");
            for o in others {
                summary = summary.line().and("• ").then(o);
            }
            summary = summary.line().and(&format!(
                "{} open action{} in all{}; ",
                mine.open_count,
                if mine.open_count == 1 { "" } else { "s" },
                if items.len() > shown {
                    format!(", the first {shown} below")
                } else {
                    String::new()
                }
            ));
            summary = summary
                .then(Said::link(&format!("{base}/"), "My work"))
                .and(" has them all.");
        }
        self.answer(event, 0, &summary, None)?;
        for (n, (said, id)) in items.into_iter().take(ITEMS).enumerate() {
            self.answer(event, n + 1, &said, Some(&id))?;
        }
        Ok(())
    }
}
