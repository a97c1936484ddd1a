//! Sessions begun through an OpenID Provider: the person it vouches for signed in,
//! and its back-channel logout ending them.

use chrono::Duration;
use diesel::prelude::*;

use super::Method;
use super::{end, may_sign_in, session, start_session};
use crate::db::schema::{people, sessions};
use crate::db::{self, DbConnection};
use crate::domain::{EmailAddress, TokenSecret};
use crate::services::directory::people as directory;
use crate::services::Env;

/// What an OpenID Provider says of the person signing in, once its ID token passed
/// its checks (`oidc::Provider::finish`) and its address is one it vouches for
/// (`domain::auth::vouched_address`).
pub struct Vouched<'a> {
    pub email: &'a EmailAddress,
    pub name: Option<&'a str>,
    /// Admin by the provider's groups (`domain::auth::admin_by_groups`); `None`
    /// leaves it to the directory.
    pub admin: Option<bool>,
    /// The ID token, handed back to the provider on sign-out.
    pub id_token: &'a str,
    /// The provider's subject and session (`sub`, `sid`), which its back-channel
    /// logout names.
    pub subject: &'a str,
    pub provider_session: Option<&'a str>,
}

/// Starts a session for the person an OpenID Provider vouches for, when they may
/// sign in (the directory or `auth.allowed_domains`, as for the emailed link): they
/// join the directory if new, with the provider's name for them when the directory
/// has none, and are an admin or not by their groups when `auth.oidc.admin_groups`
/// names any. A session this browser held before (`previous`) ends. `None` when the
/// address may not sign in.
pub fn oidc_session(
    conn: &mut DbConnection,
    person: &Vouched<'_>,
    client: &str,
    previous: Option<&str>,
    env: Env<'_>,
) -> QueryResult<Option<TokenSecret>> {
    let address = person.email.as_str();
    if !may_sign_in(conn, address, env)? {
        tracing::info!(email = %address, "the sign-in provider vouched for an address that may not sign in");
        return Ok(None);
    }
    if let Some(secret) = previous {
        if let Some(before) = session(conn, secret, env)? {
            end(conn, &before.session_id, "signed in again")?;
        }
    }
    db::write_transaction(conn, |conn| {
        let now = db::now();
        directory::ensure(conn, address, now)?;
        if let Some(name) = person.name.map(str::trim).filter(|n| !n.is_empty()) {
            diesel::update(people::table.find(address).filter(people::name.is_null()))
                .set((people::name.eq(name), people::updated_at.eq(now)))
                .execute(conn)?;
        }
        if let Some(admin) = person.admin {
            let changed = diesel::update(
                people::table
                    .find(address)
                    .filter(people::is_admin.ne(admin)),
            )
            .set((people::is_admin.eq(admin), people::updated_at.eq(now)))
            .execute(conn)?;
            if changed > 0 {
                tracing::info!(email = %address, admin, "admin by the sign-in provider's groups");
            }
        }
        let secret = start_session(
            conn,
            address,
            Method::Oidc,
            client,
            now,
            Some(person.id_token),
        )?;
        diesel::update(sessions::table.filter(sessions::token_hash.eq(secret.hash())))
            .set((
                sessions::oidc_sub.eq(person.subject),
                sessions::oidc_sid.eq(person.provider_session),
            ))
            .execute(conn)?;
        Ok(Some(secret))
    })
}

/// Back-channel logout: ends the sessions begun through the provider in its session
/// `session` (when named), else every session of its subject `subject`. `token_id`
/// (the logout token's `jti`) is taken once: `None` for a token taken before.
/// Returns how many sessions ended.
pub fn end_provider_sessions(
    conn: &mut DbConnection,
    subject: Option<&str>,
    session: Option<&str>,
    token_id: &str,
) -> QueryResult<Option<usize>> {
    use crate::db::schema::logout_tokens;
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let fresh = crate::insert_or_ignore!(
            conn,
            diesel::insert_into(logout_tokens::table).values((
                logout_tokens::jti.eq(token_id),
                logout_tokens::seen_at.eq(now)
            )),
            logout_tokens::jti
        )?;
        if fresh == 0 {
            return Ok(None);
        }
        let live = sessions::table
            .filter(sessions::method.eq(Method::Oidc.as_str()))
            .filter(sessions::ended_at.is_null());
        let ended = match (session, subject) {
            (Some(sid), Some(sub)) => diesel::update(
                live.filter(sessions::oidc_sid.eq(sid))
                    .filter(sessions::oidc_sub.eq(sub)),
            )
            .set((
                sessions::ended_at.eq(now),
                sessions::ended_by.eq(SIGNED_OUT_AT_PROVIDER),
            ))
            .execute(conn)?,
            (Some(sid), None) => diesel::update(live.filter(sessions::oidc_sid.eq(sid)))
                .set((
                    sessions::ended_at.eq(now),
                    sessions::ended_by.eq(SIGNED_OUT_AT_PROVIDER),
                ))
                .execute(conn)?,
            (None, Some(sub)) => diesel::update(live.filter(sessions::oidc_sub.eq(sub)))
                .set((
                    sessions::ended_at.eq(now),
                    sessions::ended_by.eq(SIGNED_OUT_AT_PROVIDER),
                ))
                .execute(conn)?,
            (None, None) => 0,
        };
        // Tokens older than a day are of no more use (a logout token is checked to
        // be at most minutes old).
        diesel::delete(
            logout_tokens::table.filter(logout_tokens::seen_at.lt(now - Duration::days(1))),
        )
        .execute(conn)?;
        tracing::info!(
            subject = subject.unwrap_or("-"),
            session = session.unwrap_or("-"),
            ended,
            "signed out at the sign-in provider (back-channel logout)"
        );
        Ok(Some(ended))
    })
}

/// What a session ended by the provider's back-channel logout says it ended by.
pub const SIGNED_OUT_AT_PROVIDER: &str = "signed out at the sign-in provider";
