//! The calls coe makes as the bot: the Bot Connector's keys (from the OpenID metadata,
//! kept a day; a failure to read them remembered a minute), the bot's token (client
//! credentials, kept until a minute before it ends), who a member of a conversation is
//! (their email and tenant), a team's group id, a reply, and a message changed. No
//! pooled connection is held by the caller meanwhile.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Endpoints;

/// The scope of the Bot Connector's tokens.
pub const SCOPE: &str = "https://api.botframework.com/.default";

/// A bot: its app id and secret, its tenant, where it signs in.
#[derive(Clone)]
pub struct Bot {
    pub app_id: String,
    pub password: String,
    pub tenant: Option<String>,
    pub endpoints: Endpoints,
    pub timeout: Duration,
}

/// A member of a conversation, as Teams gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Their email, else their user principal name.
    pub email: Option<String>,
    pub tenant: Option<String>,
}

fn keys_kept() -> &'static moka::sync::Cache<String, Value> {
    static KEYS: OnceLock<moka::sync::Cache<String, Value>> = OnceLock::new();
    KEYS.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(16)
            .time_to_live(Duration::from_secs(24 * 3600))
            .build()
    })
}

/// When the keys were last read again for a key they lacked: at most once a minute.
fn reread() -> &'static moka::sync::Cache<String, ()> {
    static REREAD: OnceLock<moka::sync::Cache<String, ()>> = OnceLock::new();
    REREAD.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(16)
            .time_to_live(Duration::from_secs(60))
            .build()
    })
}

/// Why the keys could not be read, remembered a minute: a burst of requests while
/// Microsoft is away asks once.
fn unreadable() -> &'static moka::sync::Cache<String, String> {
    static UNREADABLE: OnceLock<moka::sync::Cache<String, String>> = OnceLock::new();
    UNREADABLE.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(16)
            .time_to_live(Duration::from_secs(60))
            .build()
    })
}

/// Tokens, each with when to stop using it (a minute before it ends).
fn tokens() -> &'static std::sync::Mutex<std::collections::HashMap<String, (String, Instant)>> {
    static TOKENS: OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, (String, Instant)>>,
    > = OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

fn segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).collect()
}

impl Bot {
    fn agent(&self) -> ureq::Agent {
        ureq::AgentBuilder::new()
            .timeout(self.timeout)
            .redirects(0)
            .build()
    }

    fn json(answer: Result<ureq::Response, ureq::Error>, what: &str) -> Result<Value, String> {
        match answer {
            Ok(r) => {
                let text = r.into_string().unwrap_or_default();
                if text.trim().is_empty() {
                    return Ok(Value::Null);
                }
                serde_json::from_str(&text).map_err(|_| format!("{what}: the answer is not JSON"))
            }
            Err(ureq::Error::Status(status, r)) => {
                let said: Value = r
                    .into_string()
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or(Value::Null);
                let code = said["error"]["code"]
                    .as_str()
                    .or_else(|| said["error"].as_str())
                    .unwrap_or("");
                Err(format!("{what}: answered {status} {code}"))
            }
            Err(e) => Err(format!("{what}: no answer ({})", e.kind())),
        }
    }

    /// The Bot Connector's signing keys (a JWKS); read again when `fresh` (a token
    /// named a key not listed), at most once a minute.
    pub fn keys(&self, fresh: bool) -> Result<Value, String> {
        let at = self.endpoints.metadata.clone();
        if !fresh || reread().contains_key(&at) {
            if let Some(keys) = keys_kept().get(&at) {
                return Ok(keys);
            }
        }
        if let Some(why) = unreadable().get(&at) {
            return Err(why);
        }
        if fresh {
            reread().insert(at.clone(), ());
        }
        let agent = self.agent();
        let read = Self::json(agent.get(&at).call(), "the Bot Connector's OpenID metadata")
            .and_then(|metadata| {
                let jwks = metadata["jwks_uri"]
                    .as_str()
                    .ok_or("the Bot Connector's OpenID metadata names no jwks_uri")?
                    .to_owned();
                Self::json(agent.get(&jwks).call(), "the Bot Connector's keys")
            });
        match read {
            Ok(keys) => {
                keys_kept().insert(at, keys.clone());
                Ok(keys)
            }
            Err(why) => {
                unreadable().insert(at, why.clone());
                Err(why)
            }
        }
    }

