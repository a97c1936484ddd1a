//! Webhook signatures: HMAC-SHA256 over the raw body, compared in constant time.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the {0} header is missing")]
    Missing(&'static str),
    #[error("the {0} header does not match the body")]
    Mismatch(&'static str),
    #[error("the signature timestamp {0} is more than 5 minutes from now")]
    Stale(String),
    #[error("the {0} header carries more than {max} signatures", max = MAX_SIGNATURES)]
    TooMany(&'static str),
}

/// Most signatures one header may carry. PagerDuty sends one per active secret (two
/// while a secret is rotated); a header with more is refused before any hashing.
pub const MAX_SIGNATURES: usize = 8;

/// HMAC-SHA256(`secret`, the concatenated `message` parts), computed once per request
/// whatever the number of signatures presented.
fn mac(secret: &[u8], message: &[&[u8]]) -> Option<[u8; 32]> {
    let mut mac = HmacSha256::new_from_slice(secret).ok()?;
    for part in message {
        mac.update(part);
    }
    Some(mac.finalize().into_bytes().into())
}

/// Whether the hex `signature` is `expected`, compared in constant time.
fn matches(expected: &[u8; 32], signature: &str) -> bool {
    let Ok(given) = hex::decode(signature.trim()) else {
        return false;
    };
    bool::from(given.as_slice().ct_eq(expected.as_slice()))
}

/// PagerDuty `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>…]`: accepted when any of the
/// signatures matches (several are sent while a secret is rotated). The body is hashed
/// once; at most `MAX_SIGNATURES` entries are looked at, and a header with more is
/// refused unhashed, so a hostile header costs one HMAC, not one per entry.
pub fn verify_pagerduty(
    secret: &str,
    body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    const NAME: &str = "X-PagerDuty-Signature";
    let header = header.ok_or(SignatureError::Missing(NAME))?;
    let signatures: Vec<&str> = header
        .split(',')
        .filter_map(|part| part.trim().strip_prefix("v1="))
        .take(MAX_SIGNATURES + 1)
        .collect();
    if signatures.len() > MAX_SIGNATURES {
        return Err(SignatureError::TooMany(NAME));
    }
    let Some(expected) = mac(secret.as_bytes(), &[body]) else {
        return Err(SignatureError::Mismatch(NAME));
    };
    let matched = signatures.iter().any(|sig| matches(&expected, sig));
    matched.then_some(()).ok_or(SignatureError::Mismatch(NAME))
}

/// Grafana `X-Grafana-Alerting-Signature: <hex>` over `timestamp:body` when a timestamp
/// header is sent, else over the body. A timestamp more than 5 minutes away from
/// `now` is refused (a replay), checked without overflow for any 64-bit value.
pub fn verify_grafana(
    secret: &str,
    body: &[u8],
    signature: Option<&str>,
    timestamp: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), SignatureError> {
    const NAME: &str = "X-Grafana-Alerting-Signature";
    let signature = signature.ok_or(SignatureError::Missing(NAME))?;
    let expected = match timestamp.map(str::trim).filter(|t| !t.is_empty()) {
        Some(ts) => {
            let seconds: i64 = ts
                .parse()
                .map_err(|_| SignatureError::Stale(ts.to_owned()))?;
            let fresh = now
                .timestamp()
                .checked_sub(seconds)
                .is_some_and(|age| age.checked_abs().is_some_and(|a| a <= 300));
            if !fresh {
                return Err(SignatureError::Stale(ts.to_owned()));
            }
            mac(secret.as_bytes(), &[ts.as_bytes(), b":", body])
        }
        None => mac(secret.as_bytes(), &[body]),
    };
    expected
        .is_some_and(|e| matches(&e, signature))
        .then_some(())
        .ok_or(SignatureError::Mismatch(NAME))
}

/// Sentry `Sentry-Hook-Signature: <hex>` over the body.
pub fn verify_sentry(
    secret: &str,
    body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    const NAME: &str = "Sentry-Hook-Signature";
    let header = header.ok_or(SignatureError::Missing(NAME))?;
    mac(secret.as_bytes(), &[body])
        .is_some_and(|e| matches(&e, header))
        .then_some(())
        .ok_or(SignatureError::Mismatch(NAME))
}

/// A header `name` holding `prefix` and the hex HMAC-SHA256 of the body (GitHub's
/// `X-Hub-Signature-256: sha256=…`, Jira's `X-Hub-Signature`, Linear's
/// `Linear-Signature` with no prefix).
pub fn verify_prefixed(
    name: &'static str,
    prefix: &str,
    secret: &str,
    body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing(name))?;
    let signature = header
        .trim()
        .strip_prefix(prefix)
        .ok_or(SignatureError::Mismatch(name))?;
    mac(secret.as_bytes(), &[body])
        .is_some_and(|e| matches(&e, signature))
        .then_some(())
        .ok_or(SignatureError::Mismatch(name))
}

/// HMAC-SHA256 hex of `message` (for tests and for documentation examples).
pub fn sign_hex(secret: &str, message: &[u8]) -> String {
    // HMAC takes keys of any length, so this cannot fail; an empty answer would
    // simply not verify.
    match HmacSha256::new_from_slice(secret.as_bytes()) {
        Ok(mut mac) => {
            mac.update(message);
            hex::encode(mac.finalize().into_bytes())
        }
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PD_SECRET: &str = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK";
    const PD_GOOD: &str = "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd";
    const PD_BAD: &str = "v1=7020c8a7ec668a9b7012bc3dd82e483394b038f4230acc6785efbf2a7d8bcaf5";

    fn pd_body() -> Vec<u8> {
        std::fs::read(format!(
            "{}/tests/fixtures/webhooks/pagerduty/go-pagerduty-incident-priority-updated-SIGNED.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture")
    }

    #[test]
    fn pagerduty_vector_is_accepted_and_the_wrong_one_refused() {
        let body = pd_body();
        assert_eq!(body.len(), 1655);
        assert_eq!(verify_pagerduty(PD_SECRET, &body, Some(PD_GOOD)), Ok(()));
        assert_eq!(
            verify_pagerduty(PD_SECRET, &body, Some(PD_BAD)),
            Err(SignatureError::Mismatch("X-PagerDuty-Signature"))
        );
        assert_eq!(
            verify_pagerduty(PD_SECRET, &body, None),
            Err(SignatureError::Missing("X-PagerDuty-Signature"))
        );
    }

    #[test]
    fn pagerduty_accepts_any_signature_during_rotation() {
        let body = pd_body();
        let both = format!("{PD_BAD},{PD_GOOD}");
        assert_eq!(verify_pagerduty(PD_SECRET, &body, Some(&both)), Ok(()));
        assert!(verify_pagerduty(PD_SECRET, &body, Some("v1=zz,v0=00")).is_err());
    }

    #[test]
    fn pagerduty_refuses_more_signatures_than_a_rotation_needs() {
        let body = pd_body();
        let eight = format!("{},{PD_GOOD}", [PD_BAD; MAX_SIGNATURES - 1].join(","));
        assert_eq!(verify_pagerduty(PD_SECRET, &body, Some(&eight)), Ok(()));
        let nine = format!("{PD_BAD},{eight}");
        assert_eq!(
            verify_pagerduty(PD_SECRET, &body, Some(&nine)),
            Err(SignatureError::TooMany("X-PagerDuty-Signature"))
        );
    }

    #[test]
    fn grafana_timestamps_at_the_edges_of_i64_are_stale_not_a_panic() {
        let now = Utc::now();
        let body = b"{}";
        // `now - 2^63` once passed the window by overflow.
        let wrapped = (i128::from(now.timestamp()) - (1i128 << 63)).to_string();
        for ts in [i64::MIN.to_string(), i64::MAX.to_string(), wrapped] {
            let sig = sign_hex("s3", &[ts.as_bytes(), b":", body].concat());
            assert!(
                matches!(
                    verify_grafana("s3", body, Some(&sig), Some(&ts), now),
                    Err(SignatureError::Stale(_))
                ),
                "{ts}"
            );
        }
    }

    #[test]
    fn grafana_signs_timestamp_and_body_and_refuses_old_timestamps() {
        let now = Utc::now();
        let ts = now.timestamp().to_string();
        let body = b"{\"alerts\":[]}";
        let sig = sign_hex("s3", &[ts.as_bytes(), b":", body].concat());
        assert_eq!(
            verify_grafana("s3", body, Some(&sig), Some(&ts), now),
            Ok(())
        );
        let old = (now.timestamp() - 301).to_string();
        let old_sig = sign_hex("s3", &[old.as_bytes(), b":", body].concat());
        assert!(matches!(
            verify_grafana("s3", body, Some(&old_sig), Some(&old), now),
            Err(SignatureError::Stale(_))
        ));
        let plain = sign_hex("s3", body);
        assert_eq!(verify_grafana("s3", body, Some(&plain), None, now), Ok(()));
        assert!(verify_grafana("other", body, Some(&plain), None, now).is_err());
    }

    #[test]
    fn sentry_signs_the_body() {
        let body = b"{\"action\":\"resolved\"}";
        let sig = sign_hex("client-secret", body);
        assert_eq!(verify_sentry("client-secret", body, Some(&sig)), Ok(()));
        assert!(verify_sentry("client-secret", b"{}", Some(&sig)).is_err());
    }
}
