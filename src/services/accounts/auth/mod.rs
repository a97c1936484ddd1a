//! Signing people in to the web pages: one-time links sent through the outbox,
//! sessions kept in the database (so every replica knows them), and the rate limits
//! on sign-in requests. The rules are `domain::auth`; roles come from the directory.

mod host_link;
mod provider;

pub use host_link::{host_link, HostLinkError, HOST_COMMAND_LINE};
pub use provider::{end_provider_sessions, oidc_session, Vouched, SIGNED_OUT_AT_PROVIDER};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use crate::db::schema::{people, sessions, sign_in_links, sign_in_requests};
use crate::db::{self, DbConnection};
use crate::domain::auth::{self, TooMany};
use crate::domain::{EmailAddress, TokenSecret};
use crate::email::Kind;
use crate::services::directory::people as directory;
use crate::services::outbound::outbox;
use crate::services::Env;

/// Why signing in did not work.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("too many sign-in requests {}; try again in {} minutes", .0.what, .0.retry_after_secs / 60)]
    TooMany(TooMany),
    #[error("this sign-in link was used already or has expired; ask for a new one")]
    LinkUsedOrExpired,
    #[error("the sign-in email cannot be written: {0}")]
    Template(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// How a session began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    EmailLink,
    Proxy,
    Oidc,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::EmailLink => "email-link",
            Method::Proxy => "proxy",
            Method::Oidc => "oidc",
        }
    }
}

/// The person behind a live session.
#[derive(Debug, Clone)]
pub struct SessionPerson {
    pub session_id: String,
    pub email: String,
    pub name: Option<String>,
    pub is_admin: bool,
    /// The token every form of this session carries.
    pub csrf: String,
    /// How it began: `email-link`, `proxy` or `oidc`.
    pub method: String,
    /// Their time zone (an IANA name), when the directory has one.
    pub timezone: Option<String>,
}

impl SessionPerson {
    /// The person as the services' access rules see them: they answer for what they
    /// do themselves.
    pub fn acting(&self) -> crate::services::access::Acting {
        crate::services::access::Acting::person(&self.email, self.is_admin)
    }
}

/// Whether anyone may sign in (`Settings::anyone_may_sign_in`).
fn open(env: Env<'_>) -> bool {
    let settings = env.settings;
    settings.anyone_may_sign_in()
}

/// Whether `address` may sign in (`domain::auth::may_sign_in`): the same rule for the
/// emailed link and the proxy's header.
fn may_sign_in(conn: &mut DbConnection, address: &str, env: Env<'_>) -> QueryResult<bool> {
    let settings = env.settings;
    let found: Option<bool> = people::table
        .find(address)
        .select(people::active)
        .first(conn)
        .optional()?;
    // Someone who left the organisation may not.
    if found == Some(false) {
        return Ok(false);
    }
    let in_directory: i64 = i64::from(found.is_some());
    Ok(auth::may_sign_in(
        address,
        in_directory > 0,
        &settings.auth.allowed_domains,
        open(env),
    ))
}

/// A sign-in request for `email` from `client` (an IP address). Counts it against the
/// rate limits and, when the address may sign in, queues the email with a one-time
/// link; the answer does not say which (so it tells nobody who is in the directory).
/// Returns the link when one was sent, for a local trial to log. The pages do the
/// two halves apart (`count_request` while the person waits, `send_link` after the
/// answer), so that the answer takes as long for an address in the directory as for
/// one outside it.
pub fn request_link(
    conn: &mut DbConnection,
    email: &EmailAddress,
    client: &str,
    next: Option<&str>,
    env: Env<'_>,
) -> Result<Option<String>, AuthError> {
    match count_request(conn, email, client, env)? {
        auth::LinkAllowance::Send => send_link(conn, email, client, next, env),
        auth::LinkAllowance::Withhold => Ok(None),
    }
}

/// The first half of a sign-in request, the same work whoever asks: records it and
/// checks the limits (429 for the client's own requests; past the address's, no
/// email: `LinkAllowance::Withhold`).
pub fn count_request(
    conn: &mut DbConnection,
    email: &EmailAddress,
    client: &str,
    env: Env<'_>,
) -> Result<auth::LinkAllowance, AuthError> {
    let settings = env.settings;
    let address = email.as_str();
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let since = now - Duration::minutes(auth::RATE_WINDOW_MINUTES);
        diesel::insert_into(sign_in_requests::table)
            .values((
                sign_in_requests::id.eq(db::new_id()),
                sign_in_requests::email.eq(address),
                sign_in_requests::client.eq(client),
                sign_in_requests::at.eq(now),
            ))
            .execute(conn)?;
        let by_address: i64 = sign_in_requests::table
            .filter(sign_in_requests::email.eq(address))
            .filter(sign_in_requests::at.gt(since))
            .count()
            .get_result(conn)?;
        let by_client: i64 = sign_in_requests::table
            .filter(sign_in_requests::client.eq(client))
            .filter(sign_in_requests::at.gt(since))
            .count()
            .get_result(conn)?;
        let allowance = auth::within_limits(
            by_address,
            by_client,
            settings.auth.sign_in_per_address,
            settings.auth.sign_in_per_client,
        )
        .map_err(AuthError::TooMany)?;
        if allowance == auth::LinkAllowance::Withhold {
            tracing::info!(
                email = %address,
                "sign-in requested past the address's allowance: no email this time"
            );
        }
        Ok(allowance)
    })
}

