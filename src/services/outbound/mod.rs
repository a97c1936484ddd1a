//! What coe tells the outside world: the spine (`spine`) that turns what happened into
//! every consequence, and the one delivery queue (`queue`) that emails, chat notices
//! and tracker jobs wait in until they are sent.

pub mod approval;
pub mod chat;
pub mod connections;
pub mod notify;
pub mod outbox;
pub mod queue;
pub mod spine;
pub mod tickets;

pub use notify::DoneAction;
pub use spine::{happened, noted, ActionEvent, CoeEvent, Event, Fact, ReviewEvent};
/// What the pages and the API read of an action's ticket: the ticket (`ticket_of`)
/// and the tracker an action's ticket would go to (`ticket_destination`).
pub use tickets::{destination as ticket_destination, of as ticket_of};
