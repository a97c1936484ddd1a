//! Keeping secrets out of what the service prints: the effective settings shown by
//! `coe check-config`, error messages and logs.

use super::Settings;

impl Settings {
    /// The effective settings as TOML, with passwords in URLs masked.
    pub fn to_masked_toml(&self) -> String {
        let mut masked = self.clone();
        masked.database.url = mask_url_password(&masked.database.url);
        masked.smtp.url = masked.smtp.url.as_deref().map(mask_url_password);
        let hide = |s: &mut Option<String>| {
            if s.is_some() {
                *s = Some("***".into());
            }
        };
        hide(&mut masked.webhooks.pagerduty_secret);
        hide(&mut masked.webhooks.grafana_secret);
        hide(&mut masked.webhooks.sentry_secret);
        toml::to_string_pretty(&masked).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }
}

/// Replaces the password of `scheme://user:password@host` with `***`.
pub fn mask_url_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
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
    }
}
