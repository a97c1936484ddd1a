//! Use cases. Each public function is one transaction over a connection; HTTP
//! handlers and the command line call these, never diesel directly.
//!
//! They are grouped in wings that show the product, lowest first: `directory` (who
//! is who), `outbound` (what leaves coe: the spine and the delivery queue),
//! `incidents` (what the alerting systems said), `coe` (the writeup, its actions and
//! review), `intake` (failures coming in), `figures` (what leaders read),
//! `accounts` (sign-in, provisioning, leavers) and `reminders`. A wing imports the
//! wings before it and the shared leaves at this root (`access`, `audit`, `connections`, `env`,
//! `forms`, `replicas`, `search_index`, `sweep_settings`), never one after it:
//! `architecture_tests::wings` parses every module to check it.

pub mod access;
pub mod accounts;
pub mod audit;
pub mod coe;
pub mod connections;
pub mod directory;
mod env;
pub mod figures;
pub mod forms;
pub mod from_chat;
pub mod incidents;
pub mod intake;
pub mod outbound;
pub mod reminders;
pub mod replicas;
pub mod search_index;
pub mod sweep_settings;

pub use env::{Env, Runtime};
