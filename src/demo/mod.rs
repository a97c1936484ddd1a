//! `coe demo` (and `coe serve --demo`): fills an empty database with a realistic
//! organisation so that a new user sees the mechanism work within a minute: people
//! with managers, a month of incidents from the six alert sources (one of them an
//! alert storm), COEs in every state and corrective actions on time, due soon and
//! overdue by days and by weeks. Dates are relative to now.
//!
//! Everything goes through the services the API uses (ingest, COE edits, review,
//! actions), so the data obeys every rule; only the times the services stamp with
//! "now" (when an action was created, closed or due) are then moved into the past.

use std::collections::BTreeMap;
use std::fmt::Display;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use diesel::prelude::*;

use crate::config::Settings;
use crate::db::schema::{coes, corrective_actions, incidents, people};
use crate::db::{self, DbConnection};
use crate::domain::action::Transition;
use crate::domain::template::Template;
use crate::domain::{EmailAddress, Role, TokenName};
use crate::email::EmailTemplates;
use crate::services::access::Acting;
use crate::services::coe::actions::{self, NewAction, TransitionInput};
use crate::services::coe::coes::{self as coe_service, CoePatch};
use crate::services::coe::review::{self, Step};
use crate::services::directory::people::{self as directory, PersonInput};
use crate::services::directory::tokens;
use crate::services::intake::ingest::{self, Delivery};
use crate::services::Env;

/// The demo's domain: nothing is ever sent to real people.
mod story;

use story::{
    events_of, scenarios, sections, whys, DemoAction, Outcome, Scenario, Stage, Writeup, PEOPLE,
};

const DOMAIN: &str = "example.com";

/// The people marked bar raiser: two leads, so that every team's sev1 finds one
/// outside its own team (`coe.bar_raiser_from`).
const BAR_RAISERS: [&str; 2] = ["lee", "sam"];

/// What `seed` made, for the command to print.
#[derive(Debug)]
pub struct DemoReport {
    pub people: usize,
    pub incidents: i64,
    pub events: usize,
    /// COEs by state.
    pub coes: BTreeMap<String, i64>,
    pub actions: i64,
    pub overdue_actions: i64,
    /// An admin token acting for the engineering leader, shown once.
    pub token: String,
    pub leader: String,
    /// One action owner's calendar feed.
    pub calendar_url: String,
}

fn fail<E: Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("demo: {what}: {e}")
}

fn email(name: &str) -> String {
    format!("{name}@{DOMAIN}")
}

/// What the database holds that a person made or an alert sent, e.g. `3 incidents`.
fn held(conn: &mut DbConnection) -> Result<Vec<String>, String> {
    let counts: [(&str, i64); 4] = [
        (
            "incidents",
            incidents::table
                .count()
                .get_result(conn)
                .map_err(fail("count"))?,
        ),
        (
            "COEs",
            coes::table
                .count()
                .get_result(conn)
                .map_err(fail("count"))?,
        ),
        (
            "corrective actions",
            corrective_actions::table
                .count()
                .get_result(conn)
                .map_err(fail("count"))?,
        ),
        (
            "people",
            people::table
                .count()
                .get_result(conn)
                .map_err(fail("count"))?,
        ),
    ];
    Ok(counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {what}"))
        .collect())
}

/// Whether the database holds nothing a person made or an alert sent (tokens aside).
pub fn is_empty(conn: &mut DbConnection) -> Result<bool, String> {
    Ok(held(conn)?.is_empty())
}

/// Refuses a database that holds data.
fn ensure_empty(conn: &mut DbConnection) -> Result<(), String> {
    let held = held(conn)?;
    if held.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the database already holds data ({}): the demo fills only an empty database; \
         point --database-url (or COE_DATABASE_URL) at a new file, e.g. sqlite://coe-demo.db",
        held.join(", ")
    ))
}

struct Seeder<'a> {
    settings: &'a Settings,
    template: &'a Template,
    emails: &'a EmailTemplates,
    connections: &'a crate::services::connections::Connections,
    today: NaiveDate,
    now: NaiveDateTime,
}

