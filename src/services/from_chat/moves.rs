//! The moves people make from chat, whatever the platform: each the pages' own service
//! call as the person, made once for its key (`once`) and said in the history as made
//! from chat; and a refusal in words, with the names of fields said as the chat's
//! forms and commands say them.

use chrono::NaiveDate;

use super::{once, Platform};
use crate::db::DbConnection;
use crate::domain::action::Transition;
use crate::services::access::Acting;
use crate::services::coe::actions::{
    self, ActionError, ActionPatch, NewAction, TransitionInput, VerifyInput,
};
use crate::services::coe::coes::CoeError;
use crate::services::intake::report::{self, FailureReport};
use crate::services::Env;

/// A move asked from chat.
#[derive(Debug, Clone)]
pub enum Move {
    /// "Report a failure"; the chat channel it was reported in is linked to its COE.
    Report {
        input: FailureReport,
        channel: Option<String>,
    },
    /// A corrective action added to COE `coe`.
    FollowUp { coe: String, input: NewAction },
    /// Action `action` marked done, with what was done and the evidence.
    Done {
        action: String,
        note: Option<String>,
        evidence: Option<String>,
    },
    /// Action `action` due on another date, for a reason; `due` none when none was
    /// given that reads as a date.
    MoveDue {
        action: String,
        due: Option<NaiveDate>,
        reason: Option<String>,
    },
    /// Action `action` verified by its reviewer.
    Verify { action: String },
    /// Action `action` sent back to its owner, for a reason.
    SendBack {
        action: String,
        reason: Option<String>,
    },
}

impl Move {
    /// As the history's records and `/metrics` name it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Move::Report { .. } => "report",
            Move::FollowUp { .. } => "follow_up",
            Move::Done { .. } => "done",
            Move::MoveDue { .. } => "move_due",
            Move::Verify { .. } => "verify",
            Move::SendBack { .. } => "send_back",
        }
    }
}

/// What a move made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Made {
    /// A failure reported: its incident, and its COE when its severity asks for one.
    Reported {
        incident: String,
        coe: Option<String>,
        title: String,
    },
    /// A follow-up added.
    Added {
        action: String,
        title: String,
        owner: Option<String>,
        due: Option<String>,
    },
    /// An action moved on (done, a new date, verified or sent back).
    Moved {
        action: String,
        title: String,
        due: NaiveDate,
    },
}

impl Made {
    /// What was reported, added or moved: its title.
    pub fn title(&self) -> &str {
        match self {
            Made::Reported { title, .. }
            | Made::Added { title, .. }
            | Made::Moved { title, .. } => title,
        }
    }
}

/// Why a move was not made.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error(transparent)]
    Action(ActionError),
    #[error(transparent)]
    Coe(CoeError),
    /// The database failed: no refusal, and nothing to say of it but that.
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl From<ActionError> for MoveError {
    fn from(e: ActionError) -> Self {
        match e {
            ActionError::Database(e) => MoveError::Database(e),
            other => MoveError::Action(other),
        }
    }
}

impl From<CoeError> for MoveError {
    fn from(e: CoeError) -> Self {
        match e {
            CoeError::Database(e) => MoveError::Database(e),
            other => MoveError::Coe(other),
        }
    }
}

impl MoveError {
    /// Each field's problem, when the move was refused for what was given.
    pub fn problems(&self) -> &[(String, String)] {
        match self {
            MoveError::Action(ActionError::Invalid(p)) | MoveError::Coe(CoeError::Invalid(p)) => p,
            _ => &[],
        }
    }

