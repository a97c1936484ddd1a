//! The platforms a connection may be on: each one's fields, in people's words, and
//! what to do on its side.

use crate::config::{ChatEvent, ChatKind, TrackerKind};
use crate::services::connections::Kind;

/// One field of a platform's form.
pub(super) struct Field {
    pub(super) key: &'static str,
    pub(super) label: &'static str,
    pub(super) help: &'static str,
    /// Shown by its end alone; left empty, the saved one stays.
    pub(super) secret: bool,
    pub(super) how: How,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum How {
    Text,
    /// Words separated by commas.
    List,
    /// The events a channel hears (boxes to tick).
    Events,
    /// When a ticket is made.
    Create,
    /// A tracker's routes, one a line.
    Routes,
    /// A tracker's statuses read otherwise, one a line.
    Statuses,
}

const fn field(key: &'static str, label: &'static str, help: &'static str, how: How) -> Field {
    Field {
        key,
        label,
        help,
        secret: false,
        how,
    }
}

const fn secret(key: &'static str, label: &'static str, help: &'static str) -> Field {
    Field {
        key,
        label,
        help,
        secret: true,
        how: How::Text,
    }
}

pub(super) const CHAT_PLATFORMS: [(ChatKind, &str); 7] = [
    (ChatKind::Slack, "Slack"),
    (ChatKind::Teams, "Microsoft Teams"),
    (ChatKind::GoogleChat, "Google Chat"),
    (ChatKind::Mattermost, "Mattermost"),
    (ChatKind::Matrix, "Matrix"),
    (ChatKind::Statuspage, "Statuspage (summaries for customers)"),
    (
        ChatKind::Webhook,
        "A signed webhook (summaries for customers)",
    ),
];

pub(super) const TRACKER_PLATFORMS: [(TrackerKind, &str); 3] = [
    (TrackerKind::Jira, "Jira Cloud"),
    (TrackerKind::Linear, "Linear"),
    (TrackerKind::Github, "GitHub Issues"),
];

const WEBHOOK_URL: Field = secret(
    "url",
    "Incoming webhook address",
    "The address the platform gave for posting to the channel: it is all a poster needs, so it is kept like a password.",
);
const FOR_TEAMS: Field = field(
    "teams",
    "Teams it serves",
    "coe teams, separated by commas; with no team and no service it serves the whole organisation.",
    How::List,
);
const FOR_SERVICES: Field = field(
    "services",
    "Services it serves",
    "Services as alerts name them, separated by commas.",
    How::List,
);
const EVENTS: Field = field("events", "What it hears", "", How::Events);

pub(super) fn chat_fields(kind: ChatKind) -> Vec<Field> {
    let read = [
        secret(
            "read_token",
            "Token to read channels (optional)",
            "Slack: the app's Bot User OAuth Token (xoxb-…), for \"Import from chat\" and for working from Slack; Mattermost: a bot's token, for \"Import from chat\".",
        ),
        field(
            "read_channel",
            "Channel read when none is named (optional)",
            "Its id.",
            How::Text,
        ),
    ];
    let mut fields = match kind {
        ChatKind::Slack => {
            let mut f = vec![WEBHOOK_URL];
            f.extend(read);
            f.push(secret(
                "signing_secret",
                "Signing secret (optional)",
                "For working from Slack (/coe, and buttons on coe's messages): the app's Signing Secret (Basic Information → App Credentials), with its bot token above.",
            ));
            f
        }
        ChatKind::Mattermost => {
            let mut f = vec![
                WEBHOOK_URL,
                field(
                    "api_url",
                    "The server's address (to read channels)",
                    "Such as https://chat.example.com; needed with a token to read channels.",
                    How::Text,
                ),
            ];
            f.extend(read);
            f
        }
        ChatKind::Teams => vec![
            WEBHOOK_URL,
            field(
                "app_id",
                "Bot's Microsoft App ID (optional)",
                "For working from Teams (@coe report, mine, buttons on coe's cards): the Azure Bot's Microsoft App ID (Configuration).",
                How::Text,
            ),
            secret(
                "app_password",
                "Bot's client secret (optional)",
                "With the App ID: a client secret of the bot's app registration (Certificates & secrets).",
            ),
            field(
                "tenant_id",
                "Your Microsoft tenant (with the App ID)",
                "The directory (tenant) id of your organisation: the bot is single-tenant, and only members of this tenant work from Teams.",
                How::Text,
            ),
            field(
                "read_channel",
                "Channel read when none is named (optional)",
                "For \"Import from chat\": the team's group id, a slash, and the channel's id (19:…@thread.tacv2).",
                How::Text,
            ),
        ],
        ChatKind::GoogleChat => vec![WEBHOOK_URL],
        ChatKind::Matrix => vec![
            field(
                "homeserver",
                "Homeserver",
                "Its address, such as https://matrix.example.com.",
                How::Text,
            ),
            field(
                "room_id",
                "Room",
                "The room's id, such as !abcdef:example.com (Room settings → Advanced).",
                How::Text,
            ),
            secret("access_token", "The bot user's access token", "The bot must be in the room."),
            field(
                "people_domain",
                "People's email domain (optional)",
                "For working from Matrix (!coe in the rooms the bot is in): a user @name of the bot's homeserver is name@ this domain in coe's directory. Such as example.com.",
                How::Text,
            ),
        ],
        ChatKind::Statuspage => vec![
            field("page_id", "Page id", "Statuspage → your avatar → API info.", How::Text),
            secret("access_token", "API key", "From the same page."),
        ],
        ChatKind::Webhook => vec![
            WEBHOOK_URL,
            secret(
                "access_token",
                "Signing secret (optional)",
                "Deliveries are signed with it (X-Coe-Signature-256), so the receiver knows they are coe's.",
            ),
        ],
    };
    if !kind.publishes() {
        fields.extend([FOR_TEAMS, FOR_SERVICES, EVENTS]);
    } else {
        fields.extend([FOR_TEAMS, FOR_SERVICES]);
    }
    fields
}

pub(super) fn tracker_fields(kind: TrackerKind) -> Vec<Field> {
    let mut fields = Vec::new();
    match kind {
        TrackerKind::Jira => fields.extend([
            field(
                "base_url",
                "Site",
                "Such as https://acme.atlassian.net.",
                How::Text,
            ),
            field(
                "user",
                "Account's email",
                "The Atlassian account coe acts as.",
                How::Text,
            ),
            secret(
                "token",
                "API token",
                "id.atlassian.com → Security → API tokens → Create API token.",
            ),
        ]),
        TrackerKind::Linear => fields.push(secret(
            "token",
            "API key",
            "Linear → Settings → Security & access → Personal API keys.",
        )),
        TrackerKind::Github => fields.extend([
            field(
                "base_url",
                "API address (optional)",
                "Left empty: github.com. GitHub Enterprise Server: https://HOST/api/v3.",
                How::Text,
            ),
            secret(
                "token",
                "Token",
                "A fine-grained token with read and write access to the repository's issues.",
            ),
        ]),
    }
    let place = match kind {
        TrackerKind::Jira => "A project key, such as OPS.",
        TrackerKind::Linear => "A team key, such as ENG.",
        TrackerKind::Github => "A repository, as owner/repo.",
    };
    fields.extend([
        secret(
            "webhook_secret",
            "Webhook secret",
            "16 characters or more: the same secret is given to the webhook on the tracker's side (the steps above).",
        ),
        field("place", "Where actions go", place, How::Text),
        field("create", "When an action gets a ticket", "", How::Create),
        field(
            "routes",
            "Routes (optional)",
            "One a line: where, then the teams and services whose actions go there, e.g. \"PAY: team payments, service checkout\".",
            How::Routes,
        ),
        field(
            "statuses",
            "Statuses read otherwise (optional)",
            "One a line: the status, then what it means (open, in progress, done, won't do, ignore), e.g. \"In review = ignore\".",
            How::Statuses,
        ),
    ]);
    if kind == TrackerKind::Jira {
        fields.push(field(
            "issue_type",
            "Issue type",
            "Of new tickets, such as Task.",
            How::Text,
        ));
    }
    fields
}

/// The Slack app coe needs, as a manifest to paste into Slack's "Create an app from
/// a manifest": a bot that posts through an incoming webhook and may read the
/// channels it is invited to and who wrote there (a COE's "Import from chat:
/// `conversations.history`, `users.info`), its page linking to coe; and the `/coe`
/// command and buttons, posted to coe, whose users coe knows by their profile's email
/// (`users:read.email`).
pub(super) fn slack_manifest(public_url: &str) -> String {
    let base = public_url.trim_end_matches('/');
    let manifest = serde_json::json!({
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": "coe",
            "description": "Corrections of error: COEs opened, reviews asked, actions overdue.",
            "long_description": format!(
                "coe posts here when a COE is opened, when one waits for its review, and when \
                 corrective actions go overdue, each with a link to it in coe ({}). It reads a \
                 channel it is invited to only when someone imports that channel's messages \
                 into a COE's timeline. With /coe, people report a failure, add a follow-up and \
                 see their moves; buttons on its messages mark an action done, move its due \
                 date or verify it, each as the person in coe whose email their Slack profile has.",
                base
            ),
            "background_color": "#1d4e89",
        },
        "features": {
            "bot_user": {"display_name": "coe", "always_online": false},
            "slash_commands": [{
                "command": "/coe",
                "url": format!("{base}/chat/slack/commands"),
                "description": "Report a failure, add a follow-up, see your moves in coe",
                "usage_hint": "report | follow-up | mine",
                "should_escape": false,
            }],
        },
        "oauth_config": {"scopes": {"bot": [
            "incoming-webhook", "channels:history", "groups:history", "users:read",
            "users:read.email", "commands", "chat:write",
        ]}},
        "settings": {
            "interactivity": {
                "is_enabled": true,
                "request_url": format!("{base}/chat/slack/interactions"),
            },
            "org_deploy_enabled": false,
            "socket_mode_enabled": false,
            "token_rotation_enabled": false,
        },
    });
    serde_json::to_string_pretty(&manifest).unwrap_or_default()
}

