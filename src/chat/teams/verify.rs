//! An activity's token, checked as Microsoft documents for the Bot Connector
//! ("Authentication with the Bot Connector API"): a JWT in `Authorization: Bearer`,
//! signed RS256 by a key of the published OpenID metadata (`kid`; the key's
//! `endorsements` must name the activity's channel), issued by
//! `https://api.botframework.com` to the bot's app id (`aud`), within its validity give
//! or take five minutes, and carrying the activity's own `serviceUrl`.

use std::collections::HashSet;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

pub const ISSUER: &str = "https://api.botframework.com";

/// Clock skew allowed, as Microsoft's SDKs allow.
const SKEW_SECS: u64 = 300;

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Signed with a key the metadata does not list (perhaps a new one: read it again).
    NoKey,
    Invalid(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NoKey => {
                f.write_str("the token is signed with a key the Bot Connector does not publish")
            }
            Refused::Invalid(why) => f.write_str(why),
        }
    }
}

/// The token in `authorization` (the header's value), when it is one coe could check:
/// a JWT signed RS256 naming its key. Asked before the keys are read.
pub fn token_of(authorization: Option<&str>) -> Result<&str, Refused> {
    let invalid = |why: &str| Refused::Invalid(why.to_owned());
    let token = authorization
        .and_then(|h| h.strip_prefix("Bearer "))
        .ok_or_else(|| {
            invalid("the activity carries no Bot Connector token (Authorization: Bearer)")
        })?;
    let header =
        jsonwebtoken::decode_header(token).map_err(|_| invalid("the token is not a JWT"))?;
    if header.alg != Algorithm::RS256 {
        return Err(invalid("the token is not signed RS256"));
    }
    if header.kid.is_none() {
        return Err(invalid("the token names no key"));
    }
    Ok(token)
}

/// Checks `authorization` (the header's value) against `keys` (a JWKS) for the bot
/// `app_id` and an activity from `service_url` on channel `channel`.
pub fn check(
    authorization: Option<&str>,
    keys: &Value,
    app_id: &str,
    service_url: &str,
    channel: &str,
) -> Result<(), Refused> {
    let invalid = |why: &str| Refused::Invalid(why.to_owned());
    let token = token_of(authorization)?;
    let kid = jsonwebtoken::decode_header(token)
        .ok()
        .and_then(|h| h.kid)
        .ok_or_else(|| invalid("the token names no key"))?;
    let key = keys["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|k| k["kid"].as_str() == Some(kid.as_str()))
        .ok_or(Refused::NoKey)?;
    // Microsoft's SDKs: the activity's channel must be among the key's endorsements.
    let endorsed = key["endorsements"]
        .as_array()
        .is_some_and(|e| e.iter().any(|e| e.as_str() == Some(channel)));
    if !endorsed {
        return Err(Refused::Invalid(format!(
            "the token's key is not endorsed for the channel {channel}"
        )));
    }
    let (Some(n), Some(e)) = (key["n"].as_str(), key["e"].as_str()) else {
        return Err(invalid("the Bot Connector's key cannot be read"));
    };
    let key = DecodingKey::from_rsa_components(n, e)
        .map_err(|_| invalid("the Bot Connector's key cannot be read"))?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&[app_id]);
    validation.required_spec_claims =
        HashSet::from(["iss".to_owned(), "aud".to_owned(), "exp".to_owned()]);
    validation.validate_nbf = true;
    validation.leeway = SKEW_SECS;
    let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
        .map_err(|e| Refused::Invalid(format!("the token fails its checks: {e}")))?
        .claims;
    let claimed = claims["serviceurl"]
        .as_str()
        .or_else(|| claims["serviceUrl"].as_str());
    let same = |a: &str| a.trim_end_matches('/') == service_url.trim_end_matches('/');
    if !claimed.is_some_and(same) {
        return Err(invalid(
            "the token was not issued for the activity's serviceUrl",
        ));
    }
    Ok(())
}
