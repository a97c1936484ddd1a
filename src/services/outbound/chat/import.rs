//! "Import from chat": the messages of an incident channel in a time window, proposed
//! for a COE's timeline (the owner ticks those to keep; `coes::import_timeline` adds
//! them). Only channels coe may read (`chat::read::readable`) are offered.
//!
//! What a chat token reads is more than the COE, so a read is bounded three ways
//! besides who may ask (`access::read_chat`): the channel is one this COE may use
//! (`access::read_chat_channel`: a channel limited to teams or services serves their
//! COEs, an organisation-wide one every COE), the window lies near the COE's own
//! incidents (`Scope::span`, widened by `WINDOW_MARGIN_HOURS`), and it is at most
//! `MAX_WINDOW_DAYS` long; an admin may read any readable channel and any window.
//! Each read is written in the COE's history (`record`: who, which channel and
//! conversation, which window, how many messages; never their text). What is added
//! to the timeline is what the platform says when the channel is read again (`kept`),
//! never what a browser posts back.
//!
//! The steps run apart so that no pooled connection is held while the platform
//! answers: `open` and `plan` on a connection, `read` without one, `record` (with the
//! import) on a connection again.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde_json::json;

use crate::chat::read::{self, Said};
use crate::config::ChannelSettings;
use crate::db::schema::{chat_links, coe_incidents, coes, incidents};
use crate::db::DbConnection;
use crate::services::access::{self, Editor};
use crate::services::audit::{self, Change, Subject};
use crate::services::Env;

/// The longest window read at once.
pub const MAX_WINDOW_DAYS: i64 = 14;

/// How far before a COE's incidents start, and after they end, its owner or reviewer
/// may read a channel: the talk that led to the alert and the clean-up after it, not
/// any other day of the channel (an admin reads any window).
pub const WINDOW_MARGIN_HOURS: i64 = 24;

/// How far before it was opened a COE without incidents (a failure reported by hand)
/// may say its outage started, for what it may read.
pub const REPORTED_REACH_DAYS: i64 = 7;

/// The audit action of a read (`record`).
pub const READ_ACTION: &str = "chat:read";

/// Why nothing could be proposed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The field and what is wrong with it.
    #[error("{1}")]
    Invalid(&'static str, String),
    /// The caller may not read that channel into this COE.
    #[error("{0}")]
    Forbidden(String),
    /// The platform did not answer as it should (its words).
    #[error("{0}")]
    Platform(String),
}

/// The channels coe may read back, by name.
pub fn channels(env: Env<'_>) -> Vec<&ChannelSettings> {
    env.connections
        .channels
        .iter()
        .filter(|c| read::readable(c))
        .collect()
}

/// What a COE allows to be read into it.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Its team (`ownership::team_of_coe`: its owner's, else its service's) and
    /// service, which decide the channels it may use.
    pub team: Option<String>,
    pub service: Option<String>,
    /// The window read when none is given: from the COE's start, else the day before
    /// it was opened, to its resolution (`None` while it has none: until the read).
    pub window: (NaiveDateTime, Option<NaiveDateTime>),
    /// Its incidents' span: the earliest start or detection of the incidents it covers
    /// to their last resolution (`None` while one is unresolved: until now); for a COE
    /// without incidents, its own start (at most `REPORTED_REACH_DAYS` before it was
    /// opened; its opening when none is known) to its resolution.
    pub span: (NaiveDateTime, Option<NaiveDateTime>),
    /// The chat channels linked to it, by platform (`slack`, `matrix`), the latest
    /// first (where its failure was reported from chat, or one linked with `/coe link`
    /// or `!coe link`): what a channel of that platform reads when no conversation is
    /// named, for anyone who may read into the COE.
    pub linked: Vec<(String, String)>,
}

impl Scope {
    /// The window a non-admin may read within: the span widened by
    /// `WINDOW_MARGIN_HOURS` each side (its end from `now` while unresolved).
    pub fn allowed(&self, now: NaiveDateTime) -> (NaiveDateTime, NaiveDateTime) {
        let margin = Duration::hours(WINDOW_MARGIN_HOURS);
        let (start, end) = self.span;
        let end = end.unwrap_or(now).max(start);
        (start - margin, end + margin)
    }

