//! Keeping secrets out of what the service prints: the effective settings shown by
//! `coe check-config`, error messages and `Debug` output.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{DatabaseSettings, Settings, SmtpSettings};

/// A secret setting, such as a webhook signing key. Read as a plain string from the
/// file or the environment; its `Debug` prints `***`, so that it cannot reach a log by
/// accident. `expose` is the one way to read it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the code that signs or checks with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Written by hand so that the URL's password is masked.
impl fmt::Debug for DatabaseSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured so that a new field cannot be forgotten here.
        let DatabaseSettings {
            url,
            pool_size,
            connect_timeout_secs,
            busy_timeout_ms,
        } = self;
        f.debug_struct("DatabaseSettings")
            .field("url", &mask_url_password(url))
            .field("pool_size", pool_size)
            .field("connect_timeout_secs", connect_timeout_secs)
            .field("busy_timeout_ms", busy_timeout_ms)
            .finish()
    }
}

/// Written by hand so that the URL's password is masked.
impl fmt::Debug for SmtpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SmtpSettings { url, ca_file } = self;
        f.debug_struct("SmtpSettings")
            .field("url", &url.as_deref().map(mask_url_password))
            .field("ca_file", ca_file)
            .finish()
    }
}

impl Settings {
    /// The effective settings as TOML, with passwords in URLs and secrets masked.
    pub fn to_masked_toml(&self) -> String {
        let mut masked = self.clone();
        masked.database.url = mask_url_password(&masked.database.url);
        masked.smtp.url = masked.smtp.url.as_deref().map(mask_url_password);
        let hide = |s: &mut Option<Secret>| {
            if s.is_some() {
                *s = Some(Secret::from("***"));
            }
        };
        hide(&mut masked.webhooks.pagerduty_secret);
        hide(&mut masked.webhooks.grafana_secret);
        hide(&mut masked.webhooks.sentry_secret);
        hide(&mut masked.metrics.token);
        for channel in &mut masked.chat.channels {
            hide(&mut channel.url);
            hide(&mut channel.access_token);
        }
        for tracker in &mut masked.trackers {
            tracker.token = Secret::from("***");
            hide(&mut tracker.webhook_secret);
        }
        if !masked.auth.oidc.client_secret.expose().is_empty() {
            masked.auth.oidc.client_secret = Secret::from("***");
        }
        toml::to_string_pretty(&masked).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }
}

/// Replaces the password of `scheme://user:password@host` with `***`, and the value
/// of a `password=` query parameter (PostgreSQL's). The user information ends at the
/// last `@`, not at the first `/`, `?` or `#`: a password may hold those unencoded
/// (a URL parser would take them for the path), and must still not be printed.
pub fn mask_url_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let masked = match rest.rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &userinfo[..colon],
                    &rest[at..]
                ),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    };
    mask_password_parameter(&masked)
}

/// `url` with the value of each `password=` parameter replaced by `***`.
fn mask_password_parameter(url: &str) -> String {
    let Some(query_at) = url.find('?') else {
        return url.to_owned();
    };
    let (head, query) = url.split_at(query_at + 1);
    let parts: Vec<String> = query
        .split('&')
        .map(|part| match part.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => part.to_owned(),
        })
        .collect();
    format!("{head}{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_url_password("postgres://coe:s3cret@db:5432/coe"),
            "postgres://coe:***@db:5432/coe"
        );
        assert_eq!(
            mask_url_password("smtp://u:p@h:25?tls=required"),
            "smtp://u:***@h:25?tls=required"
        );
        assert_eq!(mask_url_password("sqlite://coe.db"), "sqlite://coe.db");
        assert_eq!(
            mask_url_password("postgres://coe@db/coe"),
            "postgres://coe@db/coe"
        );
        // Unencoded `/`, `?` and `#` in a password are still the password.
        for (url, masked) in [
            ("postgres://coe:pa/ss@db/coe", "postgres://coe:***@db/coe"),
            ("smtp://u:p#q@h:25", "smtp://u:***@h:25"),
            ("postgres://coe:a?b@db/coe", "postgres://coe:***@db/coe"),
            (
                "postgres://db/coe?sslmode=disable&password=x",
                "postgres://db/coe?sslmode=disable&password=***",
            ),
        ] {
            assert_eq!(mask_url_password(url), masked, "{url}");
        }
    }

    fn settings_with_secrets() -> Settings {
        let mut settings = Settings::default();
        settings.database.url = "postgres://coe:db-pass@db:5432/coe".into();
        settings.smtp.url = Some("smtps://mailer:smtp-pass@mail.example.com".into());
        settings.webhooks.pagerduty_secret = Some("pd-key".into());
        settings.webhooks.grafana_secret = Some("grafana-key".into());
        settings.webhooks.sentry_secret = Some("sentry-key".into());
        settings
    }

    const SECRET_VALUES: [&str; 5] = [
        "db-pass",
        "smtp-pass",
        "pd-key",
        "grafana-key",
        "sentry-key",
    ];

    #[test]
    fn debug_output_of_the_settings_shows_no_secret() {
        let settings = settings_with_secrets();
        for shown in [format!("{settings:?}"), format!("{settings:#?}")] {
            for secret in SECRET_VALUES {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
            assert!(shown.contains("postgres://coe:***@db:5432/coe"), "{shown}");
        }
    }

    #[test]
    fn check_config_output_masks_every_secret() {
        let text = settings_with_secrets().to_masked_toml();
        for secret in SECRET_VALUES {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("pagerduty_secret = \"***\""), "{text}");
        assert!(
            text.contains("smtps://mailer:***@mail.example.com"),
            "{text}"
        );
    }

    #[test]
    fn a_secret_is_read_and_written_as_a_plain_string() {
        let hooks: super::super::WebhookSettings =
            toml::from_str("sentry_secret = \"s3\"").expect("parses");
        assert_eq!(hooks.sentry_secret.as_ref().map(Secret::expose), Some("s3"));
        let text = toml::to_string(&hooks).expect("renders");
        assert!(text.contains("sentry_secret = \"s3\""), "{text}");
    }
}
