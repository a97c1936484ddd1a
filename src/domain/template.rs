//! The COE template: which sections a writeup has, their guidance, and which are
//! required. Data, not code: the default ships in `templates/coe/default.toml` and an
//! organisation may point `coe.template` at its own file.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The default template, embedded in the binary.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/coe/default.toml");

/// The templates that ship with coe, by the name `[[coe.templates]]` gives them
/// (`builtin = "security"`): the default, a security incident's, a data loss's.
pub const BUILTIN: [(&str, &str); 3] = [
    ("default", DEFAULT_TEMPLATE),
    (
        "security",
        include_str!("../../templates/coe/security.toml"),
    ),
    (
        "data-loss",
        include_str!("../../templates/coe/data-loss.toml"),
    ),
];

/// What a section holds.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// Markdown written by people.
    Text,
    /// The time-stamped entries of the COE's timeline.
    Timeline,
    /// The 5-whys chains.
    FiveWhys,
    /// The corrective actions.
    Actions,
    /// Links, tickets and other COEs.
    Related,
}

impl fmt::Display for SectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SectionKind::Text => "text",
            SectionKind::Timeline => "timeline",
            SectionKind::FiveWhys => "five_whys",
            SectionKind::Actions => "actions",
            SectionKind::Related => "related",
        })
    }
}

/// One section of the template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    pub key: String,
    pub title: String,
    pub kind: SectionKind,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub guidance: String,
    /// For text sections: how many numbers the text must contain (impact needs figures).
    #[serde(default)]
    pub min_numbers: u32,
    /// For the 5-whys section: how long at least one chain must be.
    #[serde(default = "default_min_whys")]
    pub min_whys: u32,
    /// A text section written for customers (what happened, when, who was affected,
    /// what we are changing): checked to name no person and no internal host, and
    /// once the COE is approved, the one part of it that may be published.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub for_customers: bool,
}

fn default_min_whys() -> u32 {
    3
}

/// A whole template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub name: String,
    pub version: u32,
    /// The categories a 5-whys chain is tagged with: what contributed to the outage
    /// (not one root cause). Each chain names one before the COE is submitted; an
    /// empty list turns the tagging off.
    #[serde(default = "default_factors")]
    pub contributing_factors: Vec<String>,
    pub sections: Vec<SectionSpec>,
}

/// The contributing factors of a template that names none.
pub const DEFAULT_FACTORS: [&str; 9] = [
    "change",
    "configuration",
    "capacity",
    "dependency",
    "deployment",
    "monitoring gap",
    "runbook/process",
    "data",
    "security",
];

fn default_factors() -> Vec<String> {
    DEFAULT_FACTORS.iter().map(|f| (*f).to_owned()).collect()
}

/// What is wrong with a template file, naming the section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the COE template is not valid TOML of the expected shape: {0}")]
    Syntax(String),
    #[error("the COE template has no sections")]
    Empty,
    #[error("COE template section {index} (`{key}`): {problem}")]
    Section {
        index: usize,
        key: String,
        problem: String,
    },
}

