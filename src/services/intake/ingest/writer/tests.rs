use super::*;
use crate::domain::Severity;
use crate::services::intake::ingest::tests::{database, event, Parts};
use diesel::prelude::*;

/// A batch in which one delivery fails: written again one by one, only that one
/// fails, the others are committed and answered as stored (SQLite; PostgreSQL
/// with `TEST_POSTGRES_URL`).
#[test]
fn a_delivery_that_fails_in_a_batch_fails_alone() {
    a_delivery_fails_alone(None);
    if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
        a_delivery_fails_alone(Some(&url));
    }
}

fn a_delivery_fails_alone(postgres: Option<&str>) {
    let (_dir, pool) = database(postgres);
    let poison = match postgres {
        None => vec![
            "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
             WHEN NEW.dedup_key = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END",
        ],
        Some(_) => vec![
            "CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN \
             IF NEW.dedup_key = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER poison BEFORE INSERT ON failure_events \
             FOR EACH ROW EXECUTE FUNCTION poison()",
        ],
    };
    let mut conn = pool.get().expect("conn");
    for statement in poison {
        diesel::sql_query(statement)
            .execute(&mut conn)
            .expect("poison");
    }
    let shared = Shared::for_tests(pool.clone());
    let batch: Vec<Job> = ["good-1", "poison", "good-2"]
        .into_iter()
        .enumerate()
        .map(|(n, alert)| {
            let (reply, _) = oneshot::channel();
            Job {
                source: "test".into(),
                key: None,
                content_type: Some("application/json".into()),
                body: b"[]".to_vec(),
                events: vec![event(alert, &format!("g{n}"), false, Severity::Sev3, 1)],
                reply,
                span: tracing::Span::none(),
            }
        })
        .collect();
    let answers = write_batch(&batch, &shared);
    assert!(answers[0].as_ref().is_ok_and(|o| o.delivery_id.is_some()));
    assert!(
        matches!(&answers[1], Err(WriteError::Failed(e)) if e.contains("poisoned")),
        "{:?}",
        answers[1]
    );
    assert!(answers[2].as_ref().is_ok_and(|o| o.delivery_id.is_some()));
    // The two good deliveries are committed, nothing of the poisoned one (its
    // incident included).
    use crate::db::schema::{failure_events, incidents, webhook_deliveries};
    let events: i64 = failure_events::table
        .count()
        .get_result(&mut conn)
        .expect("count");
    let opened: i64 = incidents::table
        .count()
        .get_result(&mut conn)
        .expect("count");
    let deliveries: i64 = webhook_deliveries::table
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!((events, opened, deliveries), (2, 2, 2));
}

/// `stop` lets the writers write what is queued and joins them; a delivery after
/// it is refused as the service stopping, never left waiting.
#[test]
fn stop_joins_the_writers_and_later_deliveries_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let database = crate::config::DatabaseSettings {
        url: format!("sqlite://{}", dir.path().join("w.db").display()),
        ..Default::default()
    };
    let pool = db::connect(&database).expect("connect");
    db::migrate(&mut pool.get().expect("conn")).expect("migrate");
    let parts = Parts::new();
    let mut settings = parts.settings;
    settings.database = database.clone();
    let writer = GroupCommit::start(
        &database,
        pool.clone(),
        crate::services::Runtime {
            settings: Arc::new(settings),
            template: Arc::new(parts.template),
            emails: Arc::new(parts.emails),
            connections: parts.connections,
        },
        Default::default(),
    )
    .expect("start");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let delivery = Delivery {
        source: "test",
        key: None,
        content_type: Some("application/json"),
        body: b"[]",
    };
    let event = |n: usize| {
        vec![event(
            &format!("a{n}"),
            &format!("g{n}"),
            false,
            Severity::Sev3,
            1,
        )]
    };
    for n in 0..3 {
        let stored = runtime.block_on(writer.write(delivery, event(n)));
        assert!(stored.is_ok_and(|o| o.delivery_id.is_some()));
    }
    writer.stop();
    assert!(writer.threads.lock().expect("threads").is_empty(), "joined");
    let refused = runtime.block_on(writer.write(delivery, event(9)));
    assert!(
        matches!(&refused, Err(WriteError::Busy(m)) if m.contains("stopping")),
        "{refused:?}"
    );
    assert_eq!(writer.shared.waiting.load(Ordering::SeqCst), 0);
    assert_eq!(writer.shared.waiting_bytes.load(Ordering::SeqCst), 0);
    writer.stop();
}

/// What may wait is bounded in deliveries and in bytes of their bodies; one
/// delivery is taken when nothing waits, however large.
#[test]
fn waiting_is_bounded_in_deliveries_and_in_bytes() {
    let mib = 1 << 20;
    assert_eq!(too_much_waiting(0, 0, 10 * mib), None);
    assert_eq!(
        too_much_waiting(0, 0, QUEUE_BYTES + 1),
        None,
        "alone, any size"
    );
    assert_eq!(too_much_waiting(5, 50 * mib, 10 * mib), None);
    let refused = too_much_waiting(5, 60 * mib, 10 * mib).expect("past the bytes");
    assert!(refused.contains("60 MiB"), "{refused}");
    let refused = too_much_waiting(QUEUE, 0, 1).expect("past the count");
    assert!(refused.contains("8192 deliveries"), "{refused}");
}
