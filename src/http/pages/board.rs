//! The overdue board: overdue and due-soon actions by team and by owner, and the
//! actions themselves with their days overdue, COE, severity and due-date moves. Every
//! filter and the order are in the URL, so a board can be bookmarked and shown in the
//! weekly meeting.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::web;
use chrono::Duration;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::PageError;
use super::kit::{render, Page, State};
use super::outcome::as_service;
use super::query::{filled, pages, word};
use crate::domain::action::{ActionKind, Priority};
use crate::domain::Severity;
use crate::http::session::SignedIn;
use crate::services::coe::actions::{ActionFilter, ActionSort};
use crate::services::figures::board::{self, Totals};

const PAGE: i64 = 50;

/// The board's URL query: every field optional, empty means "any".
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct BoardQuery {
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    priority: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    /// `overdue` (the default) or `due-soon`.
    #[serde(default)]
    show: Option<String>,
    /// `days` (most overdue first, the default), `due` or `owner`.
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    offset: Option<i64>,
}

impl BoardQuery {
    /// The filter shared by the totals and the rows (without the window).
    fn filter(&self) -> Result<ActionFilter, PageError> {
        Ok(ActionFilter {
            team: filled(&self.team),
            owner: filled(&self.owner).map(|o| o.to_lowercase()),
            service: filled(&self.service),
            severity: word::<Severity>(&self.severity, "severity", "sev1 to sev5")?,
            priority: word::<Priority>(&self.priority, "priority", "high, medium or low")?,
            kind: word::<ActionKind>(
                &self.kind,
                "kind",
                "detect, diagnose, mitigate, prevent or process",
            )?,
            ..ActionFilter::default()
        })
    }

    fn due_soon(&self) -> bool {
        self.show.as_deref() == Some("due-soon")
    }

    fn sort(&self) -> ActionSort {
        match self.sort.as_deref() {
            Some("due") => ActionSort::DueDate,
            Some("owner") => ActionSort::Owner,
            _ => ActionSort::DaysOverdue,
        }
    }

    /// This query as a URL, with some fields changed.
    fn url(&self, change: impl FnOnce(&mut BoardQuery)) -> String {
        let mut q = self.clone();
        change(&mut q);
        let pairs: Vec<(&str, String)> = [
            ("team", &q.team),
            ("owner", &q.owner),
            ("service", &q.service),
            ("severity", &q.severity),
            ("priority", &q.priority),
            ("kind", &q.kind),
            ("show", &q.show),
            ("sort", &q.sort),
        ]
        .into_iter()
        .filter_map(|(k, v)| filled(v).map(|v| (k, v)))
        .chain(
            q.offset
                .filter(|o| *o > 0)
                .map(|o| ("offset", o.to_string())),
        )
        .collect();
        let query = serde_urlencoded::to_string(pairs).unwrap_or_default();
        if query.is_empty() {
            "/board".to_owned()
        } else {
            format!("/board?{query}")
        }
    }
}

