-- Work passed on when a person left (services::leaving): an open corrective action, a
-- COE they owned before approval, a review they held. The row keeps whose it was and
-- when it passed, so that the pages say "was Chen's (left on …)".
ALTER TABLE corrective_actions ADD COLUMN handed_over_from TEXT;
ALTER TABLE corrective_actions ADD COLUMN handed_over_at TIMESTAMP;
ALTER TABLE coes ADD COLUMN owner_handed_over_from TEXT;
ALTER TABLE coes ADD COLUMN owner_handed_over_at TIMESTAMP;
ALTER TABLE coes ADD COLUMN reviewer_handed_over_from TEXT;
ALTER TABLE coes ADD COLUMN reviewer_handed_over_at TIMESTAMP;
