//! What each email says, as typed data. The templates in `templates/email/` render these;
//! `Kind::sample` gives realistic data so every template is checked in strict mode.

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
}

impl Kind {
    pub const ALL: [Kind; 19] = [
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
            | Kind::ReviewMeeting => Class::Essential,
            Kind::OverdueDigest
            | Kind::WriteupOverdue
            | Kind::InspectionDigest
            | Kind::VerificationsWaiting => Class::Digest,
            Kind::Approved | Kind::CoeMerged | Kind::ActionRecurred => Class::Notice,
        }
    }

    /// Realistic data for this kind, with a hostile title when `hostile` is set.
    pub fn sample(self, hostile: bool) -> serde_json::Value {
        let title = if hostile {
            format!(
                "<script>alert('x')</script>\r\nBcc: victim@example.com {}",
                "very long ".repeat(200)
            )
        } else {
            "Add a canary stage to the payments deploy".to_owned()
        };
        let action = |n: i64| ActionLine {
            action_id: format!("0193-action-{n}"),
            title: title.clone(),
            coe_id: "0193-coe".into(),
            coe_title: "Checkout returned 502 for 40 minutes".into(),
            owner: "ana@example.com".into(),
            owner_name: "Ana Lima".into(),
            due_date: "2026-11-20".into(),
            days_overdue: n,
            days_until_due: -n,
            link: "https://coe.example.com/actions/0193-action".into(),
            newly_escalated: false,
        };
        let coe = CoeLine {
            coe_id: "0193-coe".into(),
            title: title.clone(),
            owner: "ana@example.com".into(),
            reviewer: "bo@example.com".into(),
            deadline: "2026-11-22".into(),
            days: 4,
            link: "https://coe.example.com/coes/0193-coe".into(),
        };
        let value = match self {
            Kind::OverdueDigest => serde_json::to_value(OverdueDigest {
                recipient_name: "Ana Lima".into(),
                coes_named: coes_named([title.as_str()]),
                overdue: vec![action(9), action(2)],
                due_soon: vec![ActionLine {
                    days_overdue: 0,
                    days_until_due: 2,
                    ..action(0)
                }],
                actions_link: "https://coe.example.com/".into(),
            }),
            Kind::Escalation => serde_json::to_value(Escalation {
                recipient_name: "Carla Manager".into(),
                coes_named: coes_named([title.as_str(), "Search was down"]),
                threshold_days: 7,
                total: 3,
                newly_escalated: 1,
                reports: vec![
                    ActionLine {
                        newly_escalated: true,
                        ..action(7)
                    },
                    action(14),
                ],
                unmanaged: vec![action(8)],
            }),
            Kind::CoeOpened => serde_json::to_value(CoeOpened {
                recipient_name: "Ana Lima".into(),
                coe: coe.clone(),
                severity: "sev2".into(),
                service: "checkout".into(),
                writeup_days: 7,
                unowned: false,
            }),
            Kind::ActionAssigned => serde_json::to_value(ActionAssigned {
                recipient_name: "Ana Lima".into(),
                actor: "bo@example.com".into(),
                action: action(0),
                success_criteria: if hostile {
                    title.clone()
                } else {
                    "A deploy with a failing canary stops before 5% of traffic".into()
                },
            }),
            Kind::CoeAssigned => serde_json::to_value(CoeAssigned {
                recipient_name: "Bo Reviewer".into(),
                actor: "ana@example.com".into(),
                coe: coe.clone(),
                as_reviewer: true,
                writeup_days: 7,
                replaced_by: None,
            }),
            Kind::CoeMerged => serde_json::to_value(CoeMerged {
                recipient_name: "Ana Lima".into(),
                actor: "bo@example.com".into(),
                coe: coe.clone(),
                merged: vec![
                    MergedLine {
                        title: title.clone(),
                    },
                    MergedLine {
                        title: "Gateway 5xx above 1%".into(),
                    },
                ],
            }),
            Kind::ActionVerification => serde_json::to_value(ActionVerification {
                recipient_name: "Bo Chen".into(),
                actor: "rev@example.com".into(),
                action: action(0),
                verified: false,
                reason: if hostile {
                    title.clone()
                } else {
                    "The game day failed over by hand, not by the runbook.".into()
                },
            }),
            Kind::ActionRecurred => serde_json::to_value(ActionRecurred {
                recipient_name: "Ana Lima".into(),
                coe: coe.clone(),
                recurrence: CoeLine {
                    coe_id: "0193-coe-2".into(),
                    title: format!("{title} (again)"),
                    link: "https://coe.example.com/coes/0193-coe-2".into(),
                    ..coe.clone()
                },
                started: "2026-12-02".into(),
                actions: vec![RecurredLine {
                    title: "Fail over the payments database by runbook, tested monthly".into(),
                    kind: "prevent".into(),
                    owner: "bo@example.com".into(),
                    done_on: "2026-11-20".into(),
                    link: "https://coe.example.com/actions/0193-action".into(),
                }],
            }),
            Kind::SignIn => serde_json::to_value(SignIn {
                recipient_name: "Ana Lima".into(),
                link: "https://coe.example.com/sign-in/confirm?token=coe_0123".into(),
                minutes: 15,
                sign_in: true,
                requested_from: if hostile {
                    title.clone()
                } else {
                    "192.0.2.7".into()
                },
            }),
            Kind::VerificationsWaiting => serde_json::to_value(VerificationsWaiting {
                recipient_name: "Bo Reviewer".into(),
                coes_named: coes_named(["Checkout returned 502 for 40 minutes"]),
                actions: vec![action(0), action(1)],
                actions_link: "https://coe.example.com/".into(),
            }),
            Kind::WorkHandedOver => serde_json::to_value(WorkHandedOver {
                recipient_name: "Bo Manager".into(),
                leaver: "Chen Li (chen@example.com)".into(),
                left_on: "2026-12-04".into(),
                actions: vec![action(0), action(1)],
                owned: vec![coe.clone()],
                reviews: vec![coe.clone()],
                count: 4,
            }),
            Kind::TicketClosed => serde_json::to_value(TicketClosed {
                recipient_name: "Ana Lima".into(),
                action: action(0),
                tracker: "Jira".into(),
                ticket: "OPS-12".into(),
                ticket_url: "https://acme.atlassian.net/browse/OPS-12".into(),
                status: "Done".into(),
                wont_do: false,
            }),
            Kind::RiskAcceptance => serde_json::to_value(RiskAcceptance {
                recipient_name: "Bo Manager".into(),
                action: action(0),
                step: "asked".into(),
                asked_by: "Ana Lima (ana@example.com)".into(),
                until: "2027-02-15".into(),
                interim_control: "A manual check of the queue's depth at every shift change".into(),
                remaining_risk: "A backlog past 10,000 messages is noticed within 8 hours".into(),
                decided_by: String::new(),
                note: String::new(),
            }),
            Kind::ReviewMeeting => serde_json::to_value(ReviewMeeting {
                recipient_name: "Bo Reviewer".into(),
                coe: coe.clone(),
                when: "Thursday 10 December 2026, 15:00 (Europe/Berlin)".into(),
                minutes: 60,
                cancelled: false,
                updated: false,
                by: "Ana Lima (ana@example.com)".into(),
            }),
            Kind::WriteupOverdue => serde_json::to_value(WriteupOverdue {
                recipient_name: "Ana Lima".into(),
                coes_named: coes_named([title.as_str()]),
                coes: vec![coe.clone()],
            }),
            Kind::ReviewRequested | Kind::ChangesRequested | Kind::Approved => {
                serde_json::to_value(ReviewEmail {
                    recipient_name: "Bo Reviewer".into(),
                    coe: coe.clone(),
                    actor: "ana@example.com".into(),
                    comment: if hostile {
                        title.clone()
                    } else {
                        "The 5 whys stop at a person; ask why the deploy allowed it.".into()
                    },
                    as_bar_raiser: self == Kind::ReviewRequested,
                    waiting_for: if self == Kind::Approved {
                        "cy@example.com (bar raiser)".into()
                    } else {
                        String::new()
                    },
                    withdrawn_version: 0,
                    summary_change: false,
                })
            }
            Kind::InspectionDigest => serde_json::to_value(InspectionDigest {
                recipient_name: "".into(),
                week: "2026-W48".into(),
                overdue_total: 3,
                open_total: 12,
                by_team: vec![TeamLine {
                    team: "payments".into(),
                    open: 5,
                    overdue: 2,
                }],
                by_owner: vec![TeamLine {
                    team: "ana@example.com".into(),
                    open: 3,
                    overdue: 2,
                }],
                overdue: vec![action(9)],
                waiting_for_review: vec![coe.clone()],
                drafts_past_deadline: vec![coe],
                closed_on_time: 4,
                closed_late: 1,
                stats_link: "https://coe.example.com/dashboard".into(),
                review_meeting_link: "https://coe.example.com/review-meeting".into(),
                coverage: vec![CoverageLine {
                    team: "Everyone".into(),
                    incidents: 6,
                    none: 1,
                    draft_past_deadline: 1,
                    in_review: 2,
                    approved: 2,
                    without_prevention: 1,
                    with_warnings: 0,
                    without_bar_raiser: 1,
                }],
                coverage_from: "2026-11-04".into(),
            }),
        };
        value.unwrap_or_default()
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
