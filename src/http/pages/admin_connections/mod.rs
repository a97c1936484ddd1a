//! Adding, changing and removing the chat channels (Admin → Chat) and trackers
//! (Admin → Trackers) kept in coe: one form per platform with its fields, what to
//! do on the platform's side, each secret shown by its end alone and kept when
//! left empty. The form is turned into the settings the file would hold and saved
//! through `services::outbound::connections`, as the API saves it.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::admin::{page, AdminForm};
use super::guard::{Admin, Fields};
use super::kit::{Page, State};
use super::outcome::{as_service, see_other, Outcome};
use crate::config::ChatEvent;
use crate::error::ApiError;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::connections::Kind;
use crate::services::outbound::connections::{self as store, Candidate};

mod form;
mod platforms;

use form::{settings_of, shown_value};
use platforms::{event_words, fields_of, platforms, slack_manifest, steps, Field, How};

#[derive(Debug, Default, Deserialize)]
pub struct NewQuery {
    #[serde(default)]
    platform: Option<String>,
}

fn base(kind: Kind) -> &'static str {
    match kind {
        Kind::Chat => "/admin/chat",
        Kind::Tracker => "/admin/trackers",
    }
}

fn tab(kind: Kind) -> &'static str {
    match kind {
        Kind::Chat => "chat",
        Kind::Tracker => "trackers",
    }
}

/// The form as it is shown: the saved settings (`saved`: each secret by its end) or
/// what was typed (`typed`, secrets never shown back), with each field's problem.
struct Shown<'a> {
    kind: Kind,
    platform: String,
    name: String,
    version: Option<i64>,
    saved: Option<&'a Value>,
    typed: Option<&'a Fields>,
    problems: Vec<(String, String)>,
    general: Vec<String>,
    /// What "Check the connection" found (what was typed, secrets too, is then kept:
    /// nothing is saved yet).
    checked: Vec<crate::services::connections::Tried>,
}

fn render_form(state: &AppState, who: &SignedIn, status: StatusCode, shown: Shown<'_>) -> Page {
    let Some(fields) = fields_of(shown.kind, &shown.platform) else {
        return Err(crate::error::ApiError::NotFound(format!(
            "coe does not know the platform {}",
            shown.platform
        ))
        .into());
    };
    let label = platforms(shown.kind)
        .into_iter()
        .find(|(k, _)| *k == shown.platform)
        .map_or("", |(_, l)| l);
    let webhook_url = match (shown.kind, shown.name.is_empty()) {
        (Kind::Tracker, false) => format!(
            "{}/api/v1/trackers/{}/webhook",
            state.settings.public_url.trim_end_matches('/'),
            shown.name
        ),
        (Kind::Tracker, true) => format!(
            "{}/api/v1/trackers/NAME/webhook (NAME: the name below)",
            state.settings.public_url.trim_end_matches('/')
        ),
        _ => String::new(),
    };
    let shown_fields: Vec<Value> = fields.iter().map(|f| field_data(f, &shown)).collect();
    let new = shown.version.is_none();
    let noun = shown.kind.noun();
    let title = if new {
        format!("Add a {label} {noun}")
    } else {
        format!("Change the {noun} {}", shown.name)
    };
    let data = json!({
        "title": title,
        "base": base(shown.kind),
        "new": new,
        "noun": noun,
        "platform": shown.platform,
        "platform_label": label,
        "steps": steps(&shown.platform, &webhook_url),
        "manifest": if shown.platform == "slack" {
            slack_manifest(&state.settings.public_url)
        } else {
            String::new()
        },
        "webhook_url": webhook_url,
        "name": shown.name,
        "version": shown.version.map(|v| v.to_string()).unwrap_or_default(),
        "fields": shown_fields,
        "problems": shown.general,
        "checked": shown.checked,
        "checked_ok": shown.checked.iter().all(|t| t.ok),
        "name_problem": problem_of(&shown.problems, "name"),
        "choose": false,
        "platforms": [],
    });
    page(
        state,
        who,
        status,
        "admin_connection",
        tab(shown.kind),
        data,
    )
}

