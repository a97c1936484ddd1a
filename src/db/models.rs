//! Rows as diesel reads and writes them. Domain types are built from these in `services`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::api_tokens;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub role: String,
    pub person_email: Option<String>,
    pub token_hash: String,
    pub created_at: NaiveDateTime,
    pub last_used_at: Option<NaiveDateTime>,
    pub revoked_at: Option<NaiveDateTime>,
    /// Who made it (see the migration `token_creators`); `None` from the command line.
    pub created_by: Option<String>,
}

use super::schema::{failure_events, incident_alerts, incidents, webhook_deliveries};

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = incidents, treat_none_as_null = true)]
pub struct IncidentRow {
    pub id: String,
    #[diesel(skip_update)]
    pub group_key: String,
    #[diesel(skip_update)]
    pub group_hash: Vec<u8>,
    /// The group's name: the id of its first incident (`incident_groups`).
    #[diesel(skip_update)]
    pub group_id: String,
    pub source: String,
    pub title: String,
    pub service: Option<String>,
    pub severity: i32,
    pub state: String,
    pub started_at: NaiveDateTime,
    pub detected_at: NaiveDateTime,
    pub acknowledged_at: Option<NaiveDateTime>,
    pub resolved_at: Option<NaiveDateTime>,
    pub reopened_count: i32,
    pub event_count: i32,
    pub coe_required_at: Option<NaiveDateTime>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    /// The largest share of an SLO's error budget its events said they burned.
    pub budget_burned: Option<f64>,
    /// That SLO's name.
    pub slo: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = incident_alerts)]
pub struct IncidentAlertRow {
    pub incident_id: String,
    pub dedup_key: String,
    pub status: String,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries)]
pub struct DeliveryRow {
    pub id: String,
    pub source: String,
    pub delivery_key: Option<String>,
    pub content_type: Option<String>,
    pub body: String,
    pub received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = failure_events)]
pub struct FailureEventRow {
    pub id: String,
    pub delivery_id: String,
    pub incident_id: String,
    pub source: String,
    pub dedup_key: String,
    pub group_key: String,
    pub occurrence_key: String,
    pub occurrence_hash: Vec<u8>,
    pub kind: String,
    pub status: String,
    pub title: String,
    pub service: Option<String>,
    pub severity: i32,
    pub started_at: NaiveDateTime,
    pub ended_at: Option<NaiveDateTime>,
    pub description: Option<String>,
    pub labels: String,
    pub annotations: String,
    pub links: String,
    pub received_at: NaiveDateTime,
}

use super::schema::{audit_log, coe_sections, coes, related_items, timeline_entries, why_chains};

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = coes, treat_none_as_null = true)]
pub struct CoeRow {
    pub id: String,
    pub incident_id: Option<String>,
    pub title: String,
    pub service: Option<String>,
    pub severity: i32,
    pub state: String,
    pub owner_email: Option<String>,
    pub reviewer_email: Option<String>,
    pub template: String,
    pub template_name: String,
    pub template_version: i32,
    pub started_at: Option<NaiveDateTime>,
    pub detected_at: Option<NaiveDateTime>,
    pub mitigated_at: Option<NaiveDateTime>,
    pub resolved_at: Option<NaiveDateTime>,
    pub links: String,
    pub version: i32,
    pub created_by: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    /// Who submitted the review round under way (a person's email or `token:NAME`).
    pub submitted_by: Option<String>,
    /// Who named the current reviewer.
    pub reviewer_named_by: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = coe_sections)]
pub struct SectionRow {
    pub coe_id: String,
    pub key: String,
    pub body: String,
    pub updated_by: String,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = timeline_entries, treat_none_as_null = true)]
pub struct TimelineRow {
    pub id: String,
    pub coe_id: String,
    pub at: NaiveDateTime,
    pub kind: String,
    pub text: String,
    pub source: Option<String>,
    pub event_id: Option<String>,
    pub created_at: NaiveDateTime,
    /// The alert and kind whose events this entry counts; `None` once a person wrote it.
    pub alert_key: Option<String>,
    pub alert_name: Option<String>,
    pub occurrences: i32,
    pub hosts: i32,
    pub last_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = why_chains)]
pub struct WhyChainRow {
    pub id: String,
    pub coe_id: String,
    pub position: i32,
    pub steps: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    /// The contributing factor the chain ends in (one of the template's).
    pub factor: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = related_items)]
pub struct RelatedRow {
    pub id: String,
    pub coe_id: String,
    pub kind: String,
    pub title: Option<String>,
    pub url: Option<String>,
    pub related_coe_id: Option<String>,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_log)]
pub struct AuditRow {
    pub id: String,
    pub entity: String,
    pub entity_id: String,
    pub coe_id: Option<String>,
    pub actor: String,
    pub action: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub at: NaiveDateTime,
    /// The chat it was done from (`slack`, `teams`, `matrix`); none from coe's pages or API.
    pub via: Option<String>,
}

