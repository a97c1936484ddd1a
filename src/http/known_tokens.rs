//! The tokens looked up in the last second (`KNOWN_FOR`), so that a busy sender
//! costs one lookup a second (`bearer` reads and fills it).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::services::directory::tokens::Caller;

/// How long a looked-up token is taken as valid without asking the database again.
/// A sender posting thousands of events a second costs one lookup a second, not one
/// per request; a token revoked through this replica is forgotten at once
/// (`revoke`), one revoked elsewhere (another replica, `coe token
/// revoke`) is refused within this time.
pub const KNOWN_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// The callers of the tokens looked up in the last `KNOWN_FOR`, by the token's hash.
/// Unknown tokens are not remembered: each is looked up and counted
/// (`auth.failed_tokens_per_client`).
#[derive(Clone)]
pub struct KnownTokens {
    pub(super) callers: moka::sync::Cache<String, Caller>,
    /// Moved on by each `forget_all`: a lookup that began before it remembers nothing.
    generation: Arc<std::sync::atomic::AtomicU64>,
}

impl KnownTokens {
    pub fn new() -> KnownTokens {
        KnownTokens {
            callers: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(KNOWN_FOR)
                .build(),
            generation: Arc::default(),
        }
    }

    /// The caller of the token with this hash, if it was looked up lately.
    pub(super) fn get(&self, hash: &str) -> Option<Caller> {
        self.callers.get(hash)
    }

    /// Which `forget_all` this is after: taken before a lookup, given to `remember`.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Remembers a lookup that began at `generation`, unless a token was revoked here
    /// since (what it read may be from before the revocation). Checked after the
    /// insert, so a revocation between the check and the insert cannot be missed.
    pub(super) fn remember(&self, hash: String, caller: Caller, generation: u64) {
        self.callers.insert(hash.clone(), caller);
        if self.generation() != generation {
            self.callers.invalidate(&hash);
        }
    }

    /// After a token is revoked: every token is looked up again, and a lookup under
    /// way (which may have read the token before its revocation) is not remembered.
    pub(super) fn forget_all(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.callers.invalidate_all();
    }
}

impl Default for KnownTokens {
    fn default() -> Self {
        KnownTokens::new()
    }
}
