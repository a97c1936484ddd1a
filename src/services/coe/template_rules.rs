//! Which template a new COE is opened with: the first rule that matches its severity,
//! service, team and its incident's labels — the settings file's rules
//! (`[[coe.templates]]`) first, then those admins keep in coe (Admin → Templates, the
//! `template_rules` table) — else the organisation's template. A rule kept in coe
//! names its template: one made on the admin page, one that ships with coe, or one
//! of the settings file. The whole ordered list is saved at once; each save is a new
//! version, the newest in use.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::templates::{self, SaveError};
use crate::config::{TemplateFacts, TemplateRule};
use crate::db::models::IncidentRow;
use crate::db::schema::{failure_events, incidents, template_rules};
use crate::db::{types, DbConnection};
use crate::domain::template::Template;
use crate::domain::Severity;
use crate::services::directory::ownership;
use crate::services::Env;

/// How many rules coe keeps (a list longer is no longer read by people).
pub const MOST_RULES: usize = 100;

/// A rule kept in coe: its template, and what a new COE must be for it (every
/// criterion given must hold; at least one is given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeptRule {
    /// The template's name (one made on the admin page, one that ships with coe, or
    /// one of the settings file).
    pub template: String,
    /// Among these severities (`sev1` … `sev5`).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub severities: Vec<Severity>,
    /// Among these services.
    #[serde(default)]
    pub services: Vec<String>,
    /// Among these teams (the owner's team, else the service's).
    #[serde(default)]
    pub teams: Vec<String>,
    /// Every one of these labels on the incident's alerts, with its value.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

impl KeptRule {
    /// Whether a COE of `facts` gets this rule's template.
    pub fn matches(&self, facts: &TemplateFacts<'_>) -> bool {
        TemplateRule {
            file: None,
            builtin: None,
            severities: self.severities.clone(),
            services: self.services.clone(),
            teams: self.teams.clone(),
            labels: self.labels.clone(),
        }
        .matches(facts)
    }
}

/// The settings file's rules (`[[coe.templates]]`), each as a kept one reads: its
/// template by name (a file that cannot be read now by its path's stem).
pub fn of_file(env: Env<'_>) -> Vec<KeptRule> {
    env.settings
        .coe
        .templates
        .iter()
        .map(|rule| KeptRule {
            template: rule.template().map(|t| t.name).unwrap_or_else(|_| {
                rule.builtin.clone().unwrap_or_else(|| {
                    rule.file
                        .as_ref()
                        .and_then(|f| f.file_stem())
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
            }),
            severities: rule.severities.clone(),
            services: rule.services.clone(),
            teams: rule.teams.clone(),
            labels: rule.labels.clone(),
        })
        .collect()
}

/// The rules kept in coe, at their newest version.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct RuleSet {
    /// 0 before the first save: give it back as `version` to change the list.
    pub version: i64,
    pub rules: Vec<KeptRule>,
    pub saved_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc_option")]
    #[schema(value_type = Option<String>)]
    pub saved_at: Option<NaiveDateTime>,
}

/// The rules kept in coe now (none before the first save).
pub fn kept(conn: &mut DbConnection) -> QueryResult<RuleSet> {
    let row: Option<(i64, String, String, NaiveDateTime)> = template_rules::table
        .order(template_rules::version.desc())
        .select((
            template_rules::version,
            template_rules::rules,
            template_rules::saved_by,
            template_rules::saved_at,
        ))
        .first(conn)
        .optional()?;
    Ok(match row {
        Some((version, rules, by, at)) => RuleSet {
            version,
            rules: serde_json::from_str(&rules).unwrap_or_else(|e| {
                tracing::error!(error = %e, version, "the template rules kept in coe cannot be read");
                Vec::new()
            }),
            saved_by: Some(by),
            saved_at: Some(at),
        },
        None => RuleSet::default(),
    })
}

/// Why a COE gets its template.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Why {
    /// The settings file's rule at `index` (from 0).
    SettingsFile { index: usize },
    /// The rule kept in coe at `index` (from 0).
    Kept { index: usize },
    /// No rule matched: the organisation's.
    Organisation,
}

/// The template a new COE gets, and why.
#[derive(Debug, Clone)]
pub struct Picked {
    pub template: Template,
    pub why: Why,
}

/// What a new COE is, before its template is picked.
#[derive(Debug, Clone)]
pub struct Subject<'a> {
    pub severity: Severity,
    pub service: Option<&'a str>,
    /// Its owner, whose team a rule reads (else the service's team).
    pub owner: Option<&'a str>,
    /// A team given as it is (the check on the admin page), in place of the owner's.
    pub team: Option<&'a str>,
    /// Its incident's labels (every alert's).
    pub labels: &'a [(String, String)],
}

