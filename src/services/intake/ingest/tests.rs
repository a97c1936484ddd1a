//! A batch stored as one against the same deliveries stored one by one, and drafts
//! following their incidents, on SQLite and (with `TEST_POSTGRES_URL`) PostgreSQL.

use super::*;
use crate::config::Settings;
use crate::db::models::IncidentRow;
use crate::db::schema::{coes as coe_rows, timeline_entries};
use crate::db::schema::{incident_alerts, incidents};
use crate::domain::template::Template;
use crate::domain::EventKind;
use crate::domain::Severity;
use crate::email::EmailTemplates;
use chrono::NaiveDate;
use std::collections::BTreeMap;

/// A new, migrated database: a SQLite file, or with `postgres` (a server's URL,
/// from `TEST_POSTGRES_URL`) a new database on that server.
pub(super) fn database(postgres: Option<&str>) -> (tempfile::TempDir, crate::db::DbPool) {
    let dir = tempfile::tempdir().expect("dir");
    let url = match postgres {
        None => format!("sqlite://{}", dir.path().join("t.db").display()),
        Some(admin) => {
            let name = format!("coe_unit_{}", uuid::Uuid::now_v7().simple());
            let mut conn = diesel::PgConnection::establish(admin).expect("TEST_POSTGRES_URL");
            diesel::sql_query(format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .expect("create a database");
            let (server, _) = admin.rsplit_once('/').expect("a database in the URL");
            format!("{server}/{name}")
        }
    };
    let settings = crate::config::DatabaseSettings {
        url,
        ..Default::default()
    };
    let pool = db::connect(&settings).expect("connect");
    db::migrate(&mut pool.get().expect("conn")).expect("migrate");
    (dir, pool)
}

/// What storing needs besides the database: the default settings, COE template
/// and email templates.
pub(super) struct Parts {
    pub(super) settings: Settings,
    pub(super) template: Template,
    pub(super) emails: EmailTemplates,
    pub(super) connections: crate::services::connections::LiveConnections,
}

impl Parts {
    pub(super) fn new() -> Parts {
        Parts {
            connections: crate::services::connections::LiveConnections::of_file(
                &Settings::default(),
            ),
            settings: Settings::default(),
            template: Template::default_template(),
            emails: EmailTemplates::load(None, "http://localhost").expect("email templates"),
        }
    }

    fn env(&self) -> Env<'_> {
        crate::services::Env {
            settings: &self.settings,
            template: &self.template,
            emails: &self.emails,
            connections: self.connections.current(),
        }
    }
}

/// A JSON delivery from the source `test`, with the sender's `key` if any.
fn delivery(key: Option<&'static str>) -> Delivery<'static> {
    Delivery {
        source: "test",
        key,
        content_type: Some("application/json"),
        body: b"[]",
    }
}

fn at(minute: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 29)
        .and_then(|d| d.and_hms_opt(10, minute, 0))
        .expect("a time")
}

pub(super) fn event(
    alert: &str,
    group: &str,
    resolved: bool,
    severity: Severity,
    minute: u32,
) -> FailureEvent {
    let status = if resolved {
        EventStatus::Resolved
    } else {
        EventStatus::Firing
    };
    FailureEvent {
        source: "test".into(),
        dedup_key: alert.into(),
        group_key: group.into(),
        occurrence_key: format!("{}@{minute}", status.as_str()),
        kind: if resolved {
            EventKind::Resolved
        } else {
            EventKind::Fired
        },
        status,
        title: format!("{alert} is failing"),
        service: Some("checkout".into()),
        severity,
        started_at: at(minute),
        ended_at: resolved.then(|| at(minute + 1)),
        description: None,
        labels: BTreeMap::from([
            (
                "alertname".into(),
                alert.trim_end_matches(char::is_numeric).into(),
            ),
            ("instance".into(), format!("host-{}", minute % 3)),
        ]),
        annotations: BTreeMap::new(),
        links: Vec::new(),
    }
}

