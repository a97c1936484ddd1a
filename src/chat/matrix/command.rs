//! What a person wrote to coe in a Matrix room: a command (`!coe report …`, with a
//! field on each further line or after a `|`, such as `service: payments`), a reply
//! to one of coe's messages (`done …`, `due 2027-01-15 …`, `verify`, `send back …`),
//! or a reaction to one (✅ verifies).

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::Value;

/// What a command asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Help,
    Mine,
    Report,
    FollowUp,
    Link,
}

impl Verb {
    /// As `/metrics` counts it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Help => "help",
            Verb::Mine => "mine",
            Verb::Report => "report",
            Verb::FollowUp => "follow_up",
            Verb::Link => "link",
        }
    }
}

/// A move a reply or a reaction makes on the action coe's message is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Marked done: what was done and the evidence's address, if given.
    Done {
        note: Option<String>,
        evidence: Option<String>,
    },
    /// A new due date (as written) and why.
    MoveDue {
        date: String,
        reason: Option<String>,
    },
    Verify,
    SendBack {
        reason: Option<String>,
    },
    /// Words coe does not know.
    Unknown,
}

impl Answer {
    /// As `/metrics` counts it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Answer::Done { .. } => "done",
            Answer::MoveDue { .. } => "move_due",
            Answer::Verify => "verify",
            Answer::SendBack { .. } => "send_back",
            Answer::Unknown => "help",
        }
    }
}

/// One message, as coe reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Command {
        verb: Verb,
        /// The rest of the command's first line (a report's "what is broken", a
        /// follow-up's title, the COE to link).
        first: String,
        /// Each `name: value`, by name in lower case with `_` for spaces.
        fields: BTreeMap<String, String>,
    },
    /// A reply to coe's message `to`.
    Reply { to: String, answer: Answer },
    /// A reaction to message `to`.
    Reaction { to: String, key: String },
    /// Anything else: not to coe.
    Other,
}

/// Reactions (and replies of nothing else) that verify; not 👍, which people give a
/// message to say they read it.
pub const VERIFYING: [&str; 3] = ["✅", "✔️", "✔"];

/// `content` of an event of type `kind`, as coe reads it.
pub fn read(kind: &str, content: &Value) -> Written {
    let relates = &content["m.relates_to"];
    if kind == "m.reaction" {
        return match (relates["rel_type"].as_str(), relates["event_id"].as_str()) {
            (Some("m.annotation"), Some(to)) => Written::Reaction {
                to: to.to_owned(),
                key: relates["key"].as_str().unwrap_or_default().to_owned(),
            },
            _ => Written::Other,
        };
    }
    // An edit is not a new command.
    if kind != "m.room.message"
        || content["msgtype"] != "m.text"
        || relates["rel_type"] == "m.replace"
    {
        return Written::Other;
    }
    let body = without_quote(content["body"].as_str().unwrap_or_default());
    let body = body.trim();
    if let Some(rest) = command_text(body) {
        return command(rest);
    }
    // In a thread, a client names the thread's last message as replied to only for
    // clients that know no threads: that is no reply to it.
    let falling_back = relates["rel_type"] == "m.thread" && relates["is_falling_back"] == true;
    match relates["m.in_reply_to"]["event_id"]
        .as_str()
        .filter(|_| !falling_back)
    {
        Some(to) => Written::Reply {
            to: to.to_owned(),
            answer: answer(body),
        },
        None => Written::Other,
    }
}

/// The text after `!coe`, when it is a command.
fn command_text(body: &str) -> Option<&str> {
    let head = body.get(..4)?;
    if !head.eq_ignore_ascii_case("!coe") {
        return None;
    }
    let rest = &body[4..];
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// A reply's quote of the message it answers (`> …` lines and a blank one), which
/// older clients put first.
fn without_quote(body: &str) -> String {
    let mut lines = body.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with('>')) {
        while lines.peek().is_some_and(|l| l.starts_with('>')) {
            lines.next();
        }
        if lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
    }
    lines.collect::<Vec<_>>().join("\n")
}

