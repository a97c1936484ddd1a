//! Who may change what: the one home of the checks on the caller. Each rule is called
//! by the service inside the write transaction that makes the change, so the answer
//! holds for the change itself; the pages ask the same rules to show their buttons.
//! A leaf: the rules that read the database read only what they decide on, the others
//! take the facts as arguments.
//!
//! - A COE: its owner, its reviewer, and admins; a COE nobody owns yet, any member
//!   (someone has to take it).
//! - A corrective action: its owner, and whoever may change its COE; its deletion:
//!   the COE's owner and admins; its verification: the COE's reviewer, as themselves,
//!   never its owner or the person who completed it.
//! - Comments on a COE's sections: its reviewer or bar raiser, as themselves.
//! - The directory: an admin writes anyone's entry; a member only their own name and
//!   time zone (`directory_entry`, `own_entry_change`).

use diesel::prelude::*;

use crate::db::schema::{coes, corrective_actions};
use crate::db::DbConnection;

/// The person (or token) asking for a change.
#[derive(Debug, Clone, Copy)]
pub struct Editor<'a> {
    /// How the change is recorded in the audit log.
    pub actor: &'a str,
    /// The person's email, when the token names one.
    pub email: Option<&'a str>,
    /// Who answers for the change in the review (naming a reviewer, submitting,
    /// deciding): the signed-in person, the person of a token of their own, or
    /// whoever made a token for someone else (`tokens::Caller::principal`).
    pub principal: &'a str,
    /// Admins may change anything.
    pub is_admin: bool,
}

/// An `Editor` that owns what it names, to move into the closure that runs the change
/// on a pooled connection: a token's caller (`tokens::Caller::acting`) and a signed-in
/// person (`auth::SessionPerson::acting`) each become one, and nothing else builds an
/// `Editor` by hand.
#[derive(Debug, Clone)]
pub struct Acting {
    pub actor: String,
    pub email: Option<String>,
    pub principal: String,
    pub is_admin: bool,
}

impl<'a> Editor<'a> {
    /// The person acting as themselves: the email, when they also answer for the
    /// change (not a token an admin made for them, which answers as the admin).
    pub fn person(&self) -> Option<&'a str> {
        self.email.filter(|e| *e == self.principal)
    }

    /// Whether `email` is this caller: the person a token names or the one it was made
    /// by (`domain::email::same_person`). Nobody names themselves a COE's reviewer or
    /// bar raiser: the edits of a COE and the review ask this.
    pub fn is_same_person(&self, email: &str, dotless: &[String]) -> bool {
        crate::domain::email::same_person(email, self.principal, dotless)
            || crate::domain::email::same_person_opt(Some(email), self.email, dotless)
    }

    /// The same caller, owning what it names: to carry the check from a read to the
    /// write that must ask it again (`actions::add`).
    pub fn to_acting(&self) -> Acting {
        Acting {
            actor: self.actor.to_owned(),
            email: self.email.map(str::to_owned),
            principal: self.principal.to_owned(),
            is_admin: self.is_admin,
        }
    }

    /// Whether a person answers for the change: a token that stands for nobody (an
    /// integration's) may not submit a COE or name its reviewer, which someone must
    /// be held to.
    pub fn is_person(&self) -> bool {
        self.principal.contains('@')
    }
}

impl Acting {
    /// An issue tracker (`tracker:NAME`) moving an action it holds the ticket of:
    /// it stands for nobody, and may move any action it was given.
    pub fn tracker(actor: &str) -> Acting {
        Acting {
            actor: actor.to_owned(),
            email: None,
            principal: actor.to_owned(),
            is_admin: true,
        }
    }

    /// A person acting as themselves (signed in to the pages; the demo's people).
    pub fn person(email: &str, is_admin: bool) -> Acting {
        Acting {
            actor: email.to_owned(),
            email: Some(email.to_owned()),
            principal: email.to_owned(),
            is_admin,
        }
    }

    pub fn editor(&self) -> Editor<'_> {
        Editor {
            actor: &self.actor,
            email: self.email.as_deref(),
            principal: &self.principal,
            is_admin: self.is_admin,
        }
    }
}

