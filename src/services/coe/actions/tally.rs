//! Each owner's open and overdue actions, as the database keeps them: triggers on
//! `corrective_actions` (migration 000033) recount an owner's row in `action_tally`
//! after every write that changes an action's owner, state or due date, in the same
//! transaction. So the board and the dashboard read one row per owner instead of
//! counting every action, and the first view after a change costs what the others do.
//!
//! `overdue` is counted against `action_tally_day.day`; `owners` first moves that day
//! to the organisation's today (once a day, or when a clock dated elsewhere asks),
//! recounting only the owners with open actions due between the two days. The same
//! triggers number the changes a write's `updated_at` may not show (`change_number`).

use chrono::NaiveDate;
use diesel::prelude::*;

use crate::db::schema::{action_tally, action_tally_day};
use crate::db::DbConnection;

/// One owner's open actions: how many, how many are overdue, and the earliest due
/// date among them.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct OwnerTally {
    pub owner: String,
    pub open: i64,
    pub overdue: i64,
    pub oldest_due: Option<NaiveDate>,
}

/// Every owner with open actions, as of `today`; only `owners` when given.
pub fn owners(
    conn: &mut DbConnection,
    today: NaiveDate,
    only: Option<&[String]>,
) -> QueryResult<Vec<OwnerTally>> {
    move_day(conn, today)?;
    let columns = (
        action_tally::owner_email,
        action_tally::open,
        action_tally::overdue,
        action_tally::oldest_due,
    );
    match only {
        None => action_tally::table
            .filter(action_tally::open.gt(0))
            .select(columns)
            .load(conn),
        Some(owners) => {
            let mut out = Vec::new();
            for chunk in owners.chunks(500) {
                out.extend(
                    action_tally::table
                        .filter(action_tally::open.gt(0))
                        .filter(action_tally::owner_email.eq_any(chunk))
                        .select(columns)
                        .load::<OwnerTally>(conn)?,
                );
            }
            Ok(out)
        }
    }
}

/// Counts `overdue` against `today`: one read when the day is already today.
pub fn move_day(conn: &mut DbConnection, today: NaiveDate) -> QueryResult<()> {
    if day(conn)? == today {
        return Ok(());
    }
    crate::db::write_transaction(conn, |conn| {
        let was = crate::db::tally::day_for_update(conn)?;
        if was == today {
            return Ok(());
        }
        diesel::update(action_tally_day::table.find(1))
            .set(action_tally_day::day.eq(today))
            .execute(conn)?;
        crate::db::tally::recount_overdue(conn, today, (was.min(today), was.max(today)))?;
        Ok::<_, diesel::result::Error>(())
    })
}

/// How many changes to actions their `updated_at` may not show were made: an action
/// deleted, written with past dates, closed, reopened, its due date, creation or
/// owner moved (triggers of migrations 000033 and 000042 number them). Part of the
/// generation of totals kept between changes (`totals_cache`).
pub fn change_number(conn: &mut DbConnection) -> QueryResult<i64> {
    action_tally_day::table
        .find(1)
        .select(action_tally_day::history)
        .first(conn)
}

/// The day `overdue` is counted against now.
fn day(conn: &mut DbConnection) -> QueryResult<NaiveDate> {
    action_tally_day::table
        .find(1)
        .select(action_tally_day::day)
        .first(conn)
}

/// The owners whose kept row differs from a count of the actions as they stand
/// (`db::tally::drift`): for the tests.
pub fn drift(conn: &mut DbConnection) -> QueryResult<Vec<String>> {
    crate::db::tally::drift(conn)
}
