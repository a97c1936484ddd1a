//! `POST /chat/teams/messages`: an activity from Teams, checked, then a command typed to
//! the bot or a card's button pressed. Every call to Microsoft (keys, token, who the
//! member is, the answer) is made with no pooled connection held; the answer and the
//! card changed go after the activity is answered.

use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{NaiveDate, NaiveTime};
use serde_json::Value;

use super::words;
use crate::chat::teams::connector::Bot;
use crate::chat::teams::{cards, verify, Activity, Endpoints};
use crate::config::ChatKind;
use crate::error::ApiError;
use crate::http::state::{with_conn, with_write, AppState};
use crate::services::access::Acting;
use crate::services::coe::actions::NewAction;
use crate::services::from_chat::{self, Made, Move, MoveError, Platform};
use crate::services::intake::report::FailureReport;

/// Largest activity taken: a card's inputs are the biggest Teams sends.
const MAX_BODY: usize = 256 * 1024;

/// How long one call to Microsoft may take (Teams waits fifteen seconds for the
/// answer; most calls are answered from what is kept).
const CALL: Duration = Duration::from_secs(2);

const USAGE: &str = "**What coe does here** (mention it: @coe …)\n\n\
    - **report**: report a failure no alert caught (in a channel, the channel is linked to its COE)\n\
    - **follow-up**: add a corrective action to the COE this channel is linked to\n\
    - **link** *COE address*: link this channel to a COE\n\
    - **mine**, in your chat with coe: what waits on you, with buttons to mark done, move a due date or verify";

fn bots(state: &AppState) -> Vec<Bot> {
    state
        .env()
        .connections
        .channels
        .iter()
        .filter(|c| c.kind == ChatKind::Teams)
        .filter_map(|c| {
            Some(Bot {
                app_id: c.app_id.clone()?,
                password: c.app_password.as_ref()?.expose().to_owned(),
                tenant: c.tenant_id.clone(),
                endpoints: Endpoints::of(c.api_url.as_deref(), c.tenant_id.as_deref()),
                timeout: CALL,
            })
        })
        .collect()
}

/// Why an activity is not taken.
enum Unchecked {
    /// Its token (or its channel) is not the Bot Connector's for a bot of coe's.
    Refused(String),
    /// The Bot Connector's keys could not be read.
    Unavailable(String),
}

/// The bot whose token `authorization` carries, checked for `activity`: nothing is
/// fetched for a request that carries no token coe could check, or that comes from
/// another channel than Teams.
fn checked(
    bots: &[Bot],
    authorization: Option<&str>,
    activity: &Activity,
) -> Result<Bot, Unchecked> {
    if bots.is_empty() {
        return Err(Unchecked::Refused(
            "no Teams bot is set up in coe".to_owned(),
        ));
    }
    if let Err(e) = verify::token_of(authorization) {
        return Err(Unchecked::Refused(e.to_string()));
    }
    if activity.channel_id != "msteams" {
        return Err(Unchecked::Refused(format!(
            "the activity comes from the channel {:?}, not Microsoft Teams",
            activity.channel_id
        )));
    }
    let mut why = String::new();
    for bot in bots {
        let at = |fresh| bot.keys(fresh).map_err(Unchecked::Unavailable);
        let check = |keys: &Value| {
            verify::check(
                authorization,
                keys,
                &bot.app_id,
                &activity.service_url,
                &activity.channel_id,
            )
        };
        let result = match check(&at(false)?) {
            Err(verify::Refused::NoKey) => check(&at(true)?),
            other => other,
        };
        match result {
            Ok(()) => return Ok(bot.clone()),
            Err(e) => why = e.to_string(),
        }
    }
    Err(Unchecked::Refused(why))
}

/// `POST /chat/teams/messages`.
pub async fn messages(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body =
        crate::http::extract::read_body(payload, MAX_BODY, "256 KiB for a Teams activity").await?;
    let activity = Activity::read(&body).map_err(ApiError::BadRequest)?;
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let all = bots(&state);
    let seen = activity.clone();
    let bot = web::block(move || checked(&all, authorization.as_deref(), &seen)).await?;
    let count = |outcome| {
        state
            .metrics
            .chat_move(Platform::Teams.as_str(), "activity", outcome)
    };
    let bot = match bot {
        Ok(bot) => bot,
        Err(Unchecked::Refused(why)) => {
            count("unsigned");
            return Err(ApiError::Unauthorized(why));
        }
        Err(Unchecked::Unavailable(why)) => {
            count("failed");
            return Err(ApiError::Unavailable(format!(
                "coe cannot check the activity now ({why}): Teams sends it again"
            )));
        }
    };
    if activity.kind != "message" {
        return Ok(HttpResponse::Ok().finish());
    }
    let teams = Teams {
        state: state.clone(),
        bot,
        activity,
    };
    teams.act().await?;
    Ok(HttpResponse::Ok().finish())
}

