//! Working from Matrix: coe's bot reads the rooms it is in (each Matrix channel with
//! `people_domain`), from where it last stopped, and answers what is written to it:
//! `!coe report`, `!coe follow-up`, `!coe link`, `!coe mine`, and replies or reactions
//! to its messages about an action (done, a new due date, verify, send back). A user of
//! the bot's own homeserver, `@name:…`, is the person `name@people_domain` in the
//! directory; anyone else is told so and nothing changes. Each move is made once for
//! its event (`make`), and no pooled connection is held while the homeserver is asked.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use chrono::NaiveDate;
use diesel::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

mod mine;
mod said;

use said::Said;

use super::moves::{Made, Move, MoveError};
use super::Platform;
use crate::chat::matrix::command::{self, Answer, Verb, Written};
use crate::chat::matrix::{self as chat, Bot, Event, MARK};
use crate::config::{ChannelSettings, ChatKind};
use crate::db::schema::chat_cursors;
use crate::db::{self, DbConnection, DbPool};
use crate::services::access::Acting;
use crate::services::coe::actions::NewAction;
use crate::services::intake::report::FailureReport;
use crate::services::Env;

/// What one read of the rooms heard: each move asked, with how it ended (as
/// `/metrics` counts them), and what failed.
#[derive(Debug, Default)]
pub struct Heard {
    pub moves: Vec<(&'static str, &'static str)>,
    pub failures: Vec<String>,
}

/// Older than this, a message is not taken as asked now: its key would be gone.
const FRESH_HOURS: i64 = 24;

/// Most of a person's items coe answers `!coe mine` with, one message each.
const ITEMS: usize = 10;

const USAGE: &str = "What coe does here:\n\
    • !coe report <what is broken>, then service:, severity:, started: (UTC) and customers saw: on lines of their own (or after |) — reports a failure no alert caught and links this room to its COE\n\
    • !coe follow-up <title>, then owner: (@name or email), due: (YYYY-MM-DD), priority:, kind:, done when: — adds a corrective action to the COE this room is linked to\n\
    • !coe link <COE address> — links this room to a COE\n\
    • !coe mine — what waits on you; reply to coe's message about an action with done <what was done> <evidence link>, due <YYYY-MM-DD> <why>, verify, or send back <why>; a ✅ reaction verifies";

const ANSWERS: &str = "Reply to this message with: done <what was done> <evidence link> · due <YYYY-MM-DD> <why> · verify (or react ✅) · send back <why>.";

/// The Matrix channels people work from, one per bot account.
fn listening(env: Env<'_>) -> Vec<ChannelSettings> {
    let mut seen = HashSet::new();
    env.connections
        .channels
        .iter()
        .filter(|c| c.kind == ChatKind::Matrix && c.people_domain.is_some())
        .filter(|c| {
            seen.insert((
                c.homeserver.clone().unwrap_or_default(),
                c.access_token
                    .as_ref()
                    .map(|t| t.expose().to_owned())
                    .unwrap_or_default(),
            ))
        })
        .cloned()
        .collect()
}

/// Reads each listening bot's rooms once, waiting up to `wait` in all for something
/// to happen, and answers.
pub fn listen(pool: &DbPool, env: Env<'_>, wait: Duration) -> Heard {
    let channels = listening(env);
    let mut heard = Heard::default();
    if channels.is_empty() {
        return heard;
    }
    let each = wait / u32::try_from(channels.len()).unwrap_or(u32::MAX);
    for channel in &channels {
        if let Err(e) = listen_as(pool, env, channel, each, &mut heard) {
            heard.failures.push(format!("{}: {e}", channel.name));
        }
    }
    heard
}

/// The bot's own user id, asked once per bot account in this process.
fn whoami(bot: &Bot, account: &str) -> Result<String, String> {
    static KNOWN: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Mutex::default);
    let found = known
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(account)
        .cloned();
    if let Some(user) = found {
        return Ok(user);
    }
    let user = bot.whoami()?;
    known
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(account.to_owned(), user.clone());
    Ok(user)
}

fn hashed(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..12])
}

/// One bot's rooms, read and answered.
struct Room<'a> {
    pool: &'a DbPool,
    env: Env<'a>,
    bot: Bot,
    /// The bot's user id.
    me: String,
    domain: String,
    heard: &'a mut Heard,
}

