//! Confirming AWS SNS subscriptions: SNS sends a `SubscribeURL` that must be fetched
//! once. Behind a trait so that tests need no internet.

use std::time::Duration;

/// Visits an SNS `SubscribeURL`. The caller has checked that it is an SNS address.
pub trait SubscriptionConfirmer: Send + Sync {
    fn confirm(&self, url: &str) -> Result<(), String>;
}

/// Fetches the URL over HTTPS.
pub struct HttpsConfirmer;

impl SubscriptionConfirmer for HttpsConfirmer {
    fn confirm(&self, url: &str) -> Result<(), String> {
        ureq::get(url)
            .timeout(Duration::from_secs(10))
            .call()
            .map(|_| ())
            // Never the URL: its `Token=` is the subscription's secret.
            .map_err(crate::chat::send::failure_text)
    }
}