    /// The readable channels offered for this COE to `who`, each with whether it is
    /// one of the COE's (an admin is offered the others too).
    pub fn channels<'s>(&self, env: Env<'s>, who: &Editor<'_>) -> Vec<(&'s ChannelSettings, bool)> {
        channels(env)
            .into_iter()
            .map(|c| (c, c.serves(self.team.as_deref(), self.service.as_deref())))
            .filter(|(_, ours)| *ours || access::reads_chat_beyond_the_coe(who))
            .collect()
    }
}

/// What a COE allows to be read into it (`Scope`); `None` when there is no such COE.
pub fn scope(conn: &mut DbConnection, id: &str) -> QueryResult<Option<Scope>> {
    type Row = (
        Option<NaiveDateTime>,
        Option<NaiveDateTime>,
        Option<NaiveDateTime>,
        NaiveDateTime,
        Option<String>,
        Option<String>,
    );
    let found: Option<Row> = coes::table
        .find(id)
        .select((
            coes::started_at,
            coes::detected_at,
            coes::resolved_at,
            coes::created_at,
            coes::owner_email,
            coes::service,
        ))
        .first(conn)
        .optional()?;
    let Some((started, detected, resolved, created, owner, service)) = found else {
        return Ok(None);
    };
    let covered: Vec<(NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>)> = coe_incidents::table
        .inner_join(incidents::table)
        .filter(coe_incidents::coe_id.eq(id))
        .select((
            incidents::started_at,
            incidents::detected_at,
            incidents::resolved_at,
        ))
        .load(conn)?;
    let team = crate::services::directory::ownership::team_of_coe(
        conn,
        owner.as_deref(),
        service.as_deref(),
    )?;
    // With incidents, their alerts are the evidence of when the outage was: the COE's
    // own times (which its owner may write) do not move the span. Without, the COE's
    // own times are all there is, and reach back at most `REPORTED_REACH_DAYS` before
    // it was opened.
    let (start, end) = if covered.is_empty() {
        let earliest = created - Duration::days(REPORTED_REACH_DAYS);
        let start = [started, detected]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(created)
            .clamp(earliest, created);
        (start, resolved.map(|r| r.max(start)))
    } else {
        let start = covered
            .iter()
            .flat_map(|(s, d, _)| [*s, *d])
            .min()
            .unwrap_or(created);
        let end = if covered.iter().all(|(_, _, r)| r.is_some()) {
            covered.iter().filter_map(|(_, _, r)| *r).max()
        } else {
            None
        };
        (start, end)
    };
    let linked: Vec<(String, String)> = chat_links::table
        .filter(chat_links::coe_id.eq(id))
        .order(chat_links::linked_at.desc())
        .select((chat_links::platform, chat_links::channel_id))
        .load(conn)?;
    Ok(Some(Scope {
        team,
        service,
        window: (started.unwrap_or(created - Duration::hours(24)), resolved),
        span: (start, end),
        linked,
    }))
}

/// Whether `who` may read a chat channel into COE `id` (`access::read_chat`; naming
/// another conversation when `elsewhere`), and what the COE allows to be read.
pub fn open(
    conn: &mut DbConnection,
    id: &str,
    who: &Editor<'_>,
    elsewhere: bool,
) -> Result<Scope, access::AccessError> {
    access::read_chat(conn, id, who, elsewhere)?;
    scope(conn, id)?.ok_or_else(|| access::AccessError::NotFound(id.to_owned()))
}

/// Whether "Import from chat" is offered on COE `id` to `who`: someone who may read a
/// channel into it, and a readable channel it may use (any readable one, for an
/// admin).
pub fn offered(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    who: &Editor<'_>,
) -> QueryResult<bool> {
    if channels(env).is_empty() {
        return Ok(false);
    }
    match open(conn, id, who, false) {
        Ok(scope) => Ok(!scope.channels(env, who).is_empty()),
        Err(access::AccessError::Database(e)) => Err(e),
        Err(_) => Ok(false),
    }
}

/// What a caller asks to read.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    /// A channel's name in the settings.
    pub channel: String,
    /// Another room or channel of it (admins only); the channel's own when `None`.
    pub conversation: Option<String>,
    /// The COE's window (`Scope::window`) where left out.
    pub from: Option<NaiveDateTime>,
    pub to: Option<NaiveDateTime>,
}

