//! The fields of a provisioned person that the identity provider sets, and the
//! refusal of a manual edit of them (provisioning by SCIM).

use diesel::prelude::*;

use super::{clean, PersonInput};
use crate::db::schema::people;
use crate::db::DbConnection;

/// Why `input` may not be stored for `email`: the identity provider provisions them
/// and it changes a field the provider sets (their name and time zone when it sends
/// them, their manager when it sends one, their team when `scim.team_groups` makes
/// groups teams). The field and the problem.
pub(super) fn set_by_provider(
    conn: &mut DbConnection,
    email: &str,
    input: &PersonInput,
    teams_from_groups: bool,
) -> QueryResult<Option<(String, String)>> {
    #[derive(Queryable, Selectable)]
    #[diesel(table_name = people)]
    struct Managed {
        name: Option<String>,
        team: Option<String>,
        manager_email: Option<String>,
        timezone: Option<String>,
        scim_id: Option<String>,
        scim_doc: Option<String>,
        scim_manager_ref: Option<String>,
    }
    let found: Option<Managed> = people::table
        .find(email)
        .select(Managed::as_select())
        .first(conn)
        .optional()?;
    let Some(m) = found.filter(|m| m.scim_id.is_some()) else {
        return Ok(None);
    };
    let doc = m.scim_doc.unwrap_or_default();
    let sends = |attr: &str| doc.contains(&format!("\"{attr}\""));
    let manager = input.manager_email.as_ref().map(|e| e.as_str().to_owned());
    let changed = [
        (
            "name",
            (sends("displayName") || sends("name")) && clean(&input.name) != m.name,
        ),
        ("team", teams_from_groups && clean(&input.team) != m.team),
        (
            "manager_email",
            m.scim_manager_ref.is_some() && manager != m.manager_email,
        ),
        (
            "timezone",
            sends("timezone") && clean(&input.timezone) != m.timezone,
        ),
    ]
    .into_iter()
    .find(|(_, changed)| *changed);
    Ok(changed.map(|(field, _)| {
        (
            field.to_owned(),
            format!(
                "{email} is provisioned by the identity provider (SCIM), which sets their \
                 {}: change it there, and coe follows",
                field.replace('_', " ")
            ),
        )
    }))
}