/// Why a change is refused.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("no such {0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// Whether `who` may change COE `coe_id`.
pub fn coe(conn: &mut DbConnection, coe_id: &str, who: &Editor<'_>) -> Result<(), AccessError> {
    let (owner, reviewer): (Option<String>, Option<String>) = coes::table
        .find(coe_id)
        .select((coes::owner_email, coes::reviewer_email))
        .first(conn)
        .optional()?
        .ok_or_else(|| AccessError::NotFound(coe_id.to_owned()))?;
    if who.is_admin || owner.is_none() {
        return Ok(());
    }
    let allowed = who
        .email
        .is_some_and(|e| Some(e) == owner.as_deref() || Some(e) == reviewer.as_deref());
    if allowed {
        return Ok(());
    }
    Err(AccessError::Forbidden(format!(
        "only the COE's owner ({}) or reviewer ({}) may change it",
        owner.as_deref().unwrap_or("none"),
        reviewer.as_deref().unwrap_or("none")
    )))
}

/// Whether `who` may read an incident channel into COE `coe_id` ("Import from
/// chat"), and name a conversation other than the channel's own: what a chat token
/// reads is more than the COE, so an unowned COE is no open door here (only its
/// owner, its reviewer or an admin), and only an admin points the token elsewhere.
pub fn read_chat(
    conn: &mut DbConnection,
    coe_id: &str,
    who: &Editor<'_>,
    elsewhere: bool,
) -> Result<(), AccessError> {
    let (owner, reviewer): (Option<String>, Option<String>) = coes::table
        .find(coe_id)
        .select((coes::owner_email, coes::reviewer_email))
        .first(conn)
        .optional()?
        .ok_or_else(|| AccessError::NotFound(coe_id.to_owned()))?;
    if who.is_admin {
        return Ok(());
    }
    let named = who
        .email
        .is_some_and(|e| owner.as_deref() == Some(e) || reviewer.as_deref() == Some(e));
    if !named {
        return Err(AccessError::Forbidden(
            "only the COE's owner, its reviewer or an admin may read a chat channel into it".into(),
        ));
    }
    if elsewhere {
        return Err(AccessError::Forbidden(
            "only an admin may read another room or channel than the one the settings give".into(),
        ));
    }
    Ok(())
}

/// Whether `who` may read into a COE beyond what the COE allows: channels outside its
/// team and service, and windows far from its incidents (an admin).
pub fn reads_chat_beyond_the_coe(who: &Editor<'_>) -> bool {
    who.is_admin
}

/// Whether `who` may read `channel` into a COE of `team` and `service`: a channel
/// limited to teams or services serves their COEs only, an organisation-wide one
/// every COE (`ChannelSettings::serves`); an admin reads any. Without this, whoever
/// owns a draft would read every channel coe's tokens can read.
pub fn read_chat_channel(
    who: &Editor<'_>,
    channel: &crate::config::ChannelSettings,
    team: Option<&str>,
    service: Option<&str>,
) -> Result<(), AccessError> {
    if reads_chat_beyond_the_coe(who) || channel.serves(team, service) {
        return Ok(());
    }
    let whose: Vec<String> = [("team", &channel.teams), ("service", &channel.services)]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("{what} {}", names.join(", ")))
        .collect();
    Err(AccessError::Forbidden(format!(
        "{} is a channel of {} only, and this COE is of team {} and service {}: only an admin \
         reads it into this COE",
        channel.name,
        whose.join(" and "),
        team.unwrap_or("none"),
        service.unwrap_or("none"),
    )))
}

/// Whether `who` may change corrective action `action_id`.
pub fn action(
    conn: &mut DbConnection,
    action_id: &str,
    who: &Editor<'_>,
) -> Result<(), AccessError> {
    let (owner, coe_id): (String, String) = corrective_actions::table
        .find(action_id)
        .select((corrective_actions::owner_email, corrective_actions::coe_id))
        .first(conn)
        .optional()?
        .ok_or_else(|| AccessError::NotFound(action_id.to_owned()))?;
    if who.is_admin || who.email == Some(owner.as_str()) {
        return Ok(());
    }
    coe(conn, &coe_id, who).map_err(|e| match e {
        AccessError::Forbidden(m) => AccessError::Forbidden(format!(
            "only the action's owner ({owner}) or {}",
            m.trim_start_matches("only ")
        )),
        other => other,
    })
}

/// Those of `deciders` (the owner's manager, the COE's bar raiser) who may decide on a
/// request `asked_by` made about an action `owner` owns: not the owner, not the asker
/// (a manager who asked, a bar raiser who owns the action). None left: an admin
/// decides.
pub fn risk_deciders(
    deciders: &[String],
    owner: &str,
    asked_by: &str,
    dotless_domains: &[String],
) -> Vec<String> {
    deciders
        .iter()
        .filter(|d| {
            !crate::domain::email::same_person(d, owner, dotless_domains)
                && !crate::domain::email::same_person(d, asked_by, dotless_domains)
        })
        .cloned()
        .collect()
}