/// The second half: when the address may sign in, a one-time link and its email
/// (queued); nothing otherwise. Returns the link when one was made.
pub fn send_link(
    conn: &mut DbConnection,
    email: &EmailAddress,
    client: &str,
    next: Option<&str>,
    env: Env<'_>,
) -> Result<Option<String>, AuthError> {
    let (settings, templates) = (env.settings, env.emails);
    let address = email.as_str();
    db::write_transaction(conn, |conn| {
        let now = db::now();
        // Both outcomes do the same work (a link written, its email composed, one
        // commit), so that how long this takes, and how long it holds the database
        // for the next request, says nothing of whether the address is in the
        // directory: an address that may not sign in gets a link expired at birth
        // (it can never be redeemed; the daily purge removes it) and no email.
        let allowed = may_sign_in(conn, address, env)?;
        if !allowed {
            tracing::info!(email = %address, "sign-in requested by an address that may not sign in");
        }
        let lifetime = if allowed {
            Duration::minutes(auth::LINK_LIFETIME_MINUTES)
        } else {
            Duration::zero()
        };
        let secret = TokenSecret::generate();
        let id = db::new_id();
        diesel::insert_into(sign_in_links::table)
            .values((
                sign_in_links::id.eq(&id),
                sign_in_links::email.eq(address),
                sign_in_links::token_hash.eq(secret.hash()),
                sign_in_links::next_path.eq(next.and_then(auth::safe_next)),
                sign_in_links::created_at.eq(now),
                sign_in_links::expires_at.eq(now + lifetime),
            ))
            .execute(conn)?;
        let link = format!(
            "{}/sign-in/confirm?token={}",
            settings.public_url.trim_end_matches('/'),
            secret.expose()
        );
        // The email says where the link goes, not the link: the outbox keeps it apart
        // and puts it in only as the email leaves, so that nobody (an admin reading the
        // outbox included) can read it and sign in as its recipient.
        let data = serde_json::json!({
            "link": outbox::PRIVATE_LINK,
            "minutes": auth::LINK_LIFETIME_MINUTES,
            "requested_from": client,
            // Its footer says why it came: a sign-in, not the reminder policy.
            "sign_in": true,
        });
        let name: Option<String> = people::table
            .find(address)
            .select(people::name)
            .first::<Option<String>>(conn)
            .optional()?
            .flatten();
        let mail = outbox::compose(
            templates,
            Kind::SignIn,
            format!("sign_in:{id}"),
            address,
            name.as_deref(),
            data,
        )
        .map_err(|e| AuthError::Template(e.to_string()))?;
        if !allowed {
            return Ok(None);
        }
        outbox::enqueue_with_private_link(conn, &mail, &link, now)?;
        Ok(Some(link))
    })
}

/// Redeems a sign-in link: it works once and until it expires. Starts a session and
/// returns its secret (for the cookie) with the path to go to.
pub fn redeem(
    conn: &mut DbConnection,
    token: &str,
    client: &str,
) -> Result<(TokenSecret, Option<String>), AuthError> {
    let hash = TokenSecret::from_presented(token).hash();
    db::write_transaction(conn, |conn| {
        let now = db::now();
        let used = diesel::update(
            sign_in_links::table
                .filter(sign_in_links::token_hash.eq(&hash))
                .filter(sign_in_links::used_at.is_null())
                .filter(sign_in_links::expires_at.gt(now)),
        )
        .set(sign_in_links::used_at.eq(now))
        .execute(conn)?;
        if used != 1 {
            return Err(AuthError::LinkUsedOrExpired);
        }
        let (email, next): (String, Option<String>) = sign_in_links::table
            .filter(sign_in_links::token_hash.eq(&hash))
            .select((sign_in_links::email, sign_in_links::next_path))
            .first(conn)?;
        let secret = start_session(conn, &email, Method::EmailLink, client, now, None)?;
        Ok((secret, next))
    })
}

