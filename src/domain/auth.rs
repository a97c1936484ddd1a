//! Who may sign in to the web pages, and the rules of links and sessions. Pure: the
//! services keep the state, these decide.

use chrono::{Duration, NaiveDateTime};

/// How long an emailed sign-in link works (once).
pub const LINK_LIFETIME_MINUTES: i64 = 15;

/// The window the sign-in rate limits count requests in.
pub const RATE_WINDOW_MINUTES: i64 = 15;

/// Whether `email` may sign in: people in the directory may, and so may addresses of
/// the allowed domains. With `open` (a development install that names no domain),
/// anyone may: a new user and their colleagues sign in with no set-up.
pub fn may_sign_in(
    email: &str,
    in_directory: bool,
    allowed_domains: &[String],
    open: bool,
) -> bool {
    if in_directory || open {
        return true;
    }
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    allowed_domains
        .iter()
        .any(|d| d.eq_ignore_ascii_case(domain))
}

/// How far (in edits: a letter added, dropped, changed, or two swapped) a typed
/// address or domain may be from a known one to be taken for a slip of the keyboard.
const SLIP: usize = 2;

/// The name in `known` nearest to `typed` (case aside), when it is a slip away (and
/// not `typed` itself): an address (`maria@exmaple.com` → `maria@example.com`), a
/// team (`paymnts` → `payments`).
pub fn nearest<'a>(typed: &str, known: &'a [String]) -> Option<&'a str> {
    let typed = typed.trim().to_ascii_lowercase();
    known
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&typed, &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(d, _)| (1..=SLIP).contains(d))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// The address in `directory` nearest to `email`, when it is a slip away.
pub fn nearest_address<'a>(email: &str, directory: &'a [String]) -> Option<&'a str> {
    nearest(email, directory)
}

/// `email` with its domain replaced by the known domain it is a slip away from, when
/// its own domain is not known: `maria@exmaple.com` → `maria@example.com`.
pub fn with_nearest_domain(email: &str, domains: &[String]) -> Option<String> {
    let (local, domain) = email.rsplit_once('@')?;
    let domain = domain.to_ascii_lowercase();
    if domains.iter().any(|d| d.eq_ignore_ascii_case(&domain)) {
        return None;
    }
    domains
        .iter()
        .map(|known| {
            (
                strsim::damerau_levenshtein(&domain, &known.to_ascii_lowercase()),
                known,
            )
        })
        .filter(|(d, _)| (1..=SLIP).contains(d))
        .min_by_key(|(d, _)| *d)
        .map(|(_, known)| format!("{local}@{}", known.to_ascii_lowercase()))
}

/// A path to go to after signing in, if it stays on this site: it starts with one `/`
/// (not `//` or `/\`, which browsers read as another host), holds no control
/// characters, and is at most 2,000 bytes.
pub fn safe_next(path: &str) -> Option<&str> {
    let ok = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && path.len() <= 2000
        && !path.chars().any(char::is_control);
    ok.then_some(path)
}

/// Why a sign-in request is refused by the rate limits, with when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooMany {
    pub what: &'static str,
    pub retry_after_secs: i64,
}

/// What a sign-in request may do, within the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkAllowance {
    /// Email a link.
    Send,
    /// The address had its links for this window: email nothing, and answer exactly as
    /// when a link is sent, so that nobody learns of, or is refused for, requests
    /// somebody else made for their address (the links sent already keep working).
    Withhold,
}

/// Checks the counts of sign-in requests in the last `RATE_WINDOW_MINUTES` (this one
/// included) against the limits. Only the client's own requests refuse it (429): the
/// address's limit bounds the emails sent to it, never what its owner is told.
pub fn within_limits(
    by_address: i64,
    by_client: i64,
    per_address: u32,
    per_client: u32,
) -> Result<LinkAllowance, TooMany> {
    if by_client > i64::from(per_client) {
        return Err(TooMany {
            what: "from this address",
            retry_after_secs: RATE_WINDOW_MINUTES * 60,
        });
    }
    if by_address > i64::from(per_address) {
        return Ok(LinkAllowance::Withhold);
    }
    Ok(LinkAllowance::Send)
}

/// Whether a session is still good: not ended, used within `idle_secs`, and younger
/// than `max_secs`.
pub fn session_alive(
    created_at: NaiveDateTime,
    last_seen_at: NaiveDateTime,
    ended: bool,
    now: NaiveDateTime,
    idle_secs: u64,
    max_secs: u64,
) -> bool {
    // Past the end of time counts as "not yet".
    let before = |start: NaiveDateTime, secs: u64| {
        i64::try_from(secs)
            .ok()
            .and_then(Duration::try_seconds)
            .and_then(|d| start.checked_add_signed(d))
            .is_none_or(|end| now < end)
    };
    !ended && before(last_seen_at, idle_secs) && before(created_at, max_secs)
}

/// Why an OpenID Provider's word about a person is not enough to sign them in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unvouched {
    #[error("the provider names no email address, neither in the ID token nor at its UserInfo endpoint (ask for the `email` scope)")]
    NoEmail,
    #[error("the provider has not verified {0} (it does not mark the address as verified)")]
    Unverified(String),
    #[error("the provider does not say it verified {0} (no email_verified claim; an admin may trust its email claims with auth.oidc.require_verified_email = false)")]
    NotSaidVerified(String),
    #[error("the provider's email claim is not a usable address: {0}")]
    Unusable(String),
}

