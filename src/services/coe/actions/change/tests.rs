use super::*;
use crate::config::Settings;
use crate::db::testing::database;
use crate::domain::clock::Clock;
use crate::domain::EmailAddress;
use crate::email::EmailTemplates;
use crate::services::coe::coes::{self as draft, NewCoe};
use crate::services::directory::people;

/// An owner who adds an action is asked again, in the write's transaction, whether
/// they may: the COE handed to someone else between the check and the write takes
/// no action from them.
#[test]
fn adding_an_action_asks_again_in_the_writes_transaction() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    let settings = Settings::default();
    let emails = EmailTemplates::load(None, &settings.public_url).expect("templates");
    let template = crate::domain::template::Template::default_template();
    let env = Env {
        settings: &settings,
        template: &template,
        emails: &emails,
        connections: &crate::services::connections::Connections::of_file(&settings),
    };
    let now = db::now();
    for who in ["ana@example.com", "bo@example.com"] {
        people::ensure(&mut conn, who, now).expect("in the directory");
    }
    let coe_id = draft::create(
        &mut conn,
        NewCoe {
            title: Some("Checkout failed".into()),
            owner: Some(EmailAddress::parse("ana@example.com").expect("address")),
            ..Default::default()
        },
        "ana@example.com",
        &env,
    )
    .expect("a draft");
    let ana = Acting::person("ana@example.com", false);
    let input = NewAction {
        title: Some("Alarm on checkout errors".into()),
        owner: Some("ana@example.com".into()),
        due_date: Some((settings.clock().today() + chrono::Duration::days(30)).to_string()),
        priority: Some("high".into()),
        kind: Some("detect".into()),
        ..Default::default()
    };
    let clock: Clock = settings.clock();
    let prepared = prepare(&mut conn, &coe_id, &input, &ana.editor(), clock, env)
        .expect("ana owns the COE: checked");
    diesel::update(coes::table.find(&coe_id))
        .set(coes::owner_email.eq("bo@example.com"))
        .execute(&mut conn)
        .expect("handed to bo meanwhile");
    let refused = add(&mut conn, prepared, env);
    assert!(
        matches!(refused, Err(ActionError::Forbidden(_))),
        "{refused:?}"
    );
    let count: i64 = corrective_actions::table
        .filter(corrective_actions::coe_id.eq(&coe_id))
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(count, 0, "nothing was written");
}