/// The address a sign-in link is for, while it can still be used (not used, not
/// expired); changes nothing.
pub fn link_email(conn: &mut DbConnection, token: &str) -> QueryResult<Option<String>> {
    let hash = TokenSecret::from_presented(token).hash();
    sign_in_links::table
        .filter(sign_in_links::token_hash.eq(&hash))
        .filter(sign_in_links::used_at.is_null())
        .filter(sign_in_links::expires_at.gt(db::now()))
        .select(sign_in_links::email)
        .first(conn)
        .optional()
}

fn start_session(
    conn: &mut DbConnection,
    email: &str,
    method: Method,
    client: &str,
    now: NaiveDateTime,
    id_token: Option<&str>,
) -> QueryResult<TokenSecret> {
    directory::ensure(conn, email, now)?;
    let secret = TokenSecret::generate();
    diesel::insert_into(sessions::table)
        .values((
            sessions::id.eq(db::new_id()),
            sessions::token_hash.eq(secret.hash()),
            sessions::person_email.eq(email),
            sessions::csrf_token.eq(TokenSecret::generate().hash()),
            sessions::method.eq(method.as_str()),
            sessions::client.eq(client),
            sessions::created_at.eq(now),
            sessions::last_seen_at.eq(now),
            sessions::id_token.eq(id_token),
        ))
        .execute(conn)?;
    tracing::info!(email = %email, method = method.as_str(), "signed in");
    Ok(secret)
}

/// How often `last_seen_at` is written: at most once a minute per session.
const SEEN_RESOLUTION_SECS: i64 = 60;

type SessionFields = (
    String,
    String,
    String,
    String,
    NaiveDateTime,
    NaiveDateTime,
    Option<NaiveDateTime>,
);

/// The person behind the session whose cookie holds `secret`, while it is alive.
pub fn session(
    conn: &mut DbConnection,
    secret: &str,
    env: Env<'_>,
) -> QueryResult<Option<SessionPerson>> {
    let settings = env.settings;
    let hash = TokenSecret::from_presented(secret).hash();
    let found: Option<SessionFields> = sessions::table
        .filter(sessions::token_hash.eq(&hash))
        .select((
            sessions::id,
            sessions::person_email,
            sessions::csrf_token,
            sessions::method,
            sessions::created_at,
            sessions::last_seen_at,
            sessions::ended_at,
        ))
        .first(conn)
        .optional()?;
    let Some((id, email, csrf, method, created_at, last_seen_at, ended_at)) = found else {
        return Ok(None);
    };
    let now = db::now();
    let alive = auth::session_alive(
        created_at,
        last_seen_at,
        ended_at.is_some(),
        now,
        settings.auth.session_idle_secs,
        settings.auth.session_max_secs,
    );
    if !alive {
        return Ok(None);
    }
    if now - last_seen_at > Duration::seconds(SEEN_RESOLUTION_SECS) {
        diesel::update(sessions::table.find(&id))
            .set(sessions::last_seen_at.eq(now))
            .execute(conn)?;
    }
    let (name, is_admin, active, timezone): (Option<String>, bool, bool, Option<String>) =
        people::table
            .find(&email)
            .select((
                people::name,
                people::is_admin,
                people::active,
                people::timezone,
            ))
            .first(conn)
            .optional()?
            .unwrap_or((None, false, true, None));
    // Someone who left is signed in nowhere, whatever a link made before said.
    if !active {
        return Ok(None);
    }
    Ok(Some(SessionPerson {
        session_id: id,
        email,
        name,
        is_admin,
        csrf,
        method,
        timezone,
    }))
}

/// The session for a person an authenticating proxy names: the cookie's, when it is
/// theirs and alive, else a new one (returned with its secret, for the cookie).
/// `None` when the address may not sign in: the proxy vouches for who a person is,
/// the directory and `auth.allowed_domains` for whether they may use coe, as with
/// the emailed link.
pub fn proxy_session(
    conn: &mut DbConnection,
    email: &EmailAddress,
    cookie: Option<&str>,
    client: &str,
    env: Env<'_>,
) -> QueryResult<Option<(SessionPerson, Option<TokenSecret>)>> {
    if let Some(secret) = cookie {
        if let Some(person) = session(conn, secret, env)? {
            if person.email == email.as_str() {
                return Ok(Some((person, None)));
            }
            end(conn, &person.session_id, "another person at the proxy")?;
        }
    }
    if !may_sign_in(conn, email.as_str(), env)? {
        tracing::info!(email = %email.as_str(), "the proxy named an address that may not sign in");
        return Ok(None);
    }
    let secret = db::write_transaction(conn, |conn| {
        start_session(conn, email.as_str(), Method::Proxy, client, db::now(), None)
    })?;
    let person = session(conn, secret.expose(), env)?.ok_or(diesel::result::Error::NotFound)?;
    Ok(Some((person, Some(secret))))
}

