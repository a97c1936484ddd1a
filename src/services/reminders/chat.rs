//! What a sweep tells the chat channels besides the emails: the actions escalated for
//! the first time today, and on the digest's weekday the inspection's figures.

use chrono::Datelike;

use crate::db::{self, DbConnection};
use crate::domain::clock::Clock;
use crate::domain::reminder::{DueAction, EscalationDue};
use crate::services::figures::stats;
use crate::services::outbound::chat;
use crate::services::Env;

/// Tells the channels of `escalations` (those new today) and, on the digest's
/// weekday when one is due, of the week's figures.
pub(super) fn tell_the_channels(
    conn: &mut DbConnection,
    env: Env<'_>,
    clock: Clock,
    actions: &[DueAction],
    escalations: &[EscalationDue],
) -> diesel::QueryResult<()> {
    let settings = env.settings;
    let today = clock.now.with_timezone(&clock.tz).date_naive();
    // The channels hear of the actions escalated for the first time today.
    let escalated: Vec<chat::Escalated<'_>> = escalations
        .iter()
        .flat_map(|e| {
            e.new.iter().filter_map(|i| {
                actions.get(*i).map(|action| chat::Escalated {
                    action,
                    to: &e.recipient,
                })
            })
        })
        .collect();
    chat::escalations(conn, env, today, &escalated, db::now())?;
    if today.weekday() == settings.digest_weekday() && chat::inspection_due(conn, env, today)? {
        let figures = weekly_figures(conn, env, clock)?;
        chat::inspection_weekly(conn, env, &figures, today, db::now())?;
    }
    Ok(())
}

/// The week's figures as the channels' inspection notice says them.
fn weekly_figures(
    conn: &mut DbConnection,
    env: Env<'_>,
    clock: Clock,
) -> diesel::QueryResult<chat::WeeklyFigures> {
    let settings = env.settings;
    let stats = stats::stats(conn, clock, settings.coe.writeup_days)?;
    let closed = &stats.closed_last_30_days;
    Ok(chat::WeeklyFigures {
        open: stats.actions.open,
        overdue: stats.actions.overdue,
        by_team: stats
            .actions_by_team
            .iter()
            .map(|(team, f)| (team.clone(), (f.open, f.overdue)))
            .collect(),
        closed: (closed.on_time, closed.late, closed.wont_do),
        drafts_past_deadline: stats
            .drafts_past_deadline
            .iter()
            .map(|c| c.title.clone())
            .collect(),
        waiting_for_review: stats
            .waiting_for_review
            .iter()
            .map(|c| c.title.clone())
            .collect(),
    })
}
