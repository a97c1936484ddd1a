//! The one delivery queue. What coe tells the outside world waits as rows of three
//! tables of one shape: emails (`outbox_emails`), chat notices (`chat_messages`) and
//! tracker jobs (`tracker_jobs`), each with a state (pending, sending, sent, failed),
//! its attempts, when it is due, the lease and the replica that claimed it, its last
//! error and when it was sent. This module is the one place that claims, leases,
//! gives back, backs off and settles them; each channel (`outbox`, `chat`,
//! `trackers`) says only which rows it may take, how one is sent and what an outcome
//! means (`Channel`).
//!
//! A pass (`pass`) claims one row at a time under a lease and the replica's name (a
//! worker that dies holds only the one it was sending), sends it with no transaction
//! open and, from the pool, no connection held (`Pooled`), and settles its outcome
//! only while the claim is still the worker's: the row is still sending under the
//! lease it set. A replica that starts again gives back what it held (`reclaim`); the
//! claims of one that has gone silent, or whose lease ran out, go to the next pass of
//! any replica.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;
use serde::Serialize;

use crate::db::schema::{chat_messages, outbox_emails, tracker_jobs};
use crate::db::{self, DbConnection, DbPool};
use crate::services::Env;

mod figures;

pub use figures::{waiting, Waiting};

pub const PENDING: &str = "pending";
pub const SENDING: &str = "sending";
pub const SENT: &str = "sent";
pub const FAILED: &str = "failed";

/// The three tables of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    Email,
    Chat,
    Tracker,
}

/// A row claimed: its id, the lease that makes it this worker's, and its attempts
/// with this one counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub id: String,
    pub until: NaiveDateTime,
    pub attempts: i32,
}

/// What becomes of a claimed row once its outcome is known.
#[derive(Debug, Clone, Copy)]
pub struct Settled<'a> {
    /// Sent, failed for good, or pending again.
    pub state: &'static str,
    /// When it is due again (pending).
    pub next: NaiveDateTime,
    pub error: Option<&'a str>,
    /// This attempt is given back: the row was not really tried (the server was
    /// down, the channel is broken, the ticket is still being made).
    pub uncounted: bool,
}

impl<'a> Settled<'a> {
    pub fn sent(now: NaiveDateTime) -> Settled<'a> {
        Settled {
            state: SENT,
            next: now,
            error: None,
            uncounted: false,
        }
    }

    pub fn failed(error: &'a str, now: NaiveDateTime) -> Settled<'a> {
        Settled {
            state: FAILED,
            next: now,
            error: Some(error),
            uncounted: false,
        }
    }

    /// Pending again, due at `next`.
    pub fn again(next: NaiveDateTime, error: Option<&'a str>) -> Settled<'a> {
        Settled {
            state: PENDING,
            next,
            error,
            uncounted: false,
        }
    }

    /// The same, the attempt given back.
    pub fn uncounted(self) -> Settled<'a> {
        Settled {
            uncounted: true,
            ..self
        }
    }
}

/// The rows of queue table `$t` a claim may take, at most `$limit`, oldest due first:
/// those sending whose lease ran out or whose replica has gone silent (they waited
/// longest), then pending ones whose time has come; only rows `$filter` keeps (a
/// channel's own rule), each read as `$select`. Locked against other replicas'
/// claims on PostgreSQL (`load_skip_locked`). Two queries, each on the index
/// `(state, next_attempt_at)`: one with an `OR` of the two states reads and sorts the
/// whole table, for every row claimed. Evaluates to a `QueryResult<Vec<_>>`; call it
/// inside the claim's write transaction and mark what is taken with `Queue::take`.
macro_rules! due {
    ($conn:expr, $t:ident, $now:expr, $limit:expr, $select:expr $(, $filter:expr)?) => {{
        use diesel::prelude::*;
        use $crate::db::schema::$t;
        (|| -> diesel::QueryResult<Vec<_>> {
            let now: chrono::NaiveDateTime = $now;
            let limit: i64 = $limit;
            let silent = $crate::services::replicas::all_silent($conn, now)?;
            let mut rows: Vec<_> = $crate::load_skip_locked!(
                $conn,
                $t::table
                    .filter($crate::services::outbound::queue::stale_claim!($t, now, &silent))
                    $(.filter($filter))?
                    .order(($t::next_attempt_at.asc(), $t::id.asc()))
                    .limit(limit)
                    .select($select)
            )?;
            let more = limit - i64::try_from(rows.len()).unwrap_or(limit);
            if more > 0 {
                let due: Vec<_> = $crate::load_skip_locked!(
                    $conn,
                    $t::table
                        .filter($t::state.eq($crate::services::outbound::queue::PENDING))
                        .filter($t::next_attempt_at.le(now))
                        $(.filter($filter))?
                        .order(($t::next_attempt_at.asc(), $t::id.asc()))
                        .limit(more)
                        .select($select)
                )?;
                rows.extend(due);
            }
            Ok(rows)
        })()
    }};
}
pub(crate) use due;

