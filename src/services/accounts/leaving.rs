//! A person leaving the organisation (the identity provider deactivates or deletes
//! them, or an admin says they left): they can no longer sign in or call the API,
//! nobody can name them owner, reviewer or bar raiser, and nothing of theirs is left
//! behind. Their open corrective actions, the COEs they own before approval and the
//! reviews they hold pass to their manager, else their team's lead, else
//! `scim.leavers_work_to`, else the first admin; each change has its audit record, the
//! item keeps whose it was ("was Chen's, left on …"), and the new holder gets one
//! email listing everything they received. Coming back (reactivated) undoes the mark
//! but not the handover.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::{json, Value};

use crate::db::schema::{api_tokens, coes, corrective_actions, people, sign_in_links};
use crate::db::DbConnection;
use crate::email::content::{ActionLine, CoeLine, Links, WorkHandedOver};
use crate::services::outbound::{self, ActionEvent, CoeEvent, Fact};
use crate::services::Env;

/// What passed to whom when a person left.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Handover {
    /// Who received it; `None` when nobody could (no manager, lead or admin).
    pub to: Option<String>,
    pub actions: usize,
    pub owned: usize,
    pub reviews: usize,
}

/// Marks `email` as having left at `now` (if they had not), ends their sessions,
/// revokes their tokens and hands their open work over. `by` names who said so (the
/// audit's actor). `None` when they had left already.
pub fn leave(
    conn: &mut DbConnection,
    env: Env<'_>,
    email: &str,
    now: NaiveDateTime,
    by: &str,
) -> QueryResult<Option<Handover>> {
    let marked = diesel::update(
        people::table
            .filter(people::email.eq(email))
            .filter(people::active.eq(true)),
    )
    .set((
        people::active.eq(false),
        people::left_at.eq(Some(now)),
        people::updated_at.eq(now),
    ))
    .execute(conn)?;
    crate::services::accounts::auth::end_all(conn, email, by)?;
    diesel::update(
        api_tokens::table
            .filter(api_tokens::person_email.eq(email))
            .filter(api_tokens::revoked_at.is_null()),
    )
    .set(api_tokens::revoked_at.eq(Some(now)))
    .execute(conn)?;
    // A sign-in link sent before they left is no use any more.
    diesel::delete(sign_in_links::table.filter(sign_in_links::email.eq(email))).execute(conn)?;
    if marked == 0 {
        return Ok(None);
    }
    let handover = hand_over(conn, env, email, now, by)?;
    tracing::info!(
        person = email,
        by,
        to = handover.to.as_deref().unwrap_or("nobody"),
        actions = handover.actions,
        coes_owned = handover.owned,
        reviews = handover.reviews,
        "a person left: their sessions and tokens ended, their open work passed on"
    );
    Ok(Some(handover))
}

/// Marks `email` as working here again (reactivated by the provider).
pub fn rejoin(conn: &mut DbConnection, email: &str, now: NaiveDateTime) -> QueryResult<bool> {
    let n = diesel::update(
        people::table
            .filter(people::email.eq(email))
            .filter(people::active.eq(false)),
    )
    .set((
        people::active.eq(true),
        people::left_at.eq(None::<NaiveDateTime>),
        people::updated_at.eq(now),
    ))
    .execute(conn)?;
    Ok(n > 0)
}