/// Who decides a request to accept an action's risk: the owner's manager or the COE's
/// bar raiser, as themselves; an admin only when the action has neither. Never the
/// action's owner or whoever asked (under any spelling of their address). The person
/// deciding, or why not.
pub fn decide_risk<'a>(
    who: &Editor<'a>,
    deciders: &[String],
    owner: &str,
    asked_by: &str,
    dotless_domains: &[String],
) -> Result<&'a str, AccessError> {
    let Some(by) = who.person() else {
        return Err(AccessError::Forbidden(
            "a person decides on accepting a risk, signed in or with a token of their own".into(),
        ));
    };
    let same = |other: &str| crate::domain::email::same_person(by, other, dotless_domains);
    if same(owner) || same(asked_by) {
        return Err(AccessError::Forbidden(format!(
            "{by} may not decide on accepting this risk: nobody accepts the risk of their own \
             action or request; the owner's manager or the COE's bar raiser decides"
        )));
    }
    let deciders = risk_deciders(deciders, owner, asked_by, dotless_domains);
    let named = deciders.iter().any(|d| same(d));
    if named || (deciders.is_empty() && who.is_admin) {
        return Ok(by);
    }
    Err(AccessError::Forbidden(if deciders.is_empty() {
        "the owner has no manager in the directory and the COE no bar raiser: an admin decides"
            .to_owned()
    } else {
        format!(
            "only the owner's manager or the COE's bar raiser ({}) decides on accepting this risk",
            deciders.join(", ")
        )
    }))
}

/// Who decides on a missed drill re-check of an action `owner` owns (completed by
/// `completed_by`): the COE's reviewer when they may verify it (not its owner or
/// completer), else the admins who may. Whom the sweep asks.
pub fn drill_deciders(
    reviewer: Option<&str>,
    admins: &[String],
    owner: &str,
    completed_by: Option<&str>,
    dotless_domains: &[String],
) -> Vec<String> {
    let may = |d: &str| {
        crate::domain::action::may_verify(d, owner, completed_by, dotless_domains).is_ok()
    };
    match reviewer.filter(|r| may(r)) {
        Some(reviewer) => vec![reviewer.to_owned()],
        None => admins.iter().filter(|a| may(a)).cloned().collect(),
    }
}

/// Whether `who` decides on a missed drill re-check (confirm the fix, or reopen the
/// action): the COE's reviewer as for a verification; an admin who is neither the
/// owner nor the completer only when the reviewer may not (none, or the owner or
/// completer themselves). The person deciding, or why not.
pub fn decide_drill<'a>(
    who: &Editor<'a>,
    reviewer: Option<&str>,
    owner: &str,
    completed_by: Option<&str>,
    dotless_domains: &[String],
) -> Result<&'a str, AccessError> {
    let may = |d: &str| {
        crate::domain::action::may_verify(d, owner, completed_by, dotless_domains).is_ok()
    };
    if reviewer.is_some_and(may) {
        return verify_action(who, reviewer, owner, completed_by, dotless_domains);
    }
    match who.person() {
        Some(by) if who.is_admin && may(by) => Ok(by),
        _ => Err(AccessError::Forbidden(format!(
            "the COE has no reviewer who may decide ({}): an admin who neither owns nor \
             completed the action decides, as themselves",
            reviewer.unwrap_or("none named")
        ))),
    }
}

/// Whether `who` may delete the actions of a COE owned by `coe_owner`: its owner, and
/// admins.
pub fn delete_actions(who: &Editor<'_>, coe_owner: Option<&str>) -> Result<(), AccessError> {
    let is_owner = coe_owner.is_some() && who.email == coe_owner;
    if who.is_admin || is_owner {
        return Ok(());
    }
    Err(AccessError::Forbidden(format!(
        "only the COE's owner ({}) may delete its actions",
        coe_owner.unwrap_or("nobody yet")
    )))
}

