//! "Import from chat": the messages of an incident channel in a time window, proposed
//! for a COE's timeline (the owner ticks those to keep; `coes::import_timeline` adds
//! them). Only channels coe may read (`chat::read::readable`) are offered.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use crate::chat::read::{self, Said};
use crate::config::{ChannelSettings, Settings};
use crate::db::schema::coes;
use crate::db::DbConnection;

/// Why nothing could be proposed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The field and what is wrong with it.
    #[error("{1}")]
    Invalid(&'static str, String),
    /// The platform did not answer as it should (its words).
    #[error("{0}")]
    Platform(String),
}

/// The channels coe may read back, by name.
pub fn channels(settings: &Settings) -> Vec<&ChannelSettings> {
    settings
        .chat
        .channels
        .iter()
        .filter(|c| read::readable(c))
        .collect()
}

/// The window read when none is given: from the COE's start (from its incidents),
/// else the day before it was opened, to its resolution — `None` while it has none:
/// up to the moment the channel is read.
pub fn window(
    conn: &mut DbConnection,
    id: &str,
) -> QueryResult<Option<(NaiveDateTime, Option<NaiveDateTime>)>> {
    let found: Option<(Option<NaiveDateTime>, Option<NaiveDateTime>, NaiveDateTime)> = coes::table
        .find(id)
        .select((coes::started_at, coes::resolved_at, coes::created_at))
        .first(conn)
        .optional()?;
    Ok(found.map(|(started, resolved, created)| {
        (started.unwrap_or(created - Duration::hours(24)), resolved)
    }))
}

/// The messages people wrote in `conversation` of channel `name` (its own when none
/// is named) between `from` and `to`, oldest first.
pub fn propose(
    settings: &Settings,
    name: &str,
    conversation: Option<&str>,
    from: NaiveDateTime,
    to: NaiveDateTime,
) -> Result<Vec<Said>, ImportError> {
    let Some(channel) = channels(settings).into_iter().find(|c| c.name == name) else {
        let names: Vec<&str> = channels(settings).iter().map(|c| c.name.as_str()).collect();
        return Err(ImportError::Invalid(
            "channel",
            if names.is_empty() {
                "no chat channel may be read: give a Slack or Mattermost channel a read_token, or set up a Matrix room".into()
            } else {
                format!(
                    "no channel that may be read is named {name:?}; there are: {}",
                    names.join(", ")
                )
            },
        ));
    };
    if to < from {
        return Err(ImportError::Invalid(
            "to",
            "the window ends before it starts".into(),
        ));
    }
    if to - from > Duration::days(14) {
        return Err(ImportError::Invalid(
            "to",
            "a window of at most 14 days is read".into(),
        ));
    }
    let conversation = conversation.map(str::trim).filter(|c| !c.is_empty());
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
    read::read(
        channel,
        conversation,
        from,
        to,
        std::time::Duration::from_secs(settings.chat.timeout_secs),
    )
    .map_err(ImportError::Platform)
}
