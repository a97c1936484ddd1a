//! The domain's rules as SQL filters, beside the Rust they must agree with: a list
//! that filters in SQL and a rule that decides in Rust say the same thing
//! (tests/api/overdue.rs runs both over one table of cases on both databases).

use diesel::prelude::*;

use crate::db::schema::corrective_actions;
use crate::domain::action::ActionState;

/// "Still to be done" (`ActionState::is_active`): the action's state is one of
/// `ActionState::ACTIVE`.
pub fn action_is_active() -> diesel::dsl::EqAny<corrective_actions::state, [&'static str; 2]> {
    corrective_actions::state.eq_any(ActionState::ACTIVE_NAMES)
}
