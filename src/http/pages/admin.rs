//! The admin pages: the people directory (CSV import with its per-line report, admin
//! flags, signing someone out everywhere), API tokens (made, shown once, revoked), the
//! outbox (emails by state, the SMTP server's answer for failures, retry), the
//! browser sessions, and who owns COEs (the service map and the teams' owners). Only people the directory marks as admins see them; each calls
//! the service its API endpoint calls.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::PageError;
use super::guard::{Admin, CsrfForm, Fields};
use super::kit::{render, Page, State};
use super::outcome::{as_service, see_other, Outcome};
use crate::db::DbConnection;
use crate::domain::{EmailAddress, Role, TokenName};
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::outbound::{outbox, queue};
use crate::services::{
    access, accounts::auth, directory::ownership, directory::people, directory::tokens,
};

pub(super) type AdminForm = CsrfForm<Fields, Admin>;

/// The roles a new token may have, the least powerful first (the form's default).
const TOKEN_ROLES: [Role; 4] = [Role::Member, Role::Ingest, Role::Scim, Role::Admin];

/// `GET /admin`: the first tab.
pub async fn home() -> HttpResponse {
    see_other("/admin/people")
}

/// Renders an admin page with its tab marked.
pub(super) fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    name: &str,
    tab: &str,
    mut data: Value,
) -> Page {
    data["tab"] = json!({ tab: true });
    render(state, Some(who), status, name, data)
}

#[derive(Debug, Default, Deserialize)]
pub struct PeopleQuery {
    #[serde(default)]
    team: Option<String>,
    /// The person just added or changed.
    #[serde(default)]
    saved: Option<String>,
}

async fn people_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    team: Option<String>,
    status: StatusCode,
    report: Option<Value>,
    one: Value,
) -> Page {
    let filter = team.clone();
    let (everyone, bar_raisers) = as_service(state, move |conn, _| {
        Ok((
            people::list(conn, filter.as_deref())?,
            people::bar_raiser_count(conn)?,
        ))
    })
    .await?;
    // The bar-raiser rule never lapses unseen: with nobody marked, the worst outages'
    // COEs are approved by their reviewer alone.
    let from = state.settings.coe.bar_raiser_from;
    let unmarked = (bar_raisers == 0).then(|| match from {
        crate::domain::Severity::Sev1 => "sev1 COEs".to_owned(),
        other => format!("{other} COEs and worse"),
    });
    // `one`: the form for one person, as typed when it did not go through, or what it did.
    let mut form = json!({"done": null, "problems": [],
                          "form": {"email": "", "name": "", "team": "", "manager_email": ""}});
    if let (Value::Object(form), Value::Object(one)) = (&mut form, one) {
        form.extend(one);
    }
    let data = json!({"people": everyone, "team": team, "report": report,
                      "no_bar_raiser_from": unmarked, "one": form});
    page(state, who, status, "admin_people", "people", data)
}

/// `GET /admin/people`.
pub async fn people_list(Admin(who): Admin, query: web::Query<PeopleQuery>, state: State) -> Page {
    let PeopleQuery { team, saved } = query.into_inner();
    let team = team.filter(|t| !t.trim().is_empty());
    let query_done = saved.map(|email| format!("Saved {email}."));
    let done = query_done
        .map(|p| json!({"done": p}))
        .unwrap_or(Value::Null);
    people_page(&state, &who, team, StatusCode::OK, None, done).await
}

