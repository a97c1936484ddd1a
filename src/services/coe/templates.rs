//! Templates an admin keeps in coe (Admin → Templates), besides those of the
//! settings file and those that ship with coe. Every save is a new version of its
//! name; the highest version of a name is the one new COEs get, and a COE keeps the
//! copy it was opened with (`coes.template`), so a new version changes no COE opened
//! before it.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::schema::{coe_templates, coes};
use crate::db::DbConnection;
use crate::domain::template::{SectionSpec, Template, TemplateError, BUILTIN};
use crate::services::Env;

/// Where a template's newest version comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Source {
    /// Shipped with coe (`builtin`, or the default when `coe.template` is not set).
    Shipped,
    /// The settings file (`coe.template` or a `[[coe.templates]]` rule's `file`).
    Settings,
    /// Saved on the admin page (or by the API).
    Saved {
        by: String,
        #[serde(serialize_with = "crate::json::utc")]
        at: NaiveDateTime,
    },
}

/// One template as the admin page and `GET /api/v1/templates` show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Listing {
    #[schema(value_type = Object)]
    pub template: Template,
    pub source: Source,
    /// Its earlier versions saved here, newest first (version, by whom, when).
    pub saved: Vec<Saved>,
    /// How many COEs were opened with each version, newest version first.
    pub coes: Vec<Opened>,
}

/// How many COEs a version of a template opened.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Opened {
    pub version: u32,
    pub coes: i64,
}

/// A version saved on the admin page.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Saved {
    pub version: u32,
    pub by: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub at: NaiveDateTime,
}

/// `GET /api/v1/templates`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateList {
    pub templates: Vec<Listing>,
}

/// What an admin saves: the template's sections and contributing factors (its name
/// is the address's; its version is given by coe).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateDraft {
    /// The categories a 5-whys chain is tagged with; empty turns the tagging off.
    pub contributing_factors: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    pub sections: Vec<SectionSpec>,
    /// The version this one was made from (0 for a new name): refused (409) when
    /// someone saved another since. Left out, the save is made on whatever is newest.
    #[serde(default)]
    pub based_on: Option<u32>,
}

/// Why a template was not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The field and what is wrong with it.
    #[error("{1}")]
    Invalid(String, String),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// The newest saved version of `name`, if any was saved.
pub(super) fn newest_saved(
    conn: &mut DbConnection,
    name: &str,
) -> QueryResult<Option<(Template, Saved)>> {
    let row: Option<(i32, String, String, NaiveDateTime)> = coe_templates::table
        .filter(coe_templates::name.eq(name))
        .order(coe_templates::version.desc())
        .select((
            coe_templates::version,
            coe_templates::body,
            coe_templates::saved_by,
            coe_templates::saved_at,
        ))
        .first(conn)
        .optional()?;
    Ok(row.and_then(|(version, body, by, at)| {
        let template: Template = serde_json::from_str(&body).ok()?;
        Some((
            template,
            Saved {
                version: u32::try_from(version).unwrap_or(0),
                by,
                at,
            },
        ))
    }))
}

/// `picked` (the settings' or a rule's), or its newer version saved here.
pub fn newest(conn: &mut DbConnection, picked: Template) -> QueryResult<Template> {
    Ok(match newest_saved(conn, &picked.name)? {
        Some((saved, _)) if saved.version >= picked.version => saved,
        _ => picked,
    })
}

