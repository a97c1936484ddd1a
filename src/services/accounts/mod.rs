//! How people come, sign in and go: sign-in (`auth`), provisioning from the
//! identity provider (`scim`), and a person leaving with their work handed over
//! (`leaving`).

pub mod auth;
pub mod leaving;
pub mod scim;
