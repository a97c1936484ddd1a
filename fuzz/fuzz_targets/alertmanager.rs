//! Arbitrary bytes into the alertmanager parser: it may refuse them, never panic.
#![no_main]

use coe::domain::SeverityMap;
use coe::ingest::{parse, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(Source::Alertmanager, data, &SeverityMap::default(), chrono::NaiveDateTime::default());
});
