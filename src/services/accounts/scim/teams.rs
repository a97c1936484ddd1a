//! A provisioned person's team follows the team group they are in
//! (`scim.team_groups`): the first such group by name, or none.

use std::collections::HashMap;

use diesel::prelude::*;

use super::Ctx;
use crate::db::schema::{people, scim_group_members, scim_groups};
use crate::db::DbConnection;

/// Sets the team of each User in `ids` from their groups (nothing when no groups are
/// teams: the directory's teams stay as they are). Read a few hundred at a time, two
/// queries each, whatever the group's size; only those whose team changes are written.
pub fn follow_groups(conn: &mut DbConnection, ctx: &Ctx, ids: &[String]) -> QueryResult<()> {
    if ctx.env.settings.scim.team_groups.is_empty() {
        return Ok(());
    }
    for chunk in ids.chunks(500) {
        let mut groups: HashMap<String, Vec<String>> = HashMap::new();
        let memberships: Vec<(String, String)> = scim_group_members::table
            .inner_join(scim_groups::table.on(scim_groups::id.eq(scim_group_members::group_id)))
            .filter(scim_group_members::member_id.eq_any(chunk))
            .select((scim_group_members::member_id, scim_groups::display_name))
            .load(conn)?;
        for (member, name) in memberships {
            groups.entry(member).or_default().push(name);
        }
        let people: Vec<(String, String, Option<String>)> = people::table
            .filter(people::scim_id.eq_any(chunk))
            .select((
                people::scim_id.assume_not_null(),
                people::email,
                people::team,
            ))
            .load(conn)?;
        for (id, email, before) in people {
            let mut names = groups.remove(&id).unwrap_or_default();
            names.sort();
            let team = names
                .iter()
                .find_map(|n| ctx.env.settings.scim.team_of_group(n));
            if before == team {
                continue;
            }
            crate::services::directory::people::team_changed(
                conn,
                &email,
                before,
                team.clone(),
                ctx.now,
            )?;
            diesel::update(people::table.find(&email))
                .set((people::team.eq(team), people::updated_at.eq(ctx.now)))
                .execute(conn)?;
        }
    }
    Ok(())
}