    /// A token to answer with.
    fn token(&self) -> Result<String, String> {
        self.token_for(SCOPE)
    }

    /// A token for `scope` (the Bot Connector's; Microsoft Graph's to read a channel),
    /// kept until a minute before it ends.
    pub fn token_for(&self, scope: &str) -> Result<String, String> {
        let key = format!("{} {} {scope}", self.endpoints.token, self.app_id);
        let now = Instant::now();
        if let Some((token, until)) = tokens()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            if *until > now {
                return Ok(token.clone());
            }
        }
        let got = Self::json(
            self.agent().post(&self.endpoints.token).send_form(&[
                ("grant_type", "client_credentials"),
                ("client_id", &self.app_id),
                ("client_secret", &self.password),
                ("scope", scope),
            ]),
            "Microsoft's sign-in, for the bot's token",
        )?;
        let token = got["access_token"]
            .as_str()
            .ok_or("Microsoft's sign-in gave no access_token")?
            .to_owned();
        let lasts = got["expires_in"]
            .as_u64()
            .unwrap_or(3600)
            .saturating_sub(60);
        tokens()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, (token.clone(), now + Duration::from_secs(lasts)));
        Ok(token)
    }

    fn base(service_url: &str) -> String {
        service_url.trim_end_matches('/').to_owned()
    }

    /// Member `user` of `conversation`: their email (else their user principal name)
    /// and tenant.
    pub fn member(
        &self,
        service_url: &str,
        conversation: &str,
        user: &str,
    ) -> Result<Member, String> {
        let url = format!(
            "{}/v3/conversations/{}/members/{}",
            Self::base(service_url),
            segment(conversation),
            segment(user)
        );
        let member = Self::json(
            self.agent()
                .get(&url)
                .set("Authorization", &format!("Bearer {}", self.token()?))
                .call(),
            "Teams, asked who the member is",
        )?;
        Ok(Member {
            email: member["email"]
                .as_str()
                .or_else(|| member["userPrincipalName"].as_str())
                .filter(|e| e.contains('@'))
                .map(str::to_owned),
            tenant: member["tenantId"].as_str().map(str::to_owned),
        })
    }

    /// The group id of team `team` (`19:…`), which Microsoft Graph names it by.
    pub fn group_of(&self, service_url: &str, team: &str) -> Result<Option<String>, String> {
        let url = format!("{}/v3/teams/{}", Self::base(service_url), segment(team));
        let details = Self::json(
            self.agent()
                .get(&url)
                .set("Authorization", &format!("Bearer {}", self.token()?))
                .call(),
            "Teams, asked for the team's details",
        )?;
        Ok(details["aadGroupId"].as_str().map(str::to_owned))
    }

    /// Says `activity` in reply to activity `to` of `conversation`.
    pub fn reply(
        &self,
        service_url: &str,
        conversation: &str,
        to: &str,
        activity: &Value,
    ) -> Result<(), String> {
        self.activity(
            "POST",
            service_url,
            conversation,
            to,
            activity,
            "Teams, given the answer",
        )
    }

    /// Replaces message `id` of `conversation` with `activity`.
    pub fn update(
        &self,
        service_url: &str,
        conversation: &str,
        id: &str,
        activity: &Value,
    ) -> Result<(), String> {
        self.activity(
            "PUT",
            service_url,
            conversation,
            id,
            activity,
            "Teams, asked to change the card",
        )
    }

    fn activity(
        &self,
        method: &str,
        service_url: &str,
        conversation: &str,
        id: &str,
        activity: &Value,
        what: &str,
    ) -> Result<(), String> {
        let url = format!(
            "{}/v3/conversations/{}/activities/{}",
            Self::base(service_url),
            segment(conversation),
            segment(id)
        );
        Self::json(
            self.agent()
                .request(method, &url)
                .set("Authorization", &format!("Bearer {}", self.token()?))
                .set("Content-Type", "application/json")
                .send_string(&activity.to_string()),
            what,
        )
        .map(|_| ())
    }
}