struct Teams {
    state: web::Data<AppState>,
    bot: Bot,
    activity: Activity,
}

impl Teams {
    fn count(&self, what: &str, outcome: &str) {
        self.state
            .metrics
            .chat_move(Platform::Teams.as_str(), what, outcome);
    }

    fn personal(&self) -> bool {
        self.activity.conversation_type == "personal"
    }

    /// Answers the activity with `message`, after the activity is answered (a failure
    /// is logged: the move stands).
    fn answer(&self, message: Value) {
        let (bot, a) = (self.bot.clone(), self.activity.clone());
        actix_web::rt::spawn(async move {
            let sent =
                web::block(move || bot.reply(&a.service_url, &a.conversation, &a.id, &message))
                    .await;
            if let Ok(Err(e)) = sent {
                tracing::warn!(error = %e, "a Teams answer was not taken");
            }
        });
    }

    fn say(&self, text: &str) {
        self.answer(cards::said(text));
    }

    /// The activity's key: Teams numbers activities within a conversation.
    fn key(&self) -> String {
        format!(
            "activity:{}:{}",
            self.activity.conversation, self.activity.id
        )
    }

    /// Who the Teams user is in coe, or what they were told: a member of the bot's own
    /// tenant whose email is a person in the directory.
    async fn person(&self, what: &str) -> Result<Option<Acting>, ApiError> {
        let tenant = self.bot.tenant.clone();
        if tenant.is_none() || self.activity.tenant != tenant {
            self.count(what, "not_in_directory");
            self.say("coe works with the members of its organisation's Microsoft tenant only. Nothing was changed.");
            return Ok(None);
        }
        let (bot, a) = (self.bot.clone(), self.activity.clone());
        let member =
            web::block(move || bot.member(&a.service_url, &a.conversation, &a.from)).await?;
        let email = match member {
            Ok(member) if member.tenant.is_some() && member.tenant != tenant => {
                self.count(what, "not_in_directory");
                self.say("coe works with the members of its organisation's Microsoft tenant only. Nothing was changed.");
                return Ok(None);
            }
            Ok(member) => match member.email {
                Some(email) => email,
                None => {
                    self.count(what, "not_in_directory");
                    self.say("coe knows people by the email Teams gives for them, and yours has none: ask an admin of coe. Nothing was changed.");
                    return Ok(None);
                }
            },
            Err(e) => {
                self.count(what, "failed");
                self.say(&format!("coe could not ask Teams who you are ({e}): try again in a minute. Nothing was changed."));
                return Ok(None);
            }
        };
        let shown = email.clone();
        let found = with_conn(&self.state, move |conn, _| {
            Ok(from_chat::person(conn, &email)?)
        })
        .await?;
        if found.is_none() {
            self.count(what, "not_in_directory");
            self.say(&format!(
                "You are not in coe's directory as {shown}: ask an admin of coe to add you, then try again. Nothing was changed."
            ));
        }
        Ok(found)
    }

    /// The channel a link is kept for: a team's channel as Microsoft Graph names it
    /// (`{team's group id}/{channel id}`; the channel id alone when the team's group
    /// cannot be asked). A chat is never linked.
    async fn linkable(&self) -> Result<Option<String>, ApiError> {
        if self.activity.conversation_type != "channel" {
            return Ok(None);
        }
        let Some(channel) = self.activity.teams_channel.clone() else {
            return Ok(None);
        };
        let group = match (&self.activity.team_group, &self.activity.team) {
            (Some(group), _) => Some(group.clone()),
            (None, Some(team)) => {
                let (bot, url, team) = (
                    self.bot.clone(),
                    self.activity.service_url.clone(),
                    team.clone(),
                );
                match web::block(move || bot.group_of(&url, &team)).await? {
                    Ok(group) => group,
                    Err(e) => {
                        tracing::warn!(error = %e, "the team's group id could not be asked");
                        None
                    }
                }
            }
            (None, None) => None,
        };
        Ok(Some(match group {
            Some(group) => format!("{group}/{channel}"),
            None => channel,
        }))
    }

