//! The writeup and what it commits to: COEs (`coes`), their corrective actions,
//! the review and its steps (`lifecycle`, `review`), templates, publishing for
//! customers and the trackers that carry the actions' tickets. Says what happened
//! to `outbound`; reads `directory` and `incidents`.

pub mod actions;
pub mod coes;
pub mod lifecycle;
pub mod publishing;
pub mod review;
pub mod template_rules;
pub mod templates;
pub mod trackers;
