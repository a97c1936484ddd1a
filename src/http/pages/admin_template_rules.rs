//! Admin → Templates, its second half: the rules that pick the template a new COE is
//! opened with, in the order they are read (the settings file's, then those kept
//! here), a form to add or change one, buttons to move one up or remove it, and
//! "Which template would this incident get?". Every form works without script.

use serde::Deserialize;
use serde_json::{json, Value};

use super::guard::Fields;
use super::kit::State;
use super::outcome::as_service;
use crate::domain::Severity;
use crate::error::ApiError;
use crate::services::coe::template_rules::{
    self, Answer, KeptRule, Question, QuestionError, RulesDraft, Why,
};
use crate::services::coe::templates::{self, SaveError};

/// `GET /admin/templates?…`: a rule to change, or a question to answer.
#[derive(Debug, Default, Deserialize)]
pub struct RulesQuery {
    /// The rule kept here to show in the form (from 0).
    #[serde(default)]
    change: Option<usize>,
    /// A question was asked ("Which template would this incident get?").
    #[serde(default)]
    check: Option<String>,
    #[serde(default)]
    incident: String,
    #[serde(default)]
    severity: String,
    #[serde(default)]
    service: String,
    #[serde(default)]
    team: String,
    #[serde(default)]
    labels: String,
    /// The rules were just saved.
    #[serde(default)]
    rules_saved: Option<String>,
}

/// A list written as "a, b" on the page.
fn listed(items: &[String]) -> String {
    items.join(", ")
}

/// Labels written as "kind = security, region = eu" on the page.
fn labels_text<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    labels
        .into_iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "kind = security, region = eu" as labels, or what is wrong with it.
fn labels_of(text: &str) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut labels = std::collections::BTreeMap::new();
    for item in text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                labels.insert(k.trim().to_owned(), v.trim().to_owned());
            }
            _ => {
                return Err(format!(
                    "\"{item}\" is not a label: write each as name = value, such as kind = security"
                ))
            }
        }
    }
    Ok(labels)
}

/// When a rule applies, in a sentence's end: "of severity sev1 or sev2, of the
/// service checkout, whose alerts say kind = security".
fn when_words(
    severities: &[Severity],
    services: &[String],
    teams: &[String],
    labels: &std::collections::BTreeMap<String, String>,
) -> String {
    let or = |items: Vec<String>| match items.len() {
        0 | 1 => items.concat(),
        n => format!("{} or {}", items[..n - 1].join(", "), items[n - 1]),
    };
    let mut parts = Vec::new();
    if !severities.is_empty() {
        parts.push(format!(
            "of severity {}",
            or(severities.iter().map(|s| s.as_str().to_owned()).collect())
        ));
    }
    if !services.is_empty() {
        parts.push(format!("of the service {}", or(services.to_vec())));
    }
    if !teams.is_empty() {
        parts.push(format!("for the team {}", or(teams.to_vec())));
    }
    if !labels.is_empty() {
        parts.push(format!("whose alerts say {}", labels_text(labels)));
    }
    parts.join(", ")
}

/// The answer in a sentence.
fn answer_words(answer: &Answer, file: usize) -> String {
    let why = match &answer.why {
        Why::SettingsFile { index } => {
            format!("rule {} of the settings file picks it", index + 1)
        }
        Why::Kept { index } => format!("rule {} picks it", file + index + 1),
        Why::Organisation => "no rule matches, so it is the organisation's template".into(),
    };
    format!(
        "It would get {} (version {}): {why}.",
        answer.template, answer.version
    )
}

/// The rules part of the Admin → Templates page: `problem` is why the form was not
/// saved, `typed` what was typed in it then.
pub(super) async fn data(
    state: &State,
    query: &RulesQuery,
    problem: Option<String>,
    typed: Option<&Fields>,
) -> Result<Value, super::error::PageError> {
    let question = query.check.is_some().then(|| Question {
        incident_id: Some(query.incident.clone()),
        severity: Severity::try_from(query.severity.clone()).ok(),
        service: Some(query.service.clone()),
        team: Some(query.team.clone()),
        labels: labels_of(&query.labels).unwrap_or_default(),
    });
    let (set, names, answered) = as_service(state, move |conn, state| {
        let set = template_rules::kept(conn)?;
        let names = templates::names(conn, state.env())?;
        let answered = match question {
            None => None,
            Some(q) => Some(match template_rules::answer(conn, &state.env(), &q) {
                Ok(answer) => Ok(answer),
                Err(QuestionError::NoIncident(id)) => Err(format!("There is no incident {id}.")),
                Err(QuestionError::Database(e)) => return Err(e.into()),
            }),
        };
        Ok((set, names, answered))
    })
    .await?;
    let file = template_rules::of_file(state.env());
    let labels_problem = query
        .check
        .as_ref()
        .and_then(|_| labels_of(&query.labels).err());
    let answer = match (answered, labels_problem) {
        (_, Some(problem)) => json!({"problem": problem, "text": ""}),
        (Some(Ok(a)), None) => json!({"text": answer_words(&a, file.len()), "problem": ""}),
        (Some(Err(problem)), None) => json!({"problem": problem, "text": ""}),
        (None, None) => Value::Null,
    };
    let kept: Vec<Value> = set
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({
                "at": i, "number": file.len() + i + 1, "template": r.template,
                "when": when_words(&r.severities, &r.services, &r.teams, &r.labels),
                "first": i == 0, "unknown": !names.contains(&r.template),
            })
        })
        .collect();
    let changing = query.change.and_then(|i| set.rules.get(i).map(|r| (i, r)));
    let form = rule_form(&names, changing, file.len(), typed, problem, set.version);
    let file_rules: Vec<Value> = file
        .iter()
        .map(|r| json!({"template": r.template, "when": when_words(&r.severities, &r.services, &r.teams, &r.labels)}))
        .collect();
    Ok(json!({
        "file_rules": file_rules,
        "kept_rules": kept,
        "kept_start": file.len() + 1,
        "rules_version": set.version,
        "rules_saved_by": set.saved_by.unwrap_or_default(),
        "rules_saved": query.rules_saved.is_some(),
        "rule_form": form,
        "answer": answer,
        "question": {
            "incident": query.incident, "service": query.service, "team": query.team,
            "labels": query.labels,
            "severities": Severity::ALL.iter().map(|s| json!({"value": s.as_str(), "on": s.as_str() == query.severity})).collect::<Vec<_>>(),
        },
    }))
}