/// Every template a draft may switch to and the admin page lists, each at its
/// newest version: the organisation's first, then the rules', then those that ship
/// with coe, then those made here.
pub fn all(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<Template>> {
    Ok(listings(conn, env)?
        .into_iter()
        .map(|l| l.template)
        .collect())
}

/// The names of every template a draft may switch to (what a COE page offers), without
/// reading each one's versions and counts as `listings` does.
pub fn names(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<String>> {
    let (settings, org) = (env.settings, env.template);
    let mut names = vec![org.name.clone()];
    let rules = settings.coe.templates.iter().filter_map(|rule| {
        rule.builtin
            .clone()
            .or_else(|| rule.template().ok().map(|t| t.name))
    });
    let shipped = BUILTIN.iter().map(|(n, _)| (*n).to_owned());
    let saved: Vec<String> = coe_templates::table
        .select(coe_templates::name)
        .distinct()
        .order(coe_templates::name.asc())
        .load(conn)?;
    for name in rules.chain(shipped).chain(saved) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// Every template with where its newest version comes from, its saved versions and
/// how many COEs each version opened.
pub fn listings(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<Listing>> {
    let (settings, org) = (env.settings, env.template);
    let mut from_settings: Vec<(Template, Source)> = Vec::new();
    let org_source = if settings.coe.template.is_some() {
        Source::Settings
    } else {
        Source::Shipped
    };
    from_settings.push((org.clone(), org_source));
    for rule in &settings.coe.templates {
        match rule.template() {
            Ok(t) => from_settings.push((
                t,
                if rule.file.is_some() {
                    Source::Settings
                } else {
                    Source::Shipped
                },
            )),
            Err(e) => tracing::error!(error = %e, "a template of coe.templates cannot be read"),
        }
    }
    for name in BUILTIN.iter().map(|(n, _)| *n) {
        if let Some(t) = Template::builtin(name) {
            from_settings.push((t, Source::Shipped));
        }
    }
    let saved_names: Vec<String> = coe_templates::table
        .select(coe_templates::name)
        .distinct()
        .order(coe_templates::name.asc())
        .load(conn)?;
    let mut out: Vec<Listing> = Vec::new();
    let mut add =
        |conn: &mut DbConnection, template: Template, source: Source| -> QueryResult<()> {
            if out.iter().any(|l| l.template.name == template.name) {
                return Ok(());
            }
            let saved = saved_versions(conn, &template.name)?;
            let (template, source) = match newest_saved(conn, &template.name)? {
                Some((newer, s)) if newer.version >= template.version => {
                    (newer, Source::Saved { by: s.by, at: s.at })
                }
                _ => (template, source),
            };
            let coes = coes_by_version(conn, &template.name)?;
            out.push(Listing {
                template,
                source,
                saved,
                coes,
            });
            Ok(())
        };
    for (t, source) in from_settings {
        add(conn, t, source)?;
    }
    for name in saved_names {
        if let Some((t, s)) = newest_saved(conn, &name)? {
            add(conn, t, Source::Saved { by: s.by, at: s.at })?;
        }
    }
    Ok(out)
}

fn saved_versions(conn: &mut DbConnection, name: &str) -> QueryResult<Vec<Saved>> {
    let rows: Vec<(i32, String, NaiveDateTime)> = coe_templates::table
        .filter(coe_templates::name.eq(name))
        .order(coe_templates::version.desc())
        .select((
            coe_templates::version,
            coe_templates::saved_by,
            coe_templates::saved_at,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(version, by, at)| Saved {
            version: u32::try_from(version).unwrap_or(0),
            by,
            at,
        })
        .collect())
}

fn coes_by_version(conn: &mut DbConnection, name: &str) -> QueryResult<Vec<Opened>> {
    let rows: Vec<(i32, i64)> = coes::table
        .filter(coes::template_name.eq(name))
        .group_by(coes::template_version)
        .select((coes::template_version, diesel::dsl::count_star()))
        .order(coes::template_version.desc())
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(v, n)| Opened {
            version: u32::try_from(v).unwrap_or(0),
            coes: n,
        })
        .collect())
}

/// Saves `draft` as the next version of template `name` (a new name starts one
/// above nothing: version 1; a name the settings or coe give continues from theirs).
/// Refused, naming the field, when the template is not one coe can open COEs with.
pub fn save(
    conn: &mut DbConnection,
    env: Env<'_>,
    name: &str,
    draft: TemplateDraft,
    by: &str,
    now: NaiveDateTime,
) -> Result<Template, SaveError> {
    let name = name.trim();
    if !Template::name_ok(name) {
        return Err(SaveError::Invalid(
            "name".into(),
            "a template's name is 1 to 40 of a-z, 0-9, '-' and '_'".into(),
        ));
    }
    crate::db::write_transaction(conn, |conn| {
        let known = listings(conn, env)?
            .into_iter()
            .find(|l| l.template.name == name)
            .map_or(0, |l| l.template.version);
        if let Some(base) = draft.based_on.filter(|b| *b != known) {
            return Err(SaveError::Conflict(format!(
                "{name} is at version {known} now, not {base} as when it was read: read it again and make the change there"
            )));
        }
        let template = Template {
            name: name.to_owned(),
            version: known + 1,
            contributing_factors: draft.contributing_factors,
            sections: draft.sections,
        }
        .checked()
        .map_err(|e| {
            let field = match &e {
                TemplateError::Section { index, key, .. }
                    if key.starts_with("contributing_factors") =>
                {
                    format!("contributing_factors[{}]", index - 1)
                }
                TemplateError::Section { index, .. } => format!("sections[{}]", index - 1),
                _ => "sections".into(),
            };
            SaveError::Invalid(field, e.to_string())
        })?;
        diesel::insert_into(coe_templates::table)
            .values((
                coe_templates::name.eq(&template.name),
                coe_templates::version.eq(i32::try_from(template.version).unwrap_or(i32::MAX)),
                coe_templates::body
                    .eq(serde_json::to_string(&template).unwrap_or_else(|_| "{}".into())),
                coe_templates::saved_by.eq(by),
                coe_templates::saved_at.eq(now),
            ))
            .execute(conn)
            .map_err(|e| match e {
                diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _,
                ) => SaveError::Conflict(format!(
                    "someone saved version {} of {name} at the same moment: read it and save again",
                    template.version
                )),
                e => SaveError::Database(e),
            })?;
        tracing::info!(template = %template.name, version = template.version, by, "a template was saved");
        Ok(template)
    })
}
