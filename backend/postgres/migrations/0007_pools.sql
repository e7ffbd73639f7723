-- Pools (`executor -pool` and a job template's `pools`): a
-- cluster's pool ('' is the default pool) and the pools a job accepts
-- (NULL: every pool).
ALTER TABLE executors ADD COLUMN pool text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN pools text[];
