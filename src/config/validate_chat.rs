//! The checks of chat channels (`[[chat.channels]]`, and those kept in coe): what
//! each platform's kind needs, and how people work from it.

use super::ConfigError;

/// `[[chat.channels]]`: a unique name each, and what its kind needs (a webhook URL;
/// for Matrix a homeserver, a room id and a token), over https (plain http only on
/// loopback). The settings file's channels and those kept in coe are checked alike.
pub fn validate_channels(channels: &[super::ChannelSettings]) -> Result<(), ConfigError> {
    let web_url = |raw: &str| url::Url::parse(raw).is_ok_and(|u| super::https_or_loopback(&u));
    let mut names = std::collections::HashSet::new();
    for (i, c) in channels.iter().enumerate() {
        let invalid = |field: &str, value: &str, expected: &str| ConfigError::Entry {
            key: "chat.channels",
            index: i,
            name: c.name.clone(),
            field: field.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let name_ok = !c.name.is_empty()
            && c.name.len() <= 64
            && c.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
        if !name_ok {
            return Err(invalid(
                "name",
                &c.name,
                "a name of letters, digits, - _ . (1 to 64)",
            ));
        }
        if !names.insert(c.name.to_ascii_lowercase()) {
            return Err(invalid("name", &c.name, "a name no other channel has"));
        }
        if c.events.is_empty() {
            return Err(invalid("events", "[]", "at least one of coe_opened, review, overdue_daily, escalation, inspection_weekly (or leave it out for all)"));
        }
        if c.signing_secret.is_some() && c.kind != super::ChatKind::Slack {
            return Err(invalid(
                "signing_secret",
                "***",
                "a Slack app's signing secret: only for kind = \"slack\"",
            ));
        }
        if (c.app_id.is_some() || c.app_password.is_some() || c.tenant_id.is_some())
            && c.kind != super::ChatKind::Teams
        {
            return Err(invalid(
                "app_id",
                c.app_id.as_deref().unwrap_or(""),
                "a Teams bot's Microsoft App ID: only for kind = \"teams\"",
            ));
        }
        if c.app_id.is_some() != c.app_password.is_some() {
            return Err(invalid(
                if c.app_id.is_some() {
                    "app_password"
                } else {
                    "app_id"
                },
                "",
                "a Teams bot's App ID and its client secret, together",
            ));
        }
        if c.app_id.is_some() && c.tenant_id.is_none() {
            return Err(invalid(
                "tenant_id",
                "",
                "the organisation's Microsoft tenant (directory) id: a single-tenant bot, and only that tenant's members work from Teams",
            ));
        }
        if let Some(domain) = &c.people_domain {
            if c.kind != super::ChatKind::Matrix {
                return Err(invalid(
                    "people_domain",
                    domain,
                    "the domain of people's email addresses: only for kind = \"matrix\"",
                ));
            }
            let fine = !domain.is_empty()
                && domain.len() <= 253
                && domain.chars().all(|ch| {
                    ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '.' || ch == '-'
                })
                && !domain.starts_with(['.', '-'])
                && !domain.ends_with(['.', '-']);
            if !fine {
                return Err(invalid(
                    "people_domain",
                    domain,
                    "the domain of people's email addresses in lower case, such as example.com",
                ));
            }
        }
        if c.signing_secret.is_some() && c.read_token.is_none() {
            return Err(invalid(
                "read_token",
                "",
                "the app's bot token (xoxb-…): work from Slack answers with it",
            ));
        }
        if c.kind == super::ChatKind::Statuspage {
            if !c.page_id.as_deref().is_some_and(|p| {
                !p.trim().is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric())
            }) {
                return Err(invalid(
                    "page_id",
                    c.page_id.as_deref().unwrap_or(""),
                    "the Statuspage page's id, for kind = \"statuspage\"",
                ));
            }
            if c.api_url.as_deref().is_some_and(|u| !web_url(u)) {
                return Err(invalid(
                    "api_url",
                    c.api_url.as_deref().unwrap_or(""),
                    "the API's https URL (plain http only on loopback)",
                ));
            }
            if c.access_token
                .as_ref()
                .is_none_or(|t| t.expose().trim().is_empty())
            {
                return Err(invalid(
                    "access_token",
                    "",
                    "the Statuspage API key, for kind = \"statuspage\"",
                ));
            }
        } else if c.kind == super::ChatKind::Slack
            && c.api_url.as_deref().is_some_and(|u| !web_url(u))
        {
            return Err(invalid(
                "api_url",
                c.api_url.as_deref().unwrap_or(""),
                "Slack's Web API https URL (plain http only on loopback)",
            ));
        } else if c.kind == super::ChatKind::Teams
            && c.api_url.as_deref().is_some_and(|u| !web_url(u))
        {
            return Err(invalid(
                "api_url",
                c.api_url.as_deref().unwrap_or(""),
                "an https URL (plain http only on loopback): where Microsoft's sign-in is asked, for a test double only",
            ));
        } else if c.kind == super::ChatKind::Mattermost
            && c.read_token.is_some()
            && !c.api_url.as_deref().is_some_and(web_url)
        {
            return Err(invalid(
                "api_url",
                c.api_url.as_deref().unwrap_or(""),
                "the Mattermost server's https URL, to read channels with read_token",
            ));
        } else if c.kind == super::ChatKind::Matrix {
            if !c.homeserver.as_deref().is_some_and(web_url) {
                return Err(invalid("homeserver", c.homeserver.as_deref().unwrap_or(""), "the homeserver's https URL (plain http only on loopback), for kind = \"matrix\""));
            }
            if !c
                .room_id
                .as_deref()
                .is_some_and(|r| r.starts_with('!') && r.len() > 1)
            {
                return Err(invalid(
                    "room_id",
                    c.room_id.as_deref().unwrap_or(""),
                    "the room's id, such as !abcdef:example.com, for kind = \"matrix\"",
                ));
            }
            if c.access_token
                .as_ref()
                .is_none_or(|t| t.expose().trim().is_empty())
            {
                return Err(invalid(
                    "access_token",
                    "",
                    "the bot user's access token, for kind = \"matrix\"",
                ));
            }
        } else if !c.url.as_ref().is_some_and(|u| web_url(u.expose())) {
            return Err(invalid(
                "url",
                if c.url.is_some() { "***" } else { "" },
                "the incoming webhook's https URL (plain http only on loopback)",
            ));
        }
    }
    Ok(())
}