fn command(rest: &str) -> Written {
    let mut parts = rest
        .split(['\n', '|'])
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let head = parts.next().unwrap_or_default();
    let (word, first) = head
        .split_once(char::is_whitespace)
        .map_or((head, ""), |(w, r)| (w, r.trim()));
    let verb = match word.to_ascii_lowercase().as_str() {
        "" | "mine" => Verb::Mine,
        "report" => Verb::Report,
        "follow-up" | "followup" | "follow_up" => Verb::FollowUp,
        "link" => Verb::Link,
        _ => Verb::Help,
    };
    let mut first = first.to_owned();
    let mut fields = BTreeMap::new();
    for part in parts {
        match part.split_once(':') {
            Some((name, value)) if is_name(name) => {
                let name = name.trim().to_ascii_lowercase().replace([' ', '-'], "_");
                fields.insert(name, value.trim().to_owned());
            }
            _ => {
                if !first.is_empty() {
                    first.push(' ');
                }
                first.push_str(part);
            }
        }
    }
    Written::Command {
        verb,
        first,
        fields,
    }
}

/// A field's name: a few words of letters (`done when`), not a sentence with a colon.
fn is_name(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty()
        && name.len() <= 24
        && name
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == ' ' || c == '-' || c == '_')
}

/// The first web address in `text`, and the text without it.
fn address_in(text: &str) -> (Option<String>, Option<String>) {
    let mut address = None;
    let mut words = Vec::new();
    for word in text.split_whitespace() {
        let bare = word.trim_matches(['<', '>', '(', ')', ',']);
        if address.is_none() && (bare.starts_with("https://") || bare.starts_with("http://")) {
            address = Some(bare.to_owned());
        } else {
            words.push(word);
        }
    }
    let rest = words.join(" ");
    let rest = rest.trim_matches([' ', ':', '-', '—']).to_owned();
    (address, (!rest.is_empty()).then_some(rest))
}

/// Whether `text` starts with `word` (ASCII, any case); the rest after it.
fn after<'t>(text: &'t str, word: &str) -> Option<&'t str> {
    let head = text.get(..word.len())?;
    head.eq_ignore_ascii_case(word).then(|| {
        text[word.len()..]
            .trim_start_matches([' ', ':', '-'])
            .trim()
    })
}

fn answer(body: &str) -> Answer {
    let text = body.trim();
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    if let Some(rest) = after(text, "send back") {
        return Answer::SendBack { reason: opt(rest) };
    }
    if VERIFYING.contains(&text)
        || after(text, "verify").is_some()
        || after(text, "verified").is_some()
    {
        return Answer::Verify;
    }
    if let Some(rest) = after(text, "done") {
        let (evidence, note) = address_in(rest);
        return Answer::Done { note, evidence };
    }
    for word in ["move due", "move", "due"] {
        if let Some(rest) = after(text, word) {
            let (date, reason) = rest
                .split_once(char::is_whitespace)
                .map_or((rest, ""), |(d, r)| (d, r));
            let reason = reason.trim_start_matches([' ', ':', '-', '—']).trim();
            return Answer::MoveDue {
                date: date.to_owned(),
                reason: opt(reason),
            };
        }
    }
    Answer::Unknown
}