/// The address an OpenID Provider vouches for: its `email` claim, when the provider
/// says it verified it. `email_verified = false` is always refused; a provider that
/// leaves the claim out (Entra ID) is trusted only when `require_verified` is off
/// (`auth.oidc.require_verified_email = false`, an admin's decision).
pub fn vouched_address(
    email: Option<&str>,
    email_verified: Option<bool>,
    require_verified: bool,
) -> Result<crate::domain::EmailAddress, Unvouched> {
    let email = email
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .ok_or(Unvouched::NoEmail)?;
    match email_verified {
        Some(false) => return Err(Unvouched::Unverified(email.to_owned())),
        None if require_verified => return Err(Unvouched::NotSaidVerified(email.to_owned())),
        _ => {}
    }
    crate::domain::EmailAddress::parse(email).map_err(Unvouched::Unusable)
}

/// Whether a person is an admin by their groups at the provider: `None` when no
/// admin group is named (the directory decides), else whether they are in one.
pub fn admin_by_groups(groups: &[String], admin_groups: &[String]) -> Option<bool> {
    if admin_groups.is_empty() {
        return None;
    }
    Some(groups.iter().any(|g| admin_groups.contains(g)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn t(h: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 12, 1)
            .and_then(|d| d.and_hms_opt(h, 0, 0))
            .expect("valid")
    }

    #[test]
    fn the_directory_and_allowed_domains_may_sign_in() {
        let domains = vec!["example.com".to_owned()];
        assert!(may_sign_in("ana@elsewhere.org", true, &domains, false));
        assert!(may_sign_in("bo@EXAMPLE.com", false, &domains, false));
        assert!(!may_sign_in("eve@evil.test", false, &domains, false));
        assert!(!may_sign_in(
            "eve@example.com.evil.test",
            false,
            &domains,
            false
        ));
        assert!(may_sign_in("anyone@anywhere.test", false, &[], true));
    }

    #[test]
    fn a_slip_of_the_keyboard_finds_the_address_meant() {
        let directory = vec!["maria@example.com".to_owned(), "bo@example.com".to_owned()];
        let domains = vec!["example.com".to_owned()];
        assert_eq!(
            nearest_address("maria@exmaple.com", &directory),
            Some("maria@example.com")
        );
        assert_eq!(
            nearest_address("maria@example.com", &directory),
            None,
            "itself"
        );
        assert_eq!(nearest_address("zed@elsewhere.org", &directory), None);
        assert_eq!(
            with_nearest_domain("maria@exmaple.com", &domains).as_deref(),
            Some("maria@example.com")
        );
        assert_eq!(
            with_nearest_domain("new@example.com", &domains),
            None,
            "known"
        );
        assert_eq!(with_nearest_domain("x@other.org", &domains), None, "far");
    }

    #[test]
    fn only_paths_of_this_site_are_followed() {
        assert_eq!(safe_next("/coes/1?x=2"), Some("/coes/1?x=2"));
        for bad in [
            "//evil.test",
            "/\\evil.test",
            "https://evil.test",
            "coes",
            "/a\nb",
            "",
        ] {
            assert_eq!(safe_next(bad), None, "{bad:?}");
        }
        assert_eq!(safe_next(&format!("/{}", "a".repeat(2000))), None);
    }

    #[test]
    fn limits_count_per_client_and_per_address() {
        assert_eq!(within_limits(5, 20, 5, 20), Ok(LinkAllowance::Send));
        // Requests anyone made for an address never refuse its owner: past the
        // address's allowance, no email, the same answer.
        assert_eq!(within_limits(6, 1, 5, 20), Ok(LinkAllowance::Withhold));
        assert_eq!(
            within_limits(1, 21, 5, 20).map_err(|e| e.what),
            Err("from this address")
        );
    }

    #[test]
    fn sessions_end_when_idle_old_or_ended() {
        let day = 24 * 3600;
        assert!(session_alive(t(0), t(1), false, t(2), day, 30 * day));
        assert!(!session_alive(t(0), t(1), true, t(2), day, 30 * day));
        assert!(!session_alive(t(0), t(1), false, t(3), 3600, 30 * day));
        assert!(!session_alive(t(0), t(10), false, t(11), day, 5 * 3600));
        assert!(!session_alive(t(0), t(1), false, t(2), u64::MAX, 0));
    }

    #[test]
    fn the_provider_vouches_for_a_verified_or_unqualified_address_only() {
        assert_eq!(
            vouched_address(Some(" ana@example.com "), Some(true), true)
                .expect("vouched")
                .as_str(),
            "ana@example.com"
        );
        assert_eq!(
            vouched_address(Some("ana@example.com"), None, true),
            Err(Unvouched::NotSaidVerified("ana@example.com".into()))
        );
        assert!(vouched_address(Some("ana@example.com"), None, false).is_ok());
        assert!(vouched_address(Some("ana@example.com"), Some(false), false).is_err());
        assert_eq!(
            vouched_address(Some("ana@example.com"), Some(false), true),
            Err(Unvouched::Unverified("ana@example.com".into()))
        );
        assert_eq!(
            vouched_address(None, Some(true), true),
            Err(Unvouched::NoEmail)
        );
        assert_eq!(
            vouched_address(Some("  "), Some(true), true),
            Err(Unvouched::NoEmail)
        );
        assert!(matches!(
            vouched_address(Some("not an address"), Some(true), true),
            Err(Unvouched::Unusable(_))
        ));
    }

    #[test]
    fn admin_follows_the_groups_only_when_admin_groups_are_named() {
        let groups = vec!["eng".to_owned(), "coe-admins".to_owned()];
        assert_eq!(admin_by_groups(&groups, &[]), None);
        assert_eq!(admin_by_groups(&groups, &["coe-admins".into()]), Some(true));
        assert_eq!(admin_by_groups(&groups, &["sre".into()]), Some(false));
        assert_eq!(admin_by_groups(&[], &["sre".into()]), Some(false));
    }
}
