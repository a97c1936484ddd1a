//! A person's address changing (the identity provider's SCIM client sends a new
//! primary email): everything that names them by address follows, in the caller's
//! transaction — their work, their roles, their history, their settings.

use diesel::prelude::*;

use crate::db::schema::*;
use crate::db::DbConnection;

/// Moves every mention of `old` to `new`. The caller has checked that `new` is nobody
/// yet (no person has it).
pub fn rename(conn: &mut DbConnection, old: &str, new: &str) -> QueryResult<()> {
    macro_rules! follow {
        ($($table:ident . $column:ident),* $(,)?) => {$(
            diesel::update($table::table.filter($table::$column.eq(old)))
                .set($table::$column.eq(new))
                .execute(conn)?;
        )*};
    }
    follow!(
        people.email,
        people.manager_email,
        people.scim_manager_ref,
        api_tokens.person_email,
        api_tokens.created_by,
        incidents.reported_by,
        coes.owner_email,
        coes.reviewer_email,
        coes.created_by,
        coes.submitted_by,
        coes.reviewer_named_by,
        coes.bar_raiser_email,
        coes.approved_by,
        coes.owner_handed_over_from,
        coes.reviewer_handed_over_from,
        coe_sections.updated_by,
        audit_log.actor,
        corrective_actions.owner_email,
        corrective_actions.created_by,
        corrective_actions.verified_by,
        corrective_actions.handed_over_from,
        due_date_changes.changed_by,
        review_comments.author,
        notification_settings.email,
        unsubscribe_links.email,
        sessions.person_email,
        sign_in_links.email,
        sign_in_requests.email,
        coe_reads.person_email,
        kept_forms.person,
        form_keys.person,
        service_owners.owner_email,
        service_owners.reviewer_email,
        service_owners.updated_by,
        team_owners.owner_email,
        team_owners.updated_by,
        section_comments.author,
        section_comments.answered_by,
        coe_incidents.attached_by,
        team_changes.person_email,
        publications.published_by,
        publications.updated_by,
        publications.revoked_by,
        summary_changes.proposed_by,
        summary_changes.decided_by,
        risk_acceptances.asked_by,
        risk_acceptances.decided_by,
        drill_alarms.set_by,
        drill_rechecks.opened_by,
        drill_rechecks.decided_by,
    );
    // The owners' counts followed the actions (their triggers count both addresses):
    // the old address's row is left empty.
    diesel::delete(action_tally::table.filter(action_tally::owner_email.eq(old))).execute(conn)?;
    Ok(())
}