/// The columns of table `$t` that let a row's claim go without sending it (the row
/// cancelled, held, dropped or retried by hand): no lease, no replica. Goes into a
/// `.set((...))` beside the row's new state.
macro_rules! released {
    ($t:ident) => {
        (
            $t::lease_until.eq(None::<chrono::NaiveDateTime>),
            $t::claimed_by.eq(None::<String>),
        )
    };
}
pub(crate) use released;

/// The rows of table `$t` sending under a claim that no longer holds: its lease ran
/// out before `$now`, or its replica is among `$silent` (`replicas::all_silent`).
macro_rules! stale_claim {
    ($t:ident, $now:expr, $silent:expr) => {
        $t::state
            .eq($crate::services::outbound::queue::SENDING)
            .and($t::lease_until.lt($now).or($t::claimed_by.eq_any($silent)))
    };
}
pub(crate) use stale_claim;

/// Marks rows `$ids` of table `$t` claimed.
macro_rules! take {
    ($t:ident, $conn:expr, $ids:expr, $now:expr, $until:expr, $claimant:expr) => {
        diesel::update($t::table.filter($t::id.eq_any($ids)))
            .set((
                $t::state.eq(SENDING),
                $t::lease_until.eq($until),
                $t::claimed_by.eq($claimant),
                $t::attempts.eq($t::attempts + 1),
                $t::updated_at.eq($now),
            ))
            .execute($conn)
    };
}

/// Gives back the rows of table `$t` that `$claimant` holds.
macro_rules! reclaim {
    ($t:ident, $conn:expr, $claimant:expr, $now:expr) => {
        diesel::update(
            $t::table
                .filter($t::state.eq(SENDING))
                .filter($t::claimed_by.eq($claimant)),
        )
        .set((
            $t::state.eq(PENDING),
            $t::lease_until.eq(None::<NaiveDateTime>),
            $t::claimed_by.eq(None::<String>),
            $t::next_attempt_at.eq($now),
            $t::attempts.eq($t::attempts - 1),
            $t::updated_at.eq($now),
        ))
        .execute($conn)
    };
}

