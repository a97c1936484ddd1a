//! Creating, listing, revoking and checking API tokens.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::models::ApiTokenRow;
use crate::db::schema::api_tokens;
use crate::db::{self, DbConnection};
use crate::domain::{EmailAddress, Role, TokenName, TokenSecret};

/// Name of the admin token made on first start, when no admin token exists.
pub const BOOTSTRAP_TOKEN_NAME: &str = "bootstrap-admin";

/// How stale `last_used_at` may get before a request refreshes it. Writing it on every
/// request would turn every read into a write.
const LAST_USED_RESOLUTION: Duration = Duration::minutes(1);

/// A token as shown to people: everything but the secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// The person this token acts for; recorded as the actor of changes.
    pub email: Option<String>,
    /// Who made it (`None`: from the command line, or before this was recorded).
    pub created_by: Option<String>,
    #[serde(serialize_with = "crate::json::utc")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub last_used_at: Option<NaiveDateTime>,
    #[serde(serialize_with = "crate::json::utc_option")]
    pub revoked_at: Option<NaiveDateTime>,
}

/// The identity behind an authenticated request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Caller {
    pub token_id: String,
    pub token_name: String,
    pub role: Role,
    pub email: Option<String>,
    /// Who made the token (`None`: the command line).
    #[serde(skip)]
    pub created_by: Option<String>,
}

impl Caller {
    /// How this caller is named in audit records: the person if known, else the token.
    pub fn actor(&self) -> String {
        self.email
            .clone()
            .unwrap_or_else(|| format!("token:{}", self.token_name))
    }

    /// Who answers for what this token does in the review (naming a reviewer,
    /// submitting, deciding): the person it names when it is their own (made by them,
    /// or from the command line), else whoever made it for them. An admin who makes a
    /// token naming someone else does not become that person.
    pub fn principal(&self) -> String {
        match (&self.email, &self.created_by) {
            (Some(email), Some(by)) if by != email => by.clone(),
            _ => self.actor(),
        }
    }

