//! Rows as diesel reads and writes them. Domain types are built from these in `services`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::api_tokens;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub role: String,
    pub person_email: Option<String>,
    pub token_hash: String,
    pub created_at: NaiveDateTime,
    pub last_used_at: Option<NaiveDateTime>,
    pub revoked_at: Option<NaiveDateTime>,
}
