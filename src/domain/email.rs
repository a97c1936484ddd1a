//! An email address that has been checked once, at the edge.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A syntactically valid email address, stored lower-cased so that one person is one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EmailAddress(String);

impl EmailAddress {
    /// Parses `raw`; the error says what is wrong, for a person to read.
    pub fn parse(raw: &str) -> Result<EmailAddress, String> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err("must be an email address (got an empty string)".into());
        }
        if trimmed.len() > 254 {
            return Err(format!(
                "must be an email address of at most 254 characters (got {})",
                trimmed.len()
            ));
        }
        if !email_address::EmailAddress::is_valid(trimmed) || !trimmed.contains('@') {
            return Err(format!("must be an email address (got {trimmed:?})"));
        }
        // Valid in RFC 5321, but an address names a person in URL paths (`/people/…`,
        // `/admin/people/…/admin`): a quoted local part or one of `/ ? # %` could
        // point such a link at another person. Nobody's work address needs them.
        if trimmed.starts_with('"') || trimmed.contains(['/', '?', '#', '%', '"', '\\']) {
            return Err(format!(
                "must be a plain email address, without quotes or any of / ? # % \\ (got {trimmed:?})"
            ));
        }
        Ok(EmailAddress(trimmed.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EmailAddress {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        EmailAddress::parse(&value)
    }
}

impl From<EmailAddress> for String {
    fn from(value: EmailAddress) -> Self {
        value.0
    }
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_trimmed_and_lower_cased() {
        assert_eq!(
            EmailAddress::parse(" Alice@Example.COM ").unwrap().as_str(),
            "alice@example.com"
        );
    }

    #[test]
    fn bad_addresses_are_refused_with_the_value() {
        for bad in ["", "alice", "alice@", "@example.com", "a b@example.com"] {
            let err = EmailAddress::parse(bad).unwrap_err();
            assert!(err.starts_with("must be an email address"), "{bad}: {err}");
        }
    }

    #[test]
    fn addresses_that_would_break_a_url_path_are_refused() {
        for bad in [
            r#""x/../lee@example.com/admin?"@example.com"#,
            r#""ana"@example.com"#,
            "a/b@example.com",
            "a?b@example.com",
            "a#b@example.com",
            "a%2fb@example.com",
        ] {
            let err = EmailAddress::parse(bad).unwrap_err();
            assert!(err.starts_with("must be"), "{bad}: {err}");
        }
        // Plus and dots stay fine.
        assert!(EmailAddress::parse("ana.lima+coe@example.com").is_ok());
    }
}
