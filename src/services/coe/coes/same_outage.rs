//! "Probably the same outage as …": one outage often opens several drafts (the
//! database's alerts, checkout's error rate and the gateway's 5xx are three alert
//! groups). Two open COEs — at least one a draft, so a merge is possible — are
//! suggested as one outage when an incident of each started within
//! `incidents.same_outage_window_secs` of the other, and the two incidents
//!
//! - are on the same service, or
//! - are on services of which one depends on the other in the service map (directly
//!   or through other services), or
//! - carry the same value of a label `incidents.same_outage_labels` names.
//!
//! It is worked out when a COE is read, from both sides alike, so the new draft and
//! the open COE each show it; nothing is merged by itself. A merge would keep the
//! COE in review, else the one opened first.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::schema::{coe_incidents, coes, failure_events, incidents};
use crate::db::{types, DbConnection};
use crate::domain::coe::CoeState;
use crate::domain::Severity;
use crate::services::directory::ownership;
use crate::services::Env;

/// Another open COE that is probably about the same outage.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SameOutage {
    pub coe_id: String,
    pub title: String,
    #[schema(value_type = String, example = "sev2")]
    pub severity: Severity,
    pub state: CoeState,
    pub service: Option<String>,
    pub owner: Option<String>,
    /// Why, in words, one reason per line: "both on service checkout", "checkout
    /// depends on payments-db", "the same cluster: eu-west-1".
    pub because: Vec<String>,
    /// The COE a merge of the two keeps (the one in review, else the one opened
    /// first); the other, a draft, is folded into it.
    pub merge_into: String,
}

/// Most other COEs a COE names as probably the same outage (the nearest in time).
const MAX_SUGGESTED: usize = 10;

/// Most incidents of other COEs looked at around a COE's incidents.
const MAX_NEARBY: i64 = 500;

/// Most distinct label sets read per look (an alert's labels are the same in each
/// of its events; a storm's incident may hold thousands of alerts).
const MAX_LABEL_SETS: i64 = 5_000;

/// An incident as the rule looks at it.
struct Near {
    id: String,
    service: Option<String>,
    started_at: NaiveDateTime,
}

/// The other open COEs probably about the same outage as COE `id` (in state
/// `state`, opened at `created_at`), the nearest in time first.
pub fn of(
    conn: &mut DbConnection,
    env: Env<'_>,
    id: &str,
    state: CoeState,
    created_at: NaiveDateTime,
) -> QueryResult<Vec<SameOutage>> {
    let settings = env.settings;
    let mergeable_with: &[&str] = match state {
        CoeState::Draft => &["draft", "in_review"],
        CoeState::InReview => &["draft"],
        _ => return Ok(Vec::new()),
    };
    let mine = incidents_of(conn, id)?;
    let (Some(first), Some(last)) = (
        mine.iter().map(|i| i.started_at).min(),
        mine.iter().map(|i| i.started_at).max(),
    ) else {
        return Ok(Vec::new());
    };
    let window = Duration::seconds(
        i64::try_from(settings.incidents.same_outage_window_secs).unwrap_or(86_400),
    );
    let nearby = nearby_incidents(conn, id, mergeable_with, first - window, last + window)?;
    if nearby.is_empty() {
        return Ok(Vec::new());
    }
    let depends = dependencies(conn)?;
    let labels = if settings.incidents.same_outage_labels.is_empty() {
        BTreeMap::new()
    } else {
        let ids: Vec<&String> = mine
            .iter()
            .map(|i| &i.id)
            .chain(nearby.iter().map(|n| &n.0))
            .collect();
        label_values(conn, &ids, &settings.incidents.same_outage_labels)?
    };
    // Per other COE: its row, the reasons found, and how near in time it came.
    let mut found: BTreeMap<String, (SameOutage, NaiveDateTime, i64)> = BTreeMap::new();
    for row in nearby {
        let (
            incident,
            service,
            started_at,
            coe_id,
            title,
            severity,
            coe_state,
            coe_service,
            owner,
            opened,
        ) = row;
        let theirs = Near {
            id: incident,
            service,
            started_at,
        };
        for ours in &mine {
            let apart = (ours.started_at - theirs.started_at).num_seconds().abs();
            if apart > window.num_seconds() {
                continue;
            }
            let because = reasons(ours, &theirs, &depends, &labels);
            if because.is_empty() {
                continue;
            }
            let state: CoeState = types::read("coes.state", &coe_state)?;
            let severity = types::severity("coes.severity", severity)?;
            let entry = found.entry(coe_id.clone()).or_insert_with(|| {
                let theirs_first = (opened, coe_id.as_str()) < (created_at, id);
                let merge_into = if state == CoeState::InReview || theirs_first {
                    coe_id.clone()
                } else {
                    id.to_owned()
                };
                (
                    SameOutage {
                        coe_id: coe_id.clone(),
                        title: title.clone(),
                        severity,
                        state,
                        service: coe_service.clone(),
                        owner: owner.clone(),
                        because: Vec::new(),
                        merge_into,
                    },
                    opened,
                    apart,
                )
            });
            entry.2 = entry.2.min(apart);
            for reason in because {
                if !entry.0.because.contains(&reason) {
                    entry.0.because.push(reason);
                }
            }
        }
    }
    Ok(nearest_first(found))
}

