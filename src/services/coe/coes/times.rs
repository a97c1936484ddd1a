//! The outage's own times checked against each other (`domain::assessment::time_findings`):
//! a start after the first alert, a resolution before the detection, are missing work
//! on the timeline, named in "Still missing before it can be submitted".

use diesel::prelude::*;

use crate::db::models::CoeRow;
use crate::db::schema::{coe_incidents, incidents};
use crate::db::DbConnection;
use crate::domain::assessment::{self, Assessment, OutageTimes};
use crate::domain::template::{SectionKind, Template};

/// Adds to `completeness` the times of `row` that contradict each other or its
/// incidents' first alert (on its timeline section; none when the template has none).
pub(super) fn check_times(
    conn: &mut DbConnection,
    row: &CoeRow,
    template: &Template,
    completeness: &mut Assessment,
) -> QueryResult<()> {
    let Some(section) = template
        .sections
        .iter()
        .find(|s| s.kind == SectionKind::Timeline)
    else {
        return Ok(());
    };
    let first_alert: Option<chrono::NaiveDateTime> = coe_incidents::table
        .inner_join(incidents::table)
        .filter(coe_incidents::coe_id.eq(&row.id))
        .select(diesel::dsl::min(incidents::started_at))
        .first(conn)?;
    let found = assessment::time_findings(
        &section.key,
        &OutageTimes {
            started: row.started_at,
            detected: row.detected_at,
            mitigated: row.mitigated_at,
            resolved: row.resolved_at,
            first_alert,
        },
    );
    if !found.is_empty() {
        completeness.missing.extend(found);
        completeness.complete = false;
    }
    Ok(())
}
