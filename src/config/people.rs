//! People from the identity provider: which SCIM groups are teams, and who takes over
//! the work of a person who left.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ScimSettings {
    /// The SCIM groups that are teams: a group's name, or a prefix ending in `*`
    /// (`"team-*"`: the group `team-payments` is the team `payments`). A person's team
    /// follows the team group they are in (the first by name if several); other
    /// groups are kept for the provider but mean nothing to coe. Empty: groups set no
    /// team, and teams stay as the directory has them.
    pub team_groups: Vec<String>,
    /// Who takes over the open work of a person who left (SCIM deactivation or
    /// deletion, or an admin's "left the company") when neither their manager nor
    /// their team's lead can: this address. Unset: the first admin by address.
    pub leavers_work_to: Option<String>,
    /// SCIM requests that may use the database at once; more wait for a turn (as long
    /// as for a pooled connection), then are answered `429` with `Retry-After`. Keeps a
    /// provider pushing or searching hard from taking the connections every other
    /// request needs: keep it below `database.pool_size`.
    pub requests_at_once: usize,
}

impl Default for ScimSettings {
    fn default() -> Self {
        ScimSettings {
            team_groups: Vec::new(),
            leavers_work_to: None,
            requests_at_once: 2,
        }
    }
}

impl ScimSettings {
    /// The team a SCIM group of this name is, if it is one.
    pub fn team_of_group(&self, group: &str) -> Option<String> {
        self.team_groups
            .iter()
            .find_map(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => group
                    .strip_prefix(prefix)
                    .filter(|rest| !rest.trim().is_empty())
                    .map(|rest| rest.trim().to_owned()),
                None => (pattern == group).then(|| group.to_owned()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_teams_by_name_or_prefix() {
        let s = ScimSettings {
            team_groups: vec!["team-*".into(), "SRE".into()],
            ..ScimSettings::default()
        };
        assert_eq!(s.team_of_group("team-payments"), Some("payments".into()));
        assert_eq!(s.team_of_group("SRE"), Some("SRE".into()));
        assert_eq!(s.team_of_group("team-"), None);
        assert_eq!(s.team_of_group("everyone"), None);
    }
}
