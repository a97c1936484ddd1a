use super::*;

fn action(owner: &str, due: NaiveDate) -> DueAction {
    DueAction {
        id: format!("a-{owner}-{due}"),
        title: "Add a canary".into(),
        owner: owner.into(),
        due,
        coe_id: "c1".into(),
        coe_title: "Outage".into(),
        coe_owner: Some("lead@example.com".into()),
        coe_reviewer: Some("rev@example.com".into()),
    }
}

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

#[test]
fn a_digest_renders_days_overdue_and_days_until_due() {
    let today = day("2026-11-29");
    let actions = vec![
        action("ana@example.com", day("2026-11-20")),
        action("ana@example.com", day("2026-12-01")),
    ];
    let links = Links::new("https://coe.example.com");
    let mut directory = HashMap::new();
    directory.insert(
        "ana@example.com".to_owned(),
        Person {
            name: Some("Ana".into()),
            manager: Some("boss@example.com".into()),
        },
    );
    let lines = Lines {
        actions: &actions,
        today,
        directory: &directory,
        links: &links,
    };
    let digest = Decision {
        kind: Kind::OverdueDigest,
        key: "k".into(),
        recipient: "ana@example.com".into(),
        payload: Payload::Digest {
            overdue: vec![0],
            due_soon: vec![1],
        },
    };
    let data = lines.data(&digest);
    assert_eq!(data["overdue"][0]["days_overdue"], 9);
    assert_eq!(data["due_soon"][0]["days_until_due"], 2);
    let escalation = Decision {
        kind: Kind::Escalation,
        key: "k".into(),
        recipient: "boss@example.com".into(),
        payload: Payload::Escalation {
            threshold_days: 7,
            reports: vec![0],
            unmanaged: vec![],
            new: BTreeSet::from([0]),
        },
    };
    let data = lines.data(&escalation);
    assert_eq!(data["total"], 1);
    assert_eq!(data["reports"][0]["owner_name"], "Ana");
    assert_eq!(data["reports"][0]["newly_escalated"], true);
    assert_eq!(data["newly_escalated"], 1);
}