/// What to do on the platform's side, in its words.
pub(super) fn steps(platform: &str, webhook_url: &str) -> Vec<String> {
    let s = |list: &[&str]| list.iter().map(|x| (*x).to_owned()).collect();
    match platform {
        "slack" => s(&[
            "At api.slack.com/apps, choose Create New App, then From a manifest; pick the workspace and paste the manifest below (Copy), then Create.",
            "Choose Install to Workspace, pick the channel coe posts in, and choose Allow.",
            "Open Incoming Webhooks and copy the channel's webhook URL into the form below.",
            "To import an incident channel's messages into a COE: copy the Bot User OAuth Token (OAuth & Permissions, xoxb-…) into the token to read channels, and invite the app to those channels (/invite @coe).",
        ]),
        "teams" => s(&[
            "In the Teams channel, open its menu (…), then Workflows.",
            "Pick \"Post to a channel when a webhook request is received\", name it coe, and choose the team and the channel.",
            "Copy the address the workflow shows into the form below.",
            "To work from Teams (@coe report, @coe mine, buttons on coe's cards): create an Azure Bot, set its messaging endpoint to PUBLIC_URL/chat/teams/messages, add the Microsoft Teams channel, and give its App ID, a client secret and your tenant's id below (a single-tenant bot); then add the bot to the teams whose channels use it.",
        ]),
        "google-chat" => s(&[
            "In the Google Chat space, open Apps & integrations, then Webhooks, then Add webhook.",
            "Name it coe, save, and copy its address into the form below.",
        ]),
        "mattermost" => s(&[
            "In Mattermost, open Integrations, then Incoming Webhooks, then Add Incoming Webhook.",
            "Pick the channel, save, and copy the address into the form below.",
        ]),
        "matrix" => s(&[
            "Make a user for coe on the homeserver and sign it in once to get its access token.",
            "Invite it to the room and have it join; copy the room's id (Room settings → Advanced).",
            "To work from Matrix (!coe report, !coe mine, replies and reactions to coe's messages): give the domain of people's email addresses below; coe then answers in every room its bot is in, and joins a room when someone in coe's directory invites it.",
        ]),
        "statuspage" => s(&[
            "In Statuspage, open your avatar, then API info: copy the page id and make an API key.",
            "coe then writes the postmortem of the Statuspage incident named when a summary is published.",
        ]),
        "webhook" => s(&[
            "Give the address of an HTTPS endpoint that takes a JSON POST.",
            "With a signing secret, each delivery carries X-Coe-Signature-256: sha256= and the HMAC of the body.",
        ]),
        "jira" => vec![
            "Make a Jira account for coe (or use yours) and an API token for it at id.atlassian.com → Security → API tokens.".into(),
            "Save this form, then in Jira open Settings → System → WebHooks → Create a WebHook.".into(),
            format!("Give it the address {webhook_url}, the webhook secret of this form, and the events Issue updated and Issue deleted."),
        ],
        "linear" => vec![
            "In Linear, open Settings → Security & access → Personal API keys and make a key for coe.".into(),
            format!("Then Settings → API → Webhooks → New webhook: the address {webhook_url}, the data change events of Issues; copy its signing secret into this form."),
        ],
        "github" => vec![
            "Make a fine-grained token with read and write access to the repository's issues.".into(),
            format!("In the repository, open Settings → Webhooks → Add webhook: the payload URL {webhook_url}, content type application/json, the webhook secret of this form, and the Issues event."),
        ],
        _ => Vec::new(),
    }
}