/// Who takes over `leaver`'s work: their manager, else their team's lead, else
/// `scim.leavers_work_to`, else the first admin — the first of these who still works
/// here and is not the leaver.
pub fn successor(
    conn: &mut DbConnection,
    env: Env<'_>,
    leaver: &str,
) -> QueryResult<Option<String>> {
    let (manager, team): (Option<String>, Option<String>) = people::table
        .find(leaver)
        .select((people::manager_email, people::team))
        .first(conn)
        .optional()?
        .unwrap_or_default();
    let lead = match &team {
        Some(team) => crate::services::directory::ownership::team_owner(conn, team)?,
        None => None,
    };
    let admin: Option<String> = people::table
        .filter(people::is_admin.eq(true))
        .filter(people::active.eq(true))
        .filter(people::email.ne(leaver))
        .order(people::email)
        .select(people::email)
        .first(conn)
        .optional()?;
    let chain = [
        manager,
        lead,
        env.settings.scim.leavers_work_to.clone(),
        admin,
    ];
    for candidate in chain.into_iter().flatten() {
        if candidate != leaver && crate::services::directory::people::works_here(conn, &candidate)?
        {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

const OPEN_ACTION: [&str; 2] = ["open", "in_progress"];
const BEFORE_APPROVAL: [&str; 2] = ["draft", "in_review"];

fn hand_over(
    conn: &mut DbConnection,
    env: Env<'_>,
    leaver: &str,
    now: NaiveDateTime,
    by: &str,
) -> QueryResult<Handover> {
    replace_bar_raiser(conn, env, leaver, now, by)?;
    let Some(to) = successor(conn, env, leaver)? else {
        tracing::warn!(
            person = leaver,
            "a person left and nobody can take over their work (no manager, team lead, \
             scim.leavers_work_to or admin): the board flags their actions"
        );
        return Ok(Handover::default());
    };
    let handing = Handing {
        env,
        leaver,
        to: &to,
        now,
        by,
        links: Links::new(&env.settings.public_url),
    };
    let action_lines = handing.actions(conn)?;
    let owned_lines = handing.owned(conn)?;
    let review_lines = handing.reviews(conn)?;
    let count = action_lines.len() + owned_lines.len() + review_lines.len();
    let handover = Handover {
        to: Some(to.clone()),
        actions: action_lines.len(),
        owned: owned_lines.len(),
        reviews: review_lines.len(),
    };
    if count > 0 {
        handing.tell(conn, action_lines, owned_lines, review_lines)?;
    }
    Ok(handover)
}

/// A leaver's work passing on: who left, who takes it over, and who said so when.
struct Handing<'a> {
    env: Env<'a>,
    leaver: &'a str,
    to: &'a str,
    now: NaiveDateTime,
    by: &'a str,
    links: Links,
}

impl Handing<'_> {
    /// A row of a COE's history, said by `by`.
    fn audit(
        &self,
        conn: &mut DbConnection,
        coe_id: &str,
        what: &str,
        before: Value,
        after: Value,
    ) -> QueryResult<()> {
        let edited = Fact::CoeEdited {
            coe_id,
            what,
            before: Some(before),
            after: Some(after),
        };
        outbound::noted(conn, self.by, edited, self.now)
    }

    /// A COE as the email to the new holder lists it.
    fn line(&self, id: &str, title: &str) -> CoeLine {
        CoeLine {
            coe_id: id.to_owned(),
            title: title.to_owned(),
            owner: String::new(),
            reviewer: String::new(),
            deadline: String::new(),
            days: 0,
            link: self.links.coe(id),
        }
    }

    /// Gives the leaver's open actions to the new holder, each marked as the
    /// leaver's before; lists them for the email.
    fn actions(&self, conn: &mut DbConnection) -> QueryResult<Vec<ActionLine>> {
        let Handing {
            env,
            leaver,
            to,
            now,
            by,
            ..
        } = *self;
        let actions: Vec<(String, String, String, chrono::NaiveDate)> = corrective_actions::table
            .filter(corrective_actions::owner_email.eq(leaver))
            .filter(corrective_actions::state.eq_any(OPEN_ACTION))
            .order((corrective_actions::due_date, corrective_actions::id))
            .select((
                corrective_actions::id,
                corrective_actions::coe_id,
                corrective_actions::title,
                corrective_actions::due_date,
            ))
            .load(conn)?;
        let mut action_lines = Vec::new();
        for (id, coe_id, title, due) in &actions {
            diesel::update(corrective_actions::table.find(id))
                .set((
                    corrective_actions::owner_email.eq(to),
                    corrective_actions::handed_over_from.eq(leaver),
                    corrective_actions::handed_over_at.eq(now),
                    corrective_actions::updated_at.eq(now),
                ))
                .execute(conn)?;
            let handed = ActionEvent::HandedOver {
                action_id: id,
                coe_id,
                from: leaver,
                to,
            };
            outbound::happened(conn, env, by, handed, now)?;
            let coe_title: String = coes::table.find(coe_id).select(coes::title).first(conn)?;
            action_lines.push(ActionLine {
                action_id: id.clone(),
                title: title.clone(),
                coe_id: coe_id.clone(),
                coe_title,
                owner: to.to_owned(),
                owner_name: String::new(),
                due_date: due.to_string(),
                days_overdue: 0,
                days_until_due: 0,
                link: self.links.action(id),
                newly_escalated: false,
            });
        }
        Ok(action_lines)
    }

    /// Gives the COEs the leaver owns before approval to the new holder (who then
    /// reviews none of them); lists them for the email.
    fn owned(&self, conn: &mut DbConnection) -> QueryResult<Vec<CoeLine>> {
        let Handing {
            leaver, to, now, ..
        } = *self;
        let owned: Vec<(String, String)> = coes::table
            .filter(coes::owner_email.eq(leaver))
            .filter(coes::state.eq_any(BEFORE_APPROVAL))
            .order(coes::created_at)
            .select((coes::id, coes::title))
            .load(conn)?;
        let mut owned_lines = Vec::new();
        for (id, title) in &owned {
            // The reviewer cannot own what they review: the review passes to nobody then
            // (the new owner names one), and the audit says so.
            let reviewer: Option<String> = coes::table
                .find(id)
                .select(coes::reviewer_email)
                .first(conn)?;
            if reviewer.as_deref() == Some(to) {
                diesel::update(coes::table.find(id))
                    .set(coes::reviewer_email.eq(None::<String>))
                    .execute(conn)?;
                self.audit(
                    conn,
                    id,
                    "reviewer:left",
                    json!({ "reviewer": to }),
                    json!({ "reviewer": null,
                            "why": format!("{to} owns it now ({leaver} left): name another reviewer") }),
                )?;
            }
            diesel::update(coes::table.find(id))
                .set((
                    coes::owner_email.eq(to),
                    coes::owner_handed_over_from.eq(leaver),
                    coes::owner_handed_over_at.eq(now),
                    coes::updated_at.eq(now),
                ))
                .execute(conn)?;
            self.audit(
                conn,
                id,
                "owner:left",
                json!({ "owner": leaver }),
                json!({ "owner": to, "why": format!("{leaver} left") }),
            )?;
            owned_lines.push(self.line(id, title));
        }
        Ok(owned_lines)
    }

    /// Gives the reviews the leaver holds before approval to the new holder, unless
    /// they own the COE (then nobody reviews it); lists those they took.
    fn reviews(&self, conn: &mut DbConnection) -> QueryResult<Vec<CoeLine>> {
        let Handing {
            leaver, to, now, ..
        } = *self;
        let reviews: Vec<(String, String, Option<String>)> = coes::table
            .filter(coes::reviewer_email.eq(leaver))
            .filter(coes::state.eq_any(BEFORE_APPROVAL))
            .order(coes::created_at)
            .select((coes::id, coes::title, coes::owner_email))
            .load(conn)?;
        let mut review_lines = Vec::new();
        for (id, title, owner) in &reviews {
            let next = (owner.as_deref() != Some(to)).then(|| to.to_owned());
            diesel::update(coes::table.find(id))
                .set((
                    coes::reviewer_email.eq(&next),
                    coes::reviewer_handed_over_from.eq(leaver),
                    coes::reviewer_handed_over_at.eq(now),
                    coes::updated_at.eq(now),
                ))
                .execute(conn)?;
            self.audit(
                conn,
                id,
                "reviewer:left",
                json!({ "reviewer": leaver }),
                json!({ "reviewer": next, "why": format!("{leaver} left") }),
            )?;
            if next.is_some() {
                review_lines.push(self.line(id, title));
            }
        }
        Ok(review_lines)
    }

    /// Tells the new holder, in one email, everything they received from the leaver.
    fn tell(
        &self,
        conn: &mut DbConnection,
        action_lines: Vec<ActionLine>,
        owned_lines: Vec<CoeLine>,
        review_lines: Vec<CoeLine>,
    ) -> QueryResult<()> {
        let Handing {
            env,
            leaver,
            to,
            now,
            by,
            ..
        } = *self;
        let count = action_lines.len() + owned_lines.len() + review_lines.len();
        let name: Option<String> = people::table
            .find(leaver)
            .select(people::name)
            .first::<Option<String>>(conn)
            .optional()?
            .flatten();
        let told = WorkHandedOver {
            recipient_name: String::new(),
            leaver: match name {
                Some(n) => format!("{n} ({leaver})"),
                None => leaver.to_owned(),
            },
            left_on: crate::domain::clock::local_date(now, env.settings.org_timezone()).to_string(),
            actions: action_lines,
            owned: owned_lines,
            reviews: review_lines,
            count,
        };
        let handed = CoeEvent::WorkHandedOver {
            leaver,
            to,
            told: &told,
        };
        outbound::happened(conn, env, by, handed, now)
    }
}

/// The COEs before approval whose bar raiser is `leaver`: the seat is cleared; in
/// review, another is chosen at once (as on submit: a review never loses its bar
/// raiser); in a draft, the next submission chooses. Whether or not anyone takes the
/// leaver's other work.
fn replace_bar_raiser(
    conn: &mut DbConnection,
    env: Env<'_>,
    leaver: &str,
    now: NaiveDateTime,
    by: &str,
) -> QueryResult<()> {
    let raised: Vec<(String, String)> = coes::table
        .filter(coes::bar_raiser_email.eq(leaver))
        .filter(coes::state.eq_any(BEFORE_APPROVAL))
        .select((coes::id, coes::state))
        .load(conn)?;
    for (id, state) in &raised {
        diesel::update(coes::table.find(id))
            .set(coes::bar_raiser_email.eq(None::<String>))
            .execute(conn)?;
        let left = Fact::CoeEdited {
            coe_id: id,
            what: "bar_raiser:left",
            before: Some(json!({ "bar_raiser": leaver })),
            after: Some(json!({ "bar_raiser": null, "why": format!("{leaver} left") })),
        };
        outbound::noted(conn, by, left, now)?;
        if state == "in_review" {
            match crate::services::coe::review::replace_bar_raiser(conn, env, id, now) {
                Ok(_) => {}
                Err(crate::services::coe::coes::CoeError::Database(e)) => return Err(e),
                // Not a fault of the data: the leaving goes on, the COE keeps no bar
                // raiser (its page and audit say so) until an admin names one.
                Err(other) => {
                    tracing::warn!(coe = %id, error = %other, "no bar raiser could be chosen");
                }
            }
        }
    }

    Ok(())
}