/// Deliveries that exercise every path of filing: a draft opened by one
/// delivery and followed by later ones, an occurrence and a keyed delivery sent
/// again, a group resolved and reopened, more distinct alerts than a timeline
/// shows.
fn deliveries() -> Vec<(Option<&'static str>, Vec<FailureEvent>)> {
    use Severity::*;
    let many: Vec<FailureEvent> = (0..45)
        .map(|n| event(&format!("Alert{n}x"), "g1", false, Sev3, 20))
        .collect();
    vec![
        (
            None,
            vec![
                event("Cpu1", "g1", false, Sev1, 1),
                event("Disk1", "g2", false, Sev3, 1),
            ],
        ),
        (
            None,
            vec![
                event("Cpu2", "g1", false, Sev3, 2),
                event("Cpu1", "g1", false, Sev1, 1),
            ],
        ),
        (
            Some("k1"),
            vec![
                event("Disk1", "g2", true, Sev3, 3),
                event("Mem1", "g3", false, Sev2, 3),
            ],
        ),
        (
            Some("k1"),
            vec![
                event("Disk1", "g2", true, Sev3, 3),
                event("Mem1", "g3", false, Sev2, 3),
            ],
        ),
        (
            None,
            vec![
                event("Disk1", "g2", false, Sev3, 6),
                event("Cpu3", "g1", false, Sev2, 7),
            ],
        ),
        (None, many),
        (
            None,
            vec![
                event("Cpu2", "g1", true, Sev3, 30),
                event("Mem1", "g3", true, Sev2, 30),
            ],
        ),
    ]
}

/// A counted timeline entry: key, occurrences, hosts, text, first and last time.
type Entry = (
    Option<String>,
    i32,
    i32,
    String,
    NaiveDateTime,
    Option<NaiveDateTime>,
);

/// What a database holds after filing, without ids and times of writing.
fn snapshot(conn: &mut DbConnection) -> Vec<String> {
    let mut out = Vec::new();
    let incidents: Vec<IncidentRow> = incidents::table
        .order(incidents::group_key)
        .select(IncidentRow::as_select())
        .load(conn)
        .expect("incidents");
    for i in &incidents {
        out.push(format!(
            "incident {} {} sev{} events {} reopened {} coe {} resolved {:?}",
            i.group_key,
            i.state,
            i.severity,
            i.event_count,
            i.reopened_count,
            i.coe_required_at.is_some(),
            i.resolved_at
        ));
        let mut alerts: Vec<(String, String)> = incident_alerts::table
            .filter(incident_alerts::incident_id.eq(&i.id))
            .select((incident_alerts::dedup_key, incident_alerts::status))
            .load(conn)
            .expect("alerts");
        alerts.sort();
        out.push(format!("  alerts {alerts:?}"));
        let coes: Vec<(String, i32, String)> = coe_rows::table
            .filter(coe_rows::incident_id.eq(&i.id))
            .select((coe_rows::id, coe_rows::severity, coe_rows::state))
            .load(conn)
            .expect("coes");
        for (coe_id, severity, state) in coes {
            out.push(format!("  coe sev{severity} {state}"));
            let mut entries: Vec<Entry> = timeline_entries::table
                .filter(timeline_entries::coe_id.eq(&coe_id))
                .filter(timeline_entries::alert_key.is_not_null())
                .select((
                    timeline_entries::alert_key,
                    timeline_entries::occurrences,
                    timeline_entries::hosts,
                    timeline_entries::text,
                    timeline_entries::at,
                    timeline_entries::last_at,
                ))
                .load(conn)
                .expect("timeline");
            entries.sort();
            out.extend(entries.iter().map(|e| format!("  entry {e:?}")));
        }
    }
    let events: i64 = failure_events::table
        .count()
        .get_result(conn)
        .expect("count");
    let deliveries: i64 = webhook_deliveries::table
        .count()
        .get_result(conn)
        .expect("count");
    out.push(format!("{events} events in {deliveries} deliveries"));
    out
}

/// The answers, each event named by its alert (ids differ between databases).
fn answers(conn: &mut DbConnection, outcomes: &[IngestOutcome]) -> Vec<String> {
    outcomes
        .iter()
        .map(|o| {
            let events: Vec<(String, bool)> = o
                .events
                .iter()
                .map(|e| {
                    let alert: String = failure_events::table
                        .find(&e.id)
                        .select(failure_events::dedup_key)
                        .first(conn)
                        .expect("a stored event");
                    (alert, e.duplicate)
                })
                .collect();
            format!(
                "stored {} duplicate {} events {events:?}",
                o.delivery_id.is_some(),
                o.duplicate
            )
        })
        .collect()
}

