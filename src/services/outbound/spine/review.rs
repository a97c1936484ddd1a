//! What a review step sets off: the emails of the step, the chat notice, the bar raiser
//! asked.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use super::{coe_history, Event};
use crate::config::ChatEvent;
use crate::db::models::CoeRow;
use crate::db::{self, types, DbConnection};
use crate::domain::review::ReviewStep;
use crate::domain::Severity;
use crate::email::Kind;
use crate::services::outbound::chat;
use crate::services::outbound::notify::{self, CoeFacts};
use crate::services::Env;

/// A review step as its consequences need it.
pub struct ReviewStepped<'a> {
    /// The COE as it was when the step was taken.
    pub coe: &'a CoeRow,
    pub severity: Severity,
    pub step: ReviewStep,
    /// The first of two approvals: the COE waits for the second.
    pub first_of_two: bool,
    pub comment: Option<&'a str>,
    /// The reviewer's comments at the sections still waiting: (section title, text).
    pub waiting: Vec<(String, &'a str)>,
    /// The person who took it.
    pub by: Option<&'a str>,
    /// Who the emails and notices say took it.
    pub told_as: &'a str,
    /// The COE's bar raiser after the step.
    pub bar_raiser: Option<&'a str>,
    /// The step's own id: each step is told once.
    pub step_id: &'a str,
}

/// What a review step sets off.
pub enum ReviewEvent<'a> {
    /// A review step was taken (submitted, approved, sent back).
    Stepped(ReviewStepped<'a>),
    /// A bar raiser was chosen again for a COE in review (the one before left).
    BarRaiserAsked {
        coe: &'a CoeRow,
        bar_raiser: &'a str,
        told_as: &'a str,
    },
    /// A COE's review meeting was set, moved (`sequence` > 0) or cancelled: its
    /// history says so and each attendee gets the invitation (`ics`) by email.
    Meeting {
        coe: &'a CoeRow,
        attendees: &'a [String],
        /// When, in words; how long; its SEQUENCE; cancelled.
        when: &'a str,
        minutes: u32,
        sequence: u32,
        cancelled: bool,
        by: &'a str,
        ics: &'a str,
    },
    /// An admin named the bar raiser of a COE (draft or in review: then they are
    /// asked at once).
    BarRaiserNamed {
        coe: &'a CoeRow,
        former: Option<&'a str>,
        bar_raiser: &'a str,
        in_review: bool,
        told_as: &'a str,
    },
}

impl<'a> From<ReviewEvent<'a>> for Event<'a> {
    fn from(event: ReviewEvent<'a>) -> Event<'a> {
        Event::Review(event)
    }
}

/// Every consequence of `event`, in the caller's transaction.
pub(super) fn happened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    event: ReviewEvent<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match event {
        ReviewEvent::Stepped(stepped) => review_stepped(conn, env, stepped, now),
        ReviewEvent::BarRaiserAsked {
            coe,
            bar_raiser,
            told_as,
        } => {
            let severity = types::severity("coes.severity", coe.severity)?.to_string();
            let facts = CoeFacts::of(coe, &severity);
            let id = db::new_id();
            notify::bar_raiser_requested(conn, env, &facts, bar_raiser, told_as, &id, now)
        }
        ReviewEvent::Meeting {
            coe,
            attendees,
            when,
            minutes,
            sequence,
            cancelled,
            by,
            ics,
        } => {
            let what = if cancelled {
                "meeting_cancelled"
            } else {
                "meeting"
            };
            coe_history(
                conn,
                &coe.id,
                actor,
                what,
                None,
                Some(json!({ "when": when, "minutes": minutes, "attendees": attendees })),
                now,
            )?;
            let severity = types::severity("coes.severity", coe.severity)?.to_string();
            let facts = CoeFacts::of(coe, &severity);
            notify::review_meeting(
                conn,
                env,
                &facts,
                attendees,
                (when, minutes, sequence, cancelled),
                by,
                ics,
                now,
            )
        }
        ReviewEvent::BarRaiserNamed {
            coe,
            former,
            bar_raiser,
            in_review,
            told_as,
        } => {
            coe_history(
                conn,
                &coe.id,
                actor,
                "bar_raiser",
                Some(json!({ "bar_raiser": former })),
                Some(json!({ "bar_raiser": bar_raiser })),
                now,
            )?;
            if !in_review {
                return Ok(());
            }
            let asked = ReviewEvent::BarRaiserAsked {
                coe,
                bar_raiser,
                told_as,
            };
            happened(conn, env, actor, asked, now)
        }
    }
}

fn review_stepped(
    conn: &mut DbConnection,
    env: Env<'_>,
    stepped: ReviewStepped<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let ReviewStepped {
        coe,
        severity,
        step,
        first_of_two,
        comment,
        waiting,
        by,
        told_as,
        bar_raiser,
        step_id,
    } = stepped;
    let kind = match step {
        ReviewStep::Submit => Kind::ReviewRequested,
        ReviewStep::Approve => Kind::Approved,
        ReviewStep::RequestChanges => Kind::ChangesRequested,
    };
    // Sent back: the email holds the section comments too, each under its section.
    let mut said = comment.unwrap_or_default().to_owned();
    if step == ReviewStep::RequestChanges {
        for (section, body) in &waiting {
            said.push_str(&format!("\n\nOn {section}: {body}"));
        }
    }
    let said = said.trim();
    let severity = severity.to_string();
    let facts = CoeFacts::of(coe, &severity);
    let waiting_for = first_of_two.then(|| {
        if by == coe.reviewer_email.as_deref() {
            format!("{} (bar raiser)", bar_raiser.unwrap_or("the bar raiser"))
        } else {
            let reviewer = coe.reviewer_email.as_deref();
            format!("{} (reviewer)", reviewer.unwrap_or("the reviewer"))
        }
    });
    notify::review_step(
        conn,
        env,
        kind,
        &facts,
        told_as,
        Some(said).filter(|s| !s.is_empty()),
        waiting_for.as_deref(),
        step_id,
        now,
    )?;
    let what = match (step, first_of_two) {
        (ReviewStep::Submit, _) => "Review requested",
        (ReviewStep::RequestChanges, _) => "Changes requested",
        (ReviewStep::Approve, true) => "Approved once (waiting for the second approval)",
        (ReviewStep::Approve, false) => "COE approved",
    };
    chat::coe_notice(
        conn,
        env,
        ChatEvent::Review,
        &facts,
        what,
        Some(told_as),
        &format!("review:{}:{step_id}", coe.id),
        now,
    )?;
    // The bar raiser is asked once per round, like the reviewer.
    if let (ReviewStep::Submit, Some(b)) = (step, bar_raiser) {
        notify::bar_raiser_requested(conn, env, &facts, b, told_as, step_id, now)?;
    }
    Ok(())
}
