//! The first-run checklist admins see on My work until coe is set up
//! (`services::figures::setup`), each step with its state in words and where to do
//! it.

use serde_json::{json, Value};

use crate::services::figures::setup::{Setup, SignIn};

/// One step: what it is, whether it is done ("ok"), to do ("todo") or for those who
/// want it ("optional"), what stands now, and the page where it is done.
fn step(what: &str, mark: &str, now: String, link: &str, go: &str) -> Value {
    json!({"what": what, "mark": mark, "now": now, "link": link, "go": go, "sources": []})
}

fn plural(n: i64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// A step an organisation may do without: `none` while it has none, else how many
/// (`some`: the words before the count, and the count's noun, one and many).
fn optional(
    what: &str,
    count: usize,
    none: &str,
    (some, one, many): (&str, &str, &str),
    (link, go): (&str, &str),
) -> Value {
    match i64::try_from(count).unwrap_or(i64::MAX) {
        0 => step(what, "optional", none.to_owned(), link, go),
        n => step(
            what,
            "ok",
            format!("{some} {}.", plural(n, one, many)),
            link,
            go,
        ),
    }
}

/// The checklist's steps, in the order an admin sets coe up.
pub(super) fn steps(s: &Setup) -> Vec<Value> {
    let sign_in = match &s.sign_in {
        SignIn::SingleSignOn(issuer) => step(
            "Sign-in",
            "ok",
            format!("People sign in through your identity provider ({issuer})."),
            "/admin/sessions",
            "Who is signed in",
        ),
        SignIn::Proxy => step(
            "Sign-in",
            "ok",
            "People sign in through the proxy in front of coe.".into(),
            "/admin/sessions",
            "Who is signed in",
        ),
        SignIn::EmailLinks => step(
            "Sign-in",
            "ok",
            "People sign in with a link coe emails them.".into(),
            "/admin/outbox",
            "The emails coe sends",
        ),
        SignIn::NoMailServer => step(
            "Sign-in",
            "todo",
            "No mail server is set up: sign-in links and reminders are written to files on \
             the server, not sent. Set up single sign-on or a mail server in the settings file."
                .into(),
            "/admin/outbox",
            "The emails coe sends",
        ),
    };
    let people = match s.people {
        0 | 1 => step(
            "People",
            "todo",
            "Nobody else is in the directory yet: add people one by one or from a \
             spreadsheet, or let your identity provider keep the list (SCIM)."
                .into(),
            "/admin/people",
            "Add people",
        ),
        n => step(
            "People",
            "ok",
            match s.provisioned {
                0 => format!("{} in the directory.", plural(n, "person", "people")),
                p => format!(
                    "{} in the directory, {p} kept by your identity provider.",
                    plural(n, "person", "people")
                ),
            },
            "/admin/people",
            "The directory",
        ),
    };
    let mut alerts = match s.sources.is_empty() {
        true => step(
            "Alerts",
            "todo",
            "No alert has arrived yet: make a token for sending alerts and point \
             Alertmanager, PagerDuty, Grafana, Datadog or Opsgenie at coe."
                .into(),
            "/admin/tokens",
            "Make a token",
        ),
        false => step(
            "Alerts",
            "ok",
            "Alerts arrive from:".into(),
            "/incidents",
            "The incidents",
        ),
    };
    alerts["sources"] = json!(s.sources);
    let chat = optional(
        "Chat",
        s.chat_channels,
        "No chat channel hears coe: its notices go by email only.",
        ("coe's notices go to", "chat channel", "chat channels"),
        ("/admin/chat", "Chat channels"),
    );
    let tracker = optional(
        "A tracker",
        s.trackers,
        "No issue tracker is connected: corrective actions are planned in coe alone, not \
         beside the rest of their owners' work.",
        ("Corrective actions' tickets go to", "tracker", "trackers"),
        ("/admin/trackers", "Trackers"),
    );
    let services =
        match (s.services_mapped, s.services_unowned) {
            (mapped, 0) if mapped > 0 => step(
                "Services' owners",
                "ok",
                format!(
                    "{} in the service map; every service the incidents name has an owner.",
                    plural(mapped, "service", "services")
                ),
                "/admin/ownership",
                "Ownership",
            ),
            (_, 0) => step(
                "Services' owners",
                "todo",
                "No service has an owner yet: a new COE goes to the default owner or to the \
             admins. The services list themselves as alerts name them."
                    .into(),
                "/admin/ownership",
                "Give services owners",
            ),
            (_, unowned) => {
                step(
                    "Services' owners",
                    "todo",
                    format!(
                "{} the incidents name {} no owner yet: their COEs go to the default owner \
                 or to the admins.",
                plural(i64::try_from(unowned).unwrap_or(i64::MAX), "service", "services"),
                if unowned == 1 { "has" } else { "have" }
            ),
                    "/admin/ownership",
                    "Give services owners",
                )
            }
        };
    let template = match s.templates {
        0 => step(
            "A template",
            "todo",
            "COEs open with coe's built-in template: make your organisation's own, or save \
             the built-in one as yours."
                .into(),
            "/admin/templates",
            "Templates",
        ),
        n => step(
            "A template",
            "ok",
            format!("{} of your own.", plural(n, "template", "templates")),
            "/admin/templates",
            "Templates",
        ),
    };
    vec![sign_in, people, alerts, chat, tracker, services, template]
}