    /// This caller as the services' access rules see them.
    pub fn acting(&self) -> crate::services::access::Acting {
        crate::services::access::Acting {
            actor: self.actor(),
            email: self.email.clone(),
            principal: self.principal(),
            is_admin: self.role == Role::Admin,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("a token named `{0}` already exists")]
    NameTaken(String),
    #[error("no active token named `{0}`")]
    NotFound(String),
    #[error(transparent)]
    Database(#[from] DieselError),
}

impl TryFrom<ApiTokenRow> for TokenInfo {
    type Error = DieselError;
    fn try_from(row: ApiTokenRow) -> Result<Self, Self::Error> {
        let role = row
            .role
            .parse::<Role>()
            .map_err(|e| DieselError::DeserializationError(e.into()))?;
        Ok(TokenInfo {
            id: row.id,
            name: row.name,
            role,
            email: row.person_email,
            created_by: row.created_by,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
            revoked_at: row.revoked_at,
        })
    }
}

/// Creates a token from the command line (the operator) and returns it with its
/// secret, which is never stored.
pub fn create(
    conn: &mut DbConnection,
    name: &TokenName,
    role: Role,
    email: Option<&EmailAddress>,
) -> Result<(TokenInfo, TokenSecret), TokenError> {
    create_by(conn, name, role, email, None)
}

/// Creates a token made by `created_by` (an API caller's actor, a signed-in admin);
/// `None` for the command line.
pub fn create_by(
    conn: &mut DbConnection,
    name: &TokenName,
    role: Role,
    email: Option<&EmailAddress>,
    created_by: Option<&str>,
) -> Result<(TokenInfo, TokenSecret), TokenError> {
    let secret = TokenSecret::generate();
    let row = ApiTokenRow {
        id: db::new_id(),
        name: name.as_str().to_owned(),
        role: role.as_str().to_owned(),
        person_email: email.map(|e| e.as_str().to_owned()),
        token_hash: secret.hash(),
        created_at: db::now(),
        last_used_at: None,
        revoked_at: None,
        created_by: created_by.map(str::to_owned),
    };
    let inserted = db::write_transaction(conn, |conn| {
        diesel::insert_into(api_tokens::table)
            .values(&row)
            .execute(conn)
    });
    match inserted {
        Ok(_) => Ok((TokenInfo::try_from(row)?, secret)),
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
            Err(TokenError::NameTaken(name.as_str().to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Tokens by name; revoked ones only when asked.
pub fn list(conn: &mut DbConnection, include_revoked: bool) -> Result<Vec<TokenInfo>, TokenError> {
    let mut query = api_tokens::table
        .select(ApiTokenRow::as_select())
        .order((api_tokens::name.asc(), api_tokens::created_at.asc()))
        .into_boxed();
    if !include_revoked {
        query = query.filter(api_tokens::revoked_at.is_null());
    }
    let rows = query.load(conn)?;
    Ok(rows
        .into_iter()
        .map(TokenInfo::try_from)
        .collect::<Result<_, _>>()?)
}

/// Revokes the active token with this name. Its row stays, so that the audit trail
/// can still say which token made a change.
pub fn revoke(conn: &mut DbConnection, name: &str) -> Result<TokenInfo, TokenError> {
    // A string that is not a valid name names no token (and may hold bytes, such as
    // NUL, that PostgreSQL refuses in text).
    if TokenName::parse(name).is_err() {
        return Err(TokenError::NotFound(name.escape_default().to_string()));
    }
    db::write_transaction(conn, |conn| {
        let row: Option<ApiTokenRow> = api_tokens::table
            .filter(api_tokens::name.eq(name))
            .filter(api_tokens::revoked_at.is_null())
            .select(ApiTokenRow::as_select())
            .first(conn)
            .optional()?;
        let Some(mut row) = row else {
            return Err(TokenError::NotFound(name.to_owned()));
        };
        let now = db::now();
        diesel::update(api_tokens::table.filter(api_tokens::id.eq(&row.id)))
            .set(api_tokens::revoked_at.eq(now))
            .execute(conn)?;
        row.revoked_at = Some(now);
        Ok(TokenInfo::try_from(row)?)
    })
}

/// The caller a presented secret belongs to, or `None` for an unknown or revoked one.
pub fn authenticate(
    conn: &mut DbConnection,
    secret: &TokenSecret,
) -> Result<Option<Caller>, TokenError> {
    let row: Option<ApiTokenRow> = api_tokens::table
        .filter(api_tokens::token_hash.eq(secret.hash()))
        .filter(api_tokens::revoked_at.is_null())
        .select(ApiTokenRow::as_select())
        .first(conn)
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let now = db::now();
    if row
        .last_used_at
        .is_none_or(|used| now - used >= LAST_USED_RESOLUTION)
    {
        // Best effort: a busy database must not turn a valid request into an error.
        let touched = db::write_transaction(conn, |conn| {
            diesel::update(api_tokens::table.filter(api_tokens::id.eq(&row.id)))
                .set(api_tokens::last_used_at.eq(now))
                .execute(conn)
        });
        if let Err(e) = touched {
            tracing::warn!(error = %e, token = %row.name, "could not record the token's last use");
        }
    }
    let info = TokenInfo::try_from(row)?;
    Ok(Some(Caller {
        token_id: info.id,
        token_name: info.name,
        role: info.role,
        email: info.email,
        created_by: info.created_by,
    }))
}

/// On a database with no active admin token, creates one so that a new user can call
/// the API at once. Returns its secret, or `None` when an admin token already exists.
/// Safe when several replicas start together: the name is unique, one insert wins.
pub fn ensure_admin_token(conn: &mut DbConnection) -> Result<Option<TokenSecret>, TokenError> {
    let admins: i64 = api_tokens::table
        .filter(api_tokens::role.eq(Role::Admin.as_str()))
        .filter(api_tokens::revoked_at.is_null())
        .count()
        .get_result(conn)?;
    if admins > 0 {
        return Ok(None);
    }
    let name = TokenName::parse(BOOTSTRAP_TOKEN_NAME)
        .map_err(|e| TokenError::Database(DieselError::DeserializationError(e.into())))?;
    match create(conn, &name, Role::Admin, None) {
        Ok((_, secret)) => Ok(Some(secret)),
        Err(TokenError::NameTaken(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
