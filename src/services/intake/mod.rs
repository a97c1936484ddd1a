//! How failures come in: alerts from the alerting systems and SNS (`ingest`,
//! `sns`), and a person pulling the cord (`report`). Opens COEs through `coe`.

pub mod ingest;
pub mod report;
pub mod sns;
