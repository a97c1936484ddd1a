//! Waiting for what happens in its own time (a background job, another process, a
//! page's script, an email on its way): a probe asked again and again until it says
//! the condition holds, or a deadline passes. The only place the tests pause between
//! polls; anywhere else a test waits a fixed time only where the wait is the point
//! (and says why).
//!
//! ```ignore
//! let link = eventually(Duration::from_secs(10), "a sign-in link", || newest_link(&app, email));
//! eventually_async(Duration::from_secs(10), "the replica is ready", || async {
//!     client.get(&url).send().await.is_ok_and(|r| r.status() == 200)
//! })
//! .await;
//! ```

use std::future::Future;
use std::time::{Duration, Instant};

/// The shortest pause between two questions to a probe.
const POLL: Duration = Duration::from_millis(20);
/// The longest: a probe that takes a while to answer (a process started, a sign-in) is
/// paused as long as it took, so that on a small machine it leaves time to what it
/// waits for.
const POLL_AT_MOST: Duration = Duration::from_millis(200);

/// What a probe answers: the condition holds (`Some(value)`, `Ok(value)`, `true`), or
/// not yet (`None`, `false`, or `Err(why)`: the last `why` is told if time runs out).
pub trait Probe {
    type Value;
    fn outcome(self) -> Result<Self::Value, Option<String>>;
}

impl<T> Probe for Option<T> {
    type Value = T;
    fn outcome(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl Probe for bool {
    type Value = ();
    fn outcome(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl<T, E: std::fmt::Display> Probe for Result<T, E> {
    type Value = T;
    fn outcome(self) -> Result<T, Option<String>> {
        self.map_err(|why| Some(why.to_string()))
    }
}

/// Asks `probe` at once and again and again until it says the condition holds, and
/// returns what it answered then. Panics with `"{what}: not within {within:?}"` (and
/// the probe's last `Err`, if it gave one) once `within` has passed. The probe is
/// asked at least once, and once more as the deadline passes; between two questions,
/// 20 ms, or as long as it took to answer (up to 200 ms).
#[track_caller]
pub fn eventually<P: Probe>(within: Duration, what: &str, probe: impl FnMut() -> P) -> P::Value {
    match poll(within, probe) {
        Ok(value) => value,
        Err(why) => timed_out(within, what, why),
    }
}

/// `eventually` for a probe that awaits (a request to the app under test, a browser):
/// the pauses let the runtime's other tasks go on.
pub async fn eventually_async<P, F, Fut>(within: Duration, what: &str, probe: F) -> P::Value
where
    P: Probe,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    match poll_async(within, probe).await {
        Ok(value) => value,
        Err(why) => timed_out(within, what, why),
    }
}

/// As `eventually`, but `None` once `within` has passed, for a test that does more
/// than panic then (asserts on what it has, with its own message).
pub fn try_until<P: Probe>(within: Duration, probe: impl FnMut() -> P) -> Option<P::Value> {
    poll(within, probe).ok()
}

/// As `eventually_async`, but `None` once `within` has passed.
pub async fn try_until_async<P, F, Fut>(within: Duration, probe: F) -> Option<P::Value>
where
    P: Probe,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    poll_async(within, probe).await.ok()
}

fn poll<P: Probe>(
    within: Duration,
    mut probe: impl FnMut() -> P,
) -> Result<P::Value, Option<String>> {
    let deadline = Instant::now() + within;
    loop {
        let asked = Instant::now();
        let why = match probe().outcome() {
            Ok(value) => return Ok(value),
            Err(why) => why,
        };
        match pause(asked, deadline) {
            Some(pause) => std::thread::sleep(pause),
            None => return Err(why),
        }
    }
}

async fn poll_async<P, F, Fut>(within: Duration, mut probe: F) -> Result<P::Value, Option<String>>
where
    P: Probe,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    let deadline = Instant::now() + within;
    loop {
        let asked = Instant::now();
        let why = match probe().await.outcome() {
            Ok(value) => return Ok(value),
            Err(why) => why,
        };
        match pause(asked, deadline) {
            Some(pause) => tokio::time::sleep(pause).await,
            None => return Err(why),
        }
    }
}

/// The pause before asking again a probe asked at `asked`; `None` once `deadline` has
/// passed. The last pause ends at the deadline, so the last question is asked then.
fn pause(asked: Instant, deadline: Instant) -> Option<Duration> {
    let now = Instant::now();
    let left = deadline
        .checked_duration_since(now)
        .filter(|d| !d.is_zero())?;
    Some((now - asked).clamp(POLL, POLL_AT_MOST).min(left))
}

#[track_caller]
fn timed_out(within: Duration, what: &str, why: Option<String>) -> ! {
    match why {
        Some(why) => panic!("{what}: not within {within:?}; {why}"),
        None => panic!("{what}: not within {within:?}"),
    }
}