    async fn act(&self) -> Result<(), ApiError> {
        if let Some(value) = self.activity.value.clone() {
            return self.pressed(&value).await;
        }
        // A command Teams delivers again is answered once.
        let key = self.key();
        let fresh = with_write(&self.state, move |conn, _| {
            Ok(from_chat::fresh(
                conn,
                Platform::Teams,
                &key,
                crate::db::now(),
            )?)
        })
        .await?;
        if !fresh {
            self.count("command", "repeated");
            return Ok(());
        }
        let text = self.activity.text.trim().to_owned();
        let (verb, rest) = text
            .split_once(char::is_whitespace)
            .map_or((text.as_str(), ""), |(v, r)| (v, r.trim()));
        let what = match verb.to_ascii_lowercase().as_str() {
            "" | "mine" => "mine",
            "report" => "report",
            "follow-up" | "followup" | "follow_up" => "follow_up",
            "link" => "link",
            _ => {
                self.say(USAGE);
                return Ok(());
            }
        };
        if what == "mine" && !self.personal() {
            // A person's list is theirs alone: Teams shows a channel everything.
            self.count("mine", "refused");
            self.say("Your list is yours alone: say **mine** in your chat with coe.");
            return Ok(());
        }
        let Some(acting) = self.person(what).await? else {
            return Ok(());
        };
        let once = crate::db::new_id();
        match what {
            "mine" => {
                let email = acting.actor.clone();
                let mine = with_conn(&self.state, move |conn, state| {
                    Ok(from_chat::mine(conn, state.env(), &email)?)
                })
                .await?;
                self.count("mine", "done");
                self.answer(words::mine(
                    &self.state.settings.public_url,
                    &mine,
                    None,
                    &once,
                ));
            }
            "report" => self.answer(cards::with_card(cards::report(&once))),
            "follow_up" => {
                let Some(channel) = self.linkable().await? else {
                    self.count("follow_up", "refused");
                    self.say("Add a follow-up from the COE's incident channel: **follow-up** there adds to the COE the channel is linked to.");
                    return Ok(());
                };
                let linked = with_conn(&self.state, move |conn, _| {
                    Ok(from_chat::linked(conn, Platform::Teams, &channel)?)
                })
                .await?;
                let Some((coe, title)) = linked else {
                    self.count("follow_up", "refused");
                    self.say("This channel is not linked to a COE yet: **report** here reports a failure and links it, or **link** *COE address* links it to one. Nothing was changed.");
                    return Ok(());
                };
                let due = self.state.settings.clock().today() + chrono::Duration::days(28);
                self.answer(cards::with_card(cards::follow_up(&coe, &title, due, &once)));
            }
            _ => {
                let Some(channel) = self.linkable().await? else {
                    self.count("link", "refused");
                    self.say(
                        "Link a team's channel from that channel: **link** *COE address* there.",
                    );
                    return Ok(());
                };
                let id = from_chat::coe_id_of(rest);
                let linked = with_conn(&self.state, move |conn, _| {
                    Ok(from_chat::name_channel(
                        conn,
                        Platform::Teams,
                        &channel,
                        &id,
                        &acting.editor(),
                    )?)
                })
                .await?;
                match linked {
                    Ok(title) => {
                        self.count("link", "done");
                        self.say(&format!("This channel is now linked to the COE **{title}**: **follow-up** here adds to it."));
                    }
                    Err(why) => {
                        self.count("link", "refused");
                        self.say(&format!("{why} Nothing was changed."));
                    }
                }
            }
        }
        Ok(())
    }

