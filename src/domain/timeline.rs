//! How events become timeline entries. Events of one alert and kind share one entry
//! per COE, counted ("HighCPU fired 412 times between 10:02 and 10:40 UTC on 37 hosts"), so an
//! alert storm leaves a COE people can read; past `MAX_ALERT_ENTRIES` distinct alerts,
//! the rest share one entry per kind ("Other alerts …").

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDateTime;
use sha2::{Digest, Sha256};

/// Distinct alert entries one COE's timeline holds before further alerts are counted
/// together under "Other alerts".
pub const MAX_ALERT_ENTRIES: i64 = 40;

/// Labels that name the host an alert fired on, in order of preference.
const HOST_LABELS: [&str; 6] = ["instance", "host", "hostname", "node", "pod", "server"];

/// The longest host name kept; longer ones are cut (at a character boundary).
const MAX_HOST_BYTES: usize = 200;

/// What an alert is called across hosts: its `alertname` label, else its title.
pub fn alert_name<'a>(title: &'a str, labels: &'a BTreeMap<String, String>) -> &'a str {
    labels
        .get("alertname")
        .map(String::as_str)
        .filter(|n| !n.trim().is_empty())
        .unwrap_or(title)
}

/// The key of the entry that counts events of `kind` of the alert called `name`.
pub fn alert_key(kind: &str, name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}:{hex}")
}

/// The key of the entry that counts events of `kind` of the alerts past the limit.
pub fn other_alerts_key(kind: &str) -> String {
    format!("{kind}:*")
}

/// The name the "Other alerts" entry goes by.
pub const OTHER_ALERTS: &str = "Other alerts";

/// The host an event came from: the first host-like label, else the alert itself
/// (its dedup key), so that each distinct alert counts once.
pub fn host(labels: &BTreeMap<String, String>, dedup_key: &str) -> String {
    let found = HOST_LABELS
        .iter()
        .find_map(|l| labels.get(*l).filter(|v| !v.trim().is_empty()))
        .map(String::as_str)
        .unwrap_or(dedup_key);
    let mut end = found.len().min(MAX_HOST_BYTES);
    while !found.is_char_boundary(end) {
        end -= 1;
    }
    found[..end].to_owned()
}

/// An entry's counts, from which its text is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// fired, acknowledged, resolved or updated.
    pub kind: String,
    /// What the alert is called (`alert_name`), or `OTHER_ALERTS`.
    pub name: String,
    /// The title of the first event, shown while there is only one.
    pub first_title: String,
    pub occurrences: i64,
    pub hosts: i64,
    pub first: NaiveDateTime,
    pub last: NaiveDateTime,
}

fn verb(kind: &str) -> &'static str {
    match kind {
        "fired" => "fired",
        "acknowledged" => "acknowledged",
        "resolved" => "resolved",
        _ => "updated",
    }
}

/// The kind of event an entry's text (`Tally::text`) tells of: its verb.
/// One occurrence reads "Fired: <title>", several "<name> fired 3 times …".
pub fn kind_of_text(text: &str) -> &'static str {
    const KINDS: [&str; 4] = ["fired", "acknowledged", "resolved", "updated"];
    let once = KINDS.into_iter().find(|verb| {
        let mut capital = (*verb).to_owned();
        capital[..1].make_ascii_uppercase();
        text.starts_with(&format!("{capital}: "))
    });
    let counted = || {
        KINDS.into_iter().find(|verb| {
            let pattern = format!(" {verb} ");
            text.match_indices(&pattern)
                .any(|(at, _)| text[at + pattern.len()..].starts_with(|c: char| c.is_ascii_digit()))
        })
    };
    once.or_else(counted).unwrap_or("updated")
}

