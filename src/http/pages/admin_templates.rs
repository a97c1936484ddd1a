//! The admin pages of COE templates: every template with where its newest version
//! comes from and how many COEs each version opened, and a template's page where an
//! admin changes its sections (title, guidance, required, figures, order), adds and
//! removes sections and its contributing factors, sees a preview of a COE written
//! with it, and saves a new version. COEs opened before keep the version they have.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::admin::{page, AdminForm};
use super::guard::{Admin, Fields};
use super::kit::{Page, State};
use super::outcome::{as_service, see_other};
use crate::domain::template::{SectionKind, SectionSpec, Template};
use crate::http::session::SignedIn;
use crate::services::coe::templates::{self, Listing, SaveError, Source, TemplateDraft};

/// A section's kind as the page names it, and its value in the form.
const KINDS: [(SectionKind, &str); 5] = [
    (SectionKind::Text, "Written text"),
    (SectionKind::Timeline, "Timeline"),
    (SectionKind::FiveWhys, "5 whys"),
    (SectionKind::Actions, "Corrective actions"),
    (SectionKind::Related, "Related links and COEs"),
];

fn kind_words(kind: SectionKind) -> &'static str {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("Written text", |(_, w)| w)
}

fn source_words(source: &Source) -> String {
    match source {
        Source::Shipped => "ships with coe".into(),
        Source::Settings => "from the settings file".into(),
        Source::Saved { by, at } => {
            format!("saved here by {by} on {}", at.format("%Y-%m-%d %H:%M"))
        }
    }
}

fn listing_json(l: &Listing) -> Value {
    json!({
        "name": l.template.name,
        "version": l.template.version,
        "sections": l.template.sections.len(),
        "required": l.template.sections.iter().filter(|s| s.required).count(),
        "source": source_words(&l.source),
        "opened": l.coes.iter().map(|o| json!({"version": o.version, "coes": o.coes})).collect::<Vec<_>>(),
        "saved": l.saved.iter().map(|s| json!({"version": s.version, "by": s.by, "at": s.at.format("%Y-%m-%d %H:%M").to_string()})).collect::<Vec<_>>(),
    })
}

async fn all(state: &State) -> Result<Vec<Listing>, super::error::PageError> {
    as_service(state, |conn, state| {
        Ok(templates::listings(conn, state.env())?)
    })
    .await
}

/// `GET /admin/templates`: the templates, then the rules that pick a new COE's.
pub async fn list(
    Admin(who): Admin,
    query: web::Query<super::admin_template_rules::RulesQuery>,
    state: State,
) -> Page {
    render_list(&state, &who, StatusCode::OK, &query, None, None).await
}

/// `POST /admin/template-rules`: a rule added, changed, moved up or removed; the page
/// again with the problem (what was typed kept) when it was not saved.
pub async fn save_rules(form: AdminForm, state: State) -> Page {
    let (who, fields) = (form.who.0, form.fields);
    let by = who.person.email.clone();
    match super::admin_template_rules::apply(&state, by, &fields).await? {
        Ok(()) => Ok(see_other("/admin/templates?rules_saved=1#rules")),
        Err(problem) => {
            let intent = fields.text("intent");
            let typed = (intent != "up" && intent != "remove").then_some(&fields);
            let query = super::admin_template_rules::again(&fields);
            render_list(
                &state,
                &who,
                StatusCode::UNPROCESSABLE_ENTITY,
                &query,
                Some(format!("The rule was not saved: {problem}.")),
                typed,
            )
            .await
        }
    }
}

/// The list page, with the rules' form showing `problem` and what was `typed`.
pub(super) async fn render_list(
    state: &State,
    who: &SignedIn,
    status: StatusCode,
    query: &super::admin_template_rules::RulesQuery,
    problem: Option<String>,
    typed: Option<&Fields>,
) -> Page {
    let listed: Vec<Value> = all(state).await?.iter().map(listing_json).collect();
    let starts: Vec<String> = listed
        .iter()
        .filter_map(|l| l["name"].as_str().map(str::to_owned))
        .collect();
    let mut data = super::admin_template_rules::data(state, query, problem, typed).await?;
    data["templates"] = json!(listed);
    data["starts"] = json!(starts);
    page(state, who, status, "admin_templates", "templates", data)
}

#[derive(Debug, Deserialize)]
pub struct NewQuery {
    #[serde(default)]
    name: String,
    #[serde(default)]
    from: String,
}

