//! What Slack posts, read: a slash command (a form) and an interaction (a form whose
//! `payload` is JSON: a button pressed, `block_actions`; a modal submitted,
//! `view_submission`). Shapes from api.slack.com/interactivity/slash-commands and
//! api.slack.com/reference/interaction-payloads (kept with the tests' fixtures).

use serde::Deserialize;
use serde_json::Value;

/// A slash command (`/coe mine`), as Slack posts it.
#[derive(Debug, Clone, Deserialize)]
pub struct Command {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub text: String,
    pub user_id: String,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub channel_name: String,
    #[serde(default)]
    pub trigger_id: String,
    #[serde(default)]
    pub response_url: String,
}

impl Command {
    /// Reads the form Slack posted.
    pub fn read(body: &[u8]) -> Result<Command, String> {
        serde_urlencoded::from_bytes(body).map_err(|e| format!("not a slash command: {e}"))
    }

    /// The first word of the text (`report`, `mine`, `follow-up`), in lower case, and
    /// the rest.
    pub fn verb(&self) -> (String, &str) {
        let text = self.text.trim();
        let (verb, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        (verb.to_lowercase(), rest.trim())
    }

    /// Whether it was typed in a direct message (not in a channel).
    pub fn in_direct_message(&self) -> bool {
        self.channel_name == "directmessage" || self.channel_id.starts_with('D')
    }
}

/// A modal submitted.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub user: String,
    /// The modal's own id: a modal is submitted once (a retry has the same).
    pub view_id: String,
    /// Which modal (`report`, `follow_up`, `done`, `move_due`, `send_back`).
    pub callback_id: String,
    /// What coe put in it when it opened it (JSON).
    pub private_metadata: Value,
    /// `view.state.values`: each input block's answer.
    pub values: Value,
}

impl Submitted {
    /// The answer of the input block `block` (its first element): text, a picked
    /// option, a date, a user, or a date and time (Unix seconds, as text).
    pub fn input(&self, block: &str) -> Option<String> {
        let element = self.values.get(block)?.as_object()?.values().next()?;
        let answer = match element["type"].as_str()? {
            "static_select" | "radio_buttons" => element["selected_option"]["value"].as_str(),
            "datepicker" => element["selected_date"].as_str(),
            "users_select" => element["selected_user"].as_str(),
            "datetimepicker" => {
                return element["selected_date_time"]
                    .as_i64()
                    .map(|t| t.to_string());
            }
            _ => element["value"].as_str(),
        }?;
        let answer = answer.trim();
        (!answer.is_empty()).then(|| answer.to_owned())
    }
}

/// What a person did in Slack.
#[derive(Debug, Clone)]
pub enum Interaction {
    /// A button pressed (`block_actions`).
    Button {
        user: String,
        action_id: String,
        value: String,
        /// When it was pressed: with the message, names the press (a retry has the same).
        action_ts: String,
        trigger_id: String,
        /// Where the message it is on may be replaced.
        response_url: Option<String>,
    },
    Submitted(Submitted),
    /// Anything else (a modal closed, a shortcut): answered, nothing done.
    Other(String),
}

impl Interaction {
    /// Reads the form Slack posted (`payload=<JSON>`).
    pub fn read(body: &[u8]) -> Result<Interaction, String> {
        #[derive(Deserialize)]
        struct Form {
            payload: String,
        }
        let form: Form =
            serde_urlencoded::from_bytes(body).map_err(|e| format!("not an interaction: {e}"))?;
        let p: Value = serde_json::from_str(&form.payload)
            .map_err(|e| format!("the payload is not JSON: {e}"))?;
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let user = text(&p["user"]["id"]);
        if user.is_empty() {
            return Err("the payload names no user".to_owned());
        }
        match p["type"].as_str().unwrap_or_default() {
            "block_actions" => {
                let action = &p["actions"][0];
                Ok(Interaction::Button {
                    user,
                    action_id: text(&action["action_id"]),
                    value: text(&action["value"]),
                    action_ts: text(&action["action_ts"]),
                    trigger_id: text(&p["trigger_id"]),
                    response_url: p["response_url"].as_str().map(str::to_owned),
                })
            }
            "view_submission" => {
                let view = &p["view"];
                Ok(Interaction::Submitted(Submitted {
                    user,
                    view_id: text(&view["id"]),
                    callback_id: text(&view["callback_id"]),
                    private_metadata: view["private_metadata"]
                        .as_str()
                        .and_then(|m| serde_json::from_str(m).ok())
                        .unwrap_or(Value::Null),
                    values: view["state"]["values"].clone(),
                }))
            }
            other => Ok(Interaction::Other(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_command_and_its_verb_are_read() {
        let c = Command::read(b"command=%2Fcoe&text=Follow-up++now&user_id=U1&channel_id=C1&channel_name=inc-42&trigger_id=t.1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx").expect("read");
        assert_eq!(c.verb(), ("follow-up".to_owned(), "now"));
        assert!(!c.in_direct_message());
        assert!(Command::read(b"text=mine").is_err(), "no user");
    }

    #[test]
    fn a_modals_answers_are_read_by_block() {
        let payload = serde_json::json!({
            "type": "view_submission", "user": {"id": "U1"},
            "view": {"id": "V1", "callback_id": "report", "private_metadata": "{\"channel\":\"C1\"}",
                "state": {"values": {
                    "title": {"a": {"type": "plain_text_input", "value": " Checkout down "}},
                    "severity": {"a": {"type": "static_select", "selected_option": {"value": "sev2"}}},
                    "started_at": {"a": {"type": "datetimepicker", "selected_date_time": 1_700_000_000}},
                    "due_date": {"a": {"type": "datepicker", "selected_date": "2027-01-31"}},
                    "owner": {"a": {"type": "users_select", "selected_user": "U2"}},
                    "service": {"a": {"type": "plain_text_input", "value": null}}
                }}}
        });
        let body = serde_urlencoded::to_string([("payload", payload.to_string())]).expect("form");
        let Interaction::Submitted(s) = Interaction::read(body.as_bytes()).expect("read") else {
            panic!("a submission");
        };
        assert_eq!(s.callback_id, "report");
        assert_eq!(s.private_metadata["channel"], "C1");
        assert_eq!(s.input("title").as_deref(), Some("Checkout down"));
        assert_eq!(s.input("severity").as_deref(), Some("sev2"));
        assert_eq!(s.input("started_at").as_deref(), Some("1700000000"));
        assert_eq!(s.input("due_date").as_deref(), Some("2027-01-31"));
        assert_eq!(s.input("owner").as_deref(), Some("U2"));
        assert_eq!(s.input("service"), None);
        assert_eq!(s.input("nothing"), None);
        assert!(Interaction::read(b"payload=%7B%7D").is_err(), "no user");
        assert!(Interaction::read(b"payload=nope").is_err());
    }
}