/// The template a new COE of `subject` is opened with (at its newest version), and
/// which rule picked it. A settings file rule whose template cannot be read now gives
/// the organisation's; a kept rule that names a template coe no longer has is passed
/// over for the next; both say so in the log.
pub fn pick(conn: &mut DbConnection, env: &Env<'_>, subject: &Subject<'_>) -> QueryResult<Picked> {
    let file = &env.settings.coe.templates;
    // The settings file's rules are read first: those kept in coe only when none
    // of the file's matches.
    let mut rules: Option<RuleSet> = None;
    if file.is_empty() {
        let set = kept(conn)?;
        if set.rules.is_empty() {
            return organisation(conn, env);
        }
        rules = Some(set);
    }
    let team = match subject.team {
        Some(team) => Some(team.to_owned()),
        None => ownership::team_of_coe(conn, subject.owner, subject.service)?,
    };
    let facts = TemplateFacts {
        severity: Some(subject.severity),
        service: subject.service,
        team: team.as_deref(),
        labels: subject.labels,
    };
    if let Some((index, rule)) = file.iter().enumerate().find(|(_, r)| r.matches(&facts)) {
        return match rule.template() {
            Ok(t) => Ok(Picked {
                template: templates::newest(conn, t)?,
                why: Why::SettingsFile { index },
            }),
            Err(e) => {
                tracing::error!(error = %e, "a template of coe.templates cannot be read: the organisation's is used");
                organisation(conn, env)
            }
        };
    }
    let rules = match rules {
        Some(set) => set,
        None => kept(conn)?,
    };
    // A rule whose template coe no longer has is passed over for the next that matches.
    for (index, rule) in rules
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.matches(&facts))
    {
        match named(conn, env, &rule.template)? {
            Some(template) => {
                return Ok(Picked {
                    template,
                    why: Why::Kept { index },
                })
            }
            None => tracing::error!(
                template = %rule.template,
                "a template rule kept in coe names no template coe has: the next rule is read"
            ),
        }
    }
    organisation(conn, env)
}

fn organisation(conn: &mut DbConnection, env: &Env<'_>) -> QueryResult<Picked> {
    Ok(Picked {
        template: templates::newest(conn, env.template.clone())?,
        why: Why::Organisation,
    })
}

/// The template named `name` at its newest version: the organisation's, a settings
/// file rule's, one that ships with coe, or one saved on the admin page.
fn named(conn: &mut DbConnection, env: &Env<'_>, name: &str) -> QueryResult<Option<Template>> {
    let given = if env.template.name == name {
        Some(env.template.clone())
    } else {
        env.settings
            .coe
            .templates
            .iter()
            .filter_map(|r| r.template().ok())
            .find(|t| t.name == name)
            .or_else(|| Template::builtin(name))
    };
    match given {
        Some(t) => templates::newest(conn, t).map(Some),
        None => templates::newest_saved(conn, name).map(|s| s.map(|(t, _)| t)),
    }
}

/// What the admin page's check asks: an incident, or the facts of a COE to be.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// An incident: its severity, service, labels and owner are read.
    #[serde(default)]
    pub incident_id: Option<String>,
    /// Else these (the severity defaults to sev3, as a COE opened by hand).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub team: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// The check's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Answer {
    pub template: String,
    pub version: u32,
    pub why: Why,
}

/// Why a question was not answered.
#[derive(Debug, thiserror::Error)]
pub enum QuestionError {
    #[error("no incident {0}")]
    NoIncident(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// Which template a new COE of `question` would get now, and why.
pub fn answer(
    conn: &mut DbConnection,
    env: &Env<'_>,
    question: &Question,
) -> Result<Answer, QuestionError> {
    let blank = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    let (severity, service, owner, labels) = match blank(&question.incident_id) {
        Some(id) => {
            let incident: IncidentRow = incidents::table
                .find(id.trim())
                .select(IncidentRow::as_select())
                .first(conn)
                .optional()?
                .ok_or_else(|| QuestionError::NoIncident(id.clone()))?;
            let labels: Vec<BTreeMap<String, String>> = failure_events::table
                .filter(failure_events::incident_id.eq(&incident.id))
                .select(failure_events::labels)
                .load::<String>(conn)?
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            let assigned = ownership::for_alerts(conn, *env, &labels, incident.service.as_deref())?;
            let severity = types::severity("incidents.severity", incident.severity)?;
            let flat: Vec<(String, String)> = labels.into_iter().flatten().collect();
            (severity, incident.service, assigned.owner, flat)
        }
        None => {
            let flat: Vec<(String, String)> = question.labels.clone().into_iter().collect();
            let severity = question.severity.unwrap_or(Severity::Sev3);
            (severity, blank(&question.service), None, flat)
        }
    };
    let team = blank(&question.team);
    let picked = pick(
        conn,
        env,
        &Subject {
            severity,
            service: service.as_deref(),
            owner: owner.as_deref(),
            team: team.as_deref(),
            labels: &labels,
        },
    )?;
    Ok(Answer {
        template: picked.template.name,
        version: picked.template.version,
        why: picked.why,
    })
}

/// What an admin saves: the whole ordered list, and the version it was made from.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesDraft {
    /// The version read (0 before the first save): refused (409) when someone saved
    /// another since.
    pub version: i64,
    pub rules: Vec<KeptRule>,
}

/// Saves `draft` as the rules' next version: each rule names a template coe has and
/// says when; names and labels are trimmed.
pub fn save(
    conn: &mut DbConnection,
    env: Env<'_>,
    by: &str,
    draft: RulesDraft,
    now: NaiveDateTime,
) -> Result<RuleSet, SaveError> {
    if draft.rules.len() > MOST_RULES {
        return Err(SaveError::Invalid(
            "rules".into(),
            format!("at most {MOST_RULES} rules"),
        ));
    }
    crate::db::write_transaction(conn, |conn| {
        let known = templates::names(conn, env)?;
        let stored = kept(conn)?;
        let mut rules = Vec::with_capacity(draft.rules.len());
        for (i, rule) in draft.rules.into_iter().enumerate() {
            // A rule kept as it was is not refused for a template gone since (the
            // list shows it): the others stay changeable.
            let unchanged = stored.rules.contains(&rule);
            rules.push(checked(rule, i, &known, unchanged)?);
        }
        let newest = stored.version;
        if newest != draft.version {
            return Err(SaveError::Conflict(format!(
                "the template rules are at version {newest} now, not {} as when they were \
                 read: read them again and make the change there",
                draft.version
            )));
        }
        let text = serde_json::to_string(&rules).unwrap_or_else(|_| "[]".into());
        diesel::insert_into(template_rules::table)
            .values((
                template_rules::version.eq(newest + 1),
                template_rules::rules.eq(&text),
                template_rules::saved_by.eq(by),
                template_rules::saved_at.eq(now),
            ))
            .execute(conn)
            .map_err(|e| match e {
                diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _,
                ) => SaveError::Conflict(
                    "someone saved the template rules at the same moment: read them and save again"
                        .into(),
                ),
                e => SaveError::Database(e),
            })?;
        tracing::info!(
            version = newest + 1,
            rules = rules.len(),
            by,
            "the template rules were saved"
        );
        Ok(RuleSet {
            version: newest + 1,
            rules,
            saved_by: Some(by.to_owned()),
            saved_at: Some(now),
        })
    })
}

