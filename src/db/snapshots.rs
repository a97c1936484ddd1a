//! `figure_snapshots` written only forward: a count is kept unless a later one is
//! (`ON CONFLICT … DO UPDATE … WHERE`, which diesel builds per backend).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::query_dsl::methods::FilterDsl;

use super::schema::figure_snapshots;
use super::DbConnection;

/// Keeps `figures` under `name`, counted at `at`, unless what is kept was counted
/// later (another replica's count, finished first).
pub fn keep_if_newer(
    conn: &mut DbConnection,
    name: &str,
    at: NaiveDateTime,
    figures: &str,
) -> QueryResult<()> {
    macro_rules! upsert {
        ($c:expr) => {
            diesel::insert_into(figure_snapshots::table)
                .values((
                    figure_snapshots::name.eq(name),
                    figure_snapshots::counted_at.eq(at),
                    figure_snapshots::figures.eq(figures),
                ))
                .on_conflict(figure_snapshots::name)
                .do_update()
                .set((
                    figure_snapshots::counted_at.eq(at),
                    figure_snapshots::figures.eq(figures),
                ))
                .filter(figure_snapshots::counted_at.lt(at))
                .execute($c)
        };
    }
    match conn {
        DbConnection::Pg(c) => upsert!(c),
        DbConnection::Sqlite(c) => upsert!(c),
    }?;
    Ok(())
}
