//! Merging drafts: one outage opened several drafts (one per alert group), and a
//! person folds them into one COE. In one transaction each merged draft's incidents
//! are attached to the COE, the text written in its sections is appended under a
//! heading naming it, and its timeline entries (an alert's counts added to the
//! COE's entry of the same alert), 5-whys chains, related items and corrective
//! actions move; the draft ends `merged`, naming the COE (`merged_into`), no longer
//! written, reviewed or reminded of. Everyone involved is emailed once.

use std::collections::BTreeSet;

use diesel::prelude::*;
use serde_json::json;

use super::edit::{with_current, Recorded};
use super::timeline::recompute_milestone;
use super::{load_row, CoeError};
use crate::db::models::{CoeRow, SectionRow};
use crate::db::schema::{
    action_recurrences, coe_incidents, coe_recurrences, coe_sections, coes, corrective_actions,
    related_items, timeline_entries, timeline_hosts, why_chains,
};
use crate::db::{self, locks, types, DbConnection};
use crate::domain::coe::{CoeState, TimelineKind};
use crate::domain::email::same_person_opt;
use crate::services::access::{self, Editor};
use crate::services::outbound::{self, CoeEvent};
use crate::services::Env;

/// Most drafts merged at once.
pub const MAX_MERGED: usize = 50;

/// What a merge did, for the person who asked: the drafts folded in, and the owner
/// and reviewer the COE took from them where it had none.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    pub titles: Vec<String>,
    pub took_owner: Option<String>,
    pub took_reviewer: Option<String>,
}

/// Folds drafts `sources` into COE `id` (a draft or in review). A COE with no owner
/// (or no reviewer) takes the first draft's that has one: the people who were
/// writing the outage up stay on it.
pub fn merge(
    conn: &mut DbConnection,
    id: &str,
    sources: &[String],
    who: &Editor<'_>,
    env: Env<'_>,
) -> Result<Merged, CoeError> {
    let sources = drafts_named(id, sources)?;
    let merge_id = db::new_id();
    with_current(conn, id, who, env, |conn, target, now| {
        let merged = lock_drafts(conn, &sources, who)?;
        for source in &merged {
            fold(conn, target, source, who, now)?;
        }
        // The owner and reviewer of the drafts, where the COE kept has none (the first
        // draft opened that has one; never one person as both).
        let dotless = &env.settings.auth.dotless_domains;
        let took_owner = match &target.owner_email {
            Some(_) => None,
            None => merged.iter().find_map(|m| m.owner_email.clone()),
        };
        let owner_now = target.owner_email.clone().or(took_owner.clone());
        let took_reviewer = match &target.reviewer_email {
            Some(_) => None,
            None => merged
                .iter()
                .filter_map(|m| m.reviewer_email.clone())
                .find(|r| !same_person_opt(Some(r), owner_now.as_deref(), dotless)),
        };
        let mut taken = Vec::new();
        if let Some(owner) = &took_owner {
            taken.push(("owner", json!(owner)));
        }
        if let Some(reviewer) = &took_reviewer {
            taken.push(("reviewer", json!(reviewer)));
        }
        if !taken.is_empty() {
            super::edit::apply_patch(conn, id, &taken, who.actor, now)?;
        }
        for kind in [
            TimelineKind::Started,
            TimelineKind::Detected,
            TimelineKind::Mitigated,
            TimelineKind::Resolved,
        ] {
            recompute_milestone(conn, id, kind)?;
        }
        // Everyone involved, once: the owners and reviewers of the COE and the drafts.
        let target_now: CoeRow = load_row(conn, id)?;
        let titles: Vec<String> = merged.iter().map(|m| m.title.clone()).collect();
        let told = CoeEvent::Merged {
            into: &target_now,
            merged: &merged,
            merge_id: &merge_id,
        };
        outbound::happened(conn, env, who.actor, told, now)?;
        tracing::info!(coe = %id, merged = ?sources, by = %who.actor, "drafts merged");
        let summary = Merged {
            titles: titles.clone(),
            took_owner,
            took_reviewer,
        };
        let recorded = Recorded {
            action: "merge".into(),
            before: None,
            after: Some(json!({"merged": merged.iter()
                .map(|m| json!({"id": m.id, "title": m.title}))
                .collect::<Vec<_>>()})),
        };
        Ok((summary, Some(recorded)))
    })
}

/// The drafts a merge into COE `id` names, each once: refused when it names none,
/// more than `MAX_MERGED`, or the COE itself.
fn drafts_named(id: &str, sources: &[String]) -> Result<Vec<String>, CoeError> {
    let sources: Vec<String> = sources
        .iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if sources.is_empty() {
        return Err(CoeError::invalid(
            "coe_ids",
            "name at least one draft to merge",
        ));
    }
    if sources.len() > MAX_MERGED {
        return Err(CoeError::invalid(
            "coe_ids",
            format!("at most {MAX_MERGED} drafts at once"),
        ));
    }
    if sources.iter().any(|s| s == id) {
        return Err(CoeError::invalid(
            "coe_ids",
            "a COE cannot be merged into itself",
        ));
    }
    Ok(sources)
}