    /// The refusal in words for the person: each field's problem, or why not.
    pub fn words(&self) -> String {
        let problems = self.problems();
        if problems.is_empty() {
            return format!("{}.", plain(&self.to_string()));
        }
        problems
            .iter()
            .map(|(field, problem)| format!("{}: {}.", label(field), plain(problem)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What each field is called in chat, for what the services say about them.
const LABELS: [(&str, &str); 9] = [
    ("evidence_url", "the evidence link"),
    ("due_date", "the due date"),
    ("success_criteria", "done when"),
    ("started_at", "the start"),
    ("customers_saw", "what customers saw"),
    ("note", "what was done"),
    ("reason", "why"),
    ("owner", "the owner"),
    ("verified", "the verdict"),
];

/// Field `field` as chat says it.
pub fn label(field: &str) -> String {
    LABELS
        .iter()
        .find(|(f, _)| *f == field)
        .map_or_else(|| field.replace('_', " "), |(_, l)| (*l).to_owned())
}

/// A service's words with its field names said as chat says them.
pub fn plain(text: &str) -> String {
    let mut text = text.to_owned();
    for (field, label) in LABELS {
        if field.contains('_') {
            text = text.replace(field, label);
        }
    }
    text
}

/// Makes `asked` as `acting` once for `key` (`None`: made before, nothing done again).
/// A refused move takes no key, so that the person may try again.
pub fn make(
    conn: &mut DbConnection,
    env: Env<'_>,
    platform: Platform,
    key: &str,
    acting: &Acting,
    asked: &Move,
) -> Result<Option<Made>, MoveError> {
    let editor = acting.editor();
    let clock = env.settings.clock();
    let moved = |conn: &mut DbConnection, action: &str| -> Result<Made, MoveError> {
        let a = actions::get(conn, action, clock, &[])?.action;
        Ok(Made::Moved {
            action: a.id,
            title: a.title,
            due: a.due_date,
        })
    };
    once(conn, platform, key, |conn| -> Result<Made, MoveError> {
        match asked {
            Move::Report { input, channel } => {
                let reported = report::report(conn, input, &editor, env)?;
                if let (Some(channel), Some(coe)) = (channel, reported.coe_id.as_deref()) {
                    super::link(conn, platform, channel, coe, &acting.actor)?;
                }
                Ok(Made::Reported {
                    incident: reported.incident_id,
                    coe: reported.coe_id,
                    title: input.title.clone(),
                })
            }
            Move::FollowUp { coe, input } => {
                let id = actions::create(conn, coe, input, &editor, clock, env)?;
                Ok(Made::Added {
                    action: id,
                    title: input.title.clone().unwrap_or_default(),
                    owner: input.owner.clone(),
                    due: input.due_date.clone(),
                })
            }
            Move::Done {
                action,
                note,
                evidence,
            } => {
                let input = TransitionInput {
                    note: note.clone(),
                    evidence_url: evidence.clone(),
                };
                actions::transition(conn, action, Transition::Complete, &input, &editor, env)?;
                moved(conn, action)
            }
            Move::MoveDue {
                action,
                due,
                reason,
            } => {
                let Some(due) = *due else {
                    return Err(invalid("due_date", "the new date is missing: give it"));
                };
                let current = actions::get(conn, action, clock, &[])?.action.due_date;
                if due == current {
                    return Err(invalid(
                        "due_date",
                        &format!("it is due {current} already: choose another date"),
                    ));
                }
                let patch = ActionPatch {
                    due_date: Some(due),
                    reason: reason.clone(),
                    ..ActionPatch::default()
                };
                actions::patch(conn, action, &patch, &editor, clock, env)?;
                moved(conn, action)
            }
            Move::Verify { action } | Move::SendBack { action, .. } => {
                let reason = match asked {
                    Move::SendBack { reason, .. } => reason.clone(),
                    _ => None,
                };
                let input = VerifyInput {
                    verified: Some(matches!(asked, Move::Verify { .. })),
                    reason,
                };
                actions::verify(conn, action, &input, &editor, env)?;
                moved(conn, action)
            }
        }
    })
}

fn invalid(field: &str, problem: &str) -> MoveError {
    MoveError::Action(ActionError::Invalid(vec![(
        field.to_owned(),
        problem.to_owned(),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_fields_as_chat_does() {
        let e = invalid("evidence_url", "give evidence_url: the fix");
        assert_eq!(
            e.words(),
            "the evidence link: give the evidence link: the fix."
        );
        let e = MoveError::Action(ActionError::Forbidden("only the reviewer verifies".into()));
        assert_eq!(e.words(), "only the reviewer verifies.");
        assert!(e.problems().is_empty());
    }
}