use super::schema::{corrective_actions, due_date_changes, people, review_comments};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = people)]
pub struct PersonRow {
    pub email: String,
    pub name: Option<String>,
    pub team: Option<String>,
    pub manager_email: Option<String>,
    pub timezone: Option<String>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub feed_token_hash: Option<String>,
    pub is_admin: bool,
    /// Reviews the worst outages' COEs from outside their owner's team.
    pub bar_raiser: bool,
    /// The SCIM resource's id when the identity provider provisions them.
    pub scim_id: Option<String>,
    /// Still works here (false: they left, at `left_at`).
    pub active: bool,
    pub left_at: Option<NaiveDateTime>,
    /// The manager the identity provider names (an id, an externalId or an address),
    /// kept even when it names nobody in the directory.
    pub scim_manager_ref: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = corrective_actions, treat_none_as_null = true)]
pub struct ActionRow {
    pub id: String,
    pub coe_id: String,
    pub title: String,
    pub description: Option<String>,
    pub owner_email: String,
    pub due_date: chrono::NaiveDate,
    pub priority: String,
    pub kind: String,
    pub success_criteria: Option<String>,
    pub external_url: Option<String>,
    pub state: String,
    pub resolution_note: Option<String>,
    pub evidence_url: Option<String>,
    pub wont_do_reason: Option<String>,
    pub due_date_change_count: i32,
    pub created_by: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub closed_at: Option<NaiveDateTime>,
    /// For COEs at or above `coe.verify_actions_from`: when the COE's reviewer
    /// verified it done, and who.
    pub verified_at: Option<NaiveDateTime>,
    pub verified_by: Option<String>,
    /// Whose it was before it passed on, when its owner left, and when.
    pub handed_over_from: Option<String>,
    pub handed_over_at: Option<NaiveDateTime>,
    /// The day it is to close by (`[[actions.targets]]`), when a target applied.
    pub target_date: Option<chrono::NaiveDate>,
    /// Why its due date was chosen past that day.
    pub past_target_reason: Option<String>,
    /// The day its risk is accepted until (`risk_acceptances`), when it was.
    pub risk_accepted_until: Option<chrono::NaiveDate>,
}

/// A request to accept an action's risk until a day, and its decision.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = crate::db::schema::risk_acceptances)]
pub struct RiskAcceptanceRow {
    pub id: String,
    pub action_id: String,
    pub asked_by: String,
    pub asked_at: NaiveDateTime,
    pub until_date: chrono::NaiveDate,
    pub interim_control: String,
    pub remaining_risk: String,
    pub due_before: chrono::NaiveDate,
    pub state: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<NaiveDateTime>,
    pub decision_note: Option<String>,
}

/// The alert that proves an action (`domain::drill`): the labels an event must carry.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = crate::db::schema::drill_alarms)]
pub struct DrillAlarmRow {
    pub action_id: String,
    /// A JSON object of label names to values.
    pub labels: String,
    pub set_by: String,
    pub set_at: NaiveDateTime,
}

/// A re-check of an action's fix by a drill, and how it ended.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = crate::db::schema::drill_rechecks)]
pub struct DrillRecheckRow {
    pub id: String,
    pub action_id: String,
    pub labels: String,
    pub opened_by: Option<String>,
    pub opened_at: NaiveDateTime,
    pub last_day: chrono::NaiveDate,
    pub state: String,
    pub event_id: Option<String>,
    pub fired_at: Option<NaiveDateTime>,
    pub detected_seconds: Option<i64>,
    pub decided_by: Option<String>,
    pub decided_at: Option<NaiveDateTime>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = due_date_changes)]
pub struct DueDateChangeRow {
    pub id: String,
    pub action_id: String,
    pub from_date: chrono::NaiveDate,
    pub to_date: chrono::NaiveDate,
    pub reason: String,
    pub changed_by: String,
    pub changed_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = review_comments)]
pub struct ReviewCommentRow {
    pub id: String,
    pub coe_id: String,
    pub author: String,
    pub verdict: String,
    pub body: String,
    pub created_at: NaiveDateTime,
}

use super::schema::outbox_emails;

/// An email in the outbox. Its `Debug` leaves out its secrets and bodies.
#[derive(Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = outbox_emails)]
pub struct OutboxRow {
    pub id: String,
    pub kind: String,
    pub dedup_key: String,
    pub recipient: String,
    pub recipient_name: Option<String>,
    pub subject: String,
    pub body_text: String,
    pub body_html: String,
    pub state: String,
    pub attempts: i32,
    pub next_attempt_at: NaiveDateTime,
    pub lease_until: Option<NaiveDateTime>,
    pub last_error: Option<String>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub sent_at: Option<NaiveDateTime>,
    /// The replica that claimed it while `sending` (`server.replica_name`).
    pub claimed_by: Option<String>,
    /// The token of its `List-Unsubscribe` link (reminders and digests), until it is
    /// sent or dropped. Never shown.
    pub unsubscribe_token: Option<String>,
    /// The link only its recipient may see (a sign-in link), put in place of
    /// `outbox::PRIVATE_LINK` when the message is built, until it is sent or dropped.
    /// Never shown.
    pub private_link: Option<String>,
    /// The iCalendar part it carries (`text/calendar`: a review meeting's invitation,
    /// update or cancellation).
    pub calendar: Option<String>,
}

impl std::fmt::Debug for OutboxRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxRow")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("recipient", &self.recipient)
            .field("state", &self.state)
            .field("attempts", &self.attempts)
            .field("lease_until", &self.lease_until)
            .field("claimed_by", &self.claimed_by)
            .finish_non_exhaustive()
    }
}
