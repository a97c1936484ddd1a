//! Keeping secrets out of what the service prints: the effective settings shown by
//! `coe check-config`, error messages and `Debug` output.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{DatabaseSettings, Settings, SmtpSettings};

/// A secret setting, such as a webhook signing key. Read as a plain string from the
/// file or the environment, or by reference where secret stores put secrets:
/// `{ file = "/run/secrets/jira" }` (the file's text, without its final line break) or
/// `{ env = "JIRA_TOKEN" }` (that environment variable), read once when the settings
/// load. Its `Debug` prints `***`, so that it cannot reach a log by accident. `expose`
/// is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

thread_local! {
    /// Set while `Settings::to_masked_toml` writes: every `Secret` then serializes as
    /// `***`, so that a secret setting added later cannot be printed by forgetting it.
    static MASKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match MASKING.with(std::cell::Cell::get) && !self.0.is_empty() {
            true => serializer.serialize_str("***"),
            false => serializer.serialize_str(&self.0),
        }
    }
}

/// `value` as JSON with every `Secret` in it that is set written `***`: where a
/// secret is, found by its type, so that one added later cannot be missed (coe seals
/// those it keeps in the database by this).
pub fn to_masked_json<T: Serialize>(value: &T) -> serde_json::Result<serde_json::Value> {
    MASKING.with(|m| m.set(true));
    let json = serde_json::to_value(value);
    MASKING.with(|m| m.set(false));
    json
}

/// At most this many bytes are read from a secret's file: a secret, not a document
/// (a path to the wrong file fails clearly instead of loading it).
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a string, or a reference: { file = \"/path/to/secret\" } or \
                     { env = \"VARIABLE\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Secret, E> {
                Ok(Secret(value.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Secret, E> {
                Ok(Secret(value))
            }
            // An environment variable of digits (`COE_METRICS_TOKEN=1234…`) reaches here
            // as a number: it is the secret as written.
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Secret, E> {
                Ok(Secret(value.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Secret, E> {
                Ok(Secret(value.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Secret, A::Error> {
                use serde::de::Error;
                let Some((kind, name)) = map.next_entry::<String, String>()? else {
                    return Err(A::Error::custom(
                        "an empty reference: give { file = \"…\" } or { env = \"…\" }",
                    ));
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(A::Error::custom(
                        "a reference names one place: { file = \"…\" } or { env = \"…\" }",
                    ));
                }
                resolve(&kind, &name).map(Secret).map_err(A::Error::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The secret a reference names: a file's text or an environment variable's value.
fn resolve(kind: &str, name: &str) -> Result<String, String> {
    match kind {
        "file" => {
            use std::io::Read;
            let file = std::fs::File::open(name)
                .map_err(|e| format!("cannot read the secret's file {name}: {e}"))?;
            let mut text = String::new();
            file.take(MAX_SECRET_FILE_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the secret's file {name}: {e}"))?;
            if text.len() as u64 > MAX_SECRET_FILE_BYTES {
                return Err(format!(
                    "the secret's file {name} is over {} KiB: is it the right file?",
                    MAX_SECRET_FILE_BYTES / 1024
                ));
            }
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.is_empty() {
                return Err(format!("the secret's file {name} is empty"));
            }
            Ok(text.to_owned())
        }
        "env" => match std::env::var(name) {
            Ok(value) if !value.is_empty() => Ok(value),
            Ok(_) => Err(format!("the environment variable {name} is empty")),
            Err(_) => Err(format!("the environment variable {name} is not set")),
        },
        other => Err(format!(
            "unknown reference `{other}`: give {{ file = \"…\" }} or {{ env = \"…\" }}"
        )),
    }
}

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
        // Every `Secret` is masked, those named above and any other.
        MASKING.with(|m| m.set(true));
        let text =
            toml::to_string_pretty(&masked).unwrap_or_else(|e| format!("# cannot render: {e}\n"));
        MASKING.with(|m| m.set(false));
        text
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
        settings.secret_key = Some("c2VhbGluZy1rZXk=".into());
        settings.previous_secret_keys = vec!["b2xkLWtleQ==".into()];
        settings.chat.channels = vec![toml::from_str(
            "name = \"incidents\"\nkind = \"slack\"\nurl = \"https://hooks.slack.com/x\"\n\
             read_token = \"xoxb-read-token\"\nread_channel = \"C1\"",
        )
        .expect("a channel")];
        settings
    }

    const SECRET_VALUES: [&str; 8] = [
        "db-pass",
        "smtp-pass",
        "pd-key",
        "grafana-key",
        "sentry-key",
        "c2VhbGluZy1rZXk=",
        "b2xkLWtleQ==",
        "xoxb-read-token",
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
    fn a_secret_is_read_from_the_file_or_variable_it_names() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("jira");
        std::fs::write(&path, "from-the-file\n").expect("write");
        let text = format!("sentry_secret = {{ file = \"{}\" }}", path.display());
        let hooks: super::super::WebhookSettings = toml::from_str(&text).expect("parses");
        assert_eq!(
            hooks.sentry_secret.as_ref().map(Secret::expose),
            Some("from-the-file")
        );

        // PATH is set wherever tests run; a variable is read as it is.
        let hooks: super::super::WebhookSettings =
            toml::from_str("sentry_secret = { env = \"PATH\" }").expect("parses");
        assert_eq!(
            hooks.sentry_secret.as_ref().map(Secret::expose),
            std::env::var("PATH").ok().as_deref()
        );

        for (text, says) in [
            (
                "sentry_secret = { file = \"/nonexistent/coe-secret\" }".to_owned(),
                "cannot read the secret's file /nonexistent/coe-secret",
            ),
            (
                "sentry_secret = { env = \"COE_TEST_NO_SUCH_VARIABLE_EVER\" }".to_owned(),
                "COE_TEST_NO_SUCH_VARIABLE_EVER is not set",
            ),
            (
                "sentry_secret = { vault = \"x\" }".to_owned(),
                "unknown reference `vault`",
            ),
            (
                format!(
                    "sentry_secret = {{ file = \"{}\", env = \"PATH\" }}",
                    path.display()
                ),
                "names one place",
            ),
        ] {
            let error = toml::from_str::<super::super::WebhookSettings>(&text)
                .expect_err(&text)
                .to_string();
            assert!(error.contains(says), "{text}: {error}");
            assert!(!error.contains("from-the-file"), "{error}");
        }
        std::fs::write(&path, "\n").expect("write");
        let text = format!("sentry_secret = {{ file = \"{}\" }}", path.display());
        let error = toml::from_str::<super::super::WebhookSettings>(&text)
            .expect_err("empty")
            .to_string();
        assert!(error.contains("is empty"), "{error}");
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