/// The drafts `sources` as they are, to be merged by `who`: refused when one is
/// missing, is past draft, or is not `who`'s to change.
fn lock_drafts(
    conn: &mut DbConnection,
    sources: &[String],
    who: &Editor<'_>,
) -> Result<Vec<CoeRow>, CoeError> {
    // Each draft as it is, locked (in a fixed order: two merges never wait on each
    // other), checked before anything moves.
    let mut merged: Vec<CoeRow> = Vec::new();
    for source in sources {
        locks::lock_coe(conn, source)?;
        let row = load_row(conn, source).map_err(|e| match e {
            CoeError::NotFound(_) => {
                CoeError::invalid("coe_ids", format!("no COE with id `{source}`"))
            }
            e => e,
        })?;
        let state: CoeState = types::read("coes.state", &row.state)?;
        if state != CoeState::Draft {
            return Err(CoeError::Conflict(format!(
                "COE `{source}` is {}: only drafts are merged (a COE in review or \
                 approved can receive incidents instead)",
                state.as_str().replace('_', " ")
            )));
        }
        // Folding a draft in ends it and takes its text and actions: only whoever
        // may change it too (its owner, its reviewer, an admin; anyone when nobody
        // owns it). Its owner consents by handing it over first.
        access::coe(conn, source, who).map_err(|refused| match refused {
            access::AccessError::Forbidden(_) => CoeError::Forbidden(format!(
                "you may not merge “{}” (`{source}`): it is {}'s to change. Ask them \
                 to merge it, or to hand it to you first",
                row.title,
                row.owner_email.as_deref().unwrap_or("nobody")
            )),
            other => other.into(),
        })?;
        merged.push(row);
    }
    Ok(merged)
}

/// Moves everything of draft `source` into `target` and marks it merged.
fn fold(
    conn: &mut DbConnection,
    target: &CoeRow,
    source: &CoeRow,
    who: &Editor<'_>,
    now: chrono::NaiveDateTime,
) -> Result<(), CoeError> {
    let (t, s) = (target.id.as_str(), source.id.as_str());
    diesel::update(coe_incidents::table.filter(coe_incidents::coe_id.eq(s)))
        .set(coe_incidents::coe_id.eq(t))
        .execute(conn)?;
    // Text someone wrote, under a heading naming the draft it came from.
    move_sections(conn, t, source, who, now)?;
    // The timeline: an alert the COE already counts adds its counts to that entry.
    move_timeline(conn, t, s)?;
    // 5-whys chains after the COE's own.
    let last: Option<i32> = why_chains::table
        .filter(why_chains::coe_id.eq(t))
        .select(diesel::dsl::max(why_chains::position))
        .first(conn)?;
    diesel::update(why_chains::table.filter(why_chains::coe_id.eq(s)))
        .set((
            why_chains::coe_id.eq(t),
            why_chains::position.eq(why_chains::position + last.unwrap_or(-1) + 1),
        ))
        .execute(conn)?;
    // Related items, but not links between the two (they are one COE now).
    diesel::delete(
        related_items::table
            .filter(
                related_items::coe_id
                    .eq(s)
                    .and(related_items::related_coe_id.eq(t)),
            )
            .or_filter(
                related_items::coe_id
                    .eq(t)
                    .and(related_items::related_coe_id.eq(s)),
            ),
    )
    .execute(conn)?;
    diesel::update(related_items::table.filter(related_items::coe_id.eq(s)))
        .set(related_items::coe_id.eq(t))
        .execute(conn)?;
    diesel::update(corrective_actions::table.filter(corrective_actions::coe_id.eq(s)))
        .set(corrective_actions::coe_id.eq(t))
        .execute(conn)?;
    // "It happened before": the draft's earlier COEs are the COE's now.
    move_recurrences(conn, t, s)?;
    // The recurrences the draft was: the COE's now (its actions moved above).
    diesel::update(action_recurrences::table.filter(action_recurrences::coe_id.eq(s)))
        .set(action_recurrences::coe_id.eq(t))
        .execute(conn)?;
    // The worst severity of the two; the draft ends merged.
    diesel::update(coes::table.find(t))
        .filter(coes::severity.gt(source.severity))
        .set(coes::severity.eq(source.severity))
        .execute(conn)?;
    crate::services::coe::lifecycle::merge(conn, s, t, who.actor, now)?;
    super::reindex(conn, s)?;
    Ok(())
}

