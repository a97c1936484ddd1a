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

/// The key that names one person however their address is written: lower-cased,
/// without a `+tag` (plus-addressing: `chen+review@` reaches `chen@`'s mailbox), and,
/// for `dotless` domains (`auth.dotless_domains`: mail systems that ignore dots in
/// the local part, such as Gmail), without dots. Anything that is not an address (a
/// `token:NAME`) is its own key.
pub fn person_key(address: &str, dotless: &[String]) -> String {
    let address = address.trim().to_lowercase();
    let Some((local, domain)) = address.rsplit_once('@') else {
        return address;
    };
    let local = local.split_once('+').map_or(local, |(base, _)| base);
    let local = if dotless.iter().any(|d| d.eq_ignore_ascii_case(domain)) {
        local.replace('.', "")
    } else {
        local.to_owned()
    };
    format!("{local}@{domain}")
}

/// Whether `a` and `b` name the same person (`person_key`): what separation of duties
/// compares, so that nobody reviews, approves or verifies their own work under a
/// second spelling of their address.
pub fn same_person(a: &str, b: &str, dotless: &[String]) -> bool {
    a == b || person_key(a, dotless) == person_key(b, dotless)
}

/// `same_person` where either may be unknown (never the same then).
pub fn same_person_opt(a: Option<&str>, b: Option<&str>, dotless: &[String]) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_person(a, b, dotless),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_tags_and_ignored_dots_are_one_person() {
        let gmail = ["gmail.com".to_owned()];
        assert!(same_person(
            "chen+review@example.com",
            "chen@example.com",
            &gmail
        ));
        assert!(same_person(
            "Chen+a+b@Example.com",
            "chen+c@example.com",
            &gmail
        ));
        assert!(same_person("j.o.e@gmail.com", "joe+x@gmail.com", &gmail));
        assert!(!same_person("j.o.e@example.com", "joe@example.com", &gmail));
        assert!(!same_person("chen@example.com", "chen@example.org", &gmail));
        assert!(!same_person("token:ci", "token:cd", &gmail));
        assert!(same_person("token:ci", "token:ci", &gmail));
        assert!(!same_person_opt(None, None, &gmail));
    }

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
