//! What a sweep drops before it decides anything: what is kept no longer.

use chrono::Duration;

use super::SweepReport;
use crate::db::{self, DbConnection};
use crate::services::directory::notifications;
use crate::services::outbound::outbox;
use crate::services::Env;

/// The most pages (4 KiB each) a sweep gives back to the file system after pruning.
const GIVE_BACK_PAGES: u32 = 25_000;

/// Drops the keys of emails sent long ago (`reminders.keep_sent_days`), the raw
/// bodies of webhooks (`webhooks.keep_raw_days`), expired links, and the events past
/// `events.keep_days`; then gives freed pages back to the file system. Counted in
/// `report`.
pub(super) fn tidy(
    conn: &mut DbConnection,
    env: Env<'_>,
    report: &mut SweepReport,
) -> diesel::QueryResult<()> {
    let settings = env.settings;
    // Counted from the real now, not `at`: a sweep evaluated in the future must not
    // delete keys that today's sweeps still need.
    let keep = Duration::days(settings.reminders.keep_sent_days);
    report.purged = outbox::purge_sent(conn, db::now() - keep)?;
    let keep_raw = Duration::days(settings.webhooks.keep_raw_days);
    report.raw_bodies_purged =
        crate::services::intake::ingest::purge_raw_bodies(conn, db::now() - keep_raw)?;
    notifications::prune_links(conn, db::now())?;
    // Retention never stops the reminders: a failure is logged, the sweep goes on.
    match crate::services::incidents::retention::prune(conn, env, db::now()) {
        Ok(pruned) => report.pruned = pruned,
        Err(e) => {
            tracing::error!(error = %e, "dropping the events past events.keep_days failed; the reminders go on")
        }
    }
    if report.pruned.events > 0 || report.pruned.deliveries > 0 {
        report.pages_given_back = db::size::give_back(conn, GIVE_BACK_PAGES).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot give freed pages back to the file system");
            0
        });
    }
    Ok(())
}
