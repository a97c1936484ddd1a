//! Templates chosen by rule (`[[coe.templates]]`): which template a new COE is
//! opened with, by its severity, its service, its team and its incident's labels.
//! The first rule that matches wins; none, and the COE gets `coe.template` (else the
//! built-in default).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Settings};
use crate::domain::template::Template;
use crate::domain::Severity;

/// One rule: a template, and what a COE must be for it to be chosen. Every
/// criterion given must hold (a severity, a service and a team among those listed;
/// every label with its value); a rule gives at least one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TemplateRule {
    /// A template file (TOML, as `coe.template`).
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Or one that ships with coe: `security`, `data-loss`, `default`.
    #[serde(default)]
    pub builtin: Option<String>,
    #[serde(default)]
    pub severities: Vec<Severity>,
    #[serde(default)]
    pub services: Vec<String>,
    #[serde(default)]
    pub teams: Vec<String>,
    /// The incident's labels, e.g. `{ kind = "security" }`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// What a new COE is, as the rules read it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TemplateFacts<'a> {
    pub severity: Option<Severity>,
    pub service: Option<&'a str>,
    pub team: Option<&'a str>,
    /// Its incident's labels (every event's, a label any of them has).
    pub labels: &'a [(String, String)],
}

impl TemplateRule {
    /// Whether a COE of `facts` gets this rule's template.
    pub fn matches(&self, facts: &TemplateFacts<'_>) -> bool {
        let among = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|v| list.iter().any(|x| x.eq_ignore_ascii_case(v)))
        };
        (self.severities.is_empty() || facts.severity.is_some_and(|s| self.severities.contains(&s)))
            && among(&self.services, facts.service)
            && among(&self.teams, facts.team)
            && self.labels.iter().all(|(k, v)| {
                facts
                    .labels
                    .iter()
                    .any(|(lk, lv)| lk.eq_ignore_ascii_case(k) && lv.eq_ignore_ascii_case(v))
            })
    }

    fn criteria(&self) -> usize {
        self.severities.len() + self.services.len() + self.teams.len() + self.labels.len()
    }

    /// The rule's template, read now.
    pub fn template(&self) -> Result<Template, ConfigError> {
        match (&self.file, &self.builtin) {
            (Some(path), None) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    source: e,
                })?;
                Template::parse(&text).map_err(|source| ConfigError::Template {
                    path: path.clone(),
                    source,
                })
            }
            (None, Some(name)) => Template::builtin(name).ok_or_else(|| ConfigError::Invalid {
                key: "coe.templates",
                origin: String::new(),
                value: format!("builtin = {name:?}"),
                expected: format!(
                    "one of the templates that ship with coe: {}",
                    crate::domain::template::BUILTIN
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
            _ => Err(ConfigError::Invalid {
                key: "coe.templates",
                origin: String::new(),
                value: "a rule".into(),
                expected: "either `file` or `builtin`, not both".into(),
            }),
        }
    }
}

impl Settings {
    /// The template a new COE of `facts` is opened with: the first rule's that
    /// matches, else the organisation's (`template`).
    pub fn template_for(&self, facts: &TemplateFacts<'_>) -> Result<Template, ConfigError> {
        match self.coe.templates.iter().find(|r| r.matches(facts)) {
            Some(rule) => rule.template(),
            None => self.template(),
        }
    }

    /// Every template a draft may switch to, by name: the organisation's first, then
    /// each rule's (once per name).
    pub fn templates(&self) -> Result<Vec<Template>, ConfigError> {
        let mut all = vec![self.template()?];
        for rule in &self.coe.templates {
            let t = rule.template()?;
            if !all.iter().any(|a| a.name == t.name) {
                all.push(t);
            }
        }
        Ok(all)
    }

    /// `[[coe.templates]]`: each rule names one template that reads, and says when.
    pub(super) fn validate_templates(&self) -> Result<(), ConfigError> {
        for (i, pattern) in self.coe.internal_patterns.iter().enumerate() {
            if let Err(e) = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .build()
            {
                return Err(ConfigError::Invalid {
                    key: "coe.internal_patterns",
                    origin: String::new(),
                    value: format!("[{i}] {pattern:?}"),
                    expected: format!("a regular expression ({e})"),
                });
            }
        }
        for (i, rule) in self.coe.templates.iter().enumerate() {
            if rule.criteria() == 0 {
                return Err(ConfigError::Invalid {
                    key: "coe.templates",
                    origin: String::new(),
                    value: format!("[{i}]"),
                    expected: "at least one of severities, services, teams, labels (a rule for every COE is coe.template)".into(),
                });
            }
            rule.template()?;
        }
        self.templates().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(builtin: &str) -> TemplateRule {
        TemplateRule {
            file: None,
            builtin: Some(builtin.into()),
            severities: Vec::new(),
            services: Vec::new(),
            teams: Vec::new(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn the_first_rule_that_matches_picks_the_template() {
        let mut security = rule("security");
        security.labels.insert("kind".into(), "security".into());
        let mut data = rule("data-loss");
        data.services = vec!["payments-db".into()];
        data.severities = vec![Severity::Sev1, Severity::Sev2];
        let mut settings = Settings::default();
        settings.coe.templates = vec![security, data];
        let labels = [("Kind".to_owned(), "Security".to_owned())];
        let pick = |facts: TemplateFacts<'_>| settings.template_for(&facts).expect("reads").name;
        assert_eq!(
            pick(TemplateFacts {
                labels: &labels,
                ..Default::default()
            }),
            "security"
        );
        assert_eq!(
            pick(TemplateFacts {
                severity: Some(Severity::Sev2),
                service: Some("payments-db"),
                ..Default::default()
            }),
            "data-loss"
        );
        assert_eq!(
            pick(TemplateFacts {
                severity: Some(Severity::Sev3),
                service: Some("payments-db"),
                ..Default::default()
            }),
            "default"
        );
        let names: Vec<String> = settings
            .templates()
            .expect("all")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["default", "security", "data-loss"]);
    }

    #[test]
    fn a_rule_names_one_template_and_says_when() {
        let mut settings = Settings::default();
        settings.coe.templates = vec![rule("security")];
        assert!(settings.validate_templates().is_err(), "no criterion");
        let mut r = rule("poetry");
        r.teams = vec!["x".into()];
        settings.coe.templates = vec![r];
        assert!(settings.validate_templates().is_err(), "no such template");
        let mut r = rule("security");
        r.teams = vec!["x".into()];
        r.file = Some("/nowhere.toml".into());
        settings.coe.templates = vec![r];
        assert!(settings.validate_templates().is_err(), "both");
    }
}