impl Seeder<'_> {
    fn version(&self, conn: &mut DbConnection, id: &str) -> Result<i32, String> {
        coes::table
            .find(id)
            .select(coes::version)
            .first(conn)
            .map_err(fail("read the COE's version"))
    }

    fn env(&self) -> Env<'_> {
        Env {
            settings: self.settings,
            template: self.template,
            emails: self.emails,
            connections: self.connections,
        }
    }

    /// Writes a COE as far as its scenario says.
    fn write(
        &self,
        conn: &mut DbConnection,
        id: &str,
        s: &Scenario,
        w: &Writeup,
    ) -> Result<(), String> {
        let (owner, reviewer) = (email(w.owner), email(w.reviewer));
        let acting = [
            Acting::person(&owner, false),
            Acting::person(&reviewer, false),
            // The owner takes the COE and names its reviewer (the demo may assign any
            // COE: admin rights; the owner answers for naming the reviewer).
            Acting::person(&owner, true),
        ];
        let [as_owner, as_reviewer, admin] = [0, 1, 2].map(|i| acting[i].editor());
        let patch = CoePatch {
            owner: EmailAddress::parse(&owner).ok(),
            reviewer: EmailAddress::parse(&reviewer).ok(),
            ..CoePatch::default()
        };
        let v = self.version(conn, id)?;
        coe_service::patch(conn, id, patch, Some(v), &admin, self.env())
            .map_err(fail("assign the COE"))?;
        if w.stage == Stage::Untouched {
            return Ok(());
        }
        let written = sections(s);
        let take = if w.stage == Stage::Started {
            2
        } else {
            written.len()
        };
        let env = self.env();
        for (key, body) in written.into_iter().take(take) {
            let v = self.version(conn, id)?;
            coe_service::put_section(conn, id, key, &body, Some(v), &as_owner, &env)
                .map_err(fail("write a section"))?;
        }
        if w.stage == Stage::Started {
            return Ok(());
        }
        let v = self.version(conn, id)?;
        coe_service::add_why_chain(conn, id, &whys(s), Some(v), &as_owner, self.env())
            .map_err(fail("add the 5 whys"))?;
        let mut made = Vec::new();
        for a in w.actions {
            let input = NewAction {
                title: Some(a.title.to_owned()),
                description: Some(format!("From the COE of “{}”.", s.title)),
                owner: Some(email(a.owner)),
                // Created due in the future (the API's rule); moved below.
                due_date: Some((self.today + Duration::days(60)).to_string()),
                priority: Some(a.priority.to_owned()),
                kind: Some(a.kind.to_owned()),
                success_criteria: Some(
                    "The alarm or fix is in production and verified in a game day.".into(),
                ),
                external_url: Some(format!(
                    "https://tickets.{DOMAIN}/browse/OPS-{}",
                    100 + made.len()
                )),
                past_target_reason: None,
            };
            let action_id = actions::create(
                conn,
                id,
                &input,
                &as_owner,
                self.settings.clock(),
                self.env(),
            )
            .map_err(fail("create an action"))?;
            made.push((action_id, a));
        }
        review::step(
            conn,
            id,
            Step::Submit,
            review::Said::default(),
            None,
            &as_owner,
            self.env(),
        )
        .map_err(fail("submit the COE"))?;
        if w.stage == Stage::InReview {
            return self.settle_actions(conn, &made);
        }
        let read = self.version(conn, id)?;
        review::step(
            conn,
            id,
            Step::Approve,
            review::Said::comment(Some(
                "Clear root cause and actions that prevent it; approved.",
            )),
            Some(read),
            &as_reviewer,
            self.env(),
        )
        .map_err(fail("approve the COE"))?;
        // A COE that got a bar raiser is approved when the bar raiser approves too.
        let bar_raiser: Option<String> = coes::table
            .find(id)
            .select(coes::bar_raiser_email)
            .first(conn)
            .map_err(fail("read the COE's bar raiser"))?;
        if let Some(bar_raiser) = bar_raiser {
            let acting = Acting::person(&bar_raiser, false);
            review::step(
                conn,
                id,
                Step::Approve,
                review::Said::comment(Some(
                    "Read it as an outsider: the actions stop a repeat; approved.",
                )),
                Some(read),
                &acting.editor(),
                self.env(),
            )
            .map_err(fail("approve the COE as its bar raiser"))?;
        }
        self.settle_actions(conn, &made)
    }

    /// Moves each action to its outcome, then its dates into the past.
    fn settle_actions(
        &self,
        conn: &mut DbConnection,
        made: &[(String, &DemoAction)],
    ) -> Result<(), String> {
        for (id, a) in made {
            let address = email(a.owner);
            let acting = Acting::person(&address, false);
            let who = acting.editor();
            let note = |text: &str| TransitionInput {
                note: Some(text.to_owned()),
                evidence_url: None,
            };
            match a.outcome {
                Outcome::Open => {}
                Outcome::InProgress => {
                    actions::transition(
                        conn,
                        id,
                        Transition::Start,
                        &TransitionInput::default(),
                        &who,
                        self.env(),
                    )
                    .map_err(fail("start an action"))?;
                }
                Outcome::DoneLate(_) => {
                    let done = TransitionInput {
                        note: Some("Shipped and verified in production.".into()),
                        evidence_url: Some(format!("https://grafana.{DOMAIN}/d/verified")),
                    };
                    actions::transition(conn, id, Transition::Complete, &done, &who, self.env())
                        .map_err(fail("complete an action"))?;
                }
                Outcome::WontDo => {
                    actions::transition(
                        conn,
                        id,
                        Transition::WontDo,
                        &note("The queue split removes the need; not worth the risk."),
                        &who,
                        self.env(),
                    )
                    .map_err(fail("decline an action"))?;
                }
                Outcome::Moved => {
                    let patch = actions::ActionPatch {
                        due_date: Some(self.today + Duration::days(90)),
                        reason: Some("Waiting for the queue library upgrade.".into()),
                        ..actions::ActionPatch::default()
                    };
                    actions::patch(conn, id, &patch, &who, self.settings.clock(), self.env())
                        .map_err(fail("move an action's due date"))?;
                }
            }
            // Its real dates, relative to today: created two weeks before it is due
            // (at most 40 days ago), closed when its outcome says.
            let due = self.today + Duration::days(a.due_in_days);
            let created = self.now - Duration::days((14 - a.due_in_days).clamp(1, 40));
            let closed = match a.outcome {
                Outcome::DoneLate(days) => Some(
                    (due + Duration::days(days))
                        .and_hms_opt(15, 0, 0)
                        .unwrap_or(self.now)
                        .min(self.now),
                ),
                Outcome::WontDo => Some(self.now - Duration::days(2)),
                _ => None,
            };
            diesel::update(corrective_actions::table.find(id))
                .set((
                    corrective_actions::due_date.eq(due),
                    corrective_actions::created_at.eq(created),
                    corrective_actions::closed_at.eq(closed),
                ))
                .execute(conn)
                .map_err(fail("date an action"))?;
        }
        Ok(())
    }
}

