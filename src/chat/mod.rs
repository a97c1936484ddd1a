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

/// What a chat form offers for a failure's severity, as the service reads it and as
/// people read it.
pub const SEVERITIES: [(&str, &str); 5] = [
    ("sev1", "Sev 1 (worst)"),
    ("sev2", "Sev 2"),
    ("sev3", "Sev 3"),
    ("sev4", "Sev 4"),
    ("sev5", "Sev 5"),
];

/// A corrective action's priorities.
pub const PRIORITIES: [(&str, &str); 3] = [("high", "High"), ("medium", "Medium"), ("low", "Low")];

/// A corrective action's kinds.
pub const KINDS: [(&str, &str); 5] = [
    ("prevent", "Prevent it happening again"),
    ("detect", "Detect it sooner"),
    ("mitigate", "Mitigate it faster"),
    ("diagnose", "Diagnose it faster"),
    ("process", "Change a process"),
];
