//! JSON API handlers: extract, call a service, respond.

pub mod actions;
pub mod backchannel;
pub mod chat_import;
pub mod coes;
pub mod comments;
pub mod connections;
pub mod drills;
pub mod incidents;
pub mod ingest;
pub mod outage;
pub mod outbox;
pub mod people;
pub mod publishing;
pub mod stats;
pub mod templates;
pub mod tokens;
pub mod trackers;