fn plural(n: i64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The span between two times as a person reads it: `between 2026-11-29 10:02 and
/// 10:40 UTC`, with the second date only when it differs.
fn span(first: NaiveDateTime, last: NaiveDateTime) -> String {
    let start = first.format("%Y-%m-%d %H:%M");
    if first.date() == last.date() {
        format!("between {start} and {} UTC", last.format("%H:%M"))
    } else {
        format!("between {start} and {} UTC", last.format("%Y-%m-%d %H:%M"))
    }
}

impl Tally {
    /// The entry's text: the event itself while there is one, then the count.
    pub fn text(&self) -> String {
        let verb = verb(&self.kind);
        if self.occurrences <= 1 {
            let mut capital = verb.to_owned();
            capital[..1].make_ascii_uppercase();
            return format!("{capital}: {}", self.first_title);
        }
        format!(
            "{} {verb} {} {} on {}",
            self.name,
            plural(self.occurrences, "time", "times"),
            span(self.first, self.last),
            plural(self.hosts, "host", "hosts"),
        )
    }
}

/// One event as the timeline counts it.
#[derive(Debug, Clone)]
pub struct EventFacts {
    pub event_id: String,
    pub kind: String,
    pub title: String,
    /// `alert_name` of the event.
    pub name: String,
    /// `host` of the event.
    pub host: String,
    pub at: NaiveDateTime,
}

/// A collapsed entry with the hosts it counted and the first event it came from.
#[derive(Debug, Clone)]
pub struct Collapsed {
    pub key: String,
    pub first_event_id: String,
    pub tally: Tally,
    pub hosts: BTreeSet<String>,
}

/// Collapses a COE's events (oldest first) into entries, at most `MAX_ALERT_ENTRIES`
/// distinct alerts plus one "Other alerts" entry per kind.
pub fn collapse(events: &[EventFacts]) -> Vec<Collapsed> {
    let mut entries: Vec<Collapsed> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut distinct = 0_i64;
    for event in events {
        let mut key = alert_key(&event.kind, &event.name);
        let mut name = event.name.clone();
        if !index.contains_key(&key) {
            if distinct >= MAX_ALERT_ENTRIES {
                key = other_alerts_key(&event.kind);
                name = OTHER_ALERTS.to_owned();
            } else {
                distinct += 1;
            }
        }
        match index.get(&key) {
            Some(&i) => {
                let entry = &mut entries[i];
                entry.hosts.insert(event.host.clone());
                let t = &mut entry.tally;
                t.occurrences += 1;
                t.hosts = i64::try_from(entry.hosts.len()).unwrap_or(i64::MAX);
                t.first = t.first.min(event.at);
                t.last = t.last.max(event.at);
            }
            None => {
                index.insert(key.clone(), entries.len());
                entries.push(Collapsed {
                    key,
                    first_event_id: event.event_id.clone(),
                    tally: Tally {
                        kind: event.kind.clone(),
                        name,
                        first_title: event.title.clone(),
                        occurrences: 1,
                        hosts: 1,
                        first: event.at,
                        last: event.at,
                    },
                    hosts: BTreeSet::from([event.host.clone()]),
                });
            }
        }
    }
    entries
}

/// `url` as a link a page may show: http(s) only (no `javascript:`, no `data:`).
pub fn web_href(url: Option<&str>) -> Option<String> {
    let parsed = url::Url::parse(url?).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn at(h: u32, m: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 11, 29)
            .and_then(|d| d.and_hms_opt(h, m, 0))
            .expect("valid")
    }

    fn event(n: usize, name: &str, host: &str, minute: u32) -> EventFacts {
        EventFacts {
            event_id: format!("e{n}"),
            kind: "fired".into(),
            title: format!("{name} on {host}"),
            name: name.into(),
            host: host.into(),
            at: at(10, minute),
        }
    }

    #[test]
    fn one_event_reads_as_itself() {
        let entries = collapse(&[event(1, "HighCPU", "web-1", 2)]);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].tally.text(), "Fired: HighCPU on web-1");
    }

    #[test]
    fn repeats_of_one_alert_are_counted_with_their_span_and_hosts() {
        let events: Vec<EventFacts> = (0..412)
            .map(|n| {
                event(
                    n,
                    "HighCPU",
                    &format!("web-{}", n % 37),
                    2 + (n % 39) as u32,
                )
            })
            .collect();
        let entries = collapse(&events);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].first_event_id, "e0");
        assert_eq!(
            entries[0].tally.text(),
            "HighCPU fired 412 times between 2026-11-29 10:02 and 10:40 UTC on 37 hosts"
        );
    }

    #[test]
    fn alerts_past_the_limit_share_one_entry_per_kind() {
        let events: Vec<EventFacts> = (0..1000)
            .map(|n| event(n, &format!("Alert{n}"), "db-1", 5))
            .collect();
        let entries = collapse(&events);
        assert_eq!(entries.len(), MAX_ALERT_ENTRIES as usize + 1);
        let other = entries.last().expect("other");
        assert_eq!(other.key, other_alerts_key("fired"));
        assert_eq!(
            other.tally.text(),
            "Other alerts fired 960 times between 2026-11-29 10:05 and 10:05 UTC on 1 host"
        );
    }

    #[test]
    fn spans_across_days_name_both_dates() {
        let t = Tally {
            kind: "resolved".into(),
            name: "Disk".into(),
            first_title: "Disk".into(),
            occurrences: 2,
            hosts: 2,
            first: at(23, 50),
            last: at(23, 50) + chrono::Duration::minutes(20),
        };
        assert_eq!(
            t.text(),
            "Disk resolved 2 times between 2026-11-29 23:50 and 2026-11-30 00:10 UTC on 2 hosts"
        );
    }

    #[test]
    fn hosts_come_from_labels_else_the_alert_and_are_bounded() {
        let mut labels = BTreeMap::new();
        assert_eq!(host(&labels, "fp-1"), "fp-1");
        labels.insert("pod".into(), "api-7".into());
        labels.insert("instance".into(), "10.0.0.1:9100".into());
        assert_eq!(host(&labels, "fp-1"), "10.0.0.1:9100");
        labels.insert("instance".into(), "é".repeat(150));
        assert!(host(&labels, "fp-1").len() <= MAX_HOST_BYTES);
        assert_eq!(
            alert_name("High CPU on web-1", &labels),
            "High CPU on web-1"
        );
        labels.insert("alertname".into(), "HighCPU".into());
        assert_eq!(alert_name("High CPU on web-1", &labels), "HighCPU");
        assert_ne!(alert_key("fired", "a"), alert_key("resolved", "a"));
    }

    #[test]
    fn an_entry_s_text_tells_its_kind() {
        let at = NaiveDateTime::default();
        for kind in ["fired", "acknowledged", "resolved", "updated"] {
            for occurrences in [1, 3] {
                let tally = Tally {
                    kind: kind.into(),
                    name: "CheckoutErrors".into(),
                    first_title: "Checkout 5xx above 2%".into(),
                    occurrences,
                    hosts: 2,
                    first: at,
                    last: at,
                };
                assert_eq!(kind_of_text(&tally.text()), kind, "{}", tally.text());
            }
        }
    }
}