/// When a report's `started:` says, in UTC: `2026-12-07 14:05`, `2026-12-07T14:05:00Z`
/// or `14:05` (today).
pub fn started(text: &str, today: NaiveDate) -> Option<NaiveDateTime> {
    let text = text.trim().trim_end_matches("UTC").trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.naive_utc());
    }
    for format in ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Some(t);
        }
    }
    NaiveTime::parse_from_str(text, "%H:%M")
        .ok()
        .map(|t| today.and_time(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(body: &str) -> Written {
        read(
            "m.room.message",
            &json!({"msgtype": "m.text", "body": body}),
        )
    }

    #[test]
    fn a_command_has_its_verb_first_line_and_fields() {
        let Written::Command {
            verb,
            first,
            fields,
        } = text("!coe report Card payments fail\nservice: payments\nSeverity: sev2\nCustomers saw: errors at checkout")
        else {
            panic!("a command");
        };
        assert_eq!(verb, Verb::Report);
        assert_eq!(first, "Card payments fail");
        assert_eq!(fields["service"], "payments");
        assert_eq!(fields["severity"], "sev2");
        assert_eq!(fields["customers_saw"], "errors at checkout");
        let Written::Command { verb, fields, .. } = text(
            "!COE follow-up Add a canary | owner: @dev:hs | due: 2027-01-10 | done when: it pages",
        ) else {
            panic!("a command");
        };
        assert_eq!(verb, Verb::FollowUp);
        assert_eq!(fields["done_when"], "it pages");
        assert_eq!(fields["owner"], "@dev:hs");
        assert!(matches!(
            text("!coe"),
            Written::Command {
                verb: Verb::Mine,
                ..
            }
        ));
        assert!(matches!(
            text("!coe what"),
            Written::Command {
                verb: Verb::Help,
                ..
            }
        ));
        assert_eq!(text("!coefficient"), Written::Other);
        assert_eq!(text("we should coe this"), Written::Other);
    }

    #[test]
    fn a_reply_and_a_reaction_are_answers_to_coe_s_message() {
        let reply = |body: &str| {
            read(
                "m.room.message",
                &json!({"msgtype": "m.text", "body": body,
                        "m.relates_to": {"m.in_reply_to": {"event_id": "$coe"}}}),
            )
        };
        assert_eq!(
            reply("> <@coe:hs> Add a canary\n\ndone: added it https://git.example.com/pr/1"),
            Written::Reply {
                to: "$coe".into(),
                answer: Answer::Done {
                    note: Some("added it".into()),
                    evidence: Some("https://git.example.com/pr/1".into())
                }
            }
        );
        assert_eq!(
            reply("due 2027-02-01 waiting for the vendor"),
            Written::Reply {
                to: "$coe".into(),
                answer: Answer::MoveDue {
                    date: "2027-02-01".into(),
                    reason: Some("waiting for the vendor".into())
                }
            }
        );
        assert!(matches!(
            reply("Verified"),
            Written::Reply {
                answer: Answer::Verify,
                ..
            }
        ));
        assert!(matches!(
            reply("send back: no test"),
            Written::Reply { answer: Answer::SendBack { reason: Some(r) }, .. } if r == "no test"
        ));
        assert!(matches!(
            reply("thanks!"),
            Written::Reply {
                answer: Answer::Unknown,
                ..
            }
        ));
        assert_eq!(
            read(
                "m.reaction",
                &json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": "$coe", "key": "✅"}})
            ),
            Written::Reaction {
                to: "$coe".into(),
                key: "✅".into()
            }
        );
        // An edit is not said again.
        assert_eq!(
            read(
                "m.room.message",
                &json!({"msgtype": "m.text", "body": "!coe mine",
                 "m.relates_to": {"rel_type": "m.replace", "event_id": "$x"}})
            ),
            Written::Other
        );
    }

    #[test]
    fn a_start_is_read_in_utc() {
        let today = NaiveDate::from_ymd_opt(2026, 12, 7).unwrap();
        let at = |h, m| today.and_hms_opt(h, m, 0).unwrap();
        assert_eq!(started("14:05", today), Some(at(14, 5)));
        assert_eq!(started("2026-12-07 14:05 UTC", today), Some(at(14, 5)));
        assert_eq!(started("2026-12-07T15:05:00+01:00", today), Some(at(14, 5)));
        assert_eq!(started("yesterday", today), None);
    }
}
