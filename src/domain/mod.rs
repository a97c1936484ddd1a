//! Pure types and rules of the product. Nothing here knows about HTTP or the database.

pub mod email;
pub mod token;

pub use email::EmailAddress;
pub use token::{Role, TokenName, TokenSecret};