fn listen_as(
    pool: &DbPool,
    env: Env<'_>,
    channel: &ChannelSettings,
    wait: Duration,
    heard: &mut Heard,
) -> Result<(), String> {
    let base = channel.homeserver.as_deref().unwrap_or_default();
    let token = channel
        .access_token
        .as_ref()
        .map(|t| t.expose())
        .unwrap_or_default();
    let bot = Bot::new(base, token, Duration::from_secs(10));
    let me = whoami(&bot, &hashed(&format!("{base} {token}")))?;
    let account = format!("{} {me}", base.trim_end_matches('/'));
    let since = with(pool, |conn| position(conn, &account))?;
    let synced = bot.sync(since.as_deref(), wait)?;
    let mut room = Room {
        pool,
        env,
        bot,
        me,
        domain: channel.people_domain.clone().unwrap_or_default(),
        heard,
    };
    for (id, by) in &synced.invites {
        room.invited(id, by);
    }
    let now = db::now();
    for event in &synced.events {
        let at = chrono::DateTime::from_timestamp_millis(event.at_millis)
            .map(|t| t.naive_utc())
            .unwrap_or_default();
        if event.sender == room.me || now - at > chrono::Duration::hours(FRESH_HOURS) {
            continue;
        }
        // A failure here (the database, the homeserver away) stops the read where it
        // is: the next read takes the same messages again, and what was made is not
        // made twice.
        if let Err(e) = room.heard_event(event) {
            room.heard.failures.push(e);
            return Ok(());
        }
    }
    for gap in &synced.gaps {
        tracing::warn!(
            room = %gap,
            "more was said in a Matrix room than one read brings: older messages there were not read"
        );
    }
    with(pool, |conn| {
        keep_position(conn, &account, since.as_deref(), &synced.next)
    })
}

/// Runs `f` on a pooled connection, given back before anything else is asked.
fn with<T>(
    pool: &DbPool,
    f: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
) -> Result<T, String> {
    let mut conn = pool
        .get()
        .map_err(|e| format!("no database connection: {e}"))?;
    f(&mut conn).map_err(|e| format!("the database: {e}"))
}

/// Where bot `account` last stopped reading.
fn position(conn: &mut DbConnection, account: &str) -> QueryResult<Option<String>> {
    chat_cursors::table
        .filter(chat_cursors::platform.eq(Platform::Matrix.as_str()))
        .filter(chat_cursors::account.eq(account))
        .select(chat_cursors::position)
        .first(conn)
        .optional()
}

/// Moves bot `account`'s place from `since` to `at`, only if it is still at `since`:
/// a replica that read more slowly does not take another's place back.
fn keep_position(
    conn: &mut DbConnection,
    account: &str,
    since: Option<&str>,
    at: &str,
) -> QueryResult<()> {
    let now = db::now();
    let mine = chat_cursors::table
        .filter(chat_cursors::platform.eq(Platform::Matrix.as_str()))
        .filter(chat_cursors::account.eq(account));
    db::write_transaction(conn, |conn| {
        match since {
            Some(since) => {
                diesel::update(mine.filter(chat_cursors::position.eq(since)))
                    .set((
                        chat_cursors::position.eq(at),
                        chat_cursors::updated_at.eq(now),
                    ))
                    .execute(conn)?;
            }
            None => {
                crate::insert_or_ignore!(
                    conn,
                    diesel::insert_into(chat_cursors::table).values((
                        chat_cursors::platform.eq(Platform::Matrix.as_str()),
                        chat_cursors::account.eq(account),
                        chat_cursors::position.eq(at),
                        chat_cursors::updated_at.eq(now),
                    )),
                    (chat_cursors::platform, chat_cursors::account)
                )?;
            }
        }
        Ok(())
    })
}

