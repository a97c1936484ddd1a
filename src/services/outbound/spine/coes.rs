//! What happens to a COE and the people on it: who is told it opened, changed hands or
//! merged, the search index and a stale approval, a summary published for customers, a
//! leaver's work handed over.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde_json::json;

use super::{coe_history, Event};
use crate::config::ChatEvent;
use crate::db::models::CoeRow;
use crate::db::schema::people;
use crate::db::{types, DbConnection};
use crate::email::content::WorkHandedOver;
use crate::email::Kind;
use crate::services::outbound::chat::publications::Told;
use crate::services::outbound::notify;
use crate::services::outbound::outbox;
use crate::services::outbound::{approval, chat};
use crate::services::{search_index, Env};

/// What happens to a COE and the people on it.
pub enum CoeEvent<'a> {
    /// A COE opened (`coe` as stored): its owner is told (the admins, when it opened
    /// unowned, so that someone takes it), its reviewer that they review it, and the
    /// chat channels that hear of new COEs.
    Opened { coe: &'a CoeRow },
    /// A COE's writeup changed (its version was claimed by the change): the search
    /// reads it again, and an approval given to the version before is withdrawn.
    Changed { id: &'a str },
    /// A COE's owner or reviewer changed (`before`, `after` as stored); `replaced` is
    /// the reviewer who was reviewing it and no longer does.
    Assigned {
        before: &'a CoeRow,
        after: &'a CoeRow,
        replaced: Option<&'a str>,
    },
    /// Drafts (`merged`) were merged into COE `into`, once (`merge_id`).
    Merged {
        into: &'a CoeRow,
        merged: &'a [CoeRow],
        merge_id: &'a str,
    },
    /// A COE's summary for customers was published at `token`'s address (and, with
    /// `statuspage_incident`, as that incident's postmortem).
    Published {
        coe_id: &'a str,
        token: &'a str,
        url: &'a str,
        title: &'a str,
        body: &'a str,
        statuspage_incident: Option<&'a str>,
    },
    /// Its published text was replaced by an approved change, at the same address.
    PublicationUpdated {
        coe_id: &'a str,
        token: &'a str,
        url: &'a str,
        title: &'a str,
        body: &'a str,
        statuspage_incident: Option<&'a str>,
    },
    /// Its public page was taken down.
    PublicationRevoked {
        coe_id: &'a str,
        token: &'a str,
        url: &'a str,
        statuspage_incident: Option<&'a str>,
    },
    /// A change of the summary for customers was asked for after approval
    /// (`change_id`); its reviewer (`to`) is asked to approve it.
    SummaryChangeProposed {
        coe_id: &'a str,
        change_id: &'a str,
        to: Option<&'a str>,
        /// Who answers for it (a token's maker): never asked to approve it.
        proposer: &'a str,
    },
    /// The reviewer approved (`approved`) or sent back a change of the summary for
    /// customers written by `proposer`, with a note.
    SummaryChangeDecided {
        coe_id: &'a str,
        change_id: &'a str,
        approved: bool,
        proposer: &'a str,
        note: Option<&'a str>,
    },
    /// A person left and `to` took over their work (`told`: what the email lists).
    WorkHandedOver {
        leaver: &'a str,
        to: &'a str,
        told: &'a WorkHandedOver,
    },
}

impl<'a> From<CoeEvent<'a>> for Event<'a> {
    fn from(event: CoeEvent<'a>) -> Event<'a> {
        Event::Coe(event)
    }
}

/// Every consequence of `event`, in the caller's transaction.
pub(super) fn happened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    event: CoeEvent<'_>,
    now: NaiveDateTime,
) -> QueryResult<()> {
    match event {
        CoeEvent::Opened { coe } => coe_opened(conn, env, actor, coe, now),
        CoeEvent::Changed { id } => {
            search_index::reindex(conn, id)?;
            approval::withdraw_stale_approval(conn, id, actor, env, now)
        }
        CoeEvent::Assigned {
            before,
            after,
            replaced,
        } => {
            // Whoever becomes the owner or the reviewer now is told so.
            if let Some(former) = replaced {
                notify::reviewer_replaced(conn, env, after, former, actor, now)?;
            }
            for (was, is, as_reviewer) in [
                (&before.owner_email, &after.owner_email, false),
                (&before.reviewer_email, &after.reviewer_email, true),
            ] {
                if let Some(person) = is.as_deref().filter(|p| Some(*p) != was.as_deref()) {
                    notify::coe_assigned(conn, env, after, person, as_reviewer, actor, now)?;
                }
            }
            Ok(())
        }
        CoeEvent::Merged {
            into,
            merged,
            merge_id,
        } => {
            // Everyone involved, once: the owners and reviewers of the COE and the drafts.
            let titles: Vec<String> = merged.iter().map(|m| m.title.clone()).collect();
            let people: std::collections::BTreeSet<&str> = std::iter::once(into)
                .chain(merged)
                .flat_map(|r| [r.owner_email.as_deref(), r.reviewer_email.as_deref()])
                .flatten()
                .collect();
            for person in people {
                notify::coe_merged(conn, env, into, &titles, person, actor, merge_id, now)?;
            }
            Ok(())
        }
        CoeEvent::Published {
            coe_id,
            token,
            url,
            title,
            body,
            statuspage_incident,
        } => {
            let after = json!({ "statuspage_incident": statuspage_incident, "title": title });
            let what = "publication:published";
            coe_history(conn, coe_id, actor, what, None, Some(after), now)?;
            let told = Told {
                coe_id,
                token,
                url,
                statuspage_incident,
            };
            chat::publications::published(conn, env, told, (title, body), now)
        }
        CoeEvent::PublicationUpdated {
            coe_id,
            token,
            url,
            title,
            body,
            statuspage_incident,
        } => {
            let after = json!({ "title": title });
            let what = "publication:updated";
            coe_history(conn, coe_id, actor, what, None, Some(after), now)?;
            let told = Told {
                coe_id,
                token,
                url,
                statuspage_incident,
            };
            chat::publications::updated(conn, env, told, (title, body), now)
        }
        CoeEvent::PublicationRevoked {
            coe_id,
            token,
            url,
            statuspage_incident,
        } => {
            // What was not sent yet to a status page or webhook is not sent at all;
            // those that were sent it are told it was withdrawn.
            let told = Told {
                coe_id,
                token,
                url,
                statuspage_incident,
            };
            chat::publications::withdrawn(conn, env, told, now)?;
            coe_history(conn, coe_id, actor, "publication:revoked", None, None, now)
        }
        CoeEvent::SummaryChangeProposed {
            coe_id,
            change_id,
            to,
            proposer,
        } => {
            let after = json!({ "change": change_id });
            let what = "publication:change_proposed";
            coe_history(conn, coe_id, actor, what, None, Some(after), now)?;
            // The reviewer's own change is an admin's to approve: every admin is asked.
            let recipients: Vec<String> = match to {
                Some(reviewer) if !reviewer.eq_ignore_ascii_case(proposer) => {
                    vec![reviewer.to_owned()]
                }
                Some(_) => people::table
                    .filter(people::is_admin.eq(true))
                    .select(people::email)
                    .load(conn)?,
                None => Vec::new(),
            };
            for recipient in recipients
                .iter()
                .filter(|r| !r.eq_ignore_ascii_case(proposer))
            {
                notify::summary_change(conn, env, coe_id, change_id, recipient, actor, None, now)?;
            }
            Ok(())
        }
        CoeEvent::SummaryChangeDecided {
            coe_id,
            change_id,
            approved,
            proposer,
            note,
        } => {
            let after = json!({ "change": change_id, "note": note });
            let what = if approved {
                "publication:change_approved"
            } else {
                "publication:change_sent_back"
            };
            coe_history(conn, coe_id, actor, what, None, Some(after), now)?;
            if approved {
                // The section's text is the change now.
                return search_index::reindex(conn, coe_id);
            }
            notify::summary_change(
                conn,
                env,
                coe_id,
                change_id,
                proposer,
                actor,
                Some(note.unwrap_or_default()),
                now,
            )
        }
        CoeEvent::WorkHandedOver { leaver, to, told } => {
            let key = format!("{}:{leaver}:{to}:{now}", Kind::WorkHandedOver.name());
            let data = json!(told);
            outbox::notify(conn, env.emails, Kind::WorkHandedOver, key, to, data, now)
        }
    }
}

fn coe_opened(
    conn: &mut DbConnection,
    env: Env<'_>,
    actor: &str,
    row: &CoeRow,
    now: NaiveDateTime,
) -> QueryResult<()> {
    if row.owner_email.is_some() {
        notify::coe_opened_row(conn, env, row, now)?;
    } else {
        let admins: Vec<String> = people::table
            .filter(people::is_admin.eq(true))
            .select(people::email)
            .load(conn)?;
        if admins.is_empty() {
            tracing::warn!(coe = %row.id, "a COE opened with no owner and there is no admin in the directory to tell");
        }
        for admin in &admins {
            notify::coe_unowned(conn, env, row, admin, now)?;
        }
    }
    if let Some(reviewer) = row.reviewer_email.as_deref() {
        notify::coe_assigned(conn, env, row, reviewer, true, actor, now)?;
    }
    let severity = types::severity("coes.severity", row.severity)?.to_string();
    chat::coe_notice(
        conn,
        env,
        ChatEvent::CoeOpened,
        &notify::CoeFacts::of(row, &severity),
        "COE opened",
        None,
        &format!("coe_opened:{}", row.id),
        now,
    )?;
    Ok(())
}
