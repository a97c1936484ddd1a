//! A COE's text sections: one written on the COE's version (`put_section`, the API),
//! or several saved at once, each checked against the revision its writer started
//! from (`put_sections`, the page): a section someone else changed meanwhile comes
//! back to merge, one refused (too long) comes back with its problem, the rest are
//! saved.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use super::edit::{with_change, with_claim, Based, Recorded};
use super::{load_row, record_change, template_of, CoeError};
use crate::db::models::{CoeRow, SectionRow};
use crate::db::schema::coe_sections;
use crate::db::DbConnection;
use crate::domain::template::SectionKind;
use crate::services::access::{self, Editor};
use crate::services::Env;

/// Checks that `key` is a text section of the COE's template and that `body` fits.
fn check_section(row: &CoeRow, key: &str, body: &str, env: &Env<'_>) -> Result<(), CoeError> {
    let template = template_of(row);
    let spec = template.section(key).ok_or_else(|| {
        CoeError::invalid(
            "key",
            format!(
                "no section `{key}` in this COE's template; its sections are: {}",
                template.keys()
            ),
        )
    })?;
    if spec.kind != SectionKind::Text {
        return Err(CoeError::invalid(
            "key",
            format!(
                "section `{key}` is of kind {} and is edited through its own endpoint",
                spec.kind
            ),
        ));
    }
    let limit = env.settings.coe.max_section_bytes;
    if body.len() > limit {
        return Err(CoeError::invalid(
            "body",
            format!(
                "is {} and a section holds at most {}: keep the lines that matter and link \
                 the rest (the whole log, a dashboard) instead of pasting it",
                kilobytes(body.len()),
                kilobytes(limit)
            ),
        ));
    }
    Ok(())
}

/// A size in words a writer reads: "160 KB" (rounded up), or "900 bytes".
fn kilobytes(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

/// The text sections of COE `id` as stored, by key (a section never written is absent).
fn section_bodies(
    conn: &mut DbConnection,
    id: &str,
) -> Result<std::collections::BTreeMap<String, String>, CoeError> {
    let rows: Vec<(String, String)> = coe_sections::table
        .filter(coe_sections::coe_id.eq(id))
        .select((coe_sections::key, coe_sections::body))
        .load(conn)?;
    Ok(rows.into_iter().collect())
}

/// Writes section `key` of COE `id` (what was there is `before`); says what to record.
fn write_section(
    conn: &mut DbConnection,
    id: &str,
    key: &str,
    before: Option<&str>,
    body: &str,
    actor: &str,
    now: NaiveDateTime,
) -> Result<Recorded, CoeError> {
    diesel::delete(
        coe_sections::table
            .filter(coe_sections::coe_id.eq(id))
            .filter(coe_sections::key.eq(key)),
    )
    .execute(conn)?;
    diesel::insert_into(coe_sections::table)
        .values(SectionRow {
            coe_id: id.to_owned(),
            key: key.to_owned(),
            body: body.to_owned(),
            updated_by: actor.to_owned(),
            updated_at: now,
        })
        .execute(conn)?;
    Ok(Recorded {
        action: format!("section:{key}"),
        before: before.map(|b| json!({ "body": b })),
        after: Some(json!({ "body": body })),
    })
}

/// Replaces section `key` of an approved COE with the change of it its reviewer
/// approved (the section written for customers; `publishing::changes` decided who
/// may, and checked the text): the rest of the COE, its version and its approval
/// stay as they are. In the COE's history like any section's change; the search
/// reads it again on `CoeEvent::SummaryChangeDecided`.
pub fn write_approved_change(
    conn: &mut DbConnection,
    id: &str,
    key: &str,
    body: &str,
    actor: &str,
    now: NaiveDateTime,
) -> Result<(), CoeError> {
    let before = section_bodies(conn, id)?.remove(key);
    let recorded = write_section(conn, id, key, before.as_deref(), body, actor, now)?;
    record_change(
        conn,
        id,
        actor,
        &recorded.action,
        recorded.before,
        recorded.after,
        now,
    )
    .map_err(CoeError::from)
}

/// Writes a text section's Markdown, based on the COE's version.
pub fn put_section(
    conn: &mut DbConnection,
    id: &str,
    key: &str,
    body: &str,
    expected: Option<i32>,
    who: &Editor<'_>,
    env: &Env<'_>,
) -> Result<(), CoeError> {
    with_change(conn, id, expected, who, *env, |conn, row, now| {
        check_section(row, key, body, env)?;
        let before = section_bodies(conn, id)?.remove(key);
        let recorded = write_section(conn, id, key, before.as_deref(), body, who.actor, now)?;
        Ok(((), Some(recorded)))
    })
}

/// A text section as a person saves it: what they typed, and the revision of the
/// section they started from (`SectionView::revision`).
#[derive(Debug, Clone)]
pub struct SectionEdit {
    pub key: String,
    pub body: String,
    pub based_on: String,
}

/// A section someone else saved since the writer started from it: their text and
/// its revision (a save of the merged text based on it goes through).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SectionConflict {
    pub key: String,
    pub theirs: String,
    pub revision: String,
    /// Who saved theirs (the writer themself, from another tab, as well).
    #[serde(default)]
    pub by: String,
}

/// `conflicts`, each with who saved the section last.
fn with_savers(
    conn: &mut DbConnection,
    id: &str,
    mut conflicts: Vec<SectionConflict>,
) -> Result<Vec<SectionConflict>, CoeError> {
    for conflict in &mut conflicts {
        conflict.by = coe_sections::table
            .find((id, &conflict.key))
            .select(coe_sections::updated_by)
            .first::<String>(conn)
            .optional()?
            .unwrap_or_default();
    }
    Ok(conflicts)
}

