//! The domain's rules as SQL, beside the Rust they must agree with: a list that
//! filters in SQL and a rule that decides in Rust say the same thing
//! (tests/api/overdue.rs runs both over one table of cases on both databases). The
//! triggers that keep the owners' counts (migrations 000033 and 000042) spell
//! "active" as `action_is_active_sql` does; `tally::drift` checks them against it.

use chrono::NaiveDate;
use diesel::dsl::{And, EqAny, GtEq, Lt, NeAll, Or};
use diesel::prelude::*;

use crate::db::schema::corrective_actions;
use crate::domain::action::ActionState;

type Active = EqAny<corrective_actions::state, [&'static str; 2]>;

/// "Still to be done" (`ActionState::is_active`): the action's state is one of
/// `ActionState::ACTIVE`.
pub fn action_is_active() -> Active {
    corrective_actions::state.eq_any(ActionState::ACTIVE_NAMES)
}

/// Overdue on `today`, the organisation's date (`domain::action::is_overdue`): still
/// to be done and due before today.
pub fn action_is_overdue(
    today: NaiveDate,
) -> And<Active, Lt<corrective_actions::due_date, NaiveDate>> {
    action_is_active().and(corrective_actions::due_date.lt(today))
}

/// Not overdue on `today`: done or decided against, or due today or later.
pub fn action_is_not_overdue(
    today: NaiveDate,
) -> Or<
    NeAll<corrective_actions::state, [&'static str; 2]>,
    GtEq<corrective_actions::due_date, NaiveDate>,
> {
    corrective_actions::state
        .ne_all(ActionState::ACTIVE_NAMES)
        .or(corrective_actions::due_date.ge(today))
}

/// `action_is_active` for a hand-written statement over `corrective_actions`
/// as `alias`: `alias.state IN ('open', 'in_progress')`.
pub fn action_is_active_sql(alias: &str) -> String {
    let names: Vec<String> = ActionState::ACTIVE_NAMES
        .iter()
        .map(|n| format!("'{n}'"))
        .collect();
    format!("{alias}.state IN ({})", names.join(", "))
}
