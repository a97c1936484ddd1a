//! Pure types and rules of the product. Nothing here knows about HTTP or the database.

pub mod action;
pub mod assessment;
pub mod auth;
pub mod bar_raiser;
pub mod clock;
pub mod coe;
pub mod coverage;
pub mod customer_summary;
pub mod distribution;
pub mod drill;
pub mod email;
pub mod event;
pub mod incident;
pub mod meeting;
pub mod names;
pub mod notifications;
pub mod reminder;
pub mod review;
pub mod search;
pub mod severity;
pub mod template;
pub mod timeline;
pub mod token;

pub use clock::Clock;
pub use email::EmailAddress;
pub use event::{EventKind, EventStatus, FailureEvent};
pub use severity::{Severity, SeverityMap};
pub use token::{Role, TokenName, TokenSecret};
