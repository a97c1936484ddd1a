//! A time limit for one SQLite statement. SQLite calls a progress handler every few
//! thousand steps of a statement; each connection this process opens has one
//! (`install`), and it interrupts the statement once the deadline set on this thread
//! (`Deadline::set`) has passed. A statement runs on the thread that holds the
//! connection, so a deadline set there covers exactly what that thread asks of
//! SQLite until the guard is dropped. With no deadline set, the handler only reads a
//! thread-local and lets the statement go on.
//!
//! (PostgreSQL has `statement_timeout`; `db::search::find` sets it for its
//! statement.)

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Steps of SQLite's virtual machine between two calls of the handler: a few
/// microseconds of work, so a statement stops within about a millisecond of its
/// deadline.
const STEPS_BETWEEN_CHECKS: std::ffi::c_int = 1_000;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The deadline of the SQLite statements this thread runs, while it lives.
#[must_use = "the deadline holds only while the guard lives"]
pub struct Deadline {
    before: Option<Instant>,
}

impl Deadline {
    /// Statements this thread runs from now on are interrupted (SQLite's error
    /// "interrupted") once `within` has passed, until the guard is dropped.
    pub fn set(within: Duration) -> Deadline {
        let at = Instant::now() + within;
        let before = DEADLINE.with(|d| d.replace(Some(at)));
        // A deadline already set and sooner stays.
        if let Some(sooner) = before.filter(|b| *b < at) {
            DEADLINE.with(|d| d.set(Some(sooner)));
        }
        Deadline { before }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.before));
    }
}

/// Gives SQLite connection `db` the progress handler that enforces `Deadline`.
///
/// # Safety
/// `db` must be a connection SQLite is opening or has open.
pub(super) unsafe fn install(db: *mut libsqlite3_sys::sqlite3) {
    // SAFETY: the handler is a plain `extern "C" fn` that lives for the whole
    // program and reads no user data (the pointer passed is null).
    unsafe {
        libsqlite3_sys::sqlite3_progress_handler(
            db,
            STEPS_BETWEEN_CHECKS,
            Some(past_deadline),
            std::ptr::null_mut(),
        );
    }
}

/// SQLite's progress handler: non-zero stops the statement.
extern "C" fn past_deadline(_: *mut std::ffi::c_void) -> std::ffi::c_int {
    let late = DEADLINE.with(|d| d.get().is_some_and(|at| Instant::now() >= at));
    std::ffi::c_int::from(late)
}
