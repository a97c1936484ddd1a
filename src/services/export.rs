//! Rendering a COE as Markdown through the handlebars template
//! `templates/coe/export.md.hbs` (embedded in the binary).

use handlebars::{handlebars_helper, no_escape, Handlebars};
use serde_json::{json, Value};

use super::coes::CoeDocument;
use crate::domain::action::ActionState;
use crate::domain::coe::CoeState;

const EXPORT_TEMPLATE: &str = include_str!("../../templates/coe/export.md.hbs");

handlebars_helper!(add: |a: i64, b: i64| a + b);

/// "fired" → "Fired".
fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An entry's text without the "Fired: " that its kind already says.
fn without_kind(kind: &str, text: &str) -> String {
    let prefix = format!("{}:", capitalized(kind));
    text.strip_prefix(&prefix)
        .map(str::trim_start)
        .unwrap_or(text)
        .to_owned()
}

/// A why as a question: "Why did it fail?", whatever way it was typed.
fn question(why: &str) -> String {
    let why = why.trim();
    let asked = if why.to_lowercase().starts_with("why") {
        why.to_owned()
    } else {
        format!("Why {why}")
    };
    if asked.ends_with('?') {
        asked
    } else {
        format!("{}?", asked.trim_end_matches(['.', '!']))
    }
}

/// An answer starting with "Because".
fn answer(because: &str) -> String {
    let because = because.trim();
    if because.to_lowercase().starts_with("because") {
        return because.to_owned();
    }
    // "The pool ran out" → "Because the pool ran out"; "DNS failed" stays as written.
    let mut chars = because.chars();
    let first_word_is_ordinary = chars.nth(1).is_none_or(char::is_lowercase);
    match because.chars().next() {
        Some(c) if first_word_is_ordinary => {
            format!("Because {}{}", c.to_lowercase(), &because[c.len_utf8()..])
        }
        _ => format!("Because {because}"),
    }
}

fn duration_text(seconds: i64) -> String {
    let (h, m) = (seconds / 3600, seconds % 3600 / 60);
    match (h, m) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

/// The whole COE as Markdown. Markdown is output as written (no HTML escaping):
/// the export is Markdown, and whoever renders it to HTML escapes it there.
pub fn markdown(doc: &CoeDocument) -> Result<String, String> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(no_escape);
    hb.register_helper("add", Box::new(add));
    hb.register_template_string("export", EXPORT_TEMPLATE)
        .map_err(|e| format!("export template: {e}"))?;
    let mut data: Value = serde_json::to_value(doc).map_err(|e| e.to_string())?;
    data["duration"] = match doc.duration_seconds {
        Some(s) => json!(duration_text(s)),
        None => Value::Null,
    };
    // Words for people, computed here so the template stays a layout.
    for (entry, written) in data["timeline"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.timeline)
    {
        if written.occurrences > 1 {
            // "HighCPU fired 412 times between …" says its kind itself.
            entry["label"] = Value::Null;
            entry["what"] = json!(written.text);
        } else {
            entry["label"] = json!(capitalized(written.kind.as_str()));
            entry["what"] = json!(without_kind(written.kind.as_str(), &written.text));
        }
    }
    for (chain, written) in data["five_whys"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.five_whys)
    {
        for (step, why) in chain["steps"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .zip(&written.steps)
        {
            step["question"] = json!(question(&why.why));
            step["answer"] = json!(answer(&why.because));
        }
    }
    for (action, view) in data["actions"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&doc.actions)
    {
        action["state_text"] = json!(
            match (view.state, &view.resolution_note, &view.wont_do_reason) {
                (ActionState::Done, Some(note), _) => format!("done: {note}"),
                (ActionState::WontDo, _, Some(reason)) => format!("won't do: {reason}"),
                (ActionState::Open, ..) if view.overdue => {
                    format!("open, {} days overdue", view.days_overdue)
                }
                (ActionState::InProgress, ..) if view.overdue => {
                    format!("in progress, {} days overdue", view.days_overdue)
                }
                (state, ..) => state.as_str().replace('_', " "),
            }
        );
    }
    for step in data["review"].as_array_mut().into_iter().flatten() {
        let verdict = step["verdict"].as_str().unwrap_or_default();
        step["verdict_text"] = json!(match verdict {
            "submitted" => "submitted it for review",
            "changes_requested" => "requested changes",
            "approved" => "approved it",
            _ => "commented",
        });
    }
    // A closed COE is done: it does not end with a list of open findings.
    data["open_findings"] = json!(doc.state != CoeState::Closed);
    hb.render("export", &data)
        .map_err(|e| format!("export: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whys_read_as_questions_and_answers_and_kinds_are_not_said_twice() {
        assert_eq!(question("Why did it fail?"), "Why did it fail?");
        assert_eq!(question("did the config ship."), "Why did the config ship?");
        assert_eq!(answer("The pool ran out."), "Because the pool ran out.");
        assert_eq!(answer("DNS failed"), "Because DNS failed");
        assert_eq!(
            answer("because nothing checked it"),
            "because nothing checked it"
        );
        assert_eq!(without_kind("fired", "Fired: CPU hot"), "CPU hot");
        assert_eq!(without_kind("note", "Fired: CPU hot"), "Fired: CPU hot");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration_text(42 * 60), "42 min");
        assert_eq!(duration_text(2 * 3600), "2 h");
        assert_eq!(duration_text(3600 + 5 * 60), "1 h 5 min");
    }
}
