//! Emails decided by events, not by the calendar: a COE opened, a review step. Each
//! is queued through the outbox in the transaction of the event that caused it, with
//! a deduplication key naming that event, so it is sent once. The calendar's emails
//! (digests, escalations) are the reminder sweep's.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use crate::db::models::CoeRow;
use crate::db::{types, DbConnection};
use crate::domain::clock::local_date;
pub use crate::domain::coe::CoeFacts;
use crate::domain::reminder::writeup_deadline;
use crate::email::content::{
    ActionAssigned, ActionLine, ActionRecurred, ActionVerification, CoeAssigned, CoeLine,
    CoeMerged, CoeOpened, Links, MergedLine, RecurredLine, ReviewEmail, TicketClosed,
};
use crate::email::Kind;
use crate::services::outbound::outbox;
use crate::services::Env;

fn coe_line(env: Env<'_>, coe: &CoeFacts<'_>) -> CoeLine {
    let settings = env.settings;
    CoeLine {
        coe_id: coe.id.to_owned(),
        title: coe.title.to_owned(),
        owner: coe.owner.unwrap_or_default().to_owned(),
        reviewer: coe.reviewer.unwrap_or_default().to_owned(),
        deadline: coe
            .resolved_at
            .map(|t| {
                local_date(
                    writeup_deadline(t, settings.coe.writeup_days),
                    settings.org_timezone(),
                )
                .to_string()
            })
            .unwrap_or_default(),
        days: 0,
        link: Links::new(&settings.public_url).coe(coe.id),
    }
}

/// A COE's review meeting, told to each of `attendees` with the iCalendar part
/// (`invitation`) their calendar reads: one email per recipient and version
/// (`sequence`).
#[allow(clippy::too_many_arguments)]
pub fn review_meeting(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe: &CoeFacts<'_>,
    attendees: &[String],
    (when, minutes, sequence, cancelled): (&str, u32, u32, bool),
    by: &str,
    invitation: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let mut line = coe_line(env, coe);
    line.link = format!("{}/print", line.link);
    for to in attendees {
        let data = json!(crate::email::content::ReviewMeeting {
            recipient_name: String::new(),
            coe: line.clone(),
            when: when.to_owned(),
            minutes,
            cancelled,
            updated: sequence > 0 && !cancelled,
            by: by.to_owned(),
        });
        let key = format!("{}:{}:{sequence}:{to}", Kind::ReviewMeeting.name(), coe.id);
        outbox::notify_with_calendar(
            conn,
            env.emails,
            Kind::ReviewMeeting,
            key,
            to,
            data,
            invitation.to_owned(),
            now,
        )?;
    }
    Ok(())
}

/// Tells a new COE's owner it is theirs. Call it in the transaction that opened it.
pub fn coe_opened(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe: &CoeFacts<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let templates = env.emails;
    let settings = env.settings;
    let Some(owner) = coe.owner else {
        return Ok(());
    };
    let data = json!(CoeOpened {
        recipient_name: String::new(),
        coe: coe_line(env, coe),
        severity: coe.severity.to_owned(),
        service: coe.service.unwrap_or_default().to_owned(),
        writeup_days: settings.coe.writeup_days,
        unowned: false,
    });
    let key = format!("{}:{}:{owner}", Kind::CoeOpened.name(), coe.id);
    outbox::notify(conn, templates, Kind::CoeOpened, key, owner, data, now)
}

/// Tells admin `admin` that stored COE `row` opened with no owner (no rule of the
/// ownership chain named one), so that someone takes it.
pub fn coe_unowned(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    admin: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let templates = env.emails;
    let settings = env.settings;
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    let coe = CoeFacts::of(row, &severity);
    let data = json!(CoeOpened {
        recipient_name: String::new(),
        coe: coe_line(env, &coe),
        severity: severity.clone(),
        service: coe.service.unwrap_or_default().to_owned(),
        writeup_days: settings.coe.writeup_days,
        unowned: true,
    });
    let key = format!("{}:{}:{admin}:unowned", Kind::CoeOpened.name(), row.id);
    outbox::notify(conn, templates, Kind::CoeOpened, key, admin, data, now)
}

