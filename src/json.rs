//! JSON parsing with errors for people: a syntax error names line and column, a
//! document of the wrong shape names the field by its path (`alerts[2].startsAt`).
//! Used by the HTTP extractors and by the webhook parsers alike.

use serde::de::DeserializeOwned;

/// Why a JSON document could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    #[error("malformed JSON at line {line} column {column}: {message}")]
    Malformed {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("field `{field}`: {problem}")]
    Field { field: String, problem: String },
}

impl JsonError {
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        JsonError::Field {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The same error with `prefix` put before the field path (`[3]` + `title`).
    pub fn within(self, prefix: &str) -> Self {
        match self {
            JsonError::Field { field, problem } => JsonError::Field {
                field: join_path(prefix, &field),
                problem,
            },
            other => other,
        }
    }
}

fn join_path(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty() || field == "body") {
        (true, _) => field.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) if field.starts_with('[') => format!("{prefix}{field}"),
        (false, false) => format!("{prefix}.{field}"),
    }
}

/// Parses `bytes` as one JSON document into `T`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => value,
        Err(err) => {
            let path = err.path().to_string();
            return Err(classify(&path, err.into_inner()));
        }
    };
    de.end().map_err(|e| classify(".", e))?;
    Ok(value)
}

/// Converts an already parsed value into `T`, naming fields on error.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, JsonError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        let (field, problem) = name_field(&path, &message);
        JsonError::Field { field, problem }
    })
}

/// Parses a URL query string into `T`, naming the parameter on error.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, JsonError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        let (field, problem) = name_field(&path, &message);
        let field = if field == "body" {
            "query".to_owned()
        } else {
            field
        };
        JsonError::Field { field, problem }
    })
}

fn classify(path: &str, err: serde_json::Error) -> JsonError {
    use serde_json::error::Category;
    match err.classify() {
        Category::Syntax | Category::Eof | Category::Io => JsonError::Malformed {
            line: err.line(),
            column: err.column(),
            message: strip_position(&err.to_string()),
        },
        Category::Data => {
            let message = strip_position(&err.to_string());
            let (field, problem) = name_field(path, &message);
            JsonError::Field { field, problem }
        }
    }
}

/// serde_json appends " at line L column C"; the field path says more than that.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// A missing or unknown field is reported at its parent's path; name the field itself.
fn name_field(path: &str, message: &str) -> (String, String) {
    let join = |child: &str| {
        if path == "." || path.is_empty() {
            child.to_owned()
        } else {
            format!("{path}.{child}")
        }
    };
    let quoted = |rest: &str| rest.split('`').nth(1).map(str::to_owned);
    if let Some(name) = message.strip_prefix("missing field ").and_then(quoted) {
        return (join(&name), "is required".into());
    }
    if let Some(name) = message.strip_prefix("unknown field ").and_then(quoted) {
        // serde_path_to_error already ends the path with the unknown key.
        let field = if path == name || path.ends_with(&format!(".{name}")) {
            path.to_owned()
        } else {
            join(&name)
        };
        return (
            field,
            message.replacen(
                &format!("unknown field `{name}`, "),
                "is not a known field; ",
                1,
            ),
        );
    }
    let field = if path == "." || path.is_empty() {
        "body".to_owned()
    } else {
        path.to_owned()
    };
    (field, message.to_owned())
}

/// The one time format of everything `coe` writes (API, exports, emails): RFC 3339 in
/// UTC with its `Z`, e.g. `2026-11-30T18:02:10Z` (fractions of a second only when
/// there are some). What the API writes, it accepts back (`domain::event::parse_time`).
pub fn format_utc(t: &chrono::NaiveDateTime) -> String {
    t.and_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// `#[serde(serialize_with = "crate::json::utc")]` for a stored UTC time.
pub fn utc<S: serde::Serializer>(t: &chrono::NaiveDateTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_utc(t))
}

/// `#[serde(serialize_with = "crate::json::utc_option")]` for an optional one.
pub fn utc_option<S: serde::Serializer>(
    t: &Option<chrono::NaiveDateTime>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&format_utc(t)),
        None => s.serialize_none(),
    }
}