fn problem_of(problems: &[(String, String)], key: &str) -> String {
    problems
        .iter()
        .find(|(f, _)| f == key)
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

/// One field's data for the template (every key set: the templates are strict).
fn field_data(f: &Field, shown: &Shown<'_>) -> Value {
    let saved = shown.saved.and_then(|s| s.get(f.key));
    let typed = shown.typed.map(|t| t.text(f.key));
    let value = match (&typed, saved) {
        (Some(typed), _) if f.secret && !shown.checked.is_empty() => typed.clone(),
        _ if f.secret => String::new(),
        (Some(typed), _) => typed.clone(),
        (None, Some(saved)) => shown_value(f.how, saved),
        (None, None) => String::new(),
    };
    let hint = match saved {
        Some(Value::String(h)) if f.secret && h.starts_with("set") => h.clone(),
        _ => String::new(),
    };
    let events: Vec<Value> = ChatEvent::ALL
        .iter()
        .map(|e| {
            let on = match (shown.typed, saved) {
                (Some(t), _) => t.all("events").any(|v| v == e.as_str()),
                (None, Some(Value::Array(list))) => list.iter().any(|v| v == e.as_str()),
                (None, _) => true,
            };
            json!({"value": e.as_str(), "label": event_words(*e), "on": on})
        })
        .collect();
    let create: Vec<Value> = [("automatic", "Every new action it takes"), ("on_request", "Only when someone asks for one")]
        .iter()
        .map(|(v, l)| json!({"value": v, "label": l, "on": value == *v || (value.is_empty() && *v == "automatic")}))
        .collect();
    json!({
        "key": f.key,
        "label": f.label,
        "help": f.help,
        "secret": f.secret,
        "hint": hint,
        "cleared": shown.typed.is_some_and(|t| t.all("clear").any(|c| c == f.key)),
        "value": value,
        "textarea": matches!(f.how, How::Routes | How::Statuses),
        "events": if f.how == How::Events { events } else { Vec::new() },
        "choices": if f.how == How::Create { create } else { Vec::new() },
        "problem": problem_of(&shown.problems, f.key),
    })
}

/// The saved connection `name` of `kind`, as listed (secrets by their end), if kept
/// in coe.
fn listed(state: &AppState, kind: Kind, name: &str) -> Option<store::Listed> {
    store::list(state.connections.current())
        .into_iter()
        .find(|l| l.kind == kind.as_str() && l.name == name && l.kept_in == "coe")
}

/// The connections of `kind` restored from a backup that left their secrets out, for
/// the list page: each with the secrets to give again, in the form's words.
pub(super) fn waiting(state: &AppState, kind: Kind) -> Vec<Value> {
    state
        .connections
        .current()
        .waiting
        .iter()
        .filter(|w| w.kept.kind == kind)
        .map(|w| {
            let fields = fields_of(kind, &w.platform).unwrap_or_default();
            let secrets: Vec<&str> = w
                .secrets
                .iter()
                .map(|s| {
                    fields
                        .iter()
                        .find(|f| f.key == s)
                        .map_or(s.as_str(), |f| f.label)
                })
                .collect();
            json!({"name": w.kept.name, "secrets": secrets.join(", "), "base": base(kind)})
        })
        .collect()
}

/// `GET /admin/chat/new`, `/admin/trackers/new`: which platform, then its form.
async fn new(kind: Kind, who: &SignedIn, query: NewQuery, state: &AppState) -> Page {
    let Some(platform) = query.platform.filter(|p| fields_of(kind, p).is_some()) else {
        let list: Vec<Value> = platforms(kind)
            .into_iter()
            .map(|(key, label)| json!({"key": key, "label": label}))
            .collect();
        let data = json!({
            "title": format!("Add a {}", kind.noun()), "base": base(kind), "choose": true,
            "platforms": list, "noun": kind.noun(), "problems": [],
        });
        return page(
            state,
            who,
            StatusCode::OK,
            "admin_connection",
            tab(kind),
            data,
        );
    };
    let shown = Shown {
        kind,
        platform,
        name: String::new(),
        version: None,
        saved: None,
        typed: None,
        problems: Vec::new(),
        general: Vec::new(),
        checked: Vec::new(),
    };
    render_form(state, who, StatusCode::OK, shown)
}

async fn edit(kind: Kind, who: &SignedIn, name: &str, state: &AppState) -> Page {
    let Some(saved) = listed(state, kind, name) else {
        return Err(crate::error::ApiError::NotFound(format!(
            "no {} named {name} is kept in coe (one from the settings file is changed there)",
            kind.noun()
        ))
        .into());
    };
    let shown = Shown {
        kind,
        platform: saved.platform.to_owned(),
        name: name.to_owned(),
        version: saved.version,
        saved: Some(&saved.settings),
        typed: None,
        problems: Vec::new(),
        general: if saved.waiting_for.is_empty() {
            Vec::new()
        } else {
            vec![
                "It was restored from a backup that left its secrets out: give them again \
                  and save, and it is used again."
                    .to_owned(),
            ]
        },
        checked: Vec::new(),
    };
    render_form(state, who, StatusCode::OK, shown)
}

/// "Check the connection": what was typed (secrets left empty taken from the saved
/// one) is tried now — a test message posted and the channel read back, or the
/// tracker's places and statuses read — and the form comes back with what worked and
/// what to fix, in words, nothing saved.
async fn check(kind: Kind, state: &State, who: &SignedIn, fields: &Fields) -> Page {
    let platform = fields.text("platform");
    let name = fields.text("name").trim().to_owned();
    let version: Option<i64> = fields.filled("version").and_then(|v| v.parse().ok());
    // A saved one's secrets are still shown by their end.
    let listed = listed(state, kind, &name);
    let saved = listed.as_ref().map(|l| &l.settings);
    let shown = |problems: Vec<(String, String)>, general: Vec<String>, checked| Shown {
        kind,
        platform: platform.clone(),
        name: name.clone(),
        version,
        saved,
        typed: Some(fields),
        problems,
        general,
        checked,
    };
    let refused = |e: ApiError| match e {
        ApiError::Validation(list) => {
            let problems = list.into_iter().map(|f| (f.field, f.problem)).collect();
            shown(problems, Vec::new(), Vec::new())
        }
        other => shown(Vec::new(), vec![other.to_string()], Vec::new()),
    };
    let input = match settings_of(kind, &platform, fields, before(state, kind, &name).as_ref()) {
        Ok(input) => input,
        Err((field, problem)) => {
            let again = refused(ApiError::field(field, problem));
            return render_form(state, who, StatusCode::UNPROCESSABLE_ENTITY, again);
        }
    };
    let asked = name.clone();
    let candidate = as_service(state, move |conn, state| {
        Ok(store::candidate(
            conn,
            &state.connections,
            kind,
            &asked,
            input,
            version.or(Some(0)),
        ))
    })
    .await?;
    let candidate = match candidate {
        Ok(candidate) => candidate,
        Err(e) => {
            let again = refused(ApiError::from(e));
            return render_form(state, who, StatusCode::UNPROCESSABLE_ENTITY, again);
        }
    };
    // Tried with no database connection held.
    let (env_of, by) = (state.clone(), who.person.email.clone());
    let tried = web::block(move || match candidate {
        Candidate::Channel(channel) => {
            crate::services::outbound::chat::try_channel(env_of.env(), &channel, &by)
        }
        Candidate::Tracker(tracker) => crate::services::coe::trackers::state::try_tracker(&tracker),
    })
    .await
    .map_err(ApiError::from)?;
    render_form(
        state,
        who,
        StatusCode::OK,
        shown(Vec::new(), Vec::new(), tried),
    )
}

/// What the form does not show is kept from the saved settings of `name` (secrets
/// masked: those the form leaves empty are kept by the save itself).
fn before(state: &AppState, kind: Kind, name: &str) -> Option<Value> {
    let connections = state.env().connections;
    // One waiting for its secrets keeps the rest of its settings.
    if let Some(w) = connections
        .waiting
        .iter()
        .find(|w| w.kept.kind == kind && w.kept.name == name)
    {
        return Some(Value::Object(w.settings.clone()));
    }
    connections.kept(kind, name)?;
    match kind {
        Kind::Chat => connections
            .channel(name)
            .and_then(|c| crate::config::secret::to_masked_json(c).ok()),
        Kind::Tracker => connections
            .tracker(name)
            .and_then(|t| crate::config::secret::to_masked_json(t).ok()),
    }
}

async fn save(kind: Kind, form: AdminForm, state: State) -> Page {
    let (Admin(who), fields) = (form.who, form.fields);
    if fields.text("intent") == "check" {
        return check(kind, &state, &who, &fields).await;
    }
    let platform = fields.text("platform");
    let name = fields.text("name").trim().to_owned();
    let version: Option<i64> = fields.filled("version").and_then(|v| v.parse().ok());
    let input = settings_of(
        kind,
        &platform,
        &fields,
        before(&state, kind, &name).as_ref(),
    );
    let by = who.person.email.clone();
    let result = match input {
        Err((field, problem)) => Err(crate::error::ApiError::field(field, problem)),
        Ok(input) => {
            let name = name.clone();
            as_service(&state, move |conn, state| {
                Ok(store::save(
                    conn,
                    &state.connections,
                    kind,
                    &name,
                    input,
                    version.or(Some(0)),
                    &by,
                    crate::db::now(),
                )
                .map(drop)
                .map_err(crate::error::ApiError::from))
            })
            .await?
        }
    };
    let done = format!("{}?saved={}", base(kind), query_value(&name));
    Outcome::of(result)?
        .answer(&done, |again| {
            let shown = Shown {
                kind,
                platform: platform.clone(),
                name: name.clone(),
                version,
                saved: None,
                typed: Some(&fields),
                problems: again.fields.clone(),
                general: again.problems.clone(),
                checked: Vec::new(),
            };
            let page = render_form(&state, &who, again.status, shown);
            async move { page }
        })
        .await
}

async fn remove(kind: Kind, form: AdminForm, name: String, state: State) -> Page {
    let (by, asked) = (form.who.0.person.email.clone(), name.clone());
    let gone = move |conn: &mut crate::db::DbConnection, state: &AppState| {
        store::remove(
            conn,
            &state.connections,
            kind,
            &asked,
            &by,
            crate::db::now(),
        )
    };
    as_service(&state, move |conn, state| Ok(gone(conn, state)?)).await?;
    Ok(see_other(&format!(
        "{}?removed={}",
        base(kind),
        query_value(&name)
    )))
}

/// A chat channel's events and platform as Admin → Chat shows them: in words.
fn channel_in_words(mut channel: Value) -> Value {
    let words: Vec<&str> = channel["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            ChatEvent::ALL
                .into_iter()
                .chain([ChatEvent::Published])
                .find(|k| Some(k.as_str()) == e.as_str())
        })
        .map(event_words)
        .collect();
    channel["events"] = json!(words);
    let kind = channel["kind"].as_str().unwrap_or_default().to_owned();
    if let Some((_, label)) = platforms(Kind::Chat).into_iter().find(|(k, _)| *k == kind) {
        channel["kind"] = json!(label);
    }
    channel
}

