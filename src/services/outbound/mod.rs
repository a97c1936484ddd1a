//! What coe tells the outside world: the one delivery queue (`queue`) that emails,
//! chat notices and tracker jobs wait in until they are sent.

pub mod queue;