/// `POST /admin/people/import`: CSV pasted into the form; the answer lists what was
/// created and updated and every rejected line with why.
pub async fn people_import(form: AdminForm, state: State) -> Page {
    let (Admin(who), csv) = (form.who, form.fields.text("csv"));
    let imported = as_service(&state, move |conn, state| {
        let teams_from_groups = !state.settings.scim.team_groups.is_empty();
        match people::import_csv(conn, &csv, teams_from_groups) {
            Ok(report) => Ok(Ok(report)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        }
    })
    .await?;
    match imported {
        Ok(report) => {
            people_page(
                &state,
                &who,
                None,
                StatusCode::OK,
                Some(json!(report)),
                Value::Null,
            )
            .await
        }
        Err(outcome) => {
            outcome
                .answer("/admin/people", |again| {
                    let report = json!({"problems": again.problems});
                    people_page(&state, &who, None, again.status, Some(report), Value::Null)
                })
                .await
        }
    }
}

/// `POST /admin/people/save`: adds one person, or changes one's name, team or manager
/// (`email`, `name`, `team`, `manager_email`); what else they have (time zone, bar
/// raiser) stays. The directory's rules apply as in the API and the CSV import.
pub async fn people_save(form: AdminForm, state: State) -> Page {
    let (Admin(who), fields) = (form.who, form.fields);
    let typed = json!({
        "email": fields.text("email"), "name": fields.text("name"),
        "team": fields.text("team"), "manager_email": fields.text("manager_email"),
    });
    let (email, name, team, manager) = (
        fields.text("email"),
        fields.filled("name"),
        fields.filled("team"),
        fields.filled("manager_email"),
    );
    let saved = as_service(&state, move |conn, state| {
        let mut problems = Vec::new();
        let email = EmailAddress::parse(&email)
            .map_err(|p| problems.push(("email".to_owned(), p)))
            .ok();
        let manager = manager
            .map(|m| EmailAddress::parse(&m))
            .transpose()
            .map_err(|p| problems.push(("manager_email".to_owned(), p)))
            .ok()
            .flatten();
        let Some(email) = email.filter(|_| problems.is_empty()) else {
            return Outcome::of(Err(people::PeopleError::Invalid(problems))).map(Err);
        };
        let now = people::get(conn, email.as_str())?.map(|(p, _)| p);
        let input = people::PersonInput {
            name,
            team,
            manager_email: manager,
            timezone: now.and_then(|p| p.timezone),
            bar_raiser: None,
        };
        let teams_from_groups = !state.settings.scim.team_groups.is_empty();
        match people::put(conn, &email, &input, teams_from_groups) {
            Ok(_) => Ok(Ok(email)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        }
    })
    .await?;
    match saved {
        Ok(email) => Ok(see_other(&format!(
            "/admin/people?saved={}",
            form_urlencoded::byte_serialize(email.as_str().as_bytes()).collect::<String>()
        ))),
        Err(outcome) => {
            outcome
                .answer("/admin/people", |again| {
                    let problems: Vec<String> = if again.fields.is_empty() {
                        again.problems
                    } else {
                        again
                            .fields
                            .iter()
                            .map(|(f, p)| format!("{}: {p}", super::outcome::label_of(f)))
                            .collect()
                    };
                    let one = json!({"problems": problems, "form": typed});
                    people_page(&state, &who, None, again.status, None, one)
                })
                .await
        }
    }
}

/// `POST /admin/people/{email}/admin`: sets or clears the admin flag (`is_admin` =
/// `true` or `false`).
pub async fn people_admin(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let (Admin(who), form) = (form.who, form.fields);
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let is_admin = form.text("is_admin") == "true";
    if !is_admin {
        let me = Some(who.person.email.as_str());
        access::not_from_oneself(me, email.as_str(), "you cannot remove your own admin flag")?;
    }
    as_service(&state, move |conn, _| {
        Ok(people::set_admin(conn, &email, is_admin)?)
    })
    .await?;
    Ok(see_other("/admin/people"))
}

/// `POST /admin/people/{email}/bar-raiser`: marks the person a bar raiser, or not
/// (`bar_raiser` = `true` or `false`).
pub async fn people_bar_raiser(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let bar_raiser = form.fields.text("bar_raiser") == "true";
    as_service(&state, move |conn, _| {
        Ok(people::set_bar_raiser(conn, &email, bar_raiser)?)
    })
    .await?;
    Ok(see_other("/admin/people"))
}

/// `POST /admin/people/{email}/left`: the person left the organisation
/// (`services::accounts::leaving`): their sessions and tokens end, their open work passes to
/// their manager (else their team's lead, else `scim.leavers_work_to`, else an admin),
/// who is emailed the list. Refused for people the identity provider manages (it says
/// when they leave) and for the admin themselves.
pub async fn people_left(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let Admin(who) = form.who;
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let me = Some(who.person.email.as_str());
    access::not_from_oneself(
        me,
        email.as_str(),
        "you cannot mark yourself as having left",
    )?;
    let by = format!("admin {}", who.person.email);
    as_service(&state, move |conn, state| {
        crate::db::write_transaction(conn, |conn| {
            let Some((person, _)) = people::get(conn, email.as_str())? else {
                return Err(crate::error::ApiError::NotFound(format!(
                    "{email} is not in the directory"
                )));
            };
            if person.provisioned {
                return Err(crate::error::ApiError::Conflict {
                    message: format!(
                        "{email} is provisioned by the identity provider: deactivate them \
                         there, and coe follows"
                    ),
                    fields: Vec::new(),
                });
            }
            let now = crate::db::now();
            Ok(crate::services::accounts::leaving::leave(
                conn,
                state.env(),
                email.as_str(),
                now,
                &by,
            )?)
        })
    })
    .await?;
    Ok(see_other("/admin/people"))
}

/// `POST /admin/people/{email}/sign-out`: ends every session of the person.
pub async fn people_sign_out(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let Admin(who) = form.who;
    let email = EmailAddress::parse(&path.into_inner()).map_err(PageError::BadRequest)?;
    let by = format!("admin {}", who.person.email);
    as_service(&state, move |conn, _| {
        Ok(auth::end_all(conn, email.as_str(), &by)?)
    })
    .await?;
    Ok(see_other("/admin/sessions"))
}

async fn tokens_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    status: StatusCode,
    extra: Value,
) -> Page {
    let list = as_service(state, |conn, _| Ok(tokens::list(conn, true)?)).await?;
    let mut data = json!({"tokens": list, "roles": TOKEN_ROLES.map(|r| r.to_string()),
                          "form": {"name": "", "role": "", "email": ""}, "problems": [],
                          "made": null});
    if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
        data.extend(extra);
    }
    page(state, who, status, "admin_tokens", "tokens", data)
}

