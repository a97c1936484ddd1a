//! The two addresses a Slack app posts to (docs/integrations.md): `/chat/slack/commands`
//! (the `/coe` command: `commands.rs`) and `/chat/slack/interactions` (a button pressed,
//! a modal submitted: `interactions.rs`). Each request is checked before anything is
//! read from it: its signature against the signing secret of a Slack channel that has
//! one (five minutes, constant time, a replayed signature refused), then its Slack user
//! is a person in coe's directory by their profile's email (`users.info`), else they
//! are told privately to ask an admin and nothing changes. Slack waits three seconds:
//! a move is answered at once, and what changes a message afterwards goes through
//! `response_url` with no pooled connection held.

mod commands;
mod intake;
mod interactions;
mod words;

pub use commands::commands;
pub use interactions::interactions;