/// `rule` (at `i`) trimmed, or what is wrong with it, by field.
fn checked(
    mut rule: KeptRule,
    i: usize,
    known: &[String],
    unchanged: bool,
) -> Result<KeptRule, SaveError> {
    let invalid =
        |field: &str, problem: String| SaveError::Invalid(format!("rules[{i}].{field}"), problem);
    rule.template = rule.template.trim().to_owned();
    if !unchanged && !known.contains(&rule.template) {
        return Err(invalid(
            "template",
            format!(
                "{:?} is no template coe has; one of: {}",
                rule.template,
                known.join(", ")
            ),
        ));
    }
    let tidy = |list: Vec<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            if !out.iter().any(|o| o.eq_ignore_ascii_case(item)) {
                out.push(item.to_owned());
            }
        }
        out
    };
    rule.services = tidy(rule.services);
    rule.teams = tidy(rule.teams);
    rule.severities.sort();
    rule.severities.dedup();
    let mut labels = BTreeMap::new();
    for (key, value) in rule.labels {
        let (key, value) = (key.trim().to_owned(), value.trim().to_owned());
        if key.is_empty() || value.is_empty() {
            return Err(invalid(
                "labels",
                "each label needs a name and a value, such as kind = security".into(),
            ));
        }
        labels.insert(key, value);
    }
    rule.labels = labels;
    if rule.severities.is_empty()
        && rule.services.is_empty()
        && rule.teams.is_empty()
        && rule.labels.is_empty()
    {
        return Err(invalid(
            "template",
            "a rule says when: at least one severity, service, team or label".into(),
        ));
    }
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_tidied_and_one_that_says_nothing_or_names_no_template_is_refused() {
        let known = vec!["default".to_owned(), "security".to_owned()];
        let rule = |template: &str| KeptRule {
            template: template.into(),
            severities: vec![Severity::Sev2, Severity::Sev1, Severity::Sev2],
            services: vec![" checkout ".into(), "Checkout".into(), "".into()],
            teams: Vec::new(),
            labels: BTreeMap::from([(" kind ".into(), " security ".into())]),
        };
        let tidy = checked(rule(" security "), 0, &known, false).expect("valid");
        assert_eq!(tidy.template, "security");
        assert_eq!(tidy.severities, vec![Severity::Sev1, Severity::Sev2]);
        assert_eq!(tidy.services, vec!["checkout".to_owned()]);
        assert_eq!(
            tidy.labels.get("kind").map(String::as_str),
            Some("security")
        );
        let Err(SaveError::Invalid(field, _)) = checked(rule("nope"), 3, &known, false) else {
            panic!("an unknown template is refused");
        };
        assert_eq!(field, "rules[3].template");
        let silent = KeptRule {
            template: "security".into(),
            severities: Vec::new(),
            services: vec![" ".into()],
            teams: Vec::new(),
            labels: BTreeMap::new(),
        };
        assert!(matches!(
            checked(silent, 0, &known, false),
            Err(SaveError::Invalid(..))
        ));
    }
}
