//! The words of a COE in the search index (`db::search`): its title, and as its body
//! its sections, timeline, 5 whys and corrective actions (title, description, success
//! criteria, closing notes). `reindex` rebuilds a COE's entry after every edit of the
//! COE or of its actions' words: the COE and action services both use it, so it
//! depends on neither.

use std::collections::BTreeMap;

use diesel::prelude::*;
use serde::Deserialize;

use crate::db::schema::{coe_sections, coes, corrective_actions, timeline_entries, why_chains};
use crate::db::{self, DbConnection};

/// A step of a 5-whys chain, as stored (the COE service's `Why`).
#[derive(Deserialize)]
struct Step {
    why: String,
    because: String,
}

/// Rebuilds the COE's row in the full-text index: its title, and its sections,
/// timeline, 5 whys and corrective actions as the body.
pub fn reindex(conn: &mut DbConnection, id: &str) -> QueryResult<()> {
    let title: String = coes::table.find(id).select(coes::title).first(conn)?;
    let mut body = String::new();
    for text in coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select(coe_sections::body)
        .load::<String>(conn)?
    {
        body.push_str(&text);
        body.push('\n');
    }
    for text in timeline_entries::table
        .filter(timeline_entries::coe_id.eq(id))
        .select(timeline_entries::text)
        .load::<String>(conn)?
    {
        body.push_str(&text);
        body.push('\n');
    }
    for steps in why_chains::table
        .filter(why_chains::coe_id.eq(id))
        .select(why_chains::steps)
        .load::<String>(conn)?
    {
        for step in serde_json::from_str::<Vec<Step>>(&steps).unwrap_or_default() {
            body.push_str(&step.why);
            body.push(' ');
            body.push_str(&step.because);
            body.push('\n');
        }
    }
    // Its corrective actions: found by their words, their COE shown.
    let actions: Vec<ActionWords> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(id))
        .order((
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        ))
        .select(ACTION_WORDS)
        .load(conn)?;
    for action in &actions {
        body.push_str(&action_text(action));
        body.push('\n');
    }
    db::search::write(conn, id, &title, &body)
}

/// An action's id, title, description, success criteria and closing notes.
type ActionWords = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

const ACTION_WORDS: (
    corrective_actions::id,
    corrective_actions::title,
    corrective_actions::description,
    corrective_actions::success_criteria,
    corrective_actions::resolution_note,
    corrective_actions::wont_do_reason,
) = (
    corrective_actions::id,
    corrective_actions::title,
    corrective_actions::description,
    corrective_actions::success_criteria,
    corrective_actions::resolution_note,
    corrective_actions::wont_do_reason,
);

/// The words of an action the index holds: its title, then the rest.
fn action_text(action: &ActionWords) -> String {
    format!("{} {}", action.1, action_words(action))
}

/// The words of an action besides its title: description, success criteria, notes.
fn action_words((_, _, description, criteria, note, reason): &ActionWords) -> String {
    [
        description.as_ref(),
        criteria.as_ref(),
        note.as_ref(),
        reason.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect::<Vec<_>>()
    .join(" ")
}

/// A corrective action as a search result quotes it: its id, title, and its other words
/// (description, success criteria, notes).
pub type ActionText = (String, String, String);

/// The corrective actions of each of `ids` as a search result quotes them, by COE,
/// oldest first.
pub fn action_texts(
    conn: &mut DbConnection,
    ids: &[String],
) -> QueryResult<BTreeMap<String, Vec<ActionText>>> {
    let rows: Vec<(String, ActionWords)> = corrective_actions::table
        .filter(corrective_actions::coe_id.eq_any(ids))
        .order((
            corrective_actions::created_at.asc(),
            corrective_actions::id.asc(),
        ))
        .select((corrective_actions::coe_id, ACTION_WORDS))
        .load(conn)?;
    let mut texts: BTreeMap<String, Vec<ActionText>> = BTreeMap::new();
    for (coe, action) in rows {
        let text = action_words(&action);
        texts
            .entry(coe)
            .or_default()
            .push((action.0, action.1, text));
    }
    Ok(texts)
}
