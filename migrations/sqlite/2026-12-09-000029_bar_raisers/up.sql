-- Bar raisers: people marked in the directory review the worst outages' COEs (at or
-- above coe.bar_raiser_from) from outside the owner's team, beside the reviewer. A
-- COE gets one on submit, least recently assigned first; both must approve.
ALTER TABLE people ADD COLUMN bar_raiser BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE coes ADD COLUMN bar_raiser_email TEXT;
ALTER TABLE coes ADD COLUMN bar_raiser_assigned_at TIMESTAMP;
-- The first approval of the review round under way, while the second is awaited.
ALTER TABLE coes ADD COLUMN approved_by TEXT;
CREATE INDEX coes_bar_raiser ON coes (bar_raiser_email, bar_raiser_assigned_at);