/// `GET /admin/templates/new?name=…&from=…`: a new template, starting as a copy of
/// another; nothing is saved until the admin saves it.
pub async fn new(Admin(who): Admin, query: web::Query<NewQuery>, state: State) -> Page {
    let NewQuery { name, from } = query.into_inner();
    let name = name.trim().to_lowercase();
    let listed = all(&state).await?;
    if listed.iter().any(|l| l.template.name == name) {
        return Ok(see_other(&format!("/admin/templates/{name}")));
    }
    let mut start = listed
        .iter()
        .find(|l| l.template.name == from)
        .map_or_else(|| (*state.template).clone(), |l| l.template.clone());
    let problem = (!Template::name_ok(&name))
        .then(|| "A template's name is 1 to 40 small letters, digits, '-' and '_'.".to_owned());
    start.name = name;
    start.version = 0;
    editor(&state, &who, StatusCode::OK, &start, None, problem, None)
}

/// `GET /admin/templates/{name}`.
pub async fn show(
    Admin(who): Admin,
    path: web::Path<String>,
    query: web::Query<SavedQuery>,
    state: State,
) -> Page {
    let name = path.into_inner();
    let listed = all(&state).await?;
    let Some(listing) = listed.into_iter().find(|l| l.template.name == name) else {
        return Err(super::error::PageError::NotFound(format!(
            "there is no template {name}"
        )));
    };
    let saved = query.saved;
    editor(
        &state,
        &who,
        StatusCode::OK,
        &listing.template,
        Some(&listing),
        None,
        saved,
    )
}

#[derive(Debug, Deserialize)]
pub struct SavedQuery {
    #[serde(default)]
    saved: Option<u32>,
}

/// `POST /admin/templates/{name}`: a preview (`intent=preview`) or a new version.
pub async fn save(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let name = path.into_inner();
    let (who, fields) = (form.who.0, form.fields);
    let draft = read_form(&fields);
    let typed = Template {
        name: name.clone(),
        version: fields
            .filled("shown")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        contributing_factors: draft.contributing_factors.clone(),
        sections: draft.sections.clone(),
    };
    let listing = all(&state)
        .await?
        .into_iter()
        .find(|l| l.template.name == name);
    if fields.text("intent") == "preview" {
        let problem = typed.clone().checked().err().map(|e| e.to_string());
        let preview = problem.is_none().then_some(&typed);
        return editor_with_preview(&state, &who, &typed, listing.as_ref(), problem, preview);
    }
    let (asked, by) = (name.clone(), who.person.email.as_str().to_owned());
    let saved = as_service(&state, move |conn, state| {
        match templates::save(conn, state.env(), &asked, draft, &by, crate::db::now()) {
            Ok(t) => Ok(Ok(t)),
            Err(SaveError::Invalid(_, problem) | SaveError::Conflict(problem)) => Ok(Err(problem)),
            Err(SaveError::Database(e)) => Err(e.into()),
        }
    })
    .await?;
    match saved {
        Ok(t) => Ok(see_other(&format!(
            "/admin/templates/{}?saved={}",
            t.name, t.version
        ))),
        Err(problem) => editor(
            &state,
            &who,
            StatusCode::UNPROCESSABLE_ENTITY,
            &typed,
            listing.as_ref(),
            Some(problem),
            None,
        ),
    }
}

fn editor(
    state: &State,
    who: &SignedIn,
    status: StatusCode,
    template: &Template,
    listing: Option<&Listing>,
    problem: Option<String>,
    saved: Option<u32>,
) -> Page {
    let mut data = editor_data(template, listing, problem);
    data["saved"] = json!(saved);
    page(state, who, status, "admin_template", "templates", data)
}

fn editor_with_preview(
    state: &State,
    who: &SignedIn,
    template: &Template,
    listing: Option<&Listing>,
    problem: Option<String>,
    preview: Option<&Template>,
) -> Page {
    let status = if problem.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let mut data = editor_data(template, listing, problem);
    data["preview"] = preview.map_or(Value::Null, |t| {
        json!({
            "factors": t.contributing_factors,
            "sections": t.sections.iter().map(|s| json!({
                "title": s.title,
                "required": s.required,
                "customers": s.for_customers,
                "guidance": s.guidance,
                "kind": kind_words(s.kind),
                "text": s.kind == SectionKind::Text,
                "figures": s.min_numbers,
                "whys": (s.kind == SectionKind::FiveWhys).then_some(s.min_whys),
            })).collect::<Vec<_>>(),
        })
    });
    page(state, who, status, "admin_template", "templates", data)
}

