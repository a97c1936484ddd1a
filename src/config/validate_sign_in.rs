//! Checks of the sign-in settings (`[auth]`, `[auth.oidc]`) that types alone cannot
//! express; `validate.rs` calls them. Each error names the key, the value and what was
//! expected.

use super::https_or_loopback;
use super::{ConfigError, Settings};

impl Settings {
    pub(super) fn validate_auth(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        if let Some(token) = &self.metrics.token {
            if token.expose().trim().len() < 16 {
                return Err(invalid(
                    "metrics.token",
                    "***",
                    "at least 16 characters (an empty or short token would leave /metrics open or guessable); unset it to leave /metrics without a token",
                ));
            }
        }
        if let Some(listen) = &self.metrics.listen {
            if listen.parse::<std::net::SocketAddr>().is_err() {
                return Err(invalid(
                    "metrics.listen",
                    listen,
                    "an IP address and port such as 10.0.0.5:9464 (a private interface Prometheus reaches)",
                ));
            }
            // Port 0 (any free port) is two ports, not one.
            if listen == &self.listen && !listen.ends_with(":0") {
                return Err(invalid(
                    "metrics.listen",
                    listen,
                    "an address other than `listen` (which serves /metrics already)",
                ));
            }
            if !super::listens_on_loopback(listen) && self.metrics.token.is_none() {
                return Err(invalid(
                    "metrics.listen",
                    listen,
                    "metrics.token as well, when it is not a loopback address: whoever reaches the address would read the figures",
                ));
            }
        }
        let a = &self.auth;
        for proxy in &a.trusted_proxies {
            if super::parse_proxy(proxy).is_none() {
                return Err(invalid(
                    "auth.trusted_proxies",
                    proxy,
                    "a list of IP addresses or CIDR ranges such as 10.0.0.0/8",
                ));
            }
        }
        if a.mode == super::AuthMode::Proxy && a.trusted_proxies.is_empty() {
            return Err(invalid(
                "auth.trusted_proxies",
                "[]",
                "at least one proxy with auth.mode = \"proxy\" (otherwise every sign-in is refused)",
            ));
        }
        if actix_web::http::header::HeaderName::from_bytes(a.proxy_header.as_bytes()).is_err() {
            return Err(invalid(
                "auth.proxy_header",
                &a.proxy_header,
                "an HTTP header name",
            ));
        }
        for domain in &a.allowed_domains {
            let ok = !domain.is_empty()
                && !domain.contains('@')
                && domain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !ok {
                return Err(invalid(
                    "auth.allowed_domains",
                    domain,
                    "a list of domain names such as example.com",
                ));
            }
        }
        let (min, max) = (300, 366 * 24 * 3600);
        for (name, secs) in [
            ("auth.session_idle_secs", a.session_idle_secs),
            ("auth.session_max_secs", a.session_max_secs),
        ] {
            if !(min..=max).contains(&secs) {
                return Err(invalid(
                    name,
                    &secs.to_string(),
                    "300 (5 minutes) to 31622400 (366 days)",
                ));
            }
        }
        if a.session_idle_secs > a.session_max_secs {
            return Err(invalid(
                "auth.session_idle_secs",
                &a.session_idle_secs.to_string(),
                "at most auth.session_max_secs",
            ));
        }
        if a.mode == super::AuthMode::Oidc {
            self.validate_oidc()?;
        }
        for (name, n) in [
            ("auth.sign_in_per_address", a.sign_in_per_address),
            ("auth.sign_in_per_client", a.sign_in_per_client),
            ("auth.failed_tokens_per_client", a.failed_tokens_per_client),
        ] {
            if n == 0 {
                return Err(invalid(name, "0", "at least 1"));
            }
        }
        Ok(())
    }

    /// `auth.oidc`, when it is the way in: an issuer URL (https, or plain http on
    /// loopback for a trial), a client id, `openid` among the scopes.
    fn validate_oidc(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let o = &self.auth.oidc;
        let issuer = url::Url::parse(&o.issuer).ok();
        let usable = issuer
            .as_ref()
            .is_some_and(|u| u.query().is_none() && u.fragment().is_none() && https_or_loopback(u));
        if !usable {
            return Err(invalid(
                "auth.oidc.issuer",
                &o.issuer,
                "the provider's issuer URL with auth.mode = \"oidc\", such as https://login.example.com/realms/eng (https; plain http only on loopback), without query or fragment",
            ));
        }
        if o.client_id.trim().is_empty() {
            return Err(invalid(
                "auth.oidc.client_id",
                "",
                "the client id the provider gave coe, with auth.mode = \"oidc\"",
            ));
        }
        if !o.scopes.iter().any(|s| s == "openid") {
            return Err(invalid(
                "auth.oidc.scopes",
                &o.scopes.join(" "),
                "a list of scopes that includes \"openid\"",
            ));
        }
        if let Some(bad) = o
            .scopes
            .iter()
            .find(|s| s.is_empty() || s.contains(char::is_whitespace))
        {
            return Err(invalid(
                "auth.oidc.scopes",
                bad,
                "a list of scopes, one word each",
            ));
        }
        if o.groups_claim.trim().is_empty() {
            return Err(invalid(
                "auth.oidc.groups_claim",
                "",
                "the name of the ID-token claim that lists groups, such as groups",
            ));
        }
        if o.name.trim().is_empty() || o.name.chars().count() > 60 {
            return Err(invalid(
                "auth.oidc.name",
                &o.name,
                "the provider's name for the sign-in button, 1 to 60 characters",
            ));
        }
        Ok(())
    }
}