/// On SQLite, and on PostgreSQL when `TEST_POSTGRES_URL` names a server.
#[test]
fn a_batch_is_stored_as_its_deliveries_one_by_one_would_be() {
    a_batch_is_stored_as_one_by_one(None);
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        a_batch_is_stored_as_one_by_one(Some(&url));
    }
}

fn a_batch_is_stored_as_one_by_one(postgres: Option<&str>) {
    let parts = Parts::new();
    let env = parts.env();
    let deliveries = deliveries();

    let (_one_dir, one) = database(postgres);
    let mut conn = one.get().expect("conn");
    let one_by_one: Vec<IngestOutcome> = deliveries
        .iter()
        .map(|(key, events)| ingest(&mut conn, delivery(*key), events, &env).expect("stored"))
        .collect();
    let expected = snapshot(&mut conn);
    let expected_answers = answers(&mut conn, &one_by_one);

    let (_batch_dir, batch) = database(postgres);
    let mut conn = batch.get().expect("conn");
    let all: Vec<(Delivery<'_>, &[FailureEvent])> = deliveries
        .iter()
        .map(|(key, events)| (delivery(*key), events.as_slice()))
        .collect();
    // The first alone (its groups are then open when the rest arrive), the
    // rest in one batch.
    let mut together = Vec::new();
    for part in [&all[..1], &all[1..]] {
        together.extend(
            db::write_transaction(&mut conn, |conn| store_all(conn, part, &env)).expect("stored"),
        );
    }

    assert_eq!(answers(&mut conn, &together), expected_answers);
    assert_eq!(snapshot(&mut conn), expected);
    // The paths the deliveries were chosen for were taken.
    let text = expected.join("\n");
    assert!(
        text.contains("incident g2 open sev3 events 3 reopened 1"),
        "{text}"
    );
    assert!(text.contains("incident g3 resolved"), "{text}");
    assert!(text.contains("Other alerts"), "{text}");
    assert!(text.contains("54 events in 6 deliveries"), "{text}");
}

/// A draft that no longer shows its incident's severity or resolution (a person
/// changed it, or it was in review when the incident changed) follows the
/// incident again with its next events, even when they change nothing.
#[test]
fn a_draft_that_drifted_from_its_incident_follows_it_again() {
    use Severity::*;
    let parts = Parts::new();
    let env = parts.env();
    let delivery = delivery(None);
    let (_dir, pool) = database(None);
    let mut conn = pool.get().expect("conn");
    let store = |conn: &mut DbConnection, events: &[FailureEvent]| {
        db::write_transaction(conn, |conn| store_all(conn, &[(delivery, events)], &env))
            .expect("stored");
    };
    store(&mut conn, &[event("Cpu1", "g1", false, Sev1, 1)]);
    let severity = |conn: &mut DbConnection| -> (i32, Option<NaiveDateTime>) {
        coe_rows::table
            .select((coe_rows::severity, coe_rows::resolved_at))
            .first(conn)
            .expect("the draft")
    };
    assert_eq!(severity(&mut conn), (1, None));
    diesel::update(coe_rows::table)
        .set(coe_rows::severity.eq(3))
        .execute(&mut conn)
        .expect("drift");
    // An event that changes nothing on the incident: the draft follows anyway.
    store(&mut conn, &[event("Cpu2", "g1", false, Sev3, 2)]);
    assert_eq!(severity(&mut conn), (1, None));
    // Resolved: the draft shows the resolution time.
    store(
        &mut conn,
        &[
            event("Cpu1", "g1", true, Sev1, 5),
            event("Cpu2", "g1", true, Sev3, 5),
        ],
    );
    assert_eq!(severity(&mut conn), (1, Some(at(6))));
}

/// Occurrences and groups stored before their hashes were bytes (migration
/// `binary_hashes`) are recognised after it: the migration converts each hash to
/// the bytes this version computes, and back to the hexadecimal text the versions
/// before it computed.
#[test]
fn hashes_survive_the_migration_to_bytes_and_back() {
    hashes_survive_the_migration(None);
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        hashes_survive_the_migration(Some(&url));
    }
}

