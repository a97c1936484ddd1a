//! API tokens: who may call the API, and as whom.

use std::fmt;
use std::str::FromStr;

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a token may do. `admin` may do everything; `member` reads and writes COEs and
/// actions; `ingest` may only post failure events; `scim` may only provision people
/// (the identity provider's SCIM client, `/scim/v2`).
///
/// Deserialized through a string, so that a wrong type (`"role": 7`) is reported as a
/// problem with the field rather than as malformed JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Role {
    Admin,
    Member,
    Ingest,
    Scim,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Admin, Role::Member, Role::Ingest, Role::Scim];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Ingest => "ingest",
            Role::Scim => "scim",
        }
    }

    /// Whether a caller with this role may do what needs `required`.
    pub fn allows(self, required: Role) -> bool {
        self == Role::Admin || self == required
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("must be one of admin, member, ingest, scim (got {s:?})"))
    }
}

impl TryFrom<String> for Role {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

/// A token's name: what people type to list or revoke it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TokenName(String);

impl TokenName {
    pub const MAX_LEN: usize = 64;

    pub fn parse(raw: &str) -> Result<TokenName, String> {
        if raw.is_empty() || raw.len() > Self::MAX_LEN {
            return Err(format!(
                "must be 1 to {} characters (got {})",
                Self::MAX_LEN,
                raw.len()
            ));
        }
        if let Some(bad) = raw
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(format!(
                "may contain only letters, digits, '-', '_' and '.' (found {bad:?})"
            ));
        }
        Ok(TokenName(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TokenName {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        TokenName::parse(&value)
    }
}

impl From<TokenName> for String {
    fn from(value: TokenName) -> Self {
        value.0
    }
}

/// The secret a caller presents. Shown once when created; only its hash is kept.
/// `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSecret(String);

impl TokenSecret {
    const PREFIX: &'static str = "coe_";

    /// A new secret with 256 bits from the operating system's random source.
    pub fn generate() -> TokenSecret {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        TokenSecret(format!("{}{}", Self::PREFIX, hex::encode(bytes)))
    }

    pub fn from_presented(raw: &str) -> TokenSecret {
        TokenSecret(raw.trim().to_owned())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// SHA-256 of the secret, hex. The secret has 256 random bits, so a fast hash is
    /// enough: there is nothing to brute-force, and lookups stay one index probe.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSecret(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_everything_others_only_themselves() {
        assert!(Role::Admin.allows(Role::Ingest));
        assert!(Role::Admin.allows(Role::Member));
        assert!(Role::Member.allows(Role::Member));
        assert!(!Role::Member.allows(Role::Admin));
        assert!(!Role::Ingest.allows(Role::Member));
        assert!(!Role::Member.allows(Role::Ingest));
    }

    #[test]
    fn roles_parse_from_their_names() {
        assert_eq!("ingest".parse::<Role>(), Ok(Role::Ingest));
        assert!("root".parse::<Role>().unwrap_err().contains("root"));
    }

    #[test]
    fn token_names_are_checked() {
        assert!(TokenName::parse("alertmanager-prod.1").is_ok());
        assert!(TokenName::parse("").is_err());
        assert!(TokenName::parse("has space").unwrap_err().contains("' '"));
        assert!(TokenName::parse(&"x".repeat(65)).is_err());
    }

    #[test]
    fn secrets_are_random_and_never_debug_printed() {
        let a = TokenSecret::generate();
        let b = TokenSecret::generate();
        assert_ne!(a, b);
        assert!(a.expose().starts_with("coe_"));
        assert_eq!(a.expose().len(), 4 + 64);
        assert_eq!(format!("{a:?}"), "TokenSecret(***)");
        assert_eq!(a.hash(), TokenSecret::from_presented(a.expose()).hash());
        assert_ne!(a.hash(), b.hash());
    }
}