/// Tells a reviewer replaced while COE `row` was in review that they need not review
/// it any more, and who does now (the COE went back to draft).
pub fn reviewer_replaced(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    former: &str,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let successor = row
        .reviewer_email
        .clone()
        .unwrap_or_else(|| "nobody".into());
    assignment(conn, env, row, former, true, Some(successor), actor, now)
}

/// Tells the reviewer (submitted) or the owner (changes requested, approved) of a
/// review step. `step_id` (the review comment's id) makes each step's email unique.
#[allow(clippy::too_many_arguments)]
pub fn review_step(
    conn: &mut DbConnection,
    env: Env<'_>,
    kind: Kind,
    coe: &CoeFacts<'_>,
    actor: &str,
    comment: Option<&str>,
    waiting_for: Option<&str>,
    step_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let templates = env.emails;
    let recipient = match kind {
        Kind::ReviewRequested => coe.reviewer,
        _ => coe.owner,
    };
    let Some(recipient) = recipient else {
        return Ok(());
    };
    if recipient == actor {
        return Ok(());
    }
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: coe_line(env, coe),
        actor: actor.to_owned(),
        comment: comment.unwrap_or_default().to_owned(),
        as_bar_raiser: false,
        waiting_for: waiting_for.unwrap_or_default().to_owned(),
        withdrawn_version: 0,
        summary_change: false,
    });
    let key = format!("{}:{}:{step_id}", kind.name(), coe.id);
    outbox::notify(conn, templates, kind, key, recipient, data, now)
}

/// Tells `approver` that a change to the COE after their approval (of version
/// `approved`) withdrew it: they read it again and approve again.
#[allow(clippy::too_many_arguments)]
pub fn approval_withdrawn(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe: &CoeFacts<'_>,
    approver: &str,
    actor: &str,
    approved: i32,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let templates = env.emails;
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: coe_line(env, coe),
        actor: actor.to_owned(),
        comment: String::new(),
        as_bar_raiser: false,
        waiting_for: String::new(),
        withdrawn_version: approved,
        summary_change: false,
    });
    let kind = Kind::ReviewRequested;
    let key = format!("{}:{}:withdrawn:{approved}", kind.name(), coe.id);
    outbox::notify(conn, templates, kind, key, approver, data, now)
}

/// Asks `recipient` (the reviewer) to approve a change of the summary for customers
/// of approved COE `coe_id`, or tells its writer it was sent back (`note`: the
/// reviewer's why).
#[allow(clippy::too_many_arguments)]
pub fn summary_change(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe_id: &str,
    change_id: &str,
    recipient: &str,
    actor: &str,
    note: Option<&str>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if recipient == actor {
        return Ok(());
    }
    let row: CoeRow = crate::db::schema::coes::table
        .find(coe_id)
        .select(CoeRow::as_select())
        .first(conn)?;
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    let facts = CoeFacts::of(&row, &severity);
    let mut line = coe_line(env, &facts);
    line.link.push_str("#for-customers");
    let kind = if note.is_some() {
        Kind::ChangesRequested
    } else {
        Kind::ReviewRequested
    };
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: line,
        actor: actor.to_owned(),
        comment: note.unwrap_or_default().to_owned(),
        as_bar_raiser: false,
        waiting_for: String::new(),
        withdrawn_version: 0,
        summary_change: true,
    });
    let key = format!("{}:{coe_id}:summary:{change_id}:{recipient}", kind.name());
    outbox::notify(conn, env.emails, kind, key, recipient, data, now)
}

/// Asks a submitted COE's bar raiser for their review (with the reviewer's request).
#[allow(clippy::too_many_arguments)]
pub fn bar_raiser_requested(
    conn: &mut DbConnection,
    env: Env<'_>,
    coe: &CoeFacts<'_>,
    bar_raiser: &str,
    actor: &str,
    step_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let templates = env.emails;
    let data = json!(ReviewEmail {
        recipient_name: String::new(),
        coe: coe_line(env, coe),
        actor: actor.to_owned(),
        comment: String::new(),
        as_bar_raiser: true,
        waiting_for: String::new(),
        withdrawn_version: 0,
        summary_change: false,
    });
    let kind = Kind::ReviewRequested;
    let key = format!("{}:{}:{step_id}:bar_raiser", kind.name(), coe.id);
    outbox::notify(conn, templates, kind, key, bar_raiser, data, now)
}

