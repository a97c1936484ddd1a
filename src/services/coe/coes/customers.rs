//! The check on the section written for customers: it names no person of the
//! directory (by address, full name or given name) and no internal host
//! (`coe.internal_patterns`, in the text or a link), read both as written and as the
//! public page renders it (`domain::customer_summary`). Its refusals block submitting,
//! like a missing section, and publishing, so what is approved with the COE is fit to
//! publish; its warnings (a given name that is also an ordinary word, "Will") are
//! shown to the writer and the reviewer with the checks' other warnings.

use diesel::prelude::*;

use crate::db::schema::people;
use crate::db::DbConnection;
use crate::domain::customer_summary;
pub use crate::domain::customer_summary::Findings;
use crate::services::Env;

/// What is wrong with `text` for customers' eyes, each in words ("names Ana Lima, a
/// person in the directory"): refusals, and warnings the writer weighs. Reads the
/// directory once (address and name of each person); nothing when the text is empty.
pub fn check(conn: &mut DbConnection, env: Env<'_>, text: &str) -> QueryResult<Findings> {
    if text.trim().is_empty() {
        return Ok(Findings::default());
    }
    let directory: Vec<(String, Option<String>)> = people::table
        .select((people::email, people::name))
        .load(conn)?;
    Ok(customer_summary::check(
        text,
        &directory,
        &customer_summary::internal_patterns(&env.settings.coe.internal_patterns),
    ))
}
