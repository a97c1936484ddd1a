//! "My work": the signed-in person's open corrective actions, overdue first, and the
//! COEs they own or review.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::{render, PageError};
use crate::domain::action::ActionState;
use crate::http::session::SignedIn;
use crate::http::state::{with_conn, AppState};
use crate::services::actions::{self, ActionFilter, ActionSort};
use crate::services::coes::{self, CoeFilter};

/// At most this many actions and COEs are listed.
const SHOWN: i64 = 200;

/// `GET /`.
pub async fn home(who: SignedIn, state: web::Data<AppState>) -> Result<HttpResponse, PageError> {
    let email = who.person.email.clone();
    let (actions, coes) = with_conn(&state, move |conn, state| {
        let clock = state.settings.clock();
        let mine = ActionFilter {
            owner: Some(email.clone()),
            ..ActionFilter::default()
        };
        let (all, _) = actions::list(conn, &mine, ActionSort::DaysOverdue, SHOWN, 0, clock)?;
        let open: Vec<_> = all
            .into_iter()
            .filter(|a| matches!(a.state, ActionState::Open | ActionState::InProgress))
            .collect();
        let owned = CoeFilter {
            owner: Some(email.clone()),
            ..CoeFilter::default()
        };
        let (mut coes, _) = coes::list(conn, &owned, SHOWN, 0)?;
        let (all, _) = coes::list(conn, &CoeFilter::default(), SHOWN, 0)?;
        coes.extend(
            all.into_iter()
                .filter(|c| c.reviewer.as_deref() == Some(email.as_str())),
        );
        Ok((open, coes))
    })
    .await?;
    let me = who.person.email.clone();
    let coes: Vec<_> = coes
        .into_iter()
        .map(|c| {
            json!({
                "id": c.id,
                "title": c.title,
                "state": c.state.as_str().replace('_', " "),
                "severity": c.severity,
                "reviewing": c.reviewer.as_deref() == Some(me.as_str()),
            })
        })
        .collect();
    let actions: Vec<_> = actions
        .into_iter()
        .map(|a| {
            json!({
                "id": a.id,
                "title": a.title,
                "coe_id": a.coe_id,
                "coe_title": a.coe_title,
                "due_date": a.due_date,
                "overdue": a.overdue,
                "days_overdue": a.days_overdue,
                "state": a.state.as_str().replace('_', " "),
                "due_date_change_count": a.due_date_changes,
            })
        })
        .collect();
    render(
        &state,
        Some(&who),
        StatusCode::OK,
        "home",
        json!({"actions": actions, "coes": coes}),
    )
}