fn hashes_survive_the_migration(postgres: Option<&str>) {
    use diesel_migrations::MigrationHarness;
    use Severity::*;
    let parts = Parts::new();
    let env = parts.env();
    let delivery = delivery(None);
    let (_dir, pool) = database(postgres);
    let mut conn = pool.get().expect("conn");
    let first = event("Cpu1", "g1", false, Sev3, 1);
    let stored = ingest(&mut conn, delivery, std::slice::from_ref(&first), &env).expect("stored");

    // Back to the migration before: the hashes are the hexadecimal text the
    // versions before it compute. (The migrations after it are reverted first.)
    let mut revert = || {
        match &mut *conn {
            DbConnection::Sqlite(c) => c
                .revert_last_migration(db::SQLITE_MIGRATIONS)
                .map(|v| v.to_string()),
            DbConnection::Pg(c) => c
                .revert_last_migration(db::POSTGRES_MIGRATIONS)
                .map(|v| v.to_string()),
        }
        .expect("revert")
    };
    while revert() != "20261203000016" {}
    #[derive(QueryableByName)]
    struct Hashes {
        #[diesel(sql_type = diesel::sql_types::Text)]
        group_hash: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        occurrence_hash: String,
    }
    let text: Hashes = diesel::sql_query(
        "SELECT i.group_hash, e.occurrence_hash FROM failure_events e \
         JOIN incidents i ON i.id = e.incident_id",
    )
    .get_result(&mut conn)
    .expect("the hashes as text");
    assert_eq!(text.group_hash, hex::encode(group_hash("g1")));
    assert_eq!(text.occurrence_hash, hex::encode(occurrence_hash(&first)));
    assert_eq!(text.group_hash.len(), 64);

    // Forward again: the same occurrence is a duplicate, a new alert of the group
    // joins its open incident.
    db::migrate(&mut conn).expect("migrate again");
    let again = ingest(
        &mut conn,
        delivery,
        &[first.clone(), event("Cpu2", "g1", false, Sev3, 2)],
        &env,
    )
    .expect("stored");
    assert_eq!(again.events[0].id, stored.events[0].id);
    assert!(again.events[0].duplicate);
    assert!(!again.events[1].duplicate);
    assert_eq!(again.events[1].incident_id, stored.events[0].incident_id);
    let open: i64 = incidents::table
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(open, 1);
    // On SQLite, text in the columns (an older binary still running) is refused.
    if postgres.is_none() {
        for statement in [
            "UPDATE incidents SET group_hash = lower(hex(group_hash))",
            "UPDATE failure_events SET occurrence_hash = lower(hex(occurrence_hash))",
        ] {
            let refused = diesel::sql_query(statement).execute(&mut conn);
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.to_string().contains("CHECK")),
                "{statement}: {refused:?}"
            );
        }
    }
}

/// The group look-up reads a group's open incident with its columns listed by hand
/// (for the join); what it reads is the incident as stored, field for field.
#[test]
fn a_group_look_up_reads_the_open_incident_as_stored() {
    a_group_look_up_reads_the_open_incident(None);
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        a_group_look_up_reads_the_open_incident(Some(&url));
    }
}

fn a_group_look_up_reads_the_open_incident(postgres: Option<&str>) {
    use Severity::*;
    let parts = Parts::new();
    let env = parts.env();
    let (_dir, pool) = database(postgres);
    let mut conn = pool.get().expect("conn");
    let mut first = event("disk", "hosts", false, Sev3, 1);
    first.kind = EventKind::Acknowledged;
    ingest(&mut conn, delivery(None), &[first], &env).expect("stored");
    let stored: IncidentRow = incidents::table
        .select(IncidentRow::as_select())
        .first(&mut conn)
        .expect("the incident");

    let mut pending = filing::Pending::new(db::now());
    let hashes = [group_hash("hosts"), group_hash("unknown")];
    let mut sorted = hashes.to_vec();
    sorted.sort_unstable();
    pending
        .look_up_groups(&mut conn, &sorted)
        .expect("looked up");
    assert_eq!(
        pending
            .known(&hashes[0])
            .map(|row| row.map(|row| format!("{row:?}"))),
        Some(Some(format!("{stored:?}"))),
        "the open incident, field for field"
    );
    assert_eq!(
        pending.known(&hashes[1]).map(|row| row.is_some()),
        Some(false),
        "a group never seen has no incident"
    );
}