impl CoeFacts<'_> {
    /// The facts of a stored COE; `severity` is its label (`sev2`).
    pub fn of<'a>(row: &'a CoeRow, severity: &'a str) -> CoeFacts<'a> {
        CoeFacts {
            id: &row.id,
            title: &row.title,
            owner: row.owner_email.as_deref(),
            reviewer: row.reviewer_email.as_deref(),
            severity,
            service: row.service.as_deref(),
            resolved_at: row.resolved_at,
        }
    }
}

/// Tells the owner of stored COE `row` that it opened (see `coe_opened`).
pub fn coe_opened_row(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    coe_opened(conn, env, &CoeFacts::of(row, &severity), now)
}

/// A corrective action as its assignment email names it.
pub struct ActionFacts<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub owner: &'a str,
    pub due_date: chrono::NaiveDate,
    pub coe_id: &'a str,
    pub coe_title: &'a str,
    pub success_criteria: Option<&'a str>,
}

impl ActionFacts<'_> {
    /// The action as an email lists it.
    fn line(&self, links: &Links) -> ActionLine {
        ActionLine {
            action_id: self.id.to_owned(),
            title: self.title.to_owned(),
            coe_id: self.coe_id.to_owned(),
            coe_title: self.coe_title.to_owned(),
            owner: self.owner.to_owned(),
            owner_name: String::new(),
            due_date: self.due_date.to_string(),
            days_overdue: 0,
            days_until_due: 0,
            link: links.action(self.id),
            newly_escalated: false,
        }
    }
}

/// Tells an action's owner it is theirs (on creation, and when it changes hands),
/// unless they assigned it to themselves. Each assignment is its own email.
pub fn action_assigned(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionFacts<'_>,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if let Some(email) = action_assigned_email(conn, env, action, actor)? {
        outbox::enqueue(conn, &email, now)?;
    }
    Ok(())
}

/// The email `action_assigned` queues, composed (reads only) to be queued later by
/// `outbox::enqueue`; `None` when the owner assigned it to themselves (or a template
/// failed, logged).
pub fn action_assigned_email(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionFacts<'_>,
    actor: &str,
) -> QueryResult<Option<outbox::NewEmail>> {
    if action.owner == actor {
        return Ok(None);
    }
    let links = Links::new(&env.settings.public_url);
    let data = json!(ActionAssigned {
        recipient_name: String::new(),
        actor: actor.to_owned(),
        action: action.line(&links),
        success_criteria: action.success_criteria.unwrap_or_default().to_owned(),
    });
    let key = format!(
        "{}:{}:{}:{}",
        Kind::ActionAssigned.name(),
        action.id,
        action.owner,
        crate::db::new_id()
    );
    outbox::composed(
        conn,
        env.emails,
        Kind::ActionAssigned,
        key,
        action.owner,
        data,
    )
}

/// Tells a person they were made the owner or the reviewer of a COE after it opened,
/// unless they did it themselves.
pub fn coe_assigned(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    recipient: &str,
    as_reviewer: bool,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    assignment(conn, env, row, recipient, as_reviewer, None, actor, now)
}

/// Tells `recipient` that drafts (`merged`, their titles) were merged into COE `row`
/// by `actor` (once per merge: `merge_id`), unless they did it.
#[allow(clippy::too_many_arguments)]
pub fn coe_merged(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    merged: &[String],
    recipient: &str,
    actor: &str,
    merge_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if recipient == actor {
        return Ok(());
    }
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    let data = json!(CoeMerged {
        recipient_name: String::new(),
        actor: actor.to_owned(),
        coe: coe_line(env, &CoeFacts::of(row, &severity)),
        merged: merged
            .iter()
            .map(|title| MergedLine {
                title: title.clone(),
            })
            .collect(),
    });
    let key = format!(
        "{}:{}:{merge_id}:{recipient}",
        Kind::CoeMerged.name(),
        row.id
    );
    outbox::notify(conn, env.emails, Kind::CoeMerged, key, recipient, data, now)
}

