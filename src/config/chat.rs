//! The settings of team chat: `[[chat.channels]]` (where each channel is, what it
//! hears, for whom) and `chat.timeout_secs`.

use serde::{Deserialize, Serialize};

use super::secret::Secret;

/// Where notices go besides email: team channels in chat (`[[chat.channels]]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ChatSettings {
    pub channels: Vec<ChannelSettings>,
    /// How long a platform may take to answer one message; then it is sent again
    /// later (a webhook that answered too late may then show it twice; Matrix
    /// does not: the retry is the same transaction).
    pub timeout_secs: u64,
}

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            channels: Vec::new(),
            timeout_secs: 10,
        }
    }
}

/// A chat platform.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ChatKind {
    /// An incoming webhook; Block Kit.
    Slack,
    /// A Workflows webhook ("Post to a channel when a webhook request is
    /// received"); an Adaptive Card.
    Teams,
    /// A space's incoming webhook; `cardsV2`.
    GoogleChat,
    /// An incoming webhook; Markdown text.
    Mattermost,
    /// A bot user's access token in a room; `m.room.message` with HTML.
    Matrix,
    /// Atlassian Statuspage: a published summary for customers becomes the
    /// postmortem of the Statuspage incident named when publishing (`page_id`, the
    /// API key in `access_token`). Hears only `published`.
    Statuspage,
    /// Any HTTP endpoint: a published summary for customers as JSON, signed with
    /// `access_token` when set (`X-Coe-Signature-256`). Hears only `published`.
    Webhook,
}

impl ChatKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatKind::Slack => "slack",
            ChatKind::Teams => "teams",
            ChatKind::GoogleChat => "google-chat",
            ChatKind::Mattermost => "mattermost",
            ChatKind::Matrix => "matrix",
            ChatKind::Statuspage => "statuspage",
            ChatKind::Webhook => "webhook",
        }
    }

    /// Whether it is where summaries for customers are published (not a chat).
    pub fn publishes(self) -> bool {
        matches!(self, ChatKind::Statuspage | ChatKind::Webhook)
    }
}

/// What a channel may be told.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ChatEvent {
    /// A COE opened (a draft for an incident, or one opened by hand).
    CoeOpened,
    /// A review requested, changes requested, or approved.
    Review,
    /// Once a day: the channel's overdue actions.
    OverdueDaily,
    /// An overdue action escalated to a manager.
    Escalation,
    /// Once a week: the inspection's summary.
    InspectionWeekly,
    /// A COE's summary for customers published (only Statuspage and webhook
    /// channels hear it).
    Published,
}

impl ChatEvent {
    pub const ALL: [ChatEvent; 5] = [
        ChatEvent::CoeOpened,
        ChatEvent::Review,
        ChatEvent::OverdueDaily,
        ChatEvent::Escalation,
        ChatEvent::InspectionWeekly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChatEvent::CoeOpened => "coe_opened",
            ChatEvent::Review => "review",
            ChatEvent::OverdueDaily => "overdue_daily",
            ChatEvent::Escalation => "escalation",
            ChatEvent::InspectionWeekly => "inspection_weekly",
            ChatEvent::Published => "published",
        }
    }
}

fn all_chat_events() -> Vec<ChatEvent> {
    ChatEvent::ALL.to_vec()
}