/// Fills an empty database with the demo organisation; refuses one that holds data.
pub fn seed(
    conn: &mut DbConnection,
    settings: &Settings,
    template: &Template,
    emails: &EmailTemplates,
) -> Result<DemoReport, String> {
    ensure_empty(conn)?;
    let now = db::now();
    let clock = settings.clock();
    // The demo's organisation is seeded before any connection is kept in coe.
    let connections = crate::services::connections::Connections::of_file(settings);
    let seeder = Seeder {
        settings,
        template,
        emails,
        connections: &connections,
        today: clock.today(),
        now,
    };

    for (login, name, team, manager) in PEOPLE {
        let address = EmailAddress::parse(&email(login)).map_err(fail("an address"))?;
        let input = PersonInput {
            name: Some(name.to_owned()),
            team: Some(team.to_owned()),
            manager_email: manager
                .map(|m| EmailAddress::parse(&email(m)))
                .transpose()
                .map_err(fail("an address"))?,
            timezone: None,
            bar_raiser: Some(BAR_RAISERS.contains(&login)),
        };
        directory::put(conn, &address, &input, false).map_err(fail("add a person"))?;
    }

    let env = seeder.env();
    let mut events = 0;
    for s in scenarios() {
        let batch = events_of(&s, now);
        events += batch.len();
        let body = serde_json::to_vec(&batch).map_err(fail("encode the events"))?;
        let outcome = ingest::ingest(
            conn,
            Delivery {
                source: s.source,
                key: None,
                content_type: Some("application/json"),
                body: &body,
            },
            &batch,
            &env,
        )
        .map_err(fail("ingest the events"))?;
        let incident_id = outcome
            .events
            .first()
            .map(|e| e.incident_id.clone())
            .ok_or_else(|| "demo: a scenario filed no events".to_owned())?;
        // The incident was detected when it started, not now.
        let started: NaiveDateTime = incidents::table
            .find(&incident_id)
            .select(incidents::started_at)
            .first(conn)
            .map_err(fail("read an incident"))?;
        diesel::update(incidents::table.find(&incident_id))
            .set((
                incidents::detected_at.eq(started + Duration::minutes(2)),
                incidents::created_at.eq(started + Duration::minutes(2)),
            ))
            .execute(conn)
            .map_err(fail("date an incident"))?;
        let Some(writeup) = &s.coe else { continue };
        let coe_id: String = coes::table
            .filter(coes::incident_id.eq(&incident_id))
            .select(coes::id)
            .first(conn)
            .map_err(fail("find the COE the incident opened"))?;
        seeder.write(conn, &coe_id, &s, writeup)?;
        diesel::update(coes::table.find(&coe_id))
            .set(coes::created_at.eq(started + Duration::minutes(5)))
            .execute(conn)
            .map_err(fail("date a COE"))?;
    }

    // The service map, kept after the month's incidents opened their COEs (whose
    // owners the scenarios name).
    for (service, owner, team, reviewer, depends_on) in story::SERVICE_MAP {
        let input = crate::services::directory::ownership::ServiceInput {
            service: service.to_owned(),
            owner: Some(email(owner)),
            team: Some(team.to_owned()),
            reviewer: Some(email(reviewer)),
            depends_on: Some(depends_on.to_owned()).filter(|d| !d.is_empty()),
            customer_name: None,
        };
        crate::services::directory::ownership::put_service(conn, env, &input, "demo")
            .map_err(fail("map a service"))?;
    }

    let leader = email("dana");
    // The leader administers the service (the pages' admin role comes from here).
    diesel::update(people::table.find(&leader))
        .set(people::is_admin.eq(true))
        .execute(conn)
        .map_err(fail("make the leader an admin"))?;
    let name = TokenName::parse("demo-dana").map_err(fail("a token name"))?;
    let address = EmailAddress::parse(&leader).map_err(fail("an address"))?;
    let (_, secret) = tokens::create(conn, &name, Role::Admin, Some(&address))
        .map_err(fail("create the demo token"))?;
    let owner = EmailAddress::parse(&email("chen")).map_err(fail("an address"))?;
    let feed = directory::new_feed_token(conn, &owner).map_err(fail("make a calendar feed"))?;
    let calendar_url = format!(
        "{}/api/v1/people/{}/actions.ics?token={}",
        settings.public_url.trim_end_matches('/'),
        owner.as_str(),
        feed.expose()
    );

    let by_state: Vec<(String, i64)> = coes::table
        .group_by(coes::state)
        .select((coes::state, diesel::dsl::count_star()))
        .load(conn)
        .map_err(fail("count COEs"))?;
    let overdue_actions: i64 = corrective_actions::table
        .filter(crate::db::rules::action_is_overdue(seeder.today))
        .count()
        .get_result(conn)
        .map_err(fail("count actions"))?;
    Ok(DemoReport {
        people: PEOPLE.len(),
        incidents: incidents::table
            .count()
            .get_result(conn)
            .map_err(fail("count"))?,
        events,
        coes: by_state.into_iter().collect(),
        actions: corrective_actions::table
            .count()
            .get_result(conn)
            .map_err(fail("count"))?,
        overdue_actions,
        token: secret.expose().to_owned(),
        leader,
        calendar_url,
    })
}
