//! What leaders and owners read: counts over time (`stats`), how much of the service
//! map the COEs cover, the board, the review meeting's agenda, each person's work,
//! the calendar feed, the export and what the organisation has set up (`setup`, the
//! admins' first-run checklist). Reads `coe` and `directory`; writes little.

pub mod board;
pub mod calendar;
pub mod coverage;
pub mod drills;
pub mod export;
pub mod meeting;
pub mod setup;
pub mod stats;
pub mod times;
pub mod work;