/// Appends the text written in draft `source`'s sections to COE `t`'s, each under a
/// heading naming the draft, and empties the draft's.
fn move_sections(
    conn: &mut DbConnection,
    t: &str,
    source: &CoeRow,
    who: &Editor<'_>,
    now: chrono::NaiveDateTime,
) -> Result<(), CoeError> {
    let s = source.id.as_str();
    let written: Vec<(String, String)> = coe_sections::table
        .filter(coe_sections::coe_id.eq(s))
        .select((coe_sections::key, coe_sections::body))
        .load(conn)?;
    for (key, body) in written.into_iter().filter(|(_, b)| !b.trim().is_empty()) {
        let theirs = format!("#### From “{}”\n\n{}", source.title, body.trim());
        let ours: Option<String> = coe_sections::table
            .find((t, &key))
            .select(coe_sections::body)
            .first(conn)
            .optional()?;
        let joined = match ours.filter(|o| !o.trim().is_empty()) {
            Some(ours) => format!("{}\n\n{theirs}", ours.trim_end()),
            None => theirs,
        };
        diesel::delete(coe_sections::table.find((t, &key))).execute(conn)?;
        diesel::insert_into(coe_sections::table)
            .values(SectionRow {
                coe_id: t.to_owned(),
                key,
                body: joined,
                updated_by: who.actor.to_owned(),
                updated_at: now,
            })
            .execute(conn)?;
    }
    diesel::delete(coe_sections::table.filter(coe_sections::coe_id.eq(s))).execute(conn)?;
    Ok(())
}

/// Moves draft `s`'s timeline into COE `t`'s: an alert the COE already counts adds
/// its counts and hosts to the COE's entry of it; every other entry moves as it is.
fn move_timeline(conn: &mut DbConnection, t: &str, s: &str) -> Result<(), CoeError> {
    let alerts: Vec<(String, String, i32, Option<chrono::NaiveDateTime>)> = timeline_entries::table
        .filter(timeline_entries::coe_id.eq(s))
        .filter(timeline_entries::alert_key.is_not_null())
        .select((
            timeline_entries::id,
            timeline_entries::alert_key.assume_not_null(),
            timeline_entries::occurrences,
            timeline_entries::last_at,
        ))
        .load(conn)?;
    for (entry, key, occurrences, last_at) in alerts {
        let ours: Option<(String, Option<chrono::NaiveDateTime>)> = timeline_entries::table
            .filter(timeline_entries::coe_id.eq(t))
            .filter(timeline_entries::alert_key.eq(&key))
            .select((timeline_entries::id, timeline_entries::last_at))
            .first(conn)
            .optional()?;
        let Some((into, our_last)) = ours else {
            continue;
        };
        let hosts: Vec<String> = timeline_hosts::table
            .filter(timeline_hosts::entry_id.eq(&entry))
            .select(timeline_hosts::host)
            .load(conn)?;
        for host in hosts {
            crate::insert_or_ignore!(
                conn,
                diesel::insert_into(timeline_hosts::table).values((
                    timeline_hosts::entry_id.eq(&into),
                    timeline_hosts::host.eq(host),
                )),
                (timeline_hosts::entry_id, timeline_hosts::host)
            )?;
        }
        let host_count: i64 = timeline_hosts::table
            .filter(timeline_hosts::entry_id.eq(&into))
            .count()
            .get_result(conn)?;
        diesel::update(timeline_entries::table.find(&into))
            .set((
                timeline_entries::occurrences.eq(timeline_entries::occurrences + occurrences),
                timeline_entries::last_at.eq(our_last.max(last_at)),
                timeline_entries::hosts.eq(i32::try_from(host_count).unwrap_or(i32::MAX)),
            ))
            .execute(conn)?;
        diesel::delete(timeline_hosts::table.filter(timeline_hosts::entry_id.eq(&entry)))
            .execute(conn)?;
        diesel::delete(timeline_entries::table.find(&entry)).execute(conn)?;
    }
    diesel::update(timeline_entries::table.filter(timeline_entries::coe_id.eq(s)))
        .set(timeline_entries::coe_id.eq(t))
        .execute(conn)?;
    Ok(())
}

/// Gives COE `t` the earlier COEs draft `s` recurred (never `t` itself), and drops
/// the draft's recurrence links, either way.
fn move_recurrences(conn: &mut DbConnection, t: &str, s: &str) -> Result<(), CoeError> {
    let earlier: Vec<(String, String, chrono::NaiveDateTime)> = coe_recurrences::table
        .filter(coe_recurrences::coe_id.eq(s))
        .select((
            coe_recurrences::earlier_coe_id,
            coe_recurrences::matched_on,
            coe_recurrences::created_at,
        ))
        .load(conn)?;
    for (before, matched_on, at) in earlier.into_iter().filter(|(b, _, _)| b != t) {
        crate::insert_or_ignore!(
            conn,
            diesel::insert_into(coe_recurrences::table).values((
                coe_recurrences::coe_id.eq(t),
                coe_recurrences::earlier_coe_id.eq(before),
                coe_recurrences::matched_on.eq(matched_on),
                coe_recurrences::created_at.eq(at),
            )),
            (coe_recurrences::coe_id, coe_recurrences::earlier_coe_id)
        )?;
    }
    diesel::delete(
        coe_recurrences::table
            .filter(coe_recurrences::coe_id.eq(s))
            .or_filter(coe_recurrences::earlier_coe_id.eq(s)),
    )
    .execute(conn)?;
    Ok(())
}
