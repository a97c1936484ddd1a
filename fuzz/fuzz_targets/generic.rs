//! Arbitrary bytes into the generic event API's parser: it may refuse them, never panic.
#![no_main]

use coe::domain::SeverityMap;
use coe::ingest::generic;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = generic::parse(data, &SeverityMap::default(), chrono::NaiveDateTime::default());
});