impl Template {
    /// Parses and validates a template file's text.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let template: Template =
            toml::from_str(text).map_err(|e| TemplateError::Syntax(e.to_string()))?;
        template.validate()?;
        Ok(template)
    }

    /// A template that ships with coe, by name (`BUILTIN`): parsed once per process.
    pub fn builtin(name: &str) -> Option<Template> {
        static PARSED: std::sync::OnceLock<Vec<Template>> = std::sync::OnceLock::new();
        PARSED
            .get_or_init(|| {
                BUILTIN
                    .iter()
                    .filter_map(|(_, text)| Template::parse(text).ok())
                    .collect()
            })
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// The built-in default template.
    pub fn default_template() -> Template {
        // The embedded file is checked by a unit test; an error here would be a build defect.
        Template::parse(DEFAULT_TEMPLATE).unwrap_or_else(|e| Template {
            name: format!("broken default: {e}"),
            version: 0,
            contributing_factors: default_factors(),
            sections: Vec::new(),
        })
    }

    /// The template, when it is one coe can open COEs with (what `parse` checks of a
    /// file; the admin page's saves are checked the same).
    pub fn checked(self) -> Result<Template, TemplateError> {
        self.validate()?;
        Ok(self)
    }

    /// Whether `name` may name a template: 1 to 40 of a-z, 0-9, '-' and '_'.
    pub fn name_ok(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 40
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    }

    fn validate(&self) -> Result<(), TemplateError> {
        if self.sections.is_empty() {
            return Err(TemplateError::Empty);
        }
        let mut factors = BTreeSet::new();
        for (index, f) in self.contributing_factors.iter().enumerate() {
            let fail = |problem: &str| TemplateError::Section {
                index: index + 1,
                key: format!("contributing_factors: {f}"),
                problem: problem.to_owned(),
            };
            if f.trim().is_empty() || f.len() > 40 || f.trim() != f {
                return Err(fail(
                    "a factor is 1 to 40 characters, without spaces around",
                ));
            }
            if !factors.insert(f.to_lowercase()) {
                return Err(fail("the factor is listed twice"));
            }
        }
        let mut keys = BTreeSet::new();
        let mut special = BTreeSet::new();
        for (index, s) in self.sections.iter().enumerate() {
            let fail = |problem: String| TemplateError::Section {
                index: index + 1,
                key: s.key.clone(),
                problem,
            };
            let key_ok = !s.key.is_empty()
                && s.key.len() <= 40
                && s.key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !key_ok {
                return Err(fail("the key must be 1 to 40 of a-z, 0-9 and '_'".into()));
            }
            if !keys.insert(s.key.as_str()) {
                return Err(fail("the key is used by an earlier section".into()));
            }
            if s.title.trim().is_empty() {
                return Err(fail("the title is empty".into()));
            }
            if s.kind != SectionKind::Text && !special.insert(s.kind) {
                return Err(fail(format!("only one section may be of kind {}", s.kind)));
            }
            if s.min_numbers > 0 && s.kind != SectionKind::Text {
                return Err(fail("min_numbers applies to text sections only".into()));
            }
            if s.for_customers && s.kind != SectionKind::Text {
                return Err(fail("only a text section is written for customers".into()));
            }
            if s.for_customers && self.sections[..index].iter().any(|e| e.for_customers) {
                return Err(fail("only one section may be written for customers".into()));
            }
            if s.kind == SectionKind::FiveWhys && s.min_whys == 0 {
                return Err(fail("min_whys must be at least 1".into()));
            }
        }
        Ok(())
    }

    pub fn section(&self, key: &str) -> Option<&SectionSpec> {
        self.sections.iter().find(|s| s.key == key)
    }

    /// The section written for customers, if the template has one.
    pub fn for_customers(&self) -> Option<&SectionSpec> {
        self.sections.iter().find(|s| s.for_customers)
    }

    /// The section of a given kind, if the template has one.
    pub fn section_of_kind(&self, kind: SectionKind) -> Option<&SectionSpec> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// The factor of this template that `asked` names (any case), as the template
    /// writes it.
    pub fn factor(&self, asked: &str) -> Option<&str> {
        self.contributing_factors
            .iter()
            .find(|f| f.eq_ignore_ascii_case(asked.trim()))
            .map(String::as_str)
    }

    /// "summary, impact, …" for error messages.
    pub fn keys(&self) -> String {
        self.sections
            .iter()
            .map(|s| s.key.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_template_is_the_product_brief() {
        let t = Template::parse(DEFAULT_TEMPLATE).expect("the embedded template is valid");
        let keys: Vec<&str> = t.sections.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "summary",
                "impact",
                "timeline",
                "metrics",
                "detection",
                "diagnosis",
                "mitigation",
                "prevention",
                "five_whys",
                "lessons",
                "actions",
                "related"
            ]
        );
        let optional: Vec<&str> = t
            .sections
            .iter()
            .filter(|s| !s.required)
            .map(|s| s.key.as_str())
            .collect();
        assert_eq!(optional, ["metrics", "related"]);
        assert_eq!(t.section("impact").map(|s| s.min_numbers), Some(1));
        assert_eq!(t.section("five_whys").map(|s| s.min_whys), Some(3));
    }

    #[test]
    fn the_shipped_templates_are_valid_and_keep_the_default_s_keys() {
        let default = Template::default_template();
        for (name, text) in BUILTIN {
            let t = Template::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(t.name, name);
            for s in &default.sections {
                assert!(t.section(&s.key).is_some(), "{name} lacks {}", s.key);
            }
        }
        let security = Template::builtin("security").expect("shipped");
        assert!(security.section("exposure").is_some_and(|s| s.required));
        assert!(Template::builtin("poetry").is_none());
        assert_eq!(
            security
                .for_customers()
                .map(|s| (s.key.as_str(), s.required)),
            Some(("customer_summary", false))
        );
    }

    #[test]
    fn one_text_section_at_most_is_written_for_customers() {
        let two = "name='x'\nversion=1\n[[sections]]\nkey='a'\ntitle='A'\nkind='text'\nfor_customers=true\n[[sections]]\nkey='b'\ntitle='B'\nkind='text'\nfor_customers=true\n";
        assert!(Template::parse(two)
            .unwrap_err()
            .to_string()
            .contains("only one section may be written for customers"));
        let timeline = "name='x'\nversion=1\n[[sections]]\nkey='a'\ntitle='A'\nkind='timeline'\nfor_customers=true\n";
        assert!(Template::parse(timeline)
            .unwrap_err()
            .to_string()
            .contains("only a text section"));
    }

    #[test]
    fn errors_name_the_section_and_the_problem() {
        let dup = "name='x'\nversion=1\n[[sections]]\nkey='a'\ntitle='A'\nkind='text'\n[[sections]]\nkey='a'\ntitle='B'\nkind='text'\n";
        assert_eq!(
            Template::parse(dup),
            Err(TemplateError::Section {
                index: 2,
                key: "a".into(),
                problem: "the key is used by an earlier section".into()
            })
        );
        let bad_key =
            "name='x'\nversion=1\n[[sections]]\nkey='Has Space'\ntitle='A'\nkind='text'\n";
        assert!(Template::parse(bad_key)
            .unwrap_err()
            .to_string()
            .contains("`Has Space`"));
        let bad_kind = "name='x'\nversion=1\n[[sections]]\nkey='a'\ntitle='A'\nkind='poem'\n";
        assert!(matches!(
            Template::parse(bad_kind),
            Err(TemplateError::Syntax(_))
        ));
        let two_timelines = "name='x'\nversion=1\n[[sections]]\nkey='a'\ntitle='A'\nkind='timeline'\n[[sections]]\nkey='b'\ntitle='B'\nkind='timeline'\n";
        assert!(Template::parse(two_timelines)
            .unwrap_err()
            .to_string()
            .contains("only one section may be of kind timeline"));
        assert_eq!(
            Template::parse("name='x'\nversion=1\nsections=[]\n"),
            Err(TemplateError::Empty)
        );
    }
}
