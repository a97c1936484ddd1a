//! Realistic data for each kind of email, so that every template (the built-in ones
//! and an organisation's own, `email.templates_dir`) is rendered in strict mode at
//! start, and with a hostile title in the tests.

use super::content::*;

impl Kind {
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
            Kind::DrillRecheck => serde_json::to_value(DrillRecheck {
                recipient_name: "Ana Lima".into(),
                action: action(0),
                step: "waiting".into(),
                labels: "alertname=QueueBacklog, service=checkout".into(),
                mark: crate::domain::drill::MARK.into(),
                due: "2027-02-15".into(),
                fired_at: String::new(),
                detected: String::new(),
                note: String::new(),
                decided_by: String::new(),
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