/// Tells an action's owner that the COE's reviewer (`actor`) verified it, or did not
/// (`reason`): each verdict its own email (`verdict_id`).
pub fn action_verification(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionFacts<'_>,
    actor: &str,
    reason: Option<&str>,
    verdict_id: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let links = Links::new(&env.settings.public_url);
    let data = json!(ActionVerification {
        recipient_name: String::new(),
        actor: actor.to_owned(),
        action: action.line(&links),
        verified: reason.is_none(),
        reason: reason.unwrap_or_default().to_owned(),
    });
    let key = format!(
        "{}:{}:{verdict_id}",
        Kind::ActionVerification.name(),
        action.id
    );
    outbox::notify(
        conn,
        env.emails,
        Kind::ActionVerification,
        key,
        action.owner,
        data,
        now,
    )
}

/// A request to accept an action's risk (`acceptance`), told to `to`: those who
/// decide when it is asked, the action's owner once decided. One email per step and
/// recipient.
pub fn risk_acceptance(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionFacts<'_>,
    acceptance: &crate::db::models::RiskAcceptanceRow,
    to: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let links = Links::new(&env.settings.public_url);
    let data = json!(crate::email::content::RiskAcceptance {
        recipient_name: String::new(),
        action: action.line(&links),
        step: acceptance.state.clone(),
        asked_by: acceptance.asked_by.clone(),
        until: acceptance.until_date.to_string(),
        interim_control: acceptance.interim_control.clone(),
        remaining_risk: acceptance.remaining_risk.clone(),
        decided_by: acceptance.decided_by.clone().unwrap_or_default(),
        note: acceptance.decision_note.clone().unwrap_or_default(),
    });
    let key = format!(
        "{}:{}:{}:{to}",
        Kind::RiskAcceptance.name(),
        acceptance.id,
        acceptance.state
    );
    outbox::notify(conn, env.emails, Kind::RiskAcceptance, key, to, data, now)
}

/// A re-check of an action's fix by a drill, told to `to`: the owner when it opens
/// (run the drill) and when its alarm proved it, the COE's reviewer when it was missed
/// (confirm or reopen). One email per step and recipient.
pub fn drill_recheck(
    conn: &mut DbConnection,
    env: Env<'_>,
    action: &ActionFacts<'_>,
    recheck: &crate::db::models::DrillRecheckRow,
    to: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    use crate::domain::drill;
    let links = Links::new(&env.settings.public_url);
    let labels: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&recheck.labels).unwrap_or_default();
    let data = json!(crate::email::content::DrillRecheck {
        recipient_name: String::new(),
        action: action.line(&links),
        step: recheck.state.clone(),
        labels: drill::labels_words(&labels),
        mark: drill::MARK.to_owned(),
        due: recheck.last_day.to_string(),
        fired_at: recheck
            .fired_at
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default(),
        detected: recheck
            .detected_seconds
            .map(drill::span_words)
            .unwrap_or_default(),
        note: recheck.note.clone().unwrap_or_default(),
        decided_by: recheck.decided_by.clone().unwrap_or_default(),
    });
    let key = format!(
        "{}:{}:{}:{to}",
        Kind::DrillRecheck.name(),
        recheck.id,
        recheck.state
    );
    outbox::notify(conn, env.emails, Kind::DrillRecheck, key, to, data, now)
}

