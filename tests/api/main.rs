//! Black-box tests: each starts the real app on port 0 against a fresh database.
//! With `TEST_POSTGRES_URL` set they run on PostgreSQL (a new database per test),
//! otherwise on a SQLite file in a temporary folder.

mod helpers;

mod action_changes;
mod actions;
mod alertmanager;
mod attacks;
mod browser;
mod chat;
mod chat_import;
mod cli;
mod coe_pages;
mod coes;
mod delivery_crash;
mod email;
mod errors;
mod events;
mod health;
mod html;
mod inspection_pages;
mod keeping;
mod leaving;
mod mechanism;
mod migrations;
mod notifications;
mod oidc;
mod openapi;
mod operations;
mod outage;
mod outage_times;
mod overdue;
mod ownership;
mod page_routes;
mod pages;
mod people;
mod picker;
mod publishing;
mod report;
mod retention;
mod scim;
mod scim_attacks;
mod scraping;
mod search;
mod security;
mod stats;
mod storm;
mod template_versions;
mod templates_by_rule;
mod tokens;
mod tracker_double;
mod trackers;
mod trust;
mod webdriver;
mod webhooks;
mod work;