/// `GET /board`.
pub async fn board(who: SignedIn, query: web::Query<BoardQuery>, state: State) -> Page {
    let q = query.into_inner();
    let base = q.filter()?;
    let offset = q.offset.unwrap_or(0).max(0);
    let (due_soon, sort) = (q.due_soon(), q.sort());
    let (totals, rows, total, directory) = as_service(&state, move |conn, state| {
        let clock = state.settings.clock();
        let soon_days = state.settings.reminders.due_soon_days;
        let totals: Arc<Totals> =
            state
                .board_totals
                .get(conn, clock.today(), &format!("{base:?}"), |conn| {
                    board::totals(conn, &base, clock, soon_days).map(Arc::new)
                })?;
        let today = clock.today();
        let window = if due_soon {
            ActionFilter {
                due_from_today: true,
                due_before: Some(today + Duration::days(soon_days)),
                ..base
            }
        } else {
            ActionFilter {
                overdue: Some(true),
                ..base
            }
        };
        let rows = board::rows(conn, &window, sort, PAGE, offset, clock)?;
        // Apart: the actions whose risk is accepted for now (not overdue until then).
        let accepted = ActionFilter {
            // The last day people write (SQLite compares dates as text).
            risk_accepted_by: chrono::NaiveDate::from_ymd_opt(9999, 12, 31),
            ..window.clone()
        };
        let accepted = crate::services::coe::actions::list(
            conn,
            &ActionFilter {
                overdue: None,
                due_from_today: false,
                due_before: None,
                ..accepted
            },
            crate::services::coe::actions::ActionSort::DueDate,
            PAGE,
            0,
            clock,
        )?;
        let total = if due_soon {
            totals.due_soon
        } else {
            totals.overdue
        };
        // The directory's teams, offered in the team filter; the names of the owners
        // the rows show (the owner filter finds people as they are typed).
        let teams = crate::services::directory::people::teams(conn)?;
        let owners: Vec<String> = rows
            .iter()
            .map(|r| r.action.owner.clone())
            .chain(accepted.0.iter().map(|a| a.owner.clone()))
            .collect();
        let people = crate::services::directory::people::names_of(conn, &owners)?;
        Ok((totals, rows, total, (teams, people, accepted)))
    })
    .await?;
    let (teams_and_people, accepted) = {
        let (teams, people, accepted) = directory;
        ((teams, people), accepted)
    };
    let directory = teams_and_people;
    let (team_names, directory) = directory;
    let names = super::kit::names_data(&directory);
    let teams: Vec<_> = totals
        .by_team
        .iter()
        .map(|t| json!({"line": t, "href": q.url(|n| { n.team = Some(t.team.clone()); n.offset = None; })}))
        .collect();
    let owners: Vec<_> = totals
        .by_owner
        .iter()
        .take(50)
        .map(|o| json!({"line": o, "href": q.url(|n| { n.owner = Some(o.owner.clone()); n.offset = None; })}))
        .collect();
    let sorts: Vec<_> = [
        ("days", "most overdue first"),
        ("due", "due date"),
        ("owner", "owner"),
    ]
    .into_iter()
    .map(|(value, label)| {
        json!({"value": value, "label": label,
                   "selected": q.sort.as_deref().unwrap_or("days") == value})
    })
    .collect();
    let (previous, next) = pages(offset, PAGE, total, |o| q.url(|n| n.offset = Some(o)));
    // The filters fold away unless one is set, so that a phone's first screen shows
    // the overdue actions.
    let filtered = [
        &q.team,
        &q.owner,
        &q.service,
        &q.severity,
        &q.priority,
        &q.kind,
    ]
    .iter()
    .any(|f| f.as_deref().is_some_and(|v| !v.trim().is_empty()));
    // A team the directory does not know ("paymnts") is said to be unknown, with the
    // team it is a slip away from, not answered with "Nothing is overdue".
    let unknown_team = q
        .team
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty() && !team_names.iter().any(|n| n.eq_ignore_ascii_case(t)))
        .map(|t| {
            let meant = crate::domain::auth::nearest(t, &team_names).map(|m| {
                json!({"team": m, "href": q.url(|n| { n.team = Some(m.to_owned()); n.offset = None; })})
            });
            json!({"typed": t, "meant": meant})
        });
    let past_end = rows.is_empty() && total > 0;
    let data = json!({
        "unknown_team": unknown_team,
        "filter": q,
        "totals": {"overdue": totals.overdue, "due_soon": totals.due_soon},
        "teams": teams,
        "owners": owners,
        "names": names,
        "more_owners": totals.by_owner.len().saturating_sub(50),
        "rows": rows,
        "accepted": accepted.0,
        "accepted_total": accepted.1,
        "total": total,
        "due_soon": due_soon,
        "sorts": sorts,
        "severities": Severity::ALL.map(|s| s.to_string()),
        "priorities": Priority::ALL.map(Priority::as_str),
        "kinds": ActionKind::ALL.map(ActionKind::as_str),
        "overdue_href": q.url(|n| { n.show = None; n.offset = None; }),
        "due_soon_href": q.url(|n| { n.show = Some("due-soon".into()); n.offset = None; }),
        "clear_href": "/board",
        "filtered": filtered,
        "next": next,
        "previous": previous,
        // An offset past the last action (an old bookmark): said, with the way back.
        "past_end": past_end,
        "first_href": q.url(|n| n.offset = None),
        "from": offset + 1,
        "to": (offset + PAGE).min(total),
    });
    render(&state, Some(&who), StatusCode::OK, "board", data)
}