/// Settles claimed row `$claim` of table `$t` as `$s`, only while the claim is still
/// the worker's; `$sent_also` are the columns a sent row clears besides.
macro_rules! settle {
    ($t:ident, $conn:expr, $claim:expr, $s:expr, $now:expr $(, sent_also: $also:expr)?) => {{
        let (claim, s, now): (&Claim, &Settled<'_>, NaiveDateTime) = ($claim, $s, $now);
        let mine = $t::table
            .filter($t::id.eq(&claim.id))
            .filter($t::state.eq(SENDING))
            .filter($t::lease_until.eq(claim.until));
        let settled = (
            $t::state.eq(s.state),
            $t::next_attempt_at.eq(s.next),
            $t::lease_until.eq(None::<NaiveDateTime>),
            $t::claimed_by.eq(None::<String>),
            $t::last_error.eq(s.error),
            $t::attempts.eq($t::attempts - i32::from(s.uncounted)),
            $t::updated_at.eq(now),
            $t::sent_at.eq((s.state == SENT).then_some(now)),
        );
        match s.state {
            $(SENT => diesel::update(mine).set((settled, $also)).execute($conn),)?
            _ => diesel::update(mine).set(settled).execute($conn),
        }
    }};
}

impl Queue {
    pub fn name(self) -> &'static str {
        match self {
            Queue::Email => "email",
            Queue::Chat => "chat",
            Queue::Tracker => "tracker",
        }
    }

    /// Marks rows `ids` (read by `due!`) claimed by `claimant` until `until`: sending,
    /// one more attempt. In the claim's write transaction.
    pub fn take(
        self,
        conn: &mut DbConnection,
        ids: &[&str],
        now: NaiveDateTime,
        until: NaiveDateTime,
        claimant: &str,
    ) -> QueryResult<usize> {
        match self {
            Queue::Email => take!(outbox_emails, conn, ids, now, until, claimant),
            Queue::Chat => take!(chat_messages, conn, ids, now, until, claimant),
            Queue::Tracker => take!(tracker_jobs, conn, ids, now, until, claimant),
        }
    }

    /// Gives back what `claimant`'s earlier process was sending when it stopped (a
    /// process that starts holds nothing yet): due now, its attempt not counted. A
    /// row the other side had taken just before the crash is sent again: the one
    /// duplicate a crash can make (an email with the same Message-ID). Returns how
    /// many.
    pub fn reclaim(
        self,
        conn: &mut DbConnection,
        claimant: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        db::write_transaction(conn, |conn| match self {
            Queue::Email => reclaim!(outbox_emails, conn, claimant, now),
            Queue::Chat => reclaim!(chat_messages, conn, claimant, now),
            Queue::Tracker => reclaim!(tracker_jobs, conn, claimant, now),
        })
    }

    /// Writes what became of claimed row `claim`, only while the claim is still this
    /// worker's (it is sending under the lease it set); a sent email's private link
    /// and unsubscribe token go with it (no raw link outlives its delivery). Returns
    /// whether the claim was still ours. In the caller's transaction.
    pub fn settle(
        self,
        conn: &mut DbConnection,
        claim: &Claim,
        settled: &Settled<'_>,
        now: NaiveDateTime,
    ) -> QueryResult<bool> {
        let n = match self {
            Queue::Email => settle!(
                outbox_emails,
                conn,
                claim,
                settled,
                now,
                sent_also: (
                    outbox_emails::private_link.eq(None::<String>),
                    outbox_emails::unsubscribe_token.eq(None::<String>),
                )
            ),
            Queue::Chat => settle!(chat_messages, conn, claim, settled, now),
            Queue::Tracker => settle!(tracker_jobs, conn, claim, settled, now),
        }?;
        Ok(n > 0)
    }
}

/// A row `state` claimed until `until` whose claim has run out at `now` (or never
/// had one): the replica that was sending it stopped. The next pass takes it again.
pub fn stranded(state: &str, until: Option<NaiveDateTime>, now: NaiveDateTime) -> bool {
    state == SENDING && until.is_none_or(|until| until < now)
}

/// Until when a row `state` claimed until `until` is still being sent by a replica
/// that is alive (not among `silent`), at `now`: `None` once its claim no longer holds.
pub fn still_claimed(
    state: &str,
    until: Option<NaiveDateTime>,
    silent: &[String],
    now: NaiveDateTime,
) -> Option<NaiveDateTime> {
    until.filter(|until| state == SENDING && *until >= now && silent.is_empty())
}

/// How long a claim holds (`reminders.lease_secs`).
pub fn lease(env: Env<'_>) -> Duration {
    let settings = env.settings;
    Duration::seconds(i64::try_from(settings.reminders.lease_secs).unwrap_or(600))
}

/// The delay before attempt `attempts + 1`: the base, doubled per attempt, capped
/// (`reminders.retry_base_secs`, `reminders.retry_max_secs`).
pub fn backoff(env: Env<'_>, attempts: i32) -> Duration {
    let r = &env.settings.reminders;
    let exponent = u32::try_from(attempts.saturating_sub(1))
        .unwrap_or(0)
        .min(30);
    let secs = r
        .retry_base_secs
        .saturating_mul(1u64 << exponent)
        .min(r.retry_max_secs);
    Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 1000))
}

/// A wait the other side asked for (`Retry-After`, in seconds), at most a day.
pub fn asked_wait(after_secs: u64) -> Duration {
    Duration::seconds(i64::try_from(after_secs.min(86_400)).unwrap_or(60))
}

/// What one delivery pass did, for every channel alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub sent: usize,
    /// Transient failures, to be retried later.
    pub deferred: usize,
    /// Permanent failures (or attempts used up), now failed.
    pub failed: usize,
    /// The attempts that failed, by why: the other side refused it for good, for now,
    /// or could not be reached.
    pub rejected: usize,
    pub temporary: usize,
    pub unreachable: usize,
}

/// Whether a pass goes on after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Next,
    /// The other side is down: the rest waits for the next pass.
    Stop,
}