/// Asks the owner of action `action_id`, whose ticket (`tracker` label, key, status)
/// was closed in the tracker, for the evidence (done) or the reason (`wont_do`).
pub fn ticket_closed(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    (tracker, key, status): (&str, &str, &str),
    wont_do: bool,
    now: NaiveDateTime,
) -> QueryResult<()> {
    use crate::db::schema::{corrective_actions, tickets};
    let (title, owner, due, coe_id, coe_title, url): (
        String,
        String,
        chrono::NaiveDate,
        String,
        String,
        Option<String>,
    ) = corrective_actions::table
        .inner_join(crate::db::schema::coes::table)
        .inner_join(tickets::table)
        .filter(corrective_actions::id.eq(action_id))
        .select((
            corrective_actions::title,
            corrective_actions::owner_email,
            corrective_actions::due_date,
            crate::db::schema::coes::id,
            crate::db::schema::coes::title,
            tickets::url,
        ))
        .first(conn)?;
    let links = Links::new(&env.settings.public_url);
    let data = json!(TicketClosed {
        recipient_name: String::new(),
        action: ActionLine {
            action_id: action_id.to_owned(),
            title,
            coe_id,
            coe_title,
            owner: owner.clone(),
            owner_name: String::new(),
            due_date: due.to_string(),
            days_overdue: 0,
            days_until_due: 0,
            link: links.action(action_id),
            newly_escalated: false,
        },
        tracker: tracker.to_owned(),
        ticket: key.to_owned(),
        ticket_url: url.unwrap_or_default(),
        status: status.to_owned(),
        wont_do,
    });
    let wants = if wont_do { "reason" } else { "evidence" };
    let dedup = format!("{}:{action_id}:{wants}:{now}", Kind::TicketClosed.name());
    outbox::notify(
        conn,
        env.emails,
        Kind::TicketClosed,
        dedup,
        &owner,
        data,
        now,
    )
}

/// One action done before its outage came back, for `action_recurred`.
pub struct DoneAction<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub kind: &'a str,
    pub owner: &'a str,
    pub done_at: Option<NaiveDateTime>,
}

/// Tells `recipient` (the earlier COE `row`'s owner or reviewer) that its outage came
/// back as COE `recurrence` (id, title) at `started`, after `actions` were done; once
/// per recurrence (`incident_id`).
#[allow(clippy::too_many_arguments)]
pub fn action_recurred(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    recurrence: (&str, &str),
    (incident_id, started): (&str, NaiveDateTime),
    actions: &[DoneAction<'_>],
    recipient: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    let links = Links::new(&env.settings.public_url);
    let tz = env.settings.org_timezone();
    let coe = coe_line(env, &CoeFacts::of(row, &severity));
    let data = json!(ActionRecurred {
        recipient_name: String::new(),
        recurrence: CoeLine {
            coe_id: recurrence.0.to_owned(),
            title: recurrence.1.to_owned(),
            link: links.coe(recurrence.0),
            deadline: String::new(),
            days: 0,
            ..coe.clone()
        },
        coe,
        started: local_date(started, tz).to_string(),
        actions: actions
            .iter()
            .map(|a| RecurredLine {
                title: a.title.to_owned(),
                kind: a.kind.to_owned(),
                owner: a.owner.to_owned(),
                done_on: a
                    .done_at
                    .map(|t| local_date(t, tz).to_string())
                    .unwrap_or_default(),
                link: links.action(a.id),
            })
            .collect(),
    });
    let key = format!(
        "{}:{}:{incident_id}:{recipient}",
        Kind::ActionRecurred.name(),
        row.id
    );
    outbox::notify(
        conn,
        env.emails,
        Kind::ActionRecurred,
        key,
        recipient,
        data,
        now,
    )
}

/// An owner's or reviewer's assignment email (`replaced_by`: the reviewer who took
/// the recipient's place), unless the recipient did it themselves.
#[allow(clippy::too_many_arguments)]
fn assignment(
    conn: &mut DbConnection,
    env: Env<'_>,
    row: &CoeRow,
    recipient: &str,
    as_reviewer: bool,
    replaced_by: Option<String>,
    actor: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if recipient == actor {
        return Ok(());
    }
    let role = match (&replaced_by, as_reviewer) {
        (Some(_), _) => "replaced",
        (None, true) => "reviewer",
        (None, false) => "owner",
    };
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    let data = json!(CoeAssigned {
        recipient_name: String::new(),
        actor: actor.to_owned(),
        coe: coe_line(env, &CoeFacts::of(row, &severity)),
        as_reviewer,
        writeup_days: env.settings.coe.writeup_days,
        replaced_by,
    });
    let key = format!(
        "{}:{}:{role}:{recipient}:{}",
        Kind::CoeAssigned.name(),
        row.id,
        crate::db::new_id()
    );
    outbox::notify(
        conn,
        env.emails,
        Kind::CoeAssigned,
        key,
        recipient,
        data,
        now,
    )
}