/// A read that may go ahead: its channel, conversation and window.
#[derive(Debug, Clone)]
pub struct Reading {
    pub channel: String,
    pub conversation: Option<String>,
    pub from: NaiveDateTime,
    pub to: NaiveDateTime,
    /// Whether the channel is one of the COE's (else an admin reads beyond it).
    pub ours: bool,
}

/// Checks `ask` against what `who` may read into a COE of `scope` at `now`: a
/// readable channel, one the COE may use (or an admin), a window of at most
/// `MAX_WINDOW_DAYS` that lies, for anyone but an admin, within the COE's incidents
/// widened by `WINDOW_MARGIN_HOURS` (`Scope::allowed`).
pub fn plan(
    env: Env<'_>,
    scope: &Scope,
    who: &Editor<'_>,
    ask: &Ask,
    now: NaiveDateTime,
) -> Result<Reading, ImportError> {
    let name = ask.channel.trim();
    let Some(channel) = channels(env).into_iter().find(|c| c.name == name) else {
        let names: Vec<&str> = scope
            .channels(env, who)
            .iter()
            .map(|(c, _)| c.name.as_str())
            .collect();
        return Err(ImportError::Invalid(
            "channel",
            if names.is_empty() {
                "no chat channel may be read into this COE: an admin gives a Slack or Mattermost \
                 channel of its team or service (or of the whole organisation) a read_token, or \
                 sets up a Matrix room"
                    .into()
            } else {
                format!(
                    "no channel that may be read is named {name:?}; there are: {}",
                    names.join(", ")
                )
            },
        ));
    };
    access::read_chat_channel(
        who,
        channel,
        scope.team.as_deref(),
        scope.service.as_deref(),
    )
    .map_err(|e| ImportError::Forbidden(e.to_string()))?;
    let from = ask.from.unwrap_or(scope.window.0);
    let to = ask.to.or(scope.window.1).unwrap_or(now);
    if to < from {
        return Err(ImportError::Invalid(
            "to",
            "the window ends before it starts".into(),
        ));
    }
    if to - from > Duration::days(MAX_WINDOW_DAYS) {
        return Err(ImportError::Invalid(
            "to",
            format!("a window of at most {MAX_WINDOW_DAYS} days is read"),
        ));
    }
    if !access::reads_chat_beyond_the_coe(who) {
        let (lo, hi) = scope.allowed(now);
        let span = || {
            format!(
                "between {} and {} (this COE's incidents, {WINDOW_MARGIN_HOURS} hours either side; \
                 an admin may read another window)",
                words(lo),
                if scope.span.1.is_some() {
                    words(hi)
                } else {
                    format!("{} (it is not resolved yet)", words(hi))
                }
            )
        };
        if from < lo {
            return Err(ImportError::Invalid(
                "from",
                format!("must be {}; got {}", span(), words(from)),
            ));
        }
        if to > hi {
            return Err(ImportError::Invalid(
                "to",
                format!("must be {}; got {}", span(), words(to)),
            ));
        }
    }
    // A Slack channel or a Matrix room reads the COE's own incident channel or room
    // when one is linked.
    let linked = scope
        .linked
        .iter()
        .find(|(platform, _)| platform == channel.kind.as_str())
        .map(|(_, linked)| linked.as_str());
    let conversation = ask
        .conversation
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .or(linked);
    if conversation.is_none() && read::default_conversation(channel).is_none() {
        return Err(ImportError::Invalid(
            "conversation",
            format!("{name} has no channel of its own to read (read_channel): name one"),
        ));
    }
    if conversation.is_some_and(|c| c.len() > 255) {
        return Err(ImportError::Invalid(
            "conversation",
            "a channel or room id of at most 255 characters".into(),
        ));
    }
    let ours = channel.serves(scope.team.as_deref(), scope.service.as_deref());
    Ok(Reading {
        channel: channel.name.clone(),
        conversation: conversation.map(str::to_owned),
        from,
        to,
        ours,
    })
}

