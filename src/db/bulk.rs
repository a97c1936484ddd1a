//! Writes of many rows whose best SQL differs by backend (the multi-row macros of
//! `db` cover the rest).

use diesel::prelude::*;

use crate::db::models::IncidentRow;
use crate::db::schema::incidents;
use crate::db::DbConnection;

/// Writes the changes filing made to stored incidents: on SQLite a statement per
/// incident (kept prepared; no round trip), on PostgreSQL one per `chunk_rows`.
pub fn update_incidents(
    conn: &mut DbConnection,
    rows: &[&IncidentRow],
    chunk_rows: usize,
) -> QueryResult<()> {
    use diesel::upsert::excluded;
    match (conn, rows) {
        (_, []) => {}
        (conn @ DbConnection::Sqlite(_), _) | (conn, [_]) => {
            for row in rows {
                diesel::update(incidents::table.find(&row.id))
                    .set(*row)
                    .execute(conn)?;
            }
        }
        (DbConnection::Pg(conn), _) => {
            // Every row is there: each "insert" updates its row by id.
            for chunk in rows.chunks(chunk_rows) {
                diesel::insert_into(incidents::table)
                    .values(chunk.to_vec())
                    .on_conflict(incidents::id)
                    .do_update()
                    .set((
                        incidents::service.eq(excluded(incidents::service)),
                        incidents::severity.eq(excluded(incidents::severity)),
                        incidents::state.eq(excluded(incidents::state)),
                        incidents::started_at.eq(excluded(incidents::started_at)),
                        incidents::acknowledged_at.eq(excluded(incidents::acknowledged_at)),
                        incidents::resolved_at.eq(excluded(incidents::resolved_at)),
                        incidents::reopened_count.eq(excluded(incidents::reopened_count)),
                        incidents::event_count.eq(excluded(incidents::event_count)),
                        incidents::coe_required_at.eq(excluded(incidents::coe_required_at)),
                        incidents::budget_burned.eq(excluded(incidents::budget_burned)),
                        incidents::slo.eq(excluded(incidents::slo)),
                        incidents::updated_at.eq(excluded(incidents::updated_at)),
                    ))
                    .execute(conn)?;
            }
        }
    }
    Ok(())
}
