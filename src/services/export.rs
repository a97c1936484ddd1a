//! Rendering a COE as Markdown through the handlebars template
//! `templates/coe/export.md.hbs` (embedded in the binary).

use handlebars::{handlebars_helper, no_escape, Handlebars};
use serde_json::{json, Value};

use super::coes::CoeDocument;

const EXPORT_TEMPLATE: &str = include_str!("../../templates/coe/export.md.hbs");

handlebars_helper!(add: |a: i64, b: i64| a + b);

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
    hb.render("export", &data)
        .map_err(|e| format!("export: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(duration_text(42 * 60), "42 min");
        assert_eq!(duration_text(2 * 3600), "2 h");
        assert_eq!(duration_text(3600 + 5 * 60), "1 h 5 min");
    }
}
