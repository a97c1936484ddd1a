//! JSON API handlers: extract, call a service, respond.

pub mod tokens;
