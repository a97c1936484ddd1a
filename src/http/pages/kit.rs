//! The kit every page handler takes from: what a handler answers (`Page`), the state
//! it takes (`State`), and `render`, which fills a template for the person signed in.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::error::PageError;
use super::templates::secure_headers;
use crate::http::session::SignedIn;
use crate::http::state::AppState;

/// What a page handler answers.
pub type Page = Result<HttpResponse, PageError>;

/// The app's state, as a page handler takes it.
pub type State = web::Data<AppState>;

/// Renders page `name` with `data`, adding who is signed in (`me`, with the CSRF
/// token forms carry) and the security headers.
pub fn render(
    state: &AppState,
    who: Option<&SignedIn>,
    status: StatusCode,
    name: &str,
    mut data: Value,
) -> Page {
    if let Value::Object(map) = &mut data {
        map.insert("asset_version".into(), json!(state.pages.asset_version));
        // Times are shown in the reader's time zone: theirs, else the organisation's.
        map.insert("zone".into(), json!(zone_of(state, who).name()));
        if let Some(who) = who {
            let p = &who.person;
            map.insert(
                "me".into(),
                json!({"email": p.email, "name": p.name, "is_admin": p.is_admin, "csrf": p.csrf}),
            );
        }
    }
    let body = state
        .pages
        .render(name, &data)
        .map_err(PageError::Internal)?;
    let mut res = HttpResponse::build(status);
    secure_headers(&mut res);
    if let Some(cookie) = who.and_then(|w| w.new_cookie.clone()) {
        res.cookie(cookie);
    }
    Ok(res.content_type("text/html; charset=utf-8").body(body))
}

/// The names of the people a page shows, by address (`names`, for
/// `{{person address}}`). No page carries the directory: a field for a person finds
/// people as they are typed (`pages::people_find`).
pub fn names_data(directory: &[(String, Option<String>)]) -> Value {
    let names: serde_json::Map<String, Value> = directory
        .iter()
        .filter_map(|(email, name)| Some((email.clone(), json!(name.as_ref()?))))
        .collect();
    Value::Object(names)
}

/// A person as a sentence names them: their name in the directory (`names`, as
/// `people::names_of` answers), else their address.
pub fn display_name(names: &[(String, Option<String>)], email: &str) -> String {
    names
        .iter()
        .find(|(e, _)| e == email)
        .and_then(|(_, n)| n.clone())
        .unwrap_or_else(|| email.to_owned())
}

/// Who can set up what only an admin sets up (a chat channel, a tracker), for a page
/// that offers it where it would be used: `{"admin": true}` for an admin (the page
/// links to the admin page), else the admins by name, for a member to ask.
pub fn who_connects(
    conn: &mut crate::db::DbConnection,
    is_admin: bool,
) -> diesel::QueryResult<Value> {
    if is_admin {
        return Ok(json!({"admin": true, "admins": []}));
    }
    let admins = crate::services::directory::people::admins(conn, 5)?;
    let named: Vec<String> = admins
        .iter()
        .map(|(email, name)| name.clone().unwrap_or_else(|| email.clone()))
        .collect();
    Ok(json!({"admin": false, "admins": named}))
}

/// A link shown as a link only when it is http(s): anything else is shown as text.
pub fn safe_href(url: Option<&str>) -> Option<String> {
    crate::domain::timeline::web_href(url)
}

/// The time zone a person reads and types times in: theirs, else the organisation's.
pub fn zone_of(state: &crate::http::state::AppState, who: Option<&SignedIn>) -> chrono_tz::Tz {
    who.and_then(|w| w.person.timezone.as_deref())
        .and_then(|z| z.parse::<chrono_tz::Tz>().ok())
        .unwrap_or_else(|| state.settings.org_timezone())
}

/// `at` as a `datetime-local` field shows it in `zone`.
pub fn local_input(at: &chrono::NaiveDateTime, zone: chrono_tz::Tz) -> String {
    at.and_utc()
        .with_timezone(&zone)
        .format("%Y-%m-%dT%H:%M")
        .to_string()
}

/// What a `datetime-local` field typed in `zone` holds, as the API's time (RFC 3339,
/// UTC); what it holds as it is when it is no such time (the service says what is
/// wrong with it).
pub fn from_local_input(typed: &str, zone: chrono_tz::Tz) -> String {
    use chrono::{Offset, TimeZone};
    let local = chrono::NaiveDateTime::parse_from_str(typed, "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(typed, "%Y-%m-%dT%H:%M:%S"));
    let Ok(local) = local else {
        return typed.to_owned();
    };
    // A time the clocks skipped (spring forward) is read with the offset before the
    // gap, as a clock not yet moved would show it; a repeated hour, as its first.
    let at = zone.from_local_datetime(&local).earliest().or_else(|| {
        let before = local - chrono::Duration::hours(3);
        let offset = zone.from_local_datetime(&before).earliest()?.offset().fix();
        offset
            .from_local_datetime(&local)
            .single()
            .map(|t| t.with_timezone(&zone))
    });
    match at {
        Some(at) => at.with_timezone(&chrono::Utc).to_rfc3339(),
        None => typed.to_owned(),
    }
}

/// A refusal's field problems as one sentence for a page: the problems alone, by `;`
/// (the fields are the form's, which the page names already).
pub fn problems_in_words(problems: Vec<(String, String)>) -> String {
    problems
        .into_iter()
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::{from_local_input, local_input};

    #[test]
    fn times_typed_in_a_zone_are_read_in_it_even_across_its_clock_changes() {
        let berlin: chrono_tz::Tz = "Europe/Berlin".parse().expect("a zone");
        assert_eq!(
            from_local_input("2026-12-01T10:00", berlin),
            "2026-12-01T09:00:00+00:00"
        );
        // 02:30 on 29 March 2026 did not happen in Berlin: read as 01:30 UTC.
        assert_eq!(
            from_local_input("2026-03-29T02:30", berlin),
            "2026-03-29T01:30:00+00:00"
        );
        // 02:30 on 25 October 2026 happened twice: the first.
        assert_eq!(
            from_local_input("2026-10-25T02:30", berlin),
            "2026-10-25T00:30:00+00:00"
        );
        assert_eq!(from_local_input("yesterday", berlin), "yesterday");
        let at = chrono::NaiveDate::from_ymd_opt(2026, 12, 1)
            .and_then(|d| d.and_hms_opt(9, 0, 0))
            .expect("a time");
        assert_eq!(local_input(&at, berlin), "2026-12-01T10:00");
    }
}