/// One channel of the queue: which rows it takes, how one is sent, what an outcome
/// means. The pass (`pass`) does the rest.
pub trait Channel {
    /// A claimed row with what sending it needs.
    type Job;
    /// What came of sending one.
    type Sent;

    /// Before the first claim of a pass: reads what the pass needs; false when there
    /// is nothing this channel can send.
    fn begin(&mut self, _conn: &mut DbConnection) -> QueryResult<bool> {
        Ok(true)
    }

    /// Claims the next job due (`due!`, `Queue::take` in one write transaction) under a
    /// lease until `until`, and reads what sending it needs. None when nothing is due.
    fn claim(
        &mut self,
        conn: &mut DbConnection,
        now: NaiveDateTime,
        until: NaiveDateTime,
        claimant: &str,
    ) -> QueryResult<Option<Self::Job>>;

    /// Sends one job (taking from it what only the send needs). No connection is
    /// held meanwhile.
    fn send(&mut self, job: &mut Self::Job) -> Self::Sent;

    /// Writes what came of it (`Queue::settle` in one transaction with whatever the
    /// channel keeps beside it), counts it in `report`, and says whether the pass
    /// goes on.
    fn record(
        &mut self,
        conn: &mut DbConnection,
        job: &Self::Job,
        sent: Self::Sent,
        report: &mut Report,
    ) -> QueryResult<Flow>;
}

/// One delivery pass of `channel` for `claimant` (`Settings::replica_name`): claims
/// the due rows one at a time, sends each and records its outcome at once. When the
/// other side cannot be reached, or `stop` is set, the pass ends; what is left waits
/// for the next.
pub fn pass<C: Connections, Ch: Channel>(
    mut conns: C,
    channel: &mut Ch,
    env: Env<'_>,
    claimant: &str,
    stop: &AtomicBool,
) -> Result<Report, C::Error> {
    let lease = lease(env);
    let mut report = Report::default();
    if !conns.with(|conn| channel.begin(conn))? {
        return Ok(report);
    }
    while !stop.load(Ordering::Relaxed) {
        let now = db::now();
        let Some(mut job) = conns.with(|conn| channel.claim(conn, now, now + lease, claimant))?
        else {
            break;
        };
        // The claim is written and its connection given back: none is held while the
        // other side answers. (Should none come back in time to record the outcome,
        // the claim runs out and the row is sent again: a duplicate, never a loss.)
        let sent = channel.send(&mut job);
        let flow = conns.with(|conn| channel.record(conn, &job, sent, &mut report))?;
        if flow == Flow::Stop {
            break;
        }
    }
    Ok(report)
}

/// Why a delivery pass from the pool stopped early.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// The pool gave no connection in time (`db::checkout` logged why).
    #[error("no database connection")]
    NoConnection,
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

/// Where a delivery pass takes a database connection for each of its steps (a claim,
/// a record).
pub trait Connections {
    type Error: From<diesel::result::Error>;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> Result<T, Self::Error>;
}

/// A connection the caller holds for the whole pass, and shares with nobody (`coe
/// sweep`'s, from a pool of its own; tests).
impl Connections for &mut DbConnection {
    type Error = diesel::result::Error;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> QueryResult<T> {
        step(self)
    }
}

/// A connection taken from the pool for each step and given back at its end: a slow
/// or silent SMTP server, chat platform or tracker never takes a connection the
/// requests need.
pub struct Pooled<'a>(pub &'a DbPool);

impl Connections for Pooled<'_> {
    type Error = DeliveryError;
    fn with<T>(
        &mut self,
        step: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
    ) -> Result<T, DeliveryError> {
        let mut conn = db::checkout(self.0).map_err(|_| DeliveryError::NoConnection)?;
        Ok(step(&mut conn)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_up_to_its_cap() {
        let runtime =
            crate::services::Runtime::load(crate::config::Settings::default()).expect("runtime");
        assert_eq!(backoff(runtime.env(), 1), Duration::seconds(60));
        assert_eq!(backoff(runtime.env(), 2), Duration::seconds(120));
        assert_eq!(backoff(runtime.env(), 5), Duration::seconds(960));
        assert_eq!(backoff(runtime.env(), 40), Duration::seconds(6 * 3600));
    }

    #[test]
    fn a_wait_asked_for_is_at_most_a_day() {
        assert_eq!(asked_wait(0), Duration::zero());
        assert_eq!(asked_wait(30), Duration::seconds(30));
        assert_eq!(asked_wait(10_000_000), Duration::days(1));
    }
}