/// The incidents of COE `id`.
fn incidents_of(conn: &mut DbConnection, id: &str) -> QueryResult<Vec<Near>> {
    Ok(incidents::table
        .inner_join(coe_incidents::table)
        .filter(coe_incidents::coe_id.eq(id))
        .select((incidents::id, incidents::service, incidents::started_at))
        .load::<(String, Option<String>, NaiveDateTime)>(conn)?
        .into_iter()
        .map(|(id, service, started_at)| Near {
            id,
            service,
            started_at,
        })
        .collect())
}

/// An incident of another open COE near in time, with that COE.
// (incident, its COE: id, title, severity, state, service, owner, opened)
type NearRow = (
    String,
    Option<String>,
    NaiveDateTime,
    String,
    String,
    i32,
    String,
    Option<String>,
    Option<String>,
    NaiveDateTime,
);

/// The incidents that started from `from` to `until` of the other COEs that COE
/// `id` could be merged with (those in a state of `mergeable_with`), the earliest
/// first.
fn nearby_incidents(
    conn: &mut DbConnection,
    id: &str,
    mergeable_with: &[&str],
    from: NaiveDateTime,
    until: NaiveDateTime,
) -> QueryResult<Vec<NearRow>> {
    incidents::table
        .inner_join(coe_incidents::table.inner_join(coes::table))
        .filter(incidents::started_at.between(from, until))
        .filter(coes::id.ne(id))
        .filter(coes::state.eq_any(mergeable_with))
        .order(incidents::started_at.asc())
        .limit(MAX_NEARBY)
        .select((
            incidents::id,
            incidents::service,
            incidents::started_at,
            coes::id,
            coes::title,
            coes::severity,
            coes::state,
            coes::service,
            coes::owner_email,
            coes::created_at,
        ))
        .load(conn)
}

/// Why two incidents that started near each other are probably the same outage,
/// one reason a line: the same service, one service depending on the other, a label
/// value both carry. None: they are not.
fn reasons(
    ours: &Near,
    theirs: &Near,
    depends: &BTreeMap<String, Vec<String>>,
    labels: &BTreeMap<String, BTreeSet<(String, String)>>,
) -> Vec<String> {
    let no_labels = BTreeSet::new();
    let mut because = Vec::new();
    if let (Some(a), Some(b)) = (&ours.service, &theirs.service) {
        if a.eq_ignore_ascii_case(b) {
            because.push(format!("both on service {a}"));
        } else if let Some(path) = depends_path(depends, a, b) {
            because.push(path);
        } else if let Some(path) = depends_path(depends, b, a) {
            because.push(path);
        }
    }
    let shared = labels
        .get(&ours.id)
        .unwrap_or(&no_labels)
        .intersection(labels.get(&theirs.id).unwrap_or(&no_labels));
    because.extend(shared.map(|(name, value)| format!("the same {name}: {value}")));
    because
}

