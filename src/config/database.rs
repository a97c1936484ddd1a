//! Where the database is: the URL setting, parsed once and strictly into a backend and
//! a location. Connecting is `db`'s business; this is only about the setting.

use std::fmt;
use std::path::PathBuf;

/// A database location, parsed from the URL scheme. `SqliteConnection` would accept
/// any string as a file name, so the choice is made here, once, and strictly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

/// Why a `database.url` cannot be used; the text is what the setting should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseUrlError {
    #[error("a sqlite://PATH or postgres:// URL (the scheme `{0}` is not supported)")]
    UnsupportedScheme(String),
    #[error("a sqlite://PATH or postgres:// URL (it is empty)")]
    Empty,
}

impl DatabaseUrl {
    /// `sqlite://PATH`, `sqlite:PATH` or a bare path is SQLite; `postgres://` or
    /// `postgresql://` is PostgreSQL; any other scheme is refused by name.
    pub fn parse(url: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
        let url = url.trim();
        if url.is_empty() {
            return Err(DatabaseUrlError::Empty);
        }
        match url_scheme(url) {
            Some("postgres" | "postgresql") => Ok(DatabaseUrl::Postgres(url.to_owned())),
            Some("sqlite") => {
                let path = url
                    .strip_prefix("sqlite://")
                    .or_else(|| url.strip_prefix("sqlite:"))
                    .unwrap_or_default();
                if path.is_empty() {
                    return Err(DatabaseUrlError::Empty);
                }
                Ok(DatabaseUrl::Sqlite(PathBuf::from(path)))
            }
            Some(other) => Err(DatabaseUrlError::UnsupportedScheme(other.to_owned())),
            None => Ok(DatabaseUrl::Sqlite(PathBuf::from(url))),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            DatabaseUrl::Sqlite(_) => Backend::Sqlite,
            DatabaseUrl::Postgres(_) => Backend::Postgres,
        }
    }
}

/// `scheme` of `scheme:rest`, when the string starts with one (a Windows drive letter
/// or a bare path does not).
fn url_scheme(url: &str) -> Option<&str> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// The database engine a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_pick_the_backend() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://coe.db"),
            Ok(DatabaseUrl::Sqlite("coe.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/coe/coe.db"),
            Ok(DatabaseUrl::Sqlite("/var/lib/coe/coe.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("./data/coe.db"),
            Ok(DatabaseUrl::Sqlite("./data/coe.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("postgres://u:p@localhost/coe").map(|u| u.backend()),
            Ok(Backend::Postgres)
        );
        assert_eq!(
            DatabaseUrl::parse("postgresql://localhost/coe").map(|u| u.backend()),
            Ok(Backend::Postgres)
        );
    }

    #[test]
    fn unknown_schemes_are_refused_by_name() {
        assert_eq!(
            DatabaseUrl::parse("mysql://root@localhost/coe"),
            Err(DatabaseUrlError::UnsupportedScheme("mysql".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("postgress://localhost/coe"),
            Err(DatabaseUrlError::UnsupportedScheme("postgress".into()))
        );
        assert_eq!(DatabaseUrl::parse(""), Err(DatabaseUrlError::Empty));
        assert_eq!(
            DatabaseUrl::parse("sqlite://"),
            Err(DatabaseUrlError::Empty)
        );
    }
}
