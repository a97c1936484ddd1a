//! What each email says, as typed data. The templates in `templates/email/` render these;
//! `Kind::sample` (`src/email/samples.rs`) gives realistic data so every template is
//! checked in strict mode.

use serde::Serialize;

use crate::domain::notifications::Class;

/// The COEs an email is about, as its subject names them: "Checkout 502s", or
/// "Checkout 502s and 2 other COEs".
pub fn coes_named<'a>(titles: impl IntoIterator<Item = &'a str>) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for t in titles {
        if !distinct.contains(&t) {
            distinct.push(t);
        }
    }
    match distinct.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [first, rest @ ..] => format!(
            "{first} and {} other COE{}",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    }
}

/// The kinds of email, each a template folder `templates/email/<name>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    OverdueDigest,
    Escalation,
    CoeOpened,
    WriteupOverdue,
    ReviewRequested,
    ChangesRequested,
    Approved,
    InspectionDigest,
    ActionAssigned,
    CoeAssigned,
    SignIn,
    CoeMerged,
    ActionRecurred,
    ActionVerification,
    VerificationsWaiting,
    WorkHandedOver,
    TicketClosed,
    RiskAcceptance,
    ReviewMeeting,
    DrillRecheck,
}

impl Kind {
    pub const ALL: [Kind; 20] = [
        Kind::OverdueDigest,
        Kind::Escalation,
        Kind::CoeOpened,
        Kind::WriteupOverdue,
        Kind::ReviewRequested,
        Kind::ChangesRequested,
        Kind::Approved,
        Kind::InspectionDigest,
        Kind::ActionAssigned,
        Kind::CoeAssigned,
        Kind::SignIn,
        Kind::CoeMerged,
        Kind::ActionRecurred,
        Kind::ActionVerification,
        Kind::VerificationsWaiting,
        Kind::WorkHandedOver,
        Kind::TicketClosed,
        Kind::RiskAcceptance,
        Kind::ReviewMeeting,
        Kind::DrillRecheck,
    ];

    /// The template folder name, also stored as the outbox row's kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::OverdueDigest => "overdue_digest",
            Kind::Escalation => "escalation",
            Kind::CoeOpened => "coe_opened",
            Kind::WriteupOverdue => "writeup_overdue",
            Kind::ReviewRequested => "review_requested",
            Kind::ChangesRequested => "changes_requested",
            Kind::Approved => "approved",
            Kind::InspectionDigest => "inspection_digest",
            Kind::ActionAssigned => "action_assigned",
            Kind::CoeAssigned => "coe_assigned",
            Kind::SignIn => "sign_in",
            Kind::CoeMerged => "coe_merged",
            Kind::ActionRecurred => "action_recurred",
            Kind::ActionVerification => "action_verification",
            Kind::VerificationsWaiting => "verifications_waiting",
            Kind::WorkHandedOver => "work_handed_over",
            Kind::TicketClosed => "ticket_closed",
            Kind::RiskAcceptance => "risk_acceptance",
            Kind::ReviewMeeting => "review_meeting",
            Kind::DrillRecheck => "drill_recheck",
        }
    }

    /// What the email is, in words (the outbox page lists it so).
    pub fn words(self) -> &'static str {
        match self {
            Kind::OverdueDigest => "overdue actions reminder",
            Kind::Escalation => "escalation to a manager",
            Kind::CoeOpened => "a COE opened",
            Kind::WriteupOverdue => "writeup overdue",
            Kind::ReviewRequested => "review asked",
            Kind::ChangesRequested => "changes asked",
            Kind::Approved => "COE approved",
            Kind::InspectionDigest => "weekly inspection",
            Kind::ActionAssigned => "action given",
            Kind::CoeAssigned => "COE given",
            Kind::SignIn => "sign-in link",
            Kind::CoeMerged => "COE merged",
            Kind::ActionRecurred => "outage came back",
            Kind::ActionVerification => "action to verify",
            Kind::VerificationsWaiting => "verifications waiting",
            Kind::WorkHandedOver => "work handed over",
            Kind::TicketClosed => "ticket closed",
            Kind::RiskAcceptance => "risk acceptance",
            Kind::ReviewMeeting => "review meeting",
            Kind::DrillRecheck => "drill re-check",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Why it is sent, as far as a person's notification settings go: escalations,
    /// assignments and requests always go; reminders and digests carry `List-Id` and
    /// `List-Unsubscribe`; notices only inform.
    pub fn class(self) -> Class {
        match self {
            Kind::Escalation
            | Kind::CoeOpened
            | Kind::ReviewRequested
            | Kind::ChangesRequested
            | Kind::ActionAssigned
            | Kind::CoeAssigned
            | Kind::SignIn
            | Kind::ActionVerification
            | Kind::WorkHandedOver
            | Kind::TicketClosed
            | Kind::RiskAcceptance
            | Kind::ReviewMeeting
            | Kind::DrillRecheck => Class::Essential,
            Kind::OverdueDigest
            | Kind::WriteupOverdue
            | Kind::InspectionDigest
            | Kind::VerificationsWaiting => Class::Digest,
            Kind::Approved | Kind::CoeMerged | Kind::ActionRecurred => Class::Notice,
        }
    }
}

