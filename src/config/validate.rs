//! Checks of what types alone cannot express: addresses, URLs, ranges. Each error
//! names the key, the value and what was expected.

use std::net::ToSocketAddrs;

use super::database::DatabaseUrl;
use super::secret::mask_url_password;
use super::{validate_channels, ConfigError, Mode, Settings, SMTP_TIMEOUT};
use crate::domain::EmailAddress;

/// Longest `incidents.reopen_window_secs`: an alert silent for a month is a new incident.
const MAX_REOPEN_WINDOW_SECS: u64 = 30 * 86_400;
/// Longest `incidents.same_outage_window_secs`.
const MAX_SAME_OUTAGE_WINDOW_SECS: u64 = 86_400;

impl Settings {
    /// Checks what types alone cannot: addresses, URLs, ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let resolves = self
            .listen
            .to_socket_addrs()
            .is_ok_and(|mut addrs| addrs.next().is_some());
        if !resolves {
            return Err(invalid(
                "listen",
                &self.listen,
                "HOST:PORT, e.g. 127.0.0.1:8080",
            ));
        }
        if !(self.public_url.starts_with("http://") || self.public_url.starts_with("https://")) {
            return Err(invalid(
                "public_url",
                &self.public_url,
                "an http:// or https:// URL",
            ));
        }
        if let Err(e) = DatabaseUrl::parse(&self.database.url) {
            return Err(ConfigError::Invalid {
                key: "database.url",
                origin: String::new(),
                value: mask_url_password(&self.database.url),
                expected: e.to_string(),
            });
        }
        self.actions.validate()?;
        if let Some(slot) = &self.coe.review_slot {
            if let Err(problem) = crate::domain::meeting::parse_slot(slot) {
                return Err(invalid("coe.review_slot", slot, &problem));
            }
        }
        if !(15..=480).contains(&self.coe.review_minutes) {
            return Err(invalid(
                "coe.review_minutes",
                &self.coe.review_minutes.to_string(),
                "15 to 480 minutes",
            ));
        }
        let share = self.policy.error_budget_share;
        if !(share > 0.0 && share <= 1.0) {
            return Err(invalid(
                "policy.error_budget_share",
                &share.to_string(),
                "a share above 0 and at most 1 (0.2: a fifth of the budget)",
            ));
        }
        if self.database.pool_size == 0 {
            return Err(invalid("database.pool_size", "0", "at least 1"));
        }
        for (key, secs) in [
            (
                "server.header_timeout_secs",
                self.server.header_timeout_secs,
            ),
            ("server.body_timeout_secs", self.server.body_timeout_secs),
        ] {
            if !(1..=3600).contains(&secs) {
                return Err(invalid(key, &secs.to_string(), "1 to 3600 seconds"));
            }
        }
        if !(1..=60_000).contains(&self.server.search_timeout_ms) {
            return Err(invalid(
                "server.search_timeout_ms",
                &self.server.search_timeout_ms.to_string(),
                "1 to 60000 milliseconds",
            ));
        }
        if !(self.server.figures_every_secs == 0
            || (10..=86_400).contains(&self.server.figures_every_secs))
        {
            return Err(invalid(
                "server.figures_every_secs",
                &self.server.figures_every_secs.to_string(),
                "0 (no figures job) or 10 to 86400",
            ));
        }
        if self.scim.requests_at_once == 0 {
            return Err(invalid("scim.requests_at_once", "0", "at least 1"));
        }
        if self.server.searches_at_once == 0 {
            return Err(invalid("server.searches_at_once", "0", "at least 1"));
        }
        if self.server.drain_secs > 300 {
            return Err(invalid(
                "server.drain_secs",
                &self.server.drain_secs.to_string(),
                "0 to 300 seconds",
            ));
        }
        let replica = &self.server.replica_name;
        if replica.chars().count() > 200 || replica.chars().any(char::is_control) {
            return Err(invalid(
                "server.replica_name",
                replica,
                "at most 200 characters, with no control characters",
            ));
        }
        let keep = self.events.keep_days;
        if keep != 0 && !(30..=36_500).contains(&keep) {
            return Err(invalid(
                "events.keep_days",
                &keep.to_string(),
                "0 (keep every event) or 30 to 36500 days",
            ));
        }
        if !(1..=3650).contains(&self.webhooks.keep_raw_days) {
            return Err(invalid(
                "webhooks.keep_raw_days",
                &self.webhooks.keep_raw_days.to_string(),
                "1 to 3650 days",
            ));
        }
        if self.server.max_body_bytes < 1024 {
            return Err(invalid(
                "server.max_body_bytes",
                &self.server.max_body_bytes.to_string(),
                "at least 1024",
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return Err(ConfigError::Invalid {
                key: "log.level",
                origin: String::new(),
                value: self.log.level.clone(),
                expected: format!("a tracing filter such as `info` ({e})"),
            });
        }
        if self.incidents.reopen_window_secs > MAX_REOPEN_WINDOW_SECS {
            return Err(invalid(
                "incidents.reopen_window_secs",
                &self.incidents.reopen_window_secs.to_string(),
                "at most 2592000 (30 days)",
            ));
        }
        if self.incidents.same_outage_window_secs > MAX_SAME_OUTAGE_WINDOW_SECS {
            return Err(invalid(
                "incidents.same_outage_window_secs",
                &self.incidents.same_outage_window_secs.to_string(),
                "at most 86400 (a day)",
            ));
        }
        if let Some(label) = self
            .incidents
            .same_outage_labels
            .iter()
            .find(|l| l.is_empty() || l.len() > 200 || l.chars().any(char::is_control))
        {
            return Err(invalid(
                "incidents.same_outage_labels",
                label,
                "label names of 1 to 200 characters, without control characters",
            ));
        }
        if let Some(pattern) = self.scim.team_groups.iter().find(|g| {
            g.trim().is_empty()
                || g.trim() == "*"
                || g.len() > 200
                || g.chars().any(char::is_control)
        }) {
            return Err(invalid(
                "scim.team_groups",
                pattern,
                "group names (or prefixes ending in *) of 1 to 200 characters",
            ));
        }
        if let Some(to) = &self.scim.leavers_work_to {
            if let Err(problem) = crate::domain::EmailAddress::parse(to) {
                return Err(invalid("scim.leavers_work_to", to, &problem));
            }
        }
        if self.webhooks.max_body_bytes < 1024 {
            return Err(invalid(
                "webhooks.max_body_bytes",
                &self.webhooks.max_body_bytes.to_string(),
                "at least 1024",
            ));
        }
        if actix_web::http::header::HeaderName::from_bytes(
            self.webhooks.grafana_timestamp_header.as_bytes(),
        )
        .is_err()
        {
            return Err(invalid(
                "webhooks.grafana_timestamp_header",
                &self.webhooks.grafana_timestamp_header,
                "an HTTP header name",
            ));
        }
        if self.coe.max_section_bytes < 1024 {
            return Err(invalid(
                "coe.max_section_bytes",
                &self.coe.max_section_bytes.to_string(),
                "at least 1024",
            ));
        }
        for (service, owner) in &self.ownership.services {
            if EmailAddress::parse(owner).is_err() {
                return Err(ConfigError::Invalid {
                    key: "ownership.services",
                    origin: String::new(),
                    value: format!("{service} = {owner}"),
                    expected: "an email address for each service".into(),
                });
            }
        }
        if let Some(owner) = &self.ownership.default_owner {
            if EmailAddress::parse(owner).is_err() {
                return Err(invalid(
                    "ownership.default_owner",
                    owner,
                    "an email address",
                ));
            }
        }
        if self.org.timezone.parse::<chrono_tz::Tz>().is_err() {
            return Err(invalid(
                "org.timezone",
                &self.org.timezone,
                "an IANA time zone name such as UTC or Europe/Berlin",
            ));
        }
        if let Some(name) = &self.org.name {
            if name.trim().is_empty()
                || name.chars().count() > 100
                || name.chars().any(char::is_control)
            {
                return Err(invalid(
                    "org.name",
                    name,
                    "1 to 100 characters, no control characters",
                ));
            }
        }
        if let Some(logo) = &self.org.logo_file {
            let shown = logo.display().to_string();
            if self.org.logo_type().is_none() {
                return Err(invalid(
                    "org.logo_file",
                    &shown,
                    "a .png, .jpg, .webp or .svg file",
                ));
            }
            match std::fs::metadata(logo) {
                Ok(m) if m.is_file() && m.len() <= super::MAX_LOGO_BYTES => {}
                Ok(_) => {
                    return Err(invalid(
                        "org.logo_file",
                        &shown,
                        "a file of at most 256 KiB",
                    ));
                }
                Err(e) => {
                    return Err(invalid(
                        "org.logo_file",
                        &shown,
                        &format!("a file coe can read ({e})"),
                    ));
                }
            }
        }
        self.template()?;
        self.validate_templates()?;
        if let Some(url) = &self.smtp.url {
            let parsed = url::Url::parse(url).ok();
            let tls = parsed.as_ref().and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "tls")
                    .map(|(_, v)| v.into_owned())
            });
            let usable = matches!(
                (parsed.as_ref().map(|u| u.scheme()), tls.as_deref()),
                (Some("smtps"), None) | (Some("smtp"), None | Some("required" | "opportunistic"))
            );
            if !usable || parsed.as_ref().and_then(|u| u.host_str()).is_none() {
                return Err(ConfigError::Invalid {
                    key: "smtp.url",
                    origin: String::new(),
                    value: mask_url_password(url),
                    expected: "smtp://[USER:PASS@]HOST[:PORT][?tls=required|opportunistic] or smtps://[USER:PASS@]HOST[:PORT]".into(),
                });
            }
            if self.smtp.ca_file.is_some() && !url.starts_with("smtps://") && tls.is_none() {
                return Err(ConfigError::Invalid {
                    key: "smtp.ca_file",
                    origin: String::new(),
                    value: mask_url_password(url),
                    expected: "an smtp.url with TLS (smtps:// or ?tls=required) for a CA to matter"
                        .into(),
                });
            }
        }
        if let Some(ca) = &self.smtp.ca_file {
            if !ca.is_file() {
                return Err(ConfigError::Invalid {
                    key: "smtp.ca_file",
                    origin: String::new(),
                    value: ca.display().to_string(),
                    expected: "a readable PEM file".into(),
                });
            }
        }
        self.validate_email()
    }

    /// `[[chat.channels]]`: a unique name each, and what its kind needs (a webhook
    /// URL; for Matrix a homeserver, a room id and a token), over https (plain http
    /// only on loopback).
    fn validate_chat(&self) -> Result<(), ConfigError> {
        if !(1..=120).contains(&self.chat.timeout_secs) {
            return Err(ConfigError::Invalid {
                key: "chat.timeout_secs",
                origin: String::new(),
                value: self.chat.timeout_secs.to_string(),
                expected: "1 to 120 seconds".into(),
            });
        }
        validate_channels(&self.chat.channels)
    }

    fn validate_email(&self) -> Result<(), ConfigError> {
        let invalid = |key, value: &str, expected: &str| ConfigError::Invalid {
            key,
            origin: String::new(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        if self.mode == Mode::Production && self.smtp.url.is_none() {
            return Err(invalid(
                "smtp.url",
                "(unset)",
                "an smtp:// or smtps:// URL: in production mode emails must go to an SMTP server, not to files",
            ));
        }
        if let Err(e) = self.email.from.parse::<lettre::message::Mailbox>() {
            return Err(invalid(
                "email.from",
                &self.email.from,
                &format!("an address such as `coe <coe@example.com>` ({e})"),
            ));
        }
        if let Some(reply_to) = &self.email.reply_to {
            if let Err(e) = reply_to.parse::<lettre::message::Mailbox>() {
                return Err(invalid(
                    "email.reply_to",
                    reply_to,
                    &format!("an address such as `SRE team <sre@example.com>` ({e})"),
                ));
            }
        }
        let r = &self.reminders;
        if r.interval_secs == 0 {
            return Err(invalid("reminders.interval_secs", "0", "at least 1"));
        }
        if r.delivery_interval_secs == 0 {
            return Err(invalid(
                "reminders.delivery_interval_secs",
                "0",
                "at least 1",
            ));
        }
        if r.send_hour > 23 {
            return Err(invalid(
                "reminders.send_hour",
                &r.send_hour.to_string(),
                "an hour from 0 to 23",
            ));
        }
        for (key, value) in [
            ("reminders.due_soon_days", r.due_soon_days),
            ("reminders.escalate_after_days", r.escalate_after_days),
        ] {
            if !(0..=365).contains(&value) {
                return Err(invalid(key, &value.to_string(), "0 to 365 days"));
            }
        }
        for (key, value) in [
            ("reminders.digest_every_days", r.digest_every_days),
            ("reminders.escalation_every_days", r.escalation_every_days),
            ("reminders.writeup_every_days", r.writeup_every_days),
        ] {
            if !(1..=365).contains(&value) {
                return Err(invalid(key, &value.to_string(), "1 to 365 days"));
            }
        }
        let longest = r
            .digest_every_days
            .max(r.escalation_every_days)
            .max(r.writeup_every_days)
            .max(7);
        if !(longest..=3650).contains(&r.keep_sent_days) {
            return Err(invalid(
                "reminders.keep_sent_days",
                &r.keep_sent_days.to_string(),
                &format!(
                    "{longest} to 3650 days (not less than the longest reminder period, so that a kept key stops a resend)"
                ),
            ));
        }
        if r.max_attempts < 1 {
            return Err(invalid(
                "reminders.max_attempts",
                &r.max_attempts.to_string(),
                "at least 1",
            ));
        }
        if r.retry_base_secs == 0 || r.retry_max_secs < r.retry_base_secs {
            return Err(invalid(
                "reminders.retry_base_secs",
                &r.retry_base_secs.to_string(),
                "at least 1 and not above reminders.retry_max_secs",
            ));
        }
        if r.retry_max_secs > 30 * 86_400 {
            return Err(invalid(
                "reminders.retry_max_secs",
                &r.retry_max_secs.to_string(),
                "at most 2592000 (30 days)",
            ));
        }
        if !(1..=365).contains(&self.coe.writeup_days) {
            return Err(invalid(
                "coe.writeup_days",
                &self.coe.writeup_days.to_string(),
                "1 to 365 days",
            ));
        }
        if r.interval_secs > 86_400 || r.delivery_interval_secs > 86_400 {
            return Err(invalid(
                "reminders.interval_secs",
                &r.interval_secs.max(r.delivery_interval_secs).to_string(),
                "at most 86400 (a day), for both intervals",
            ));
        }
        if r.lease_secs > 86_400 {
            return Err(invalid(
                "reminders.lease_secs",
                &r.lease_secs.to_string(),
                "at most 86400 (a day)",
            ));
        }
        let slowest_send = 15 * SMTP_TIMEOUT.as_secs();
        if r.lease_secs < slowest_send {
            return Err(invalid(
                "reminders.lease_secs",
                &r.lease_secs.to_string(),
                &format!("at least {slowest_send} (longer than the slowest SMTP conversation)"),
            ));
        }
        if !(1..=10_000).contains(&r.batch_size) {
            return Err(invalid(
                "reminders.batch_size",
                &r.batch_size.to_string(),
                "1 to 10000",
            ));
        }
        for recipient in &self.digest.recipients {
            if EmailAddress::parse(recipient).is_err() {
                return Err(invalid(
                    "digest.recipients",
                    recipient,
                    "a list of email addresses",
                ));
            }
        }
        if self.digest.weekday.parse::<chrono::Weekday>().is_err() {
            return Err(invalid(
                "digest.weekday",
                &self.digest.weekday,
                "a day of the week such as monday",
            ));
        }
        self.validate_auth()?;
        self.validate_chat()?;
        super::trackers::validate(&self.trackers)?;
        if let Some(dir) = &self.email.templates_dir {
            if !dir.is_dir() {
                return Err(invalid(
                    "email.templates_dir",
                    &dir.display().to_string(),
                    "an existing folder of email templates",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Settings::default().validate().expect("defaults validate");
    }

    #[test]
    fn a_reopen_window_longer_than_30_days_is_refused_by_name() {
        let mut settings = Settings::default();
        settings.incidents.reopen_window_secs = 30 * 86_400;
        settings.validate().expect("30 days is accepted");
        settings.incidents.reopen_window_secs = 99_999_999_999_999;
        let error = settings.validate().expect_err("refused").to_string();
        assert!(error.contains("incidents.reopen_window_secs"), "{error}");
        assert!(error.contains("99999999999999"), "{error}");
        assert!(error.contains("at most 2592000 (30 days)"), "{error}");
    }

    #[test]
    fn a_same_outage_window_past_a_day_and_an_empty_label_are_refused_by_name() {
        let mut settings = Settings::default();
        settings.incidents.same_outage_window_secs = 86_400;
        settings.validate().expect("a day is accepted");
        settings.incidents.same_outage_window_secs = 86_401;
        let error = settings.validate().expect_err("refused").to_string();
        assert!(
            error.contains("incidents.same_outage_window_secs"),
            "{error}"
        );
        settings.incidents.same_outage_window_secs = 900;
        settings.incidents.same_outage_labels = vec!["cluster".into(), String::new()];
        let error = settings.validate().expect_err("refused").to_string();
        assert!(error.contains("incidents.same_outage_labels"), "{error}");
    }
}
