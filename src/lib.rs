//! `coe`, the Correction of Errors service: failure events in, structured root-cause
//! writeups and corrective actions tracked to closure out. See `docs/architecture.md`.

#[cfg(test)]
mod architecture_tests;
pub mod chat;
pub mod cli;
pub mod config;
pub mod db;
pub mod demo;
pub mod domain;
pub mod email;
pub mod error;
pub mod http;
pub mod ingest;
pub mod jobs;
pub mod json;
pub mod oidc;
pub mod scim;
pub mod secrets;
pub mod services;
pub mod startup;
pub mod telemetry;
pub mod trackers;
