//! Layering of the sources: defaults → TOML file → `COE_*` environment → flags.
//! Errors name the key and where its value came from.

use std::path::Path;

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;

use super::{ConfigError, Overrides, Settings};

/// Sections of the settings file. An environment variable `COE_<SECTION>_<KEY>` maps to
/// `<section>.<key>`; any other `COE_<KEY>` maps to a top-level key.
const SECTIONS: &[&str] = &[
    "auth",
    "database",
    "server",
    "log",
    "smtp",
    "email",
    "policy",
    "incidents",
    "webhooks",
    "events",
    "severity",
    "coe",
    "actions",
    "ownership",
    "org",
    "reminders",
    "digest",
    "metrics",
    "chat",
    "scim",
];

/// Environment variables with the `COE_` prefix that are not settings.
const NOT_SETTINGS: &[&str] = &["config"];

impl Settings {
    /// Loads the settings: defaults, then the file at `path` (if any), then `COE_*`
    /// environment variables, then `overrides`. Validates the result.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Settings, ConfigError> {
        let figment = Self::figment(path, overrides)?;
        let mut settings: Settings = figment.extract().map_err(|e| describe_figment_error(&e))?;
        // Links in emails must reach this server: with no `public_url` set in the file
        // or the environment, it follows the address the server listens on.
        let public_url_set = figment
            .find_metadata("public_url")
            .is_some_and(|meta| !describe_origin(meta).is_empty());
        if !public_url_set {
            settings.public_url = super::public_url_for(&settings.listen);
        }
        settings
            .validate()
            .map_err(|e| e.with_origin(|key| origin_of(&figment, key)))?;
        Ok(settings)
    }

    fn figment(path: Option<&Path>, overrides: &Overrides) -> Result<Figment, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = path {
            // Read it ourselves: figment silently ignores a missing file, a typo'd path must not.
            std::fs::File::open(path).map_err(|source| ConfigError::File {
                path: path.to_owned(),
                source,
            })?;
            figment = figment.merge(Toml::file_exact(path));
        }
        figment = figment.merge(
            Env::prefixed("COE_")
                .ignore(NOT_SETTINGS)
                .map(|key| env_key_to_setting(&key.as_str().to_ascii_lowercase()).into()),
        );
        let mut cli = serde_json::Map::new();
        if let Some(listen) = &overrides.listen {
            cli.insert("listen".into(), listen.clone().into());
        }
        if let Some(url) = &overrides.database_url {
            cli.insert("database".into(), serde_json::json!({ "url": url }));
        }
        if let Some(format) = overrides.log_format {
            cli.insert("log".into(), serde_json::json!({ "format": format }));
        }
        if !cli.is_empty() {
            figment = figment.merge(Serialized::defaults(cli).profile(figment::Profile::Default));
        }
        Ok(figment)
    }
}

impl ConfigError {
    fn with_origin(self, origin_of: impl Fn(&str) -> String) -> Self {
        match self {
            ConfigError::Invalid {
                key,
                value,
                expected,
                ..
            } => ConfigError::Invalid {
                key,
                origin: origin_of(key),
                value,
                expected,
            },
            other => other,
        }
    }
}

/// Sections inside sections: `COE_AUTH_OIDC_ISSUER` → `auth.oidc.issuer`.
const SUBSECTIONS: &[(&str, &str)] = &[("auth_oidc", "auth.oidc")];

/// `database_url` → `database.url`; `listen` → `listen`.
fn env_key_to_setting(key: &str) -> String {
    for (prefix, path) in SUBSECTIONS {
        if let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')) {
            return format!("{path}.{rest}");
        }
    }
    for section in SECTIONS {
        if let Some(rest) = key.strip_prefix(section).and_then(|r| r.strip_prefix('_')) {
            return format!("{section}.{rest}");
        }
    }
    key.to_owned()
}

fn origin_of(figment: &Figment, key: &str) -> String {
    figment
        .find_metadata(key)
        .map(describe_origin)
        .unwrap_or_default()
}

/// " (from TOML file /etc/coe.toml)", " (from `COE_` environment variable(s))", or
/// nothing for defaults and flags.
fn describe_origin(meta: &figment::Metadata) -> String {
    match &meta.source {
        Some(figment::Source::File(path)) => format!(" (from {} {})", meta.name, path.display()),
        _ if meta.name.contains("Env") || meta.name.contains("environment") => {
            format!(" (from {})", meta.name)
        }
        _ => String::new(),
    }
}

fn describe_figment_error(error: &figment::Error) -> ConfigError {
    let mut messages = Vec::new();
    for e in error.clone() {
        let key = e.path.join(".");
        let origin = e.metadata.as_ref().map(describe_origin).unwrap_or_default();
        let what = e.kind.to_string();
        messages.push(if key.is_empty() {
            format!("{what}{origin}")
        } else {
            format!("setting `{key}`{origin}: {what}")
        });
    }
    ConfigError::Parse(messages.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_keys_map_to_sections() {
        assert_eq!(env_key_to_setting("database_url"), "database.url");
        assert_eq!(
            env_key_to_setting("server_max_body_bytes"),
            "server.max_body_bytes"
        );
        assert_eq!(env_key_to_setting("listen"), "listen");
        assert_eq!(env_key_to_setting("public_url"), "public_url");
        assert_eq!(env_key_to_setting("auth_oidc_issuer"), "auth.oidc.issuer");
        assert_eq!(
            env_key_to_setting("auth_oidc_admin_groups"),
            "auth.oidc.admin_groups"
        );
        assert_eq!(
            env_key_to_setting("auth_allowed_domains"),
            "auth.allowed_domains"
        );
    }
}