/// One corrective action in a list.
#[derive(Debug, Clone, Serialize)]
pub struct ActionLine {
    pub action_id: String,
    pub title: String,
    pub coe_id: String,
    pub coe_title: String,
    pub owner: String,
    /// The owner's name from the directory; empty when it has none (then the address
    /// alone names them).
    pub owner_name: String,
    pub due_date: String,
    pub days_overdue: i64,
    /// Days until the due date (negative once overdue).
    pub days_until_due: i64,
    pub link: String,
    /// In an escalation: listed for the first time (it crossed the threshold since
    /// the recipient's last escalation).
    pub newly_escalated: bool,
}

/// One COE in a list.
#[derive(Debug, Clone, Serialize)]
pub struct CoeLine {
    pub coe_id: String,
    pub title: String,
    pub owner: String,
    pub reviewer: String,
    /// The writeup deadline (a date), or empty when none applies.
    pub deadline: String,
    /// Days waiting (for review) or late (past the deadline).
    pub days: i64,
    pub link: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct OverdueDigest {
    pub recipient_name: String,
    /// The COEs its actions belong to, for the subject (`coes_named`).
    pub coes_named: String,
    pub overdue: Vec<ActionLine>,
    pub due_soon: Vec<ActionLine>,
    pub actions_link: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Escalation {
    pub recipient_name: String,
    pub coes_named: String,
    pub threshold_days: i64,
    /// How many actions the email lists.
    pub total: usize,
    /// How many of them are escalated for the first time (listed first).
    pub newly_escalated: usize,
    /// Actions of people who report to the recipient.
    pub reports: Vec<ActionLine>,
    /// Actions of a COE the recipient owns or reviews, whose owners have no known manager.
    pub unmanaged: Vec<ActionLine>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CoeOpened {
    pub recipient_name: String,
    pub coe: CoeLine,
    pub severity: String,
    pub service: String,
    pub writeup_days: i64,
    /// Sent to the admins: the COE opened with no owner, for someone to take it.
    pub unowned: bool,
}

/// A corrective action newly assigned to its owner.
#[derive(Debug, Clone, Serialize)]
pub struct ActionAssigned {
    pub recipient_name: String,
    /// Who assigned it.
    pub actor: String,
    pub action: ActionLine,
    pub success_criteria: String,
}

/// A COE whose owner or reviewer someone set after it opened.
#[derive(Debug, Clone, Serialize)]
pub struct CoeAssigned {
    pub recipient_name: String,
    pub actor: String,
    pub coe: CoeLine,
    /// Made reviewer (else owner).
    pub as_reviewer: bool,
    pub writeup_days: i64,
    /// Sent to a reviewer replaced while the COE was in review: who reviews it now
    /// (the COE went back to draft).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
}

/// Drafts of one outage folded into one COE (`coe`), told to everyone involved.
#[derive(Debug, Clone, Serialize)]
pub struct CoeMerged {
    pub recipient_name: String,
    pub actor: String,
    pub coe: CoeLine,
    pub merged: Vec<MergedLine>,
}

/// An outage came back after actions meant to prevent it were done: told to the
/// earlier COE's (`coe`) owner and reviewer, once per recurrence (`recurrence`).
#[derive(Debug, Clone, Serialize)]
pub struct ActionRecurred {
    pub recipient_name: String,
    pub coe: CoeLine,
    pub recurrence: CoeLine,
    /// The day it started again, in the organisation's calendar.
    pub started: String,
    pub actions: Vec<RecurredLine>,
}

/// The COE's reviewer verified a done action, or refused it (back to in progress,
/// with the reason): told to the action's owner.
#[derive(Debug, Clone, Serialize)]
pub struct ActionVerification {
    pub recipient_name: String,
    pub actor: String,
    pub action: ActionLine,
    pub verified: bool,
    pub reason: String,
}

/// An action done before its outage came back.
#[derive(Debug, Clone, Serialize)]
pub struct RecurredLine {
    pub title: String,
    pub kind: String,
    pub owner: String,
    /// The day it was done.
    pub done_on: String,
    pub link: String,
}

/// A draft merged into another COE.
#[derive(Debug, Clone, Serialize)]
pub struct MergedLine {
    pub title: String,
}

/// A one-time sign-in link.
#[derive(Debug, Clone, Serialize)]
pub struct SignIn {
    pub recipient_name: String,
    pub link: String,
    pub minutes: i64,
    /// The client address the request came from.
    pub requested_from: String,
    /// Always true: the footer says the email came because of a sign-in request.
    pub sign_in: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct WriteupOverdue {
    pub recipient_name: String,
    pub coes_named: String,
    pub coes: Vec<CoeLine>,
}

/// To a reviewer: the done actions of COEs they review that wait for their
/// verification (once a day at most).
#[derive(Debug, Clone, Serialize)]
pub struct VerificationsWaiting {
    pub recipient_name: String,
    pub coes_named: String,
    pub actions: Vec<ActionLine>,
    pub actions_link: String,
}

/// To whoever takes over a person's work when they leave (their manager, else their
/// team's lead, else `scim.leavers_work_to`, else an admin): everything they received.
#[derive(Debug, Clone, Serialize)]
pub struct WorkHandedOver {
    pub recipient_name: String,
    /// Who left: their name and address, or the address alone.
    pub leaver: String,
    pub left_on: String,
    /// Their open corrective actions, now the recipient's.
    pub actions: Vec<ActionLine>,
    /// The COEs they owned before approval, now the recipient's to write.
    pub owned: Vec<CoeLine>,
    /// The COEs they were to review, now the recipient's to review.
    pub reviews: Vec<CoeLine>,
    pub count: usize,
}

/// To an action's owner, when its ticket was closed in the tracker: coe asks for the
/// evidence (done) or the reason (won't do) before the action closes.
#[derive(Debug, Clone, Serialize)]
pub struct TicketClosed {
    pub recipient_name: String,
    pub action: ActionLine,
    /// The tracker as people call it ("Jira").
    pub tracker: String,
    pub ticket: String,
    pub ticket_url: String,
    /// The ticket's status there.
    pub status: String,
    /// Closed as not to be done (else done).
    pub wont_do: bool,
}

/// A request to accept an action's risk until a day: to those who decide (`asked`),
/// then to the action's owner (`accepted` or `refused`).
#[derive(Debug, Clone, Serialize)]
pub struct RiskAcceptance {
    pub recipient_name: String,
    pub action: ActionLine,
    /// `asked`, `accepted` or `refused`.
    pub step: String,
    pub asked_by: String,
    /// The day the risk is accepted until (`YYYY-MM-DD`).
    pub until: String,
    pub interim_control: String,
    pub remaining_risk: String,
    /// Who decided (empty while asked).
    pub decided_by: String,
    /// What the decider said (required when refused).
    pub note: String,
}

/// A re-check of an action's fix by a drill: to its owner when it opens (`waiting`:
/// run the drill) and when the alarm proved it (`proven`), to the COE's reviewer when
/// it was missed (`missed`: confirm or reopen), to the owner when reopened.
#[derive(Debug, Clone, Serialize)]
pub struct DrillRecheck {
    pub recipient_name: String,
    pub action: ActionLine,
    /// `waiting`, `proven`, `missed`, `reopened` (or `confirmed`).
    pub step: String,
    /// The labels the drill's alert carries: `name=value, …`.
    pub labels: String,
    /// The label or annotation that marks the drill's event (`coe_drill`).
    pub mark: String,
    /// The last day for the drill (`YYYY-MM-DD`).
    pub due: String,
    /// When the alarm fired, in UTC (empty unless proven).
    pub fired_at: String,
    /// How long it took from the drill's start, in words (empty when not said).
    pub detected: String,
    /// What whoever decided said, and who they are (empty until decided).
    pub note: String,
    pub decided_by: String,
}

/// A COE's review meeting: an invitation, its move (`updated`) or its cancellation;
/// the email carries the iCalendar part calendars read.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewMeeting {
    pub recipient_name: String,
    pub coe: CoeLine,
    /// When, in words, in the organisation's time zone.
    pub when: String,
    pub minutes: u32,
    pub cancelled: bool,
    /// A meeting moved (not the first invitation).
    pub updated: bool,
    /// Who set it.
    pub by: String,
}

/// Review requested, changes requested, approved.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewEmail {
    pub recipient_name: String,
    pub coe: CoeLine,
    /// Who took the step.
    pub actor: String,
    /// The reviewer's comment (may be empty).
    pub comment: String,
    /// A review request to the COE's bar raiser (not its reviewer).
    pub as_bar_raiser: bool,
    /// An approval that still waits for another: whose (empty otherwise).
    pub waiting_for: String,
    /// To an approver whose approval a later change withdrew: the version they
    /// approved (0 otherwise).
    pub withdrawn_version: i32,
    /// About a change of the summary for customers after approval: to the reviewer
    /// to approve it, or to its writer when it was sent back (with `comment`).
    pub summary_change: bool,
}

/// One team's coverage: incidents that needed a COE and where their COEs stand.
#[derive(Debug, Clone, Serialize)]
pub struct CoverageLine {
    pub team: String,
    pub incidents: i64,
    pub none: i64,
    pub draft_past_deadline: i64,
    pub in_review: i64,
    pub approved: i64,
    /// COEs approved in the period with no action of kind prevent or detect.
    pub without_prevention: i64,
    pub with_warnings: i64,
    /// COEs approved in the period that needed a bar raiser and had none.
    pub without_bar_raiser: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TeamLine {
    pub team: String,
    pub open: i64,
    pub overdue: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct InspectionDigest {
    pub recipient_name: String,
    /// ISO week, e.g. `2026-W48`.
    pub week: String,
    pub open_total: i64,
    pub overdue_total: i64,
    pub by_team: Vec<TeamLine>,
    /// `team` holds the owner's address here.
    pub by_owner: Vec<TeamLine>,
    /// The most overdue actions, longest first.
    pub overdue: Vec<ActionLine>,
    pub waiting_for_review: Vec<CoeLine>,
    pub drafts_past_deadline: Vec<CoeLine>,
    /// Actions closed last week on or before their due date, and after it.
    pub closed_on_time: i64,
    pub closed_late: i64,
    pub stats_link: String,
    /// The weekly operations review's agenda.
    pub review_meeting_link: String,
    /// The coverage audit of the last four weeks: everyone, then each team.
    pub coverage: Vec<CoverageLine>,
    /// The audit's first day.
    pub coverage_from: String,
}

/// Links into the service, from `public_url`.
#[derive(Debug, Clone)]
pub struct Links {
    base: String,
}

impl Links {
    pub fn new(public_url: &str) -> Links {
        Links {
            base: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// The COE's page.
    pub fn coe(&self, id: &str) -> String {
        format!("{}/coes/{id}", self.base)
    }

    /// The corrective action's page.
    pub fn action(&self, id: &str) -> String {
        format!("{}/actions/{id}", self.base)
    }

    /// Where a person sees all their open actions: their "My work" page (the
    /// recipient is whoever signs in, so the address is not part of the link).
    pub fn my_work(&self) -> String {
        format!("{}/", self.base)
    }

    /// The dashboard (the weekly inspection email's figures, drawn).
    pub fn stats(&self) -> String {
        format!("{}/dashboard", self.base)
    }

    /// The weekly operations review's agenda.
    pub fn review_meeting(&self) -> String {
        format!("{}/review-meeting", self.base)
    }
}