/// One channel: where it is, and what it hears about.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelSettings {
    /// A name of its own (shown to admins, keys its messages).
    pub name: String,
    pub kind: ChatKind,
    /// The incoming webhook's URL (all kinds but `matrix`); a secret: it is the
    /// only thing a poster needs.
    #[serde(default)]
    pub url: Option<Secret>,
    /// `matrix`: the homeserver's base URL, e.g. https://matrix.example.com.
    #[serde(default)]
    pub homeserver: Option<String>,
    /// `matrix`: the room's id (`!abc…`).
    #[serde(default)]
    pub room_id: Option<String>,
    /// `matrix`: the bot user's access token; `statuspage`: the API key;
    /// `webhook`: the secret its deliveries are signed with (optional).
    #[serde(default)]
    pub access_token: Option<Secret>,
    /// `statuspage`: the page's id.
    #[serde(default)]
    pub page_id: Option<String>,
    /// `statuspage`: the API's base URL (Atlassian's by default); `slack`: the Web
    /// API's (https://slack.com/api by default); `mattermost`: the server's, to read
    /// a channel back; `teams`: where Microsoft's sign-in endpoints are asked, for a
    /// test double only (Microsoft's by default).
    #[serde(default)]
    pub api_url: Option<String>,
    /// `slack`, `mattermost`: a token that may read channels (a Slack bot token with
    /// `channels:history` and `users:read`; a Mattermost bot's or person's token), for
    /// "Import from chat". Without it, coe only posts there.
    #[serde(default)]
    pub read_token: Option<Secret>,
    /// `slack`, `mattermost`: the channel read when the import names none (its id).
    #[serde(default)]
    pub read_channel: Option<String>,
    /// `slack`: the app's signing secret (Basic Information → App Credentials), with
    /// which coe checks that a slash command or a button press came from Slack. With
    /// it and the bot token (`read_token`), people work from Slack (`/coe`).
    #[serde(default)]
    pub signing_secret: Option<Secret>,
    /// `matrix`: with it, people work from the rooms coe's bot is in (`!coe …`): a
    /// user of the bot's own homeserver, `@name:…`, is the person `name@people_domain`
    /// in coe's directory; anyone else is nobody there.
    #[serde(default)]
    pub people_domain: Option<String>,
    /// `teams`: the Microsoft App ID of the bot people work from (Azure Bot →
    /// Configuration); with `app_password`, Teams posts to `PUBLIC_URL/chat/teams/messages`.
    #[serde(default)]
    pub app_id: Option<String>,
    /// `teams`: the bot's client secret (a secret), for the tokens coe answers with.
    #[serde(default)]
    pub app_password: Option<Secret>,
    /// `teams`: the tenant of a single-tenant bot (its directory id); a multi-tenant
    /// bot has none.
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// The teams whose COEs and actions it hears about; with `services`, empty
    /// means the whole organisation.
    #[serde(default)]
    pub teams: Vec<String>,
    /// The services whose COEs and actions it hears about.
    #[serde(default)]
    pub services: Vec<String>,
    /// What it hears about; every event when left out.
    #[serde(default = "all_chat_events")]
    pub events: Vec<ChatEvent>,
}

impl ChannelSettings {
    /// Whether it hears about `event` for a COE or action of `team` and `service`:
    /// an organisation-wide channel (no teams, no services) hears everything it
    /// subscribed to.
    pub fn wants(&self, event: ChatEvent, team: Option<&str>, service: Option<&str>) -> bool {
        // Where summaries are published hears of nothing else; a chat, of everything
        // it subscribed to but that.
        if self.kind.publishes() != (event == ChatEvent::Published) {
            return false;
        }
        if !self.kind.publishes() && !self.events.contains(&event) {
            return false;
        }
        self.serves(team, service)
    }

    /// Whether it is a channel of `team`'s or `service`'s (teams and services compared
    /// without case): one limited to `teams`/`services` is theirs alone; an
    /// organisation-wide one (neither) is everyone's. What it hears about and whose
    /// incident channel may be read back into a COE ("Import from chat") both ask this.
    pub fn serves(&self, team: Option<&str>, service: Option<&str>) -> bool {
        if self.teams.is_empty() && self.services.is_empty() {
            return true;
        }
        let of = |list: &[String], value: Option<&str>| {
            value.is_some_and(|v| list.iter().any(|x| x.eq_ignore_ascii_case(v)))
        };
        of(&self.teams, team) || of(&self.services, service)
    }
}
