//! A sign-in link made on the host (`coe sign-in-link EMAIL`): the way in while the
//! SMTP server holds the emailed ones.

use chrono::Duration;
use diesel::prelude::*;

use crate::db::schema::{people, sign_in_links};
use crate::db::{self, DbConnection};
use crate::domain::auth;
use crate::domain::{EmailAddress, TokenSecret};
use crate::services::outbound::{self, Fact};
use crate::services::Env;

/// Why `coe sign-in-link` made no link.
#[derive(Debug, thiserror::Error)]
pub enum HostLinkError {
    #[error(
        "{0} is not in the directory: a sign-in link from the host is made only for a person \
         of the directory (add them with SCIM, the people import or PUT /api/v1/people/{0})"
    )]
    NotInDirectory(String),
    #[error(
        "{0} has left the organisation (marked inactive in the directory): no sign-in link is \
         made for them"
    )]
    Left(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// Who a link made on the host's command line is recorded as made by.
pub const HOST_COMMAND_LINE: &str = "host:command-line";

/// `coe sign-in-link EMAIL`, run on the host: a one-time sign-in link for a person of
/// the directory who has not left, made without email (an SMTP outage holds the emailed
/// ones). Only its hash is stored, as an emailed link's; it expires as they do; an audit
/// record says whom it was for and that it came from the host's command line. Returns
/// the link, to be shown once.
pub fn host_link(
    conn: &mut DbConnection,
    email: &EmailAddress,
    env: Env<'_>,
) -> Result<String, HostLinkError> {
    let settings = env.settings;
    let address = email.as_str();
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let active: Option<bool> = people::table
            .find(address)
            .select(people::active)
            .first(conn)
            .optional()?;
        match active {
            None => return Err(HostLinkError::NotInDirectory(address.to_owned())),
            Some(false) => return Err(HostLinkError::Left(address.to_owned())),
            Some(true) => {}
        }
        let secret = TokenSecret::generate();
        let id = db::new_id();
        let expires_at = now + Duration::minutes(auth::LINK_LIFETIME_MINUTES);
        diesel::insert_into(sign_in_links::table)
            .values((
                sign_in_links::id.eq(&id),
                sign_in_links::email.eq(address),
                sign_in_links::token_hash.eq(secret.hash()),
                sign_in_links::next_path.eq(None::<String>),
                sign_in_links::created_at.eq(now),
                sign_in_links::expires_at.eq(expires_at),
            ))
            .execute(conn)?;
        let made = Fact::SignInLinkFromHost {
            address,
            link: &id,
            expires_at,
        };
        outbound::noted(conn, HOST_COMMAND_LINE, made, now)?;
        tracing::warn!(
            email = %address,
            link = %id,
            "a sign-in link was made on the host's command line (coe sign-in-link)"
        );
        Ok(format!(
            "{}/sign-in/confirm?token={}",
            settings.public_url.trim_end_matches('/'),
            secret.expose()
        ))
    })
}