fn query_value(v: &str) -> String {
    serde_urlencoded::to_string([("v", v)])
        .unwrap_or_default()
        .trim_start_matches("v=")
        .to_owned()
}

/// The four pages of one kind: `GET …/new`, `GET …/{name}/edit`, `POST …/save`
/// (adds or changes one kept in coe), `POST …/{name}/remove`.
macro_rules! pages_of {
    ($kind:expr, $new:ident, $edit:ident, $save:ident, $remove:ident) => {
        pub async fn $new(Admin(who): Admin, query: web::Query<NewQuery>, state: State) -> Page {
            new($kind, &who, query.into_inner(), &state).await
        }

        pub async fn $edit(Admin(who): Admin, path: web::Path<String>, state: State) -> Page {
            edit($kind, &who, &path.into_inner(), &state).await
        }

        pub async fn $save(form: AdminForm, state: State) -> Page {
            save($kind, form, state).await
        }

        pub async fn $remove(form: AdminForm, path: web::Path<String>, state: State) -> Page {
            remove($kind, form, path.into_inner(), state).await
        }
    };
}

pages_of!(Kind::Chat, chat_new, chat_edit, chat_save, chat_remove);
pages_of!(
    Kind::Tracker,
    trackers_new,
    trackers_edit,
    trackers_save,
    trackers_remove
);

#[derive(Debug, Default, Deserialize)]
pub struct ChatQuery {
    /// The channel a test message just went to, and whether it got through.
    #[serde(default)]
    tested: Option<String>,
    #[serde(default)]
    delivered: Option<bool>,
    /// The channel just saved or removed in coe.
    #[serde(default)]
    saved: Option<String>,
    #[serde(default)]
    removed: Option<String>,
}

/// `GET /admin/chat`: each chat channel (`[[chat.channels]]`): what it hears, its last
/// delivery and error, whether it is broken, what waits; a test message button.
pub async fn chat_list(Admin(who): Admin, query: web::Query<ChatQuery>, state: State) -> Page {
    let channels = as_service(&state, |conn, state| {
        Ok(crate::services::outbound::chat::statuses(
            conn,
            state.env(),
        )?)
    })
    .await?;
    let query = query.into_inner();
    let channels: Vec<Value> = channels
        .iter()
        .map(|c| channel_in_words(json!(c)))
        .collect();
    let data = json!({"channels": channels, "tested": query.tested, "delivered": query.delivered,
                      "saved": query.saved, "removed": query.removed,
                      "waiting": waiting(&state, Kind::Chat)});
    page(&state, &who, StatusCode::OK, "admin_chat", "chat", data)
}
