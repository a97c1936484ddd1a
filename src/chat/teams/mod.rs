//! Working from Microsoft Teams: a Bot Framework bot. What Teams posts to coe is an
//! activity (`activity`), checked as Microsoft documents before it is read (`verify`:
//! the Bot Connector's JWT, its keys from the published OpenID metadata, audience the
//! bot's app id); coe answers through the Bot Connector (`connector`: a reply, a card
//! updated, who a member is) with Adaptive Cards (`cards`) carrying the same buttons as
//! Slack's messages.

pub mod cards;
pub mod connector;
pub mod verify;

use serde_json::Value;

/// Microsoft's sign-in endpoints, unless a channel's `api_url` names a double.
pub const BOT_FRAMEWORK_METADATA: &str =
    "https://login.botframework.com/v1/.well-known/openidconfiguration";
pub const LOGIN: &str = "https://login.microsoftonline.com";
pub const GRAPH: &str = "https://graph.microsoft.com/v1.0";

/// The scope of Microsoft Graph's tokens.
pub const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

/// Where a bot of channel `api_url` (a test double's base, else Microsoft's) asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The Bot Connector's OpenID metadata.
    pub metadata: String,
    /// The token endpoint of the bot's tenant (`botframework.com` when multi-tenant).
    pub token: String,
    /// Microsoft Graph.
    pub graph: String,
}

impl Endpoints {
    pub fn of(api_url: Option<&str>, tenant: Option<&str>) -> Endpoints {
        let tenant = tenant.unwrap_or("botframework.com");
        match api_url.map(|u| u.trim_end_matches('/')) {
            Some(base) => Endpoints {
                metadata: format!("{base}/v1/.well-known/openidconfiguration"),
                token: format!("{base}/{tenant}/oauth2/v2.0/token"),
                graph: format!("{base}/graph/v1.0"),
            },
            None => Endpoints {
                metadata: BOT_FRAMEWORK_METADATA.to_owned(),
                token: format!("{LOGIN}/{tenant}/oauth2/v2.0/token"),
                graph: GRAPH.to_owned(),
            },
        }
    }
}

/// One activity Teams sent, as coe reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub kind: String,
    pub id: String,
    pub service_url: String,
    pub channel_id: String,
    /// The Teams user (`29:…`) and their Azure AD object id.
    pub from: String,
    pub conversation: String,
    /// `personal`, `channel` or `groupChat`.
    pub conversation_type: String,
    /// The Teams channel (`19:…@thread.tacv2`), in a team's channel.
    pub teams_channel: Option<String>,
    /// The team (`19:…`) and its group id when Teams gives it (it seldom does on a
    /// message: `connector::Bot::group_of` asks).
    pub team: Option<String>,
    pub team_group: Option<String>,
    /// The tenant the activity comes from.
    pub tenant: Option<String>,
    /// What was typed, mentions of the bot taken out.
    pub text: String,
    /// What a card's button sent (its data and the card's inputs).
    pub value: Option<Value>,
    /// The message a card's button was on.
    pub reply_to: Option<String>,
}

impl Activity {
    /// `body` as an activity, or what is wrong with it.
    pub fn read(body: &[u8]) -> Result<Activity, String> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| format!("the activity is not JSON: {e}"))?;
        let s = |pointer: &str| {
            v.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let need = |pointer: &str, name: &str| {
            s(pointer).ok_or_else(|| format!("the activity has no {name}"))
        };
        Ok(Activity {
            kind: need("/type", "type")?,
            id: need("/id", "id")?,
            service_url: need("/serviceUrl", "serviceUrl")?,
            channel_id: s("/channelId").unwrap_or_default(),
            from: need("/from/id", "from.id")?,
            conversation: need("/conversation/id", "conversation.id")?,
            conversation_type: s("/conversation/conversationType").unwrap_or_default(),
            teams_channel: s("/channelData/teamsChannelId")
                .or_else(|| s("/channelData/channel/id")),
            team: s("/channelData/teamsTeamId").or_else(|| s("/channelData/team/id")),
            team_group: s("/channelData/team/aadGroupId"),
            tenant: s("/channelData/tenant/id").or_else(|| s("/conversation/tenantId")),
            text: plain_text(&s("/text").unwrap_or_default()),
            value: v.get("value").filter(|x| x.is_object()).cloned(),
            reply_to: s("/replyToId"),
        })
    }
}

/// `text` (Teams' HTML) as plain text: `<at>…</at>` mentions taken out, a paragraph
/// or a line break a new line, a link "label (address)", the rest of the tags dropped.
pub fn plain_text(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[start + 1..start + end];
        let after = &rest[start + end + 1..];
        let closing = tag.starts_with('/');
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match name.as_str() {
            // A mention of the bot: its name left out.
            "at" if !closing => {
                rest = after
                    .find("</at>")
                    .map_or("", |e| &after[e + "</at>".len()..]);
                continue;
            }
            "br" => out.push('\n'),
            "p" | "div" if closing => out.push('\n'),
            "a" if !closing => {
                let href = tag
                    .split("href=\"")
                    .nth(1)
                    .and_then(|h| h.split('"').next())
                    .map(str::to_owned);
                let close = after.find("</a>");
                let label = plain_text(close.map_or(after, |c| &after[..c]));
                out.push_str(&label);
                if let Some(href) = href.filter(|h| *h != label) {
                    out.push_str(&format!(" ({href})"));
                }
                rest = close.map_or("", |c| &after[c + "</a>".len()..]);
                continue;
            }
            _ => {}
        }
        rest = after;
    }
    out.push_str(rest);
    let decoded = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_activity_is_read_with_the_bot_s_mention_taken_out() {
        let body = serde_json::json!({
            "type": "message", "id": "1", "serviceUrl": "https://smba.trafficmanager.net/amer/",
            "channelId": "msteams", "from": {"id": "29:a", "aadObjectId": "o"},
            "conversation": {"id": "19:c@thread.tacv2;messageid=1", "conversationType": "channel"},
            "channelData": {"teamsChannelId": "19:c@thread.tacv2", "team": {"aadGroupId": "g1"}},
            "text": "<at>coe</at> report&nbsp;<p>now</p>"
        });
        let a = Activity::read(body.to_string().as_bytes()).unwrap();
        assert_eq!(a.text, "report now");
        assert_eq!(a.teams_channel.as_deref(), Some("19:c@thread.tacv2"));
        assert_eq!(a.team_group.as_deref(), Some("g1"));
        assert!(Activity::read(b"{}").unwrap_err().contains("type"));
        assert_eq!(
            plain_text("<p>Rolled back</p><p>see <a href=\"https://x.example/1\">the PR</a> &amp;lt;ok&gt;</p>"),
            "Rolled back\nsee the PR (https://x.example/1) &lt;ok>"
        );
        assert_eq!(plain_text("a <b>bold</b> é<br>next"), "a bold é\nnext");
        assert!(Activity::read(b"nope").is_err());
    }

    #[test]
    fn a_double_is_asked_only_when_named() {
        let e = Endpoints::of(None, Some("t1"));
        assert_eq!(
            e.token,
            "https://login.microsoftonline.com/t1/oauth2/v2.0/token"
        );
        let e = Endpoints::of(Some("http://127.0.0.1:9/"), None);
        assert_eq!(
            e.metadata,
            "http://127.0.0.1:9/v1/.well-known/openidconfiguration"
        );
        assert_eq!(
            e.token,
            "http://127.0.0.1:9/botframework.com/oauth2/v2.0/token"
        );
    }
}
