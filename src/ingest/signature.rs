//! Webhook signatures: HMAC-SHA256 over the raw body, compared in constant time.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

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
}

/// Whether `hex_signature` is HMAC-SHA256(`secret`, `message`). Constant-time.
fn verify_hex(secret: &[u8], message: &[&[u8]], hex_signature: &str) -> bool {
    let Ok(expected) = hex::decode(hex_signature.trim()) else {
        return false;
    };
    let Ok(mut mac) = HmacSha256::new_from_slice(secret) else {
        return false;
    };
    for part in message {
        mac.update(part);
    }
    mac.verify_slice(&expected).is_ok()
}

/// PagerDuty `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>…]`: accepted when any of the
/// signatures matches (several are sent while a secret is rotated).
pub fn verify_pagerduty(
    secret: &str,
    body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    const NAME: &str = "X-PagerDuty-Signature";
    let header = header.ok_or(SignatureError::Missing(NAME))?;
    let matched = header
        .split(',')
        .filter_map(|part| part.trim().strip_prefix("v1="))
        .any(|sig| verify_hex(secret.as_bytes(), &[body], sig));
    matched.then_some(()).ok_or(SignatureError::Mismatch(NAME))
}

/// Grafana `X-Grafana-Alerting-Signature: <hex>` over `timestamp:body` when a timestamp
/// header is sent, else over the body. A timestamp more than 5 minutes away from
/// `now` is refused (a replay).
pub fn verify_grafana(
    secret: &str,
    body: &[u8],
    signature: Option<&str>,
    timestamp: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), SignatureError> {
    const NAME: &str = "X-Grafana-Alerting-Signature";
    let signature = signature.ok_or(SignatureError::Missing(NAME))?;
    let ok = match timestamp.map(str::trim).filter(|t| !t.is_empty()) {
        Some(ts) => {
            let seconds: i64 = ts
                .parse()
                .map_err(|_| SignatureError::Stale(ts.to_owned()))?;
            if (now.timestamp() - seconds).abs() > 300 {
                return Err(SignatureError::Stale(ts.to_owned()));
            }
            verify_hex(secret.as_bytes(), &[ts.as_bytes(), b":", body], signature)
        }
        None => verify_hex(secret.as_bytes(), &[body], signature),
    };
    ok.then_some(()).ok_or(SignatureError::Mismatch(NAME))
}

/// Sentry `Sentry-Hook-Signature: <hex>` over the body.
pub fn verify_sentry(
    secret: &str,
    body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    const NAME: &str = "Sentry-Hook-Signature";
    let header = header.ok_or(SignatureError::Missing(NAME))?;
    verify_hex(secret.as_bytes(), &[body], header)
        .then_some(())
        .ok_or(SignatureError::Mismatch(NAME))
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
