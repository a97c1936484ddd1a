//! Slack's side of work from chat, free of storage: a request's signature checked
//! (`verify`), what Slack posted read (`payload`), the modals and messages coe
//! answers with (`blocks`), and the Web API calls coe makes (`web`). What each move
//! does in coe is `services::from_chat`; the two addresses Slack posts to are
//! `http::slack`.

pub mod blocks;
pub mod direct;
mod payload;
mod verify;
pub mod web;

pub use payload::{Command, Interaction, Submitted};
pub use verify::{sign, verify, Unsigned, WINDOW_SECS};
