//! OpenID Connect Back-Channel Logout 1.0: the provider POSTs a signed logout token
//! to coe when a person signs out there (or is removed); coe checks it (section 2.6)
//! and ends their sessions of that provider session (`sid`) or of that person
//! (`sub`). The token is a JWT checked by `jsonwebtoken` with the provider's
//! published keys (fetched again, as for ID tokens, when it names a key not kept).

use std::collections::HashSet;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::{OidcError, Provider, CLOCK_SKEW_SECS};

/// The event a logout token carries (section 2.4).
const LOGOUT_EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";

/// How old a logout token without `exp` may be.
const MAX_AGE_SECS: i64 = 600;

/// Who a checked logout token signs out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logout {
    /// The provider's subject: every session of theirs, unless `sid` narrows it.
    pub subject: Option<String>,
    /// The provider's session: the coe sessions begun in it.
    pub session: Option<String>,
    /// The token's id: a token taken once is refused the second time.
    pub token_id: String,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: Option<String>,
    sid: Option<String>,
    iat: Option<i64>,
    jti: Option<String>,
    #[serde(default)]
    events: serde_json::Map<String, serde_json::Value>,
    nonce: Option<serde_json::Value>,
}

impl Provider {
    /// Checks a logout token as section 2.6 says: signed by the provider's key (no
    /// `none`, no shared secret), its issuer, its audience (coe's client id), `iat`,
    /// the logout event, a `sub` or a `sid`, no `nonce`, a `jti`.
    pub async fn logout(&self, token: &str) -> Result<Logout, OidcError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| OidcError::LogoutToken(format!("it is not a JWT: {e}")))?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(OidcError::LogoutToken(format!(
                "it is signed with {:?}, not one of the provider's keys",
                header.alg
            )));
        }
        if header.typ.as_deref().is_some_and(|t| {
            !t.eq_ignore_ascii_case("logout+jwt") && !t.eq_ignore_ascii_case("jwt")
        }) {
            return Err(OidcError::LogoutToken(format!(
                "its type is {:?}",
                header.typ
            )));
        }
        let discovered = self.discovered().await?;
        let claims = match self.checked(&discovered.keys_json(), &header, token) {
            Err(Unchecked::NoKey) => {
                let fresh = self.refetch_keys(&discovered).await?;
                self.checked(&fresh.keys_json(), &header, token)
            }
            other => other,
        }
        .map_err(|e| OidcError::LogoutToken(e.to_string()))?;
        let now = crate::domain::clock::now().timestamp();
        let iat = claims
            .iat
            .ok_or_else(|| OidcError::LogoutToken("it has no `iat`".into()))?;
        if iat > now + CLOCK_SKEW_SECS {
            return Err(OidcError::LogoutToken("it is issued in the future".into()));
        }
        if iat < now - MAX_AGE_SECS {
            return Err(OidcError::LogoutToken(format!(
                "it was issued more than {MAX_AGE_SECS} s ago"
            )));
        }
        if !claims
            .events
            .get(LOGOUT_EVENT)
            .is_some_and(serde_json::Value::is_object)
        {
            return Err(OidcError::LogoutToken(
                "it carries no back-channel logout event".into(),
            ));
        }
        if claims.nonce.is_some() {
            return Err(OidcError::LogoutToken(
                "it carries a nonce (an ID token sent as a logout token?)".into(),
            ));
        }
        if claims.sub.is_none() && claims.sid.is_none() {
            return Err(OidcError::LogoutToken(
                "it names neither `sub` nor `sid`".into(),
            ));
        }
        let token_id = claims
            .jti
            .filter(|j| !j.is_empty())
            .ok_or_else(|| OidcError::LogoutToken("it has no `jti`".into()))?;
        Ok(Logout {
            subject: claims.sub,
            session: claims.sid,
            token_id,
        })
    }

    fn checked(
        &self,
        keys: &str,
        header: &jsonwebtoken::Header,
        token: &str,
    ) -> Result<Claims, Unchecked> {
        let keys: JwkSet = serde_json::from_str(keys)
            .map_err(|e| Unchecked::Invalid(format!("the provider's keys cannot be read: {e}")))?;
        let key = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or(Unchecked::NoKey)?;
        let key = DecodingKey::from_jwk(key)
            .map_err(|e| Unchecked::Invalid(format!("the provider's key cannot be used: {e}")))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[self.issuer.as_str()]);
        validation.set_audience(&[self.client_id.as_str()]);
        validation.required_spec_claims = HashSet::from(["iss".to_owned(), "aud".to_owned()]);
        validation.leeway = u64::try_from(CLOCK_SKEW_SECS).unwrap_or(60);
        jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| Unchecked::Invalid(format!("the logout token fails its checks: {e}")))
    }
}

enum Unchecked {
    /// No kept key is the one it names: the provider may have rotated its keys.
    NoKey,
    Invalid(String),
}

impl std::fmt::Display for Unchecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unchecked::NoKey => {
                f.write_str("it is signed with a key the provider does not publish")
            }
            Unchecked::Invalid(why) => f.write_str(why),
        }
    }
}