/// The COEs found, the nearest in time first (then the one opened first), at most
/// `MAX_SUGGESTED` of them.
fn nearest_first(found: BTreeMap<String, (SameOutage, NaiveDateTime, i64)>) -> Vec<SameOutage> {
    let mut found: Vec<(SameOutage, NaiveDateTime, i64)> = found.into_values().collect();
    found.sort_by(|a, b| (a.2, a.1, &a.0.coe_id).cmp(&(b.2, b.1, &b.0.coe_id)));
    found
        .into_iter()
        .take(MAX_SUGGESTED)
        .map(|(s, _, _)| s)
        .collect()
}

/// The service map's dependencies: service (lower case) → the services it names.
fn dependencies(conn: &mut DbConnection) -> QueryResult<BTreeMap<String, Vec<String>>> {
    Ok(ownership::service_map(conn)?
        .into_iter()
        .filter(|s| !s.depends_on.is_empty())
        .map(|s| (s.service.to_lowercase(), s.depends_on))
        .collect())
}

/// "a depends on b" (or "a depends on b through c") when the map leads from service
/// `a` to service `b`, the shortest way.
fn depends_path(depends: &BTreeMap<String, Vec<String>>, a: &str, b: &str) -> Option<String> {
    let goal = b.to_lowercase();
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([a.to_lowercase()]);
    let mut seen = BTreeSet::from([a.to_lowercase()]);
    while let Some(at) = queue.pop_front() {
        for next in depends.get(&at).into_iter().flatten() {
            let key = next.to_lowercase();
            if !seen.insert(key.clone()) {
                continue;
            }
            came_from.insert(key.clone(), at.clone());
            if key == goal {
                let mut through = Vec::new();
                let mut step = came_from.get(&key);
                while let Some(s) = step.filter(|s| **s != a.to_lowercase()) {
                    through.push(s.clone());
                    step = came_from.get(s);
                }
                through.reverse();
                return Some(if through.is_empty() {
                    format!("{a} depends on {b}")
                } else {
                    format!("{a} depends on {b} through {}", through.join(", "))
                });
            }
            queue.push_back(key);
        }
    }
    None
}

/// The (label, value) pairs of the labels `names` that the alerts of each incident
/// carry, by incident.
fn label_values(
    conn: &mut DbConnection,
    ids: &[&String],
    names: &[String],
) -> QueryResult<BTreeMap<String, BTreeSet<(String, String)>>> {
    let mut values: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for chunk in ids.chunks(500) {
        let rows: Vec<(String, String)> = failure_events::table
            .filter(failure_events::incident_id.eq_any(chunk))
            .select((failure_events::incident_id, failure_events::labels))
            .distinct()
            .limit(MAX_LABEL_SETS)
            .load(conn)?;
        for (incident, labels) in rows {
            let labels: BTreeMap<String, String> =
                serde_json::from_str(&labels).unwrap_or_default();
            let mine = values.entry(incident).or_default();
            for name in names {
                if let Some(value) = labels.get(name).filter(|v| !v.is_empty()) {
                    mine.insert((name.clone(), value.clone()));
                }
            }
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_is_found_directly_and_through_other_services() {
        let map = BTreeMap::from([
            ("gateway".to_owned(), vec!["Checkout".to_owned()]),
            ("checkout".to_owned(), vec!["payments-db".to_owned()]),
            ("loop-a".to_owned(), vec!["loop-b".to_owned()]),
            ("loop-b".to_owned(), vec!["loop-a".to_owned()]),
        ]);
        assert_eq!(
            depends_path(&map, "checkout", "payments-db").as_deref(),
            Some("checkout depends on payments-db")
        );
        assert_eq!(
            depends_path(&map, "gateway", "payments-db").as_deref(),
            Some("gateway depends on payments-db through checkout")
        );
        assert_eq!(depends_path(&map, "payments-db", "gateway"), None);
        assert_eq!(depends_path(&map, "loop-a", "gateway"), None);
        assert_eq!(
            depends_path(&map, "loop-b", "loop-a").as_deref(),
            Some("loop-b depends on loop-a")
        );
    }
}