/// What saving sections came to: the keys saved, the sections in conflict, and the
/// sections refused (each key with its problem; the others were saved all the same).
#[derive(Debug, Default)]
pub struct SavedSections {
    pub saved: Vec<String>,
    pub conflicts: Vec<SectionConflict>,
    pub refused: Vec<(String, String)>,
}

/// The problems of a section refused, each named by the section's key.
fn refusals(error: CoeError, key: &str) -> Result<Vec<(String, String)>, CoeError> {
    match in_section(error, key) {
        CoeError::Invalid(problems) => Ok(problems),
        other => Err(other),
    }
}

/// A section's body's problem, named by the section's key (several are saved at once).
fn in_section(error: CoeError, key: &str) -> CoeError {
    match error {
        CoeError::Invalid(problems) => CoeError::Invalid(
            problems
                .into_iter()
                .map(|(field, problem)| match field.as_str() {
                    "body" => (key.to_owned(), problem),
                    _ => (field, problem),
                })
                .collect(),
        ),
        other => other,
    }
}

/// What to do with one section of a save.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Nothing: the writer did not change it, or it already says what they typed.
    Keep,
    Write,
    /// Someone else changed it since the writer started from it.
    Conflict,
}

/// The per-section rule: a section is written when the writer changed it and nobody
/// else did since they started from it; a section the writer did not change is never
/// written (so saving Detection never undoes someone's Mitigation).
fn step(typed: &str, based_on: &str, current: &str) -> Step {
    if super::revision(typed) == based_on || typed == current {
        Step::Keep
    } else if super::revision(current) == based_on {
        Step::Write
    } else {
        Step::Conflict
    }
}

/// Saves the text sections a person changed, in one transaction, each checked against
/// the revision they started from, not against the whole COE: saving Detection in one
/// tab never blocks Mitigation in another. Sections someone else changed meanwhile are
/// not written and come back as conflicts, with their text, to merge. A problem is
/// named by its section's key.
pub fn put_sections(
    conn: &mut DbConnection,
    id: &str,
    edits: &[SectionEdit],
    who: &Editor<'_>,
    env: &Env<'_>,
) -> Result<SavedSections, CoeError> {
    let decide = |current: &std::collections::BTreeMap<String, String>| {
        edits
            .iter()
            .map(|e| {
                let now = current.get(&e.key).map_or("", String::as_str);
                (e, step(&e.body, &e.based_on, now))
            })
            .collect::<Vec<_>>()
    };
    let conflicts_of =
        |steps: &[(&SectionEdit, Step)], current: &std::collections::BTreeMap<String, String>| {
            steps
                .iter()
                .filter(|(_, s)| *s == Step::Conflict)
                .map(|(e, _)| {
                    let theirs = current.get(&e.key).cloned().unwrap_or_default();
                    SectionConflict {
                        key: e.key.clone(),
                        revision: super::revision(&theirs),
                        theirs,
                        by: String::new(),
                    }
                })
                .collect::<Vec<_>>()
        };
    // A save that writes nothing (nothing typed, or only conflicts) leaves the COE
    // and its version as they are.
    // A section refused (too long, say) is named with its problem; the others are saved.
    let refused_of = |row: &CoeRow| -> Result<Vec<(String, String)>, CoeError> {
        let mut refused = Vec::new();
        for e in edits {
            if let Err(err) = check_section(row, &e.key, &e.body, env) {
                refused.extend(refusals(err, &e.key)?);
            }
        }
        Ok(refused)
    };
    access::coe(conn, id, who)?;
    let current = section_bodies(conn, id)?;
    let steps = decide(&current);
    let row = load_row(conn, id)?;
    let refused = refused_of(&row)?;
    let writes = |steps: &[(&SectionEdit, Step)], refused: &[(String, String)]| {
        steps
            .iter()
            .filter(|(e, s)| *s == Step::Write && !refused.iter().any(|(k, _)| *k == e.key))
            .map(|(e, _)| (*e).clone())
            .collect::<Vec<SectionEdit>>()
    };
    if writes(&steps, &refused).is_empty() {
        return Ok(SavedSections {
            saved: Vec::new(),
            conflicts: with_savers(conn, id, conflicts_of(&steps, &current))?,
            refused,
        });
    }
    with_claim(conn, id, Based::Unversioned, who, *env, |conn, row, now| {
        let refused = refused_of(row)?;
        // Decided again under the COE's lock: what was read above may have moved.
        let current = section_bodies(conn, id)?;
        let steps = decide(&current);
        let mut saved = Vec::new();
        for e in writes(&steps, &refused) {
            let before = current.get(&e.key).map(String::as_str);
            let Recorded {
                action,
                before,
                after,
            } = write_section(conn, id, &e.key, before, &e.body, who.actor, now)?;
            record_change(conn, id, who.actor, &action, before, after, now)?;
            saved.push(e.key.clone());
        }
        let conflicts = with_savers(conn, id, conflicts_of(&steps, &current))?;
        Ok((
            SavedSections {
                saved,
                conflicts,
                refused,
            },
            None,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::{step, Step};
    use crate::services::coe::coes::revision;

    #[test]
    fn a_section_is_written_only_when_its_writer_changed_it_and_nobody_else_did() {
        let seen = revision("old");
        assert_eq!(step("new", &seen, "old"), Step::Write);
        assert_eq!(step("old", &seen, "theirs"), Step::Keep, "not typed in");
        assert_eq!(step("new", &seen, "new"), Step::Keep, "already so");
        assert_eq!(step("new", &seen, "theirs"), Step::Conflict);
        // A section never written starts from the empty text's revision.
        assert_eq!(step("first", &revision(""), ""), Step::Write);
        assert_ne!(revision("a"), revision("b"));
        assert_eq!(revision("a").len(), 16);
    }
}