impl Room<'_> {
    fn count(&mut self, what: &'static str, outcome: &'static str) {
        self.heard.moves.push((what, outcome));
    }

    fn base(&self) -> String {
        self.env
            .settings
            .public_url
            .trim_end_matches('/')
            .to_owned()
    }

    /// Says `said` in reply to `event` (the `n`th thing said to it), about action
    /// `about` when given: once, however often the event is read. A homeserver that
    /// does not take it is noted; the move stands.
    fn answer(
        &mut self,
        event: &Event,
        n: usize,
        said: &Said,
        about: Option<&str>,
    ) -> Result<(), String> {
        let content = chat::reply(
            &event.id,
            &said.text,
            &said.html,
            about.map(|a| json!({"action": a})),
        );
        let txn = format!("coe-{}", hashed(&format!("{}:{n}", event.id)));
        if let Err(e) = self.bot.say(&event.room, &txn, &content) {
            self.heard
                .failures
                .push(format!("answering {} in {}: {e}", event.id, event.room));
        }
        Ok(())
    }

    /// The person Matrix user `user` is: `name@people_domain` for a user of the bot's
    /// own homeserver who is in the directory.
    fn person(&self, user: &str) -> Result<Option<Acting>, String> {
        let Some(email) = self.email_of(user) else {
            return Ok(None);
        };
        with(self.pool, |conn| super::person(conn, &email))
    }

    fn email_of(&self, user: &str) -> Option<String> {
        let ours = chat::server_of(&self.me)?;
        (chat::server_of(user)? == ours).then_some(())?;
        let local = chat::localpart_of(user)?.to_owned();
        Some(format!("{local}@{}", self.domain))
    }

    /// An invitation: taken from someone in the directory.
    fn invited(&mut self, room: &str, by: &str) {
        match self.person(by) {
            Ok(Some(_)) => {
                if let Err(e) = self.bot.join(room) {
                    self.heard
                        .failures
                        .push(format!("joining {room} when {by} invited coe: {e}"));
                }
            }
            Ok(None) => {}
            Err(e) => self.heard.failures.push(e),
        }
    }

    /// Tells `event`'s sender that they are not in the directory; counts it.
    fn stranger(&mut self, event: &Event, what: &'static str) -> Result<(), String> {
        self.count(what, "not_in_directory");
        let said = match self.email_of(&event.sender) {
            Some(email) => format!(
                "You are not in coe's directory as {email}: ask an admin of coe to add you, then try again. Nothing was changed."
            ),
            None => format!(
                "coe knows the people of {}'s homeserver only ({} is not one): ask an admin of coe. Nothing was changed.",
                chat::server_of(&self.me).unwrap_or_default(),
                event.sender
            ),
        };
        self.answer(event, 0, &Said::new(&said), None)
    }

    fn heard_event(&mut self, event: &Event) -> Result<(), String> {
        match command::read(&event.kind, &event.content) {
            Written::Other => Ok(()),
            Written::Command {
                verb: Verb::Help, ..
            } => self.answer(event, 0, &Said::new(USAGE), None),
            Written::Command {
                verb,
                first,
                fields,
            } => {
                let Some(acting) = self.person(&event.sender)? else {
                    return self.stranger(event, verb.as_str());
                };
                match verb {
                    Verb::Mine => self.mine(event, &acting),
                    Verb::Link => self.link(event, &acting, &first),
                    Verb::Report => {
                        let asked = self.report(&first, &fields);
                        self.moved(event, &acting, "report", asked)
                    }
                    _ => {
                        let asked = self.follow_up(event, &first, &fields)?;
                        self.moved(event, &acting, "follow_up", asked)
                    }
                }
            }
            Written::Reply { to, answer } => {
                let Some(action) = self.about(&event.room, &to)? else {
                    return Ok(());
                };
                let Some(acting) = self.person(&event.sender)? else {
                    return self.stranger(event, answer.as_str());
                };
                let asked = match answer {
                    Answer::Unknown => {
                        return self.answer(event, 0, &Said::new(ANSWERS), Some(&action));
                    }
                    Answer::Done { note, evidence } => Move::Done {
                        action,
                        note,
                        evidence,
                    },
                    Answer::MoveDue { date, reason } => Move::MoveDue {
                        action,
                        due: date.parse::<NaiveDate>().ok(),
                        reason,
                    },
                    Answer::Verify => Move::Verify { action },
                    Answer::SendBack { reason } => Move::SendBack { action, reason },
                };
                self.moved(event, &acting, "", Ok(asked))
            }
            Written::Reaction { to, key } => {
                if !command::VERIFYING.contains(&key.as_str()) {
                    return Ok(());
                }
                let Some(action) = self.about(&event.room, &to)? else {
                    return Ok(());
                };
                let Some(acting) = self.person(&event.sender)? else {
                    return self.stranger(event, "verify");
                };
                self.moved(event, &acting, "verify", Ok(Move::Verify { action }))
            }
        }
    }

    /// The action coe's message `id` in `room` is about, if it is coe's and about one.
    fn about(&self, room: &str, id: &str) -> Result<Option<String>, String> {
        let Some(message) = self.bot.event(room, id)? else {
            return Ok(None);
        };
        if message["sender"].as_str() != Some(self.me.as_str()) {
            return Ok(None);
        }
        Ok(message["content"][MARK]["action"]
            .as_str()
            .map(str::to_owned))
    }

    fn report(
        &self,
        first: &str,
        fields: &std::collections::BTreeMap<String, String>,
    ) -> Result<Move, (String, String)> {
        let today = self.env.settings.clock().today();
        let started_at = match fields.get("started") {
            Some(text) => Some(command::started(text, today).ok_or_else(|| {
                (
                    "started_at".to_owned(),
                    format!("“{text}” is not a time: write it as 2026-12-07 14:05 (UTC) or 14:05 (today)"),
                )
            })?),
            None => None,
        };
        let severity = match fields.get("severity") {
            Some(s) => Some(s.parse().map_err(|e: String| ("severity".to_owned(), e))?),
            None => None,
        };
        Ok(Move::Report {
            input: FailureReport {
                title: first.to_owned(),
                service: fields.get("service").cloned(),
                severity,
                started_at,
                detected_at: None,
                resolved_at: None,
                customers_saw: fields.get("customers_saw").cloned(),
            },
            channel: None,
        })
    }

    fn follow_up(
        &self,
        event: &Event,
        first: &str,
        fields: &std::collections::BTreeMap<String, String>,
    ) -> Result<Result<Move, (String, String)>, String> {
        let room = event.room.clone();
        let Some((coe, _)) = with(self.pool, |conn| {
            super::linked(conn, Platform::Matrix, &room)
        })?
        else {
            return Ok(Err((
                "room".to_owned(),
                "this room is not linked to a COE yet: !coe report here reports a failure and links it, or !coe link <COE address> links it to one".to_owned(),
            )));
        };
        let mentioned = event.content["m.mentions"]["user_ids"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|u| *u != self.me)
            .map(str::to_owned);
        let owner = match fields.get("owner").map(|o| o.trim()) {
            Some(o) if o.starts_with('@') && o.contains(':') => match self.email_of(o) {
                Some(email) => Some(email),
                None => {
                    return Ok(Err((
                        "owner".to_owned(),
                        format!("{o} is not of this homeserver: name someone in coe's directory"),
                    )))
                }
            },
            Some(o) if o.contains('@') => Some(o.to_owned()),
            _ => mentioned.and_then(|u| self.email_of(&u)),
        };
        // No date given: the priority's target when one applies (`[[actions.targets]]`),
        // else four weeks.
        let due = fields.get("due").cloned().or_else(|| {
            self.env.settings.actions.targets.is_empty().then(|| {
                (self.env.settings.clock().today() + chrono::Duration::days(28)).to_string()
            })
        });
        Ok(Ok(Move::FollowUp {
            coe,
            input: NewAction {
                title: (!first.is_empty()).then(|| first.to_owned()),
                owner,
                due_date: due,
                priority: fields.get("priority").cloned(),
                kind: fields.get("kind").cloned(),
                success_criteria: fields.get("done_when").cloned(),
                ..NewAction::default()
            },
        }))
    }

    /// Makes `asked` (or says why it could not be read) and says what happened.
    fn moved(
        &mut self,
        event: &Event,
        acting: &Acting,
        what: &'static str,
        asked: Result<Move, (String, String)>,
    ) -> Result<(), String> {
        let mut asked = match asked {
            Ok(asked) => asked,
            Err((field, problem)) => {
                let e = MoveError::Action(crate::services::coe::actions::ActionError::Invalid(
                    vec![(field, problem)],
                ));
                self.count(what, "refused");
                return self.answer(
                    event,
                    0,
                    &Said::new(&format!("{} Nothing was changed.", e.words())),
                    None,
                );
            }
        };
        if let Move::Report { channel, .. } = &mut asked {
            *channel = Some(event.room.clone());
        }
        let what = asked.as_str();
        let key = format!("event:{}", event.id);
        let (env, by) = (self.env, acting.clone());
        let made = {
            let mut conn = self
                .pool
                .get()
                .map_err(|e| format!("no database connection: {e}"))?;
            super::make(&mut conn, env, Platform::Matrix, &key, &by, &asked)
        };
        let made = match made {
            Ok(Some(made)) => made,
            Ok(None) => {
                self.count(what, "repeated");
                return Ok(());
            }
            Err(MoveError::Database(e)) => return Err(format!("the database: {e}")),
            Err(e) => {
                self.count(what, "refused");
                let about = match &asked {
                    Move::Done { action, .. }
                    | Move::MoveDue { action, .. }
                    | Move::Verify { action }
                    | Move::SendBack { action, .. } => Some(action.as_str()),
                    _ => None,
                };
                return self.answer(
                    event,
                    0,
                    &Said::new(&format!("{} Nothing was changed.", e.words())),
                    about,
                );
            }
        };
        self.count(what, "done");
        let base = self.base();
        let by = &acting.actor;
        let (said, about) = match &made {
            Made::Reported {
                incident,
                coe,
                title,
            } => match coe {
                Some(coe) => (
                    Said::new(&format!("{by} reported a failure: "))
                        .then(Said::bold(title))
                        .and(". Its COE: ")
                        .then(Said::link(&format!("{base}/coes/{coe}"), "open it in coe"))
                        .and(". This room is linked to it: !coe follow-up here adds a corrective action."),
                    None,
                ),
                None => (
                    Said::new("Reported: ")
                        .then(Said::bold(title))
                        .and(", below the severity that asks for a COE: ")
                        .then(Said::link(&format!("{base}/incidents/{incident}"), "its incident in coe"))
                        .and("."),
                    None,
                ),
            },
            Made::Added {
                action,
                title,
                owner,
                due,
            } => (
                Said::new("Added ")
                    .then(Said::bold(title))
                    .and(&format!(
                        ", owned by {}, due {}: ",
                        owner.as_deref().unwrap_or_default(),
                        due.as_deref().unwrap_or_default()
                    ))
                    .then(Said::link(&format!("{base}/actions/{action}"), "open it in coe"))
                    .and(". ")
                    .and(ANSWERS),
                Some(action.clone()),
            ),
            Made::Moved {
                action,
                title,
                due,
            } => {
                let what_happened = match &asked {
                    Move::Done { .. } => format!(
                        " marked done by {by}: it waits for the reviewer's verification."
                    ),
                    Move::MoveDue { .. } => format!(" now due {due}, moved by {by}."),
                    Move::Verify { .. } => format!(" verified by {by}."),
                    _ => format!(" sent back to its owner by {by}."),
                };
                let mark = if matches!(asked, Move::SendBack { .. }) { "↩ " } else { "✓ " };
                (
                    Said::new(mark).then(Said::bold(title)).and(&what_happened),
                    Some(action.clone()),
                )
            }
        };
        self.answer(event, 0, &said, about.as_deref())
    }

    fn link(&mut self, event: &Event, acting: &Acting, first: &str) -> Result<(), String> {
        let id = super::coe_id_of(first);
        // Once for the event, as every move: a second read links nothing again.
        let key = format!("event:{}", event.id);
        let fresh = with(self.pool, |conn| {
            db::write_transaction(conn, |conn| {
                super::fresh(conn, Platform::Matrix, &key, db::now())
            })
        })?;
        if !fresh {
            self.count("link", "repeated");
            return Ok(());
        }
        let room = event.room.clone();
        let by = acting.clone();
        let linked = with(self.pool, |conn| {
            super::name_channel(conn, Platform::Matrix, &room, &id, &by.editor())
        })?;
        match linked {
            Ok(title) => {
                self.count("link", "done");
                let said = Said::new("This room is now linked to the COE ")
                    .then(Said::bold(&title))
                    .and(": !coe follow-up here adds to it.");
                self.answer(event, 0, &said, None)
            }
            Err(why) => {
                self.count("link", "refused");
                self.answer(
                    event,
                    0,
                    &Said::new(&format!("{why} Nothing was changed.")),
                    None,
                )
            }
        }
    }
}