/// A time as the errors and the history say it.
pub fn words(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The messages people wrote in the planned conversation and window, oldest first.
/// Calls the platform: run it with no pooled connection held.
pub fn read(env: Env<'_>, reading: &Reading) -> Result<Vec<Said>, ImportError> {
    let settings = env.settings;
    let Some(channel) = channels(env)
        .into_iter()
        .find(|c| c.name == reading.channel)
    else {
        return Err(ImportError::Invalid(
            "channel",
            format!("no channel that may be read is named {:?}", reading.channel),
        ));
    };
    read::read(
        channel,
        reading.conversation.as_deref(),
        reading.from,
        reading.to,
        std::time::Duration::from_secs(settings.chat.timeout_secs),
    )
    .map_err(ImportError::Platform)
}

/// Writes in COE `id`'s history that `actor` read `count` messages (`READ_ACTION`):
/// the channel, the conversation, the window, whether the channel was one of the
/// COE's; never the messages.
pub fn record(
    conn: &mut DbConnection,
    id: &str,
    actor: &str,
    reading: &Reading,
    count: usize,
    now: NaiveDateTime,
) -> QueryResult<()> {
    crate::db::write_transaction(conn, |conn| {
        audit::record(
            conn,
            Change {
                subject: Subject::Coe(id),
                actor,
                action: READ_ACTION,
                before: None,
                after: Some(json!({
                    "channel": reading.channel,
                    "conversation": reading.conversation,
                    "from": crate::json::format_utc(&reading.from),
                    "to": crate::json::format_utc(&reading.to),
                    "messages": count,
                    "ours": reading.ours,
                })),
            },
            now,
        )
    })
}

/// A message's key on the page: the first 16 bytes of the SHA-256 of its time, author
/// and text, in hex. A form names the messages it keeps by these, so that what is
/// added is the platform's message, not what the form carried.
pub fn key(said: &Said) -> String {
    use sha2::{Digest, Sha256};
    let identity = json!([crate::json::format_utc(&said.at), said.author, said.text]).to_string();
    hex::encode(&Sha256::digest(identity.as_bytes())[..16])
}

/// The messages of `said` (read again from the platform) whose keys are in `keep`, in
/// their order; or how many of `keep` are no longer there (deleted or edited since).
pub fn kept(said: &[Said], keep: &[String]) -> Result<Vec<Said>, usize> {
    use std::collections::BTreeSet;
    let keys: Vec<String> = said.iter().map(key).collect();
    let there: BTreeSet<&str> = keys.iter().map(String::as_str).collect();
    let ticked: BTreeSet<&str> = keep.iter().map(String::as_str).collect();
    let missing = ticked.iter().filter(|k| !there.contains(*k)).count();
    if missing > 0 {
        return Err(missing);
    }
    Ok(said
        .iter()
        .zip(&keys)
        .filter(|(_, k)| ticked.contains(k.as_str()))
        .map(|(s, _)| s.clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").expect("time")
    }

    fn said(author: &str, text: &str) -> Said {
        Said {
            author: author.into(),
            at: at("2026-12-01 10:01"),
            text: text.into(),
        }
    }

    #[test]
    fn a_kept_message_is_the_platform_s_and_a_changed_one_is_missing() {
        let platform = vec![said("Ana Lima", "Rolling back"), said("Bo Chen", "ok")];
        let keep = vec![key(&platform[0])];
        assert_eq!(kept(&platform, &keep), Ok(vec![platform[0].clone()]));
        // The same words under another author are another message.
        let forged = key(&said("Eve", "Rolling back"));
        assert_eq!(kept(&platform, &[forged]), Err(1));
        assert_eq!(key(&platform[0]).len(), 32);
    }

    #[test]
    fn the_allowed_window_is_the_incidents_span_and_a_day_each_side() {
        let scope = Scope {
            team: None,
            service: None,
            window: (at("2026-12-01 10:00"), None),
            span: (at("2026-12-01 10:00"), Some(at("2026-12-01 12:00"))),
            linked: Vec::new(),
        };
        let now = at("2026-12-06 00:00");
        assert_eq!(
            scope.allowed(now),
            (at("2026-11-30 10:00"), at("2026-12-02 12:00"))
        );
        let open = Scope {
            span: (at("2026-12-01 10:00"), None),
            ..scope
        };
        assert_eq!(open.allowed(now).1, at("2026-12-07 00:00"));
    }
}
