//! `GET /people/find?q=` and `GET /teams/find?q=`: the people and team pickers'
//! searches, for the pages' script
//! (`templates/static/app.js` fills a field's suggestions from it as a person types).
//! It answers JSON to a signed-in person; without script, a field takes an address and
//! a near miss is answered with the nearest person in the directory.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::directory::people;

/// How many people the picker offers at once.
const OFFERED: i64 = 10;

#[derive(Debug, Deserialize)]
pub struct FindQuery {
    #[serde(default)]
    q: Option<String>,
}

/// `GET /people/find?q=`: `{"people": [{"email", "name", "team"}]}`, at most ten.
pub async fn find(
    _: SignedIn,
    query: web::Query<FindQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    found(&state, query.into_inner(), "people", |conn, text| {
        people::find(conn, text, OFFERED)
    })
    .await
}

/// `GET /teams/find?q=`: `{"teams": [name]}`, at most ten.
pub async fn find_teams(
    _: SignedIn,
    query: web::Query<FindQuery>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    found(&state, query.into_inner(), "teams", |conn, text| {
        people::find_teams(conn, text, OFFERED)
    })
    .await
}

/// What `finder` finds for the typed text, as `{key: [...]}`, never cached.
async fn found<T: serde::Serialize + Send + 'static>(
    state: &web::Data<AppState>,
    query: FindQuery,
    key: &'static str,
    finder: impl FnOnce(&mut crate::db::DbConnection, &str) -> Result<T, people::FindError>
        + Send
        + 'static,
) -> Result<HttpResponse, ApiError> {
    let text = query.q.unwrap_or_default();
    let found = with_conn(state, move |conn, _| Ok(finder(conn, &text)?)).await?;
    Ok(HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ key: found })))
}
