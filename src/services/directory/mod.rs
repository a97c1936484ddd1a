//! Who is who: the people directory, who owns which service, each person's email
//! settings and their API tokens. Imports only the shared leaves.

pub mod notifications;
pub mod ownership;
pub mod people;
pub mod tokens;
