//! What a job needs from the database, read before the tracker is asked: the ticket
//! to change, or what a new ticket says and whom it goes to.

use diesel::prelude::*;
use serde_json::Value;

use super::Outcome;
use crate::db::schema::{coes, corrective_actions, tickets, tracker_jobs};
use crate::db::DbConnection;
use crate::services::coe::trackers::load_remote;
use crate::services::outbound::tickets::{marker, PENDING, SENDING};
use crate::services::Env;
use crate::trackers::{Failure, NewTicket, Remote};

/// What a job needs from the database, read before the tracker is asked.
pub(super) enum Plan {
    /// Make the ticket for `owner`, unless an earlier attempt did.
    Create { new: Box<NewTicket>, owner: String },
    /// Tell the ticket `remote` of a change.
    Change(Remote),
    /// Nothing to ask the tracker: what came of it is known.
    Known(Outcome),
}

/// Reads what job `what` of action `action_id` needs.
pub(super) fn plan(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    what: &str,
    detail: &Value,
) -> QueryResult<Plan> {
    if what == "create" {
        return create_plan(conn, env, action_id, detail);
    }
    if let Some(remote) = load_remote(conn, action_id)? {
        return Ok(Plan::Change(remote));
    }
    let making: i64 = tracker_jobs::table
        .filter(tracker_jobs::action_id.eq(action_id))
        .filter(tracker_jobs::what.eq("create"))
        .filter(tracker_jobs::state.eq_any([PENDING, SENDING]))
        .count()
        .get_result(conn)?;
    Ok(Plan::Known(if making > 0 {
        Outcome::Hold
    } else {
        Outcome::Failed(Failure::Refused(
            "the action has no ticket: it was never made".into(),
        ))
    }))
}

/// Reads what making action `action_id`'s ticket needs; nothing to ask when an
/// earlier attempt made it and recorded it.
fn create_plan(
    conn: &mut DbConnection,
    env: Env<'_>,
    action_id: &str,
    detail: &Value,
) -> QueryResult<Plan> {
    let settings = env.settings;
    type Row = (
        String,
        Option<String>,
        Option<String>,
        String,
        chrono::NaiveDate,
        String,
        String,
        String,
        Option<String>,
    );
    let found: Option<Row> = corrective_actions::table
        .inner_join(coes::table)
        .inner_join(tickets::table)
        .filter(corrective_actions::id.eq(action_id))
        .select((
            corrective_actions::title,
            corrective_actions::description,
            corrective_actions::success_criteria,
            corrective_actions::owner_email,
            corrective_actions::due_date,
            corrective_actions::priority,
            coes::id,
            tickets::place,
            tickets::ticket_key,
        ))
        .first(conn)
        .optional()?;
    let Some((title, description, criteria, owner, due, priority, coe_id, place, key)) = found
    else {
        return Ok(Plan::Known(Outcome::Failed(Failure::Refused(
            "the action or its ticket is gone".into(),
        ))));
    };
    if key.is_some() {
        return Ok(Plan::Known(Outcome::Done));
    }
    let public = settings.public_url.trim_end_matches('/');
    let mut paragraphs = vec![format!(
        "A corrective action from a COE, owned by {owner} and due {due}. coe keeps it in step \
         with this ticket: moving it to done here asks the owner for the evidence in coe."
    )];
    paragraphs.extend(description);
    if let Some(criteria) = criteria {
        paragraphs.push(format!("Done when: {criteria}"));
    }
    let new = NewTicket {
        place,
        issue_type: detail["issue_type"].as_str().unwrap_or("Task").to_owned(),
        title,
        paragraphs,
        links: vec![
            (
                "The action in coe".into(),
                format!("{public}/actions/{action_id}"),
            ),
            ("The COE".into(), format!("{public}/coes/{coe_id}")),
        ],
        due,
        priority,
        marker: marker(action_id),
    };
    Ok(Plan::Create {
        new: Box::new(new),
        owner,
    })
}
