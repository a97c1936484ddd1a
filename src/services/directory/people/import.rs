//! The directory from a CSV file (`coe people import`, `POST /api/v1/people/import`):
//! good lines stored in one transaction, every bad line reported with its problem.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{check, set_by_provider, upsert_checked, PeopleError, PersonInput};
use crate::db::{self, DbConnection};
use crate::domain::EmailAddress;

/// A line of a CSV import that was not taken, and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RejectedLine {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    pub problem: String,
}

/// What an import did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImportReport {
    pub created: usize,
    pub updated: usize,
    pub rejected: Vec<RejectedLine>,
}

#[derive(Debug, Deserialize)]
struct CsvLine {
    email: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    manager_email: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    /// yes/no (true/false, 1/0); empty or no such column leaves it as it is.
    #[serde(default)]
    bar_raiser: Option<String>,
}

/// A CSV yes/no: `None` when empty, the problem when it is neither.
fn yes_no(value: Option<&str>) -> Result<Option<bool>, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Ok(None),
        Some("yes" | "true" | "1" | "y") => Ok(Some(true)),
        Some("no" | "false" | "0" | "n") => Ok(Some(false)),
        Some(other) => Err(format!("must be yes or no (got {other:?})")),
    }
}

/// Imports `email,name,team,manager_email,timezone` lines (with that header, and an
/// optional `bar_raiser` column of yes/no). Good
/// lines are stored, in one transaction; every bad line is reported with its problem.
pub fn import_csv(
    conn: &mut DbConnection,
    text: &str,
    teams_from_groups: bool,
) -> Result<ImportReport, PeopleError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| {
            PeopleError::Invalid(vec![(
                "body".into(),
                format!("cannot read the CSV header: {e}"),
            )])
        })?
        .clone();
    if !headers.iter().any(|h| h == "email") {
        return Err(PeopleError::Invalid(vec![(
            "body".into(),
            "the first line must be the header email,name,team,manager_email,timezone".into(),
        )]));
    }
    let mut good: Vec<(u64, EmailAddress, PersonInput)> = Vec::new();
    let mut rejected = Vec::new();
    // Where the last record starts (line and byte), to find a quote never closed.
    let mut last_start: Option<(u64, usize)> = None;
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                last_start = e.position().map(|p| (p.line(), p.byte() as usize));
                rejected.push(RejectedLine {
                    line,
                    problem: e.to_string(),
                });
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        last_start = record.position().map(|p| (p.line(), p.byte() as usize));
        match person_of(&headers, &record) {
            Ok((email, input)) => good.push((line, email, input)),
            Err(problem) => rejected.push(RejectedLine { line, problem }),
        }
    }
    if let Some(start) = last_start {
        reject_after_open_quote(text, start, &mut good, &mut rejected);
    }
    let (created, updated) = db::write_transaction(conn, |conn| {
        let now = db::now();
        let mut created = 0;
        let mut updated = 0;
        for (line, email, input) in &good {
            if let Some((_, problem)) =
                set_by_provider(conn, email.as_str(), input, teams_from_groups)?
            {
                rejected.push(RejectedLine {
                    line: *line,
                    problem,
                });
                continue;
            }
            if upsert_checked(conn, email, input, now)? {
                created += 1;
            } else {
                updated += 1;
            }
        }
        Ok::<_, diesel::result::Error>((created, updated))
    })?;
    Ok(ImportReport {
        created,
        updated,
        rejected,
    })
}

/// Whom a line of the file names, and what it says of them: the problem with the
/// line when it cannot be taken.
fn person_of(
    headers: &csv::StringRecord,
    record: &csv::StringRecord,
) -> Result<(EmailAddress, PersonInput), String> {
    // PostgreSQL cannot store a NUL, and no name or team holds a control character.
    if let Some((field, _)) = headers
        .iter()
        .zip(record.iter())
        .find(|(_, value)| value.chars().any(char::is_control))
    {
        return Err(format!("{field} holds a control character (such as NUL)"));
    }
    let parsed: CsvLine = record
        .deserialize(Some(headers))
        .map_err(|e| e.to_string())?;
    let email = EmailAddress::parse(&parsed.email).map_err(|p| format!("email {p}"))?;
    let manager = match parsed
        .manager_email
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        None => None,
        Some(m) => Some(EmailAddress::parse(m).map_err(|p| format!("manager_email {p}"))?),
    };
    let bar_raiser = yes_no(parsed.bar_raiser.as_deref()).map_err(|p| format!("bar_raiser {p}"))?;
    let input = PersonInput {
        name: parsed.name,
        team: parsed.team,
        manager_email: manager,
        timezone: parsed.timezone,
        bar_raiser,
    };
    let problems = check(&email, &input);
    if let Some((field, problem)) = problems.into_iter().next() {
        return Err(format!("{field} {problem}"));
    }
    Ok((email, input))
}

/// Rejects every line a quote never closed took into the last record (`start`: the
/// line and byte where that record starts), if one did.
fn reject_after_open_quote(
    text: &str,
    start: (u64, usize),
    good: &mut Vec<(u64, EmailAddress, PersonInput)>,
    rejected: &mut Vec<RejectedLine>,
) {
    // A quote never closed makes the last record run to the end of the file, taking
    // every line after it as part of one field: report each line it took.
    let (start_line, start_byte) = start;
    let rest = text.get(start_byte..).unwrap_or("");
    let lines = rest.trim_end_matches(['\n', '\r']).lines().count() as u64;
    if rest.matches('"').count() % 2 == 1 && lines > 1 {
        good.retain(|(line, ..)| *line < start_line);
        rejected.retain(|r| r.line < start_line);
        for line in start_line..start_line + lines {
            rejected.push(RejectedLine {
                line,
                problem: format!(
                    "not read: line {start_line} opens a quote (\") that is never closed, \
                     so every line after it was read as part of one field"
                ),
            });
        }
    }
}
