-- The COE list's default order (newest first, `GET /api/v1/coes`, `/coes`): with this
-- index a page of 20 is read from its end, instead of every COE read, with its
-- template, and sorted on every view.
CREATE INDEX coes_by_created ON coes (created_at, id);
