use super::*;
use crate::config::Settings;
use crate::db::testing::database;
use crate::email::EmailTemplates;

#[test]
fn a_link_signs_in_once_and_the_day_old_leftovers_are_purged() {
    let (_dir, pool) = database();
    let mut conn = pool.get().expect("conn");
    let settings = Settings::default();
    let templates = EmailTemplates::load(None, &settings.public_url).expect("templates");
    let template = crate::domain::template::Template::default_template();
    let env = Env {
        settings: &settings,
        template: &template,
        emails: &templates,
        connections: &crate::services::connections::Connections::of_file(&settings),
    };
    let ana = EmailAddress::parse("ana@example.com").expect("address");
    let link = request_link(&mut conn, &ana, "192.0.2.1", Some("/coes/1"), env)
        .expect("requested")
        .expect("a development install lets anyone sign in");
    let token = link.split_once("token=").expect("token").1;
    let (secret, next) = redeem(&mut conn, token, "192.0.2.1").expect("signed in");
    assert_eq!(next.as_deref(), Some("/coes/1"));
    let person = session(&mut conn, secret.expose(), env)
        .expect("query")
        .expect("alive");
    assert_eq!(person.email, "ana@example.com");
    assert!(matches!(
        redeem(&mut conn, token, "192.0.2.1"),
        Err(AuthError::LinkUsedOrExpired)
    ));
    end(&mut conn, &person.session_id, "sign-out").expect("ended");
    assert!(session(&mut conn, secret.expose(), env)
        .expect("query")
        .is_none());

    assert_eq!(
        purge(&mut conn, env, db::now()).expect("purge"),
        0,
        "nothing a day old yet"
    );
    let tomorrow = db::now() + Duration::days(2);
    assert_eq!(
        purge(&mut conn, env, tomorrow).expect("purge"),
        3,
        "the link, the request and the ended session"
    );
}