/// What the template's page shows: each section as a row of fields, one blank row to
/// add a section, and the versions.
fn editor_data(template: &Template, listing: Option<&Listing>, problem: Option<String>) -> Value {
    let row = |i: usize, s: Option<&SectionSpec>| {
        let kind = s.map_or(SectionKind::Text, |s| s.kind);
        json!({
            "i": i,
            "key": s.map(|s| s.key.clone()),
            "title": s.map(|s| s.title.clone()),
            "guidance": s.map(|s| s.guidance.clone()),
            "required": s.is_some_and(|s| s.required),
            "customers": s.is_some_and(|s| s.for_customers),
            "figures": s.map_or(0, |s| s.min_numbers),
            "whys": s.map_or(3, |s| s.min_whys),
            "five_whys": kind == SectionKind::FiveWhys,
            "order": (i + 1) * 10,
            "kinds": KINDS.iter().map(|(k, w)| json!({"value": k.to_string(), "label": w, "selected": *k == kind})).collect::<Vec<_>>(),
            "new": s.is_none(),
        })
    };
    let mut rows: Vec<Value> = template
        .sections
        .iter()
        .enumerate()
        .map(|(i, s)| row(i, Some(s)))
        .collect();
    rows.push(row(template.sections.len(), None));
    json!({
        "name": template.name,
        "version": template.version,
        "next": template.version + 1,
        "is_new": listing.is_none(),
        "factors": template.contributing_factors.join("\n"),
        "rows": rows,
        "count": rows.len(),
        "listing": listing.map(listing_json),
        "problem": problem,
        "title": format!("Template {}", template.name),
        "saved": null,
        "preview": null,
    })
}

/// The template the form describes: its rows in the order asked, those ticked for
/// removal and a blank new row left out, a new row's key made from its title.
fn read_form(fields: &Fields) -> TemplateDraft {
    let count: usize = fields
        .filled("count")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(200);
    let mut rows: Vec<(i64, usize, SectionSpec)> = Vec::new();
    let mut keys: Vec<String> = (0..count)
        .filter_map(|i| fields.filled(&format!("s{i}.key")))
        .collect();
    for i in 0..count {
        let f = |name: &str| fields.text(&format!("s{i}.{name}"));
        let title = f("title").trim().to_owned();
        let key = fields.filled(&format!("s{i}.key"));
        if f("remove") == "on" || (key.is_none() && title.is_empty()) {
            continue;
        }
        let key = key.unwrap_or_else(|| {
            let key = new_key(&title, &keys);
            keys.push(key.clone());
            key
        });
        let kind = KINDS
            .iter()
            .map(|(k, _)| *k)
            .find(|k| k.to_string() == f("kind"))
            .unwrap_or(SectionKind::Text);
        let order = f("order").trim().parse().unwrap_or(i64::MAX);
        rows.push((
            order,
            i,
            SectionSpec {
                key,
                title,
                kind,
                required: f("required") == "on",
                guidance: f("guidance").trim().replace("\r\n", "\n"),
                min_numbers: if kind == SectionKind::Text {
                    f("figures").trim().parse().unwrap_or(0)
                } else {
                    0
                },
                min_whys: f("whys").trim().parse().unwrap_or(3),
                for_customers: f("customers") == "on",
            },
        ));
    }
    rows.sort_by_key(|(order, i, _)| (*order, *i));
    TemplateDraft {
        contributing_factors: fields
            .text("factors")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        sections: rows.into_iter().map(|(_, _, s)| s).collect(),
        // The version the page showed: another admin's save since is not overwritten.
        based_on: fields.filled("shown").and_then(|v| v.parse().ok()),
    }
}

/// A key for a new section from its title ("Customer impact" → `customer_impact`),
/// unlike those in `taken`.
fn new_key(title: &str, taken: &[String]) -> String {
    let mut key: String = title
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    key.truncate(36);
    if key.is_empty() {
        key = "section".into();
    }
    let mut candidate = key.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{key}_{n}");
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_section_s_key_comes_from_its_title() {
        assert_eq!(new_key("Customer impact!", &[]), "customer_impact");
        assert_eq!(new_key("Impact", &["impact".into()]), "impact_2");
        assert_eq!(new_key("???", &[]), "section");
    }
}