    /// A card's button: the move its data names, with the card's inputs.
    async fn pressed(&self, value: &Value) -> Result<(), ApiError> {
        let input = |name: &str| {
            value[name]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let action = input("action").unwrap_or_default();
        let asked = match value["coe"].as_str().unwrap_or_default() {
            "report" => {
                let started = match (input("started_date"), input("started_time")) {
                    (Some(d), Some(t)) => match (
                        d.parse::<NaiveDate>(),
                        NaiveTime::parse_from_str(&t, "%H:%M"),
                    ) {
                        (Ok(d), Ok(t)) => Some(d.and_time(t)),
                        _ => None,
                    },
                    _ => None,
                };
                Move::Report {
                    input: FailureReport {
                        title: input("title").unwrap_or_default(),
                        service: input("service"),
                        severity: input("severity").and_then(|s| s.parse().ok()),
                        started_at: started,
                        detected_at: None,
                        resolved_at: None,
                        customers_saw: input("customers_saw"),
                    },
                    channel: self.linkable().await?,
                }
            }
            "follow_up" => Move::FollowUp {
                coe: input("coe_id").unwrap_or_default(),
                input: NewAction {
                    title: input("title"),
                    owner: input("owner"),
                    due_date: input("due_date"),
                    priority: input("priority"),
                    kind: input("kind"),
                    success_criteria: input("success_criteria"),
                    ..NewAction::default()
                },
            },
            "done" => Move::Done {
                action,
                note: input("note"),
                evidence: input("evidence_url"),
            },
            "move_due" => Move::MoveDue {
                action,
                due: input("due_date").and_then(|d| d.parse().ok()),
                reason: input("reason"),
            },
            "verify" => Move::Verify { action },
            "send_back" => Move::SendBack {
                action,
                reason: input("reason"),
            },
            _ => return Ok(()),
        };
        let what = asked.as_str();
        let Some(acting) = self.person(what).await? else {
            return Ok(());
        };
        // The same button pressed twice (a card stays pressable) is one move: keyed by
        // the card's own mark; a retried delivery, by its activity.
        let key = match input("once") {
            Some(once) => format!("card:{once}:{what}:{}", input("action").unwrap_or_default()),
            None => self.key(),
        };
        let by = acting.clone();
        let done = with_conn(&self.state, move |conn, state| {
            Ok(from_chat::make(
                conn,
                state.env(),
                Platform::Teams,
                &key,
                &by,
                &asked,
            ))
        })
        .await?;
        let made = match done {
            Ok(Some(made)) => made,
            Ok(None) => {
                self.count(what, "repeated");
                return Ok(());
            }
            Err(MoveError::Database(e)) => {
                self.count(what, "failed");
                return Err(e.into());
            }
            Err(e) => {
                self.count(what, "refused");
                self.say(&format!("{} Nothing was changed.", e.words()));
                return Ok(());
            }
        };
        self.count(what, "done");
        let base = self
            .state
            .settings
            .public_url
            .trim_end_matches('/')
            .to_owned();
        let by = &acting.actor;
        let said = match &made {
            Made::Reported { incident, coe, title } => match coe {
                Some(coe) => format!("{by} reported a failure: **{title}**. Its COE: [open it in coe]({base}/coes/{coe}). This channel is linked to it: **follow-up** here adds a corrective action."),
                None => format!("Reported: **{title}**, below the severity that asks for a COE: [its incident in coe]({base}/incidents/{incident})."),
            },
            Made::Added { action, title, owner, due } => format!(
                "Added **{title}**, owned by {}, due {}: [open it in coe]({base}/actions/{action}).",
                owner.as_deref().unwrap_or_default(),
                due.as_deref().unwrap_or_default()
            ),
            Made::Moved { title, due, .. } => match what {
                "done" => format!("✓ **{title}** marked done by {by}: it waits for the reviewer's verification."),
                "move_due" => format!("✓ **{title}** now due {due}, moved by {by}."),
                "verify" => format!("✓ **{title}** verified by {by}."),
                _ => format!("↩ **{title}** sent back to its owner by {by}."),
            },
        };
        // The card the button was on says what happened; in the person's own chat, it
        // shows their list as it now stands (a channel sees only what happened).
        if let Some(card) = self.activity.reply_to.clone() {
            let replaced = if matches!(made, Made::Moved { .. }) && self.personal() {
                let email = acting.actor.clone();
                let mine = with_conn(&self.state, move |conn, state| {
                    Ok(from_chat::mine(conn, state.env(), &email)?)
                })
                .await?;
                words::mine(
                    &self.state.settings.public_url,
                    &mine,
                    Some(&said),
                    &crate::db::new_id(),
                )
            } else {
                cards::with_card(cards::card(vec![cards::text(&said)], Vec::new()))
            };
            let (bot, a) = (self.bot.clone(), self.activity.clone());
            actix_web::rt::spawn(async move {
                let changed = web::block(move || {
                    bot.update(&a.service_url, &a.conversation, &card, &replaced)
                })
                .await;
                if let Ok(Err(e)) = changed {
                    tracing::warn!(error = %e, "a Teams card was not changed");
                }
            });
        }
        self.say(&said);
        Ok(())
    }
}