/// Whether `who` may verify (or send back) an action owned by `owner` and completed by
/// `completed_by`, of a COE reviewed by `reviewer`: the reviewer, signed in or with a
/// token of their own, who neither owns nor completed it (`domain::action::may_verify`).
/// The person who verifies.
pub fn verify_action<'a>(
    who: &Editor<'a>,
    reviewer: Option<&str>,
    owner: &str,
    completed_by: Option<&str>,
    dotless_domains: &[String],
) -> Result<&'a str, AccessError> {
    let by = who.person();
    let Some(by) = by.filter(|by| reviewer == Some(*by)) else {
        return Err(AccessError::Forbidden(format!(
            "only the COE's reviewer ({}), signed in or with a token of their own, \
             verifies its actions",
            reviewer.unwrap_or("nobody yet")
        )));
    };
    crate::domain::action::may_verify(by, owner, completed_by, dotless_domains).map_err(
        |rule| {
            AccessError::Forbidden(format!(
                "{by} may not verify this action: {rule}; another person checks it \
                 (an admin may name another reviewer)"
            ))
        },
    )?;
    Ok(by)
}

/// Whether `who` may comment on the sections of a COE in review reviewed by
/// `reviewer`, with bar raiser `bar_raiser`: either, as themselves. The person who
/// comments.
pub fn comment_on_sections<'a>(
    who: &Editor<'a>,
    reviewer: Option<&str>,
    bar_raiser: Option<&str>,
) -> Result<&'a str, AccessError> {
    match who.person() {
        Some(by) if reviewer == Some(by) || bar_raiser == Some(by) => Ok(by),
        _ => Err(AccessError::Forbidden(
            "only the COE's reviewer (or its bar raiser) comments on its sections during \
             the review"
                .into(),
        )),
    }
}

/// Whether `who` may approve or send back a change of an approved COE's summary for
/// customers that `proposer` wrote: the COE's reviewer, as themselves; when the
/// reviewer wrote it, an admin. Never the person who wrote it. The person who decides.
pub fn decide_summary_change<'a>(
    who: &Editor<'a>,
    reviewer: Option<&str>,
    proposer: &str,
) -> Result<&'a str, AccessError> {
    let by = who.person();
    let wrote_it = by.is_some_and(|b| b.eq_ignore_ascii_case(proposer));
    let as_reviewer = by.is_some() && by == reviewer;
    let reviewer_wrote_it = reviewer.is_some_and(|r| r.eq_ignore_ascii_case(proposer));
    match by {
        Some(by) if !wrote_it && (as_reviewer || (who.is_admin && reviewer_wrote_it)) => Ok(by),
        _ if wrote_it => Err(AccessError::Forbidden(
            "a change is approved by someone other than the person who wrote it".into(),
        )),
        _ => Err(AccessError::Forbidden(format!(
            "only the COE's reviewer ({}) approves a change of its summary for customers{}",
            reviewer.unwrap_or("none"),
            if reviewer_wrote_it {
                "; as they wrote it, an admin does"
            } else {
                ""
            }
        ))),
    }
}

/// An admin does not take their own standing away — their admin flag, their place
/// in the directory — another admin does, so that a slip never leaves the
/// organisation without the admin it had. `who`: the person acting (none for a token
/// that names nobody); `refusal` says what was refused.
pub fn not_from_oneself(who: Option<&str>, email: &str, refusal: &str) -> Result<(), AccessError> {
    match who {
        Some(who) if who.eq_ignore_ascii_case(email) => Err(AccessError::Forbidden(format!(
            "{refusal}; ask another admin"
        ))),
        _ => Ok(()),
    }
}

/// Whether `who` may answer a review comment `author` wrote: the COE's owner (or
/// whoever may change it) answers; the comment's author does not answer their own.
pub fn answer_comment(who: &Editor<'_>, author: &str) -> Result<(), AccessError> {
    match who.actor == author {
        true => Err(AccessError::Forbidden(
            "a comment is answered by whoever writes the COE, not by the one who made it".into(),
        )),
        false => Ok(()),
    }
}

/// What a caller may write of a person's entry in the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryAccess {
    /// An admin: anyone's, every field.
    Any,
    /// The person themselves: their name and time zone (`own_entry_change`).
    Own,
}

/// Whether a caller (`caller_email`, an admin or not) may `what` (e.g. "change") the
/// directory entry of `email`: the directory decides who may sign in and where
/// escalations go, so only admins write it; a member writes their own.
pub fn directory_entry(
    caller_email: Option<&str>,
    is_admin: bool,
    email: &str,
    refusal: &str,
) -> Result<EntryAccess, AccessError> {
    if is_admin {
        Ok(EntryAccess::Any)
    } else if caller_email == Some(email) {
        Ok(EntryAccess::Own)
    } else {
        Err(AccessError::Forbidden(refusal.to_owned()))
    }
}

