//! A connection's form and its settings, both ways: the settings the file would hold
//! read from the form, and the saved settings shown in it.

use serde_json::{json, Map, Value};

use super::platforms::{fields_of, How};
use crate::http::pages::guard::Fields;
use crate::services::connections::Kind;

/// A saved value as the form shows it.
pub(super) fn shown_value(how: How, saved: &Value) -> String {
    let words = |v: &Value| {
        v.as_array()
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    match how {
        How::List => words(saved),
        How::Routes => saved
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let named = |key: &str, word: &str| -> Vec<String> {
                    let list = r[key].as_array().into_iter().flatten();
                    list.filter_map(Value::as_str)
                        .map(|v| format!("{word} {v}"))
                        .collect()
                };
                let mut parts = named("teams", "team");
                parts.extend(named("services", "service"));
                if let Some(t) = r["issue_type"].as_str() {
                    parts.push(format!("issue type {t}"));
                }
                format!(
                    "{}: {}",
                    r["place"].as_str().unwrap_or_default(),
                    parts.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        How::Statuses => saved
            .as_object()
            .into_iter()
            .flatten()
            .map(|(status, meaning)| {
                let word = meaning.as_str().unwrap_or_default().replace('_', " ");
                let word = if word == "wont do" {
                    "won't do".to_owned()
                } else {
                    word
                };
                format!("{status} = {word}")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => saved.as_str().map(str::to_owned).unwrap_or_default(),
    }
}

/// The form's fields as the settings the file would hold; a line that cannot be
/// read names its field.
pub(super) fn settings_of(
    kind: Kind,
    platform: &str,
    fields: &Fields,
    before: Option<&Value>,
) -> Result<Value, (String, String)> {
    let list = fields_of(kind, platform).ok_or_else(|| {
        (
            "platform".to_owned(),
            format!("coe does not know the platform {platform}"),
        )
    })?;
    // What the form does not show (another API's address, how often a tracker is
    // read back) stays as it was; `before` is masked: a secret is "***", left out here
    // and so kept, unless its box "Remove it" is ticked.
    let mut out = Map::new();
    if let Some(Value::Object(before)) = before {
        for (key, value) in before.iter().filter(|(_, v)| *v != "***") {
            out.insert(key.clone(), value.clone());
        }
    }
    out.insert("kind".into(), Value::from(platform));
    for f in &list {
        let text = fields.text(f.key);
        let text = text.trim();
        if f.secret && fields.all("clear").any(|c| c == f.key) {
            out.insert(f.key.to_owned(), Value::Null);
            continue;
        }
        let value = match f.how {
            How::Text if text.is_empty() => {
                out.remove(f.key);
                continue;
            }
            How::Text => Value::from(text),
            How::List => Value::from(
                text.split(',')
                    .map(str::trim)
                    .filter(|w| !w.is_empty())
                    .collect::<Vec<_>>(),
            ),
            How::Events => Value::from(fields.all("events").collect::<Vec<_>>()),
            How::Create => Value::from(if text.is_empty() { "automatic" } else { text }),
            How::Routes => routes(text).map_err(|p| (f.key.to_owned(), p))?,
            How::Statuses => statuses(text).map_err(|p| (f.key.to_owned(), p))?,
        };
        out.insert(f.key.to_owned(), value);
    }
    Ok(Value::Object(out))
}

/// Each line of `text` that is not blank, split by `split` into its two sides; a
/// line that does not split is named with `how` it should be written.
fn lines_of<'a>(
    text: &'a str,
    split: impl Fn(&'a str) -> Option<(&'a str, &'a str)>,
    how: &str,
) -> Result<Vec<(&'a str, &'a str)>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| split(line).ok_or_else(|| format!("\"{line}\": {how}")))
        .collect()
}

fn routes(text: &str) -> Result<Value, String> {
    let mut out = Vec::new();
    let how = "write the place, a colon, then the teams and services";
    for (place, rest) in lines_of(text, |l| l.split_once(':'), how)? {
        let (mut teams, mut services, mut issue_type) = (Vec::new(), Vec::new(), None);
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(t) = part.strip_prefix("team ") {
                teams.push(t.trim().to_owned());
            } else if let Some(s) = part.strip_prefix("service ") {
                services.push(s.trim().to_owned());
            } else if let Some(t) = part.strip_prefix("issue type ") {
                issue_type = Some(t.trim().to_owned());
            } else {
                return Err(format!(
                    "\"{part}\": start it with team, service or issue type"
                ));
            }
        }
        out.push(json!({"place": place.trim(), "teams": teams, "services": services, "issue_type": issue_type}));
    }
    Ok(Value::from(out))
}

fn statuses(text: &str) -> Result<Value, String> {
    let mut out = Map::new();
    let how = "write the status, =, then what it means";
    for (status, meaning) in lines_of(text, |l| l.rsplit_once('='), how)? {
        let meaning = match meaning.trim().to_lowercase().replace('’', "'").as_str() {
            "open" => "open",
            "in progress" => "in_progress",
            "done" => "done",
            "won't do" | "wont do" => "wont_do",
            "ignore" => "ignore",
            other => {
                return Err(format!(
                    "\"{other}\": one of open, in progress, done, won't do, ignore"
                ))
            }
        };
        out.insert(status.trim().to_owned(), Value::from(meaning));
    }
    Ok(Value::Object(out))
}
