//! The settings that change what a sweep sends (`public_url`, in every link, and
//! `org.timezone`, which decides "today"), as the last server sweep used them. A
//! `coe sweep` run by hand or from cron with other settings would send other emails
//! than the servers: it compares and says so.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::schema::sweep_settings;
use crate::db::DbConnection;
use crate::services::Env;

/// The settings compared, by name, as the current process has them.
fn current(env: Env<'_>) -> [(&'static str, String); 2] {
    let settings = env.settings;
    [
        ("public_url", settings.public_url.clone()),
        ("org.timezone", settings.org.timezone.clone()),
    ]
}

/// Records what a server sweep runs with. Called by the sweep job of `coe serve`.
pub fn record(conn: &mut DbConnection, env: Env<'_>, now: NaiveDateTime) -> QueryResult<()> {
    for (name, value) in current(env) {
        let updated = diesel::update(sweep_settings::table.find(name))
            .set((
                sweep_settings::value.eq(&value),
                sweep_settings::updated_at.eq(now),
            ))
            .execute(conn)?;
        if updated == 0 {
            crate::insert_or_ignore!(
                conn,
                diesel::insert_into(sweep_settings::table).values((
                    sweep_settings::name.eq(name),
                    sweep_settings::value.eq(&value),
                    sweep_settings::updated_at.eq(now),
                )),
                sweep_settings::name
            )?;
        }
    }
    Ok(())
}

/// A setting that differs from the last server sweep's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub name: &'static str,
    /// What the server used.
    pub server: String,
    /// What this process uses.
    pub here: String,
}

/// How `settings` differ from those of the last server sweep (none when no server
/// has swept this database yet).
pub fn differences(conn: &mut DbConnection, env: Env<'_>) -> QueryResult<Vec<Difference>> {
    let recorded: Vec<(String, String)> = sweep_settings::table
        .select((sweep_settings::name, sweep_settings::value))
        .load(conn)?;
    Ok(current(env)
        .into_iter()
        .filter_map(|(name, here)| {
            let (_, server) = recorded.iter().find(|(n, _)| n == name)?;
            (*server != here).then(|| Difference {
                name,
                server: server.clone(),
                here,
            })
        })
        .collect())
}