pub(super) fn platforms(kind: Kind) -> Vec<(&'static str, &'static str)> {
    match kind {
        Kind::Chat => CHAT_PLATFORMS
            .iter()
            .map(|(k, l)| (k.as_str(), *l))
            .collect(),
        Kind::Tracker => TRACKER_PLATFORMS
            .iter()
            .map(|(k, l)| (k.as_str(), *l))
            .collect(),
    }
}

pub(super) fn fields_of(kind: Kind, platform: &str) -> Option<Vec<Field>> {
    match kind {
        Kind::Chat => CHAT_PLATFORMS
            .iter()
            .find(|(k, _)| k.as_str() == platform)
            .map(|(k, _)| chat_fields(*k)),
        Kind::Tracker => TRACKER_PLATFORMS
            .iter()
            .find(|(k, _)| k.as_str() == platform)
            .map(|(k, _)| tracker_fields(*k)),
    }
}

pub(super) fn event_words(event: ChatEvent) -> &'static str {
    match event {
        ChatEvent::CoeOpened => "a COE opened",
        ChatEvent::Review => "a review asked for, sent back or approved",
        ChatEvent::OverdueDaily => "once a day, its overdue actions",
        ChatEvent::Escalation => "an overdue action escalated to a manager",
        ChatEvent::InspectionWeekly => "once a week, the inspection's summary",
        ChatEvent::Published => "a summary for customers published",
    }
}
