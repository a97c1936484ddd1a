//! A provisioned person's team follows the team group they are in
//! (`scim.team_groups`): the first such group by name, or none.

use diesel::prelude::*;

use super::Ctx;
use crate::db::schema::{people, scim_group_members, scim_groups};
use crate::db::DbConnection;

/// Sets the team of each User in `ids` from their groups (nothing when no groups are
/// teams: the directory's teams stay as they are).
pub fn follow_groups(conn: &mut DbConnection, ctx: &Ctx, ids: &[String]) -> QueryResult<()> {
    if ctx.env.settings.scim.team_groups.is_empty() {
        return Ok(());
    }
    for id in ids {
        let mut names: Vec<String> = scim_group_members::table
            .inner_join(scim_groups::table.on(scim_groups::id.eq(scim_group_members::group_id)))
            .filter(scim_group_members::member_id.eq(id))
            .select(scim_groups::display_name)
            .load(conn)?;
        names.sort();
        let team = names
            .iter()
            .find_map(|n| ctx.env.settings.scim.team_of_group(n));
        let before: Option<(String, Option<String>)> = people::table
            .filter(people::scim_id.eq(id))
            .select((people::email, people::team))
            .first(conn)
            .optional()?;
        let Some((email, before)) = before else {
            continue;
        };
        if before == team {
            continue;
        }
        crate::services::people::team_changed(conn, &email, before, team.clone(), ctx.now)?;
        diesel::update(people::table.find(&email))
            .set((people::team.eq(team), people::updated_at.eq(ctx.now)))
            .execute(conn)?;
    }
    Ok(())
}
