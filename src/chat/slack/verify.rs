//! Slack signs each request with the app's signing secret: `X-Slack-Signature` is
//! `v0=` and the hex HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{body}`. A request
//! older or newer than five minutes is refused, so that a captured one cannot be
//! replayed later (one replayed within the window is refused by its signature, kept by
//! `services::from_chat::fresh`).

use hmac::Mac;

/// How far a request's timestamp may be from now, in seconds.
pub const WINDOW_SECS: i64 = 300;

/// Why a request is not taken as Slack's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsigned {
    #[error("the request has no X-Slack-Signature and X-Slack-Request-Timestamp")]
    Missing,
    #[error("the request's timestamp is more than five minutes from now")]
    Stale,
    #[error("the request's signature does not match the app's signing secret")]
    Forged,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

/// The `X-Slack-Signature` of `body` sent at `timestamp` (what Slack sends; the
/// tests' Slack signs with it).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    format!(
        "v0={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

/// Which of `secrets` signed `body` (its index), given the request's timestamp and
/// signature headers and the time `now` (Unix seconds). Compared in constant time.
pub fn verify(
    secrets: &[&str],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<usize, Unsigned> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(Unsigned::Missing);
    };
    let at: i64 = timestamp.trim().parse().map_err(|_| Unsigned::Forged)?;
    if now.abs_diff(at) > WINDOW_SECS.unsigned_abs() {
        return Err(Unsigned::Stale);
    }
    let given = signature
        .strip_prefix("v0=")
        .and_then(|h| hex::decode(h).ok())
        .ok_or(Unsigned::Forged)?;
    secrets
        .iter()
        .position(|secret| mac(secret, timestamp, body).verify_slice(&given).is_ok())
        .ok_or(Unsigned::Forged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slack's own example (api.slack.com/authentication/verifying-requests-from-slack).
    #[test]
    fn slacks_published_example_verifies() {
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let signature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(secret, "1531420618", body), signature);
        assert_eq!(
            verify(
                &["another", secret],
                Some("1531420618"),
                Some(signature),
                body,
                1_531_420_618 + 10
            ),
            Ok(1)
        );
    }

    #[test]
    fn a_stale_forged_or_unsigned_request_is_refused() {
        let body = b"command=%2Fcoe&text=mine";
        let good = sign("s3cret", "1000", body);
        let check = |ts: Option<&str>, sig: Option<&str>, body: &[u8], now| {
            verify(&["s3cret"], ts, sig, body, now)
        };
        assert_eq!(check(Some("1000"), Some(&good), body, 1300), Ok(0));
        assert_eq!(
            check(Some("1000"), Some(&good), body, 1301),
            Err(Unsigned::Stale)
        );
        assert_eq!(
            check(Some("1000"), Some(&good), body, 699),
            Err(Unsigned::Stale)
        );
        assert_eq!(
            check(
                Some("1000"),
                Some(&good),
                b"command=%2Fcoe&text=report",
                1000
            ),
            Err(Unsigned::Forged)
        );
        assert_eq!(
            check(Some("1001"), Some(&good), body, 1000),
            Err(Unsigned::Forged)
        );
        assert_eq!(
            check(Some("1000"), Some("v0=zz"), body, 1000),
            Err(Unsigned::Forged)
        );
        assert_eq!(check(None, Some(&good), body, 1000), Err(Unsigned::Missing));
        assert_eq!(
            check(Some("-9223372036854775808"), Some(&good), body, 1000),
            Err(Unsigned::Stale),
            "no overflow"
        );
        assert_eq!(
            verify(&[], Some("1000"), Some(&good), body, 1000),
            Err(Unsigned::Forged)
        );
    }
}
