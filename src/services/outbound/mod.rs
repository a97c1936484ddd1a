//! What coe tells the outside world: the spine (`spine`) that turns what happened into
//! every consequence, and the one delivery queue (`queue`) that emails, chat notices
//! and tracker jobs wait in until they are sent.

pub mod approval;
pub mod chat;
pub mod notify;
pub mod outbox;
pub mod queue;
pub mod spine;
pub mod tickets;

pub use spine::{happened, Event};
