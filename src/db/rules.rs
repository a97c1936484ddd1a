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

/// Past its due date on `day` (`domain::action::past_due`): due before `day`.
pub fn past_due(day: NaiveDate) -> Lt<corrective_actions::due_date, NaiveDate> {
    corrective_actions::due_date.lt(day)
}

/// Not past its due date on `day`: due on `day` or later.
pub fn not_past_due(day: NaiveDate) -> GtEq<corrective_actions::due_date, NaiveDate> {
    corrective_actions::due_date.ge(day)
}

/// Overdue on `today`, the organisation's date (`domain::action::is_overdue`): still
/// to be done and due before today.
pub fn action_is_overdue(
    today: NaiveDate,
) -> And<Active, Lt<corrective_actions::due_date, NaiveDate>> {
    action_is_active().and(past_due(today))
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
        .or(not_past_due(today))
}

/// `action_is_overdue` for a hand-written statement over `corrective_actions` as
/// `alias`, against the date bound at `today` (a placeholder: `$1` or `?`).
pub fn action_is_overdue_sql(alias: &str, today: &str) -> String {
    format!(
        "{} AND {}",
        action_is_active_sql(alias),
        past_due_sql(alias, today)
    )
}

/// `past_due` for a hand-written statement: `alias`'s due date is before `day` (a
/// placeholder).
pub fn past_due_sql(alias: &str, day: &str) -> String {
    format!("{alias}.due_date < {day}")
}

/// `not_past_due` for a hand-written statement.
pub fn not_past_due_sql(alias: &str, day: &str) -> String {
    format!("{alias}.due_date >= {day}")
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