/// The token form as typed, every field there.
fn token_form(form: &Fields) -> Value {
    json!({"name": form.text("name"), "role": form.text("role"), "email": form.text("email")})
}

/// `GET /admin/tokens`.
pub async fn tokens_list(Admin(who): Admin, state: State) -> Page {
    tokens_page(&state, &who, StatusCode::OK, json!({})).await
}

/// `POST /admin/tokens`: makes a token and shows its secret, once.
pub async fn tokens_create(form: AdminForm, state: State) -> Page {
    let (Admin(who), form) = (form.who, form.fields);
    let mut problems = Vec::new();
    let name = TokenName::parse(&form.text("name"))
        .map_err(|p| problems.push(format!("name: {p}")))
        .ok();
    let role = form
        .text("role")
        .parse::<Role>()
        .map_err(|p| problems.push(format!("role: {p}")))
        .ok();
    let email = form.filled("email").and_then(|e| {
        EmailAddress::parse(&e)
            .map_err(|p| problems.push(format!("email: {p}")))
            .ok()
    });
    let (Some(name), Some(role), true) = (name, role, problems.is_empty()) else {
        let extra = json!({"problems": problems, "form": token_form(&form)});
        return tokens_page(&state, &who, StatusCode::UNPROCESSABLE_ENTITY, extra).await;
    };
    let by = who.person.email.clone();
    let made = as_service(&state, move |conn, _| {
        match tokens::create_by(conn, &name, role, email.as_ref(), Some(&by)) {
            Ok(made) => Ok(Ok(made)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        }
    })
    .await?;
    match made {
        Ok((info, secret)) => {
            let extra = json!({"made": {"name": info.name, "secret": secret.expose()}});
            tokens_page(&state, &who, StatusCode::CREATED, extra).await
        }
        Err(outcome) => {
            outcome
                .answer("/admin/tokens", |again| {
                    let extra = json!({"problems": again.problems, "form": token_form(&form)});
                    tokens_page(&state, &who, again.status, extra)
                })
                .await
        }
    }
}

/// `POST /admin/tokens/{name}/revoke`.
pub async fn tokens_revoke(_: AdminForm, path: web::Path<String>, state: State) -> Page {
    let name = path.into_inner();
    crate::http::bearer::revoke(&state, name).await?;
    Ok(see_other("/admin/tokens"))
}

#[derive(Debug, Default, Deserialize)]
pub struct OutboxQuery {
    #[serde(default)]
    state: Option<String>,
}

/// `GET /admin/outbox`: counts by state and the newest 100 emails (of one state).
pub async fn outbox_list(Admin(who): Admin, query: web::Query<OutboxQuery>, state: State) -> Page {
    let filter = query
        .into_inner()
        .state
        .filter(|s| outbox::STATES.contains(&s.as_str()));
    let shown = filter.clone();
    let (counts, emails, waiting) = as_service(&state, move |conn, _| {
        Ok((
            outbox::counts(conn)?,
            outbox::list(conn, shown.as_deref(), None, None, 100)?,
            queue::waiting(conn)?,
        ))
    })
    .await?;
    let queues: Vec<Value> = waiting.iter().map(queue_line).collect();
    let data = json!({"counts": counts, "emails": emails, "state": filter, "queues": queues});
    page(&state, &who, StatusCode::OK, "admin_outbox", "outbox", data)
}

/// One table of the queue as the outbox page lists it: in words, with where its
/// rows are read one by one.
fn queue_line(w: &queue::Waiting) -> Value {
    let (what, link) = match w.queue.as_str() {
        "email" => ("Emails", "/admin/outbox?state=failed"),
        "chat" => ("Chat notices", "/admin/chat"),
        _ => ("Tracker updates", "/admin/trackers"),
    };
    json!({"what": what, "link": link, "w": w})
}

/// `GET /admin/outbox/{id}`: one email as its recipient reads it (the plain-text
/// part), with its state and the server's last answer; a sign-in link in it is shown
/// as words saying that one was sent, never the link (`outbox::readable`).
pub async fn outbox_email(Admin(who): Admin, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let asked = id.clone();
    let found = as_service(&state, move |conn, _| Ok(outbox::get(conn, &asked)?)).await?;
    let (email, body) =
        found.ok_or_else(|| PageError::NotFound(format!("there is no email {id}")))?;
    let data = json!({"email": email, "body": body});
    page(&state, &who, StatusCode::OK, "admin_email", "outbox", data)
}

/// `POST /admin/outbox/{id}/drop`: a held, pending or failed email is not sent
/// (audited).
pub async fn outbox_drop(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let Admin(who) = form.who;
    let id = path.into_inner();
    let actor = who.person.email.clone();
    let state_was = as_service(&state, move |conn, _| {
        let before = outbox::get(conn, &id)?.map(|(email, _)| email.state);
        outbox::restored::drop_email(conn, &id, &actor)?;
        Ok(before)
    })
    .await?;
    let back = state_was.unwrap_or_else(|| outbox::HELD.to_owned());
    Ok(see_other(&format!("/admin/outbox?state={back}")))
}

/// `POST /admin/outbox/send-held`: every held email is sent after all (audited).
pub async fn outbox_send_held(form: AdminForm, state: State) -> Page {
    all_held(form, state, outbox::restored::release_held, "pending").await
}

/// `POST /admin/outbox/drop-held`: every held email is dropped (audited).
pub async fn outbox_drop_held(form: AdminForm, state: State) -> Page {
    all_held(form, state, outbox::restored::drop_all_held, "dropped").await
}

/// Does `what` to every held email as the admin, and shows the outbox's emails in
/// state `then`.
async fn all_held(
    form: AdminForm,
    state: State,
    what: outbox::restored::AllHeld,
    then: &str,
) -> Page {
    let Admin(who) = form.who;
    let actor = who.person.email.clone();
    as_service(&state, move |conn, _| Ok(what(conn, &actor)?)).await?;
    Ok(see_other(&format!("/admin/outbox?state={then}")))
}

/// `POST /admin/outbox/{id}/retry`.
pub async fn outbox_retry(_: AdminForm, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    as_service(&state, move |conn, _| {
        Ok(outbox::retry(conn, &id).map(drop)?)
    })
    .await?;
    Ok(see_other("/admin/outbox?state=pending"))
}

/// `POST /admin/chat/{name}/test`: sends a test message to the channel now; one that
/// gets through mends a broken channel (what waited is then sent).
pub async fn chat_test(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let name = path.into_inner();
    let by = form.who.0.person.email.clone();
    let asked = name.clone();
    let Some(channel) = state.env().connections.channel(&asked).cloned() else {
        return Err(
            crate::error::ApiError::NotFound(format!("there is no chat channel {asked}")).into(),
        );
    };
    // Sent with no database connection held; what came of it kept after.
    let sender = state.clone();
    let (outcome, channel) = web::block(move || {
        let sent = crate::services::outbound::chat::send_test(sender.env(), &channel, &by, "");
        (sent, channel)
    })
    .await
    .map_err(crate::error::ApiError::from)?;
    let kept = outcome.clone();
    as_service(&state, move |conn, _| {
        Ok(crate::services::outbound::chat::record_test(
            conn,
            &channel.name,
            &kept,
        )?)
    })
    .await?;
    let delivered = outcome == crate::chat::Sent::Delivered;
    let query = serde_urlencoded::to_string([("tested", name.as_str())]).unwrap_or_default();
    Ok(see_other(&format!(
        "/admin/chat?{query}&delivered={delivered}"
    )))
}

/// `GET /admin/sessions`: every session that has not ended, newest first.
pub async fn sessions_list(Admin(who): Admin, state: State) -> Page {
    let sessions = as_service(&state, |conn, _| Ok(auth::sessions_of(conn, None, 500)?)).await?;
    let data = json!({"sessions": sessions, "mine": who.person.session_id});
    page(
        &state,
        &who,
        StatusCode::OK,
        "admin_sessions",
        "sessions",
        data,
    )
}

/// `GET /admin/published`: every summary published for customers, newest first:
/// its title and address, who published it and when, its last update, where it
/// went, and whether customers can read it now.
pub async fn published_list(Admin(who): Admin, state: State) -> Page {
    let list = as_service(&state, |conn, state| {
        Ok(crate::services::coe::publishing::published(
            conn,
            state.env(),
            false,
            500,
        )?)
    })
    .await?;
    page(
        &state,
        &who,
        StatusCode::OK,
        "admin_published",
        "published",
        json!({ "published": list, "feed": state.env().settings.org.notice_feed }),
    )
}

/// `POST /admin/sessions/{id}/end`.
pub async fn sessions_end(form: AdminForm, path: web::Path<String>, state: State) -> Page {
    let id = path.into_inner();
    let by = format!("admin {}", form.who.0.person.email);
    as_service(&state, move |conn, _| Ok(auth::end(conn, &id, &by)?)).await?;
    Ok(see_other("/admin/sessions"))
}

/// The ownership page: the service map (service → owner, team, default reviewer) and
/// each team's default owner, each with a form; what the settings file maps is
/// listed under it. `problems` and `typed` show a form that did not go through.
async fn ownership_page(
    state: &web::Data<AppState>,
    who: &SignedIn,
    status: StatusCode,
    problems: Value,
    typed: Value,
) -> Page {
    let (seen, services, teams, directory) = as_service(state, |conn, state| {
        let seen = ownership::services_seen(conn, state.env(), SERVICES_SEEN)?;
        let services = ownership::service_map(conn)?;
        let teams = ownership::team_owners(conn)?;
        // The names of the people the map shows (a field for a person finds the
        // others as they are typed).
        let shown: Vec<String> = services
            .iter()
            .flat_map(|s| [s.owner.clone(), s.reviewer.clone()])
            .flatten()
            .chain(teams.iter().map(|t| t.owner.clone()))
            .collect();
        let directory = people::names_of(conn, &shown)?;
        Ok((seen, services, teams, directory))
    })
    .await?;
    let names = super::kit::names_data(&directory);
    // Every form's fields and problems, as typed or empty (the templates are strict).
    let field = |part: &str, name: &str| typed[part][name].as_str().unwrap_or_default().to_owned();
    let typed = json!({
        "services": {"service": field("services", "service"), "owner": field("services", "owner"),
                     "team": field("services", "team"), "reviewer": field("services", "reviewer"),
                     "depends_on": field("services", "depends_on"),
                     "customer_name": field("services", "customer_name")},
        "teams": {"team": field("teams", "team"), "owner": field("teams", "owner")},
    });
    let problems = json!({
        "services": problems.get("services").cloned().unwrap_or_else(|| json!([])),
        "teams": problems.get("teams").cloned().unwrap_or_else(|| json!([])),
    });
    let configured: Vec<Value> = state
        .settings
        .ownership
        .services
        .iter()
        .map(|(service, owner)| json!({"service": service, "owner": owner}))
        .collect();
    let unmapped = seen.iter().filter(|s| !s.mapped).count();
    let data = json!({
        "seen": seen,
        "unmapped": unmapped,
        "services": services,
        "teams": teams,
        "configured": configured,
        "default_owner": state.settings.ownership.default_owner,
        "same_outage_minutes": state.settings.incidents.same_outage_window_secs / 60,
        "names": names,
        "problems": problems,
        "typed": typed,
    });
    page(state, who, status, "admin_ownership", "ownership", data)
}

/// How many of the services the incidents name the ownership page lists.
const SERVICES_SEEN: i64 = 200;

/// `GET /admin/ownership`; `?service=` fills the service map's form with a service
/// the incidents named ("Give it an owner").
pub async fn ownership_list(
    Admin(who): Admin,
    query: web::Query<std::collections::HashMap<String, String>>,
    state: State,
) -> Page {
    let typed = match query.get("service") {
        Some(service) => json!({"services": {"service": service}}),
        None => json!({}),
    };
    ownership_page(&state, &who, StatusCode::OK, json!({}), typed).await
}

/// Writes ownership form `part` as the signed-in admin (`put`, given the settings and
/// the admin's address), then answers: back to the page when it worked, else the page
/// again with the problems beside the form and what was typed.
async fn ownership_answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    part: &'static str,
    fields: &Fields,
    put: impl FnOnce(&mut DbConnection, crate::services::Env<'_>, &str) -> Result<(), people::PeopleError>
        + Send
        + 'static,
) -> Page {
    let actor = who.person.email.clone();
    let result = as_service(state, move |conn, state| Ok(put(conn, state.env(), &actor))).await?;
    let outcome = Outcome::of(result)?;
    let typed = json!({ part: fields.to_json() });
    outcome
        .answer(&format!("/admin/ownership#{part}"), |again| {
            ownership_page(
                state,
                who,
                again.status,
                json!({ part: again.problems }),
                typed,
            )
        })
        .await
}

/// `POST /admin/ownership/services`: sets a service's owner, team, default reviewer
/// and dependencies (all empty: removes it from the map).
pub async fn ownership_service(form: AdminForm, state: State) -> Page {
    let (Admin(who), fields) = (form.who, form.fields);
    let input = ownership::ServiceInput {
        service: fields.text("service"),
        owner: fields.filled("owner"),
        team: fields.filled("team"),
        reviewer: fields.filled("reviewer"),
        depends_on: fields.filled("depends_on"),
        customer_name: fields.filled("customer_name"),
    };
    ownership_answer(
        &state,
        &who,
        "services",
        &fields,
        move |conn, env, actor| ownership::put_service(conn, env, &input, actor),
    )
    .await
}

/// `POST /admin/ownership/teams`: sets a team's default COE owner (empty: removes it).
pub async fn ownership_team(form: AdminForm, state: State) -> Page {
    let (Admin(who), fields) = (form.who, form.fields);
    let (team, owner) = (fields.text("team"), fields.filled("owner"));
    ownership_answer(&state, &who, "teams", &fields, move |conn, env, actor| {
        ownership::put_team_owner(conn, env, &team, owner.as_deref(), actor)
    })
    .await
}
