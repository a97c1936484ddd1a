//! Use cases. Each public function is one transaction over a connection; HTTP
//! handlers and the command line call these, never diesel directly.

pub mod actions;
pub mod calendar;
pub mod coes;
pub mod export;
pub mod incidents;
pub mod ingest;
pub mod outbox;
pub mod people;
pub mod reminders;
pub mod review;
pub mod sns;
pub mod stats;
pub mod tokens;
