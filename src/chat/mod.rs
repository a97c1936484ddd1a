//! Team chat (`[[chat.channels]]`): notices in each platform's own format
//! (`format`) and the one request that sends them (`send`). Which channel hears what,
//! the outbox of chat messages and its delivery are `services::outbound::chat`.

pub mod format;
pub mod matrix;
pub mod read;
pub mod send;
pub mod slack;
pub mod teams;

pub use format::{publication, render, Notice, PublicationEvent};
pub use send::{send, Sent};