/// The fields of a directory entry only an admin changes: a member's own change may
/// leave each as it is (`None` asked: kept), never change it.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdminFields<'a> {
    pub team: Option<&'a str>,
    pub manager_email: Option<&'a str>,
    pub bar_raiser: Option<bool>,
}

/// What a member asks of their own entry (`EntryAccess::Own`): an entry that exists
/// (`stored`; joining the directory is an admin's), and `asked` changing nothing an
/// admin decides.
pub fn own_entry_change(
    address: &str,
    stored: Option<AdminFields<'_>>,
    asked: AdminFields<'_>,
) -> Result<(), AccessError> {
    let Some(stored) = stored else {
        return Err(AccessError::Forbidden(format!(
            "{address} is not in the directory: only an admin may add a person"
        )));
    };
    for (field, asked, stored) in [
        ("team", asked.team, stored.team),
        ("manager_email", asked.manager_email, stored.manager_email),
    ] {
        if asked.is_some() && asked != stored {
            return Err(AccessError::Forbidden(format!(
                "field `{field}`: only an admin may change a person's team or manager"
            )));
        }
    }
    if asked.bar_raiser.is_some() && asked.bar_raiser != stored.bar_raiser {
        return Err(AccessError::Forbidden(
            "field `bar_raiser`: only an admin may make a person a bar raiser".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{decide_summary_change, Editor};

    fn person(email: &str, is_admin: bool) -> Editor<'_> {
        Editor {
            actor: email,
            email: Some(email),
            principal: email,
            is_admin,
        }
    }

    #[test]
    fn only_the_reviewer_approves_a_change_for_customers_and_never_its_writer() {
        let reviewer = Some("rev@example.com");
        let ok = |who: &Editor<'_>, proposer: &str| {
            decide_summary_change(who, reviewer, proposer).is_ok()
        };
        assert!(ok(&person("rev@example.com", false), "ana@example.com"));
        assert!(!ok(&person("ana@example.com", false), "ana@example.com"));
        assert!(!ok(&person("boss@example.com", true), "ana@example.com"));
        // The reviewer's own change: an admin's, never the reviewer's.
        assert!(!ok(&person("rev@example.com", true), "rev@example.com"));
        assert!(ok(&person("boss@example.com", true), "rev@example.com"));
        // A token made by the reviewer that names the owner answers as its maker.
        let token = Editor {
            actor: "token:ci",
            email: Some("ana@example.com"),
            principal: "rev@example.com",
            is_admin: false,
        };
        assert!(!ok(&token, "ana@example.com"));
    }
}

#[cfg(test)]
mod risk_tests {
    use super::*;

    fn editor<'a>(email: &'a str, is_admin: bool) -> Editor<'a> {
        Editor {
            actor: email,
            email: Some(email),
            principal: email,
            is_admin,
        }
    }

    #[test]
    fn a_risk_is_decided_by_the_manager_or_bar_raiser_and_by_an_admin_only_when_no_one_else_may() {
        let none: [String; 0] = [];
        let deciders = ["mgr@example.com".to_owned(), "br@example.com".to_owned()];
        let decide = |who: &Editor<'_>, deciders: &[String], asker: &str| {
            decide_risk(who, deciders, "dev@example.com", asker, &[]).is_ok()
        };
        assert!(decide(
            &editor("mgr@example.com", false),
            &deciders,
            "dev@example.com"
        ));
        assert!(decide(
            &editor("br@example.com", false),
            &deciders,
            "dev@example.com"
        ));
        // The owner, under another spelling, and whoever asked: never.
        assert!(!decide(
            &editor("dev+x@example.com", true),
            &deciders,
            "dev@example.com"
        ));
        assert!(!decide(
            &editor("mgr@example.com", false),
            &deciders,
            "mgr@example.com"
        ));
        // An admin, only when no one else may: no decider, or only the asker.
        assert!(!decide(
            &editor("admin@example.com", true),
            &deciders,
            "dev@example.com"
        ));
        assert!(decide(
            &editor("admin@example.com", true),
            &none,
            "dev@example.com"
        ));
        let only_asker = ["mgr@example.com".to_owned()];
        assert!(decide(
            &editor("admin@example.com", true),
            &only_asker,
            "mgr@example.com"
        ));
        assert!(!decide(
            &editor("someone@example.com", false),
            &none,
            "dev@example.com"
        ));
    }
}
