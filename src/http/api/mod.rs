//! JSON API handlers: extract, call a service, respond.

pub mod coes;
pub mod incidents;
pub mod ingest;
pub mod tokens;