/// The form that adds a rule, or changes rule `changing`, with what was typed.
fn rule_form(
    names: &[String],
    changing: Option<(usize, &KeptRule)>,
    file_rules: usize,
    typed: Option<&Fields>,
    problem: Option<String>,
    version: i64,
) -> Value {
    let at = changing.map(|(i, _)| i.to_string()).unwrap_or_default();
    let rule = changing.map(|(_, r)| r);
    let text = |key: &str, saved: String| typed.map_or(saved, |t| t.text(key));
    let template = text(
        "template",
        rule.map(|r| r.template.clone()).unwrap_or_default(),
    );
    // A template coe no longer has stays the one chosen, not the first offered.
    let mut choices = names.to_vec();
    if !template.is_empty() && !choices.contains(&template) {
        choices.push(template.clone());
    }
    let severities: Vec<Value> = Severity::ALL
        .iter()
        .map(|s| {
            let on = match typed {
                Some(t) => t.all("severities").any(|v| v == s.as_str()),
                None => rule.is_some_and(|r| r.severities.contains(s)),
            };
            json!({"value": s.as_str(), "on": on})
        })
        .collect();
    json!({
        "at": at,
        "changing": !at.is_empty(),
        "number": changing.map(|(i, _)| file_rules + i + 1).unwrap_or_default(),
        "version": version,
        "templates": choices.iter().map(|n| json!({"name": n, "on": *n == template})).collect::<Vec<_>>(),
        "severities": severities,
        "services": text("services", rule.map(|r| listed(&r.services)).unwrap_or_default()),
        "teams": text("teams", rule.map(|r| listed(&r.teams)).unwrap_or_default()),
        "labels": text("labels", rule.map(|r| labels_text(&r.labels)).unwrap_or_default()),
        "problem": problem.unwrap_or_default(),
    })
}

/// The rule the form describes, or what is wrong with it.
fn rule_of(fields: &Fields) -> Result<KeptRule, String> {
    let list = |key: &str| -> Vec<String> {
        fields
            .text(key)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    Ok(KeptRule {
        template: fields.text("template"),
        severities: fields
            .all("severities")
            .filter_map(|s| Severity::try_from(s.to_owned()).ok())
            .collect(),
        services: list("services"),
        teams: list("teams"),
        labels: labels_of(&fields.text("labels"))?,
    })
}

/// What `POST /admin/template-rules` asks (`fields`), done as `by`: adds a rule (`at`
/// empty), changes rule `at` (`intent=save`), moves it up (`intent=up`) or removes it
/// (`intent=remove`), as a new version of the list made from `version`. Answers why
/// it was not saved, in words.
pub(super) async fn apply(
    state: &State,
    by: String,
    fields: &Fields,
) -> Result<Result<(), String>, super::error::PageError> {
    let version: i64 = fields.text("version").parse().unwrap_or(-1);
    let at = match fields.filled("at").map(|a| a.parse::<usize>()) {
        None => None,
        Some(Ok(at)) => Some(at),
        Some(Err(_)) => return Ok(Err("the page was not read whole: read it again".into())),
    };
    let intent = fields.text("intent");
    let rule = match intent.as_str() {
        "up" | "remove" => None,
        _ => match rule_of(fields) {
            Ok(rule) => Some(rule),
            Err(problem) => return Ok(Err(problem)),
        },
    };
    as_service(state, move |conn, state| {
        let mut rules = template_rules::kept(conn)?.rules;
        let out_of_date =
            || Err("the rules changed since this page was read: read them again".to_owned());
        match (intent.as_str(), at, rule) {
            ("up", Some(i), _) if i > 0 && i < rules.len() => rules.swap(i - 1, i),
            ("remove", Some(i), _) if i < rules.len() => drop(rules.remove(i)),
            (_, Some(i), Some(rule)) if i < rules.len() => rules[i] = rule,
            (_, None, Some(rule)) => rules.push(rule),
            _ => return Ok(out_of_date()),
        }
        let draft = RulesDraft { version, rules };
        match template_rules::save(conn, state.env(), &by, draft, crate::db::now()) {
            Ok(_) => Ok(Ok(())),
            Err(SaveError::Invalid(_, problem)) => Ok(Err(problem)),
            Err(SaveError::Conflict(_)) => Ok(out_of_date()),
            Err(SaveError::Database(e)) => Err(ApiError::from(e)),
        }
    })
    .await
}

/// The page again after `fields` were not saved: the rule being changed, if one was.
pub(super) fn again(fields: &Fields) -> RulesQuery {
    let moved = matches!(fields.text("intent").as_str(), "up" | "remove");
    RulesQuery {
        change: fields
            .filled("at")
            .and_then(|a| a.parse().ok())
            .filter(|_| !moved),
        ..RulesQuery::default()
    }
}