/// The ID token a session began with (an OpenID sign-in's), for the provider's
/// sign-out.
pub fn id_token_of(conn: &mut DbConnection, session_id: &str) -> QueryResult<Option<String>> {
    Ok(sessions::table
        .find(session_id)
        .select(sessions::id_token)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten())
}

/// Ends every session of `email` but `keep` (the one asking): "sign out my other
/// browsers". Returns how many ended.
pub fn end_others(conn: &mut DbConnection, email: &str, keep: &str) -> QueryResult<usize> {
    diesel::update(
        sessions::table
            .filter(sessions::person_email.eq(email))
            .filter(sessions::id.ne(keep))
            .filter(sessions::ended_at.is_null()),
    )
    .set((
        sessions::ended_at.eq(db::now()),
        sessions::ended_by.eq("signed out from another session"),
        sessions::id_token.eq(None::<String>),
    ))
    .execute(conn)
}

/// Ends a session (signing out, or an admin revoking it).
pub fn end(conn: &mut DbConnection, session_id: &str, by: &str) -> QueryResult<()> {
    diesel::update(
        sessions::table
            .find(session_id)
            .filter(sessions::ended_at.is_null()),
    )
    .set((
        sessions::ended_at.eq(db::now()),
        sessions::ended_by.eq(by),
        // An ended session's ID token is no use to anyone.
        sessions::id_token.eq(None::<String>),
    ))
    .execute(conn)
    .map(drop)
}

/// A browser session as an admin sees it (never its secret).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct SessionView {
    pub id: String,
    pub person_email: String,
    /// `email-link`, `proxy` or `oidc`.
    pub method: String,
    /// The client's address when the session began.
    pub client: String,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc")]
    pub last_seen_at: NaiveDateTime,
}

/// Sessions that have not ended, newest first: one person's, or everyone's (at most
/// `limit`). Sessions past their idle or absolute limit are listed until they are
/// used or ended: they no longer work.
pub fn sessions_of(
    conn: &mut DbConnection,
    email: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<SessionView>> {
    let mut query = sessions::table
        .filter(sessions::ended_at.is_null())
        .order(sessions::created_at.desc())
        .limit(limit)
        .select((
            sessions::id,
            sessions::person_email,
            sessions::method,
            sessions::client,
            sessions::created_at,
            sessions::last_seen_at,
        ))
        .into_boxed();
    if let Some(email) = email {
        query = query.filter(sessions::person_email.eq(email.to_owned()));
    }
    let rows: Vec<(String, String, String, String, NaiveDateTime, NaiveDateTime)> =
        query.load(conn)?;
    Ok(rows
        .into_iter()
        .map(
            |(id, person_email, method, client, created_at, last_seen_at)| SessionView {
                id,
                person_email,
                method,
                client,
                created_at,
                last_seen_at,
            },
        )
        .collect())
}

/// Ends every session of a person (an admin revoking them: a lost laptop, someone who
/// left); returns how many were ended. Every replica sees it at the next request.
pub fn end_all(conn: &mut DbConnection, email: &str, by: &str) -> QueryResult<usize> {
    diesel::update(
        sessions::table
            .filter(sessions::person_email.eq(email))
            .filter(sessions::ended_at.is_null()),
    )
    .set((
        sessions::ended_at.eq(db::now()),
        sessions::ended_by.eq(by),
        // An ended session's ID token is no use to anyone.
        sessions::id_token.eq(None::<String>),
    ))
    .execute(conn)
}

/// Deletes what sign-in leaves behind: links and requests older than a day, and
/// sessions that ended, went idle or outlived `auth.session_max_secs` a day ago.
pub fn purge(conn: &mut DbConnection, env: Env<'_>, now: NaiveDateTime) -> QueryResult<usize> {
    let settings = env.settings;
    let day_ago = now - Duration::days(1);
    let links = diesel::delete(sign_in_links::table.filter(sign_in_links::expires_at.lt(day_ago)))
        .execute(conn)?;
    let requests = diesel::delete(sign_in_requests::table.filter(sign_in_requests::at.lt(day_ago)))
        .execute(conn)?;
    // Sessions that ended, went idle or grew too old a day ago or more: they no
    // longer work, and their secrets' hashes are of no use to keep.
    let secs = |s: u64| Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX / 1_000_000));
    let idle_before = day_ago - secs(settings.auth.session_idle_secs);
    let born_before = day_ago - secs(settings.auth.session_max_secs);
    let sessions = diesel::delete(
        sessions::table.filter(
            sessions::ended_at
                .lt(day_ago)
                .or(sessions::last_seen_at.lt(idle_before))
                .or(sessions::created_at.lt(born_before)),
        ),
    )
    .execute(conn)?;
    Ok(links + requests + sessions)
}

#[cfg(test)]
mod tests;
